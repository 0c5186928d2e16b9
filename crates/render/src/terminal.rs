//! The terminal rendering of an experiment: per-command summaries, the comparison table,
//! one verdict line per candidate, what fewer rounds than an interval needs can say, and
//! warnings; tables fit the terminal (`render::table`).

use super::color::{bold, dim, green, red, yellow};
use super::export::Exporter;
use super::style::Style;
use super::table::{display_width, Column, FitTable, Frame};
use super::OutputError;
use crate::verdict::sentence;
use perflab_model::units::{format_level, format_p, format_value};
use perflab_model::{metric, Comparison, Estimator, Experiment, Learned, Promise, StopReason, Verdict, ESTIMATED_BY};
use perflab_stats::signed_rank::min_pairs_for_interval;
use perflab_stats::summary;

pub use super::escape;

fn stop_text(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Decided => "every comparison decided",
        StopReason::FixedRounds => "fixed number of rounds",
        StopReason::MaxRounds => "--max-rounds reached",
        StopReason::MaxTime => "--max-time reached",
        StopReason::PlannedRounds => "the rounds planned for --max-time were run",
        StopReason::LayoutLimited => "the layouts' spread, not the rounds, limits every interval left",
        StopReason::MaxLayouts => "--max-layouts reached",
        StopReason::Interrupted => "interrupted",
        StopReason::CommandFailed => "a command failed",
    }
}

fn paint_verdict(c: &Comparison, text: &str) -> String {
    match c.verdict {
        Verdict::Slower if !c.below_threshold => red(text),
        Verdict::Faster if !c.below_threshold => green(text),
        Verdict::Inconclusive | Verdict::NotComparable => yellow(text),
        _ => text.to_string(),
    }
}

/// The terminal report of an experiment (`compare`), laid out by a [`Style`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Terminal {
    /// Time unit and order of the commands.
    pub style: Style,
}

impl Exporter<Experiment> for Terminal {
    fn render(&self, e: &Experiment) -> Result<String, OutputError> {
        Ok(render_styled(e, &self.style))
    }
}

/// The whole human-readable report, in the automatic style at full width.
pub fn render(e: &Experiment) -> String {
    render_styled(e, &Style::default())
}

