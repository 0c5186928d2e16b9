//! An explanation in words and as a table (`compare --explain`): one story — "B is 2.5 %
//! [2.1, 2.9] slower: f_up +30 % [26, 34] adds 3.1 ms/run; f_down −20 % [−24, −16] saves
//! 2.0 ms/run; no other function changed beyond ±4 %" — then each row with its time per
//! run in both commands, ratio, contribution and verdict.

use super::color::{dim, green, red, yellow};
use super::escape;
use perflab_model::units::format_level;
use perflab_model::{metric, Change, Comparison, Explanation, FunctionChange, Verdict, OTHER_FUNCTIONS};

/// A signed percentage of a ratio: 1.3 → "+30", 0.8 → "−20" (one decimal below 10 %).
fn percent(ratio: f64) -> String {
    let p = (ratio - 1.0) * 100.0;
    let text = if p.abs() < 10.0 { format!("{p:+.1}") } else { format!("{p:+.0}") };
    text.replace('-', "−")
}

fn amount(x: f64) -> String {
    let digits = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else if x.abs() >= 1.0 {
        2
    } else {
        3
    };
    format!("{x:.digits$}").replace('-', "−")
}

fn signed_amount(x: f64) -> String {
    if x >= 0.0 {
        format!("+{}", amount(x))
    } else {
        amount(x)
    }
}

fn interval(change: &Change, each: impl Fn(f64) -> String) -> String {
    match (change.low, change.high) {
        (Some(lo), Some(hi)) if lo == hi => String::new(),
        (Some(lo), Some(hi)) => format!(" [{}, {}]", each(lo), each(hi)),
        _ => " [unbounded]".into(),
    }
}

/// "B is 2.5 % [2.1, 2.9] slower" from the primary comparison.
fn headline(c: &Comparison) -> String {
    let time = metric::info(&c.metric).is_time();
    let what = if c.metric == metric::WALL || !time { String::new() } else { format!(" in {}", c.metric) };
    let bounds = if c.ci_high.is_finite() {
        format!(" [{}, {}]", percent(c.ci_low).trim_start_matches('+'), percent(c.ci_high).trim_start_matches('+'))
    } else {
        String::new()
    };
    // "faster" and "slower" carry the sign: the estimate and its interval are sizes of the
    // change in that direction, all of one sign ("14 % [11, 48] faster", not "[−48, −11]").
    let magnitude = |r: f64| percent(r).trim_start_matches(['+', '−']).to_string();
    let sized = |lo: f64, hi: f64| {
        let bounds =
            if c.ci_high.is_finite() { format!(" [{}, {}]", magnitude(lo), magnitude(hi)) } else { String::new() };
        format!("{} %{bounds}", magnitude(c.ratio))
    };
    match c.verdict {
        Verdict::Slower if time => format!("{} is {} slower{what}", c.candidate, sized(c.ci_low, c.ci_high)),
        Verdict::Faster if time => format!("{} is {} faster{what}", c.candidate, sized(c.ci_high, c.ci_low)),
        _ => {
            format!("{} vs {}{what}: {} %{bounds} ({})", c.candidate, c.baseline, percent(c.ratio), c.verdict.as_str())
        }
    }
}

fn is_flagged(f: &FunctionChange) -> bool {
    matches!(f.verdict, Verdict::Slower | Verdict::Faster)
}

/// One function's clause: "f_up +30 % [26, 34] adds 3.1 ms/run".
fn clause(f: &FunctionChange, unit: &str) -> String {
    let verb = if f.contribution.estimate >= 0.0 { "adds" } else { "saves" };
    let per_run = format!("{} {unit}/run", amount(f.contribution.estimate.abs()));
    let name = escape(&f.name);
    match (f.ratio, f.ci_low, f.ci_high) {
        (None, _, _) => format!("{name} (new) {verb} {per_run}{}", interval(&f.contribution, amount)),
        (Some(r), Some(lo), Some(hi)) if lo != hi => format!(
            "{name} {} % [{}, {}] {verb} {per_run}",
            percent(r),
            percent(lo).trim_start_matches('+'),
            percent(hi).trim_start_matches('+')
        ),
        (Some(r), _, _) => format!("{name} {} % {verb} {per_run}", percent(r)),
    }
}

