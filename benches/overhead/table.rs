//! The table for the overhead bench.

#[allow(unused_imports)]
use super::*;

/// Median nanoseconds per call of every case this run measured, from criterion's files.
pub(crate) fn medians(dir: &Path, since: SystemTime) -> BTreeMap<String, f64> {
    let mut medians = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if !(path.ends_with("new/benchmark.json")) {
                continue;
            }
            let estimates = path.with_file_name("estimates.json");
            let fresh = std::fs::metadata(&estimates)
                .and_then(|meta| meta.modified())
                .is_ok_and(|modified| modified >= since);
            if !fresh {
                continue;
            }
            let read = |path: &Path| -> Option<serde_json::Value> {
                serde_json::from_slice(&std::fs::read(path).ok()?).ok()
            };
            let (Some(benchmark), Some(estimates)) = (read(&path), read(&estimates)) else {
                continue;
            };
            let id = benchmark["full_id"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| benchmark["group_id"].as_str().map(str::to_owned));
            let median = estimates["median"]["point_estimate"].as_f64();
            if let (Some(id), Some(median)) = (id, median) {
                medians.insert(id, median);
            }
        }
    }
    medians
}

pub(crate) fn ns(value: f64) -> String {
    if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

pub(crate) fn us(value: Duration) -> String {
    format!("{:.1}", value.as_secs_f64() * 1e6)
}

pub(crate) fn table(
    rows: &[Row],
    medians: &BTreeMap<String, f64>,
    lateness: &[Lateness],
    sizes: &[(&str, usize)],
) -> String {
    let mut out = String::new();
    let median = |id: &str| medians.get(id).copied();
    let cell = |value: Option<String>| value.unwrap_or_else(|| "–".to_owned());

    out.push_str("| case | median ns/call | over bare, ns | × bare | over timer alone, ns | peer ÷ hedging | allocations/call | hedges/call |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for row in rows {
        let this = median(row.id);
        let bare = median(row.bare);
        let over = |base: Option<f64>| this.zip(base).map(|(this, base)| ns(this - base));
        let times_bare = this
            .zip(bare)
            .map(|(this, bare)| format!("{:.2}", this / bare));
        let over_bare = (row.id != row.bare).then(|| over(bare)).flatten();
        let over_timer = row.timer_alone.and_then(|timer| over(median(timer)));
        let peer = row
            .ours
            .and_then(median)
            .zip(this)
            .map(|(ours, this)| format!("{:.1}", this / ours));
        let allocations = (!row.allocations.is_nan()).then(|| format!("{:.2}", row.allocations));
        let hedges = row.hedges_per_call.map(|hedges| format!("{hedges:.4}"));
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            row.id,
            cell(this.map(ns)),
            cell(over_bare),
            cell(times_bare),
            cell(over_timer),
            cell(peer),
            cell(allocations),
            cell(hedges),
        );
    }
    let early = EARLY_FIRES.load(Relaxed);
    if early > 0 {
        let _ = writeln!(out, "\n{early} sleeps of {DELAY:?} in the `bare+…` cases were ready on their first poll (the thread was descheduled past their deadline).");
    }

    out.push_str("\n| performance budget | measured | held |\n|---|---:|:---:|\n");
    let over = |id: &str, base: &str| median(id).zip(median(base)).map(|(a, b)| a - b);
    let mut budget = |what: String,
                      measured: Option<f64>,
                      shown: &dyn Fn(f64) -> String,
                      held: &dyn Fn(f64) -> bool| {
        let (shown, held) = match measured {
            Some(value) => (shown(value), if held(value) { "yes" } else { "no" }),
            None => ("–".to_owned(), "–"),
        };
        let _ = writeln!(out, "| {what} | {shown} | {held} |");
    };
    let plus_ns = |value: f64| format!("{} ns", ns(value));
    // The ready and hedging-off budgets are in instructions (`benches/instructions.sh`);
    // here, their allocations.
    let allocations = |id: &str| {
        rows.iter()
            .find(|row| row.id == id)
            .map(|row| row.allocations)
    };
    for case in [
        "ready/hedging_1_copy",
        "ready/hedging_3_copies",
        "pending_once/hedging_1_copy",
    ] {
        budget(
            format!("`{case}` allocates nothing"),
            allocations(case),
            &|value| format!("{value:.2} per call"),
            &|value| value == 0.0,
        );
    }
    for (case, timer) in [
        (
            "pending_once/hedging_futures_timer",
            "pending_once/bare+futures_timer",
        ),
        (
            "pending_once/hedging_async_io",
            "pending_once/bare+async_io",
        ),
        (
            "pending_once/hedging_tokio",
            "pending_once/bare+tokio_sleep",
        ),
    ] {
        budget(
            format!("`{case}` within 45 ns of the timer alone"),
            over(case, timer),
            &plus_ns,
            &|v| v <= 45.0,
        );
    }
    let share =
        |ours: Option<f64>, tower: Option<f64>| ours.zip(tower).map(|(ours, tower)| ours / tower);
    let fraction = |value: f64| format!("{value:.3} of tower's");
    budget(
        "armed path: our overhead ≤ 1/2 of `tower::hedge`'s (same tokio timer)".to_owned(),
        share(
            over("pending_once/hedging_tokio", "pending_once/bare"),
            over("pending_once/tower_hedge", "pending_once/bare"),
        ),
        &fraction,
        &|v| v <= 0.5,
    );

    if !lateness.is_empty() {
        out.push_str("\n| timer (executor) | calls | timer alone p50 / p99, µs | hedge launch p50 / p99, µs | hedge − timer p50 / p99, µs |\n");
        out.push_str("|---|---:|---:|---:|---:|\n");
        let gap = |hedge: Duration, timer: Duration| {
            format!("{:.1}", (hedge.as_secs_f64() - timer.as_secs_f64()) * 1e6)
        };
        for row in lateness {
            let _ = writeln!(
                out,
                "| {} ({}) | {} | {} / {} | {} / {} | {} / {} |",
                row.timer,
                row.executor,
                row.calls,
                us(row.timer_alone.0),
                us(row.timer_alone.1),
                us(row.hedge.0),
                us(row.hedge.1),
                gap(row.hedge.0, row.timer_alone.0),
                gap(row.hedge.1, row.timer_alone.1),
            );
        }
    }

    out.push_str("\n| future | size_of, bytes |\n|---|---:|\n");
    for (what, size) in sizes {
        let _ = writeln!(out, "| {what} | {size} |");
    }
    out
}
