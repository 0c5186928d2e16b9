//! `perflab report`: one self-contained HTML page with SVG charts of a suite's results —
//! relative time versus a reference label with CIs, history per benchmark with change
//! points, counters, and the machines the numbers came from.
//!
//! [`ReportData`] is what the page shows, independent of where it came from (the
//! store, JSON files, tests); [`html::render_html`] draws it.

pub mod error;
pub mod html;
pub mod load;
pub(crate) mod svg;

pub use html::render_html;

use error::ReportError;
use perflab_model::Machine;
pub use perflab_store::history::ratio::{CiMethod, Ratio};
use statrs::distribution::{ContinuousCDF, Normal};
use std::collections::BTreeMap;

/// Write the page for `data` to `out`, atomically.
pub fn write(data: &ReportData, out: &std::path::Path) -> Result<(), ReportError> {
    write_page(&render_html(data), out)
}

/// Write a page [`render_html`] drew to `out`, atomically.
pub fn write_page(page: &str, out: &std::path::Path) -> Result<(), ReportError> {
    write_atomically(out, page.as_bytes())
}

/// Write to a temporary file beside `path`, then rename: a reader never sees half a page.
/// A target that exists and is not a regular file (`/dev/null`, a FIFO, `/dev/stdout`)
/// is written in place: renaming over it would replace the device with a file.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<(), ReportError> {
    let failed = |source| ReportError::Write { path: path.to_path_buf(), source };
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, bytes).map_err(failed);
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let name = path.file_name().ok_or_else(|| ReportError::NotAFileName(path.to_path_buf()))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        failed(e)
    })
}

/// Everything the report page shows, arranged for the page.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportData {
    /// The page's title.
    pub title: String,
    /// When the report was generated (RFC 3339).
    pub(crate) generated_at: String,
    /// The metric compared and plotted (`wall_s`, `instructions`, ...).
    pub metric: String,
    /// With results from several machines: each compared label ÷ the reference, per
    /// benchmark, on every machine side by side.
    pub(crate) matrices: Vec<perflab_store::history::matrix::Matrix>,
    /// One part per machine fingerprint, each as the page would be for that machine alone:
    /// machines are never pooled.
    pub pages: Vec<MachinePage>,
    /// Caveats shown at the top (skipped benchmarks, machines without a label, ...).
    pub notes: Vec<String>,
}

/// The results of one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct MachinePage {
    /// The machine, as `store::describe_machine` names it.
    pub description: String,
    /// The label every ratio is relative to.
    pub reference: String,
    /// Every label of this machine in history order (oldest first): the x axis of the
    /// history charts.
    pub labels: Vec<String>,
    /// One forest plot per compared label.
    pub comparisons: Vec<LabelComparison>,
    /// Per benchmark: median and CI per label, change points (as `perflab history`).
    pub histories: Vec<perflab_store::history::BenchmarkHistory>,
    /// Every other measured metric, label against the reference.
    pub counters: CounterTable,
    /// The machine, perflab version and environment of each group of labels.
    pub machines: Vec<MachineGroup>,
    /// Benchmarks found slower than a baseline build under a shown label, explained
    /// (`run --profile-changes`), largest ratio first.
    pub explained: Vec<Explained>,
}

/// Why a benchmark got slower under a label: its comparison and what explains it.
#[derive(Debug, Clone, PartialEq)]
pub struct Explained {
    /// The benchmark's name.
    pub benchmark: String,
    /// The label it got slower under.
    pub label: String,
    /// Its primary metric's comparison with the baseline build.
    pub comparison: perflab_model::Comparison,
    /// What explains it.
    pub why: Why,
}

/// How a regression was explained.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// Every measured run of both builds sampled in the experiment's rounds: per-function
    /// ratios with intervals and verdicts (the comparison's stored `explanation`).
    Sampled(Box<perflab_model::Explanation>),
    /// Stores written before that: one profile of each build after the experiment, a
    /// per-function diff without intervals.
    OneProfile(Box<perflab_store::ProfileChange>),
}