/// The largest members of `[other functions]` by change: "light 30 → 60 samples, …"
/// (samples over all the rounds), None when it has no members listed.
fn other_members(e: &Explanation) -> Option<String> {
    if e.other_members.is_empty() {
        return None;
    }
    let listed: Vec<String> = e
        .other_members
        .iter()
        .map(|m| format!("{} {:.0} → {:.0}", escape(&m.name), m.baseline_samples, m.candidate_samples))
        .collect();
    Some(format!("{} samples in {} rounds", listed.join(", "), e.rounds))
}

/// The story: what changed and where, in one sentence (several candidates: one each).
pub fn story(comparison: &Comparison, e: &Explanation) -> String {
    let mut flagged: Vec<&FunctionChange> =
        e.functions.iter().filter(|f| is_flagged(f) && !f.below_threshold && !f.moves_with_layout()).collect();
    flagged.sort_by(|a, b| b.contribution.estimate.abs().total_cmp(&a.contribution.estimate.abs()));
    let small = e.functions.iter().filter(|f| is_flagged(f) && f.below_threshold && !f.moves_with_layout()).count();
    let mut parts: Vec<String> = flagged
        .iter()
        .map(|f| {
            let clause = clause(f, &e.unit);
            match other_members(e) {
                Some(members) if f.name == OTHER_FUNCTIONS => format!("{clause} (mostly {members})"),
                _ => clause,
            }
        })
        .collect();
    // Real for these binaries, not across layouts: what a relink moves, said as such.
    for f in e.functions.iter().filter(|f| f.moves_with_layout() && !f.below_threshold) {
        let spread = f.across_layouts.as_ref().map_or(f64::NAN, |a| a.spread);
        parts.push(format!(
            "{} {} % moves with layout, not with the change (its layouts of one version differ by ±{} %)",
            escape(&f.name),
            f.ratio.map_or_else(|| "new".into(), percent),
            perflab_model::units::format_percent(spread * 100.0)
        ));
    }
    if small > 0 {
        parts.push(format!(
            "{small} more real change{} too small to matter (each within ±{} % of the run)",
            if small == 1 { "" } else { "s" },
            perflab_model::units::format_percent(e.threshold * 100.0)
        ));
    }
    let rest = match (e.unflagged_within, e.unflagged_contribution_within) {
        _ if e.method == "exact" => None,
        (Some(within), Some(per_run)) => Some(format!(
            "no other function changed beyond ±{:.0} % (or by more than {} {}/run)",
            (within * 100.0).ceil(),
            amount(per_run),
            e.unit
        )),
        (None, Some(per_run)) => {
            Some(format!("no other function changed by more than {} {}/run", amount(per_run), e.unit))
        }
        _ => None,
    };
    if flagged.is_empty() && small == 0 {
        let resolution = rest.map(|r| format!(": {r}")).unwrap_or_default();
        return format!(
            "{}: no function's change could be told from the noise in {} rounds{resolution}",
            headline(comparison),
            e.rounds
        );
    }
    parts.extend(rest);
    format!("{}: {}", headline(comparison), parts.join("; "))
}

fn paint(f: &FunctionChange, text: &str) -> String {
    match f.verdict {
        Verdict::Slower if !f.below_threshold => red(text),
        Verdict::Faster if !f.below_threshold => green(text),
        Verdict::Inconclusive => yellow(text),
        _ => text.to_string(),
    }
}

/// True when the explanation's events are every call of probed functions (a uprobe, the
/// allocation probes), not samples of a rate.
fn every_call(e: &Explanation) -> bool {
    perflab_engine::measure::probe_cost::is_probe_metric(&e.event)
        || perflab_engine::measure::allocations::is_allocation_event(&e.event)
}

