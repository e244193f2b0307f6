//! The cargo-fuzz targets, replayed without a fuzzer: every input of the checked-in corpus
//! (`fuzz/seeds/<target>/`) plus 10⁴ seeded random inputs per target. The target functions
//! are the very files the fuzzer runs (`fuzz/src/`). A failing input is named, so that
//! `HEDGING_FUZZ_DEBUG=1 cargo fuzz run --sanitizer none <target> <file>` decodes it.

#[path = "../fuzz/src/lib.rs"]
mod targets;

use std::path::Path;

/// Random inputs per target on top of the corpus.
const RANDOM_INPUTS: u64 = 10_000;

fn replay(target: &str, run: fn(&[u8])) {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut replayed = 0;
    for entry in std::fs::read_dir(&corpus).unwrap_or_else(|e| panic!("{}: {e}", corpus.display()))
    {
        let path = entry.expect("a readable corpus entry").path();
        let input = std::fs::read(&path).expect("a readable corpus file");
        named(&path.display().to_string(), || run(&input));
        replayed += 1;
    }
    assert!(replayed > 0, "the corpus of {target} is empty");

    for seed in 0..RANDOM_INPUTS {
        let mut rng = fastrand::Rng::with_seed(seed);
        let len = rng.usize(0..512);
        let input: Vec<u8> = std::iter::repeat_with(|| rng.u8(..)).take(len).collect();
        named(&format!("random input {seed}: {input:?}"), || run(&input));
    }
}

/// Runs `replay_one`, naming the input if it panics.
fn named(input: &str, replay_one: impl FnOnce()) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(replay_one)) {
        eprintln!("failing input: {input}");
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn hedge_state_machine_replays_corpus_and_random_inputs() {
    replay("hedge_state_machine", targets::hedge_state_machine);
}

#[test]
fn hedge_stream_replays_corpus_and_random_inputs() {
    replay("hedge_stream", targets::hedge_stream);
}

#[test]
fn schedule_replays_corpus_and_random_inputs() {
    replay("schedule", targets::schedule);
}

#[test]
fn policy_builder_replays_corpus_and_random_inputs() {
    replay("policy_builder", targets::policy_builder);
}
