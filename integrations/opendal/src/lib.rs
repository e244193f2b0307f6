//! Hedged reads for [OpenDAL](https://opendal.apache.org): a [`Layer`] that, when a `stat`
//! or a read of any OpenDAL service (S3, GCS, Azure Blob, HTTP, …) has not answered within
//! a delay, sends a copy and keeps the first answer.
//!
//! Object storage has a long tail: most reads answer in milliseconds, a few wait out a
//! slow disk, a busy partition or a lost packet. [`HedgeLayer`] races copies of an
//! operator's `stat` and reads by a [`hedging::Policy`]; every other operation (writes,
//! deletes, copies, renames, lists) goes to the service untouched.
//!
//! ```no_run
//! use std::time::Duration;
//! use hedging_opendal::hedging::{timer::TokioTimer, Policy}; // the core, re-exported
//! use hedging_opendal::HedgeLayer;
//! use opendal::{services::S3, Operator};
//!
//! # async fn run() -> opendal::Result<()> {
//! let policy = Policy::builder()
//!     .name("object-reads")
//!     .delay(Duration::from_millis(50)) // near the store's p95
//!     .timer(TokioTimer::new())
//!     .build();
//! let s3 = S3::default().bucket("tables").region("us-east-1");
//! let op = Operator::new(s3)?.layer(HedgeLayer::new(policy.clone()));
//!
//! op.write("orders/part-0.parquet", vec![7; 4096]).await?; // a write: never hedged
//! let footer = op.read_with("orders/part-0.parquet").range(4088..4096).await?; // hedged
//! assert_eq!(footer.len(), 8);
//! assert_eq!((policy.stats().calls, policy.stats().out_of_scope), (1, 1));
//! # Ok(())
//! # }
//! ```
//!
//! # What is hedged
//!
//! | operation | hedged |
//! |---|---|
//! | `stat` | through the answer |
//! | a read's request for a byte range (`read`, `read_with(..).range(..)`, each chunk of a `reader`'s reads, `fetch`) answering at most [`buffer_limit`](HedgeLayer::buffer_limit) bytes (1 MiB by default) | through the last byte: each copy reads its whole body, so a body that stalls halfway is hedged too |
//! | the same, answering more than the limit | to the first byte, then through the last byte by [resuming](#resuming-a-stalled-body) |
//! | `write`, `delete`, `copy`, `rename`, `list`, `create_dir`, `compose`, `restore` | not at all: forwarded to the service |
//!
//! In OpenDAL 0.59 a read makes no request when its reader is made
//! (`Service::read`): each byte range the reader opens (`oio::Read::open`, `read`) is a
//! request, so that is where a read is hedged, each range a call of its own, counted in
//! the policy's `calls`. Every other operation is outside the layer's scope: forwarded
//! as it is and counted once per call of it in the policy's
//! [`out_of_scope`](hedging::Stats::out_of_scope) (however many requests it makes: a
//! multipart write's parts, a list's pages); `presign` sends nothing and is counted
//! nowhere. So `hedges / calls` is the extra requests per call. The rule is every
//! integration's:
//! [which requests are counted](https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted).
//!
//! # Resuming a stalled body
//!
//! A read answering more than the buffer limit is committed to one copy once its first
//! bytes arrive, and its body is watched while its reader waits. When it stalls (quiet
//! for the read's current delay and for more than 4 times its mean wait per chunk so
//! far), a ranged read of the rest, from the first byte the caller has not received,
//! races it as a hedge, of the same version: with `If-Match` set to the first answer's
//! ETag (in `RpRead`'s metadata) where the service takes it, and by the first answer's
//! version id where the service reads by version; each resume's answer is compared with
//! both. The rule is `hedging-object-store`'s, shared through
//! [`hedging_http_rules::resume`]:
//!
//! - The caller gets every byte once, in order. An object that changed meanwhile ends
//!   the read with [`ErrorKind::ConditionNotMatch`](opendal::ErrorKind::ConditionNotMatch),
//!   never with bytes of two versions; a body that ends short of its range or runs past
//!   it ends the read with an error.
//! - A resume is a hedge: counted in `hedges`, asking the budget, and a read's copies
//!   stay within `max_copies`; each race is a call of its own.
//! - A body that breaks (a connection closed halfway) is resumed at once.
//! - An answer with neither a strong ETag nor a version is not resumed (a weak ETag names
//!   an equivalent object, not its bytes), nor one whose metadata gives no length.
//!
//! # Verdicts
//!
//! `NotFound`, `ConditionNotMatch`, `RangeNotSatisfied`, `PermissionDenied`,
//! `IsADirectory`, `NotADirectory`, `Unsupported`, `ConfigInvalid`, `AlreadyExists` and
//! `IsSameFile` end the call at once (another copy would only repeat them). Any other
//! error (`Unexpected`: a transport or server error, a broken body; `RateLimited`) fails
//! that copy only; if every copy fails, the first copy's error is returned.
//!
//! # A delay per operation and size
//!
//! A `stat`, a 64 KiB range and a 1 GiB scan have different latencies. With
//! [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys) on the policy, each call is
//! keyed by its [`SizeClass`] (a `stat` `0`; a read, the bytes it asks for rounded up to
//! a power of two; a read to the end, `u64::MAX`), so one layer learns a delay per
//! operation and class: `policy.delay_for(&4096_u64)`. [`key_by`](HedgeLayer::key_by)
//! keys otherwise. A resume carries its read's key.
//!
//! # Features
//!
//! - `tokio`: `hedging::timer::TokioTimer`, through the [`hedging`] re-export: OpenDAL's
//!   services run on tokio, and a test's paused tokio clock then drives the hedges.
//! - `tracing` (default): the core's `tracing` events.
//! - `serde`: `hedging::config`, policies read from TOML, YAML or JSON.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

