//! `perflab history` on the terminal: per machine, one row per benchmark with a sparkline
//! (or one row per label for a single benchmark), change points, and the builds ×
//! machines table. Too wide for the terminal, the overview leaves out `labels`, then
//! `history`, then shortens benchmark names and change points; the detail leaves out
//! `runs`, then `95% CI`, then shortens labels and the shift mark (docs/output.md).

use super::table::{Column, FitTable, Frame};
use super::terminal::escape;
use perflab_model::units::format_value;
use perflab_store::history::matrix::Matrix;
use perflab_store::history::ratio::CiMethod;
use perflab_store::history::{BenchmarkHistory, History, Point, Shift, MIN_RELATIVE_SPAN};
use std::fmt::Write;

/// The whole history, its tables fitting `width` (`None`: full width).
pub fn render(history: &History, detail: bool, width: Option<usize>) -> String {
    let mut out = String::new();
    if let Some(note) = &history.metric_note {
        let _ = writeln!(out, "note: {}", escape(note));
    }
    if let Some(note) = &history.left_out {
        // Already escaped where it names benchmarks and labels.
        let _ = writeln!(out, "note: {note}");
    }
    if history.machines.len() > 1 {
        let _ = writeln!(
            out,
            "note: results come from {} different machines and are shown separately; pick one with --machine FINGERPRINT",
            history.machines.len()
        );
    }
    for machine in &history.machines {
        let _ = writeln!(out, "machine {}", escape(&machine.description));
        if let Some(f) = &machine.family {
            // The words of `run`: the benchmarks a check compares are one family.
            let family = perflab_suite::family::Family::new(f.size, 0.95);
            let _ = writeln!(out, "note: `{}` against the label before it: {}", escape(&f.label), family.note());
        }
        let detailed = detail || machine.benchmarks.len() == 1;
        if detailed {
            for bench in &machine.benchmarks {
                out.push_str(&render_detail(bench, &history.metric, width));
            }
        } else {
            out.push_str(&render_overview(&machine.benchmarks, &history.metric, width));
        }
        out.push_str(&explained(&machine.explained));
        out.push('\n');
    }
    if let Some(m) = &history.matrix {
        out.push_str(&matrix(m, width));
    }
    out
}

/// Regressions explained from their runs' samples (`run --profile-changes`): the
/// latest few, one story each.
fn explained(regressions: &[perflab_store::history::ExplainedRegression]) -> String {
    const SHOWN: usize = 5;
    let mut out = String::new();
    if regressions.is_empty() {
        return out;
    }
    let _ = writeln!(out, "why slower (stored by run --profile-changes; `perflab report` has every row):");
    let skipped = regressions.len().saturating_sub(SHOWN);
    if skipped > 0 {
        let _ = writeln!(out, "  … {skipped} earlier (see --json)");
    }
    for r in &regressions[skipped..] {
        if let Some(e) = &r.comparison.explanation {
            let story = super::explain::story(&r.comparison, e);
            let _ = writeln!(out, "  {} @ {}: {}", escape(&r.benchmark), escape(&r.label), story);
        }
    }
    out
}

/// Labels shown in an overview sparkline (the latest ones); `--last` narrows further.
const SPARKLINE_WIDTH: usize = 40;

fn render_overview(benchmarks: &[BenchmarkHistory], metric_name: &str, width: Option<usize>) -> String {
    let mut table = FitTable::new(
        Frame::Plain,
        vec![
            Column::shrinkable("benchmark"),
            Column::droppable("labels", 1),
            Column::droppable("history", 2),
            Column::kept(format!("latest {metric_name}")),
            Column::shrinkable("change points"),
        ],
    );
    for b in benchmarks {
        let latest = b.points.last().map_or(String::new(), |p| format_point(p, metric_name));
        let medians: Vec<f64> = b.points.iter().map(|p| p.median).collect();
        table.row(vec![
            escape(&b.name),
            b.points.len().to_string(),
            sparkline(&medians[medians.len().saturating_sub(SPARKLINE_WIDTH)..]),
            latest,
            b.change_points.iter().map(describe_shift).collect::<Vec<_>>().join("; "),
        ]);
    }
    table.render(width)
}

