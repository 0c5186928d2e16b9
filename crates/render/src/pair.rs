//! A pair's one record ([`perflab_store::history::pair`]) as text: the same digits, the
//! metric and the method wherever it is printed — `run`'s line, `history`, the builds ×
//! machines table and the report.

use perflab_model::units::{format_level, format_ratio};
use perflab_store::history::ratio::Ratio;

/// `1.195× [1.188×, 1.202×]` (the level named when it is not 95 %), or what stands
/// instead of an interval.
pub(crate) fn ratio_and_interval(r: &Ratio) -> String {
    let level = if (r.confidence - 0.95).abs() < 1e-9 {
        String::new()
    } else {
        format!(" ({} % CI)", format_level(r.confidence))
    };
    if r.ci_low.is_finite() && r.ci_high.is_finite() && r.ci_low > 0.0 {
        format!("{} [{}, {}]{level}", format_ratio(r.ratio), format_ratio(r.ci_low), format_ratio(r.ci_high))
    } else if r.n <= 1 {
        format!("{} (one run each: no interval)", format_ratio(r.ratio))
    } else {
        format!("{} (too few rounds for an interval)", format_ratio(r.ratio))
    }
}

/// What made the number: `uncontended_s, paired`.
pub fn method(r: &Ratio) -> String {
    format!("{}, {}", r.metric, r.method.short())
}

/// `1.195× [1.188×, 1.202×] slower (uncontended_s, paired)`.
pub fn describe(r: &Ratio) -> String {
    format!("{} {} ({})", ratio_and_interval(r), r.verdict.as_str(), method(r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_model::{Comparison, Verdict};
    use perflab_store::history::ratio;

    #[test]
    fn a_record_reads_the_same_with_its_metric_and_method() {
        let c = Comparison { metric: "uncontended_s".into(), ..Comparison::example_slower("v1", "v2") };
        let r = ratio::paired(&c, false);
        let text = describe(&r);
        assert!(text.ends_with(&format!("{} (uncontended_s, paired)", r.verdict.as_str())), "{text}");
        assert!(
            text.starts_with(&format!(
                "{} [{}, {}]",
                format_ratio(c.ratio),
                format_ratio(c.ci_low),
                format_ratio(c.ci_high)
            )),
            "{text}"
        );
        let open = Ratio { ci_high: f64::INFINITY, n: 3, verdict: Verdict::Inconclusive, ..r };
        assert!(ratio_and_interval(&open).ends_with("(too few rounds for an interval)"));
    }

    /// Issue #28, row 1: run printed ×1.236 (paired, wall_s), the report 1.247× (separate
    /// sessions, uncontended_s), history +24.3 % (wall_s). One pair now has one record —
    /// the session that paired them, on the metric it decided on — and every view prints
    /// it with the same digits, its metric and its method.
    #[test]
    fn one_pair_prints_one_answer_in_run_history_report_and_the_machine_table() {
        use perflab_model::{metric, CounterReading};
        use perflab_store::fixtures::{interleaved, stored};
        use perflab_store::history::pair::MetricChoice;
        use perflab_store::history::{build_with, matrix::matrix, Steps};
        use perflab_store::StoredExperiment;
        let with_uncontended = |mut e: StoredExperiment| {
            for run in e.experiment.commands.iter_mut().flat_map(|c| c.runs.iter_mut()) {
                run.counters.insert(metric::UNCONTENDED.into(), CounterReading::value(run.wall_s * 0.9, false));
            }
            e
        };
        // v1 alone, then v2 beside v1 in one session that decided on wall time; the store
        // as a whole decides on uncontended_s (another session was busy).
        let v1 = with_uncontended(stored("v1", 1, "hot", "h", &[1.0, 1.01, 1.02, 1.0, 1.01, 1.02, 1.0, 1.01]));
        let mut v2 = with_uncontended(interleaved("v2", 2, "hot", "v1"));
        v2.experiment.comparisons.push(Comparison {
            metric: metric::UNCONTENDED.into(),
            ratio: 1.19,
            ci_low: 1.17,
            ci_high: 1.21,
            ..v2.experiment.comparisons[0].clone()
        });
        let record = ratio::paired(&v2.experiment.comparisons[0], false);
        let expected = describe(&record);
        assert_eq!(expected, "1.2× [1.18×, 1.22×] slower (wall_s, paired)");
        let exps = [v1, v2];
        let choice = MetricChoice::Decided(metric::UNCONTENDED);

        let run = crate::suite::summary_line("hot", &exps[1].experiment);
        assert!(run.ends_with(&format!("v2 vs v1: {expected}")), "{run}");

        let history = build_with(&exps, choice, Steps::Compare);
        let step = history.machines[0].benchmarks[0].points[1].vs_previous.clone().unwrap();
        assert_eq!(step, record);
        let text = crate::history::render(&history, true, None);
        assert!(text.contains("1.2× [1.18×, 1.22×] wall_s, paired *"), "{text}");

        let selection = crate::report::load::Selection { metric: metric::UNCONTENDED.into(), ..Default::default() };
        let data = crate::report::load::build(&exps, &selection).unwrap();
        assert_eq!(data.pages[0].comparisons[0].rows[0].change, record);
        let html = crate::report::render_html(&data);
        assert!(
            html.contains("1.2× <tspan class=\"tick\">1.18× – 1.22× · paired, wall_s</tspan>"),
            "the method beside the number"
        );

        let refs: Vec<&StoredExperiment> = exps.iter().collect();
        assert_eq!(matrix(&refs, choice, "v1", "v2").rows[0].cells[0].as_ref(), Some(&record));
        // Asked for uncontended_s, every view answers with the session's uncontended_s record.
        let asked = build_with(&exps, MetricChoice::Asked(metric::UNCONTENDED), Steps::Compare);
        let step = asked.machines[0].benchmarks[0].points[1].vs_previous.clone().unwrap();
        assert_eq!(
            (step.metric.as_str(), step.ratio, step.method),
            (metric::UNCONTENDED, 1.19, ratio::CiMethod::Paired)
        );
    }
}
