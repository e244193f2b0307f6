//! The printed policy is a `PolicyConfig` a user can paste: it parses, and builds a
//! policy with the recommended settings.

use std::time::Duration;

use hedging::config::PolicyConfig;
use hedging_advisor::advice::{advise, Settings};
use hedging_advisor::read::{read, ReadOptions};

fn advice(settings: &Settings) -> hedging_advisor::advice::Advice {
    let mut input = "1ms\n".repeat(960);
    input.push_str(&"40ms\n".repeat(40));
    let (latencies, _) = read(input.as_bytes(), &ReadOptions::default()).unwrap();
    advise(&latencies, settings).unwrap()
}

#[test]
fn the_printed_toml_parses_as_a_policy_config() {
    let advice = advice(&Settings::default());
    let config: PolicyConfig = toml::from_str(&advice.config_toml)
        .unwrap_or_else(|error| panic!("{error}\n{}", advice.config_toml));
    assert_eq!(config.optimal_delay, Some(0.99));
    assert_eq!(config.max_copies, Some(2));
    assert_eq!(
        config.budget.as_ref().and_then(|budget| budget.ratio),
        Some(0.1)
    );
    let delay = config.delay.unwrap();
    let recommended = advice.recommended.delay.as_secs_f64();
    assert!(
        (delay.as_secs_f64() / recommended - 1.0).abs() < 0.01,
        "{delay:?}"
    );
    assert!(config.min_delay.unwrap() <= delay && delay <= config.max_delay.unwrap());
    let policy = config.to_builder().build();
    assert_eq!(policy.delay(), Some(delay));
}

#[test]
fn no_budget_prints_no_budget_section() {
    let settings = Settings {
        budget: None,
        copies: 3,
        target: 0.999,
        ..Settings::default()
    };
    let advice = advice(&settings);
    let config: PolicyConfig = toml::from_str(&advice.config_toml).unwrap();
    assert_eq!(config.budget, None);
    assert_eq!(config.max_copies, Some(3));
    assert_eq!(config.optimal_delay, Some(0.999));
    assert!(advice.recommended.extra <= hedging::model::NO_BUDGET_EXTRA + 1e-9);
    assert!(advice.recommended.delay > Duration::ZERO);
}

/// Latencies the reader accepts (under 584 years) must give a policy the core accepts:
/// the printed bounds saturate at the longest duration a `PolicyConfig` may give
/// (`u64::MAX - 1` ns) instead of passing it.
#[test]
fn the_printed_policy_of_the_longest_latencies_parses() {
    for input in [
        "18446744073709551614ns\n1ms\n",
        "10000000000s\n",
        "18446744073709551614ns\n",
    ] {
        let (latencies, _) = read(input.as_bytes(), &ReadOptions::default()).unwrap();
        let advice = advise(&latencies, &Settings::default()).unwrap();
        let parsed = toml::from_str::<PolicyConfig>(&advice.config_toml);
        assert!(
            parsed.is_ok(),
            "{input:?}: {}\n{}",
            parsed.unwrap_err(),
            advice.config_toml
        );
    }
}
