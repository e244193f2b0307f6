//! The builder methods [`Hedge`](crate::Hedge) and [`HedgeStream`](crate::HedgeStream)
//! share: what a finished copy means, the timeouts, and the call's own cap. Written once,
//! as a macro: the two types differ in their factory, in what they judge (a future's
//! result, a stream's first item), and in the fields a stream adds, which generic code
//! over two structs cannot name.

/// `call_methods!(Type, FactoryTrait, "what is judged", extra fields…)` writes the shared
/// methods into `impl<F, P, C, D, K> Type<F, P, C, D, K>`.
macro_rules! call_methods {
    ($Call:ident, $Factory:ident, $judged:literal $(, $extra:ident)*) => {
        impl<F: $Factory, P: AsPolicy, C, D, K> $Call<F, P, C, D, K> {
            #[doc = concat!("Decides which errors are worth another copy, judging ", $judged, ": `true` keeps")]
            /// racing (the copy failed, the others go on), `false` returns the error at once
            /// and drops the others. `Ok` always wins.
            pub fn when<W>(self, retryable: W) -> $Call<F, P, When<W>, D, K>
            where
                W: FnMut(&F::Error) -> bool,
            {
                self.with_classify(When(retryable))
            }

            #[doc = concat!("Decides what ", $judged, " means, with full control: see [`Verdict`].")]
            pub fn classify<V>(self, classify: V) -> $Call<F, P, V, D, K>
            where
                V: FnMut(&Result<F::Ok, F::Error>) -> Verdict,
            {
                self.with_classify(classify)
            }

            /// Caps this call's copies below the policy's: at most `max_copies` start (never
            /// more than the policy allows). `max_copies(1)` sends the call once, unhedged,
            /// and arms no timer; it is still counted in the policy's stats. Clamped to
            /// `1..=64`; no effect on a call already polled. A cap known before the call
            /// belongs here rather than in a factory that declines later: a pushback on the
            /// last copy then ends the call at once instead of being waited out.
            pub fn max_copies(mut self, max_copies: usize) -> Self {
                self.call.state.cap(max_copies);
                self
            }

            /// Names the call's key: with
            /// [`adaptive_keys`](crate::PolicyBuilder::adaptive_keys), the call hedges at
            /// its key's own delay and on its key's win rate, and teaches them its
            /// latency; a key names what is fast or slow in its own way (a host, a
            /// method, a size of read). The call borrows the key and hashes it only when
            /// it makes its race, on a policy with keys: a call answered at its first
            /// poll, or on a policy without keys, never reads it.
            #[inline]
            pub fn key<'k, Q: core::hash::Hash + ?Sized>(
                self,
                key: &'k Q,
            ) -> $Call<F, P, C, D, crate::key::Keyed<'k, Q>> {
                self.with_key(crate::key::Keyed(key))
            }

            /// Names the call's key by its hash, as [`Policy::key_hash`](crate::Policy::key_hash)
            /// made it: for middleware that reads a call's key from a request it then moves
            /// into the call's factory, so the call cannot borrow it.
            #[inline]
            pub fn key_hash(self, key: crate::key::KeyHash) -> $Call<F, P, C, D, crate::key::KeyHash> {
                self.with_key(key)
            }

            /// Bounds each copy: one that has not answered `timeout` after it started is
            /// dropped and counts as a failed copy, with the error `E::from(Elapsed)` (kept
            /// like any other failure; it is not shown to `when` or `classify`). If no other
            /// copy is in flight, the next starts at once.
            ///
            /// With [`fallback`](crate::PolicyBuilder::fallback) this is the mode for
            /// requests that must not run twice at once: never two copies in flight, and the
            /// next starts only after the previous one failed or timed out.
            ///
            /// A zero timeout gives each copy its first poll only: a copy not ready at once
            /// times out in that same poll, and the call returns its first `Elapsed` failure
            /// once every copy did. A huge one saturates: it never fires.
            pub fn attempt_timeout(self, timeout: Duration) -> $Call<F, P, C, Timeouts, K>
            where
                D: IntoTimeouts,
                F::Error: From<Elapsed>,
            {
                let mut deadlines = self.deadlines.timeouts();
                deadlines.attempt = Some(timeout);
                self.with_deadlines(deadlines)
            }

            /// Bounds the whole call: when `timeout` has passed since the call's clock
            /// started (at its first poll, once the original was made and said `Pending`:
            /// the time the factory and that first poll take is not counted, so a call
            /// answered at its first poll never reads the clock), every
            /// copy is dropped and the call returns the lowest-index failure seen so far (a
            /// real one: not a withdrawn result nor a caught panic), or else
            /// `E::from(Elapsed)`; no copy starts once the deadline came, not even after a
            /// failure. A stream yields it and ends; once a stream committed to a winner, its
            /// timeout no longer applies.
            ///
            /// An answer and the deadline in the same instant: the answer wins, as with
            /// `tokio::time::timeout`. A zero timeout lets the original answer if it is
            /// ready on its first poll, and otherwise returns `Elapsed` from that poll
            /// without starting another copy. A huge one saturates: it never fires.
            pub fn timeout(self, timeout: Duration) -> $Call<F, P, C, Timeouts, K>
            where
                D: IntoTimeouts,
                F::Error: From<Elapsed>,
            {
                let mut deadlines = self.deadlines.timeouts();
                deadlines.total = Some(timeout);
                self.with_deadlines(deadlines)
            }

            pub(crate) fn with_classify<V>(self, classify: V) -> $Call<F, P, V, D, K> {
                $Call {
                    factory: self.factory,
                    classify,
                    deadlines: self.deadlines,
                    key: self.key,
                    call: self.call,
                    $($extra: self.$extra,)*
                }
            }

            fn with_deadlines(self, deadlines: Timeouts) -> $Call<F, P, C, Timeouts, K> {
                $Call {
                    factory: self.factory,
                    classify: self.classify,
                    deadlines,
                    key: self.key,
                    call: self.call,
                    $($extra: self.$extra,)*
                }
            }

            pub(crate) fn with_key<L>(self, key: L) -> $Call<F, P, C, D, L> {
                $Call {
                    factory: self.factory,
                    classify: self.classify,
                    deadlines: self.deadlines,
                    key,
                    call: self.call,
                    $($extra: self.$extra,)*
                }
            }
        }
    };
}

pub(crate) use call_methods;
