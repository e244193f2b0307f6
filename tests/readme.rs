//! The README's snippets past its quick start (that one is `examples/quick_start.rs`),
//! each in a test that compiles and runs it with what it needs around it. `.ci/packages`
//! checks that each snippet stands here line for line, so each function keeps its
//! snippet's layout (`rustfmt::skip`).

use std::time::Duration;

use hedging::config::PolicyConfig;
use hedging::timer::TokioTimer;
use hedging::{Budget, Policy};

#[rustfmt::skip]
#[test]
fn for_production() {
    let budget = Budget::new(0.10).max_outstanding(50); // ≤ 10% extra copies, ≤ 50 in flight
    let policy = Policy::builder()
        .name("user-reads")                     // for tracing and metrics
        .optimal_delay(0.99)                    // the delay predicted to cut the p99 most,
        .min_delay(Duration::from_micros(100))  // bounded,
        .max_delay(Duration::from_millis(200))
        .delay(Duration::from_millis(20))       // and at 20 ms until 100 latencies are known
        .adaptive_keys(64)                      // a delay per key: a host, a method, a size
        .min_win_rate(0.05)                     // withhold hedges that stop winning
        .budget(&budget)
        .build();

    assert_eq!(policy.name(), Some("user-reads"));
    assert_eq!(policy.delay(), Some(Duration::from_millis(20)));
}

/// `hedging.toml` of the README's configuration, in a folder of its own made the working
/// directory, as the snippet reads it from there.
fn in_a_folder_with_hedging_toml() {
    let folder = std::env::temp_dir().join(format!("hedging-readme-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let toml = "max_copies = 3\ndelay = \"20ms\"\n\n[budget]\nratio = 0.1\n";
    std::fs::write(folder.join("hedging.toml"), toml).unwrap();
    std::env::set_current_dir(&folder).unwrap();
}

#[rustfmt::skip]
#[test]
fn configuration() -> Result<(), Box<dyn std::error::Error>> {
    in_a_folder_with_hedging_toml();
    let config: PolicyConfig = toml::from_str(&std::fs::read_to_string("hedging.toml")?)?;
    let policy = config.to_builder().timer(TokioTimer::new()).build(); // timer, hooks: in code

    let policy: Policy<TokioTimer> = policy; // the type a policy with TokioTimer has
    assert_eq!(policy.max_copies(), 3);
    assert_eq!(policy.delay(), Some(Duration::from_millis(20)));
    Ok(())
}
