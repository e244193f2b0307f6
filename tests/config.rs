//! `hedging::config`: policies read from TOML, YAML and JSON, written back the same, built
//! into the policy their builder methods make. Bad inputs: `config_errors.rs`.

mod common;

use std::time::Duration;

use common::{ms, Backend, Driver, Step};
use hedging::config::{BudgetConfig, PolicyConfig};
use hedging::timer::ManualTimer;
use hedging::{Budget, Policy};

/// A config with every setting set, in the delay mode with the adaptive delay.
fn every_setting() -> PolicyConfig {
    let mut budget = BudgetConfig::default();
    budget.ratio = Some(0.1);
    budget.burst = Some(20.0);
    budget.max_outstanding = Some(50);
    budget.min_per_second = Some(5);
    let mut config = PolicyConfig::default();
    config.name = Some("user-reads".to_owned());
    config.enabled = false;
    config.max_copies = Some(3);
    config.delay = Some(ms(20));
    config.max_delay = Some(ms(200));
    config.adaptive_delay = Some(0.95);
    config.min_delay = Some(Duration::from_micros(1_500));
    config.adaptive_min_samples = Some(50);
    config.adaptive_window = Some(Duration::from_secs(5));
    config.adaptive_keys = Some(64);
    config.min_win_rate = Some(0.05);
    config.hedge_probability = Some(0.5);
    config.replace_failed = true;
    config.catch_unwind = true;
    config.budget = Some(budget);
    config
}

/// A config in the fallback mode with a throttling budget.
fn throttled_fallback() -> PolicyConfig {
    let mut budget = BudgetConfig::default();
    budget.max_tokens = Some(10.0);
    budget.token_ratio = Some(0.1);
    let mut config = PolicyConfig::default();
    config.max_copies = Some(5);
    config.fallback = true;
    config.budget = Some(budget);
    config
}

const EVERY_SETTING_TOML: &str = r#"
name = "user-reads"
enabled = false
max_copies = 3
delay = "20ms"
max_delay = "200ms"
adaptive_delay = 0.95
min_delay = "1.5ms"
adaptive_min_samples = 50
adaptive_window = "5s"
adaptive_keys = 64
min_win_rate = 0.05
hedge_probability = 0.5
replace_failed = true
catch_unwind = true

[budget]
ratio = 0.1
burst = 20.0
max_outstanding = 50
min_per_second = 5
"#;

const EVERY_SETTING_YAML: &str = r#"
name: user-reads
enabled: false
max_copies: 3
delay: 20ms
max_delay: 200ms
adaptive_delay: 0.95
min_delay: 1500us
adaptive_min_samples: 50
adaptive_window: 5s
adaptive_keys: 64
min_win_rate: 0.05
hedge_probability: 0.5
replace_failed: true
catch_unwind: true
budget:
  ratio: 0.1
  burst: 20
  max_outstanding: 50
  min_per_second: 5
"#;

const EVERY_SETTING_JSON: &str = r#"{
  "name": "user-reads", "enabled": false, "max_copies": 3,
  "delay": "20ms", "max_delay": "200ms", "adaptive_delay": 0.95, "min_delay": "1.5ms",
  "adaptive_min_samples": 50, "adaptive_window": "5s", "adaptive_keys": 64,
  "min_win_rate": 0.05, "hedge_probability": 0.5,
  "replace_failed": true, "catch_unwind": true,
  "budget": {"ratio": 0.1, "burst": 20, "max_outstanding": 50, "min_per_second": 5}
}"#;

// --- Round trips --------------------------------------------------------------------------

#[test]
fn every_setting_round_trips_through_toml() {
    for config in [
        every_setting(),
        throttled_fallback(),
        PolicyConfig::default(),
    ] {
        let text = toml::to_string(&config).unwrap();
        assert_eq!(
            toml::from_str::<PolicyConfig>(&text).unwrap(),
            config,
            "{text}"
        );
    }
    assert_eq!(
        toml::from_str::<PolicyConfig>(EVERY_SETTING_TOML).unwrap(),
        every_setting()
    );
}

