//! The end of a suite run for a CI reader: the changed benchmarks first, then how many
//! are unchanged and which are undecided (with what each ruled out), the warnings grouped
//! by kind with the benchmarks they hit, once each — one model, rendered for the terminal
//! and as a Markdown pull-request comment (`run --markdown FILE`) with the same digits,
//! and the outcome a merge gate acts on (`run --gate`).

use super::dialect::{Dialect, Markdown};
use super::pair::{method, ratio_and_interval};
use super::terminal::{escape, learned_line};
use perflab_model::units::{format_level, format_percent};
use perflab_model::{Experiment, Verdict, WarningKind};
use perflab_store::history::ratio::{paired, Ratio};
use perflab_suite::budget::BudgetUse;
use perflab_suite::family::Family;

/// One compared benchmark's record, as the run's line printed it.
#[derive(Debug, Clone)]
pub struct Row {
    /// The benchmark's name.
    pub benchmark: String,
    /// The pair's record on the metric that decided (as `run`'s line, `history` and the
    /// report print it).
    pub record: Ratio,
    /// The benchmark's equivalence margin (a fraction).
    pub threshold: f64,
    /// For an undecided benchmark: what it ruled out (`learned: no change beyond …`).
    pub learned: Option<String>,
}

impl Row {
    /// A regression a gate should stop: `slower`, and the change may exceed the margin
    /// (a `slower` whose whole interval is within 1 + threshold is a real but small change).
    pub fn is_regression(&self) -> bool {
        self.record.verdict == Verdict::Slower && !self.within_threshold()
    }

    /// The whole interval lies within ±threshold of 1 (for a `slower`/`faster`: a real
    /// change, but smaller than the margin).
    fn within_threshold(&self) -> bool {
        self.record.ci_low >= 1.0 - self.threshold && self.record.ci_high <= 1.0 + self.threshold
    }

    fn verdict_text(&self) -> String {
        let v = self.record.verdict.as_str();
        let small = matches!(self.record.verdict, Verdict::Slower | Verdict::Faster) && self.within_threshold();
        if small {
            format!("{v} (below ±{} %)", format_percent(self.threshold * 100.0))
        } else {
            v.to_string()
        }
    }
}

/// A kind of warning and every benchmark it hit.
#[derive(Debug, Clone)]
pub struct WarningGroup {
    /// The kind, as the JSON names it (`busy`, `short_run`, …).
    pub kind: &'static str,
    /// The first such warning, in full (the others differ in their figures).
    pub example: String,
    /// The benchmarks it hit, in run order, once each.
    pub benchmarks: Vec<String>,
}

/// What a suite run ended with.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// The label measured and the baseline build it was compared with.
    pub label: String,
    /// The baseline build's name, when one was given.
    pub baseline: Option<String>,
    /// How the compared benchmarks shared the run's confidence.
    pub family: Option<Family>,
    /// `slower` and `faster`, slower first (largest change first within each).
    pub changed: Vec<Row>,
    /// `equivalent`.
    pub unchanged: Vec<Row>,
    /// `inconclusive` or `not_comparable`.
    pub undecided: Vec<Row>,
    /// Benchmarks measured without a comparison (no `{build}` in their command, or no baseline).
    pub measured_only: Vec<String>,
    /// Benchmarks that failed, with why.
    pub failed: Vec<(String, String)>,
    /// Warnings by kind, in the order they first appeared.
    pub warnings: Vec<WarningGroup>,
    /// `run --budget`: how the one deadline was used.
    pub budget: Option<BudgetUse>,
}

/// What a merge gate acts on (`run --gate`): the worst outcome of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every compared benchmark decided, none slower beyond its margin.
    Clean,
    /// At least one benchmark is `slower` beyond its margin.
    Regression,
    /// No regression, but at least one compared benchmark ended undecided.
    Undecided,
}

/// A warning kind as the JSON names it.
pub fn kind_name(kind: WarningKind) -> &'static str {
    match kind {
        WarningKind::ShortRun => "short_run",
        WarningKind::Unstable => "unstable",
        WarningKind::Noisy => "noisy",
        WarningKind::Busy => "busy",
        WarningKind::NotComparable => "not_comparable",
        WarningKind::Failures => "failures",
        WarningKind::Scope => "scope",
        WarningKind::Import => "import",
        WarningKind::Unsupported => "unsupported",
        WarningKind::SeparateCopies => "separate_copies",
        WarningKind::Other => "other",
    }
}

