//! `cargo fuzz run policy_builder`: see the README's Reliability section.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hedging_fuzz::policy_builder(data));
