//! Suites and bisection on the terminal: one line per benchmark as it ends (`run`, the
//! fleet agent), `run --list`, what `--profile-changes` found, `bisect`'s steps and the
//! fleet's queue.

use super::color;
use super::terminal::{escape, percent, rough_time};
use perflab_model::units::format_value;
use perflab_model::Experiment;
use perflab_suite::bisect::Step;
use perflab_suite::budget::{BudgetPlan, BudgetUse, Share};
use perflab_suite::fleet::{ClaimStatus, QueueStatus};
use perflab_suite::runner::Explanation;
use perflab_suite::Benchmark;

/// `name  metric median [CI] (n runs)` of the primary metric, named (one benchmark may
/// decide on wall_s and the next on uncontended_s) and, against a baseline, the pair's
/// record: ratio, interval, verdict, metric and method.
pub fn summary_line(name: &str, experiment: &Experiment) -> String {
    let primary = experiment.primary_metric.as_str();
    let name = escape(name);
    let Some(measured) = experiment.commands.last() else { return format!("{name}: no runs") };
    let value = |v| format_value(primary, v);
    let runs = |n: usize| if n == 1 { "1 run".to_string() } else { format!("{n} runs") };
    let mut line = match measured.summary.get(primary) {
        Some(s) => match s.median_ci {
            Some((lo, hi)) => {
                format!("{name}  {primary} {} [{} – {}] ({})", value(s.median), value(lo), value(hi), runs(s.n))
            }
            None => format!("{name}  {primary} {} ({})", value(s.median), runs(s.n)),
        },
        None => format!("{name}  {}", runs(measured.runs.len())),
    };
    // The pair's record as history and the report print it (history::pair).
    if let Some(c) = experiment.comparisons.iter().find(|c| c.metric == primary) {
        let record = perflab_store::history::ratio::paired(c, false);
        line += &format!("  {} vs {}: {}", escape(&c.candidate), escape(&c.baseline), super::pair::describe(&record));
        if let Some(analysis) = &experiment.layouts {
            line += &format!(" ({})", super::layouts::note(analysis, c));
        }
    }
    line
}

/// `run --list`: a benchmark and the commands it would run.
pub fn list_line(name: &str, commands: &[String]) -> String {
    format!("{}\t{}", escape(name), commands.iter().map(|c| escape(c)).collect::<Vec<_>>().join("  vs  "))
}

/// Lines about `--profile-changes` (for stderr): the explanation's story, or why there
/// is none.
pub fn explanation(e: &Explanation) -> String {
    match e {
        Explanation::Found(comparison) => match &comparison.explanation {
            Some(explanation) => format!(
                "  why (from every run's samples, stored for `perflab report`): {}",
                super::explain::story(comparison, explanation)
            ),
            None => String::new(),
        },
        Explanation::Missing(why) => {
            format!("  {}", color::yellow(&format!("warning: slower, but not explained: {}", escape(why))))
        }
    }
}

/// One tested commit of a bisection.
pub fn bisect_step(step: &Step) -> String {
    let c = &step.comparison;
    format!(
        "{} {}: ×{:.3} {} {} ({} rounds) → {}{}",
        short(&step.commit),
        escape(&step.subject),
        c.ratio,
        c.interval_text(3),
        c.verdict.as_str(),
        c.n,
        if step.bad { "bad" } else { "good" },
        match (&step.layouts, step.halfway) {
            (Some(analysis), _) => format!(" ({})", super::layouts::note(analysis, c)),
            (None, halfway) => match halfway {
                Some(halfway) if !step.bad && c.verdict == perflab_model::Verdict::Slower => {
                    format!(" (slower, but less than halfway to the bad end: ×{halfway:.3})")
                }
                _ => String::new(),
            },
        }
    )
}

