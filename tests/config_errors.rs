//! `hedging::config`: every bad input refused with a message naming the key, the value
//! and the accepted range, and where in the file the value at fault is.

use hedging::config::PolicyConfig;

// --- Bad inputs: each refused with its message ----------------------------------------------

/// Reads `text` as TOML, YAML-free; asserts it is refused with `message` (the format adds
/// where in the file).
fn assert_refused(text: &str, message: &str) {
    let error = toml::from_str::<PolicyConfig>(text)
        .expect_err(text)
        .to_string();
    assert!(error.contains(message), "{text:?}:\n{error}");
}

/// One test per bad input: its name, the TOML, and the message it is refused with.
macro_rules! refused {
    ($($test:ident: $text:expr => $message:expr;)*) => {$(
        #[test]
        fn $test() {
            assert_refused($text, $message);
        }
    )*};
}

refused! {
    an_unknown_key_is_refused:
        "max_copy = 3" => "unknown field `max_copy`, expected one of `name`, `enabled`";
    an_unknown_budget_key_is_refused:
        "[budget]\nratio = 0.1\nburts = 5" => "unknown field `burts`";
    max_copies_0_is_refused:
        "max_copies = 0" => "max_copies = 0 is out of range: expected 1..=64";
    max_copies_65_is_refused:
        "max_copies = 65" => "max_copies = 65 is out of range: expected 1..=64";
    a_negative_ratio_is_refused:
        "[budget]\nratio = -0.1" => "budget.ratio = -0.1 is out of range: expected at least 0";
    a_nan_ratio_is_refused:
        "[budget]\nratio = nan" => "budget.ratio = NaN is out of range: expected at least 0";
    a_duration_abc_is_refused:
        r#"delay = "abc""# => r#"delay = "abc" is not a duration: expected a number and a unit (ns, us, ms, s, m, h), such as "20ms" or "1.5s""#;
    a_negative_duration_is_refused:
        r#"delay = "-5ms""# => r#"delay = "-5ms" is out of range: expected a duration of 0 or more"#;
    a_duration_as_a_number_is_refused:
        "delay = 20" => r#"invalid type: integer `20`, expected a duration as a string, such as "20ms" or "1.5s""#;
    a_duration_too_long_is_refused:
        r#"max_delay = "600000000h""# => r#"max_delay = "600000000h" is out of range: expected at most 18446744073.709551614s (u64::MAX - 1 ns)"#;
    a_quantile_of_1_5_is_refused:
        "adaptive_delay = 1.5" => "adaptive_delay = 1.5 is out of range: expected a quantile in 0.0..=1.0";
    a_hedge_probability_above_1_is_refused:
        "hedge_probability = 2.0" => "hedge_probability = 2 is out of range: expected 0.0..=1.0";
    a_min_win_rate_above_1_is_refused:
        "min_win_rate = 1.5" => "min_win_rate = 1.5 is out of range: expected 0.0..=1.0";
    a_negative_min_win_rate_is_refused:
        "min_win_rate = -0.1" => "min_win_rate = -0.1 is out of range: expected 0.0..=1.0";
    adaptive_keys_above_4096_is_refused:
        "adaptive_keys = 5000" => "adaptive_keys = 5000 is out of range: expected 0..=4096";
    adaptive_min_samples_0_is_refused:
        "adaptive_min_samples = 0" => "adaptive_min_samples = 0 is out of range: expected at least 1";
    an_adaptive_window_below_100ms_is_refused:
        r#"adaptive_window = "50ms""# => "adaptive_window = 50ms is out of range: expected at least 100ms";
    a_delay_above_max_delay_is_refused:
        "delay = \"30ms\"\nmax_delay = \"20ms\"" => "delay = 30ms is out of range: expected at most max_delay = 20ms";
    a_max_delay_below_min_delay_is_refused:
        "min_delay = \"50ms\"\nmax_delay = \"10ms\"" => "max_delay = 10ms is out of range: expected at least min_delay = 50ms";
    an_adaptive_max_delay_below_the_default_min_delay_is_refused:
        "adaptive_delay = 0.9\nmax_delay = \"500us\"" => "max_delay = 500us is out of range: expected at least min_delay = 1ms";
    an_adaptive_delay_below_min_delay_is_refused:
        "adaptive_delay = 0.9\ndelay = \"1ms\"\nmin_delay = \"2ms\"" => "delay = 1ms is out of range: expected at least min_delay = 2ms";
    two_modes_are_refused:
        "parallel = true\nfallback = true" => "parallel and fallback are both set: expected one mode, `delay` (optionally with `adaptive_delay` or `optimal_delay`), `parallel` or `fallback`";
    parallel_with_a_delay_is_refused:
        "parallel = true\ndelay = \"5ms\"" => "parallel and delay are both set";
    fallback_with_adaptive_delay_is_refused:
        "fallback = true\nadaptive_delay = 0.9" => "fallback and adaptive_delay are both set";
    a_budget_with_both_kinds_is_refused:
        "[budget]\nratio = 0.1\nmax_tokens = 10\ntoken_ratio = 0.1" => "budget mixes two kinds: expected a token bucket (`ratio`, optionally `burst`) or throttling (`max_tokens` and `token_ratio`), not both";
    a_burst_with_throttling_is_refused:
        "[budget]\nburst = 5\nmax_tokens = 10\ntoken_ratio = 0.1" => "budget mixes two kinds";
    an_empty_budget_is_refused:
        "[budget]" => "budget sets no kind: expected a token bucket (`ratio`, optionally `burst`) or throttling (`max_tokens` and `token_ratio`)";
    a_burst_without_a_ratio_is_refused:
        "[budget]\nburst = 5" => "budget.burst needs the `ratio` of its token bucket";
    throttling_without_token_ratio_is_refused:
        "[budget]\nmax_tokens = 10" => "budget throttling needs both `max_tokens` and `token_ratio`";
    a_burst_below_1_is_refused:
        "[budget]\nratio = 0.1\nburst = 0.5" => "budget.burst = 0.5 is out of range: expected at least 1";
    max_outstanding_0_is_refused:
        "[budget]\nratio = 0.1\nmax_outstanding = 0" => "budget.max_outstanding = 0 is out of range: expected at least 1";
    max_tokens_0_is_refused:
        "[budget]\nmax_tokens = 0\ntoken_ratio = 0.1" => "budget.max_tokens = 0 is out of range: expected 0.001..=1000";
    max_tokens_above_1000_is_refused:
        "[budget]\nmax_tokens = 1001\ntoken_ratio = 0.1" => "budget.max_tokens = 1001 is out of range: expected 0.001..=1000";
    a_negative_token_ratio_is_refused:
        "[budget]\nmax_tokens = 10\ntoken_ratio = -1" => "budget.token_ratio = -1 is out of range: expected at least 0.001";
    a_wrong_type_is_refused:
        r#"max_copies = "3""# => r#"invalid type: string "3", expected usize"#;
}

