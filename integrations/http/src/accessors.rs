//! The accessors every hedging layer and service here has, written once (tower-http's
//! `define_inner_service_accessors!`).

/// `get_ref`, `get_mut`, `into_inner` and `policy`, inside the `impl` of a service with
/// an `inner: S` field and a `layer` field whose `policy()` is the service's;
/// `(inner)` for the first three alone.
macro_rules! define_inner_service_accessors {
    (inner) => {
        /// The wrapped service.
        pub fn get_ref(&self) -> &S {
            &self.inner
        }

        /// The wrapped service, mutably.
        pub fn get_mut(&mut self) -> &mut S {
            &mut self.inner
        }

        /// The wrapped service, unwrapped.
        pub fn into_inner(self) -> S {
            self.inner
        }
    };
    () => {
        crate::accessors::define_inner_service_accessors!(inner);

        /// The policy this service hedges by.
        pub fn policy(&self) -> &hedging::Policy<T> {
            self.layer.policy()
        }
    };
}

/// `max_replay_bytes` and `policy`, inside the `impl` of a layer with the fields
/// `policy: Policy<T>` and `max_replay_bytes: usize`; `(max_replay_bytes)` for that alone;
/// `(key_by, docs)` for the layer's `key_by`, with its own docs, on a `key_by: KeyBy<T>`
/// field.
macro_rules! define_layer_settings {
    (key_by, $(#[$doc:meta])*) => {
        $(#[$doc])*
        pub fn key_by<Q, F>(mut self, key: F) -> Self
        where
            Q: std::hash::Hash,
            F: Fn(&http::request::Parts) -> Q + Send + Sync + 'static,
            T: 'static,
        {
            self.key_by = crate::key::KeyBy::custom(key);
            self
        }
    };
    (max_replay_bytes) => {
        /// The largest request body buffered for replay (for gRPC, the framed request
        /// messages); a larger one is sent once, unhedged. Default 64 KiB.
        pub fn max_replay_bytes(mut self, max_replay_bytes: usize) -> Self {
            self.max_replay_bytes = max_replay_bytes;
            self
        }
    };
    () => {
        crate::accessors::define_layer_settings!(max_replay_bytes);

        /// The policy every wrapped service hedges by.
        pub fn policy(&self) -> &hedging::Policy<T> {
            &self.policy
        }
    };
}

pub(crate) use {define_inner_service_accessors, define_layer_settings};
