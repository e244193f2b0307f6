//! The atomics and `Arc` of the lock-free structures a call touches, in one place, so that
//! `loom` can check them: under `cfg(loom)` (`RUSTFLAGS="--cfg loom"`, see
//! `docs/reliability.md`) they are loom's, which run every interleaving of a model;
//! otherwise they are `core`'s and `alloc`'s, re-exported unchanged.

#[cfg(not(loom))]
pub(crate) use alloc::sync::Arc;
#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Arc;