/// The whole human-readable report. Its tables fit `style.width`: the command table
/// leaves out, in this order, outliers, run-queue wait, max RSS, CPU time, mean ± σ
/// and min … max, then shortens command names; the comparison table leaves out p, then
/// shortens names (docs/output.md).
pub(crate) fn render_styled(e: &Experiment, style: &Style) -> String {
    let primary = e.primary_metric.as_str();
    let mut out = String::new();
    let head = format!(
        "perflab {} {}{} in {:.1} s — stopped: {}",
        e.rounds,
        if e.commands.len() == 1 { "runs" } else { "rounds" },
        if e.settings.warmup_rounds > 0 { format!(" (+{} warm-up)", e.settings.warmup_rounds) } else { String::new() },
        e.duration_s,
        stop_text(e.stop_reason),
    );
    let seed = format!("(seed {})", e.settings.seed);
    // The seed goes on a line of its own when the line would not fit the terminal.
    let apart = style.width.is_some_and(|w| display_width(&head) + 1 + display_width(&seed) > w);
    out.push_str(&format!(
        "{}{}{}{}\n",
        bold("perflab"),
        &head["perflab".len()..],
        if apart { "\n" } else { " " },
        dim(&seed)
    ));
    if let Some(p) = &e.promise {
        out.push_str(&dim(&format!("{}\n", promise_line(p, e.settings.threshold))));
    }
    out.push_str(&command_table(e, style).render(style.width));
    if e.commands.len() == 1 {
        out.push_str(&alone(e, style));
    }
    out.push_str(&iteration_profile(e, style.width));

    if !e.comparisons.is_empty() {
        out.push_str(&comparison_table(e, style).render(style.width));
        out.push_str(&levels_note(e));
        let order = style.order(e);
        let position = |name: &str| order.iter().position(|&i| e.commands[i].name == name).unwrap_or(usize::MAX);
        let mut primary_comparisons: Vec<&Comparison> = e.comparisons.iter().filter(|c| c.metric == primary).collect();
        primary_comparisons.sort_by_key(|c| position(&c.candidate));
        for c in &primary_comparisons {
            // Wrapped at the terminal's width (a 257-character line ran on), each line
            // painted on its own so a wrapped line keeps its colour.
            let sentence = escape(&sentence(c, e.settings.threshold, e.rounds));
            let lines = match style.width {
                Some(width) => super::table::wrap(&sentence, width, "  "),
                None => vec![sentence],
            };
            for line in lines {
                out.push_str(&bold(&paint_verdict(c, &line)));
                out.push('\n');
            }
            // A not-comparable sentence already gives its one flag, the reason.
            let notes = if c.verdict == Verdict::NotComparable { &[][..] } else { &c.flags[..] };
            for flag in notes.iter().filter(|f| !f.starts_with("exact")) {
                let flag = match estimator_note(e) {
                    Some(why) if flag.starts_with(ESTIMATED_BY) => why,
                    _ => flag.clone(),
                };
                out.push_str(&format!("  note: {flag}\n"));
            }
            for learned in e.learned.iter().filter(|l| l.candidate == c.candidate && l.metric == c.metric) {
                out.push_str(&format!("  {}\n", learned_line(learned, e.settings.threshold)));
            }
        }
        out.push_str(&too_few_rounds(e));
        out.push_str(&super::layouts::render(e));
        for c in e.comparisons.iter().filter(|c| c.metric == primary) {
            if let Some(explanation) = &c.explanation {
                out.push('\n');
                out.push_str(&super::explain::table(explanation, EXPLAIN_ROWS));
                out.push_str(&bold(&super::explain::story(c, explanation)));
                out.push('\n');
                for w in &explanation.warnings {
                    out.push_str(&yellow(&format!("warning: {}\n", escape(w))));
                }
            }
        }
    }
    out.push_str(&super::design::render(e));
    let unsupported = unsupported_counters(e);
    if !unsupported.is_empty() {
        out.push_str(&dim("not supported here:\n"));
        for (name, reason) in unsupported {
            out.push_str(&dim(&format!("  {name}: {reason}\n")));
        }
    }
    for w in &e.warnings {
        out.push_str(&yellow(&format!("warning: {}\n", super::escape_line(&w.message))));
    }
    out
}

/// The short reason in a not-comparable row's interval column.
fn not_comparable_cell(c: &Comparison) -> String {
    let reason = c.flags.first().map_or("", String::as_str);
    if reason.contains("no value") {
        "missing on a side".into()
    } else if reason.contains("≤ 0") {
        "≤ 0: no ratio".into()
    } else {
        "no ratio".into()
    }
}

/// Per command: wall time's median ± MAD, mean ± σ, range, CPU time, run-queue wait, peak
/// RSS and outliers, and the primary metric when it is not wall time.
fn command_table(e: &Experiment, style: &Style) -> FitTable {
    let primary = e.primary_metric.as_str();
    let show_wall = primary == metric::WALL || e.commands.iter().any(|c| c.summary.contains_key(metric::WALL));
    let mut columns = vec![Column::shrinkable("command")];
    if show_wall {
        columns.extend([
            Column::kept("wall median ± MAD"),
            Column::droppable("mean ± σ", 5),
            Column::droppable("min … max", 6),
            Column::droppable("cpu", 4),
            Column::droppable("runq wait", 2),
            Column::droppable("max RSS", 3),
            Column::droppable("outliers", 1),
        ]);
    }
    if primary != metric::WALL {
        columns.push(Column::kept(format!("{primary} (median)")));
    }
    let mut table = FitTable::new(Frame::Rules, columns);
    for i in style.order(e) {
        let c = &e.commands[i];
        let name = escape(&c.name);
        let mut row = vec![if i == 0 && e.commands.len() > 1 { format!("{name} (baseline)") } else { name }];
        if show_wall {
            match c.summary.get(metric::WALL) {
                Some(w) => {
                    row.push(format!("{} ± {}", style.seconds(w.median), style.seconds(w.mad)));
                    row.push(format!("{} ± {}", style.seconds(w.mean), style.seconds(w.stddev)));
                    row.push(format!("{} … {}", style.seconds(w.min), style.seconds(w.max)));
                    row.push(c.summary.get(metric::CPU).map_or("-".into(), |s| style.seconds(s.median)));
                    row.push(c.summary.get(metric::RUNQ_WAIT).map_or("-".into(), |s| style.seconds(s.median)));
                    row.push(
                        c.summary.get(metric::MAX_RSS).map_or("-".into(), |s| format_value(metric::MAX_RSS, s.median)),
                    );
                    row.push(w.outliers.to_string());
                }
                None => row.extend(std::iter::repeat_n("-".to_string(), 7)),
            }
        }
        if primary != metric::WALL {
            row.push(c.summary.get(primary).map_or("-".into(), |s| style.value(primary, s.median)));
        }
        table.row(row);
    }
    table
}

