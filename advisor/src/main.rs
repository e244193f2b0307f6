//! `hedging-advisor`: recorded latencies in, a hedging policy and its predicted tail out.

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use hedging_advisor::advice::{advise, Model, Settings};
use hedging_advisor::read::{read, Format, ReadOptions};
use hedging_advisor::unit::{parse_nanos, Unit};
use hedging_advisor::{chart, report};

/// Recommends a hedging policy and predicts its p50/p99/p99.9 from recorded latencies.
#[derive(Debug, Parser)]
#[command(
    name = "hedging-advisor",
    version,
    after_help = "\
Examples:
  hedging-advisor latencies.txt                       one latency a line: 12.5 or 12.5ms
  hedging-advisor --unit us latencies.txt             bare numbers are microseconds
  hedging-advisor --column latency_ms calls.csv       CSV; a timestamp column adds the replay
  hedging-advisor --unit us service.hlog             HdrHistogram interval log, values in us
  hedging-advisor --metric http_request_duration_seconds metrics.prom
                                                       a Prometheus classic histogram
  cat latencies.txt | hedging-advisor --json -        standard input, one JSON object
  hedging-advisor --delay 2ms --delay 5ms --copies 3 --budget 0.05 latencies.txt
  hedging-advisor --svg cdf.svg latencies.txt         the CDF with and without hedging

Exit status: 0 on success, 2 on a usage or input error, 1 if the output cannot be written."
)]
struct Args {
    /// The recorded latencies: a file, or - for standard input.
    input: PathBuf,
    /// How the input is laid out; auto tells by content.
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    format: Format,
    /// The unit of a latency without a suffix (12.5ms always wins) [default: ms; HdrHistogram: ns; Prometheus le: s].
    #[arg(long, value_parser = parse_unit)]
    unit: Option<Unit>,
    /// CSV: the column holding the latency.
    #[arg(long, value_name = "NAME")]
    column: Option<String>,
    /// CSV: the column holding when the call was made, in seconds or RFC 3339 [default: one named timestamp, time, ts, start, started_at].
    #[arg(long, value_name = "NAME")]
    timestamp: Option<String>,
    /// Prometheus: the histogram to read, when there are several.
    #[arg(long, value_name = "NAME")]
    metric: Option<String>,
    /// Copies a call may start, the original included.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=64))]
    copies: u8,
    /// The quantile of call latency to minimise.
    #[arg(long, default_value_t = 0.99, value_parser = parse_quantile)]
    target: f64,
    /// Extra copies per call the budget allows (0.10: one in ten); 1 means no budget.
    #[arg(long, default_value_t = 0.10, value_parser = parse_budget)]
    budget: f64,
    /// Predict exactly this delay (repeatable): --delay 5ms.
    #[arg(long = "delay", value_name = "D", value_parser = parse_delay)]
    delays: Vec<Duration>,
    /// Print one JSON object (a stable shape) instead of the table.
    #[arg(long)]
    json: bool,
    /// Write the latency CDF with and without the recommended policy as an SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Skip the replay even when the input has timestamps.
    #[arg(long)]
    no_replay: bool,
}

fn parse_format(text: &str) -> Result<Format, String> {
    text.parse()
}

fn parse_unit(text: &str) -> Result<Unit, String> {
    text.parse()
}

fn parse_quantile(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(quantile) if quantile > 0.0 && quantile < 1.0 => Ok(quantile),
        _ => Err(format!(
            "expected a quantile between 0 and 1 such as 0.99, found {text:?}"
        )),
    }
}

fn parse_budget(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(ratio) if (0.0..=1.0).contains(&ratio) => Ok(ratio),
        _ => Err(format!(
            "expected extra copies per call from 0 to 1 such as 0.10 (1: no budget), found {text:?}"
        )),
    }
}

fn parse_delay(text: &str) -> Result<Duration, String> {
    parse_nanos(text, Unit::Millis)
        .map(Duration::from_nanos)
        .map_err(|problem| problem.explain(text).replace("latency", "delay"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let name = args.input.display().to_string();
    let input: Box<dyn Read> = if name == "-" {
        Box::new(io::stdin().lock())
    } else {
        match File::open(&args.input) {
            Ok(file) => Box::new(file),
            Err(error) => {
                eprintln!("error: {name}: {error}");
                return ExitCode::from(2);
            }
        }
    };
    let input = with_progress(input, &args);
    let options = ReadOptions {
        format: args.format,
        unit: args.unit,
        column: args.column.clone(),
        timestamp: args.timestamp.clone(),
        metric: args.metric.clone(),
    };
    let (latencies, _format) = match read(input, &options) {
        Ok(read) => read,
        Err(error) => {
            eprintln!("error: {name}: {error}");
            return ExitCode::from(2);
        }
    };
    let settings = Settings {
        copies: args.copies.into(),
        target: args.target,
        budget: (args.budget < 1.0).then_some(args.budget),
        delays: args.delays.clone(),
        replay: !args.no_replay,
    };
    let Some(advice) = advise(&latencies, &settings) else {
        eprintln!("error: {name}: no call ended within the last bucket: nothing to predict from");
        return ExitCode::from(2);
    };
    let printed = if args.json {
        serde_json::to_string_pretty(&report::json(&advice)).map_err(io::Error::other)
    } else {
        Ok(report::human(&advice))
    };
    let written = printed.and_then(|text| {
        let mut stdout = io::stdout().lock();
        writeln!(stdout, "{}", text.trim_end())
    });
    if let Err(error) = written.or_else(|error| match error.kind() {
        // A reader that stopped early (`| head`) is not a failure of ours.
        io::ErrorKind::BrokenPipe => Ok(()),
        _ => Err(error),
    }) {
        eprintln!("error: cannot write the output: {error}");
        return ExitCode::from(1);
    }
    if let Some(path) = &args.svg {
        let drawn = chart::svg(&Model::new(&latencies), &advice)
            .map_err(io::Error::other)
            .and_then(|svg| std::fs::write(path, svg));
        if let Err(error) = drawn {
            eprintln!("error: {}: {error}", path.display());
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}

/// The input behind a progress bar when stderr is a terminal (bytes of a file, or a
/// spinner for standard input), else as it is.
fn with_progress(input: Box<dyn Read>, args: &Args) -> Box<dyn Read> {
    if !io::stderr().is_terminal() {
        return input;
    }
    let length = std::fs::metadata(&args.input).ok().map(|meta| meta.len());
    let bar = match length {
        Some(length) if args.input.as_os_str() != "-" => {
            let bar = indicatif::ProgressBar::new(length);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {eta}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        }
        _ => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    Box::new(Finishing(bar.wrap_read(input)))
}

/// A reader behind a progress bar that clears the bar when the input ends.
struct Finishing<R>(indicatif::ProgressBarIter<R>);

impl<R: Read> Read for Finishing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.0.read(buf)?;
        if read == 0 && !buf.is_empty() {
            self.0.progress.finish_and_clear();
        }
        Ok(read)
    }
}
