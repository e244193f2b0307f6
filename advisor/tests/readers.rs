//! Each reader on good input, and each kind of bad input: an error naming the line (and
//! column) and what was expected, never a panic.

use hedging_advisor::read::{read, Format, ReadOptions};
use hedging_advisor::unit::Unit;
use hedging_advisor::InputError;

fn options(format: Format) -> ReadOptions {
    ReadOptions {
        format,
        ..ReadOptions::default()
    }
}

fn error(input: &str, options: &ReadOptions) -> InputError {
    read(input.as_bytes(), options).expect_err("bad input")
}

#[test]
fn lines_read_bare_numbers_in_the_unit_and_suffixes_as_written() {
    let input = "# a comment\n1.5\n\n  250us\n2ms\n";
    let (latencies, format) = read(input.as_bytes(), &ReadOptions::default()).unwrap();
    assert_eq!(format, Format::Lines);
    assert_eq!(latencies.samples(), 3);
    let histogram = latencies.histogram();
    assert!(histogram.equivalent(histogram.min(), 250_000));
    assert!(histogram.equivalent(histogram.max(), 2_000_000));
    let micros = ReadOptions {
        unit: Some(Unit::Micros),
        ..ReadOptions::default()
    };
    let (latencies, _) = read("7\n".as_bytes(), &micros).unwrap();
    assert!(latencies
        .histogram()
        .equivalent(latencies.histogram().max(), 7_000));
}

#[test]
fn a_non_numeric_latency_names_its_line_and_column() {
    let found = error("1.5\n2\n  abc\n", &options(Format::Lines));
    assert_eq!((found.line, found.column), (Some(3), Some(3)));
    assert!(
        found
            .message
            .contains("expected a latency such as 12.5 or 12.5ms"),
        "{found}"
    );
    assert!(
        found.to_string().starts_with("line 3, column 3: "),
        "{found}"
    );
}

#[test]
fn a_negative_latency_is_refused_as_negative() {
    let found = error("1.5\n-2ms\n", &options(Format::Lines));
    assert_eq!(found.line, Some(2));
    assert!(found.message.contains("negative"), "{found}");
}

#[test]
fn a_file_that_holds_no_latency_is_an_error() {
    for (input, format) in [
        ("", Format::Auto),
        ("# only a comment\n\n", Format::Lines),
        ("timestamp,latency_ms\n", Format::Csv),
        ("# TYPE x histogram\n", Format::Prometheus),
        ("#[BaseTime: 0.000 (seconds since epoch)]\n", Format::Hdr),
    ] {
        let found = error(input, &options(format));
        assert_eq!(found.line, None, "{input:?}");
        assert!(
            found.message.starts_with("no latency found: expected"),
            "{found}"
        );
    }
}

#[test]
fn text_that_is_not_utf8_names_its_line() {
    let found = read(&b"1\n2\n\xff\xfe\n"[..], &options(Format::Lines)).expect_err("not text");
    assert_eq!(found.line, Some(3));
    assert!(found.message.contains("UTF-8"), "{found}");
}

#[test]
fn csv_finds_its_latency_and_timestamp_columns() {
    let input = "timestamp,latency_ms,status\n10.000,1.5,200\n10.001,2.5,200\n10.002,30,500\n";
    let (latencies, format) = read(input.as_bytes(), &ReadOptions::default()).unwrap();
    assert_eq!(format, Format::Csv);
    assert_eq!(latencies.samples(), 3);
    let timeline = latencies.timeline().calls();
    assert_eq!(timeline.len(), 3);
    assert_eq!(timeline[1].0 - timeline[0].0, 1_000_000);
    assert_eq!(timeline[2].1, 30_000_000);
}

#[test]
fn csv_timestamps_may_be_rfc3339() {
    let input = "time,latency\n2024-12-05T00:00:00.000Z,1\n2024-12-05T00:00:00.250Z,2\n";
    let (latencies, _) = read(input.as_bytes(), &ReadOptions::default()).unwrap();
    let timeline = latencies.timeline().calls();
    assert_eq!(timeline[1].0 - timeline[0].0, 250_000_000);
}

