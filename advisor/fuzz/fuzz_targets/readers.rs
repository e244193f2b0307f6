//! `cargo fuzz run readers` (from `advisor/`): any bytes, read as every format, give
//! latencies or an error naming where, never a panic. Seed it with `examples/data/`:
//! `cargo fuzz run --sanitizer none readers fuzz/corpus/readers examples/data`.
#![no_main]

use hedging_advisor::read::{read, Format, ReadOptions};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    for format in [Format::Auto, Format::Lines, Format::Csv, Format::Hdr, Format::Prometheus] {
        let options = ReadOptions {
            format,
            ..ReadOptions::default()
        };
        let _ = read(data, &options);
    }
});