impl Summary {
    /// An empty summary of `label` against `baseline`.
    pub fn new(label: &str, baseline: Option<&str>, family: Option<Family>) -> Summary {
        Summary { label: label.into(), baseline: baseline.map(Into::into), family, ..Summary::default() }
    }

    /// Add a measured benchmark (in run order).
    pub fn add(&mut self, benchmark: &str, experiment: &Experiment) {
        for warning in &experiment.warnings {
            let kind = kind_name(warning.kind);
            match self.warnings.iter_mut().find(|g| g.kind == kind) {
                Some(group) if group.benchmarks.iter().any(|b| b == benchmark) => {}
                Some(group) => group.benchmarks.push(benchmark.into()),
                None => self.warnings.push(WarningGroup {
                    kind,
                    example: warning.message.clone(),
                    benchmarks: vec![benchmark.into()],
                }),
            }
        }
        let primary = experiment.primary_metric.as_str();
        let Some(c) = experiment.comparisons.iter().find(|c| c.metric == primary) else {
            self.measured_only.push(benchmark.into());
            return;
        };
        let threshold = experiment.settings.threshold;
        let learned = experiment
            .learned
            .iter()
            .find(|l| l.metric == primary && l.candidate == c.candidate)
            .map(|l| learned_line(l, threshold));
        let row = Row { benchmark: benchmark.into(), record: paired(c, false), threshold, learned };
        match row.record.verdict {
            Verdict::Slower | Verdict::Faster => {
                self.changed.push(row);
                // Slower first, then by the size of the change, largest first.
                self.changed.sort_by(|a, b| {
                    let order = |r: &Row| (r.record.verdict != Verdict::Slower, -(r.record.ratio.ln().abs()));
                    order(a).partial_cmp(&order(b)).unwrap_or(std::cmp::Ordering::Equal)
                });
            }
            Verdict::Equivalent => self.unchanged.push(row),
            Verdict::Inconclusive | Verdict::NotComparable => self.undecided.push(row),
        }
    }

    /// Add a benchmark that failed before or while it was measured.
    pub fn add_failed(&mut self, benchmark: &str, why: &str) {
        self.failed.push((benchmark.into(), why.into()));
    }

    /// The gate's reading: a regression beats undecided beats clean.
    pub fn outcome(&self) -> Outcome {
        if self.changed.iter().any(Row::is_regression) {
            Outcome::Regression
        } else if !self.undecided.is_empty() {
            Outcome::Undecided
        } else {
            Outcome::Clean
        }
    }

    fn compared(&self) -> usize {
        self.changed.len() + self.unchanged.len() + self.undecided.len()
    }

    /// `1 slower, 1 faster, 17 unchanged, 1 undecided` (zero counts left out).
    pub fn counts(&self) -> String {
        let slower = self.changed.iter().filter(|r| r.record.verdict == Verdict::Slower).count();
        let faster = self.changed.len() - slower;
        let parts = [
            (slower, "slower"),
            (faster, "faster"),
            (self.unchanged.len(), "unchanged"),
            (self.undecided.len(), "undecided"),
            (self.failed.len(), "failed"),
            (self.measured_only.len(), "measured without a baseline"),
        ];
        let text: Vec<String> = parts.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect();
        if text.is_empty() {
            "nothing measured".into()
        } else {
            text.join(", ")
        }
    }

    /// What the levels mean: the family's promise, or each benchmark's own level.
    fn promise(&self) -> Option<String> {
        let family = self.family?;
        Some(if family.size > 1 && family.per_benchmark > family.confidence {
            format!(
                "all {} verdicts hold together at {} % (each interval at {} %)",
                family.size,
                format_level(family.confidence),
                format_level(family.per_benchmark)
            )
        } else if family.size > 1 {
            format!(
                "each interval at {} % on its own (--per-benchmark): a false alarm somewhere is likelier than {} %",
                format_level(family.per_benchmark),
                format_level(1.0 - family.confidence)
            )
        } else {
            format!("its interval at {} %", format_level(family.per_benchmark))
        })
    }