/// One command measured alone (as `stat` would): its median with the median's interval,
/// or why there is none.
fn alone(e: &Experiment, style: &Style) -> String {
    let primary = e.primary_metric.as_str();
    let Some(c) = e.commands.first() else { return String::new() };
    let Some(s) = c.summary.get(primary) else { return String::new() };
    let runs = if s.n == 1 { "1 run".to_string() } else { format!("{} runs", s.n) };
    let what = if primary == metric::WALL { "wall time".to_string() } else { primary.to_string() };
    let level = format_level(summary::MEDIAN_CI_CONFIDENCE);
    let needed = summary::min_values_for_median_ci(summary::MEDIAN_CI_CONFIDENCE).unwrap_or(6);
    let interval = match s.median_ci {
        Some((lo, hi)) => format!(
            "median {} [{}, {}] ({level} % CI of the median, {runs})",
            style.value(primary, s.median),
            style.value(primary, lo),
            style.value(primary, hi)
        ),
        None => format!(
            "median {} ({runs}: too few for a {level} % interval of the median, which needs {needed})",
            style.value(primary, s.median),
        ),
    };
    format!(
        "{}: {what} {interval}\n{}\n",
        escape(&c.name),
        dim("one command, measured alone (as `perflab stat`); give a second one to compare with it")
    )
}

/// When a row's nominal p-value and its interval (at the look's corrected level) seem to
/// disagree — p below 1 − confidence beside an interval that includes 1× — what each is.
fn levels_note(e: &Experiment) -> String {
    let disagree: Vec<&Comparison> = e
        .comparisons
        .iter()
        .filter(|c| {
            c.verdict != Verdict::NotComparable
                && c.look_confidence > c.confidence + 1e-9
                && c.p_value < 1.0 - c.confidence
                && c.ci_low <= 1.0
                && c.ci_high >= 1.0
        })
        .collect();
    let Some(c) = disagree.first() else { return String::new() };
    let rows: Vec<String> = disagree.iter().map(|c| format!("{} (p = {})", c.metric, format_p(c.p_value))).collect();
    dim(&format!(
        "note: p is each row's nominal p-value (its estimator's own test); the intervals are at {} % each, so that the {} % holds over every look at the rounds and every metric at once: {} below {} beside an interval that includes 1× is no difference at that level\n",
        format_level(c.look_confidence),
        format_level(c.confidence),
        rows.join(", "),
        format_p(1.0 - c.confidence)
    ))
}

/// The flag of a comparison the rounds' shape gave another estimator than
/// Hodges–Lehmann, with the why that the JSON's `estimation` has: when it was chosen, and
/// how many of Hodges–Lehmann's rounds it needs.
fn estimator_note(e: &Experiment) -> Option<String> {
    let est = e.estimation.as_ref().filter(|x| x.how == "shape" && x.estimator != Estimator::HodgesLehmann)?;
    let need = est
        .relative_variance
        .iter()
        .find(|(x, _)| *x == est.estimator)
        .map_or(String::new(), |(_, r)| format!("it needs {r:.2}× Hodges–Lehmann's rounds on them; "));
    Some(format!(
        "{ESTIMATED_BY}{}, chosen at round {} from the rounds' shape ({need}--estimator hl keeps Hodges–Lehmann)",
        est.estimator.describe(),
        est.from_round
    ))
}

