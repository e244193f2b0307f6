//! The key of a hedged call: the operation's own `(name, resource)` by default, or the
//! user's [`key_by`](crate::HedgedHttpClient::key_by). Hashed only by the core, when the
//! call makes its race on a policy with keys.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use hedging::Policy;

use crate::Operation;

/// A user's key, erased: hashes the key its closure makes of an operation.
type HashKey = dyn Fn(&Operation, &mut dyn Hasher) + Send + Sync;

/// What a client keys its calls by: `None` for the default, [`Operation::key`].
#[derive(Clone, Default)]
pub(crate) struct KeyBy(Option<Arc<HashKey>>);

impl KeyBy {
    /// The key `key_by` makes of each operation.
    pub(crate) fn new<F, K>(key_by: F) -> Self
    where
        F: Fn(&Operation) -> K + Send + Sync + 'static,
        K: Hash,
    {
        let hash_key = move |operation: &Operation, mut state: &mut dyn Hasher| {
            key_by(operation).hash(&mut state);
        };
        KeyBy(Some(Arc::new(hash_key)))
    }

    /// The key of a call of `operation`, to be hashed when the call makes its race.
    pub(crate) fn call_key(&self, operation: &Operation) -> CallKey {
        CallKey {
            operation: operation.clone(),
            key_by: self.clone(),
        }
    }
}

impl fmt::Debug for KeyBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("(operation, resource)"),
            Some(_) => f.write_str("key_by(..)"),
        }
    }
}

/// One call's key, owned by its future: hashes as `key_by`'s value would, or as the
/// operation's `(name, resource)` tuple of `&str` does, so that
/// `policy.delay_for(&("GetObject", "my-bucket"))` finds it.
pub(crate) struct CallKey {
    operation: Operation,
    key_by: KeyBy,
}

impl Hash for CallKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.key_by.0 {
            None => self.operation.key().hash(state),
            Some(hash_key) => hash_key(&self.operation, state),
        }
    }
}

/// Whether `policy` learns a delay per key.
pub(crate) fn has_keys<T>(policy: &Policy<T>) -> bool {
    policy.adaptive_keys() > 0
}

#[cfg(test)]
mod tests {
    use std::hash::DefaultHasher;

    use hedging::timer::ManualTimer;

    use super::*;

    fn hash_of(key: &impl Hash) -> u64 {
        let mut state = DefaultHasher::new();
        key.hash(&mut state);
        state.finish()
    }

    #[test]
    fn a_call_key_hashes_as_the_value_it_stands_for() {
        let get = Operation::new("S3", "GetObject", "my-bucket");
        let default = KeyBy::default().call_key(&get);
        assert_eq!(hash_of(&default), hash_of(&("GetObject", "my-bucket")));
        let by_name = KeyBy::new(|operation: &Operation| operation.name().to_owned());
        assert_eq!(hash_of(&by_name.call_key(&get)), hash_of(&"GetObject"));
        let constant = KeyBy::new(|_: &Operation| 7_u64);
        assert_eq!(hash_of(&constant.call_key(&get)), hash_of(&7_u64));
    }

    #[test]
    fn only_a_policy_with_keys_has_keys() {
        let adaptive = || {
            Policy::builder()
                .adaptive_delay(0.95)
                .timer(ManualTimer::new())
        };
        assert!(!has_keys(&adaptive().build()));
        assert!(has_keys(&adaptive().adaptive_keys(8).build()));
    }
}
