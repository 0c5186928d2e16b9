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

/// One compared label's forest plot: summary, optional overview, axis, rows, geomean.
struct ForestView<'a> {
    label: &'a str,
    summary: SummaryView,
    overview: Option<OverviewView>,
    axis: AxisView,
    compact: bool,
    width: String,
    height: String,
    row_height: String,
    top: String,
    grid: GridView,
    rows: Vec<ForestRowView<'a>>,
    geomean: Option<GeomeanView>,
    /// Benchmarks with the same command under both labels: the sessions' A/A check.
    controls: Vec<ControlView<'a>>,
}

/// A control's row: its ratio with interval, verdict and method, or why it has none.
struct ControlView<'a> {
    name: &'a str,
    class: &'static str,
    text: String,
    verdict: &'static str,
    tag: String,
}

struct SummaryView {
    geomean: Option<GeomeanText>,
    /// How the rows' ratios were made.
    paired: usize,
    sessions: usize,
    slower: usize,
    faster: usize,
    equivalent: usize,
    inconclusive: usize,
}

struct GeomeanText {
    ratio: String,
    change: String,
    ci_low: String,
    ci_high: String,
    n: usize,
}

impl GeomeanText {
    fn of(g: &Geomean) -> GeomeanText {
        GeomeanText {
            ratio: format_ratio(g.ratio),
            change: format_change(g.ratio),
            ci_low: format_ratio(g.ci_low),
            ci_high: format_ratio(g.ci_high),
            n: g.n,
        }
    }
}

/// A tick label at a position.
struct Tick {
    x: String,
    y: String,
    text: String,
}

struct OverviewView {
    width: String,
    height: String,
    ticks: Vec<Tick>,
    grid: String,
    band: String,
    line: String,
    left: String,
    right: String,
    middle: String,
    one: String,
    bottom: String,
    count: usize,
}

struct AxisView {
    width: String,
    caption_x: String,
    caption: String,
    ticks: Vec<Tick>,
    faster_x: String,
    slower_x: String,
    value_x: String,
}

/// Vertical grid lines as one path (one element instead of one per tick), 1× apart.
struct GridView {
    d: String,
    x: String,
    y0: String,
    y1: String,
}

/// The bar from 1× to the ratio and the CI whisker with caps.
struct MarksView {
    bar_x: String,
    bar_y: String,
    bar_width: String,
    bar_height: String,
    errbar: String,
}

struct ForestRowView<'a> {
    class: &'static str,
    name: &'a str,
    short: String,
    y: String,
    ratio: String,
    change: String,
    confidence: String,
    ci_low: String,
    ci_high: String,
    p: String,
    n: usize,
    method: &'static str,
    /// The method (and the metric, when not the page's) printed beside the number.
    tag: String,
    name_x: String,
    text_y: String,
    cy: String,
    marks: MarksView,
    dot_x: String,
    dot_r: &'static str,
    value_x: String,
}

struct GeomeanView {
    width: String,
    height: String,
    n: usize,
    ratio: String,
    change: String,
    ci_low: String,
    ci_high: String,
    grid: GridView,
    name_x: String,
    text_y: String,
    marks: MarksView,
    diamond: String,
    value_x: String,
}

fn forest_view<'a>(comparison: &'a LabelComparison, page: &MachinePage, metric: &str) -> ForestView<'a> {
    let rows = sorted_by_change(&comparison.rows);
    let gm = geomean(&comparison.rows);
    let count = |v: Verdict| comparison.rows.iter().filter(|r| r.change.verdict == v).count();
    let scale = LogScale::covering(
        comparison
            .rows
            .iter()
            .flat_map(|r| [r.change.ci_low, r.change.ci_high, r.change.ratio])
            .chain(gm.iter().flat_map(|g| [g.ci_low, g.ci_high])),
        PLOT_LEFT,
        PLOT_RIGHT,
    );
    let ticks = scale.ticks(46.0);
    let compact = rows.len() > COMPACT_ROWS;
    let row_height = if compact { 15.0 } else { 22.0 };
    let top = 4.0;
    let height = top * 2.0 + rows.len().max(1) as f64 * row_height;
    ForestView {
        label: &comparison.label,
        summary: SummaryView {
            geomean: gm.as_ref().map(GeomeanText::of),
            paired: comparison.rows.iter().filter(|r| r.change.method == CiMethod::Paired).count(),
            sessions: comparison.rows.iter().filter(|r| r.change.method != CiMethod::Paired).count(),
            slower: count(Verdict::Slower),
            faster: count(Verdict::Faster),
            equivalent: count(Verdict::Equivalent),
            inconclusive: count(Verdict::Inconclusive),
        },
        overview: if compact { overview(&rows) } else { None },
        // The axis sits outside the scrolling box so it stays visible for long suites.
        axis: AxisView {
            width: num(FOREST_WIDTH),
            caption_x: num(NAME_WIDTH - 12.0),
            caption: format!("{} ÷ {}", comparison.label, page.reference),
            ticks: ticks.iter().map(|&t| Tick { x: num(scale.px(t)), y: "26".into(), text: format_ratio(t) }).collect(),
            faster_x: num(scale.px(1.0) - 6.0),
            slower_x: num(scale.px(1.0) + 6.0),
            value_x: num(PLOT_RIGHT + 14.0),
        },
        compact,
        width: num(FOREST_WIDTH),
        height: num(height),
        row_height: num(row_height),
        top: num(top),
        grid: grid(&scale, &ticks, 0.0, height.max(4000.0 * row_height)),
        rows: rows
            .iter()
            .enumerate()
            .map(|(i, row)| forest_row(row, metric, &scale, top + i as f64 * row_height, row_height, compact))
            .collect(),
        geomean: gm.map(|g| geomean_view(&g, &scale, &ticks)),
        controls: comparison
            .controls
            .iter()
            .map(|c| match &c.change {
                Ok(r) => ControlView {
                    name: &c.benchmark,
                    class: r.verdict.as_str(),
                    text: crate::pair::ratio_and_interval(r),
                    verdict: r.verdict.as_str(),
                    tag: tag(r, metric),
                },
                Err(why) => ControlView {
                    name: &c.benchmark,
                    class: "none",
                    text: why.clone(),
                    verdict: "",
                    tag: String::new(),
                },
            })
            .collect(),
    }
}

