//! The tail-scaled CDF chart: latency on a log axis, the cumulative share on a "nines"
//! axis, one panel per workload.

use std::fmt::Write as _;
use std::time::Duration;

use super::independent::Report;
use super::queueing::QueueReport;
use super::scheme::Scheme;
use super::{nearest_rank, Config, Delay};

const PANEL_W: f64 = 440.0;
const PANEL_H: f64 = 300.0;
const LEFT: f64 = 78.0;
const TOP: f64 = 40.0;
const PLOT_W: f64 = PANEL_W - LEFT - 20.0;
const PLOT_H: f64 = PANEL_H - TOP - 50.0;
const NINES: f64 = 4.0;
const COLUMNS: usize = 2;
/// The height of one legend: two lines of entries.
const LEGEND_H: f64 = 60.0;
/// One more legend line, for (e)'s third tied row.
const LEGEND_LINE: f64 = 20.0;
/// The loads of workload (e) the chart shows: where hedging pays, and where it stops.
const QUEUE_LOADS: [f64; 2] = [0.3, 0.9];

/// One curve: a row's latencies, its colour and its dash pattern.
type Curve<'a> = (&'a [Duration], &'static str, &'static str);

/// The latency CDFs of every report as an SVG: one panel per workload (and two for the
/// queueing workload, at 30% and 90% load), latency on a log axis, the cumulative share
/// on a "nines" axis (90%, 99%, 99.9%, ...) so the tail shows.
pub fn svg(reports: &[Report], queueing: &QueueReport) -> String {
    // Unhedged, the fixed pair, the adaptive pair, and the recommended optimal row.
    let colors = [
        "#555555", "#1f77b4", "#1f77b4", "#ff7f0e", "#ff7f0e", "#d62728",
    ];
    let dashes = ["", "", "6,4", "", "6,4", "6,4"];
    let panels = reports.len() + QUEUE_LOADS.len();
    let rows = reports.len().div_ceil(COLUMNS) + QUEUE_LOADS.len().div_ceil(COLUMNS);
    let (width, height) = (
        PANEL_W * COLUMNS as f64,
        PANEL_H * rows as f64 + 2.0 * LEGEND_H + LEGEND_LINE,
    );
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let origin = |index: usize| {
        (
            (index % COLUMNS) as f64 * PANEL_W,
            (index / COLUMNS) as f64 * PANEL_H,
        )
    };
    for (index, report) in reports.iter().enumerate() {
        let curves: Vec<Curve<'_>> = report
            .rows
            .iter()
            .zip(colors.iter().zip(dashes))
            .map(|(row, (color, dash))| (row.run.latencies.as_slice(), *color, dash))
            .collect();
        let title = format!("({}) {}", report.workload.key, report.workload.title);
        let unit = if report.workload.fan_out() > 1 {
            "query"
        } else {
            "call"
        };
        panel(&mut out, origin(index), &title, unit, &curves);
    }
    let queue_panels = QUEUE_LOADS.iter().filter_map(|&load| {
        queueing
            .levels
            .iter()
            .find(|level| (level.cluster.utilisation - load).abs() < 1e-9)
    });
    for (index, level) in (reports.len()..panels).zip(queue_panels) {
        let curves: Vec<Curve<'_>> = level
            .runs
            .iter()
            .filter(|run| !matches!(run.scheme, Scheme::FixedBudget(_)))
            .map(|run| {
                let (color, dash) = queue_style(&run.scheme);
                (run.latencies.as_slice(), color, dash)
            })
            .collect();
        let title = format!(
            "(e) queueing at {:.0}% load: 10 replicas, FIFO",
            level.cluster.utilisation * 100.0
        );
        panel(&mut out, origin(index), &title, "call", &curves);
    }
    // Legends: the rows of (a)-(d), then the rows of (e).
    let legend_y = PANEL_H * rows as f64;
    let entries: Vec<(String, &str, &str)> = reports[0]
        .rows
        .iter()
        .zip(colors.iter().zip(dashes))
        .map(|(row, (color, dash))| {
            let label = match row.run.config.delay {
                Delay::Fixed(_) => Config {
                    delay: Delay::Fixed(Duration::ZERO),
                    ..row.run.config
                }
                .label()
                .replace("fixed 0.00 ms", "fixed at p95"),
                _ => row.run.config.label(),
            };
            (label, *color, dash)
        })
        .collect();
    // Unhedged alone, then the fixed rows, then the adaptive rows: a column each.
    let by_kind = |index: usize| match index {
        0 => (0, 0),
        index => (index.div_ceil(2), (index + 1) % 2),
    };
    legend(&mut out, legend_y, "(a)-(d)", &entries, by_kind);
    let entries: Vec<(String, &str, &str)> = queueing.levels[0]
        .runs
        .iter()
        .filter(|run| !matches!(run.scheme, Scheme::FixedBudget(_)))
        .map(|run| {
            let (color, dash) = queue_style(&run.scheme);
            let label = run
                .scheme
                .label()
                .replace(
                    &Scheme::Fixed(queueing.p95).label(),
                    "fixed at unloaded p95",
                )
                .replace("at 0.00 ms", "at once");
            (label, color, dash)
        })
        .collect();
    // A column each: unhedged and fixed, the recommended pair, then the adaptive p95 and
    // the three tied rows.
    legend(&mut out, legend_y + LEGEND_H, "(e)", &entries, |index| {
        (
            index.min(4) / 2,
            if index < 4 { index % 2 } else { index - 4 },
        )
    });
    out.push_str("</svg>\n");
    out
}

