//! The report page: one self-contained HTML file (inline CSS, inline SVG, a few lines
//! of inline JS for the name filter and sortable tables) that opens offline and from a
//! file: URL. The markup is in askama templates (`templates/report/`, compiled in,
//! every value auto-escaped); this module lays the charts out — scales, positions,
//! formatted numbers — into the views those templates draw.

use super::svg::{format_change, format_value, num, tick_labels, truncate, LinearScale, LogScale};
use super::{
    geomean, CiMethod, CounterTable, Explained, Geomean, LabelComparison, MachineGroup, MachinePage, Ratio,
    RelativeTime, ReportData, Why,
};
use askama::Template;
use perflab_model::units::{format_p, format_ratio};
use perflab_model::{metric, Verdict};
use perflab_store::history::matrix::Matrix;
use perflab_store::history::{BenchmarkHistory, Point, MIN_RELATIVE_SPAN};
use std::collections::HashMap;
use std::fmt::Write;

mod explained;
mod forest;
mod history_chart;
use explained::*;
use forest::*;
use history_chart::*;

/// Forest plot geometry (pixels). Names sit left of the plot, values right of it.
const FOREST_WIDTH: f64 = 980.0;
const NAME_WIDTH: f64 = 250.0;
/// Wide enough for the ratio, its interval and the method that made them.
const VALUE_WIDTH: f64 = 250.0;
const PLOT_LEFT: f64 = NAME_WIDTH + 12.0;
const PLOT_RIGHT: f64 = FOREST_WIDTH - VALUE_WIDTH - 12.0;
/// Characters of a benchmark name shown before the ellipsis (the tooltip has all).
const NAME_CHARS: usize = 44;
/// The same in a forest plot's narrower name column.
const FOREST_NAME_CHARS: usize = 36;
/// Above this many benchmarks rows get compact and the chart scrolls.
const COMPACT_ROWS: usize = 40;

/// History small-multiple geometry.
const HIST_WIDTH: f64 = 320.0;
const HIST_HEIGHT: f64 = 132.0;
const HIST_LEFT: f64 = 58.0;
const HIST_RIGHT: f64 = 10.0;
const HIST_TOP: f64 = 16.0;
const HIST_BOTTOM: f64 = 20.0;
/// Longer histories draw no per-point dots (their count would bloat the page).
const MAX_HISTORY_DOTS: usize = 40;
/// Functions listed per explained benchmark (all of them are in the stored profiles).
const PROFILE_ROWS: usize = 12;

/// The page's style sheet and script, kept as files of their own.
const STYLE: &str = include_str!("../../templates/report/report.css");
/// A benchmark-name filter that re-packs the forest plots' rows, tables sorted by the
/// column clicked (numbers by their `data-v` value, missing ones last), and `data-ready`
/// on <html> once the page has loaded (tests and screenshots wait for it).
const SCRIPT: &str = include_str!("../../templates/report/report.js");

#[derive(Template)]
#[template(path = "report/page.html")]
struct PageTemplate<'a> {
    title: &'a str,
    metric: &'a str,
    reference: &'a str,
    benchmarks: usize,
    labels: usize,
    several: bool,
    generated_at: &'a str,
    any_explained: bool,
    notes: &'a [String],
    matrices: Vec<MatrixView<'a>>,
    pages: Vec<PageView<'a>>,
    version: &'static str,
    style: &'static str,
    script: &'static str,
}

/// Section ids of one machine's part: the first machine's keep the plain names.
struct SectionIds {
    part: String,
    relative: String,
    explained: String,
    history: String,
    counters: String,
    machine: String,
}

impl SectionIds {
    fn of(index: usize) -> SectionIds {
        let id = |name: &str| if index == 0 { name.to_string() } else { format!("{name}-{}", index + 1) };
        SectionIds {
            part: id("part"),
            relative: id("relative"),
            explained: id("explained"),
            history: id("history"),
            counters: id("counters"),
            machine: id("machine"),
        }
    }
}

struct PageView<'a> {
    number: usize,
    ids: SectionIds,
    description: &'a str,
    reference: &'a str,
    forests: Vec<ForestView<'a>>,
    explained: Vec<ExplainedView<'a>>,
    /// Each history chart, already rendered (in parallel) by its own template.
    history_charts: Vec<String>,
    counters: CountersView<'a>,
    /// Per machine group, its key–value rows.
    machines: Vec<Vec<(String, String)>>,
    /// Distinct machine fingerprints among those groups: groups of one machine differ
    /// only in per-session facts (perflab version, environment), not in the machine.
    fingerprints: usize,
}