/// For long suites: every ratio at a glance, sorted as the rows below (slowest left),
/// with the CI band, so the share of regressions shows before any scrolling.
fn overview(rows: &[&RelativeTime]) -> Option<OverviewView> {
    let (width, height, left, right, top, bottom) = (FOREST_WIDTH, 150.0, 64.0, 12.0, 10.0, 22.0);
    let usable: Vec<&Ratio> = rows.iter().map(|r| &r.change).filter(|r| r.ratio.is_finite() && r.ratio > 0.0).collect();
    if usable.len() < 2 {
        return None;
    }
    let y = LogScale::covering(usable.iter().flat_map(|r| [r.ratio, r.ci_low, r.ci_high]), height - bottom, top);
    let x = |i: usize| left + i as f64 / (usable.len() - 1) as f64 * (width - left - right);
    let mut grid = String::new();
    let mut ticks = Vec::new();
    for t in y.ticks(22.0) {
        if t != 1.0 {
            let _ = write!(grid, "M{} {}H{}", num(left), num(y.px(t)), num(width - right));
        }
        ticks.push(Tick { x: num(left - 6.0), y: num(y.px(t) + 4.0), text: format_ratio(t) });
    }
    let mut band = String::new();
    for (i, r) in usable.iter().enumerate() {
        let _ = write!(band, "{}{} {}", if i == 0 { "M" } else { "L" }, num(x(i)), num(y.px(r.ci_high)));
    }
    for (i, r) in usable.iter().enumerate().rev() {
        let _ = write!(band, "L{} {}", num(x(i)), num(y.px(r.ci_low)));
    }
    let mut line = String::new();
    for (i, r) in usable.iter().enumerate() {
        let _ = write!(line, "{}{} {}", if i == 0 { "M" } else { "L" }, num(x(i)), num(y.px(r.ratio)));
    }
    Some(OverviewView {
        width: num(width),
        height: num(height),
        ticks,
        grid,
        band,
        line,
        left: num(left),
        right: num(width - right),
        middle: num((left + width - right) / 2.0),
        one: num(y.px(1.0)),
        bottom: num(height - 6.0),
        count: usable.len(),
    })
}

fn grid(scale: &LogScale, ticks: &[f64], y0: f64, y1: f64) -> GridView {
    let mut d = String::new();
    for &t in ticks.iter().filter(|&&t| t != 1.0) {
        let _ = write!(d, "M{} {}V{}", num(scale.px(t)), num(y0), num(y1));
    }
    GridView { d, x: num(scale.px(1.0)), y0: num(y0), y1: num(y1) }
}

fn marks(scale: &LogScale, ratio: f64, lo: f64, hi: f64, cy: f64, row_height: f64) -> MarksView {
    let x1 = scale.px(1.0);
    let x = scale.px(ratio);
    let bar = (row_height * 0.55).round();
    let cap = (row_height * 0.25).round();
    let (xl, xh) = (num(scale.px(lo)), num(scale.px(hi)));
    let (a, b) = (num(cy - cap), num(cy + cap));
    MarksView {
        bar_x: num(x.min(x1)),
        bar_y: num(cy - bar / 2.0),
        bar_width: num((x - x1).abs().max(1.0)),
        bar_height: num(bar),
        errbar: format!("M{xl} {cy}H{xh}M{xl} {a}V{b}M{xh} {a}V{b}", cy = num(cy)),
    }
}

/// What made a ratio, in a word or two beside it: `paired`, `separate sessions`, with the
/// metric when it is not the page's (a pair measured in one session answers on the metric
/// that session decided on).
fn tag(r: &Ratio, page_metric: &str) -> String {
    if r.metric == page_metric || r.metric.is_empty() {
        r.method.short().to_string()
    } else {
        format!("{}, {}", r.method.short(), r.metric)
    }
}

