//! `perflab compare`: the experiment driver. Prepares the commands, runs randomized
//! interleaved rounds, looks at the statistics on the planned schedule, stops as soon
//! as every candidate has a verdict, and renders the result.

use crate::error::Failure;
use clap::Args;

#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// Commands to compare; the first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "CMD")]
    pub commands: Vec<String>,
    /// Name of a command, in order (repeat for each command).
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub names: Vec<String>,
    /// Run each command through `sh -c` (or the shell given) instead of executing it directly.
    #[arg(long, value_name = "SHELL", num_args = 0..=1, default_missing_value = "/bin/sh")]
    pub shell: Option<String>,
    /// Let the commands' stdout and stderr through instead of discarding them.
    #[arg(long)]
    pub show_output: bool,
    /// Warm-up rounds, run first and not counted.
    #[arg(short = 'w', long, default_value_t = 1)]
    pub warmup: u32,
    /// Run exactly N measured rounds (no adaptive stopping).
    #[arg(short = 'r', long, value_name = "N")]
    pub rounds: Option<u32>,
    /// Rounds before the first look at the statistics.
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub min_rounds: u32,
    /// Stop after this many measured rounds even without a verdict.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub max_rounds: u32,
    /// Stop after this much time even without a verdict (e.g. 60, 90s, 5m).
    #[arg(long, default_value = "60s", value_name = "DURATION", value_parser = parse_duration)]
    pub max_time: f64,
    /// Equivalence margin in percent: a CI inside ±PCT is `equivalent`.
    #[arg(long, default_value = "1", value_name = "PCT", value_parser = parse_percent)]
    pub threshold: f64,
    /// Confidence level of the intervals, in percent.
    #[arg(long, default_value = "95", value_name = "PCT", value_parser = parse_confidence)]
    pub confidence: f64,
    /// Metrics to compare (wall_s, cpu_s, user_s, sys_s, max_rss_kib, minor_faults, ...).
    #[arg(long = "metric", value_delimiter = ',', default_values = ["wall_s", "cpu_s", "max_rss_kib"])]
    pub metrics: Vec<String>,
    /// Seed of the random round order and padding (default: random, recorded in the output).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Do not pad the environment with a random variable each round.
    #[arg(long)]
    pub no_env_padding: bool,
    /// Kill a run (its whole process group) after this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<f64>,
    /// Keep going when a command exits non-zero (its runs still count).
    #[arg(long)]
    pub ignore_failure: bool,
    /// Exit 1 when a candidate's whole CI lies above 1 + PCT % (default 0).
    #[arg(long, value_name = "PCT", num_args = 0..=1, default_missing_value = "0", value_parser = parse_percent)]
    pub fail_if_slower: Option<f64>,
    /// Write the full result as JSON (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Write a Markdown summary (for a PR comment; `-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<String>,
    /// Write every run as CSV, row by row as they finish (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<String>,
    #[command(flatten)]
    pub measure: crate::measure::MeasureArgs,
    /// Do not show the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// Parse "60", "60s", "1.5m", "250ms", "1h" into seconds.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("`{text}` is not a duration (e.g. 30, 90s, 5m, 250ms)"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("`{text}` must be a positive duration"));
    }
    Ok(v * scale)
}

/// Parse "1", "1%", "2.5" (percent) into a fraction.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a percentage"))?;
    if !v.is_finite() || !(0.0..1000.0).contains(&v) {
        return Err(format!("`{text}` must be a percentage from 0 to 1000"));
    }
    Ok(v / 100.0)
}

fn parse_confidence(text: &str) -> Result<f64, String> {
    let v = parse_percent(text)?;
    if !(0.5..1.0).contains(&v) {
        return Err(format!("confidence `{text}` must be between 50 and 100 (exclusive)"));
    }
    Ok(v)
}

pub fn main(args: CompareArgs) -> Result<i32, Failure> {
    let _ = args;
    Err(Failure::Usage("compare is being built".into()))
}
