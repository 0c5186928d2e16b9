//! Count-vs-time cross-check: flags comparisons where the instruction count and the time
//! disagree — a count change the clock does not see, or a time change with the same
//! instructions (layout, alignment or cache effects).

use perflab_model::{metric, Comparison, Verdict};

/// The metric compared against time (perf's event and instruction mode share the name).
pub const INSTRUCTIONS: &str = "instructions";

/// Prefix of every flag this check adds, so JSON consumers can find them.
pub(crate) const FLAG_PREFIX: &str = "count-vs-time:";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Movement {
    /// A decided change beyond the threshold: `slower`/`faster` and not below it.
    Changed(f64),
    /// `equivalent`: no change beyond ±threshold.
    Unchanged,
    /// Inconclusive, or a change below the threshold: no claim either way.
    Unclear,
}

fn movement(c: &Comparison) -> Movement {
    match c.verdict {
        Verdict::Slower | Verdict::Faster if !c.below_threshold => Movement::Changed(c.ratio),
        Verdict::Equivalent => Movement::Unchanged,
        _ => Movement::Unclear,
    }
}

fn percent(ratio: f64) -> String {
    format!("{:+.1} %", (ratio - 1.0) * 100.0)
}

/// For every candidate with both a wall-time and an instruction-count comparison, add a
/// flag to both when they disagree. Idempotent.
pub(crate) fn cross_check(comparisons: &mut [Comparison]) {
    let pairs: Vec<(usize, usize)> = comparisons
        .iter()
        .enumerate()
        .filter(|(_, c)| c.metric == metric::WALL)
        .filter_map(|(t, time)| {
            comparisons
                .iter()
                .position(|c| c.metric == INSTRUCTIONS && c.baseline == time.baseline && c.candidate == time.candidate)
                .map(|i| (t, i))
        })
        .collect();
    for (t, i) in pairs {
        let flag = match (movement(&comparisons[t]), movement(&comparisons[i])) {
            (Movement::Unchanged, Movement::Changed(r)) => format!(
                "{FLAG_PREFIX} instructions changed ({}) but time did not: the extra work is off the critical path, \
                 or time is limited by something else (memory, I/O)",
                percent(r)
            ),
            (Movement::Changed(r), Movement::Unchanged) => format!(
                "{FLAG_PREFIX} time changed ({}) but instructions did not: a layout or cache effect?",
                percent(r)
            ),
            (Movement::Changed(time), Movement::Changed(count)) if (time > 1.0) != (count > 1.0) => format!(
                "{FLAG_PREFIX} time ({}) and instructions ({}) moved in opposite directions",
                percent(time),
                percent(count)
            ),
            _ => continue,
        };
        for index in [t, i] {
            if !comparisons[index].flags.contains(&flag) {
                comparisons[index].flags.push(flag.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(metric: &str, candidate: &str, ratio: f64, verdict: Verdict) -> Comparison {
        Comparison {
            baseline: "A".into(),
            candidate: candidate.into(),
            metric: metric.into(),
            better: Default::default(),
            ratio,
            ci_low: ratio * 0.99,
            ci_high: ratio * 1.01,
            confidence: 0.95,
            look_confidence: 0.95,
            p_value: 0.01,
            verdict,
            below_threshold: false,
            n: 10,
            flags: Vec::new(),
            explanation: None,
        }
    }

    #[test]
    fn instructions_changed_but_time_did_not() {
        let mut cs = vec![
            comparison("wall_s", "B", 1.001, Verdict::Equivalent),
            comparison("instructions", "B", 1.05, Verdict::Slower),
        ];
        cross_check(&mut cs);
        assert_eq!(cs[0].flags, cs[1].flags);
        assert!(cs[0].flags[0].contains("instructions changed (+5.0 %) but time did not"), "{:?}", cs[0].flags);
        cross_check(&mut cs);
        assert_eq!(cs[0].flags.len(), 1, "idempotent");
    }

    #[test]
    fn time_changed_but_instructions_did_not() {
        let mut cs = vec![
            comparison("instructions", "B", 1.0, Verdict::Equivalent),
            comparison("wall_s", "B", 0.9, Verdict::Faster),
        ];
        cross_check(&mut cs);
        assert!(cs[1].flags[0].contains("time changed (-10.0 %) but instructions did not: a layout or cache effect?"));
    }

    #[test]
    fn opposite_directions_are_flagged_and_agreement_is_not() {
        let mut cs = vec![
            comparison("wall_s", "B", 1.1, Verdict::Slower),
            comparison("instructions", "B", 0.9, Verdict::Faster),
            comparison("wall_s", "C", 1.1, Verdict::Slower),
            comparison("instructions", "C", 1.2, Verdict::Slower),
        ];
        cross_check(&mut cs);
        assert!(cs[0].flags[0].contains("opposite directions"));
        assert!(cs[2].flags.is_empty() && cs[3].flags.is_empty());
    }

    #[test]
    fn unclear_verdicts_and_below_threshold_changes_are_not_flagged() {
        let mut below = comparison("instructions", "B", 1.004, Verdict::Slower);
        below.below_threshold = true;
        let mut cs = vec![comparison("wall_s", "B", 1.0, Verdict::Equivalent), below];
        cross_check(&mut cs);
        assert!(cs.iter().all(|c| c.flags.is_empty()));
        let mut cs = vec![
            comparison("wall_s", "B", 1.2, Verdict::Inconclusive),
            comparison("instructions", "B", 1.0, Verdict::Equivalent),
        ];
        cross_check(&mut cs);
        assert!(cs.iter().all(|c| c.flags.is_empty()));
    }
}