fn render_detail(bench: &BenchmarkHistory, metric_name: &str, width: Option<usize>) -> String {
    let medians: Vec<f64> = bench.points.iter().map(|p| p.median).collect();
    let mut out = format!("{}  {}\n", escape(&bench.name), sparkline(&medians));
    let mut table = FitTable::new(
        Frame::Plain,
        vec![
            Column::shrinkable("label"),
            Column::droppable("sessions", 3),
            Column::droppable("runs", 1),
            Column::kept(format!("median {metric_name}")),
            Column::droppable("95% CI", 2),
            Column::kept("vs previous [95% CI]"),
            Column::shrinkable(""),
        ],
    );
    let mut notes = Vec::new();
    let mut methods = Vec::new();
    for (i, p) in bench.points.iter().enumerate() {
        let change = match &p.vs_previous {
            Some(r) => {
                let mark = if r.note.is_some() && r.method != CiMethod::Paired {
                    " (withheld)"
                } else if r.significant() && r.verdict.is_decided() {
                    " *"
                } else {
                    ""
                };
                notes.extend(r.note.clone());
                methods.push(r.method);
                // The pair's record, as `run` and the report print it.
                format!("{} {}{mark}", super::pair::ratio_and_interval(r), super::pair::method(r))
            }
            None if i > 0 => "no sessions to compare".to_string(),
            None => String::new(),
        };
        let mark = bench
            .change_points
            .iter()
            .find(|c| c.index == i)
            .map_or(String::new(), |c| format!("◀ shift {}", describe_shift(c)));
        let busy = match p.busy_share {
            Some(share) if share >= perflab_engine::analysis::BUSY_SHARE => {
                format!(" (busy: {:.0} % waiting)", share * 100.0)
            }
            _ => String::new(),
        };
        table.row(vec![
            escape(&p.label) + if p.incomplete { " (incomplete)" } else { "" } + &busy,
            p.sessions.to_string(),
            p.n.to_string(),
            format_value(metric_name, p.median),
            p.median_ci.map_or("n < 6".into(), |(lo, hi)| {
                format!("{} – {}", format_value(metric_name, lo), format_value(metric_name, hi))
            }),
            change,
            mark,
        ]);
    }
    out.push_str(&table.render(width));
    let noise = bench.points.iter().find_map(|p| p.vs_previous.as_ref()?.session_noise);
    let mut how = Vec::new();
    if methods.contains(&CiMethod::Paired) {
        how.push(
            "paired: both were measured interleaved in one session (run --baseline), their paired rounds".to_string(),
        );
    }
    if methods.contains(&CiMethod::Sessions) {
        how.push(format!(
            "separate sessions: this label's sessions against the previous label's, with the machine's session-to-session noise{}",
            noise.map_or(String::new(), |tau| format!(" (σ = {:.2} %)", tau * 100.0))
        ));
    }
    if !how.is_empty() {
        out.push_str(&format!(
            "* the change's 95 % interval excludes 1×; {}; one test per row, so about 1 row in 20 is marked by chance — change points are tested for the whole series\n",
            how.join("; ")
        ));
    }
    for note in notes {
        out.push_str(&format!("note: {}\n", escape(&note)));
    }
    if bench.change_points.is_empty() {
        out.push_str("no change point\n");
    }
    for why in unmatched_marks(bench) {
        out.push_str(&format!("note: {why}\n"));
    }
    out
}

/// Rows marked changed (`*`) where the series reports no change point, each with why:
/// the two statements answer different questions, and a reader must not take them as
/// contradicting each other. A step too near either end of the history cannot be tested
/// by the series yet; elsewhere the row's own test (one per row) found what the test of
/// the whole series, beyond the labels' own spread, did not.
fn unmatched_marks(bench: &BenchmarkHistory) -> Vec<String> {
    let per_side = perflab_stats::changepoint::ChangePointConfig::for_groups().min_groups_per_side();
    let labels = bench.points.len();
    bench
        .points
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            let marked = p.vs_previous.as_ref().is_some_and(|r| {
                !(r.note.is_some() && r.method != CiMethod::Paired) && r.significant() && r.verdict.is_decided()
            });
            marked && !bench.change_points.iter().any(|c| c.index == *i)
        })
        .map(|(i, p)| {
            let (before, after) = (i, labels - i);
            if before < per_side || after < per_side {
                format!(
                    "`{}` is marked changed by its row, but the series cannot test a step there yet: a change point needs {per_side} labels on each side ({before} before, {after} from `{}` on)",
                    escape(&p.label),
                    escape(&p.label)
                )
            } else {
                format!(
                    "`{}` is marked changed by its row's own test (one test per row); the test of the whole series found no shift there beyond the labels' own spread from label to label",
                    escape(&p.label)
                )
            }
        })
        .collect()
}

/// An estimate and its interval as percentage changes, with as many decimals (1 to 4) as
/// it takes for the interval's ends to differ.
fn percents(ratios: [f64; 3]) -> [String; 3] {
    let with = |decimals: usize| ratios.map(|r| format!("{:+.decimals$} %", (r - 1.0) * 100.0));
    (1..=4).map(with).find(|[_, lo, hi]| lo != hi).unwrap_or_else(|| with(1))
}

