//! `cargo fuzz run schedule`: see docs/reliability.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hedging_fuzz::schedule(data));
