//! Random bytes to every reader: an error or latencies, never a panic. The same function
//! is the `readers` target of `advisor/fuzz/` (`cargo fuzz run readers`), which searches
//! far longer.

use hedging_advisor::read::{read, Format, ReadOptions};

/// Reads `bytes` as each format; panics only if a reader does.
fn read_every_way(bytes: &[u8]) {
    for format in [
        Format::Auto,
        Format::Lines,
        Format::Csv,
        Format::Hdr,
        Format::Prometheus,
    ] {
        let options = ReadOptions {
            format,
            ..ReadOptions::default()
        };
        let _ = read(bytes, &options);
    }
}

/// Bytes that look like each format, then damaged at random.
fn seeds() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");
    ["latencies.txt", "calls.csv", "service.hlog", "metrics.prom"]
        .iter()
        .map(|name| {
            let bytes = std::fs::read(format!("{dir}/{name}")).unwrap();
            bytes[..bytes.len().min(4_000)].to_vec()
        })
        .collect()
}

#[test]
fn random_bytes_never_panic_a_reader() {
    let mut rng = fastrand::Rng::with_seed(42);
    for _ in 0..300 {
        let length = rng.usize(0..300);
        let bytes: Vec<u8> = (0..length).map(|_| rng.u8(..)).collect();
        read_every_way(&bytes);
    }
}

#[test]
fn damaged_samples_never_panic_a_reader() {
    let mut rng = fastrand::Rng::with_seed(7);
    for seed in seeds() {
        for _ in 0..60 {
            let mut bytes = seed.clone();
            for _ in 0..rng.usize(1..8) {
                match rng.u8(0..3) {
                    0 if !bytes.is_empty() => {
                        let at = rng.usize(..bytes.len());
                        bytes[at] = rng.u8(..);
                    }
                    1 if !bytes.is_empty() => {
                        let at = rng.usize(..bytes.len());
                        bytes.truncate(at);
                    }
                    _ => {
                        let at = rng.usize(..=bytes.len());
                        let marks = b",{}=\"\n-.e#+I";
                        let byte = marks[rng.usize(..marks.len())];
                        bytes.insert(at, byte);
                    }
                }
            }
            read_every_way(&bytes);
        }
    }
}
