//! The accessors every hedging service here has, written once (tower-http's
//! `define_inner_service_accessors!`).

/// `get_ref`, `get_mut`, `into_inner` and `policy`, inside the `impl` of a service with
/// an `inner: S` field and a `layer` field whose `policy()` is the service's.
macro_rules! define_inner_service_accessors {
    () => {
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

        /// The policy this service hedges by.
        pub fn policy(&self) -> &hedging::Policy<T> {
            self.layer.policy()
        }
    };
}

pub(crate) use define_inner_service_accessors;
