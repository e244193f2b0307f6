//! The tail-scaled CDF chart: latency on a log axis, the cumulative share on a "nines"
//! axis, one panel per workload.

use std::fmt::Write as _;
use std::time::Duration;

use super::independent::Report;
use super::{nearest_rank, Config, Delay};

/// The latency CDFs of every report as an SVG: one panel per workload, latency on a log
/// axis, the cumulative share on a "nines" axis (90%, 99%, 99.9%, ...) so the tail shows.
pub fn svg(reports: &[Report]) -> String {
    const PANEL_W: f64 = 440.0;
    const PANEL_H: f64 = 300.0;
    const LEFT: f64 = 78.0;
    const TOP: f64 = 40.0;
    const PLOT_W: f64 = PANEL_W - LEFT - 20.0;
    const PLOT_H: f64 = PANEL_H - TOP - 50.0;
    const NINES: f64 = 4.0;
    let colors = ["#555555", "#1f77b4", "#1f77b4", "#d62728", "#d62728"];
    let dashes = ["", "", "6,4", "", "6,4"];
    let columns = 2;
    let rows = reports.len().div_ceil(columns);
    let (width, height) = (PANEL_W * columns as f64, PANEL_H * rows as f64 + 60.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (index, report) in reports.iter().enumerate() {
        let (x0, y0) = (
            (index % columns) as f64 * PANEL_W,
            (index / columns) as f64 * PANEL_H,
        );
        let all = report.rows.iter().flat_map(|row| row.run.latencies.iter());
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
            r#"<text x="{}" y="{}" font-size="12" font-weight="bold">({}) {}</text>"#,
            x0 + 10.0,
            y0 + 20.0,
            report.workload.key,
            escape(report.workload.title)
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
        let _ = writeln!(
            out,
            r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">share of {}s at or below</text>"#,
            x0 + 12.0,
            y0 + TOP + PLOT_H / 2.0,
            if report.workload.fan_out() > 1 {
                "querie"
            } else {
                "call"
            }
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">latency per {} (log)</text>"#,
            x0 + LEFT + PLOT_W / 2.0,
            y0 + TOP + PLOT_H + 32.0,
            if report.workload.fan_out() > 1 {
                "query"
            } else {
                "call"
            }
        );
        // One curve per row: the latency at each share of calls, on a fine grid of nines.
        for (row, (color, dash)) in report.rows.iter().zip(colors.iter().zip(dashes)) {
            let mut sorted = row.run.latencies.clone();
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
    // Legend: unhedged, then the fixed rows, then the adaptive rows, one column each.
    for (index, (row, (color, dash))) in reports[0]
        .rows
        .iter()
        .zip(colors.iter().zip(dashes))
        .enumerate()
    {
        let (column, line) = match index {
            0 => (0, 0),
            index => (index.div_ceil(2), (index + 1) % 2),
        };
        let x = 60.0 + column as f64 * 260.0;
        let legend_y = height - 45.0 + line as f64 * 20.0;
        let label = match row.run.config.delay {
            Delay::Fixed(_) => Config {
                delay: Delay::Fixed(Duration::ZERO),
                ..row.run.config
            }
            .label()
            .replace("fixed 0.00 ms", "fixed at p95"),
            _ => row.run.config.label(),
        };
        let _ = writeln!(
            out,
            r#"<line x1="{x}" y1="{legend_y}" x2="{}" y2="{legend_y}" stroke="{color}" stroke-width="2.5" stroke-dasharray="{dash}"/><text x="{}" y="{}">{}</text>"#,
            x + 28.0,
            x + 34.0,
            legend_y + 4.0,
            escape(&label)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