#[test]
fn csv_asks_for_a_column_when_it_cannot_tell() {
    let input = "a,b,c\n1,2,3\n";
    let found = error(input, &options(Format::Csv));
    assert_eq!(found.line, Some(1));
    assert!(found.message.contains("--column"), "{found}");
    let named = ReadOptions {
        column: Some("b".into()),
        ..options(Format::Csv)
    };
    let (latencies, _) = read(input.as_bytes(), &named).unwrap();
    assert!(latencies
        .histogram()
        .equivalent(latencies.histogram().max(), 2_000_000));
    let missing = ReadOptions {
        column: Some("latency".into()),
        ..options(Format::Csv)
    };
    assert!(error(input, &missing).message.contains("\"latency\""));
}

#[test]
fn csv_errors_name_the_line_and_the_field() {
    let input = "time,latency\n1,2\n2,fast\n";
    let found = error(input, &options(Format::Csv));
    assert_eq!((found.line, found.column), (Some(3), Some(2)));
    assert!(found.message.contains("column \"latency\""), "{found}");
    let found = error("time,latency\n1,2\nsoon,3\n", &options(Format::Csv));
    assert_eq!((found.line, found.column), (Some(3), Some(1)));
    assert!(found.message.contains("expected a timestamp"), "{found}");
    let found = error("time,latency\n1,2\n1,2,3\n", &options(Format::Csv));
    assert_eq!(found.line, Some(3));
    assert!(found.message.contains("expected 2 fields"), "{found}");
    let found = error("time,latency\n1,-2\n", &options(Format::Csv));
    assert!(found.message.contains("negative"), "{found}");
}

const PROMETHEUS: &str = r#"# HELP rpc_seconds RPC latency.
# TYPE rpc_seconds histogram
rpc_seconds_bucket{le="0.001"} 90
rpc_seconds_bucket{le="0.01"} 98
rpc_seconds_bucket{le="0.1"} 99
rpc_seconds_bucket{le="+Inf"} 100
rpc_seconds_sum 0.6
rpc_seconds_count 100
"#;

#[test]
fn prometheus_buckets_count_at_their_edge_and_inf_as_running_past_the_last() {
    let (latencies, format) = read(PROMETHEUS.as_bytes(), &ReadOptions::default()).unwrap();
    assert_eq!(format, Format::Prometheus);
    assert_eq!(latencies.samples(), 100);
    let classes = latencies.classes();
    assert_eq!(classes.edges, [1_000_000, 10_000_000, 100_000_000]);
    assert_eq!(classes.ended, [90, 8, 1]);
    assert_eq!(classes.censored, [0, 0, 1]);
}

#[test]
fn prometheus_buckets_that_are_not_cumulative_are_refused() {
    let input = PROMETHEUS.replace("} 98", "} 80");
    let found = error(&input, &options(Format::Prometheus));
    assert_eq!(found.line, Some(4));
    assert!(
        found.message.contains("expected cumulative buckets"),
        "{found}"
    );
    assert!(found.message.contains("line 3"), "{found}");
}

#[test]
fn prometheus_with_several_histograms_asks_for_metric() {
    let input = format!("{PROMETHEUS}other_bucket{{le=\"1\"}} 3\nother_bucket{{le=\"+Inf\"}} 3\n");
    let found = error(&input, &options(Format::Prometheus));
    assert!(found.message.contains("--metric"), "{found}");
    let chosen = ReadOptions {
        metric: Some("other".into()),
        ..options(Format::Prometheus)
    };
    assert_eq!(read(input.as_bytes(), &chosen).unwrap().0.samples(), 3);
    let absent = ReadOptions {
        metric: Some("absent".into()),
        ..options(Format::Prometheus)
    };
    assert!(error(&input, &absent).message.contains("absent_bucket"));
}

#[test]
fn prometheus_bad_counts_and_labels_name_the_line() {
    let input = PROMETHEUS.replace("} 99", "} many");
    let found = error(&input, &options(Format::Prometheus));
    assert_eq!(found.line, Some(5));
    assert!(
        found.message.contains("expected a bucket's count"),
        "{found}"
    );
    let input = PROMETHEUS.replace("le=\"0.1\"", "le=\"soon\"");
    let found = error(&input, &options(Format::Prometheus));
    assert_eq!(found.line, Some(5));
    assert!(
        found.message.starts_with("le: expected a latency"),
        "{found}"
    );
    let found = error("x_bucket{le=\"1\" 3\n", &options(Format::Prometheus));
    assert!(
        found.message.contains("expected the labels to end"),
        "{found}"
    );
}