/// The colour and dash of a queueing row: unhedged grey, fixed blue (dotted with a
/// budget), the recommended optimal p99 red (dashed with its budget), the adaptive p95
/// orange, tied green (dashed when the second copy waits), tied pairs purple.
fn queue_style(scheme: &Scheme) -> (&'static str, &'static str) {
    match scheme {
        Scheme::Off => ("#555555", ""),
        Scheme::Fixed(_) => ("#1f77b4", ""),
        Scheme::FixedBudget(_) | Scheme::HeldStart { .. } => ("#1f77b4", "2,2"),
        Scheme::AdaptiveP95 => ("#ff7f0e", "6,4"),
        Scheme::Recommended { budget: false } => ("#d62728", ""),
        Scheme::Recommended { budget: true } | Scheme::RecommendedWindow(_) => ("#d62728", "6,4"),
        Scheme::Tied(delay) if delay.is_zero() => ("#2ca02c", ""),
        Scheme::Tied(_) => ("#2ca02c", "6,4"),
        Scheme::TiedPair(_) => ("#9467bd", ""),
    }
}

/// One panel at `(x0, y0)`: its title, axes and grid, and one curve per row.
fn panel(out: &mut String, (x0, y0): (f64, f64), title: &str, unit: &str, curves: &[Curve<'_>]) {
    let all = curves.iter().flat_map(|(latencies, ..)| latencies.iter());
    let (low, high) = all.fold((f64::MAX, 0.0f64), |(low, high), latency| {
        let ms = latency.as_secs_f64() * 1e3;
        (low.min(ms), high.max(ms))
    });
    let (log_low, log_high) = ((low.max(0.01)).log10().floor(), high.log10().ceil());
    let x_of =
        |ms: f64| x0 + LEFT + (ms.max(0.01).log10() - log_low) / (log_high - log_low) * PLOT_W;
    let y_of = |nines: f64| y0 + TOP + PLOT_H - nines.min(NINES) / NINES * PLOT_H;
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="12" font-weight="bold">{}</text>"#,
        x0 + 10.0,
        y0 + 20.0,
        escape(title)
    );
    // Axes and grid.
    for nines in 0..=NINES as u32 {
        let y = y_of(nines as f64);
        let label = ["0%", "90%", "99%", "99.9%", "99.99%"][nines as usize];
        let _ = writeln!(
            out,
            r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#dddddd"/><text x="{}" y="{}" text-anchor="end">{label}</text>"##,
            x0 + LEFT,
            x0 + LEFT + PLOT_W,
            x0 + LEFT - 5.0,
            y + 4.0
        );
    }
    for decade in log_low as i32..=log_high as i32 {
        let ms = 10f64.powi(decade);
        let x = x_of(ms);
        let label = if ms < 1.0 {
            format!("{ms} ms")
        } else {
            format!("{} ms", ms as u64)
        };
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#dddddd"/><text x="{x}" y="{}" text-anchor="middle">{label}</text>"##,
            y0 + TOP,
            y0 + TOP + PLOT_H,
            y0 + TOP + PLOT_H + 15.0
        );
    }
    let plural = if unit == "query" { "querie" } else { unit };
    let _ = writeln!(
        out,
        r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">share of {plural}s at or below</text>"#,
        x0 + 12.0,
        y0 + TOP + PLOT_H / 2.0,
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">latency per {unit} (log)</text>"#,
        x0 + LEFT + PLOT_W / 2.0,
        y0 + TOP + PLOT_H + 32.0,
    );
    // One curve per row: the latency at each share of calls, on a fine grid of nines.
    for (latencies, color, dash) in curves {
        let mut sorted = latencies.to_vec();
        sorted.sort_unstable();
        let points: Vec<String> = (0..=400)
            .map(|step| {
                let nines = step as f64 / 400.0 * NINES;
                let share = 1.0 - 10f64.powf(-nines);
                let latency = nearest_rank(&sorted, share.max(1.0 / sorted.len() as f64));
                format!(
                    "{:.1},{:.1}",
                    x_of(latency.as_secs_f64() * 1e3),
                    y_of(nines)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{color}" stroke-width="1.8" stroke-dasharray="{dash}" points="{}"/>"#,
            points.join(" ")
        );
    }
}

/// A legend at `top` for the panels `caption` names, each entry at the column and line
/// `place` gives its index.
fn legend(
    out: &mut String,
    top: f64,
    caption: &str,
    entries: &[(String, &str, &str)],
    place: impl Fn(usize) -> (usize, usize),
) {
    let _ = writeln!(
        out,
        r#"<text x="10" y="{}" font-weight="bold">{caption}</text>"#,
        top + 19.0
    );
    for (index, (label, color, dash)) in entries.iter().enumerate() {
        let (column, line) = place(index);
        let x = 60.0 + column as f64 * 260.0;
        let y = top + 15.0 + line as f64 * 20.0;
        let _ = writeln!(
            out,
            r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="2.5" stroke-dasharray="{dash}"/><text x="{}" y="{}">{}</text>"#,
            x + 28.0,
            x + 34.0,
            y + 4.0,
            escape(label)
        );
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