/// For an allocation explanation's event: what its rows weigh and what its per-run count
/// counts (`--explain-alloc bytes|calls|live`).
fn allocation_weight(event: &str) -> Option<(&'static str, &'static str)> {
    use perflab_profile::alloc::view::AllocView;
    let weight = AllocView::NAMES.iter().filter_map(|n| n.parse::<AllocView>().ok()).find(|v| v.event() == event)?;
    Some(match weight {
        AllocView::Bytes => ("bytes requested per call site", "allocating calls"),
        AllocView::Calls => ("allocating calls per call site", "allocating calls"),
        AllocView::Live => ("bytes live at exit per call site", "blocks live at exit"),
    })
}

/// The table of rows: the story's evidence.
pub fn table(e: &Explanation, limit: usize) -> String {
    let mut out = String::new();
    let sampled = e.method == "sampled";
    // What the rows weigh and what is counted per run: a probe's "samples" are every
    // call of what it probes; an allocation explanation weighs its calls by bytes (or
    // counts them, or the blocks they left live), so "calls of" would misname bytes.
    let (weighed, draws) = match allocation_weight(&e.event) {
        Some(weight) => weight,
        None if every_call(e) => ("calls", "calls"),
        None => ("samples", "samples"),
    };
    out.push_str(&dim(&format!(
        "{} of `{}` vs `{}`: {}, {} per run ({:.0} → {:.0}), {} rows{}\n",
        if sampled { weighed } else { "exact counts" },
        escape(&e.candidate),
        escape(&e.baseline),
        e.event,
        if sampled { draws } else { "instructions" },
        e.samples_per_run.0,
        e.samples_per_run.1,
        e.functions.len(),
        if sampled {
            format!(
                ", {} rounds, each interval at {} % ({} % together)",
                e.rounds,
                format_level(e.function_level),
                format_level(e.confidence)
            )
        } else {
            String::new()
        }
    )));
    let unit = &e.unit;
    out.push_str(&dim(&format!(
        "{:>12} {:>12}  {:>22}  {:>26}  {:<12}  function\n",
        format!("A {unit}/run"),
        format!("B {unit}/run"),
        "ratio",
        format!("contribution {unit}/run"),
        "verdict"
    )));
    let row = |f: &FunctionChange| {
        let ratio = match (f.ratio, f.ci_low, f.ci_high) {
            (None, _, _) => "new".to_string(),
            (Some(r), Some(lo), Some(hi)) if lo != hi => format!("{r:.3} [{lo:.3}, {hi:.3}]"),
            (Some(r), _, None) => format!("{r:.3} [unbounded]"),
            (Some(r), _, _) => format!("{r:.4}"),
        };
        let contribution =
            format!("{}{}", signed_amount(f.contribution.estimate), interval(&f.contribution, signed_amount));
        let verdict =
            if f.below_threshold { format!("{} (small)", f.verdict.as_str()) } else { f.verdict.as_str().into() };
        let counts = f
            .counts
            .iter()
            .filter(|(_, (a, b))| a != b)
            .map(|(name, (a, b))| format!("{name} {} → {}", amount(*a), amount(*b)))
            .collect::<Vec<_>>();
        let counts = if counts.is_empty() { String::new() } else { dim(&format!("  ({})", counts.join(", "))) };
        let layouts = f.across_layouts.as_ref().map_or(String::new(), |a| {
            if a.spread == 0.0 && a.ci_low == a.ci_high {
                // Whole samples per run, the same in every layout: nothing to compare.
                return dim("  (across layouts: the same in every layout, to the sample)");
            }
            let interval = match (a.ci_low, a.ci_high) {
                (Some(lo), Some(hi)) => format!(" [{lo:.3}, {hi:.3}]"),
                _ => format!(" [no interval with {} + {} layouts]", a.layouts.0, a.layouts.1),
            };
            let mark = if f.moves_with_layout() { ": moves with layout" } else { "" };
            dim(&format!(
                "  (across layouts {:.3}{interval}, layouts ±{} %{mark})",
                a.ratio,
                perflab_model::units::format_percent(a.spread * 100.0)
            ))
        });
        let why = f.no_interval.as_ref().map_or(String::new(), |why| dim(&format!("  (no interval: {why})")));
        let members = match other_members(e) {
            Some(members) if f.name == OTHER_FUNCTIONS => dim(&format!("  (largest changes: {members})")),
            _ => String::new(),
        };
        format!(
            "{:>12} {:>12}  {:>22}  {:>26}  {}  {}{}{counts}{layouts}{why}{members}\n",
            amount(f.baseline_per_run),
            amount(f.candidate_per_run),
            ratio,
            contribution,
            paint(f, &format!("{verdict:<12}")),
            escape(&f.name),
            match f.object.as_str() {
                "" => String::new(),
                bracketed if bracketed.starts_with('[') => dim(&format!("  {}", escape(bracketed))),
                object => dim(&format!("  [{}]", escape(object))),
            }
        )
    };
    for f in e.functions.iter().take(limit) {
        out.push_str(&row(f));
    }
    if e.functions.len() > limit {
        out.push_str(&dim(&format!("({} more rows in the JSON)\n", e.functions.len() - limit)));
    }
    out.push_str(&row(&e.total));
    out
}