    /// The margin every unchanged benchmark shares, or None when they differ.
    fn common_threshold(&self) -> Option<f64> {
        let first = self.unchanged.first()?.threshold;
        self.unchanged.iter().all(|r| (r.threshold - first).abs() < 1e-12).then_some(first)
    }

    fn unchanged_text(&self) -> String {
        match self.common_threshold() {
            Some(t) => format!("no change beyond ±{} %", format_percent(t * 100.0)),
            None => "no change beyond each one's margin".into(),
        }
    }

    fn against(&self) -> String {
        match &self.baseline {
            Some(b) => format!("`{}` against `{}`", self.label, b),
            None => format!("`{}`", self.label),
        }
    }

    /// The summary for the terminal, after the benchmarks' own lines.
    pub fn terminal(&self) -> String {
        let mut out = format!("summary: {}: {}", escape(&self.against()), self.counts());
        if let Some(promise) = self.promise().filter(|_| self.compared() > 0) {
            out += &format!("; {promise}");
        }
        out.push('\n');
        if let Some(used) = &self.budget {
            out += &format!("  {}\n", super::suite::budget_used(used));
        }
        if !self.changed.is_empty() {
            // The counts are in the first line: every number here is one the comment has too.
            out += "  changed:\n";
            for r in &self.changed {
                out += &format!(
                    "    {:<24} {} {} ({}, {} rounds)\n",
                    escape(&r.benchmark),
                    ratio_and_interval(&r.record),
                    r.verdict_text(),
                    method(&r.record),
                    r.record.n
                );
            }
        }
        if !self.unchanged.is_empty() {
            out += &format!("  unchanged: {} ({})\n", self.unchanged.len(), self.unchanged_text());
        }
        if !self.undecided.is_empty() {
            out += "  undecided:\n";
            for r in &self.undecided {
                out += &format!(
                    "    {:<24} {} {} ({}, {} rounds){}\n",
                    escape(&r.benchmark),
                    ratio_and_interval(&r.record),
                    r.record.verdict.as_str(),
                    method(&r.record),
                    r.record.n,
                    r.learned.as_ref().map(|l| format!("; {}", escape(l))).unwrap_or_default()
                );
            }
        }
        for (bench, why) in &self.failed {
            out += &format!("  failed: {}: {}\n", escape(bench), escape(why));
        }
        if !self.warnings.is_empty() {
            out += &format!("  warnings ({}):\n", kinds(self.warnings.len()));
            for g in &self.warnings {
                out += &format!(
                    "    {} ({}: {}), e.g. {}\n",
                    g.kind,
                    g.benchmarks.len(),
                    g.benchmarks.iter().map(|b| escape(b).to_string()).collect::<Vec<_>>().join(", "),
                    escape(&g.example)
                );
            }
        }
        out
    }

