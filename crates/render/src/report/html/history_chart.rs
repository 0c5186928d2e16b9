//! Every benchmark's history chart: its points per label, the reference line and the
//! change points found.

use super::*;

/// Every benchmark's history chart, benchmarks with the biggest change point first; a
/// thousand charts are laid out and rendered on every core.
pub(super) fn history_charts(page: &MachinePage, metric: &str) -> Vec<String> {
    if page.histories.iter().all(|h| h.points.is_empty()) {
        return Vec::new();
    }
    let label_index: HashMap<&str, usize> = page.labels.iter().enumerate().map(|(i, l)| (l.as_str(), i)).collect();
    let mut order: Vec<&BenchmarkHistory> = page.histories.iter().collect();
    let biggest_shift = |h: &BenchmarkHistory| h.change_points.iter().map(|c| c.ratio.ln().abs()).fold(0.0, f64::max);
    order.sort_by(|a, b| biggest_shift(b).total_cmp(&biggest_shift(a)).then_with(|| a.name.cmp(&b.name)));
    perflab_sys::parallel::map(
        &order,
        || (),
        |history, ()| {
            history_chart(history, page, &label_index, metric).render().expect("the history chart template renders")
        },
    )
}

#[derive(Template)]
#[template(path = "report/history_chart.html")]
pub(super) struct HistoryChart<'a> {
    pub(super) name: &'a str,
    pub(super) width: String,
    pub(super) height: String,
    /// The whole chart's tooltip: long histories have no per-point dots to hover.
    pub(super) tooltip: Option<String>,
    pub(super) ticks: Vec<Tick>,
    pub(super) grid: String,
    pub(super) reference: Option<ReferenceLine<'a>>,
    pub(super) axis_labels: Vec<AxisLabel>,
    pub(super) band: Option<String>,
    pub(super) line: String,
    pub(super) dots: Vec<HistoryDot<'a>>,
    pub(super) change_points: Vec<ChangePointMark<'a>>,
}

pub(super) struct ReferenceLine<'a> {
    pub(super) x: String,
    pub(super) y0: String,
    pub(super) y1: String,
    pub(super) label: &'a str,
}

/// The first and last label under the x axis.
pub(super) struct AxisLabel {
    pub(super) x: String,
    pub(super) y: String,
    pub(super) end: bool,
    pub(super) text: String,
}

pub(super) struct HistoryDot<'a> {
    pub(super) x: String,
    pub(super) y: String,
    pub(super) label: &'a str,
    pub(super) value: String,
    pub(super) ci: String,
    pub(super) n: usize,
    pub(super) metric: &'a str,
}

pub(super) struct ChangePointMark<'a> {
    pub(super) direction: &'static str,
    pub(super) label: &'a str,
    pub(super) before: String,
    pub(super) after: String,
    pub(super) change: String,
    pub(super) ci_low: String,
    pub(super) ci_high: String,
    pub(super) p: String,
    pub(super) x: String,
    pub(super) y0: String,
    pub(super) y1: String,
    pub(super) text_y: String,
    pub(super) metric: &'a str,
}

pub(super) fn history_chart<'a>(
    history: &'a BenchmarkHistory,
    page: &'a MachinePage,
    label_index: &HashMap<&str, usize>,
    metric_name: &'a str,
) -> HistoryChart<'a> {
    let unit = metric::unit(metric_name);
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
            "median {metric_name} {} at {} → {} at {} ({}, medians of separate sessions, not paired), {} labels",
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
                    .unwrap_or_default()
                    + if p.incomplete { " (incomplete: runs of an experiment stopped before its end)" } else { "" },
                n: p.n,
                metric: metric_name,
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
                metric: metric_name,
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
pub(super) fn minimum_span(values: &[f64]) -> Vec<f64> {
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let span = MIN_RELATIVE_SPAN * (lo.abs() + hi.abs()) / 2.0;
    if values.is_empty() || hi - lo >= span {
        return Vec::new();
    }
    let middle = (lo + hi) / 2.0;
    vec![middle - span / 2.0, middle + span / 2.0]
}
