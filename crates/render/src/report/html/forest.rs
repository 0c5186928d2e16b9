//! Each compared label's forest plot: ratios with their intervals on a log scale, an
//! overview when there are many rows, and the geometric mean.

use super::*;

/// One compared label's forest plot: summary, optional overview, axis, rows, geomean.
pub(super) struct ForestView<'a> {
    pub(super) label: &'a str,
    pub(super) summary: SummaryView,
    pub(super) overview: Option<OverviewView>,
    pub(super) axis: AxisView,
    pub(super) compact: bool,
    pub(super) width: String,
    pub(super) height: String,
    pub(super) row_height: String,
    pub(super) top: String,
    pub(super) grid: GridView,
    pub(super) rows: Vec<ForestRowView<'a>>,
    pub(super) geomean: Option<GeomeanView>,
    /// Benchmarks with the same command under both labels: the sessions' A/A check.
    pub(super) controls: Vec<ControlView<'a>>,
    /// Some row draws how far a relink moves it: the legend says what the band is.
    pub(super) relink_legend: bool,
}

/// A control's row: its ratio with interval, verdict and method, or why it has none.
pub(super) struct ControlView<'a> {
    pub(super) name: &'a str,
    pub(super) class: &'static str,
    pub(super) text: String,
    pub(super) verdict: &'static str,
    pub(super) tag: String,
}

pub(super) struct SummaryView {
    pub(super) geomean: Option<GeomeanText>,
    /// How the rows' ratios were made.
    pub(super) paired: usize,
    pub(super) sessions: usize,
    pub(super) slower: usize,
    pub(super) faster: usize,
    pub(super) equivalent: usize,
    pub(super) inconclusive: usize,
}

pub(super) struct GeomeanText {
    pub(super) ratio: String,
    pub(super) change: String,
    pub(super) ci_low: String,
    pub(super) ci_high: String,
    pub(super) n: usize,
}

impl GeomeanText {
    pub(super) fn of(g: &Geomean) -> GeomeanText {
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
pub(super) struct Tick {
    pub(super) x: String,
    pub(super) y: String,
    pub(super) text: String,
}

pub(super) struct OverviewView {
    pub(super) width: String,
    pub(super) height: String,
    pub(super) ticks: Vec<Tick>,
    pub(super) grid: String,
    pub(super) band: String,
    pub(super) line: String,
    pub(super) left: String,
    pub(super) right: String,
    pub(super) middle: String,
    pub(super) one: String,
    pub(super) bottom: String,
    pub(super) count: usize,
}

pub(super) struct AxisView {
    pub(super) width: String,
    pub(super) caption_x: String,
    pub(super) caption: String,
    pub(super) ticks: Vec<Tick>,
    pub(super) faster_x: String,
    pub(super) slower_x: String,
    pub(super) value_x: String,
}

/// Vertical grid lines as one path (one element instead of one per tick), 1× apart.
pub(super) struct GridView {
    pub(super) d: String,
    pub(super) x: String,
    pub(super) y0: String,
    pub(super) y1: String,
}

/// The bar from 1× to the ratio and the CI whisker with caps.
pub(super) struct MarksView {
    pub(super) bar_x: String,
    pub(super) bar_y: String,
    pub(super) bar_width: String,
    pub(super) bar_height: String,
    pub(super) errbar: String,
}

pub(super) struct ForestRowView<'a> {
    pub(super) class: &'static str,
    pub(super) name: &'a str,
    pub(super) short: String,
    pub(super) y: String,
    pub(super) ratio: String,
    pub(super) change: String,
    pub(super) confidence: String,
    pub(super) ci_low: String,
    pub(super) ci_high: String,
    pub(super) p: String,
    pub(super) n: usize,
    pub(super) method: &'static str,
    /// The method (and the metric, when not the page's) printed beside the number.
    pub(super) tag: String,
    pub(super) name_x: String,
    pub(super) text_y: String,
    pub(super) cy: String,
    pub(super) marks: MarksView,
    pub(super) dot_x: String,
    pub(super) dot_r: &'static str,
    pub(super) value_x: String,
    /// What relinking alone moves this benchmark, when measured.
    pub(super) layouts: Option<RelinkBand>,
}

/// The ratios two builds of one source reach by layout alone, drawn as a band around 1×
/// behind the row's bar, with its sentence in the tooltip.
pub(super) struct RelinkBand {
    pub(super) x: String,
    pub(super) width: String,
    pub(super) height: String,
    pub(super) sentence: String,
}

pub(super) struct GeomeanView {
    pub(super) width: String,
    pub(super) height: String,
    pub(super) n: usize,
    pub(super) ratio: String,
    pub(super) change: String,
    pub(super) ci_low: String,
    pub(super) ci_high: String,
    pub(super) grid: GridView,
    pub(super) name_x: String,
    pub(super) text_y: String,
    pub(super) marks: MarksView,
    pub(super) diamond: String,
    pub(super) value_x: String,
}

pub(super) fn forest_view<'a>(comparison: &'a LabelComparison, page: &MachinePage, metric: &str) -> ForestView<'a> {
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
        relink_legend: rows.iter().any(|r| r.layout_spread.is_some()),
    }
}

/// For long suites: every ratio at a glance, sorted as the rows below (slowest left),
/// with the CI band, so the share of regressions shows before any scrolling.
pub(super) fn overview(rows: &[&RelativeTime]) -> Option<OverviewView> {
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

pub(super) fn grid(scale: &LogScale, ticks: &[f64], y0: f64, y1: f64) -> GridView {
    let mut d = String::new();
    for &t in ticks.iter().filter(|&&t| t != 1.0) {
        let _ = write!(d, "M{} {}V{}", num(scale.px(t)), num(y0), num(y1));
    }
    GridView { d, x: num(scale.px(1.0)), y0: num(y0), y1: num(y1) }
}

pub(super) fn marks(scale: &LogScale, ratio: f64, lo: f64, hi: f64, cy: f64, row_height: f64) -> MarksView {
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
pub(super) fn tag(r: &Ratio, page_metric: &str) -> String {
    if r.metric == page_metric || r.metric.is_empty() {
        r.method.short().to_string()
    } else {
        format!("{}, {}", r.method.short(), r.metric)
    }
}

pub(super) fn forest_row<'a>(
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
        layouts: relative.layout_spread.as_ref().map(|seen| {
            // Two builds of one source land this far apart by layout alone (95 %).
            let reach = perflab_engine::analysis::layouts::relink_reach(seen.spread);
            // Kept inside the plot: a spread wider than the axis shows as a full band.
            let (lo, hi) = (scale.px((-reach).exp()).max(PLOT_LEFT), scale.px(reach.exp()).min(PLOT_RIGHT));
            let sentence = format!(
                "layouts of this benchmark differ by ±{} % ({} in `{}`): two builds of one source land up to {} – {} apart by layout alone (the band)",
                perflab_model::units::format_percent(seen.spread * 100.0),
                seen.metric,
                seen.label,
                format_ratio((-reach).exp()),
                format_ratio(reach.exp())
            );
            RelinkBand {
                x: num(lo.min(hi)),
                width: num((hi - lo).abs().max(1.0)),
                height: num(row_height - 4.0),
                sentence,
            }
        }),
    }
}

pub(super) fn geomean_view(g: &Geomean, scale: &LogScale, ticks: &[f64]) -> GeomeanView {
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