/// Render the whole report as one self-contained HTML document.
pub fn render_html(data: &ReportData) -> String {
    let most = |f: fn(&MachinePage) -> usize| data.pages.iter().map(f).max().unwrap_or(0);
    let benchmarks = most(|p| p.histories.len().max(p.comparisons.iter().map(|c| c.rows.len()).max().unwrap_or(0)));
    let page = PageTemplate {
        title: &data.title,
        metric: &data.metric,
        reference: data.pages.first().map_or("", |p| p.reference.as_str()),
        benchmarks,
        labels: most(|p| p.labels.len()),
        several: data.pages.len() > 1,
        generated_at: &data.generated_at,
        any_explained: data.pages.iter().any(|p| !p.explained.is_empty()),
        notes: &data.notes,
        matrices: data.matrices.iter().map(MatrixView::of).collect(),
        pages: data.pages.iter().enumerate().map(|(i, page)| page_view(page, &data.metric, i)).collect(),
        version: env!("CARGO_PKG_VERSION"),
        style: STYLE,
        script: SCRIPT,
    };
    // Rendering into a String cannot fail: every value's Display is infallible.
    page.render().expect("the report template renders")
}

fn page_view<'a>(page: &'a MachinePage, metric: &'a str, index: usize) -> PageView<'a> {
    PageView {
        number: index + 1,
        ids: SectionIds::of(index),
        description: &page.description,
        reference: &page.reference,
        forests: page.comparisons.iter().map(|c| forest_view(c, page, metric)).collect(),
        explained: page.explained.iter().map(ExplainedView::of).collect(),
        history_charts: history_charts(page, metric),
        counters: CountersView::of(&page.counters),
        machines: page.machines.iter().map(machine_rows).collect(),
        fingerprints: page
            .machines
            .iter()
            .map(|m| m.machine.fingerprint())
            .collect::<std::collections::BTreeSet<String>>()
            .len(),
    }
}

/// label ÷ reference per benchmark on every machine, side by side; sortable by any column.
struct MatrixView<'a> {
    label: &'a str,
    reference: &'a str,
    metric: &'a str,
    machines: &'a [perflab_store::history::matrix::MachineColumn],
    rows: Vec<MatrixRowView<'a>>,
}

struct MatrixRowView<'a> {
    benchmark: &'a str,
    short: String,
    cells: Vec<Option<RatioCell>>,
}

/// A ratio in a table cell with its interval and how it was computed.
struct RatioCell {
    class: &'static str,
    ratio: f64,
    ratio_text: String,
    ci_low: String,
    ci_high: String,
    method: &'static str,
    change: String,
}