fn forest_row<'a>(
    relative: &'a RelativeTime,
    page_metric: &str,
    scale: &LogScale,
    y: f64,
    row_height: f64,
    compact: bool,
) -> ForestRowView<'a> {
    let row = &relative.change;
    let cy = row_height / 2.0;
    ForestRowView {
        class: row.verdict.as_str(),
        name: &relative.benchmark,
        short: truncate(&relative.benchmark, FOREST_NAME_CHARS).into_owned(),
        y: num(y),
        ratio: format_ratio(row.ratio),
        change: format_change(row.ratio),
        confidence: format!("{:.0}", row.confidence * 100.0),
        ci_low: format_ratio(row.ci_low),
        ci_high: format_ratio(row.ci_high),
        p: row.p_value.map(|p| format!(", p = {}", format_p(p))).unwrap_or_default(),
        n: row.n,
        method: row.method.describe(),
        tag: tag(row, page_metric),
        name_x: num(NAME_WIDTH),
        text_y: num(cy + 4.0),
        cy: num(cy),
        marks: marks(scale, row.ratio, row.ci_low, row.ci_high, cy, row_height),
        dot_x: num(scale.px(row.ratio)),
        dot_r: if compact { "2.5" } else { "3.5" },
        value_x: num(PLOT_RIGHT + 14.0),
    }
}

fn geomean_view(g: &Geomean, scale: &LogScale, ticks: &[f64]) -> GeomeanView {
    let height = 30.0;
    let cy = height / 2.0;
    let x = scale.px(g.ratio);
    let text = GeomeanText::of(g);
    GeomeanView {
        width: num(FOREST_WIDTH),
        height: num(height),
        n: g.n,
        ratio: text.ratio,
        change: text.change,
        ci_low: text.ci_low,
        ci_high: text.ci_high,
        grid: grid(scale, ticks, 0.0, height),
        name_x: num(NAME_WIDTH),
        text_y: num(cy + 4.0),
        marks: marks(scale, g.ratio, g.ci_low, g.ci_high, cy, 22.0),
        diamond: format!(
            "M{} {}L{} {}L{} {}L{} {}Z",
            num(x),
            num(cy - 7.0),
            num(x + 6.0),
            num(cy),
            num(x),
            num(cy + 7.0),
            num(x - 6.0),
            num(cy)
        ),
        value_x: num(PLOT_RIGHT + 14.0),
    }
}

/// Every benchmark's history chart, benchmarks with the biggest change point first; a
/// thousand charts are laid out and rendered on every core.
fn history_charts(page: &MachinePage, metric: &str) -> Vec<String> {
    if page.histories.iter().all(|h| h.points.is_empty()) {
        return Vec::new();
    }
    let unit = metric::unit(metric);
    let label_index: HashMap<&str, usize> = page.labels.iter().enumerate().map(|(i, l)| (l.as_str(), i)).collect();
    let mut order: Vec<&BenchmarkHistory> = page.histories.iter().collect();
    let biggest_shift = |h: &BenchmarkHistory| h.change_points.iter().map(|c| c.ratio.ln().abs()).fold(0.0, f64::max);
    order.sort_by(|a, b| biggest_shift(b).total_cmp(&biggest_shift(a)).then_with(|| a.name.cmp(&b.name)));
    perflab_sys::parallel::map(
        &order,
        || (),
        |history, ()| {
            history_chart(history, page, &label_index, unit).render().expect("the history chart template renders")
        },
    )
}

#[derive(Template)]
#[template(path = "report/history_chart.html")]
struct HistoryChart<'a> {
    name: &'a str,
    width: String,
    height: String,
    /// The whole chart's tooltip: long histories have no per-point dots to hover.
    tooltip: Option<String>,
    ticks: Vec<Tick>,
    grid: String,
    reference: Option<ReferenceLine<'a>>,
    axis_labels: Vec<AxisLabel>,
    band: Option<String>,
    line: String,
    dots: Vec<HistoryDot<'a>>,
    change_points: Vec<ChangePointMark<'a>>,
}

struct ReferenceLine<'a> {
    x: String,
    y0: String,
    y1: String,
    label: &'a str,
}

/// The first and last label under the x axis.
struct AxisLabel {
    x: String,
    y: String,
    end: bool,
    text: String,
}

struct HistoryDot<'a> {
    x: String,
    y: String,
    label: &'a str,
    value: String,
    ci: String,
    n: usize,
}

struct ChangePointMark<'a> {
    direction: &'static str,
    label: &'a str,
    before: String,
    after: String,
    change: String,
    ci_low: String,
    ci_high: String,
    p: String,
    x: String,
    y0: String,
    y1: String,
    text_y: String,
}

