//! The picture: the latency CDF without hedging and with the recommended policy, latency
//! on a log axis and the share of calls on a "nines" axis (90%, 99%, 99.9%, ...) so the
//! tail shows, the p50, p99 and p99.9 marked; drawn with `plotters`' SVG backend.

use std::time::Duration;

use plotters::prelude::*;

use crate::advice::{Advice, Model};

/// The deepest nine the chart shows: 99.99%.
const NINES: f64 = 4.0;
/// Points per curve.
const POINTS: usize = 400;

/// The chart of `advice` on `model`'s latencies, as an SVG document.
pub fn svg(model: &Model, advice: &Advice) -> Result<String, String> {
    let edges = model.edges();
    let slowest = edges.last().copied().unwrap_or(1).max(1) as f64;
    let fastest = edges
        .iter()
        .copied()
        .find(|&edge| edge > 0)
        .unwrap_or(1)
        .max(1) as f64;
    // A little room either side of the latencies, in milliseconds.
    let (low, high) = (fastest / 1.5 / 1e6, slowest * 1.5 / 1e6);
    let nines = |above: f64| (-above.max(1e-12).log10()).min(NINES);
    let curve = |delay: Option<Duration>| -> Vec<(f64, f64)> {
        (0..=POINTS)
            .map(|point| {
                let ms = low * (high / low).powf(point as f64 / POINTS as f64);
                let nanos = (ms * 1e6) as u64;
                (ms, nines(model.call_above(&advice.settings, delay, nanos)))
            })
            .collect()
    };
    let unhedged = curve(None);
    let hedged = curve(Some(advice.recommended.delay));

    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (760, 460)).into_drawing_area();
        root.fill(&WHITE).map_err(|error| error.to_string())?;
        let title = format!(
            "Latency CDF: unhedged, and {} copies {} apart (predicted, copies independent)",
            advice.settings.copies,
            crate::advice::duration_text(advice.recommended.delay)
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((low..high).log_scale(), 0.0..NINES)
            .map_err(|error| error.to_string())?;
        chart
            .configure_mesh()
            .x_desc("latency (ms, log scale)")
            .y_desc("calls answered")
            .y_labels(5)
            .y_label_formatter(&|nines| nines_label(*nines))
            .x_label_formatter(&|ms| format!("{ms}"))
            .draw()
            .map_err(|error| error.to_string())?;
        let grey = RGBColor(85, 85, 85);
        let blue = RGBColor(31, 119, 180);
        chart
            .draw_series(LineSeries::new(unhedged, grey.stroke_width(2)))
            .map_err(|error| error.to_string())?
            .label("unhedged (recorded)")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(2))
            });
        chart
            .draw_series(LineSeries::new(hedged, blue.stroke_width(2)))
            .map_err(|error| error.to_string())?
            .label("recommended policy (predicted)")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2))
            });
        for (quantile, name) in [(0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")] {
            let level = nines(1.0 - quantile);
            chart
                .draw_series(LineSeries::new(
                    [(low, level), (high, level)],
                    RGBColor(200, 200, 200).stroke_width(1),
                ))
                .map_err(|error| error.to_string())?;
            chart
                .draw_series([Text::new(
                    name.to_string(),
                    (low * 1.05, level + 0.04),
                    ("sans-serif", 12).into_font().color(&grey),
                )])
                .map_err(|error| error.to_string())?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(|error| error.to_string())?;
        root.present().map_err(|error| error.to_string())?;
    }
    Ok(out)
}

/// `2.0` nines as `99%`.
fn nines_label(nines: f64) -> String {
    let share = 100.0 * (1.0 - 10f64.powf(-nines));
    let text = format!("{share:.3}");
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}
