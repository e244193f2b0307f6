//! The tail-latency lab's acceptance tests (`tests/lab.rs`), asserted on the same
//! deterministic figures `cargo run --release --example tail_latency` prints. The lab's
//! engine is the core's `examples/lab/`, shared with that demo; this crate has no code of
//! its own.