/// An interval log of `intervals` histograms of 1 ms and 100 ms latencies, in µs.
fn hdr_log(intervals: u64) -> String {
    use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
    use hdrhistogram::serialization::V2DeflateSerializer;
    use hdrhistogram::Histogram;
    use std::time::{Duration, UNIX_EPOCH};

    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .with_base_time(UNIX_EPOCH + Duration::from_secs(1_000))
        .begin_log_with(&mut out, &mut serializer)
        .unwrap();
    for interval in 0..intervals {
        let mut histogram = Histogram::<u64>::new(3).unwrap();
        histogram.record_n(1_000, 99).unwrap();
        histogram.record(100_000).unwrap();
        writer
            .write_histogram(
                &histogram,
                Duration::from_secs(interval),
                Duration::from_secs(1),
                None,
            )
            .unwrap();
    }
    drop(writer);
    String::from_utf8(out).unwrap()
}

#[test]
fn hdr_logs_are_read_through_the_hdrhistogram_crate() {
    let log = hdr_log(3);
    let micros = ReadOptions {
        unit: Some(Unit::Micros),
        ..ReadOptions::default()
    };
    let (latencies, format) = read(log.as_bytes(), &micros).unwrap();
    assert_eq!(format, Format::Hdr);
    assert_eq!(latencies.samples(), 300);
    let slowest = latencies.histogram().max() as f64;
    assert!((slowest / 1e8 - 1.0).abs() < 2e-3, "{slowest}");
    assert_eq!(latencies.timeline().calls().len(), 300);
}

#[test]
fn a_truncated_hdr_log_names_its_last_line() {
    let log = hdr_log(3);
    let cut = &log[..log.len() - 30];
    let lines = cut.lines().count() as u64;
    let found = error(cut, &options(Format::Hdr));
    assert_eq!(found.line, Some(lines), "{found}");
    assert!(found.column.is_some());
    assert!(found.message.contains("cut short"), "{found}");
}

#[test]
fn a_damaged_hdr_line_is_refused() {
    let found = error("0.000,1.000,5.0,HISTFAAAA!!!!\n", &options(Format::Hdr));
    assert_eq!(found.line, Some(1));
    assert!(found.message.contains("expected a base64"), "{found}");
    let found = error(
        "#[BaseTime: 0.000 (seconds)]\nnot a log line\n",
        &options(Format::Hdr),
    );
    assert_eq!((found.line, found.column), (Some(2), Some(1)));
    assert!(
        found
            .message
            .contains("expected an HdrHistogram interval log line"),
        "{found}"
    );
}

#[test]
fn auto_tells_every_format_apart() {
    assert_eq!(Format::detect(b"1.5\n2ms\n"), Format::Lines);
    assert_eq!(Format::detect(b"# x\nts,latency\n1,2\n"), Format::Csv);
    assert_eq!(Format::detect(PROMETHEUS.as_bytes()), Format::Prometheus);
    assert_eq!(Format::detect(hdr_log(1).as_bytes()), Format::Hdr);
}

/// A latency whose whole part fills a `u128` of nanoseconds, with a fraction that rounds
/// up: the reader must refuse it as too long (line 1), not overflow (a panic in debug, a
/// wrap to 0 ns in release).
#[test]
fn a_latency_at_the_u128_limit_with_a_rounding_fraction_is_too_long() {
    for input in [
        // ns: the whole part is u128::MAX, the fraction rounds it up by one.
        "340282366920938463463374607431768211455.5ns\n",
        // ms (the default unit): the whole part times 10^6 is within 10^6 of u128::MAX,
        // and the fraction's nanoseconds pass it.
        "340282366920938463463374607431768.999999\n",
    ] {
        let found = error(input, &options(Format::Lines));
        assert_eq!(found.line, Some(1), "{input:?}: {found}");
        assert!(
            found.message.contains("under 584 years"),
            "{input:?}: {found}"
        );
    }
}

/// An interval log whose `BaseTime` plus an interval's start passes `Duration::MAX`: the
/// start saturates (as the timeline's nanoseconds already do), no `Duration` overflow.
#[test]
fn an_interval_log_whose_base_time_plus_start_overflows_does_not_panic() {
    let sample = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/service.hlog"
    ))
    .unwrap();
    let interval = sample.lines().find(|line| line.contains("HISTF")).unwrap();
    let encoded = interval.rsplit(',').next().unwrap();
    let log = format!(
        "#[BaseTime: 18446744073709551615.000 (seconds since epoch)]\n1.000,0.100,1.0,{encoded}\n"
    );
    let (latencies, _) = read(log.as_bytes(), &options(Format::Hdr)).unwrap();
    assert!(latencies.samples() > 0);
}