/// Every benchmark's time under `label` relative to the reference label.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelComparison {
    /// The label compared with the reference.
    pub label: String,
    /// Benchmarks whose builds differ: the chart's rows and its geometric mean.
    pub rows: Vec<RelativeTime>,
    /// Benchmarks whose command is the same under both labels: an A/A check of the
    /// sessions, shown apart and left out of the geometric mean.
    pub controls: Vec<Control>,
}

/// A benchmark run with the same command under both labels (`history::controls`).
#[derive(Debug, Clone, PartialEq)]
pub struct Control {
    /// The benchmark's name.
    pub benchmark: String,
    /// Its label ÷ reference ratio, or why there is none.
    pub change: Result<Ratio, String>,
}

/// One benchmark's label/reference ratio of the metric (> 1: slower than the reference).
#[derive(Debug, Clone, PartialEq)]
pub struct RelativeTime {
    /// The benchmark's name.
    pub benchmark: String,
    /// Its label ÷ reference ratio.
    pub change: Ratio,
    /// How much relinking alone moves this benchmark (σ of the layout effect, log scale ≈
    /// a fraction, on `layout_metric`), from its newest layout experiment (`layouts = N`)
    /// under either label; None when it was never measured in several layouts.
    pub layout_spread: Option<LayoutSpreadSeen>,
}

/// A benchmark's layout spread as a stored layout experiment measured it.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutSpreadSeen {
    /// σ of the layout effect (log scale ≈ a fraction).
    pub spread: f64,
    /// The metric it is of.
    pub metric: String,
    /// The label of the experiment that measured it.
    pub label: String,
}

/// Every other measured metric of each benchmark, under the reference and each compared
/// label, with the pair's record on that metric (ratio, interval, verdict, method).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CounterTable {
    /// The reference label.
    pub reference: String,
    /// One row per benchmark, metric and label.
    pub rows: Vec<CounterRow>,
}

/// One metric of one benchmark under one label.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterRow {
    /// The benchmark's name.
    pub benchmark: String,
    /// The metric.
    pub metric: String,
    /// The compared label (None: the reference alone, nothing to compare with).
    pub label: Option<String>,
    /// Medians of the metric as the record measured them: the two commands of the
    /// session that paired them, else each label's runs; None = not measured.
    pub(crate) reference_value: Option<f64>,
    /// The label's median of the metric; None: not measured.
    pub value: Option<f64>,
    /// label ÷ reference on this metric, or why there is no ratio with an interval.
    pub change: Result<Ratio, String>,
}

/// The machine, perflab version and environment shared by a group of labels.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineGroup {
    /// The labels of the group, in history order.
    pub labels: Vec<String>,
    /// The machine they were measured on.
    pub machine: Machine,
    /// The perflab version that measured them.
    pub perflab_version: String,
    /// Extra facts about the environment (valgrind version, …).
    pub environment: BTreeMap<String, String>,
}

/// Geometric mean of a comparison's ratios with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Geomean {
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Benchmarks included (those with a finite, positive ratio and CI).
    pub n: usize,
}

