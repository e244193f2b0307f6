//! The advice: the unhedged tail, the predicted tail and extra copies at each delay of a
//! grid, the recommended delay and its `PolicyConfig`, all from `hedging::model`, the
//! model `PolicyBuilder::optimal_delay` chooses its delay with; and beside them, where the
//! input has timestamps, the replay's figures.

use std::fmt::Write as _;
use std::time::Duration;

use hedging::model::{kaplan_meier, Goal, Plan, Prediction, Survival};

use crate::latencies::{Classes, Latencies};
use crate::replay::{self, Replayed};

/// The quantiles every table shows.
pub const QUANTILES: [f64; 3] = [0.5, 0.99, 0.999];
/// The unhedged quantiles the default grid puts a delay at.
const GRID: [f64; 7] = [0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.999];

/// What to advise on: the options of the command line that concern the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The most copies a call starts, the original included (`--copies`).
    pub copies: usize,
    /// The quantile of call latency to minimise (`--target`).
    pub target: f64,
    /// The budget's ratio of extra copies per call (`--budget`); `None` for no budget.
    pub budget: Option<f64>,
    /// Exactly these delays (`--delay`), or, empty, a grid at unhedged quantiles.
    pub delays: Vec<Duration>,
    /// Whether to replay the calls in virtual time where the input has timestamps.
    pub replay: bool,
}

impl Default for Settings {
    /// Two copies, the p99, a budget of 10%, the default grid, replay where possible.
    fn default() -> Self {
        Settings {
            copies: 2,
            target: 0.99,
            budget: Some(0.10),
            delays: Vec::new(),
            replay: true,
        }
    }
}

/// Call latency at the p50, p99 and p99.9; `None` where the quantile is never reached
/// (calls only known to have run past the last bucket).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tail {
    /// The median.
    pub p50: Option<Duration>,
    /// The 99th percentile.
    pub p99: Option<Duration>,
    /// The 99.9th percentile.
    pub p999: Option<Duration>,
}

impl Tail {
    fn from_fn(mut at: impl FnMut(f64) -> Duration) -> Tail {
        let mut quantile = |q| Some(at(q)).filter(|&latency| latency != Duration::MAX);
        Tail {
            p50: quantile(QUANTILES[0]),
            p99: quantile(QUANTILES[1]),
            p999: quantile(QUANTILES[2]),
        }
    }
}

/// One delay: the model's prediction and, where the input has timestamps, the replay's.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The delay of every copy after the one before it.
    pub delay: Duration,
    /// The model's predicted call latency, copies independent.
    pub predicted: Tail,
    /// The model's call latency at the target quantile (`None`: past the last bucket).
    pub at_target: Option<Duration>,
    /// The model's extra copies per call (0.05: one call in twenty starts a copy more).
    pub extra: f64,
    /// The share of the copies asked for that the budget was predicted to grant.
    pub granted: f64,
    /// The replay in virtual time through the real `Hedge` future, with the real budget.
    pub replayed: Option<Replayed>,
}

/// Everything the advisor prints.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// Calls read (those only known to have run past the last bucket included).
    pub samples: u64,
    /// The settings advised on.
    pub settings: Settings,
    /// The latencies as recorded.
    pub unhedged: Tail,
    /// The recorded latency at the target quantile (`None`: past the last bucket).
    pub unhedged_at_target: Option<Duration>,
    /// The recommended delay: the one the model predicts minimises the target quantile
    /// within the budget, as `optimal_delay` chooses.
    pub recommended: Row,
    /// The delays of the grid (or `--delay`), shortest first.
    pub rows: Vec<Row>,
    /// The recommended policy as a `PolicyConfig` TOML.
    pub config_toml: String,
    /// Calls the replay ran (the input's, thinned to a bound), 0 without timestamps.
    pub replayed_calls: usize,
}

/// The model of one input: its latency classes and their survival.
#[derive(Clone, Debug)]
pub struct Model {
    classes: Classes,
    above: Vec<f64>,
}