/// Candidate vs baseline per metric: ratio, interval, p-value, verdict.
fn comparison_table(e: &Experiment, style: &Style) -> FitTable {
    let level = e.comparisons.first().map_or("95".into(), |c| format_level(c.confidence));
    let mut table = FitTable::new(
        Frame::Rules,
        vec![
            Column::pair("candidate vs baseline", " vs "),
            Column::kept("metric"),
            Column::kept("ratio").right(),
            Column::kept(format!("{level} % CI")).right(),
            Column::droppable("p", 1).right(),
            Column::kept("verdict"),
        ],
    );
    let order = style.order(e);
    let position = |name: &str| order.iter().position(|&i| e.commands[i].name == name).unwrap_or(usize::MAX);
    let mut comparisons: Vec<&Comparison> = e.comparisons.iter().collect();
    comparisons.sort_by_key(|c| position(&c.candidate));
    for c in comparisons {
        let ci = if c.verdict == Verdict::NotComparable {
            // The row says why; the warning below says it whole.
            not_comparable_cell(c)
        } else if c.ci_high.is_finite() {
            format!("[{:.4}, {:.4}]", c.ci_low, c.ci_high)
        } else if c.n == 1 {
            "none: one run".into()
        } else {
            "too few rounds".into()
        };
        let ratio = if c.ratio.is_finite() { format!("{:.4}", c.ratio) } else { "-".into() };
        let mut verdict = c.verdict.as_str().replace('_', " ");
        if c.below_threshold {
            verdict.push_str(" (< threshold)");
        }
        table.row(vec![
            format!("{} vs {}", escape(&c.candidate), escape(&c.baseline)),
            c.metric.clone(),
            ratio,
            ci,
            if c.verdict == Verdict::NotComparable { "-".into() } else { format_p(c.p_value) },
            paint_verdict(c, &verdict),
        ]);
    }
    table
}

/// Why a comparison has no interval, and how many rounds would give one: the medians and
/// spreads above are all that can be said from fewer.
fn too_few_rounds(e: &Experiment) -> String {
    let Some(c) = e.comparisons.iter().find(|c| c.metric == e.primary_metric && !c.ci_high.is_finite()) else {
        return String::new();
    };
    let Some(needed) = min_pairs_for_interval(c.look_confidence) else { return String::new() };
    let fixed = e.settings.fixed_rounds.is_some();
    format!(
        "no {} % interval: a paired interval needs at least {needed} rounds (this had {}); the medians and spreads \
         above are what {} rounds can say — {}\n",
        format_level(c.confidence),
        c.n,
        c.n,
        if fixed {
            format!("run --runs {needed} or more, or leave --runs out to stop when it knows")
        } else {
            "let it run longer (--max-time, --max-rounds)".to_string()
        }
    )
}
/// A percentage of a fraction, with one decimal below 10 %.
pub(crate) fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p.abs() < 10.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.0} %")
    }
}

