//! The one-line verdict a user reads for a comparison, worded in its metric's direction.

use perflab_model::metric::{self, Better};
use perflab_model::units::{format_level, format_percent};
use perflab_model::{Comparison, Verdict};

/// The one-line verdict a user reads, e.g.
/// `B is 2.1 % slower than A [1.6 %, 2.5 %], 95 % CI, 24 rounds` for a time, or
/// `B has 4.1 % more tps than A (better) [2.0 %, 6.3 %], 95 % CI, 9 rounds` for any
/// other metric, worded in its direction.
pub fn sentence(c: &Comparison, threshold: f64, rounds: u32) -> String {
    let pct = |x: f64| format_percent(x * 100.0);
    if c.n == 1 && !c.ci_high.is_finite() {
        return one_run_sentence(c);
    }
    let tail = format!("{} % CI, {} rounds", format_level(c.confidence), rounds);
    let time = metric::info(&c.metric).is_time() && c.better == Better::Lower;
    let metric = if c.metric == metric::WALL { String::new() } else { format!(" in {}", c.metric) };
    let times = |x: f64| format!("{x:.2}×");
    let below = if c.below_threshold { format!(" (below the {} % threshold)", pct(threshold)) } else { String::new() };
    let judgement = if c.verdict == Verdict::Faster { "better" } else { "worse" };
    match c.verdict {
        Verdict::Slower | Verdict::Faster if !time => {
            let (a, b) = (&c.candidate, &c.baseline);
            let m = &c.metric;
            if c.ratio >= 2.0 || c.ratio <= 0.5 {
                format!(
                    "{a} has {} the {m} of {b} ({judgement}) [{}, {}], {tail}{below}",
                    times(c.ratio),
                    times(c.ci_low),
                    times(c.ci_high)
                )
            } else if c.ratio > 1.0 {
                let (lo, hi) = (pct(c.ci_low - 1.0), pct(c.ci_high - 1.0));
                format!(
                    "{a} has {} % more {m} than {b} ({judgement}) [{lo} %, {hi} %], {tail}{below}",
                    pct(c.ratio - 1.0)
                )
            } else {
                let (lo, hi) = (pct(1.0 - c.ci_high), pct(1.0 - c.ci_low));
                format!(
                    "{a} has {} % less {m} than {b} ({judgement}) [{lo} %, {hi} %], {tail}{below}",
                    pct(1.0 - c.ratio)
                )
            }
        }
        // Large effects read better as factors: "9.28× slower" rather than "828 % slower".
        Verdict::Slower if c.ratio >= 2.0 => format!(
            "{} is {} slower than {}{} [{}, {}], {}",
            c.candidate,
            times(c.ratio),
            c.baseline,
            metric,
            times(c.ci_low),
            times(c.ci_high),
            tail
        ),
        Verdict::Faster if c.ratio <= 0.5 => format!(
            "{} is {} faster than {}{} [{}, {}], {}",
            c.candidate,
            times(1.0 / c.ratio),
            c.baseline,
            metric,
            times(1.0 / c.ci_high),
            times(1.0 / c.ci_low),
            tail
        ),
        Verdict::Slower => format!(
            "{} is {} % slower than {}{} [{} %, {} %], {}{below}",
            c.candidate,
            pct(c.ratio - 1.0),
            c.baseline,
            metric,
            pct(c.ci_low - 1.0),
            pct(c.ci_high - 1.0),
            tail
        ),
        Verdict::Faster => format!(
            "{} is {} % faster than {}{} [{} %, {} %], {}{below}",
            c.candidate,
            pct(1.0 - c.ratio),
            c.baseline,
            metric,
            pct(1.0 - c.ci_high),
            pct(1.0 - c.ci_low),
            tail
        ),
        Verdict::Equivalent => format!(
            "{} is equivalent to {}{} within ±{} %: ratio {:.4} [{:.4}, {:.4}], {}",
            c.candidate,
            c.baseline,
            metric,
            pct(threshold),
            c.ratio,
            c.ci_low,
            c.ci_high,
            tail
        ),
        Verdict::Inconclusive if c.ci_high.is_finite() => format!(
            "{} vs {}{} is inconclusive: ratio {:.4} [{:.4}, {:.4}], {}",
            c.candidate, c.baseline, metric, c.ratio, c.ci_low, c.ci_high, tail
        ),
        Verdict::NotComparable => format!(
            "{} vs {}{} is not comparable: {}",
            c.candidate,
            c.baseline,
            metric,
            c.flags.first().map_or("no ratio", String::as_str)
        ),
        Verdict::Inconclusive => format!(
            "{} vs {}{} is inconclusive: ratio {:.4}, too few rounds ({}) for a {} % interval",
            c.candidate,
            c.baseline,
            metric,
            c.ratio,
            rounds,
            format_level(c.confidence)
        ),
    }
}