impl Model {
    /// The model of `latencies`: the Kaplan–Meier survival of their classes.
    pub fn new(latencies: &Latencies) -> Model {
        let classes = latencies.classes();
        let mut above = vec![0.0; classes.edges.len()];
        kaplan_meier(&classes.ended, &classes.censored, &mut above);
        Model { classes, above }
    }

    /// The survival of one copy, as `hedging::model` reads it.
    pub fn survival(&self) -> Survival<'_> {
        Survival::new(&self.classes.edges, &self.above)
    }

    /// The goal `settings` describe.
    pub fn goal(settings: &Settings) -> Goal {
        let goal = Goal::new(settings.target).copies(settings.copies.max(1));
        match settings.budget {
            Some(ratio) => goal.budget(ratio),
            None => goal,
        }
    }

    /// The model's row for `delay` under `settings`.
    pub fn row(&self, settings: &Settings, delay: Duration) -> Row {
        let survival = self.survival();
        let prediction = survival.predict_for(&Model::goal(settings), delay);
        self.row_of(settings, prediction)
    }

    fn row_of(&self, settings: &Settings, prediction: Prediction) -> Row {
        let survival = self.survival();
        let plan = Plan {
            granted: prediction.granted,
            ..Plan::new(prediction.delay, settings.copies.max(1))
        };
        Row {
            delay: prediction.delay,
            predicted: Tail::from_fn(|quantile| survival.call_quantile(plan, quantile)),
            at_target: Some(prediction.latency).filter(|&latency| latency != Duration::MAX),
            extra: prediction.extra,
            granted: prediction.granted,
            replayed: None,
        }
    }

    /// The chance a call is still running at `nanos`: unhedged (`delay` `None`), or hedged
    /// at `delay` under `settings`, with the budget's predicted refusals. For the chart.
    pub fn call_above(&self, settings: &Settings, delay: Option<Duration>, nanos: u64) -> f64 {
        let survival = self.survival();
        match delay {
            None => survival.above(nanos),
            Some(delay) => {
                let granted = survival.predict_for(&Model::goal(settings), delay).granted;
                let plan = Plan {
                    granted,
                    ..Plan::new(delay, settings.copies.max(1))
                };
                survival.call_above(plan, nanos)
            }
        }
    }

    /// The latency class edges, nanoseconds ascending.
    pub fn edges(&self) -> &[u64] {
        &self.classes.edges
    }
}

/// The advice for `latencies` under `settings`. `None` when no latency ended (every call
/// only known to have run past the last bucket).
pub fn advise(latencies: &Latencies, settings: &Settings) -> Option<Advice> {
    let model = Model::new(latencies);
    let survival = model.survival();
    let chosen = survival.choose(&Model::goal(settings))?;
    let unhedged = Tail::from_fn(|quantile| survival.quantile(quantile));
    let unhedged_at_target =
        Some(survival.quantile(settings.target)).filter(|&latency| latency != Duration::MAX);
    let mut recommended = model.row_of(settings, chosen);
    let mut delays: Vec<Duration> = if settings.delays.is_empty() {
        GRID.iter()
            .map(|&quantile| survival.quantile(quantile))
            .filter(|&delay| delay != Duration::MAX)
            .chain([chosen.delay])
            .collect()
    } else {
        settings.delays.clone()
    };
    delays.sort_unstable();
    delays.dedup();
    let mut rows: Vec<Row> = delays
        .into_iter()
        .map(|delay| model.row(settings, delay))
        .collect();
    let timeline = latencies.timeline().calls();
    let replaying = settings.replay && !timeline.is_empty();
    if replaying {
        let run = |delay| {
            replay::replay(
                timeline,
                settings.copies,
                delay,
                settings.budget,
                settings.target,
            )
        };
        recommended.replayed = Some(run(recommended.delay));
        for row in &mut rows {
            row.replayed = Some(if row.delay == recommended.delay {
                recommended.replayed.clone().expect("just replayed")
            } else {
                run(row.delay)
            });
        }
    }
    let config_toml = config_toml(
        settings,
        &recommended,
        &unhedged,
        unhedged_at_target,
        model.edges(),
    );
    Some(Advice {
        samples: latencies.samples(),
        settings: settings.clone(),
        unhedged,
        unhedged_at_target,
        recommended,
        rows,
        config_toml,
        replayed_calls: if replaying { timeline.len() } else { 0 },
    })
}