#[test]
fn a_toml_error_says_where_in_the_file() {
    let error = toml::from_str::<PolicyConfig>("name = \"reads\"\nmax_copy = 3")
        .unwrap_err()
        .to_string();
    assert!(error.contains("line 2"), "{error}");
}

#[test]
fn bad_inputs_are_refused_alike_in_yaml_and_json() {
    let cases = [
        (
            "max_copies: 0",
            r#"{"max_copies": 0}"#,
            "max_copies = 0 is out of range",
        ),
        (
            "max_copy: 3",
            r#"{"max_copy": 3}"#,
            "unknown field `max_copy`",
        ),
        (
            "delay: abc",
            r#"{"delay": "abc"}"#,
            r#"delay = "abc" is not a duration"#,
        ),
        (
            "delay: -5ms",
            r#"{"delay": "-5ms"}"#,
            r#"delay = "-5ms" is out of range"#,
        ),
        (
            "adaptive_delay: 1.5",
            r#"{"adaptive_delay": 1.5}"#,
            "adaptive_delay = 1.5 is out of range",
        ),
        (
            "budget: {ratio: -1}",
            r#"{"budget": {"ratio": -1}}"#,
            "budget.ratio = -1 is out of range",
        ),
        (
            "budget: {ratio: .nan}",
            r#"{"budget": {"ratio": -0.5}}"#,
            "is out of range: expected at least 0",
        ),
        (
            "budget: {ratio: 0.1, max_tokens: 10, token_ratio: 0.1}",
            r#"{"budget": {"ratio": 0.1, "max_tokens": 10, "token_ratio": 0.1}}"#,
            "budget mixes two kinds",
        ),
    ];
    for (yaml, json, message) in cases {
        let error = serde_yaml::from_str::<PolicyConfig>(yaml)
            .expect_err(yaml)
            .to_string();
        assert!(error.contains(message), "{yaml}: {error}");
        let error = serde_json::from_str::<PolicyConfig>(json)
            .expect_err(json)
            .to_string();
        assert!(error.contains(message), "{json}: {error}");
    }
}

// --- Where in the file: the position of the value at fault --------------------------------