fn history_chart<'a>(
    history: &'a BenchmarkHistory,
    page: &'a MachinePage,
    label_index: &HashMap<&str, usize>,
    unit: &str,
) -> HistoryChart<'a> {
    let points: Vec<(f64, &Point)> = history
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (label_index.get(p.label.as_str()).copied().unwrap_or(i) as f64, p))
        .collect();
    let last_x = (page.labels.len().max(history.points.len()).max(2) - 1) as f64;
    let x = |i: f64| HIST_LEFT + i / last_x * (HIST_WIDTH - HIST_LEFT - HIST_RIGHT);
    let values: Vec<f64> = points
        .iter()
        .flat_map(|(_, p)| {
            let (lo, hi) = p.median_ci.unwrap_or((p.median, p.median));
            [p.median, lo, hi]
        })
        .filter(|v| v.is_finite())
        .collect();
    let y_scale =
        LinearScale::covering(values.iter().copied().chain(minimum_span(&values)), HIST_HEIGHT - HIST_BOTTOM, HIST_TOP);
    let tooltip = match (points.first(), points.last()) {
        (Some((_, first)), Some((_, last))) => Some(format!(
            "{} at {} → {} at {} ({}), {} labels",
            format_value(first.median, unit),
            first.label,
            format_value(last.median, unit),
            last.label,
            format_change(last.median / first.median),
            points.len()
        )),
        _ => None,
    };
    let mut grid = String::new();
    let tick_values = y_scale.ticks(3);
    let mut ticks = Vec::new();
    for (&t, text) in tick_values.iter().zip(tick_labels(&tick_values, unit)) {
        let _ = write!(grid, "M{} {}H{}", num(HIST_LEFT), num(y_scale.px(t)), num(HIST_WIDTH - HIST_RIGHT));
        ticks.push(Tick { x: num(HIST_LEFT - 4.0), y: num(y_scale.px(t) + 4.0), text });
    }
    let reference = label_index.get(page.reference.as_str()).map(|&r| ReferenceLine {
        x: num(x(r as f64)),
        y0: num(HIST_TOP),
        y1: num(HIST_HEIGHT - HIST_BOTTOM),
        label: &page.reference,
    });
    let base = num(HIST_HEIGHT - 5.0);
    let mut axis_labels = Vec::new();
    if let (Some(first), Some(last)) = (page.labels.first(), page.labels.last()) {
        axis_labels.push(AxisLabel {
            x: num(HIST_LEFT),
            y: base.clone(),
            end: false,
            text: truncate(first, 18).into(),
        });
        if page.labels.len() > 1 {
            let x = num(HIST_WIDTH - HIST_RIGHT);
            axis_labels.push(AxisLabel { x, y: base, end: true, text: truncate(last, 18).into() });
        }
    }
    // CI band: upper edge left to right, lower edge back.
    let with_ci: Vec<(f64, f64, f64)> =
        points.iter().filter_map(|(i, p)| p.median_ci.map(|(lo, hi)| (*i, lo, hi))).collect();
    let band = (with_ci.len() > 1).then(|| {
        let mut d = String::new();
        for (k, (i, _, hi)) in with_ci.iter().enumerate() {
            let _ = write!(d, "{}{} {}", if k == 0 { "M" } else { "L" }, num(x(*i)), num(y_scale.px(*hi)));
        }
        for (i, lo, _) in with_ci.iter().rev() {
            let _ = write!(d, "L{} {}", num(x(*i)), num(y_scale.px(*lo)));
        }
        d
    });
    let mut line = String::new();
    for (k, (i, p)) in points.iter().enumerate() {
        let _ = write!(line, "{}{} {}", if k == 0 { "M" } else { "L" }, num(x(*i)), num(y_scale.px(p.median)));
    }
    let dots = if points.len() <= MAX_HISTORY_DOTS {
        points
            .iter()
            .map(|(i, p)| HistoryDot {
                x: num(x(*i)),
                y: num(y_scale.px(p.median)),
                label: &p.label,
                value: format_value(p.median, unit),
                ci: p
                    .median_ci
                    .map(|(lo, hi)| format!(", 95 % CI {} – {}", format_value(lo, unit), format_value(hi, unit)))
                    .unwrap_or_default(),
                n: p.n,
            })
            .collect()
    } else {
        Vec::new()
    };
    let change_points = history
        .change_points
        .iter()
        .filter_map(|cp| {
            let (at, point) = points.get(cp.index)?;
            let prev = if cp.index > 0 { points[cp.index - 1].0 } else { *at };
            Some(ChangePointMark {
                direction: if cp.ratio > 1.0 { "up" } else { "down" },
                label: &point.label,
                before: format_value(cp.before, unit),
                after: format_value(cp.after, unit),
                change: format_change(cp.ratio),
                ci_low: format_change(cp.ratio_ci.0),
                ci_high: format_change(cp.ratio_ci.1),
                p: format_p(cp.p_value),
                x: num(x((prev + at) / 2.0)),
                y0: num(HIST_TOP - 2.0),
                y1: num(HIST_HEIGHT - HIST_BOTTOM),
                text_y: num(HIST_TOP - 4.0),
            })
        })
        .collect();
    HistoryChart {
        name: &history.name,
        width: num(HIST_WIDTH),
        height: num(HIST_HEIGHT),
        tooltip,
        ticks,
        grid,
        reference,
        axis_labels,
        band,
        line,
        dots,
        change_points,
    }
}

/// The ends of the smallest span a history chart draws around `values` (medians and
/// their intervals): [`MIN_RELATIVE_SPAN`] of their level, centred on them, when they
/// span less — a change inside the noise of two sessions never fills the chart.
fn minimum_span(values: &[f64]) -> Vec<f64> {
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let span = MIN_RELATIVE_SPAN * (lo.abs() + hi.abs()) / 2.0;
    if values.is_empty() || hi - lo >= span {
        return Vec::new();
    }
    let middle = (lo + hi) / 2.0;
    vec![middle - span / 2.0, middle + span / 2.0]
}

/// Per benchmark found slower: the functions that explain it, then the differential
/// flame graph. A regression is explained by its runs' samples (`sampled`) or, in older
/// stores, by one profile of each build (`one_profile`).
struct ExplainedView<'a> {
    benchmark: &'a str,
    short: String,
    candidate: &'a str,
    baseline: &'a str,
    ratio: String,
    ci_low: String,
    ci_high: String,
    metric: &'a str,
    warnings: &'a [String],
    sampled: Option<SampledView<'a>>,
    one_profile: Vec<ExplainedFunction<'a>>,
    /// The differential flame graph: self-contained SVG whose own names are escaped and
    /// whose script finds its own elements, so it is safe inline.
    flame_graph: Option<String>,
}