/// A duration for people: seconds up to two minutes, then minutes, then hours.
pub(crate) fn rough_time(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

/// What `--budget` promised after its first look (printed then, and atop the report).
pub fn promise_line(p: &Promise, threshold: f64) -> String {
    let reach = if p.resolution <= threshold {
        format!("±{} equivalence is within reach", percent(threshold))
    } else {
        format!("too coarse to call ±{} `equivalent`", percent(threshold))
    };
    format!(
        "budget {}: about {} rounds of {}; at the noise of the first {} (σ {} per round) the interval will be about \
         ±{} by then: changes of {} are found in 80 % of experiments, {reach}",
        rough_time(p.budget_s),
        p.rounds,
        format_value(metric::WALL, p.round_s),
        p.after_rounds,
        percent(p.paired_sigma),
        percent(p.resolution),
        percent(p.detectable)
    )
}

/// What an undecided comparison learned: the change still possible either way, the
/// noise, and how long a change at the threshold would take to decide.
pub fn learned_line(l: &Learned, threshold: f64) -> String {
    let decide = match (l.rounds_to_decide, l.seconds_to_decide) {
        (Some(n), Some(s)) => format!(
            "; a {} change would be decided in 80 % of experiments after about {n} rounds ({} at this pace)",
            percent(threshold),
            rough_time(s)
        ),
        _ => String::new(),
    };
    // Versions across layouts have no paired per-round noise to quote.
    let noise = if l.paired_sigma.is_finite() {
        format!("; noise σ {} per round", percent(l.paired_sigma))
    } else {
        String::new()
    };
    format!(
        "learned: no change beyond −{} … +{} ({} %){noise}{decide}",
        percent(l.down.max(0.0)),
        percent(l.up.max(0.0)),
        format_level(l.confidence),
    )
}

/// Rows of an explanation shown in the terminal (the JSON has all).
const EXPLAIN_ROWS: usize = 15;

/// Iterations shown in a per-iteration profile before the last one.
const PROFILE_ITERATIONS: usize = 4;

/// For every metric the commands printed several times per run: each command's median
/// over runs of iteration 1, 2, …, the last, and first ÷ rest, so a slow first
/// iteration (or a warm-up) shows — one table per metric.
pub(crate) fn iteration_profile(e: &Experiment, width: Option<usize>) -> String {
    let mut metrics: Vec<&String> = Vec::new();
    // The program's own numbers for its iterations, when a capture read them (`iter 0`).
    let mut numbers: Option<(&String, &Vec<f64>)> = None;
    for run in e.commands.iter().flat_map(|c| &c.runs) {
        for (name, reading) in &run.counters {
            if reading.reason.as_deref() == Some(perflab_engine::measure::output::INDEX_REASON) {
                numbers = numbers.or(Some((name, &reading.samples)));
            } else if reading.samples.len() > 1 && !metrics.contains(&name) {
                metrics.push(name);
            }
        }
    }
    let mut out = String::new();
    for name in metrics {
        let per_command: Vec<Vec<Vec<f64>>> = e
            .commands
            .iter()
            .map(|c| {
                let runs: Vec<&Vec<f64>> =
                    c.runs.iter().filter_map(|r| r.counters.get(name)).map(|r| &r.samples).collect();
                let longest = runs.iter().map(|s| s.len()).max().unwrap_or(0);
                (0..longest).map(|i| runs.iter().filter_map(|s| s.get(i).copied()).collect()).collect()
            })
            .collect();
        let longest = per_command.iter().map(Vec::len).max().unwrap_or(0);
        let shown: Vec<usize> = if longest <= PROFILE_ITERATIONS + 1 {
            (0..longest).collect()
        } else {
            (0..PROFILE_ITERATIONS).chain([longest - 1]).collect()
        };
        // As the program numbered them when a capture read its numbers, else by the order
        // printed (#1 the first value a run printed).
        let program_numbers = numbers.filter(|(_, n)| n.len() >= longest && n.iter().all(|v| v.fract() == 0.0));
        let mut columns = vec![Column::shrinkable("command")];
        for (k, &i) in shown.iter().enumerate() {
            let gap = if k > 0 && i > shown[k - 1] + 1 { "… " } else { "" };
            columns.push(Column::kept(match program_numbers {
                Some((index, n)) => format!("{gap}{index} {}", n[i]),
                None => format!("{gap}#{}", i + 1),
            }));
        }
        columns.push(Column::kept("first ÷ rest"));
        let mut table = FitTable::new(Frame::Rules, columns);
        for (c, iterations) in e.commands.iter().zip(&per_command) {
            let mut row = vec![escape(&c.name)];
            for &i in &shown {
                row.push(
                    iterations
                        .get(i)
                        .filter(|v| !v.is_empty())
                        .map_or("-".into(), |v| format_value(name, summary::median(v))),
                );
            }
            let rest: Vec<f64> = iterations.iter().skip(1).flatten().copied().collect();
            let ratio = match (iterations.first(), rest.is_empty()) {
                (Some(first), false) if !first.is_empty() => {
                    perflab_model::units::format_ratio(summary::median(first) / summary::median(&rest))
                }
                _ => "-".into(),
            };
            row.push(ratio);
            table.row(row);
        }
        let numbering = match program_numbers {
            Some((index, _)) => format!("numbered as the program printed them, by `{index}`"),
            None => "#1 is the first value each run printed".to_string(),
        };
        out.push_str(&format!(
            "{name} per iteration (median over runs; {numbering}; a run's value is {}):\n",
            e.settings.iterations.describe()
        ));
        out.push_str(&table.render(width));
        // Which group the verdicts are on, in the program's numbering; one command (`stat`)
        // has no verdict to name.
        let groups = e.settings.iterations.group_names(name);
        if e.commands.len() > 1 && (e.primary_metric == *name || groups.contains(&e.primary_metric)) {
            out.push_str(&format!("  the verdict that decided is on {}\n", e.primary_metric));
        }
    }
    out
}

/// Counters some runs could read and others not, with the reason, from the first run
/// that could not. One that no run read is a warning of the analysis instead.
pub(crate) fn unsupported_counters(e: &Experiment) -> Vec<(String, String)> {
    let mut seen = std::collections::BTreeMap::new();
    let mut read_somewhere = std::collections::BTreeSet::new();
    for run in e.commands.iter().flat_map(|c| &c.runs) {
        for (name, reading) in &run.counters {
            if reading.supported {
                read_somewhere.insert(name.as_str());
            } else {
                seen.entry(name.clone()).or_insert_with(|| reading.reason.clone().unwrap_or_default());
            }
        }
    }
    seen.into_iter().filter(|(name, _)| read_somewhere.contains(name.as_str())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::style::{SortOrder, TimeUnit};
    use crate::table::display_width;
    use perflab_engine::executor::simulated::{Noise, Simulated};
    use perflab_engine::experiment::{run_experiment, Quiet};
    use perflab_engine::measure::MeasureOptions;
    use perflab_engine::plan::{Compared, Plan};
    use perflab_model::{CommandSpec, Settings};

    /// An experiment from the engine on a simulated machine: B is 10 % slower than A.
    fn experiment() -> Experiment {
        let commands = ["A", "B\u{1b}[2J"]
            .iter()
            .map(|c| CommandSpec {
                name: c.to_string(),
                argv: vec![c.to_string()],
                command_line: c.to_string(),
                ..CommandSpec::default()
            })
            .collect();
        let compared = Compared::fixed(vec![metric::WALL.into(), metric::CPU.into()]);
        let plan =
            Plan::new(commands, Settings { seed: 5, ..Settings::default() }, MeasureOptions::default(), compared);
        let mut machine = Simulated::new(5, vec![0.05, 0.055], Noise::gaussian(0.01));
        run_experiment(&plan, &mut machine, &mut Quiet).unwrap()
    }

    /// Issue #28: `--iterations first` on a program printing `iter 0 …` showed its iter 0
    /// as "#1"; captured, the program's own numbers head the columns. The first ÷ rest of
    /// a 0.17 ms statement before 88 ms ones read "0.00×"; it has its digits now.
    #[test]
    fn iterations_are_numbered_as_the_program_printed_them() {
        use perflab_engine::measure::output::{read_metrics, Parser};
        use perflab_model::{CommandResult, Iterations, Run};
        crate::color::init("never");
        let profile = |regex: &str| {
            let parser = Parser::regex(regex).unwrap();
            let runs = (0..3)
                .map(|_| {
                    let mut run = Run::default();
                    let out = "iter 0: 0.17 ms\niter 1: 88.1 ms\niter 2: 88.3 ms\n";
                    read_metrics(std::slice::from_ref(&parser), out, "", Iterations::First(1), &mut run).unwrap();
                    run
                })
                .collect();
            let e = Experiment {
                commands: vec![CommandResult { name: "a".into(), runs, ..CommandResult::default() }],
                primary_metric: "ms".into(),
                ..Experiment::default()
            };
            iteration_profile(&e, None)
        };
        let numbered = profile(r"iter (?<iter>\d+): (?<ms>[0-9.]+) ms");
        assert!(numbered.contains("numbered as the program printed them, by `iter`"), "{numbered}");
        assert!(numbered.contains("iter 0") && numbered.contains("iter 2") && !numbered.contains("#1"), "{numbered}");
        assert!(numbered.contains("0.00193×"), "{numbered}");
        // One command (`stat`) has no verdict: none is said to be on `ms`.
        assert!(!numbered.contains("verdict"), "{numbered}");
        let ordered = profile(r"iter \d+: (?<ms>[0-9.]+) ms");
        assert!(ordered.contains("#1 is the first value each run printed") && ordered.contains("#1"), "{ordered}");
    }

    /// Issue #28: a secondary metric printed nominal p = 0.029 beside its look-adjusted
    /// interval and "inconclusive", two levels side by side without a word.
    #[test]
    fn a_nominal_p_beside_a_corrected_interval_is_explained() {
        crate::color::init("never");
        let mut e = experiment();
        let secondary = Comparison {
            metric: metric::CPU.into(),
            ratio: 1.02,
            ci_low: 0.99,
            ci_high: 1.05,
            look_confidence: 0.995,
            p_value: 0.029,
            verdict: Verdict::Inconclusive,
            ..Comparison::example_slower("A", "B")
        };
        e.comparisons = vec![Comparison::example_slower("A", "B"), secondary];
        let note = levels_note(&e);
        assert!(note.contains("at 99.5 % each") && note.contains("cpu_s (p = 0.029)"), "{note}");
        e.comparisons.truncate(1);
        assert_eq!(levels_note(&e), "", "an interval and a p that agree need no note");
    }

    #[test]
    fn an_undecided_comparison_prints_what_it_learned_and_a_budget_its_promise() {
        crate::color::init("never");
        let commands = ["A", "B"].iter().map(|c| CommandSpec::bare(c)).collect();
        let compared = Compared::fixed(vec![metric::WALL.into()]);
        // 6 % run noise in 3 s of 0.2 s rounds: no verdict on ±1 % by the deadline.
        let settings = Settings { seed: 3, max_time_s: 3.0, budget_s: Some(3.0), ..Settings::default() };
        let plan = Plan::new(commands, settings, MeasureOptions::default(), compared);
        let mut machine = Simulated::new(3, vec![0.1, 0.1], Noise::gaussian(0.06));
        let e = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
        let [learned] = e.learned.as_slice() else { panic!("{:?}", e.learned) };
        let text = render(&e);
        let line = learned_line(learned, e.settings.threshold);
        assert!(text.contains(&line), "{text}");
        assert!(line.starts_with("learned: no change beyond −") && line.contains("(95 %); noise σ "), "{line}");
        assert!(line.contains("a 1.0 % change would be decided in 80 % of experiments after about "), "{line}");
        let promise = e.promise.as_ref().expect("a budget promises");
        assert!(text.contains(&promise_line(promise, e.settings.threshold)), "{text}");
        assert!(promise_line(promise, 0.01).starts_with("budget 3 s: about "), "{promise:?}");
    }

    #[test]
    fn an_estimator_the_rounds_chose_is_said_with_when_and_why() {
        crate::color::init("never");
        let mut e = experiment();
        let flag = format!("{ESTIMATED_BY}the median with the sign-test interval (`estimation` says why)");
        for c in e.comparisons.iter_mut() {
            c.flags.push(flag.clone());
        }
        e.estimation = Some(perflab_model::Estimation {
            estimator: Estimator::Median,
            how: "asked".into(),
            from_round: 0,
            metric: metric::WALL.into(),
            relative_variance: vec![],
        });
        assert!(render(&e).contains(&format!("note: {flag}\n")), "{}", render(&e));
        e.estimation = Some(perflab_model::Estimation {
            how: "shape".into(),
            from_round: 27,
            relative_variance: vec![(Estimator::HodgesLehmann, 1.0), (Estimator::Median, 0.55)],
            ..e.estimation.clone().unwrap()
        });
        let text = render(&e);
        assert!(
            text.contains("note: estimated by the median with the sign-test interval, chosen at round 27 from the rounds' shape (it needs 0.55× Hodges–Lehmann's rounds on them; --estimator hl keeps Hodges–Lehmann)\n"),
            "{text}"
        );
        assert!(!text.contains("says why"), "{text}");
    }

    #[test]
    fn the_report_has_the_table_the_verdict_line_and_escaped_names() {
        crate::color::init("never");
        let e = experiment();
        let text = render(&e);
        let header = format!("perflab {} rounds (+1 warm-up)", e.rounds);
        assert!(text.starts_with(&header), "{text}");
        assert!(text.contains("stopped: every comparison decided (seed 5)"), "{text}");
        assert!(text.contains("A (baseline)") && text.contains("B\\u{1b}[2J"), "{text}");
        assert!(!text.contains('\u{1b}'), "no raw escape byte: {text:?}");
        let c = e.comparisons.iter().find(|c| c.metric == metric::WALL).unwrap();
        assert!(
            text.contains(&format!("{:.4}", c.ratio)) && text.contains(&format!("[{:.4}, {:.4}]", c.ci_low, c.ci_high))
        );
        assert!(text.contains("% slower than A ["), "the verdict sentence: {text}");
    }

    #[test]
    fn snapshots_full_width_and_fitted_to_80_columns() {
        crate::color::init("never");
        let e = crate::fixtures::slower();
        insta::assert_snapshot!("compare_full_width", render_styled(&e, &Style::default()));
        let narrow = render_styled(&e, &Style { width: Some(80), ..Style::default() });
        let table_lines = narrow.lines().filter(|l| l.starts_with(' ') || l.starts_with('─') || l.starts_with('═'));
        assert!(table_lines.clone().count() > 6 && table_lines.clone().all(|l| display_width(l) <= 80), "{narrow}");
        insta::assert_snapshot!("compare_80_columns", narrow);
    }

    /// Issue #39: at 80 columns rows read `./build-with-a-v…0000 (baseline)`, comparison
    /// rows `./bu…000 vs ./b…000`, the header `cand…ate vs bas…ine`, and the verdict
    /// sentence ran to 257 characters. What the rows share gives way, what differs stays.
    #[test]
    fn at_80_columns_what_the_rows_share_gives_way_and_the_verdict_wraps() {
        crate::color::init("never");
        let (a, b) =
            ("./build-with-a-very-long-name --size 10000000", "./build-with-a-very-long-name --name hot 30000000");
        let e = crate::fixtures::experiment(&[a, b], &[0.05, 0.15], Some(8));
        let text = render_styled(&e, &Style { width: Some(80), ..Style::default() });
        for line in text.lines().filter(|l| !l.starts_with("warning")) {
            assert!(display_width(line) <= 80, "{} columns: {line}\n{text}", display_width(line));
        }
        let rows: Vec<&str> =
            text.lines().filter(|l| l.contains("10000000 (baseline)") || l.contains("hot 30000000   ")).collect();
        assert_eq!(rows.len(), 2, "both command rows keep what differs: {text}");
        assert!(rows[0].contains("size 10000000 (baseline)") && rows[1].contains("name hot 30000000"), "{text}");
        // One pair over every metric: said once above its table, never cut.
        assert!(text.contains(&format!("candidate vs baseline: {b} vs\n  {a}\n")), "{text}");
        assert!(!text.contains("cand…") && !text.contains("…000 vs"), "{text}");
        // The verdict sentence, whole, over lines of at most 80 columns.
        let sentence = crate::verdict::sentence(&e.comparisons[0], e.settings.threshold, e.rounds);
        assert!(display_width(&sentence) > 80, "{sentence}");
        let start = text.find(&format!("{b} is ")).unwrap_or_else(|| panic!("{text}"));
        let count = crate::table::wrap(&sentence, 80, "  ").len();
        assert!(count > 1);
        let wrapped: Vec<&str> = text[start..].lines().take(count).collect();
        assert_eq!(wrapped.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" "), sentence, "{text}");
    }

    #[test]
    fn one_command_is_measured_alone_and_five_rounds_say_why_there_is_no_interval() {
        crate::color::init("never");
        let alone = crate::fixtures::experiment(&["A"], &[0.05], Some(10));
        let text = render(&alone);
        assert!(text.starts_with("perflab 10 runs"), "{text}");
        assert!(text.contains("A: wall time median ") && text.contains("(95 % CI of the median, 10 runs)"), "{text}");
        assert!(text.contains("measured alone (as `perflab stat`)") && !text.contains("(baseline)"), "{text}");
        let five = crate::fixtures::experiment(&["A", "B"], &[0.05, 0.055], Some(5));
        let text = render(&five);
        assert!(
            text.contains("no 95 % interval: a paired interval needs at least 6 rounds (this had 5)")
                && text.contains("run --runs 6 or more"),
            "{text}"
        );
        assert!(text.contains("wall median ± MAD") && text.contains("too few rounds"), "{text}");
    }

    #[test]
    fn a_time_unit_and_the_mean_time_order_apply_to_the_tables() {
        crate::color::init("never");
        let e = crate::fixtures::experiment(&["slow", "fast"], &[0.08, 0.05], Some(8));
        let style = Style { time_unit: Some(TimeUnit::Second), sort: SortOrder::MeanTime, width: None };
        let text = render_styled(&e, &style);
        let (fast, slow) = (text.find(" fast ").unwrap(), text.find(" slow (baseline)").unwrap());
        assert!(fast < slow, "fastest first: {text}");
        assert!(text.contains("0.050 s") && !text.contains(" ms"), "{text}");
    }
}