impl<'a> MatrixView<'a> {
    fn of(m: &'a Matrix) -> MatrixView<'a> {
        MatrixView {
            label: &m.label,
            reference: &m.reference,
            metric: &m.metric,
            machines: &m.machines,
            rows: m
                .rows
                .iter()
                .map(|row| MatrixRowView {
                    benchmark: &row.benchmark,
                    short: truncate(&row.benchmark, NAME_CHARS).into_owned(),
                    cells: row
                        .cells
                        .iter()
                        .map(|cell| {
                            cell.as_ref().map(|r| RatioCell {
                                class: r.verdict.as_str(),
                                ratio: r.ratio,
                                ratio_text: format_ratio(r.ratio),
                                ci_low: format_ratio(r.ci_low),
                                ci_high: format_ratio(r.ci_high),
                                method: r.method.describe(),
                                change: format_change(r.ratio),
                            })
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// Largest slowdown first, largest speed-up last; rows without a usable ratio at the end.
fn sorted_by_change(rows: &[RelativeTime]) -> Vec<&RelativeTime> {
    let mut sorted: Vec<&RelativeTime> = rows.iter().collect();
    let key = |r: &RelativeTime| {
        if r.change.ratio.is_finite() && r.change.ratio > 0.0 {
            r.change.ratio.ln()
        } else {
            f64::NEG_INFINITY
        }
    };
    sorted.sort_by(|a, b| key(b).total_cmp(&key(a)).then_with(|| a.benchmark.cmp(&b.benchmark)));
    sorted
}

/// Every other metric per benchmark under the reference and each compared label, with
/// the pair's record on it — ratio, interval, verdict and method — or why it has none.
struct CountersView<'a> {
    compact: bool,
    reference: &'a str,
    /// Whether any label is compared (else only the reference's medians are shown).
    compared: bool,
    /// The one compared label (its name heads the medians), or None for several (a
    /// column names each row's).
    single: Option<&'a str>,
    rows: Vec<CounterRowView<'a>>,
}

struct CounterRowView<'a> {
    benchmark: &'a str,
    short: String,
    metric: &'a str,
    label: &'a str,
    reference_value: CounterCell,
    value: CounterCell,
    ratio: CounterCell,
    /// The interval, or why there is none.
    interval: String,
    verdict_class: &'static str,
    verdict: &'static str,
    method: String,
    /// What to keep in mind reading the ratio (its note, the method in full).
    title: String,
}

/// A sortable cell: its `data-v` (NaN when missing) and its text.
struct CounterCell {
    value: f64,
    text: String,
}

impl<'a> CountersView<'a> {
    fn of(table: &'a CounterTable) -> CountersView<'a> {
        let missing = || CounterCell { value: f64::NAN, text: "—".into() };
        CountersView {
            compact: table.rows.len() > COMPACT_ROWS,
            reference: &table.reference,
            compared: table.rows.iter().any(|r| r.label.is_some()),
            single: {
                let mut labels = table.rows.iter().filter_map(|r| r.label.as_deref());
                let first = labels.next();
                first.filter(|f| labels.all(|l| l == *f))
            },
            rows: table
                .rows
                .iter()
                .map(|row| {
                    let unit = metric::unit(&row.metric);
                    let cell = |v: Option<f64>| match v {
                        Some(v) => CounterCell { value: v, text: format_value(v, unit) },
                        None => missing(),
                    };
                    let (ratio, interval, verdict_class, verdict, method, title) = match &row.change {
                        Ok(r) => (
                            CounterCell { value: r.ratio, text: format_ratio(r.ratio) },
                            crate::pair::ratio_and_interval(r)
                                .strip_prefix(&format_ratio(r.ratio))
                                .unwrap_or_default()
                                .trim()
                                .to_string(),
                            r.verdict.as_str(),
                            r.verdict.as_str(),
                            r.method.short().to_string(),
                            format!(
                                "{}{}",
                                r.method.describe(),
                                r.note.as_ref().map(|n| format!("; {n}")).unwrap_or_default()
                            ),
                        ),
                        Err(why) => (missing(), why.clone(), "none", "", String::new(), why.clone()),
                    };
                    CounterRowView {
                        benchmark: &row.benchmark,
                        short: truncate(&row.benchmark, NAME_CHARS).into_owned(),
                        metric: &row.metric,
                        label: row.label.as_deref().unwrap_or(""),
                        reference_value: cell(row.reference_value),
                        value: cell(row.value),
                        ratio,
                        interval,
                        verdict_class,
                        verdict,
                        method,
                        title,
                    }
                })
                .collect(),
        }
    }
}

/// The machine, perflab version and environment of a group of labels, as key–value rows.
fn machine_rows(info: &MachineGroup) -> Vec<(String, String)> {
    let m = &info.machine;
    let flag = |f: Option<bool>| match f {
        Some(true) => "on",
        Some(false) => "off",
        None => "unknown",
    };
    let mut rows: Vec<(&str, String)> = vec![("labels", info.labels.join(", "))];
    if let Some(id) = &m.id {
        rows.push(("machine id", id.clone()));
    }
    rows.extend([
        ("hostname", m.hostname.clone()),
        ("CPU", m.cpu_model.clone()),
        ("microcode", m.microcode.clone().unwrap_or_else(|| "unknown".into())),
        ("cores", m.cores.to_string()),
        ("SMT", flag(m.smt).into()),
        ("memory", m.memory_mib.map_or("unknown".into(), |mib| format!("{mib} MiB"))),
        ("kernel", m.kernel.clone()),
        ("CPU frequency governor", m.governor.clone().unwrap_or_else(|| "unknown".into())),
        ("boost", flag(m.boost).into()),
        ("hardware PMU", if m.pmu { "available" } else { "not available" }.into()),
        ("virtualization", m.virtualization.clone().unwrap_or_else(|| "none detected".into())),
        ("perflab version", info.perflab_version.clone()),
    ]);
    let mut rows: Vec<(String, String)> = rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    rows.extend(info.environment.iter().map(|(k, v)| (k.clone(), v.clone())));
    rows
}

#[cfg(test)]
mod tests;
