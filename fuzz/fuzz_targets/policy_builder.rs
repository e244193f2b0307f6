//! `cargo fuzz run policy_builder`: see docs/reliability.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hedging_fuzz::policy_builder(data));
