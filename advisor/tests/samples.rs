//! The example inputs the crate ships are the ones `make_samples` writes: generated,
//! and kept current.

#[path = "../examples/make_samples.rs"]
mod make_samples;

#[test]
fn the_shipped_samples_are_what_make_samples_writes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(make_samples::DIR);
    for (name, content) in make_samples::samples() {
        let shipped = std::fs::read(dir.join(name)).unwrap_or_default();
        assert!(
            shipped == content,
            "{name} differs from what make_samples writes: run \
             `cargo run -p hedging-advisor --example make_samples`"
        );
    }
}