/// The per-function explanation of a regression from every run's samples.
struct SampledView<'a> {
    /// What the rows are: the method, the rounds and the intervals' level.
    method: String,
    story: String,
    unit: &'a str,
    rows: Vec<SampledFunction<'a>>,
    /// Rows not shown (they are in the stored explanation and `--json`).
    more: usize,
}

struct SampledFunction<'a> {
    name: &'a str,
    short: String,
    object: &'a str,
    baseline: f64,
    candidate: f64,
    /// NaN when the baseline never ran the function (sorted last).
    ratio: f64,
    ratio_text: String,
    /// The ratio's interval, or "unbounded".
    ratio_interval: String,
    /// The CSS class of the verdict (`slower`, `faster`, …; `small` beyond the threshold
    /// but too small to matter).
    verdict_class: &'static str,
    verdict: String,
    contribution: f64,
    contribution_text: String,
    contribution_interval: String,
}

struct ExplainedFunction<'a> {
    name: &'a str,
    short: String,
    object: &'a str,
    old_s: f64,
    new_s: f64,
    change_s: f64,
    contribution: f64,
}

/// A value per run with 3 significant digits (at least 0 decimals).
fn per_run(x: f64) -> String {
    let digits = if x == 0.0 { 0 } else { (2 - x.abs().log10().floor() as i32).clamp(0, 6) as usize };
    format!("{x:.digits$}")
}

fn signed_per_run(x: f64) -> String {
    if x >= 0.0 {
        format!("+{}", per_run(x))
    } else {
        per_run(x)
    }
}

fn sampled_function(f: &perflab_model::FunctionChange) -> SampledFunction<'_> {
    let verdict_class = match f.verdict {
        _ if f.below_threshold => "small",
        Verdict::Slower => "slower",
        Verdict::Faster => "faster",
        Verdict::Equivalent => "equivalent",
        _ => "inconclusive",
    };
    let verdict = if f.below_threshold {
        format!("{} (too small to matter)", f.verdict.as_str())
    } else {
        f.verdict.as_str().to_string()
    };
    let c = &f.contribution;
    let interval = |low: Option<f64>, high: Option<f64>, each: fn(f64) -> String| match (low, high) {
        (Some(lo), Some(hi)) if lo == hi => "exact".to_string(),
        (Some(lo), Some(hi)) => format!("[{}, {}]", each(lo), each(hi)),
        _ => "unbounded".to_string(),
    };
    SampledFunction {
        name: &f.name,
        short: truncate(&f.name, NAME_CHARS).into_owned(),
        object: &f.object,
        baseline: f.baseline_per_run,
        candidate: f.candidate_per_run,
        ratio: f.ratio.unwrap_or(f64::NAN),
        ratio_text: f.ratio.map_or_else(|| "new".to_string(), |r| format!("×{r:.3}")),
        ratio_interval: match f.ratio {
            Some(_) => interval(f.ci_low, f.ci_high, |r| format!("{r:.3}")),
            None => String::new(),
        },
        verdict_class,
        verdict,
        contribution: c.estimate,
        contribution_text: signed_per_run(c.estimate),
        contribution_interval: interval(c.low, c.high, signed_per_run),
    }
}

impl<'a> ExplainedView<'a> {
    fn of(x: &'a Explained) -> ExplainedView<'a> {
        let c = &x.comparison;
        let view = |candidate: &'a str, baseline: &'a str, warnings: &'a [String]| ExplainedView {
            benchmark: &x.benchmark,
            short: truncate(&x.benchmark, NAME_CHARS).into_owned(),
            candidate,
            baseline,
            ratio: format_ratio(c.ratio),
            ci_low: format_ratio(c.ci_low),
            ci_high: format_ratio(c.ci_high),
            metric: &c.metric,
            warnings,
            sampled: None,
            one_profile: Vec::new(),
            flame_graph: None,
        };
        match &x.why {
            Why::Sampled(e) => ExplainedView {
                sampled: Some(SampledView {
                    method: format!(
                        "{} samples of every measured run of both builds in {} rounds ({:.0} and {:.0} per run); \
                         each function's interval at {:.2} % ({:.0} % for the {} tested together)",
                        e.event,
                        e.rounds,
                        e.samples_per_run.0,
                        e.samples_per_run.1,
                        e.function_level * 100.0,
                        e.confidence * 100.0,
                        e.tested
                    ),
                    story: crate::explain::story(c, e),
                    unit: &e.unit,
                    rows: e.functions.iter().take(PROFILE_ROWS).map(sampled_function).collect(),
                    more: e.functions.len().saturating_sub(PROFILE_ROWS),
                }),
                flame_graph: crate::explain::flame_graph(e),
                ..view(&e.candidate, &e.baseline, &e.warnings)
            },
            Why::OneProfile(change) => ExplainedView {
                one_profile: change
                    .functions
                    .iter()
                    .take(PROFILE_ROWS)
                    .map(|f| ExplainedFunction {
                        name: &f.name,
                        short: truncate(&f.name, NAME_CHARS).into_owned(),
                        object: &f.object,
                        old_s: f.old_s,
                        new_s: f.new_s,
                        change_s: f.change_s,
                        contribution: f.contribution,
                    })
                    .collect(),
                flame_graph: change.flame_graph.clone(),
                ..view(&change.candidate, &change.baseline, &change.warnings)
            },
        }
    }
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
mod tests {
    use super::super::tests::row;
    use super::super::{Control, CounterRow};
    use super::*;
    use perflab_model::Machine;
    use perflab_store::history::Shift;

