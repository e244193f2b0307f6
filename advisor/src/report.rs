//! What the advisor prints: a table for people, or one JSON object of a stable shape.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::advice::{percent, tail_text, Advice, Row, Tail};
use crate::replay::Replayed;

/// The advice for people: the unhedged tail, the table of delays, the recommendation and
/// its `PolicyConfig` TOML.
pub fn human(advice: &Advice) -> String {
    let mut out = String::new();
    let settings = &advice.settings;
    let budget = match settings.budget {
        Some(ratio) => format!("a budget of {}% extra copies", percent(ratio)),
        None => "no budget (delays predicted to start at most 5% extra copies)".into(),
    };
    let _ = writeln!(
        out,
        "{} latencies; up to {} copies a call, {}; target p{}",
        advice.samples,
        settings.copies,
        budget,
        percent(settings.target)
    );
    let _ = writeln!(
        out,
        "unhedged: p50 {}  p99 {}  p99.9 {}\n",
        tail_text(advice.unhedged.p50),
        tail_text(advice.unhedged.p99),
        tail_text(advice.unhedged.p999)
    );
    let replayed = advice.replayed_calls > 0;
    let _ = writeln!(
        out,
        "model: copies independent, each a draw from the recorded latencies{}",
        if replayed {
            format!(
                "\nreplay: {} recorded calls again in virtual time through the Hedge future, a copy's \
                 latency from calls made near the same moment, the real budget",
                advice.replayed_calls
            )
        } else {
            String::new()
        }
    );
    let mut header = format!(
        "{:>11}  {:>10} {:>10} {:>10} {:>7}",
        "delay", "model p50", "p99", "p99.9", "extra"
    );
    if replayed {
        let _ = write!(
            header,
            "  {:>11} {:>10} {:>10} {:>7}",
            "replay p50", "p99", "p99.9", "extra"
        );
    }
    let _ = writeln!(out, "{header}");
    for row in &advice.rows {
        let mark = if row.delay == advice.recommended.delay {
            " <- recommended"
        } else {
            ""
        };
        let _ = writeln!(out, "{}{mark}", row_text(row, replayed));
    }
    let recommended = &advice.recommended;
    let _ = writeln!(
        out,
        "\nrecommended: {} copies, {} apart: predicted p{} {} (unhedged {}) with {:.1}% extra copies",
        settings.copies,
        crate::advice::duration_text(recommended.delay),
        percent(settings.target),
        tail_text(recommended.at_target),
        tail_text(advice.unhedged_at_target),
        recommended.extra * 100.0
    );
    if let Some(replay) = &recommended.replayed {
        let model = recommended
            .at_target
            .map_or(f64::MAX, |latency| latency.as_secs_f64());
        let slower = replay.at_target.as_secs_f64() > 1.1 * model;
        let _ = writeln!(
            out,
            "replayed:    p{} {} with {:.1}% extra copies{}",
            percent(settings.target),
            ms(replay.at_target),
            replay.extra * 100.0,
            if slower {
                "; slower than the model: slowness comes in clusters, trust the replay"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        out,
        "\n# paste as a hedging::config::PolicyConfig\n{}",
        advice.config_toml
    );
    out
}

fn row_text(row: &Row, replayed: bool) -> String {
    let mut text = format!(
        "{:>11}  {:>10} {:>10} {:>10} {:>6.1}%",
        ms(row.delay),
        opt_ms(row.predicted.p50),
        opt_ms(row.predicted.p99),
        opt_ms(row.predicted.p999),
        row.extra * 100.0
    );
    if let (true, Some(replay)) = (replayed, &row.replayed) {
        let _ = write!(
            text,
            "  {:>11} {:>10} {:>10} {:>6.1}%",
            ms(replay.p50),
            ms(replay.p99),
            ms(replay.p999),
            replay.extra * 100.0
        );
    }
    text
}

fn ms(latency: Duration) -> String {
    format!("{:.3} ms", latency.as_secs_f64() * 1e3)
}

fn opt_ms(latency: Option<Duration>) -> String {
    latency.map_or_else(|| "past last".into(), ms)
}

/// The `--json` object. Its shape is stable: fields may be added, none renamed or
/// removed. Latencies are milliseconds; `null` where a quantile is past the last bucket.
#[derive(Clone, Debug, Serialize)]
pub struct Json {
    /// Latencies read.
    pub samples: u64,
    /// The recorded latencies' tail.
    pub unhedged: JsonTail,
    /// The recommended delay and policy.
    pub recommended: JsonRecommended,
    /// Each delay of the grid (or `--delay`).
    pub delays: Vec<JsonRow>,
    /// The copies per call advised on (`--copies`).
    pub max_copies: usize,
    /// The quantile advised for (`--target`).
    pub target: f64,
    /// The budget's ratio (`--budget`), `null` for none.
    pub budget: Option<f64>,
    /// What the predictions assume: `"independent"` (copies independent draws).
    pub model: &'static str,
    /// Calls the replay ran, 0 when the input has no timestamps.
    pub replayed_calls: usize,
}

/// A tail in milliseconds.
#[derive(Clone, Debug, Serialize)]
pub struct JsonTail {
    /// The median.
    pub p50_ms: Option<f64>,
    /// The 99th percentile.
    pub p99_ms: Option<f64>,
    /// The 99.9th percentile.
    pub p999_ms: Option<f64>,
    /// At the target quantile (`--target`).
    pub at_target_ms: Option<f64>,
}

/// The recommendation.
#[derive(Clone, Debug, Serialize)]
pub struct JsonRecommended {
    /// The delay of each copy after the one before it.
    pub delay_ms: f64,
    /// Copies per call, the original included.
    pub max_copies: usize,
    /// Predicted median.
    pub p50_ms: Option<f64>,
    /// Predicted 99th percentile.
    pub p99_ms: Option<f64>,
    /// Predicted 99.9th percentile.
    pub p999_ms: Option<f64>,
    /// Predicted latency at the target quantile.
    pub at_target_ms: Option<f64>,
    /// Predicted extra copies per call.
    pub extra: f64,
    /// The policy as a `PolicyConfig` TOML.
    pub config_toml: String,
    /// The replay's figures at this delay, `null` without timestamps.
    pub replay: Option<JsonReplay>,
}

/// One delay's prediction.
#[derive(Clone, Debug, Serialize)]
pub struct JsonRow {
    /// The delay.
    pub delay_ms: f64,
    /// Predicted median.
    pub p50_ms: Option<f64>,
    /// Predicted 99th percentile.
    pub p99_ms: Option<f64>,
    /// Predicted 99.9th percentile.
    pub p999_ms: Option<f64>,
    /// Predicted latency at the target quantile.
    pub at_target_ms: Option<f64>,
    /// Predicted extra copies per call.
    pub extra: f64,
    /// The share of asked-for copies the budget is predicted to grant.
    pub granted: f64,
    /// The replay's figures at this delay, `null` without timestamps.
    pub replay: Option<JsonReplay>,
}

/// What the replay measured.
#[derive(Clone, Debug, Serialize)]
pub struct JsonReplay {
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// At the target quantile.
    pub at_target_ms: f64,
    /// Extra copies per call started.
    pub extra: f64,
    /// Copies the budget refused, per call.
    pub refused: f64,
}

fn millis(latency: Duration) -> f64 {
    latency.as_nanos() as f64 / 1e6
}

fn json_tail(tail: &Tail, at_target: Option<Duration>) -> JsonTail {
    JsonTail {
        p50_ms: tail.p50.map(millis),
        p99_ms: tail.p99.map(millis),
        p999_ms: tail.p999.map(millis),
        at_target_ms: at_target.map(millis),
    }
}

fn json_replay(replay: &Replayed) -> JsonReplay {
    JsonReplay {
        p50_ms: millis(replay.p50),
        p99_ms: millis(replay.p99),
        p999_ms: millis(replay.p999),
        at_target_ms: millis(replay.at_target),
        extra: replay.extra,
        refused: replay.refused,
    }
}

/// The advice as the `--json` object.
pub fn json(advice: &Advice) -> Json {
    let recommended = &advice.recommended;
    Json {
        samples: advice.samples,
        unhedged: json_tail(&advice.unhedged, advice.unhedged_at_target),
        recommended: JsonRecommended {
            delay_ms: millis(recommended.delay),
            max_copies: advice.settings.copies,
            p50_ms: recommended.predicted.p50.map(millis),
            p99_ms: recommended.predicted.p99.map(millis),
            p999_ms: recommended.predicted.p999.map(millis),
            at_target_ms: recommended.at_target.map(millis),
            extra: recommended.extra,
            config_toml: advice.config_toml.clone(),
            replay: recommended.replayed.as_ref().map(json_replay),
        },
        delays: advice
            .rows
            .iter()
            .map(|row| JsonRow {
                delay_ms: millis(row.delay),
                p50_ms: row.predicted.p50.map(millis),
                p99_ms: row.predicted.p99.map(millis),
                p999_ms: row.predicted.p999.map(millis),
                at_target_ms: row.at_target.map(millis),
                extra: row.extra,
                granted: row.granted,
                replay: row.replayed.as_ref().map(json_replay),
            })
            .collect(),
        max_copies: advice.settings.copies,
        target: advice.settings.target,
        budget: advice.settings.budget,
        model: "independent",
        replayed_calls: advice.replayed_calls,
    }
}