/// A comparison of one run each: the ratio, and that there is no interval.
fn one_run_sentence(c: &Comparison) -> String {
    let metric = if c.metric == metric::WALL { String::new() } else { format!(" in {}", c.metric) };
    let change = if !c.ratio.is_finite() {
        format!("{} vs {}{}: no ratio (the baseline's value is 0)", c.candidate, c.baseline, metric)
    } else if c.ratio >= 1.0 {
        format!("{} is {} % above {}{}", c.candidate, format_percent((c.ratio - 1.0) * 100.0), c.baseline, metric)
    } else {
        format!("{} is {} % below {}{}", c.candidate, format_percent((1.0 - c.ratio) * 100.0), c.baseline, metric)
    };
    let how = if c.verdict.is_decided() {
        format!("{}: one run each, so no interval (the counts are exact)", c.verdict.as_str())
    } else {
        "one run each: no interval and no verdict (--rounds 6 or more gives both)".to_string()
    };
    format!("{change} — {how}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_engine::analysis::verdict::*;
    use perflab_model::{CommandResult, Run, Settings};

    fn result(name: &str, walls: &[f64]) -> CommandResult {
        CommandResult {
            name: name.into(),
            argv: vec![],
            command_line: name.into(),
            parameters: Default::default(),
            runs: walls
                .iter()
                .enumerate()
                .map(|(i, w)| Run { round: i as u32, wall_s: *w, ..Default::default() })
                .collect(),
            summary: Default::default(),
        }
    }

    fn settings() -> Settings {
        Settings::default()
    }

    fn counts(name: &str, values: &[f64]) -> CommandResult {
        let mut r = result(name, &[]);
        r.runs = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut run = Run { round: i as u32, wall_s: 1.0, ..Default::default() };
                run.counters.insert("context-switches".into(), perflab_model::CounterReading::value(*v, false));
                run
            })
            .collect();
        r
    }

    #[test]
    fn more_of_a_higher_is_better_metric_is_faster() {
        let higher = Better::Higher;
        assert_eq!(classify(1.02, 1.03, 0.01, higher), (Verdict::Faster, false));
        assert_eq!(classify(0.95, 0.97, 0.01, higher), (Verdict::Slower, false));
        assert_eq!(classify(0.995, 1.004, 0.01, higher), (Verdict::Equivalent, false));
        // The registry knows tps; the settings can turn any metric around.
        let tps = |values: &[f64]| {
            let mut r = result("x", &[]);
            r.runs = values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let mut run = Run { round: i as u32, ..Default::default() };
                    run.counters.insert("tps".into(), perflab_model::CounterReading::value(*v, false));
                    run
                })
                .collect();
            r
        };
        let base: Vec<f64> = (0..12).map(|i| 1000.0 + (i * 7 % 5) as f64).collect();
        let more: Vec<f64> = base.iter().map(|b| b * 1.2).collect();
        let c = compare(&tps(&base), &tps(&more), "tps", 0.95, &settings());
        assert_eq!((c.verdict, c.better), (Verdict::Faster, Better::Higher));
        assert!(c.ratio > 1.15);
        let text = sentence(&c, 0.01, 12);
        assert!(text.starts_with("x has 20.0 % more tps than x (better) ["), "{text}");
        let mut turned = settings();
        turned.better.insert("tps".into(), Better::Lower);
        assert_eq!(compare(&tps(&base), &tps(&more), "tps", 0.95, &turned).verdict, Verdict::Slower);
    }

    #[test]
    fn a_tenfold_difference_is_slower_with_the_right_ratio() {
        let base: Vec<f64> = (0..12).map(|i| 0.010 * (1.0 + 0.01 * ((i * 7 % 5) as f64))).collect();
        let cand: Vec<f64> =
            base.iter().enumerate().map(|(i, b)| b * 10.0 * (1.0 + 0.005 * ((i % 3) as f64 - 1.0))).collect();
        let c = compare(&result("A", &base), &result("B", &cand), "wall_s", 0.95, &settings());
        assert_eq!(c.verdict, Verdict::Slower);
        assert!((c.ratio - 10.0).abs() < 0.06, "{}", c.ratio);
        assert!(c.ci_low <= c.ratio && c.ratio <= c.ci_high);
        let text = sentence(&c, 0.01, 12);
        assert!(text.starts_with("B is ") && text.contains("× slower than A ["), "{text}");
    }

    #[test]
    fn one_run_each_has_no_interval_and_times_no_verdict() {
        let c = compare(&result("A", &[100.0]), &result("B", &[135.4]), "wall_s", 0.95, &settings());
        assert_eq!((c.verdict, c.n, c.ci_low, c.ci_high), (Verdict::Inconclusive, 1, 0.0, f64::INFINITY));
        let text = sentence(&c, 0.01, 1);
        assert_eq!(
            text,
            "B is 35.4 % above A — one run each: no interval and no verdict (--rounds 6 or more gives both)"
        );
        assert!(!text.contains("CI"), "{text}");
        let instructions = Settings { mode: perflab_model::Mode::Instructions, ..settings() };
        let c = compare(&counts("A", &[100.0]), &counts("B", &[135.4]), "context-switches", 0.95, &instructions);
        assert_eq!(
            (c.verdict, c.ci_high, c.flags.as_slice()),
            (Verdict::Slower, f64::INFINITY, &[ONE_RUN_COUNTS.to_string()][..])
        );
        let text = sentence(&c, 0.01, 1);
        assert!(text.ends_with("slower: one run each, so no interval (the counts are exact)"), "{text}");
        assert!(!text.contains('['), "{text}");
    }

    #[test]
    fn too_few_rounds_is_inconclusive_not_a_guess() {
        let c = compare(&result("A", &[1.0, 1.1, 0.9]), &result("B", &[2.0, 2.3, 1.8]), "wall_s", 0.95, &settings());
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(sentence(&c, 0.01, 3).contains("too few rounds"));
    }

    #[test]
    fn a_metric_without_a_ratio_is_not_comparable_and_says_why() {
        let zero = result("A", &[0.0; 8]);
        let some = result("B", &[1.0, 1.1, 0.9, 1.0, 1.2, 1.1, 1.0, 0.9]);
        let c = compare(&zero, &some, "wall_s", 0.95, &settings());
        assert_eq!((c.verdict, c.n), (Verdict::NotComparable, 0));
        assert!(c.ratio.is_nan() && !c.verdict.is_decided());
        assert_eq!(c.flags, ["`A` has wall_s ≤ 0 in every round: a ratio needs positive values on both sides"]);
        assert!(sentence(&c, 0.01, 8).ends_with(
            "is not comparable: `A` has wall_s ≤ 0 in every round: a ratio needs positive values on both sides"
        ));
        let missing = compare(&some, &result("C", &[]), "wall_s", 0.95, &settings());
        assert_eq!(
            (missing.verdict, missing.flags[0].as_str()),
            (Verdict::NotComparable, "`C` has no value of wall_s")
        );
        // Some rounds ≤ 0: compared on the others, and the flag says how many were left out.
        let mut partly = some.clone();
        partly.runs[0].wall_s = -1.0;
        let c = compare(&partly, &some, "wall_s", 0.95, &settings());
        assert_eq!((c.verdict == Verdict::NotComparable, c.n), (false, 7));
        assert!(c.flags[0].starts_with("1 of 8 rounds skipped"), "{:?}", c.flags);
    }

    #[test]
    fn sentences_read_naturally() {
        let mut c = Comparison {
            baseline: "A".into(),
            candidate: "B".into(),
            metric: "wall_s".into(),
            better: Better::Lower,
            ratio: 1.021,
            ci_low: 1.016,
            ci_high: 1.025,
            confidence: 0.95,
            look_confidence: 0.99,
            p_value: 0.001,
            verdict: Verdict::Slower,
            below_threshold: false,
            n: 24,
            flags: vec![],
            explanation: None,
        };
        assert_eq!(sentence(&c, 0.01, 24), "B is 2.1 % slower than A [1.6 %, 2.5 %], 95 % CI, 24 rounds");
        c.verdict = Verdict::Faster;
        (c.ratio, c.ci_low, c.ci_high) = (0.97, 0.96, 0.98);
        assert_eq!(sentence(&c, 0.01, 24), "B is 3.0 % faster than A [2.0 %, 4.0 %], 95 % CI, 24 rounds");
        (c.ratio, c.ci_low, c.ci_high) = (0.25, 0.2, 0.5);
        assert_eq!(sentence(&c, 0.01, 24), "B is 4.00× faster than A [2.00×, 5.00×], 95 % CI, 24 rounds");
        c.metric = "instructions".into();
        c.verdict = Verdict::Slower;
        (c.ratio, c.ci_low, c.ci_high) = (1.05, 1.04, 1.06);
        assert_eq!(
            sentence(&c, 0.01, 24),
            "B has 5.0 % more instructions than A (worse) [4.0 %, 6.0 %], 95 % CI, 24 rounds"
        );
        (c.metric, c.better, c.verdict) = ("tps".into(), Better::Higher, Verdict::Slower);
        (c.ratio, c.ci_low, c.ci_high) = (0.959, 0.95, 0.97);
        assert_eq!(sentence(&c, 0.01, 24), "B has 4.1 % less tps than A (worse) [3.0 %, 5.0 %], 95 % CI, 24 rounds");
        (c.metric, c.verdict) = ("exec_ms".into(), Verdict::Faster);
        c.better = Better::Lower;
        assert_eq!(sentence(&c, 0.01, 24), "B is 4.1 % faster than A in exec_ms [3.0 %, 5.0 %], 95 % CI, 24 rounds");
    }
}