/// The same fault written in TOML, YAML and JSON: each error holds `message` and the
/// position of the value at fault, as each format writes positions.
fn assert_refused_at(cases: [(&str, &str); 3], message: &str) {
    let [(toml, toml_at), (yaml, yaml_at), (json, json_at)] = cases;
    let errors = [
        (
            toml,
            toml_at,
            toml::from_str::<PolicyConfig>(toml)
                .map(drop)
                .map_err(|e| e.to_string()),
        ),
        (
            yaml,
            yaml_at,
            serde_yaml::from_str::<PolicyConfig>(yaml)
                .map(drop)
                .map_err(|e| e.to_string()),
        ),
        (
            json,
            json_at,
            serde_json::from_str::<PolicyConfig>(json)
                .map(drop)
                .map_err(|e| e.to_string()),
        ),
    ];
    for (text, at, error) in errors {
        let error = error.expect_err(text);
        assert!(
            error.contains(message) && error.contains(at),
            "{text:?}: expected {at:?}:\n{error}"
        );
    }
}

#[test]
fn a_value_out_of_range_says_its_line_and_column() {
    assert_refused_at(
        [
            (
                "name = \"reads\"\nadaptive_delay = 1.5",
                "line 2, column 18",
            ),
            ("name: reads\nadaptive_delay: 1.5", "at line 2 column 17"),
            (
                "{\"name\": \"reads\",\n \"adaptive_delay\": 1.5}",
                "at line 2 column 22",
            ),
        ],
        "adaptive_delay = 1.5 is out of range",
    );
}

#[test]
fn a_value_out_of_range_in_the_budget_section_says_its_own_line_not_the_section_s() {
    assert_refused_at(
        [
            (
                "name = \"reads\"\n\n[budget]\nratio = 0.1\nmax_outstanding = 0",
                "line 5, column 19",
            ),
            (
                "name: reads\nbudget:\n  ratio: 0.1\n  max_outstanding: 0",
                "at line 4 column 20",
            ),
            (
                "{\"name\": \"reads\",\n \"budget\": {\"ratio\": 0.1,\n   \"max_outstanding\": 0}}",
                "at line 3 column 23",
            ),
        ],
        "budget.max_outstanding = 0 is out of range",
    );
}

#[test]
fn a_duration_that_does_not_read_says_its_line_and_column() {
    assert_refused_at(
        [
            ("name = \"reads\"\ndelay = \"abc\"", "line 2, column 9"),
            ("name: reads\ndelay: abc", "at line 2 column 8"),
            (
                "{\"name\": \"reads\",\n \"delay\": \"abc\"}",
                "at line 2 column 15",
            ),
        ],
        "delay = \"abc\" is not a duration",
    );
}

#[test]
fn settings_that_contradict_each_other_say_where_the_second_is() {
    assert_refused_at(
        [
            (
                "fallback = true\nname = \"x\"\nparallel = true",
                "line 3, column 12",
            ),
            (
                "fallback: true\nname: x\nparallel: true",
                "at line 3 column 11",
            ),
            (
                "{\"fallback\": true,\n \"name\": \"x\",\n \"parallel\": true}",
                "at line 3 column 17",
            ),
        ],
        "parallel and fallback are both set",
    );
}

/// A JSON value of the wrong kind, or a whole number out of its type's range, is
/// refused with a message that names its key: serde_json, unlike TOML (which quotes the
/// line) and YAML (which prefixes the path), names nothing but the value.
#[test]
fn a_json_value_of_the_wrong_kind_names_its_key() {
    let cases = [
        (r#"{"max_copies": "3"}"#, "max_copies"),
        (r#"{"max_copies": -1}"#, "max_copies"),
        (r#"{"max_copies": 1.5}"#, "max_copies"),
        (r#"{"name": 5}"#, "name"),
        (r#"{"name": [1]}"#, "name"),
        (r#"{"enabled": "yes"}"#, "enabled"),
        (r#"{"adaptive_delay": "0.9"}"#, "adaptive_delay"),
        (r#"{"delay": 20}"#, "delay"),
        (r#"{"delay": {"ms": 20}}"#, "delay"),
        (
            r#"{"adaptive_min_samples": 4294967296}"#,
            "adaptive_min_samples",
        ),
        (r#"{"budget": {"ratio": "x"}}"#, "budget.ratio"),
        (
            r#"{"budget": {"ratio": 0.1, "burst": "2"}}"#,
            "budget.burst",
        ),
        (
            r#"{"budget": {"ratio": 0.1, "max_outstanding": -5}}"#,
            "budget.max_outstanding",
        ),
        (
            r#"{"budget": {"ratio": 0.1, "min_per_second": 1.5}}"#,
            "budget.min_per_second",
        ),
        (r#"{"budget": {"max_tokens": true}}"#, "budget.max_tokens"),
        (r#"{"budget": {"token_ratio": "x"}}"#, "budget.token_ratio"),
    ];
    for (json, key) in cases {
        let error = serde_json::from_str::<PolicyConfig>(json)
            .expect_err(json)
            .to_string();
        assert!(
            error.contains(&format!(" for {key} at line 1 column")),
            "{json}: the error does not name `{key}`: {error}"
        );
    }
}