fn describe_shift(c: &Shift) -> String {
    let [ratio, lo, hi] = percents([c.ratio, c.ratio_ci.0, c.ratio_ci.1]);
    // The runs of the labels before against those after: medians across sessions, never
    // a paired figure, so it is said beside the row's own (which names its method).
    format!("{ratio} at `{}` across sessions (CI {lo} … {hi}, p = {:.3})", escape(&c.label), c.p_value)
}

fn format_point(p: &Point, metric_name: &str) -> String {
    let point = format_point_value(p, metric_name);
    if p.incomplete {
        point + " (incomplete)"
    } else {
        point
    }
}

fn format_point_value(p: &Point, metric_name: &str) -> String {
    match p.median_ci {
        Some((lo, hi)) => format!(
            "{} [{} – {}] ({})",
            format_value(metric_name, p.median),
            format_value(metric_name, lo),
            format_value(metric_name, hi),
            escape(&p.label)
        ),
        None => format!("{} ({})", format_value(metric_name, p.median), escape(&p.label)),
    }
}

/// One Unicode block per value, scaled between the series' minimum and maximum; a series
/// spanning less than [`MIN_RELATIVE_SPAN`] of its level is drawn on that span from the
/// middle block up, so a change inside the noise of two sessions is no jump (▄▄, not ▁█).
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let (min, max) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let span = MIN_RELATIVE_SPAN * (min.abs() + max.abs()) / 2.0;
    let bar = |v: f64| -> usize {
        if max - min >= span && max > min {
            (((v - min) / (max - min)) * 7.0).round().clamp(0.0, 7.0) as usize
        } else if span > 0.0 {
            3 + ((v - min) / span * 8.0).floor().clamp(0.0, 4.0) as usize
        } else {
            3
        }
    };
    values.iter().map(|&v| BARS[bar(v)]).collect()
}