#[test]
fn every_setting_round_trips_through_yaml() {
    for config in [
        every_setting(),
        throttled_fallback(),
        PolicyConfig::default(),
    ] {
        let text = serde_yaml::to_string(&config).unwrap();
        assert_eq!(
            serde_yaml::from_str::<PolicyConfig>(&text).unwrap(),
            config,
            "{text}"
        );
    }
    assert_eq!(
        serde_yaml::from_str::<PolicyConfig>(EVERY_SETTING_YAML).unwrap(),
        every_setting()
    );
}

#[test]
fn every_setting_round_trips_through_json() {
    for config in [
        every_setting(),
        throttled_fallback(),
        PolicyConfig::default(),
    ] {
        let text = serde_json::to_string(&config).unwrap();
        assert_eq!(
            serde_json::from_str::<PolicyConfig>(&text).unwrap(),
            config,
            "{text}"
        );
    }
    assert_eq!(
        serde_json::from_str::<PolicyConfig>(EVERY_SETTING_JSON).unwrap(),
        every_setting()
    );
}

#[test]
fn durations_are_written_as_people_write_them() {
    let text = toml::to_string(&every_setting()).unwrap();
    for line in [
        r#"delay = "20ms""#,
        r#"min_delay = "1.5ms""#,
        r#"adaptive_window = "5s""#,
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
}

#[test]
fn unset_settings_are_left_out_when_written() {
    let text = serde_json::to_string(&PolicyConfig::default()).unwrap();
    assert_eq!(text, r#"{"enabled":true}"#);
}

#[test]
fn the_readme_and_guide_examples_read() {
    let pages = [
        ("README.md", include_str!("../README.md")),
        ("docs/guide.md", include_str!("../docs/guide.md")),
    ];
    for (page, text) in pages {
        let section = &text[text
            .find("## Configuration")
            .unwrap_or_else(|| panic!("{page}: a Configuration section"))..];
        let start = section
            .find("```toml\n")
            .unwrap_or_else(|| panic!("{page}: a TOML example"))
            + "```toml\n".len();
        let example = &section[start..start + section[start..].find("```").unwrap()];
        let config: PolicyConfig = toml::from_str(example).unwrap();
        assert_eq!(config.name.as_deref(), Some("user-reads"), "{page}");
        assert!(config.budget.is_some(), "{page}");
    }
}

// --- to_builder ---------------------------------------------------------------------------

#[test]
fn to_builder_sets_every_setting_as_its_builder_method_does() {
    let by_hand = Policy::builder()
        .name("user-reads")
        .enabled(false)
        .max_copies(3)
        .delay(ms(20))
        .adaptive_delay(0.95)
        .max_delay(ms(200))
        .min_delay(Duration::from_micros(1_500))
        .adaptive_min_samples(50)
        .adaptive_window(Duration::from_secs(5))
        .adaptive_keys(64)
        .min_win_rate(0.05)
        .hedge_probability(0.5)
        .replace_failed(true)
        .catch_unwind(true)
        .budget(
            &Budget::new(0.1)
                .burst(20.0)
                .max_outstanding(50)
                .min_per_second(5),
        );
    let from_file = toml::from_str::<PolicyConfig>(EVERY_SETTING_TOML).unwrap();
    assert_eq!(
        format!("{:?}", from_file.to_builder()),
        format!("{by_hand:?}")
    );

    let by_hand = Policy::builder()
        .max_copies(5)
        .fallback()
        .budget(&Budget::throttling(10.0, 0.1));
    assert_eq!(
        format!("{:?}", throttled_fallback().to_builder()),
        format!("{by_hand:?}")
    );
}

#[test]
fn an_empty_file_leaves_the_builder_defaults() {
    let config: PolicyConfig = toml::from_str("").unwrap();
    assert_eq!(config, PolicyConfig::default());
    assert_eq!(
        format!("{:?}", config.to_builder()),
        format!("{:?}", Policy::builder())
    );
}

#[test]
fn a_policy_from_a_file_hedges_at_its_delay() {
    let timer = ManualTimer::new();
    let config: PolicyConfig =
        serde_json::from_str(r#"{"max_copies": 2, "delay": "15ms"}"#).unwrap();
    let policy = config.to_builder().timer(timer.clone()).build();
    let backend = Backend::new(&timer, [Step::ok(100, 0), Step::ok(1, 1)]);
    assert_eq!(
        Driver::new(hedging::Hedgeable::hedged(backend.factory(), &policy)).run(&timer),
        Ok(1)
    );
    assert_eq!(backend.starts(), [(0, ms(0)), (1, ms(15))]);
}

#[test]
fn adaptive_keys_in_a_file_learn_a_delay_per_key() {
    use hedging::timer::Timer;
    let timer = ManualTimer::new();
    let config: PolicyConfig = toml::from_str(
        "delay = \"50ms\"\nadaptive_delay = 0.5\nadaptive_min_samples = 5\nadaptive_keys = 8",
    )
    .unwrap();
    let policy = config.to_builder().timer(timer.clone()).build();
    for _ in 0..10 {
        let sleep = timer.sleep(ms(2));
        let mut sleep = Some(sleep);
        let call = hedging::Hedgeable::hedged(
            move || {
                let sleep = sleep.take().unwrap_or_else(|| unreachable!("no hedge"));
                async move {
                    sleep.await;
                    Ok::<_, ()>(0)
                }
            },
            &policy,
        )
        .key("fast");
        assert_eq!(Driver::new(call).run(&timer), Ok(0));
    }
    let fast = policy.delay_for("fast").unwrap();
    assert!(fast >= ms(2) && fast < ms(3), "{fast:?}");
    assert_eq!(policy.delay_for("unseen"), Some(ms(50)), "the fixed delay");
}

#[test]
fn parallel_in_a_file_starts_every_copy_at_once() {
    let timer = ManualTimer::new();
    let config: PolicyConfig = toml::from_str("max_copies = 3\nparallel = true").unwrap();
    let policy = config.to_builder().timer(timer.clone()).build();
    let backend = Backend::new(&timer, [Step::ok(5, 0), Step::ok(5, 1), Step::ok(5, 2)]);
    assert_eq!(
        Driver::new(hedging::Hedgeable::hedged(backend.factory(), &policy)).run(&timer),
        Ok(0)
    );
    assert_eq!(backend.starts(), [(0, ms(0)), (1, ms(0)), (2, ms(0))]);
}

#[test]
fn enabled_false_in_a_file_builds_a_disabled_policy() {
    let timer = ManualTimer::new();
    let config: PolicyConfig = toml::from_str("enabled = false\ndelay = \"10ms\"").unwrap();
    let policy = config.to_builder().timer(timer.clone()).build();
    assert!(!policy.is_enabled());
    let backend = Backend::new(&timer, [Step::ok(100, 0), Step::ok(1, 1)]);
    assert_eq!(
        Driver::new(hedging::Hedgeable::hedged(backend.factory(), &policy)).run(&timer),
        Ok(0)
    );
    assert_eq!(backend.started(), 1);
}

#[test]
fn a_name_read_from_a_file_names_the_policy() {
    let config: PolicyConfig = serde_yaml::from_str("name: object-heads").unwrap();
    let policy = config.to_builder().timer(ManualTimer::new()).build();
    drop(config);
    assert_eq!(policy.name(), Some("object-heads"));
}

#[test]
fn a_budget_section_builds_a_budget_of_the_policy_s_own() {
    let text = "[budget]\nratio = 0.2\nmax_outstanding = 4";
    let config: PolicyConfig = toml::from_str(text).unwrap();
    let first = config.to_builder().timer(ManualTimer::new()).build();
    let second = config.to_builder().timer(ManualTimer::new()).build();
    let (first, second) = (first.budget().unwrap(), second.budget().unwrap());
    assert_eq!((first.ratio(), first.tokens()), (0.2, 10.0));
    first.set_ratio(0.5);
    assert_eq!(
        second.ratio(),
        0.2,
        "each to_builder() makes a budget of its own"
    );
}

#[test]
fn one_budget_is_shared_by_making_it_once_and_giving_it_to_each_builder() {
    let storage: BudgetConfig = toml::from_str("ratio = 0.05\nmax_outstanding = 20").unwrap();
    let shared = storage.to_budget();
    let heads: PolicyConfig = toml::from_str("name = \"heads\"").unwrap();
    let ranges: PolicyConfig = toml::from_str("name = \"ranges\"\n[budget]\nratio = 0.5").unwrap();
    let heads = heads
        .to_builder()
        .budget(&shared)
        .timer(ManualTimer::new())
        .build();
    let ranges = ranges
        .to_builder()
        .budget(&shared)
        .timer(ManualTimer::new())
        .build();
    shared.set_ratio(0.01);
    assert_eq!(heads.budget().unwrap().ratio(), 0.01);
    assert_eq!(
        ranges.budget().unwrap().ratio(),
        0.01,
        ".budget(&shared) replaces the section's budget"
    );
}

#[test]
fn a_reload_flips_the_switch_and_changes_the_ratio() {
    // The guide's reload (docs/guide.md, Configuration), as written there.
    fn reload(policy: &Policy<ManualTimer>, text: &str) -> Result<(), toml::de::Error> {
        let config: PolicyConfig = toml::from_str(text)?; // a bad file changes nothing
        policy.set_enabled(config.enabled);
        if let (Some(budget), Some(section)) = (policy.budget(), &config.budget) {
            if let Some(ratio) = section.ratio.or(section.token_ratio) {
                budget.set_ratio(ratio);
            }
        }
        Ok(())
    }
    let text = "delay = \"20ms\"\n[budget]\nratio = 0.1";
    let config: PolicyConfig = toml::from_str(text).unwrap();
    let policy = config.to_builder().timer(ManualTimer::new()).build();

    reload(
        &policy,
        "enabled = false\ndelay = \"20ms\"\n[budget]\nratio = 0.02",
    )
    .unwrap();
    assert!(!policy.is_enabled());
    assert_eq!(policy.budget().unwrap().ratio(), 0.02);
    assert!(reload(&policy, "enabled = true\nmax_copies = 0").is_err());
    assert!(!policy.is_enabled(), "the bad file changed nothing");
    reload(&policy, "enabled = true").unwrap();
    assert!(policy.is_enabled());
}

// --- Validation in code ---------------------------------------------------------------------

#[test]
fn validate_refuses_in_code_what_a_file_may_not_give() {
    let mut config = PolicyConfig::default();
    config.max_copies = Some(65);
    let error = config.validate().unwrap_err();
    assert_eq!(error.key(), "max_copies");
    assert_eq!(
        error.to_string(),
        "max_copies = 65 is out of range: expected 1..=64"
    );

    let mut config = PolicyConfig::default();
    let mut budget = BudgetConfig::default();
    budget.ratio = Some(f64::NAN);
    config.budget = Some(budget);
    assert_eq!(config.validate().unwrap_err().key(), "budget.ratio");
    assert!(every_setting().validate().is_ok());
    assert!(throttled_fallback().validate().is_ok());
}

#[test]
fn an_unvalidated_config_is_clamped_as_the_builder_clamps() {
    let mut config = PolicyConfig::default();
    config.max_copies = Some(0);
    config.hedge_probability = Some(7.0);
    let policy = config.to_builder().timer(ManualTimer::new()).build();
    assert_eq!(policy.max_copies(), 1);
}