/// The recommended policy as a `PolicyConfig` TOML: `optimal_delay` at the target, the
/// recommended delay until the policy has seen enough latencies, bounds around it, the
/// copies and the budget.
fn config_toml(
    settings: &Settings,
    recommended: &Row,
    unhedged: &Tail,
    unhedged_at_target: Option<Duration>,
    edges: &[u64],
) -> String {
    let delay = recommended.delay;
    let slowest = Duration::from_nanos(edges.last().copied().unwrap_or(0));
    // The bounds keep a window of unusual latencies from moving the delay far from what
    // the recorded latencies say: down to half the delay, up to the unhedged p99.9.
    let min_delay = delay / 2;
    let max_delay = unhedged.p999.unwrap_or(slowest).max(delay * 2);
    // What a `PolicyConfig` may give saturates at its longest duration.
    let (delay, min_delay, max_delay) = (
        delay.min(LONGEST),
        min_delay.min(LONGEST),
        max_delay.min(LONGEST),
    );
    let target = settings.target;
    let mut toml = String::new();
    let _ = writeln!(
        toml,
        "# hedging-advisor: p{} {} unhedged, predicted {} with {:.1}% extra copies (copies independent)",
        percent(target),
        tail_text(unhedged_at_target),
        tail_text(recommended.at_target),
        recommended.extra * 100.0
    );
    let _ = writeln!(toml, "max_copies = {}", settings.copies.max(1));
    let _ = writeln!(
        toml,
        "delay = \"{}\"  # until the policy has seen enough latencies",
        config_duration(delay)
    );
    let _ = writeln!(
        toml,
        "optimal_delay = {target}  # then the delay the model predicts minimises the p{}",
        percent(target)
    );
    let _ = writeln!(toml, "min_delay = \"{}\"", config_duration(min_delay));
    let _ = writeln!(toml, "max_delay = \"{}\"", config_duration(max_delay));
    if let Some(ratio) = settings.budget {
        let _ = writeln!(
            toml,
            "\n[budget]\nratio = {ratio}  # at most this share of extra copies over time"
        );
    }
    toml
}

/// The longest duration a `PolicyConfig` may give: `u64::MAX - 1` nanoseconds.
const LONGEST: Duration = Duration::from_nanos(u64::MAX - 1);

/// A duration of the printed policy, at most [`LONGEST`], as [`duration_text`] writes it,
/// or in whole nanoseconds within a second of `LONGEST`, where its rounding (to the
/// second, at most half of one up) could pass it.
fn config_duration(duration: Duration) -> String {
    if duration > LONGEST - Duration::from_secs(1) {
        return format!("{}ns", duration.min(LONGEST).as_nanos());
    }
    duration_text(duration)
}

/// `0.99` as `99`, `0.999` as `99.9`.
pub fn percent(quantile: f64) -> String {
    let text = format!("{:.4}", quantile * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A latency for people: `12.3 ms`, or `unreached` past the last bucket.
pub fn tail_text(latency: Option<Duration>) -> String {
    match latency {
        Some(latency) => format!("{:.3} ms", latency.as_secs_f64() * 1e3),
        None => "past the last bucket".to_string(),
    }
}

/// A duration as `PolicyConfig` reads it, to three significant digits: `1.23ms`,
/// `250us`, `2.5s`.
pub fn duration_text(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    let (scale, unit) = match nanos {
        0 => return "0ms".to_string(),
        n if n < 1_000 => (1.0, "ns"),
        n if n < 1_000_000 => (1e3, "us"),
        n if n < 1_000_000_000 => (1e6, "ms"),
        _ => (1e9, "s"),
    };
    let value = nanos as f64 / scale;
    let decimals = match value {
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text}{unit}")
}