/// The explanation's differential flame graph: both commands' stacks, coloured only by
/// the functions found slower (red) or faster (blue) beyond the threshold, listed in the
/// terminal's order. An explanation stored by an older perflab brings its own picture.
pub fn flame_graph(e: &Explanation) -> Option<String> {
    let Some(stacks) = &e.stacks else { return e.stored_flame_graph.clone() };
    let real: Vec<&FunctionChange> = e
        .functions
        .iter()
        .filter(|f| {
            matches!(f.verdict, Verdict::Slower | Verdict::Faster)
                && !f.below_threshold
                && !f.moves_with_layout()
                && f.name != OTHER_FUNCTIONS
        })
        .collect();
    let changes = real.iter().map(|f| (f.name.clone(), f.contribution.estimate)).collect();
    let listed: Vec<String> =
        real.iter().map(|f| format!("{} {:+.3} {}/run", f.name, f.contribution.estimate, e.unit)).collect();
    let subtitle = format!(
        "{} per run, widths the mean of both; red: slower, blue: faster, grey: no real change{}{}",
        e.unit,
        if listed.is_empty() { "" } else { " — " },
        listed.join(", ")
    );
    let measure = if e.unit == "ms" { "time" } else { e.unit.as_str() };
    let title = format!("Why {} differs from {}: each function's {measure} per run", e.candidate, e.baseline);
    super::profile::flame::explained_svg(&stacks.baseline, &stacks.candidate, changes, &title, &subtitle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_engine::analysis::explain::simulate::{Scenario, Simulation};
    use perflab_engine::analysis::explain::{explain, Options};

    /// Issue 39: a row without an interval says why, and `[other functions]` says what
    /// it is made of.
    #[test]
    fn rows_without_an_interval_say_why_and_other_functions_are_named() {
        let options = Options { confidence: 0.95, comparison_level: 0.95, threshold: 0.01 };
        let (base, cand) = Simulation::new(Scenario::small_doubles(), 7).commands(1);
        let single = explain(&base, &cand, metric::CPU, &options).unwrap();
        let table_of_one = table(&single, 40);
        assert!(
            table_of_one.contains("(no interval: one round: no interval from a single pair of runs"),
            "{table_of_one}"
        );
        let (base, cand) = Simulation::new(Scenario::small_doubles(), 7).commands(3);
        let e = explain(&base, &cand, metric::CPU, &options).unwrap();
        let table = table(&e, 40);
        let other = table.lines().find(|l| l.contains("[other functions]")).unwrap();
        let first = &e.other_members[0];
        assert!(
            other.contains(&format!(
                "(largest changes: {} {:.0} → {:.0}",
                first.name, first.baseline_samples, first.candidate_samples
            )) && other.contains("samples in 3 rounds)"),
            "{other}"
        );
    }

    #[test]
    fn the_story_names_the_changed_functions_with_their_signs() {
        let (base, cand) = Simulation::new(Scenario::opposite_changes(), 11).commands(40);
        let options = Options { confidence: 0.95, comparison_level: 0.95, threshold: 0.01 };
        let e = explain(&base, &cand, metric::CPU, &options).unwrap();
        let comparison = Comparison::example_slower("A", "B");
        let story = story(&comparison, &e);
        assert!(story.starts_with("B is 2.5 % [2.1, 2.9] slower: f_up +"), "{story}");
        assert!(story.contains("ms/run; f_down −") && story.contains("saves"), "{story}");
        assert!(story.contains("no other function changed beyond ±"), "{story}");
        let table = table(&e, 10);
        assert!(table.contains("f_hot") && table.contains("[total]"), "{table}");
    }

    /// Issue #39: `--explain-alloc` (bytes, the default) headed its table "calls of": the
    /// rows are bytes requested; the per-run count is of calls.
    #[test]
    fn an_allocation_explanation_names_what_its_rows_weigh() {
        crate::color::init("never");
        let mut e = perflab_engine::fixtures::example_explanation();
        e.method = "sampled".into();
        for (event, head, per_run) in [
            ("alloc-bytes", "bytes requested per call site of `", "alloc-bytes, allocating calls per run"),
            ("alloc-calls", "allocating calls per call site of `", "alloc-calls, allocating calls per run"),
            ("live-bytes", "bytes live at exit per call site of `", "live-bytes, blocks live at exit per run"),
        ] {
            e.event = event.into();
            let table = table(&e, 10);
            let first = table.lines().next().unwrap();
            assert!(first.starts_with(head) && first.contains(per_run), "{first}");
            assert!(!first.starts_with("calls of"), "{first}");
        }
    }

    /// Issue #28: "idx is 14 % [−48, −11] faster" mixed signs in one phrase; the interval
    /// reads in the verdict's direction, as sizes of the speed-up.
    #[test]
    fn a_faster_headline_has_one_sign() {
        let c = Comparison {
            ratio: 0.86,
            ci_low: 0.52,
            ci_high: 0.89,
            verdict: Verdict::Faster,
            ..Comparison::example_slower("seq", "idx")
        };
        assert_eq!(headline(&c), "idx is 14 % [11, 48] faster");
        assert_eq!(headline(&Comparison::example_slower("A", "B")), "B is 2.5 % [2.1, 2.9] slower");
    }

    /// A row real for these binaries but not across layouts leaves the list of changes
    /// and is said as moving with layout, in the story and its table row.
    #[test]
    fn a_function_moving_with_layout_is_said_as_such() {
        let mut e = perflab_engine::fixtures::example_explanation();
        let up = e.functions.iter_mut().find(|f| f.name == "f_up").expect("f_up changed");
        up.across_layouts = Some(perflab_model::AcrossLayouts {
            ratio: 1.02,
            ci_low: Some(0.95),
            ci_high: Some(1.09),
            spread: 0.031,
            layouts: (8, 8),
            verdict: Verdict::Inconclusive,
        });
        let story = story(&Comparison::example_slower("A", "B"), &e);
        assert!(story.contains("f_up +") && story.contains("moves with layout, not with the change"), "{story}");
        assert!(story.contains("differ by ±3.1 %") && !story.contains("f_up +30 % ["), "{story}");
        let table = table(&e, 10);
        assert!(table.contains("across layouts 1.020 [0.950, 1.090], layouts ±3.1 %: moves with layout"), "{table}");
    }

    #[test]
    fn the_flame_graph_is_drawn_from_the_stored_stacks() {
        let mut e = perflab_engine::fixtures::example_explanation();
        assert_eq!(flame_graph(&e), None, "no stacks, no picture");
        let stacks = |leaf: f64| [("main;work".to_string(), leaf), ("main".to_string(), 1.0)].into_iter().collect();
        e.stacks = Some(perflab_model::MeanStacks { baseline: stacks(10.0), candidate: stacks(30.0) });
        let svg = flame_graph(&e).expect("a picture");
        assert!(svg.starts_with("<svg") && svg.contains("work") && svg.contains("Why "), "{svg}");
        // Stored as data: the explanation's JSON has the stacks, not markup.
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains("main;work") && !json.contains("<svg"), "{json}");
    }
}