    /// The summary as a Markdown pull-request comment: the same records and digits as
    /// [`Summary::terminal`].
    pub fn markdown(&self) -> String {
        let md = |text: &str| Markdown.escape(text);
        let code = |text: &str| format!("`{}`", text.replace('`', "'"));
        let mut out = format!(
            "### perflab: {}: {}\n\n",
            match &self.baseline {
                Some(b) => format!("{} against {}", code(&self.label), code(b)),
                None => code(&self.label),
            },
            self.counts()
        );
        if let Some(promise) = self.promise().filter(|_| self.compared() > 0) {
            out += &format!("{}.\n\n", capitalised(&promise));
        }
        if let Some(used) = &self.budget {
            out += &format!("{}.\n\n", capitalised(&md(&super::suite::budget_used(used))));
        }
        if !self.changed.is_empty() || !self.undecided.is_empty() {
            let mut rows = Vec::new();
            for r in self.changed.iter().chain(&self.undecided) {
                let verdict = if r.record.verdict.is_decided() {
                    format!("**{}**", r.verdict_text())
                } else {
                    r.record.verdict.as_str().to_string()
                };
                rows.push(vec![
                    md(&r.benchmark),
                    verdict,
                    md(&ratio_and_interval(&r.record)),
                    md(&format!("{}, {} rounds", method(&r.record), r.record.n)),
                ]);
            }
            out += &Markdown.table(
                &["benchmark", "verdict", "ratio [interval]", "metric, rounds"].map(String::from),
                &[false, false, false, false],
                &rows,
            );
            out.push('\n');
        }
        if !self.unchanged.is_empty() {
            out += &format!("**{} unchanged** ({}).\n\n", self.unchanged.len(), self.unchanged_text());
        }
        for r in self.undecided.iter().filter(|r| r.learned.is_some()) {
            out += &format!("- {}: {}\n", md(&r.benchmark), md(r.learned.as_deref().unwrap_or_default()));
        }
        if self.undecided.iter().any(|r| r.learned.is_some()) {
            out.push('\n');
        }
        for (bench, why) in &self.failed {
            out += &format!("- **failed** {}: {}\n", md(bench), md(why));
        }
        if !self.failed.is_empty() {
            out.push('\n');
        }
        if !self.warnings.is_empty() {
            out += &format!("<details><summary>Warnings ({})</summary>\n\n", kinds(self.warnings.len()));
            for g in &self.warnings {
                out += &format!(
                    "- {} ({}: {}), e.g. {}\n",
                    g.kind,
                    g.benchmarks.len(),
                    g.benchmarks.iter().map(|b| md(b)).collect::<Vec<_>>().join(", "),
                    md(&g.example)
                );
            }
            out += "\n</details>\n";
        }
        out
    }
}