/// The geometric mean of the ratios and a 95 % interval from combining the
/// per-benchmark log-ratio intervals.
///
/// Each benchmark's interval gives a standard error on the log scale,
/// `se_i = (ln hi − ln lo) / (2 z_i)` with `z_i` the normal quantile of its own
/// confidence; the mean of `k` independent log ratios has `se = √(Σ se_i²) / k`. The
/// interval is therefore about measurement noise in *this* suite, not about how a
/// different choice of benchmarks would have come out (docs/report.md).
pub(crate) fn geomean(rows: &[RelativeTime]) -> Option<Geomean> {
    let normal = Normal::standard();
    let mut sum_ln = 0.0;
    let mut sum_var = 0.0;
    let mut n = 0usize;
    for row in rows.iter().map(|r| &r.change) {
        let valid = [row.ratio, row.ci_low, row.ci_high].iter().all(|v| v.is_finite() && *v > 0.0)
            && row.confidence > 0.0
            && row.confidence < 1.0;
        if !valid {
            continue;
        }
        let z = normal.inverse_cdf(0.5 + row.confidence / 2.0);
        let se = (row.ci_high.ln() - row.ci_low.ln()).abs() / (2.0 * z);
        sum_ln += row.ratio.ln();
        sum_var += se * se;
        n += 1;
    }
    if n == 0 {
        return None;
    }
    // One ratio is its own mean: its record's interval, not a normal approximation of it
    // (which would differ in the last printed digit from the row above it).
    if let (1, Some(only)) = (
        n,
        rows.iter()
            .map(|r| &r.change)
            .find(|r| r.ratio.is_finite() && r.ratio > 0.0 && r.ci_low > 0.0 && r.ci_high.is_finite()),
    ) {
        return Some(Geomean { ratio: only.ratio, ci_low: only.ci_low, ci_high: only.ci_high, n });
    }
    let mean = sum_ln / n as f64;
    let half = normal.inverse_cdf(0.975) * sum_var.sqrt() / n as f64;
    Some(Geomean { ratio: mean.exp(), ci_low: (mean - half).exp(), ci_high: (mean + half).exp(), n })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use perflab_model::Verdict;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn a_page_written_to_a_fifo_leaves_the_fifo_in_place() {
        // As `-o /dev/null` would: the target is not a regular file and must stay what it is.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomically(&fifo, b"<html></html>").unwrap();
        assert_eq!(reader.join().unwrap(), b"<html></html>");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left beside it");
    }

    pub fn row(name: &str, ratio: f64, lo: f64, hi: f64, verdict: Verdict) -> RelativeTime {
        RelativeTime {
            benchmark: name.into(),
            change: Ratio {
                metric: "wall_s".into(),
                ratio,
                ci_low: lo,
                ci_high: hi,
                confidence: 0.95,
                p_value: Some(0.01),
                verdict,
                method: CiMethod::Paired,
                n: 20,
                session_noise: None,
                note: None,
            },
            layout_spread: None,
        }
    }

    #[test]
    fn geomean_of_reciprocal_ratios_is_one() {
        let rows = [row("a", 2.0, 1.9, 2.1, Verdict::Slower), row("b", 0.5, 0.45, 0.55, Verdict::Faster)];
        let g = geomean(&rows).unwrap();
        assert!((g.ratio - 1.0).abs() < 1e-12);
        assert!(g.ci_low < 1.0 && g.ci_high > 1.0);
        assert_eq!(g.n, 2);
    }

    #[test]
    fn geomean_interval_narrows_with_more_benchmarks() {
        let one = [row("a", 1.1, 1.0, 1.21, Verdict::Inconclusive)];
        let four: Vec<_> = (0..4).map(|i| row(&i.to_string(), 1.1, 1.0, 1.21, Verdict::Inconclusive)).collect();
        let g1 = geomean(&one).unwrap();
        let g4 = geomean(&four).unwrap();
        assert!((g1.ratio - 1.1).abs() < 1e-12 && (g4.ratio - 1.1).abs() < 1e-12);
        // A single benchmark's 95 % interval comes back unchanged.
        assert_eq!((g1.ci_low, g1.ci_high), (1.0, 1.21));
        let width = |g: Geomean| g.ci_high.ln() - g.ci_low.ln();
        assert!((width(g4) - width(g1) / 2.0).abs() < 1e-9, "√4 = 2× narrower");
    }

    #[test]
    fn geomean_skips_unusable_rows() {
        let rows = [
            row("nan", f64::NAN, 1.0, 1.1, Verdict::Inconclusive),
            row("zero", 0.0, 0.0, 0.1, Verdict::Faster),
            row("ok", 1.2, 1.1, 1.3, Verdict::Slower),
        ];
        assert_eq!(geomean(&rows).unwrap().n, 1);
        assert!(geomean(&rows[..2]).is_none());
    }
}