    fn sample(names: &[&str]) -> ReportData {
        let labels: Vec<String> = ["v1", "v2", "v3"].iter().map(|s| s.to_string()).collect();
        let rows: Vec<RelativeTime> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let r = 0.9 + 0.1 * i as f64;
                let verdict = if r < 0.97 {
                    Verdict::Faster
                } else if r > 1.03 {
                    Verdict::Slower
                } else {
                    Verdict::Equivalent
                };
                row(n, r, r * 0.97, r * 1.03, verdict)
            })
            .collect();
        let page = MachinePage {
            description: "box (EPYC, 2 cores, Linux 6.1) [abc]".into(),
            reference: "v1".into(),
            labels: labels.clone(),
            comparisons: vec![LabelComparison {
                label: "v3".into(),
                rows,
                controls: vec![
                    Control {
                        benchmark: "nap".into(),
                        change: Ok(Ratio {
                            method: CiMethod::Sessions,
                            verdict: Verdict::Inconclusive,
                            ..row("nap", 1.003, 0.964, 1.043, Verdict::Inconclusive).change
                        }),
                    },
                    Control { benchmark: "idle".into(), change: Err("measured once: nothing to compare".into()) },
                ],
            }],
            histories: names
                .iter()
                .map(|n| BenchmarkHistory {
                    name: n.to_string(),
                    points: labels
                        .iter()
                        .enumerate()
                        .map(|(i, l)| Point {
                            label: l.clone(),
                            n: 10,
                            median: 0.01 * (1.0 + i as f64 * 0.1),
                            median_ci: Some((0.0099, 0.0102 + i as f64 * 0.001)),
                            incomplete: false,
                            sessions: 1,
                            busy_share: None,
                            vs_previous: None,
                        })
                        .collect(),
                    change_points: vec![Shift {
                        label: "v3".into(),
                        index: 2,
                        before: 0.0105,
                        after: 0.012,
                        ratio: 1.14,
                        ratio_ci: (1.1, 1.18),
                        p_value: 0.001,
                    }],
                })
                .collect(),
            counters: CounterTable {
                reference: "v1".into(),
                rows: names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| CounterRow {
                        benchmark: n.to_string(),
                        metric: "instructions".into(),
                        label: Some("v3".into()),
                        reference_value: Some(1e9),
                        value: Some(1.1e9),
                        change: if i == 0 {
                            Err("no interval: not measured in one session with v1, and v1 has no session of its own"
                                .into())
                        } else {
                            Ok(Ratio {
                                metric: "instructions".into(),
                                ..row(n, 1.1, 1.09, 1.11, Verdict::Slower).change
                            })
                        },
                    })
                    .collect(),
            },
            explained: Vec::new(),
            machines: vec![MachineGroup {
                labels: labels.clone(),
                machine: Machine {
                    hostname: "box\"1".into(),
                    cpu_model: "EPYC".into(),
                    cores: 2,
                    kernel: "6.1".into(),
                    governor: None,
                    pmu: false,
                    virtualization: Some("kvm".into()),
                    ..Machine::default()
                },
                perflab_version: "0.1.0".into(),
                environment: [("GLIBC_TUNABLES".to_string(), "<none>".to_string())].into(),
            }],
        };
        ReportData {
            title: "suite <b>".into(),
            generated_at: "2026-11-22T03:00:00Z".into(),
            metric: "wall_s".into(),
            matrices: vec![],
            pages: vec![page],
            notes: vec!["note & caveat".into()],
        }
    }

    #[test]
    fn every_user_string_is_escaped() {
        let evil = "<script>alert(1)</script>";
        let mut data = sample(&[evil, "x\" onmouseover=\"alert(2)"]);
        let page = &mut data.pages[0];
        page.labels.push(evil.into());
        page.reference = evil.into();
        page.description = evil.into();
        page.comparisons[0].label = evil.into();
        page.machines[0].environment.insert(evil.into(), evil.into());
        let html = render_html(&data);
        assert!(!html.contains("<script>alert"), "raw script tag in output");
        assert!(!html.contains("\" onmouseover="), "attribute injection");
        // askama escapes with numeric character references.
        assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"));
        assert!(html.contains("suite &#60;b&#62;") && html.contains("box&#34;1") && html.contains("note &#38; caveat"));
        // Exactly one script element: the page's own.
        assert_eq!(html.matches("<script").count(), 1);
    }

    #[test]
    fn one_bar_and_error_bar_per_benchmark_plus_the_geomean() {
        let html = render_html(&sample(&["a", "b", "c", "d"]));
        let forest = &html[html.find("<svg class=\"forest\"").unwrap()..];
        let forest = &forest[..forest.find("</svg>").unwrap()];
        assert_eq!(forest.matches("class=\"bar\"").count(), 4);
        assert_eq!(forest.matches("class=\"errbar\"").count(), 4);
        assert_eq!(html.matches("class=\"diamond\"").count(), 1);
        assert_eq!(html.matches("<figure class=\"h\"").count(), 4);
        assert_eq!(html.matches("class=\"cp up\"").count(), 4);
    }

    #[test]
    fn rows_are_sorted_slowest_first_and_coloured_by_verdict() {
        let html = render_html(&sample(&["fast", "same", "slow"]));
        let pos = |name: &str| html.find(&format!("data-name=\"{name}\"")).unwrap();
        assert!(pos("slow") < pos("same") && pos("same") < pos("fast"));
        assert!(html.contains("<g class=\"r slower\" data-name=\"slow\""));
        assert!(html.contains("<g class=\"r faster\" data-name=\"fast\""));
        assert!(html.contains("<g class=\"r equivalent\" data-name=\"same\""));
    }

    #[test]
    fn error_bar_spans_the_ci_on_the_log_axis() {
        let data = sample(&["only"]);
        let html = render_html(&data);
        let r = &data.pages[0].comparisons[0].rows[0].change;
        let scale = LogScale::covering(
            data.pages[0].comparisons[0]
                .rows
                .iter()
                .flat_map(|r| [r.change.ci_low, r.change.ci_high, r.change.ratio])
                .chain(geomean(&data.pages[0].comparisons[0].rows).iter().flat_map(|g| [g.ci_low, g.ci_high])),
            PLOT_LEFT,
            PLOT_RIGHT,
        );
        let expected = format!("M{} 11H{}", num(scale.px(r.ci_low)), num(scale.px(r.ci_high)));
        assert!(html.contains(&expected), "{expected} not in forest");
        assert!(scale.px(r.ci_low) < scale.px(r.ratio) && scale.px(r.ratio) < scale.px(r.ci_high));
    }

    #[test]
    fn large_suites_get_compact_scrolling_rows() {
        let names: Vec<String> = (0..200).map(|i| format!("bench-{i:03}")).collect();
        let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        let html = render_html(&sample(&refs));
        assert!(html.contains("<div class=\"scroll\"><svg class=\"forest\""));
        assert!(html.contains("data-row-height=\"15\""));
        assert_eq!(html.matches("<svg class=\"overview\"").count(), 1);
    }

    #[test]
    fn empty_report_still_renders_every_section() {
        let data = ReportData {
            title: "empty".into(),
            generated_at: String::new(),
            metric: "wall_s".into(),
            matrices: vec![],
            pages: vec![MachinePage {
                description: String::new(),
                reference: "base".into(),
                labels: vec![],
                comparisons: vec![],
                histories: vec![],
                counters: CounterTable::default(),
                machines: vec![],
                explained: Vec::new(),
            }],
            notes: vec![],
        };
        let html = render_html(&data);
        for id in ["relative", "history", "counters", "machine"] {
            assert!(html.contains(&format!("<section id=\"{id}\">")));
        }
        assert!(html.contains("No other label to compare"));
    }

    #[test]
    fn several_machines_get_a_matrix_and_a_part_each_with_their_own_section_ids() {
        let mut data = sample(&["a", "b"]);
        let mut second = data.pages[0].clone();
        second.description = "other box".into();
        data.pages.push(second);
        let columns = ["sandy", "haswell"].map(|name| perflab_store::history::matrix::MachineColumn {
            fingerprint: format!("{name}-fp"),
            name: name.into(),
            description: format!("{name} description"),
            machine: Machine::default(),
        });
        let cell = |r: f64, v: Verdict| Some(row("x", r, r * 0.98, r * 1.02, v).change);
        data.matrices.push(Matrix {
            metric: "wall_s".into(),
            reference: "gcc48".into(),
            label: "gcc54".into(),
            machines: columns.to_vec(),
            rows: vec![perflab_store::history::matrix::MatrixRow {
                benchmark: "vm_insns".into(),
                cells: vec![cell(1.059, Verdict::Slower), None],
            }],
        });
        let html = render_html(&data);
        assert!(html.contains("<section id=\"matrix\">") && html.contains("gcc54 vs gcc48"));
        assert!(html.contains("<td class=\"slower\" data-v=\"1.059\"") && html.contains("<td data-v=\"NaN\">—</td>"));
        assert!(html.contains("<h2 class=\"part\" id=\"part-2\">Machine 2: other box</h2>"));
        for id in ["relative", "history", "counters", "machine"] {
            assert!(
                html.contains(&format!("<section id=\"{id}\">")) && html.contains(&format!("<section id=\"{id}-2\">"))
            );
        }
        assert_eq!(html.matches("<table class=\"sortable").count(), 3, "the matrix and each machine's counters");
    }

    #[test]
    fn independent_intervals_say_so_in_the_tooltip() {
        let mut data = sample(&["a"]);
        data.pages[0].comparisons[0].rows[0].change.method = CiMethod::Independent;
        assert!(render_html(&data).contains("independent runs"));
    }

    /// Issue #28, row 5: a 0.1 % change was drawn as a full-height rise. The chart's axis
    /// spans at least the noise of two sessions, so it stays a small step; a real change
    /// still spans the chart.
    #[test]
    fn a_change_inside_the_noise_is_no_jump_on_the_history_chart() {
        let rise = |levels: [f64; 2]| {
            let mut data = sample(&["hot"]);
            let page = &mut data.pages[0];
            page.labels.truncate(2);
            page.histories[0].change_points.clear();
            page.histories[0].points.truncate(2);
            for (p, level) in page.histories[0].points.iter_mut().zip(levels) {
                p.median = level;
                p.median_ci = Some((level * 0.9995, level * 1.0005));
            }
            let page = &data.pages[0];
            let index: HashMap<&str, usize> = page.labels.iter().enumerate().map(|(i, l)| (l.as_str(), i)).collect();
            let chart = history_chart(&page.histories[0], page, &index, "s");
            let ys: Vec<f64> = chart
                .line
                .split(['M', 'L'])
                .filter(|p| !p.is_empty())
                .map(|p| p.split(' ').nth(1).unwrap().parse().unwrap())
                .collect();
            (ys[0] - ys[1]) / (HIST_HEIGHT - HIST_BOTTOM - HIST_TOP)
        };
        let small = rise([0.02711, 0.02714]);
        assert!(small > 0.0 && small < 0.05, "a 0.1 % change rises {:.0} % of the height", small * 100.0);
        let real = rise([0.02711, 0.0336]);
        assert!(real > 0.8, "a 24 % change rises {:.0} % of the height", real * 100.0);
    }

    /// The page's body as a reviewed snapshot: the markup every section draws for a
    /// small report (the style sheet and script are files of their own).
    #[test]
    fn the_page_body_matches_its_snapshot() {
        let html = render_html(&sample(&["parse", "render <fast>", "load"]));
        let body = &html[html.find("<header>").unwrap()..html.find("<script>").unwrap()];
        insta::assert_snapshot!(body);
    }

    #[test]
    fn a_machine_matrix_and_explained_functions_match_their_snapshot() {
        let mut data = sample(&["a"]);
        let mut second = data.pages[0].clone();
        second.description = "other box".into();
        data.pages.push(second);
        let columns = ["sandy", "haswell"].map(|name| perflab_store::history::matrix::MachineColumn {
            fingerprint: format!("{name}-fp"),
            name: name.into(),
            description: format!("{name} description"),
            machine: Machine::default(),
        });
        data.matrices.push(Matrix {
            metric: "wall_s".into(),
            reference: "v1".into(),
            label: "v3".into(),
            machines: columns.to_vec(),
            rows: vec![perflab_store::history::matrix::MatrixRow {
                benchmark: "a".into(),
                cells: vec![Some(row("a", 1.059, 1.04, 1.08, Verdict::Slower).change), None],
            }],
        });
        let html = render_html(&data);
        let matrix = &html[html.find("<section id=\"matrix\">").unwrap()..html.find("<h2 class=\"part\"").unwrap()];
        insta::assert_snapshot!(matrix);
    }

    /// "Why slower" for both methods: a regression explained from every run's samples
    /// (rows with intervals, coloured verdicts, contributions, the story) and one from an
    /// older store's single profile of each build.
    #[test]
    fn why_slower_shows_each_method_and_matches_its_snapshot() {
        let mut data = sample(&["a", "b"]);
        let comparison = |candidate: &str| perflab_model::Comparison::example_slower("A", candidate);
        let mut explanation = perflab_engine::fixtures::example_explanation();
        explanation.baseline = "A".into();
        explanation.candidate = "B".into();
        // A picture stored by an older perflab is shown as it was stored.
        explanation.stored_flame_graph = Some("<svg class=\"perflab-flame\"></svg>".into());
        let row: perflab_profile::diff::Change = serde_json::from_value(serde_json::json!({
            "name": "f_up<int>", "object": "[command]", "old_samples": 100, "new_samples": 130,
            "old_share": 0.1, "new_share": 0.13, "share_change": 0.03,
            "old_s": 0.1, "new_s": 0.13, "change_s": 0.03, "contribution": 0.9
        }))
        .unwrap();
        let change = perflab_store::ProfileChange {
            metric: "wall_s".into(),
            baseline: "A".into(),
            candidate: "C".into(),
            functions: vec![row],
            flame_graph: None,
            warnings: vec!["only 150 samples of `A` (one run at 1999 Hz): its shares are rough".into()],
            baseline_profile: Vec::new(),
            candidate_profile: Vec::new(),
        };
        data.pages[0].explained = vec![
            Explained {
                benchmark: "a".into(),
                label: "v2".into(),
                comparison: comparison("B"),
                why: Why::Sampled(Box::new(explanation)),
            },
            Explained {
                benchmark: "b".into(),
                label: "v2".into(),
                comparison: comparison("C"),
                why: Why::OneProfile(Box::new(change)),
            },
        ];
        let html = render_html(&data);
        let section = &html[html.find("<section id=\"explained\">").unwrap()..];
        let section = &section[..section.find("</section>").unwrap()];
        assert!(
            section.contains("<td class=\"slower\">slower</td>") && section.contains("B is 2.5 % [2.1, 2.9] slower")
        );
        assert!(section.contains("f_up&#60;int&#62;") && !section.contains("f_up<int>"), "names are escaped");
        assert!(section.contains("Explained from one profile of each build"));
        insta::assert_snapshot!(section);
    }
}