/// `1 kind`, `3 kinds`.
fn kinds(n: usize) -> String {
    if n == 1 {
        "1 kind".into()
    } else {
        format!("{n} kinds")
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_engine::executor::simulated::{Noise, Simulated};
    use perflab_engine::experiment::{run_experiment, Quiet};
    use perflab_engine::measure::MeasureOptions;
    use perflab_engine::plan::{Compared, Plan};
    use perflab_model::{metric, CommandSpec, Settings, Warning};

    /// A benchmark's experiment on the simulated machine: base and pr, pr `ratio` times
    /// base's time, paired noise `sigma`, at most `max_rounds`, at the level `confidence`.
    fn measured(seed: u64, ratio: f64, sigma: f64, max_rounds: u32, confidence: f64) -> Experiment {
        let plan = Plan::new(
            vec![CommandSpec::bare("base"), CommandSpec::bare("pr")],
            Settings { seed, max_rounds, confidence, ..Settings::default() },
            MeasureOptions::default(),
            Compared::fixed(vec![metric::WALL.into()]),
        );
        let mut machine = Simulated::new(seed, vec![0.02, 0.02 * ratio], Noise::gaussian(sigma));
        run_experiment(&plan, &mut machine, &mut Quiet).expect("the simulated machine runs")
    }

    /// A suite of five as `run` would see it: one of each kind of ending, warnings on two.
    fn suite() -> Summary {
        let family = Family::new(5, 0.95);
        let level = family.per_benchmark;
        let mut summary = Summary::new("pr", Some("main"), Some(family));
        let mut busy = measured(1, 1.0, 0.002, 10_000, level);
        busy.warnings.push(Warning::new(WarningKind::Busy, "the machine was busy: 12 % of wall time waiting"));
        busy.warnings.push(Warning::new(WarningKind::Busy, "a second busy warning of the same benchmark"));
        let mut short = measured(2, 1.03, 0.002, 10_000, level);
        short.warnings.push(Warning::new(WarningKind::Busy, "the machine was busy: 30 % of wall time waiting"));
        short.warnings.push(Warning::new(WarningKind::ShortRun, "runs under 5 ms"));
        summary.add("same", &busy);
        summary.add("slightly", &short);
        summary.add("fast", &measured(3, 0.9, 0.002, 10_000, level));
        summary.add("undecided", &measured(4, 1.0, 0.08, 8, level));
        summary.add("slow", &measured(5, 1.1, 0.002, 10_000, level));
        summary
    }

    #[test]
    fn changed_come_first_slower_before_faster_then_unchanged_and_undecided() {
        let s = suite();
        let order: Vec<(&str, Verdict)> = s.changed.iter().map(|r| (r.benchmark.as_str(), r.record.verdict)).collect();
        assert_eq!(
            order,
            [("slow", Verdict::Slower), ("slightly", Verdict::Slower), ("fast", Verdict::Faster)],
            "slower first, larger change first"
        );
        assert_eq!(s.unchanged.iter().map(|r| r.benchmark.as_str()).collect::<Vec<_>>(), ["same"]);
        assert_eq!(s.undecided.iter().map(|r| r.benchmark.as_str()).collect::<Vec<_>>(), ["undecided"]);
        assert_eq!(s.counts(), "2 slower, 1 faster, 1 unchanged, 1 undecided");
        let text = s.terminal();
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} missing in\n{text}"));
        assert!(at("changed:") < at("unchanged: 1 (no change beyond ±1.0 %)"), "{text}");
        assert!(at("unchanged: 1") < at("undecided:") && at("undecided:") < at("warnings (2 kinds)"), "{text}");
        assert!(text.contains("all 5 verdicts hold together at 95 % (each interval at 99 %)"), "{text}");
        // What the undecided one ruled out is said with it.
        assert!(text.contains("learned: no change beyond −"), "{text}");
    }

    #[test]
    fn warnings_are_grouped_by_kind_with_each_benchmark_once() {
        let s = suite();
        let kinds: Vec<(&str, Vec<&str>)> =
            s.warnings.iter().map(|g| (g.kind, g.benchmarks.iter().map(String::as_str).collect())).collect();
        assert_eq!(kinds, [("busy", vec!["same", "slightly"]), ("short_run", vec!["slightly"])]);
        let text = s.terminal();
        assert_eq!(text.matches("busy (2: same, slightly)").count(), 1, "{text}");
        assert!(!text.contains("a second busy warning"), "one example per kind: {text}");
    }

    /// Every number of the comment is one the terminal printed, in the same order.
    #[test]
    fn the_markdown_comment_has_the_terminals_digits() {
        let s = suite();
        let numbers = |text: &str| -> Vec<String> {
            let mut out = Vec::new();
            let mut current = String::new();
            for ch in text.chars().chain(std::iter::once(' ')) {
                if ch.is_ascii_digit() || (ch == '.' && !current.is_empty()) {
                    current.push(ch);
                } else if !current.is_empty() {
                    out.push(current.trim_end_matches('.').to_string());
                    current.clear();
                }
            }
            out
        };
        let (terminal, markdown) = (numbers(&s.terminal()), numbers(&s.markdown()));
        let mut t_sorted = terminal.clone();
        let mut m_sorted = markdown.clone();
        t_sorted.sort();
        m_sorted.sort();
        assert_eq!(m_sorted, t_sorted, "terminal:\n{}\nmarkdown:\n{}", s.terminal(), s.markdown());
        for r in s.changed.iter().chain(&s.undecided) {
            let digits = ratio_and_interval(&r.record);
            assert!(s.terminal().contains(&digits) && s.markdown().contains(&digits), "{digits}");
        }
        assert!(s.markdown().starts_with("### perflab: `pr` against `main`: 2 slower, 1 faster"), "{}", s.markdown());
    }

    #[test]
    fn the_gate_reads_a_regression_before_undecided_before_clean() {
        let s = suite();
        assert_eq!(s.outcome(), Outcome::Regression);
        let regressions: Vec<&str> =
            s.changed.iter().filter(|r| r.is_regression()).map(|r| r.benchmark.as_str()).collect();
        assert!(regressions.contains(&"slow"), "{regressions:?}");
        let undecided_only = Summary { changed: Vec::new(), ..s.clone() };
        assert_eq!(undecided_only.outcome(), Outcome::Undecided);
        let clean = Summary { changed: Vec::new(), undecided: Vec::new(), ..s.clone() };
        assert_eq!(clean.outcome(), Outcome::Clean);
        // A faster benchmark is not a regression.
        let faster_only = Summary {
            changed: s.changed.iter().filter(|r| r.record.verdict == Verdict::Faster).cloned().collect(),
            undecided: Vec::new(),
            ..s
        };
        assert_eq!(faster_only.outcome(), Outcome::Clean);
    }
}
