//! The binary as a user runs it: exit status, the JSON shape, standard input, the SVG.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn advisor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hedging-advisor"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs")
}

fn with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hedging-advisor"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn every_shipped_sample_gives_a_recommendation() {
    for args in [
        &["examples/data/latencies.txt"][..],
        &["--column", "latency_ms", "examples/data/calls.csv"],
        &["--unit", "us", "examples/data/service.hlog"],
        &[
            "--metric",
            "http_request_duration_seconds",
            "examples/data/metrics.prom",
        ],
    ] {
        let output = advisor(args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            text(&output.stderr)
        );
        // Standard error is not a terminal here: no progress bar, nothing at all.
        assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
        let stdout = text(&output.stdout);
        assert!(stdout.contains("unhedged: p50"), "{stdout}");
        assert!(stdout.contains("<- recommended"), "{stdout}");
        assert!(stdout.contains("optimal_delay = 0.99"), "{stdout}");
    }
}

#[test]
fn json_has_the_documented_shape() {
    let output = advisor(&[
        "--json",
        "--delay",
        "5ms",
        "--delay",
        "10ms",
        "examples/data/calls.csv",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(json["samples"], 5_000);
    for key in ["p50_ms", "p99_ms", "p999_ms"] {
        assert!(json["unhedged"][key].is_number(), "{key}");
    }
    for key in [
        "delay_ms",
        "max_copies",
        "p50_ms",
        "p99_ms",
        "p999_ms",
        "extra",
        "config_toml",
    ] {
        assert!(!json["recommended"][key].is_null(), "recommended.{key}");
    }
    let delays = json["delays"].as_array().unwrap();
    assert_eq!(delays.len(), 2, "exactly the --delay values");
    assert_eq!(delays[0]["delay_ms"], 5.0);
    for key in ["delay_ms", "p50_ms", "p99_ms", "p999_ms", "extra"] {
        assert!(delays[1][key].is_number(), "delays[].{key}");
    }
    assert!(
        delays[0]["replay"]["p99_ms"].is_number(),
        "a CSV with timestamps is replayed"
    );
}

#[test]
fn standard_input_is_read_with_a_dash() {
    let output = with_stdin(&["--json", "-"], "1ms\n2ms\n100ms\n".repeat(50).as_bytes());
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["samples"], 150);
}

#[test]
fn bad_input_exits_2_naming_the_line() {
    let output = with_stdin(&["-"], b"1.5\n2.5\nslow\n");
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("error: -: line 3, column 1: expected a latency"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
    let output = with_stdin(&["-"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no latency found"));
    let output = advisor(&["no/such/file.txt"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--target", "1.5", "x"][..],
        &["--budget", "-1", "x"],
        &["--delay", "soon", "x"],
        &["--format", "xml", "x"],
        &["--copies", "0", "x"],
        &[],
    ] {
        assert_eq!(advisor(args).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn svg_draws_the_cdf_with_and_without_hedging() {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("advisor-cdf.svg");
    let output = advisor(&[
        "--svg",
        path.to_str().unwrap(),
        "examples/data/latencies.txt",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg"), "an SVG document");
    for label in [
        "unhedged (recorded)",
        "recommended policy (predicted)",
        "p99.9",
        "99.9%",
    ] {
        assert!(svg.contains(label), "{label}");
    }
}

#[test]
fn help_shows_an_example_per_format() {
    let help = text(&advisor(&["--help"]).stdout);
    for example in [
        "latencies.txt",
        "calls.csv",
        ".hlog",
        "metrics.prom",
        "--json -",
    ] {
        assert!(help.contains(example), "{example}");
    }
}

#[test]
fn another_target_is_named_and_predicted_as_such() {
    let output = advisor(&["--target", "0.95", "examples/data/latencies.txt"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("optimal_delay = 0.95"), "{stdout}");
    assert!(stdout.contains("predicted p95 "), "{stdout}");
    let json = advisor(&["--json", "--target", "0.95", "examples/data/latencies.txt"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let at_target = json["recommended"]["at_target_ms"].as_f64().unwrap();
    assert!(at_target <= json["recommended"]["p99_ms"].as_f64().unwrap());
    // A 2% share of stalls leaves the p95 where it was: no copy can better it.
    assert!(json["unhedged"]["at_target_ms"].as_f64().unwrap() >= at_target);
}