/// The builds × machines table: one row per benchmark, one column per machine (benchmark
/// names shorten to fit).
pub fn matrix(m: &Matrix, width: Option<usize>) -> String {
    let columns = std::iter::once(Column::shrinkable("benchmark"))
        .chain(m.machines.iter().map(|c| Column::kept(escape(&c.name))))
        .collect();
    let mut table = FitTable::new(Frame::Plain, columns);
    for row in &m.rows {
        let cells = row.cells.iter().map(|c| match c {
            Some(r) => format!("{} {} ({})", super::pair::ratio_and_interval(r), r.verdict.as_str(), r.method.short()),
            None => "—".into(),
        });
        table.row(std::iter::once(escape(&row.benchmark)).chain(cells).collect());
    }
    let mut out = format!(
        "{} ÷ {} ({}) on each machine, never pooled (95 % CI; paired where both ran interleaved in one session, else from separate sessions):\n",
        escape(&m.label),
        escape(&m.reference),
        m.metric
    );
    out += &table.render(width);
    for c in &m.machines {
        out += &format!("  {}: {}\n", escape(&c.name), escape(&c.description));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_store::fixtures::runs;
    use perflab_store::fixtures::{stored, tenfold_step};
    use perflab_store::history::pair::MetricChoice;
    use perflab_store::history::{build, matrix::matrix as builds_by_machines, Steps};

    #[test]
    fn results_of_several_machines_are_said_to_be_apart() {
        let exps = vec![stored("v1", 1, "a", "h1", &[1.0, 2.0]), stored("v1", 1, "a", "h2", &[9.0])];
        let text = render(&build(&exps, "wall_s", Steps::Compare), false, None);
        assert!(text.contains("2 different machines"), "{text}");
    }

    #[test]
    fn a_step_shows_its_change_its_interval_and_where_it_began() {
        let text = render(&build(&tenfold_step(), "wall_s", Steps::Compare), true, None);
        assert!(text.contains("◀ shift -92.") && text.contains("at `v5`"), "{text}");
        assert!(text.contains("0.0759× [0.07") && text.contains("] wall_s, separate sessions *"), "{text}");
        assert!(!text.contains("no change point"), "{text}");
        // 60 columns: `runs` and `95% CI` go first, the numbers that matter stay.
        let narrow = render(&build(&tenfold_step(), "wall_s", Steps::Compare), true, Some(60));
        assert!(narrow.contains("0.0759× [0.07") && narrow.contains(" *"), "{narrow}");
        assert!(narrow.contains("left out `runs`, `95% CI`"), "{narrow}");
    }

    /// Six labels of 8 runs, `level(i)` the wall time of label `vi`.
    fn six_labels(level: impl Fn(usize) -> f64) -> Vec<perflab_store::StoredExperiment> {
        (1..=6)
            .map(|i| {
                let walls: Vec<f64> = (0..8).map(|k| level(i) * (1.0 + 0.003 * ((i * 3 + k) % 5) as f64)).collect();
                stored(&format!("v{i}"), i as i64, "xchg", "h1", &walls)
            })
            .collect()
    }

    /// Issue #39: the row of `v5` marked `0.115× … *` and the series said "no change
    /// point" when `v4` sat a few % below `v1`–`v3`.
    #[test]
    fn a_marked_step_is_a_change_point_wherever_the_label_before_it_lies() {
        for below in [0.0, 0.03, 0.05] {
            let exps = six_labels(|i| match i {
                1..=3 => 0.243,
                4 => 0.243 * (1.0 - below),
                _ => 0.243 / 8.7,
            });
            let text = render(&build(&exps, "wall_s", Steps::Compare), true, None);
            let row = text.lines().find(|l| l.trim_start().starts_with("v5 ")).unwrap_or_else(|| panic!("{text}"));
            assert!(row.contains(" *") && row.contains("◀ shift -8"), "{below}: {row}");
            assert!(!text.contains("no change point") && !text.contains("note: `v5`"), "{below}: {text}");
        }
    }

    /// A step at the last label is marked by its row; the series cannot test it yet and
    /// says so instead of a bare "no change point".
    #[test]
    fn a_marked_row_the_series_cannot_test_says_why() {
        let exps = six_labels(|i| if i < 6 { 0.243 } else { 0.243 / 8.7 });
        let text = render(&build(&exps, "wall_s", Steps::Compare), true, None);
        let row = text.lines().find(|l| l.trim_start().starts_with("v6 ")).unwrap_or_else(|| panic!("{text}"));
        assert!(row.contains(" *"), "{row}");
        assert!(text.contains("no change point\nnote: `v6` is marked changed by its row, but the series cannot test a step there yet: a change point needs 2 labels on each side (5 before, 1 from `v6` on)"), "{text}");
    }

    #[test]
    fn the_builds_by_machines_table_names_each_machine() {
        let exps = [
            stored("gcc48", 1, "vm_insns", "sandy", &runs(1.0)),
            stored("gcc54", 2, "vm_insns", "sandy", &runs(1.1)),
            stored("gcc48", 1, "vm_insns", "haswell", &runs(0.8)),
        ];
        let m = builds_by_machines(&exps.iter().collect::<Vec<_>>(), MetricChoice::Asked("wall_s"), "gcc48", "gcc54");
        let text = matrix(&m, None);
        assert!(text.contains("gcc54 ÷ gcc48") && text.contains("1.1× [") && text.contains("—"), "{text}");
    }

    #[test]
    fn sparkline_spans_the_range() {
        assert_eq!(sparkline(&[1.0, 2.0, 3.0]), "▁▅█");
        assert_eq!(sparkline(&[5.0, 5.0]), "▄▄");
        assert_eq!(sparkline(&[]), "");
    }

    /// Issue #28: a 0.1 % change was drawn ▁█. Inside the span of two sessions' noise it
    /// stays level; a change of a few percent still shows, a large one spans the blocks.
    #[test]
    fn sparkline_of_a_change_inside_the_noise_is_level() {
        assert_eq!(sparkline(&[27.11, 27.14]), "▄▄");
        assert_eq!(sparkline(&[1.0, 1.002, 0.999]), "▄▄▄");
        assert_eq!(sparkline(&[1.0, 1.03, 0.999]), "▄█▄");
        assert_eq!(sparkline(&[1.0, 1.3]), "▁█");
    }

    /// A label whose experiment stored why its build is slower gets its story under the
    /// machine's table; other labels say nothing.
    #[test]
    fn a_stored_explanation_is_told_under_the_table() {
        let mut slower = stored("v2", 1, "sort", "h", &[1.2, 1.21, 1.19]);
        let mut explanation = perflab_engine::fixtures::example_explanation();
        explanation.stacks = Some(perflab_model::MeanStacks::default());
        slower.experiment.primary_metric = "wall_s".into();
        slower.experiment.comparisons.push(perflab_model::Comparison {
            n: 3,
            explanation: Some(Box::new(explanation)),
            ..perflab_model::Comparison::example_slower("base", "B")
        });
        let experiments = [stored("v1", 0, "sort", "h", &[1.0, 1.01, 0.99]), slower];
        let history = build(&experiments, "wall_s", Steps::Compare);
        let explained = &history.machines[0].explained;
        assert_eq!(explained.len(), 1);
        assert!(explained[0].comparison.explanation.as_ref().unwrap().stacks.is_none(), "left to the report");
        let text = render(&history, false, None);
        let line = text.lines().find(|l| l.starts_with("  sort @ v2: ")).unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains("B is 2.5 % [2.1, 2.9] slower: f_up +"), "{line}");
        assert!(!text.contains("@ v1"), "{text}");
    }
}
