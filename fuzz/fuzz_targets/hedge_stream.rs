//! `cargo fuzz run hedge_stream`: see the README's Reliability section.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hedging_fuzz::hedge_stream(data));