/// The first ten characters of a commit hash.
pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}
/// The terminal listing of the fleet's queue (`perflab queue --status`).
pub fn queue_status(status: &QueueStatus) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if status.jobs.is_empty() {
        return "the queue is empty\n".into();
    }
    for job in &status.jobs {
        let machines = if job.spec.machines.is_empty() { "every machine".into() } else { job.spec.machines.join(", ") };
        let _ = writeln!(
            out,
            "job {}: label `{}`, suite {}, on {}{}{}",
            job.id,
            escape(&job.spec.label),
            escape(&job.spec.suite_path),
            escape(&machines),
            job.spec.git_commit.as_deref().map(|c| format!(", commit {}", escape(c))).unwrap_or_default(),
            if job.cancelled { " (cancelled)" } else { "" }
        );
        let claims: Vec<&ClaimStatus> = status.claims.iter().filter(|c| c.job == job.id).collect();
        if claims.is_empty() {
            let _ = writeln!(out, "  no machine has claimed it yet");
        }
        for c in claims {
            let _ = writeln!(
                out,
                "  {:<8} attempt {} by {} on {}{}",
                c.state,
                c.attempt,
                escape(&c.agent),
                escape(&c.machine.describe(&c.fingerprint)),
                c.message.as_deref().map(|m| format!(": {}", escape(m))).unwrap_or_default()
            );
        }
    }
    out
}

/// `run --budget`, before the pilot: how the budget will be spent.
pub fn budget_start(budget_s: f64, total: usize) -> String {
    format!(
        "budget {} for the whole run: the {total} benchmarks run interleaved, a round each in turn; a pilot takes \
         each to its first look, then the plan says what each share can resolve; a decided benchmark stops and the \
         undecided ones share what is left; at the deadline each undecided one says what it ruled out",
        rough_time(budget_s)
    )
}

/// `run --budget`, after the pilot: what each benchmark's share can resolve at the noise
/// seen, one line each (`±x % at this noise`).
pub fn budget_plan(plan: &BudgetPlan, shares: &[(&Benchmark, &Share)]) -> String {
    let mut out = format!(
        "plan after a pilot of {} ({} left of {}): at the noise of the first rounds, by the deadline",
        rough_time(plan.at_s),
        rough_time((plan.budget_s - plan.at_s).max(0.0)),
        rough_time(plan.budget_s)
    );
    for (bench, share) in shares {
        out.push_str(&format!("\n  {}: ", escape(&bench.name)));
        match &share.promise {
            Some(p) => {
                let reach = if p.resolution <= share.threshold {
                    format!("±{} equivalence within reach", percent(share.threshold))
                } else {
                    format!("too coarse to call ±{} `equivalent`", percent(share.threshold))
                };
                out.push_str(&format!(
                    "±{} at this noise (σ {} per round; about {} rounds, one per {} of the run's time); \
                     changes of {} found in 80 % of runs; {reach}",
                    percent(p.resolution),
                    percent(p.paired_sigma),
                    p.rounds,
                    format_value(perflab_model::metric::WALL, p.round_s),
                    percent(p.detectable),
                ));
            }
            None => out.push_str("no promise: no look of its first rounds could bound its interval"),
        }
    }
    out
}

/// `run --budget`, at the end: how the budget was used (the overshoot said when there is one).
pub fn budget_used(used: &BudgetUse) -> String {
    let ended = if used.stopped_at_deadline == 0 {
        "every benchmark ended before the deadline".to_string()
    } else {
        format!(
            "the deadline stopped {} undecided benchmark{} ({} ended before it)",
            used.stopped_at_deadline,
            if used.stopped_at_deadline == 1 { "" } else { "s" },
            used.ended_before
        )
    };
    let reserve = if used.reserve_s >= 0.05 {
        format!(", the rounds stopping up to {} early for the benchmarks' endings", exact_time(used.reserve_s))
    } else {
        String::new()
    };
    let took = if used.overshoot_s() > 0.0 {
        format!(
            "the run took {}: {} past the deadline (the round in flight, endings slower than reserved){reserve}",
            exact_time(used.used_s),
            exact_time(used.overshoot_s())
        )
    } else {
        format!("the run took {}{reserve}", exact_time(used.used_s))
    };
    format!("budget {}: {ended}; {took}", rough_time(used.budget_s))
}

/// Seconds with a decimal below a minute, minutes and seconds above: a budget's overshoot
/// is a fraction of a second.
fn exact_time(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else {
        format!("{} min {:.1} s", (seconds / 60.0).floor(), seconds % 60.0)
    }
}