use std::fmt;
use std::sync::Arc;

use hedging::timer::Timer;
use hedging::Policy;
use opendal::raw::{Layer, Servicer};

mod key;
mod reader;
mod service;
mod settings;

pub use crate::key::{Call, CallKey, SizeClass};
pub use crate::reader::HedgedReader;
pub use crate::service::HedgedService;

/// The core crate, re-exported: name [`Policy`], the timers and
/// [`Stats`](hedging::Stats) through it (`hedging_opendal::hedging::Policy`), and they are
/// always the version this crate was built with.
pub use hedging;

/// The default [`HedgeLayer::buffer_limit`]: 1 MiB.
pub const DEFAULT_BUFFER_LIMIT: u64 = 1 << 20;

/// An OpenDAL [`Layer`] whose operators' `stat` and reads are hedged by a [`Policy`]; see
/// the [crate docs](crate) for what is hedged and how.
///
/// `K` is what each call is keyed by, for a policy with
/// [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): its [`SizeClass`] unless
/// [`key_by`](Self::key_by) says otherwise.
pub struct HedgeLayer<T, K = SizeClass> {
    policy: Policy<T>,
    key: Arc<K>,
    buffer_limit: u64,
    resume_stalls: bool,
}

impl<T> HedgeLayer<T> {
    /// Hedges `stat` and reads by `policy`, each copy of a read answering up to 1 MiB
    /// read to its end, each call keyed by its [`SizeClass`].
    pub fn new(policy: Policy<T>) -> Self {
        HedgeLayer {
            policy,
            key: Arc::new(SizeClass),
            buffer_limit: DEFAULT_BUFFER_LIMIT,
            resume_stalls: true,
        }
    }
}

impl<T, K> HedgeLayer<T, K> {
    /// Keys each call by `key(&call)` instead of its [`SizeClass`]: with a policy with
    /// [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), calls of one key hedge at
    /// a delay learnt from their own latencies, which [`Policy::delay_for`] tells with the
    /// same value. [`Call`] gives the path, the operation and the range; `key` returns any
    /// owned [`Hash`](core::hash::Hash) value. A resume carries its read's key.
    ///
    /// `key` is called once per call, also on a policy without keys: keep it cheap.
    ///
    /// ```
    /// # use hedging::{timer::TokioTimer, Policy};
    /// # use hedging_opendal::{Call, HedgeLayer};
    /// let policy = Policy::builder()
    ///     .adaptive_delay(0.95)
    ///     .adaptive_keys(16)
    ///     .timer(TokioTimer::new())
    ///     .build();
    /// // One delay per operation and top-level directory, whatever the size of the read.
    /// let layer = HedgeLayer::new(policy).key_by(|call: &Call<'_>| {
    ///     let table = call.path().split('/').next().unwrap_or_default().to_owned();
    ///     (call.operation(), table)
    /// });
    /// # let _ = layer;
    /// ```
    pub fn key_by<F, Q>(self, key: F) -> HedgeLayer<T, F>
    where
        F: Fn(&Call<'_>) -> Q + Send + Sync + 'static,
        Q: core::hash::Hash + Send + Sync + 'static,
    {
        HedgeLayer {
            policy: self.policy,
            key: Arc::new(key),
            buffer_limit: self.buffer_limit,
            resume_stalls: self.resume_stalls,
        }
    }

    /// The largest answer, in bytes, that each copy of a read reads to its end before it
    /// can win, so that a stall anywhere in its body is hedged. Larger answers are hedged
    /// to their first byte, then resumed. Default 1 MiB; `0` hedges every read with a
    /// body to its first byte.
    pub fn buffer_limit(mut self, bytes: u64) -> Self {
        self.buffer_limit = bytes;
        self
    }

    /// Whether the body of a read answering more than the buffer limit is resumed when it
    /// stalls (see the [crate docs](crate#resuming-a-stalled-body)). Default `true`;
    /// `false` hedges such reads to their first byte only.
    pub fn resume_stalls(mut self, resume: bool) -> Self {
        self.resume_stalls = resume;
        self
    }

    /// The policy the calls are hedged by; its [`stats`](Policy::stats) count them.
    pub fn policy(&self) -> &Policy<T> {
        &self.policy
    }
}

/// Whatever the key is: a closure need not be `Debug`.
impl<T: fmt::Debug, K> fmt::Debug for HedgeLayer<T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgeLayer")
            .field("policy", &self.policy)
            .field("buffer_limit", &self.buffer_limit)
            .field("resume_stalls", &self.resume_stalls)
            .finish_non_exhaustive()
    }
}

impl<T, K> Layer for HedgeLayer<T, K>
where
    T: Timer + fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
    K: CallKey,
{
    fn apply_service(&self, inner: Servicer) -> Servicer {
        let settings = settings::Settings {
            policy: self.policy.clone(),
            key: Arc::clone(&self.key),
            buffer_limit: self.buffer_limit,
            resume_stalls: self.resume_stalls,
        };
        Arc::new(HedgedService::new(inner, Arc::new(settings)))
    }
}
