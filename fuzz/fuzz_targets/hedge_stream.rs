//! `cargo fuzz run hedge_stream`: see docs/reliability.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hedging_fuzz::hedge_stream(data));
