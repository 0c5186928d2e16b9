//! The report page: one self-contained HTML file (inline CSS, inline SVG, a few lines
//! of inline JS for the name filter) that opens offline and from a file: URL.

use super::svg::{format_change, format_value, num, tick_labels, truncate, LinearScale, LogScale};
use super::{
    geomean, CounterTable, Explained, Geomean, LabelComparison, MachineGroup, MachinePage, Ratio, RelativeTime,
    ReportData,
};
use crate::history::matrix::Matrix;
use crate::history::{BenchmarkHistory, Point};
use crate::model::{metric, Verdict};
use crate::render::markup::esc;
use crate::units::{format_p, format_ratio};
use std::collections::HashMap;
use std::fmt::Write;

/// Forest plot geometry (pixels). Names sit left of the plot, values right of it.
const FOREST_WIDTH: f64 = 980.0;
const NAME_WIDTH: f64 = 300.0;
const VALUE_WIDTH: f64 = 190.0;
const PLOT_LEFT: f64 = NAME_WIDTH + 12.0;
const PLOT_RIGHT: f64 = FOREST_WIDTH - VALUE_WIDTH - 12.0;
/// Characters of a benchmark name shown before the ellipsis (the tooltip has all).
const NAME_CHARS: usize = 44;
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

const STYLE: &str = r#"
:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;--line:#d1d9e0;--grid:#e8ecf0;
--faster:#1a7f37;--slower:#cf222e;--equivalent:#8c959f;--inconclusive:#b7bfc7;--accent:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--panel:#151b23;
--line:#3d444d;--grid:#262c36;--faster:#3fb950;--slower:#f85149;--equivalent:#8b949e;--inconclusive:#5a626b;--accent:#4493f8}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1040px;padding:24px 20px 60px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:36px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:22px 0 6px}
.meta,.muted{color:var(--muted)}nav a{margin-right:14px;color:var(--accent)}
.notes{background:var(--panel);border-left:4px solid var(--slower);padding:8px 12px;margin:12px 0}
.notes li{margin:2px 0}
input[type=search]{width:100%;max-width:420px;padding:6px 10px;font:inherit;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg);margin:12px 0}
.summary{font-size:15px}.summary b.faster{color:var(--faster)}.summary b.slower{color:var(--slower)}
.legend span{display:inline-block;margin-right:16px}.legend i{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:5px;vertical-align:-1px}
.scroll{max-height:72vh;overflow:auto;border:1px solid var(--line);border-radius:6px}
.wide{overflow-x:auto}details.explained{margin:10px 0 22px}details.explained summary{cursor:pointer;font-size:15px}.flame svg{max-width:100%;height:auto}
svg{display:block;font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
svg text{fill:var(--fg)}svg .tick{fill:var(--muted);font-size:11px}
.grid{stroke:var(--grid);stroke-width:1;fill:none}.unity{stroke:var(--muted);stroke-width:1.2}
.axisline{stroke:var(--line)}
g.r .hit{fill:transparent}g.r:hover .hit{fill:var(--panel)}
.bar{fill-opacity:.28}.errbar{fill:none;stroke-width:1.6}.dot{stroke:none}
.faster .bar,.faster .dot{fill:var(--faster)}.faster .errbar{stroke:var(--faster)}
.slower .bar,.slower .dot{fill:var(--slower)}.slower .errbar{stroke:var(--slower)}
.equivalent .bar,.equivalent .dot{fill:var(--equivalent)}.equivalent .errbar{stroke:var(--equivalent)}
.inconclusive .bar,.inconclusive .dot{fill:var(--inconclusive)}.inconclusive .errbar{stroke:var(--inconclusive)}
.val{font-variant-numeric:tabular-nums}.geomean .diamond,.geomean .bar{fill:var(--accent)}.geomean .errbar{stroke:var(--accent)}
.histories{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:10px 14px}
figure.h{margin:0;padding:6px 4px 2px;border:1px solid var(--line);border-radius:6px}
figure.h figcaption{font-size:12.5px;font-weight:600;padding:0 6px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.band{fill:var(--accent);fill-opacity:.16;stroke:none}.hline{fill:none;stroke:var(--accent);stroke-width:1.6}
.hdot{fill:var(--accent)}.refline{stroke:var(--muted);stroke-dasharray:2 3}
.cp line{stroke-width:1.5;stroke-dasharray:4 3}.cp.up line{stroke:var(--slower)}.cp.down line{stroke:var(--faster)}
.cp.up text{fill:var(--slower)}.cp.down text{fill:var(--faster)}.cp text{font-size:11px;font-weight:600}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;width:100%}
th,td{padding:4px 10px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{background:var(--panel);position:sticky;top:0}th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}
td.name{max-width:320px;overflow:hidden;text-overflow:ellipsis}
table.kv{width:auto}table.kv th{text-align:left;position:static}table.kv td{text-align:left;white-space:normal}
table.sortable th{cursor:pointer;user-select:none}table.sortable th::after{content:" ↕";color:var(--muted);font-size:11px}
table.sortable th[aria-sort=ascending]::after{content:" ↑"}table.sortable th[aria-sort=descending]::after{content:" ↓"}
table.matrix td.slower{color:var(--slower)}table.matrix td.faster{color:var(--faster)}table.matrix td.inconclusive{color:var(--muted)}
h2.part{font-size:22px;margin:48px 0 0;padding:8px 12px;background:var(--panel);border:1px solid var(--line);border-radius:6px}
footer{margin-top:40px;color:var(--muted);font-size:12px}
@media print{.scroll{max-height:none;overflow:visible}input[type=search]{display:none}figure.h{break-inside:avoid}}
"#;

/// The page script: a benchmark-name filter that re-packs the forest plots' rows, tables
/// sorted by the column clicked (numbers by their `data-v` value, missing ones last), and
/// `data-ready` on <html> once the page has loaded (tests and screenshots wait for it).
const SCRIPT: &str = r#"
(function(){
var root=document.documentElement,box=document.getElementById('filter');
function apply(){
 var q=box?box.value.toLowerCase():'';
 document.querySelectorAll('svg.forest').forEach(function(svg){
  var rh=+svg.getAttribute('data-row-height'),top=+svg.getAttribute('data-top'),i=0;
  svg.querySelectorAll('g.r').forEach(function(g){
   var show=g.getAttribute('data-name').toLowerCase().indexOf(q)>=0;
   g.style.display=show?'':'none';
   if(show){g.setAttribute('transform','translate(0,'+(top+i*rh)+')');i++;}
  });
  svg.setAttribute('height',top*2+Math.max(i,1)*rh);
 });
 document.querySelectorAll('[data-filter]').forEach(function(el){
  el.style.display=el.getAttribute('data-filter').toLowerCase().indexOf(q)>=0?'':'none';
 });
}
if(box)box.addEventListener('input',apply);
document.querySelectorAll('table.sortable').forEach(function(t){
 var heads=t.tHead.rows[0].cells;
 [].forEach.call(heads,function(th,i){
  th.addEventListener('click',function(){
   var dir=th.getAttribute('aria-sort')==='ascending'?-1:1,body=t.tBodies[0],rows=[].slice.call(body.rows);
   [].forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
   th.setAttribute('aria-sort',dir>0?'ascending':'descending');
   function key(r){var c=r.cells[i],v=c?c.getAttribute('data-v'):null;return v===null?(c?c.textContent:''):parseFloat(v);}
   rows.sort(function(a,b){var x=key(a),y=key(b);
    if(typeof x==='number'){if(isNaN(x))return isNaN(y)?0:1;if(isNaN(y))return -1;return dir*(x-y);}
    return dir*String(x).localeCompare(String(y));});
   rows.forEach(function(r){body.appendChild(r);});
  });
 });
});
window.addEventListener('load',function(){root.setAttribute('data-ready','1');});
})();
"#;

/// Render the whole report as one self-contained HTML document.
pub fn render_html(data: &ReportData) -> String {
    let most = |f: fn(&MachinePage) -> usize| data.pages.iter().map(f).max().unwrap_or(0);
    let benchmarks = most(|p| p.histories.len().max(p.comparisons.iter().map(|c| c.rows.len()).max().unwrap_or(0)));
    let labels = most(|p| p.labels.len());
    // Roughly 600 bytes per forest row and 1.5 kB per history chart.
    let charts: usize =
        data.pages.iter().map(|p| p.histories.len() * 2048 + p.comparisons.len() * 600 * benchmarks).sum();
    let mut out = String::with_capacity(8192 + charts);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n",
        esc(&data.title)
    );
    let several = data.pages.len() > 1;
    let reference = data.pages.first().map(|p| esc(&p.reference).into_owned()).unwrap_or_default();
    let _ = write!(
        out,
        "<header><h1>{}</h1><p class=\"meta\">Metric <b>{}</b> · reference label <b>{reference}</b> · {} benchmark{} · {} label{}{} · generated {}</p><nav>",
        esc(&data.title),
        esc(&data.metric),
        benchmarks,
        plural(benchmarks),
        labels,
        plural(labels),
        if several { format!(" · {} machines, never pooled", data.pages.len()) } else { String::new() },
        esc(&data.generated_at),
    );
    if several {
        out.push_str("<a href=\"#matrix\">Builds × machines</a>");
        for (i, page) in data.pages.iter().enumerate() {
            let _ = write!(
                out,
                "<a href=\"#{}\" title=\"{}\">Machine {}</a>",
                section_id("part", i),
                esc(&page.description),
                i + 1
            );
        }
    } else {
        out.push_str("<a href=\"#relative\">Relative time</a>");
        if data.pages.iter().any(|p| !p.explained.is_empty()) {
            out.push_str("<a href=\"#explained\">Why slower</a>");
        }
        out.push_str(
            "<a href=\"#history\">History</a><a href=\"#counters\">Counters</a><a href=\"#machine\">Machine</a>",
        );
    }
    out.push_str("</nav></header>\n");
    if !data.notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for note in &data.notes {
            let _ = write!(out, "<li>{}</li>", esc(note));
        }
        out.push_str("</ul>\n");
    }
    if benchmarks > 1 {
        out.push_str("<input type=\"search\" id=\"filter\" placeholder=\"Filter benchmarks by name\" aria-label=\"Filter benchmarks by name\">\n");
    }
    if several {
        out.push_str("<section id=\"matrix\"><h2>Builds × machines</h2>\n");
        for m in &data.matrices {
            matrix_section(&mut out, m);
        }
        if data.matrices.is_empty() {
            out.push_str("<p class=\"muted\">No other label to compare with the reference label.</p>");
        }
        out.push_str("</section>\n");
    }
    for (i, page) in data.pages.iter().enumerate() {
        page_sections(&mut out, page, &data.metric, i, several);
    }
    let _ = write!(
        out,
        "<footer>Generated by perflab {} · ratios are label ÷ reference: above 1× is a larger value (slower for a time, better for a higher-is-better metric such as tps) · \
         error bars and bands are 95 % confidence intervals · methods: docs/report.md</footer>\n\
         <script>{SCRIPT}</script></body></html>\n",
        esc(env!("CARGO_PKG_VERSION"))
    );
    out
}

/// The id of section `name` of part `index`: the first machine's keep the plain names.
fn section_id(name: &str, index: usize) -> String {
    if index == 0 {
        name.to_string()
    } else {
        format!("{name}-{}", index + 1)
    }
}

/// One machine's sections: relative time, history, counters, machine.
fn page_sections(out: &mut String, page: &MachinePage, metric: &str, index: usize, several: bool) {
    if several {
        let _ = writeln!(
            out,
            "<h2 class=\"part\" id=\"{}\">Machine {}: {}</h2>",
            section_id("part", index),
            index + 1,
            esc(&page.description)
        );
    }
    let _ = writeln!(out, "<section id=\"{}\"><h2>Relative execution time</h2>", section_id("relative", index));
    if page.comparisons.is_empty() {
        let _ = write!(
            out,
            "<p class=\"muted\">No other label to compare with the reference label <b>{}</b>.</p>",
            esc(&page.reference)
        );
    }
    for comparison in &page.comparisons {
        forest_section(out, comparison, page, metric);
    }
    out.push_str("</section>\n");
    if !page.explained.is_empty() {
        let _ = writeln!(out, "<section id=\"{}\"><h2>Why slower</h2>", section_id("explained", index));
        explained_section(out, &page.explained);
        out.push_str("</section>\n");
    }
    let _ = writeln!(out, "<section id=\"{}\"><h2>History</h2>", section_id("history", index));
    history_section(out, page, metric);
    out.push_str("</section>\n");
    let _ = writeln!(out, "<section id=\"{}\"><h2>Counters</h2>", section_id("counters", index));
    counter_section(out, &page.counters);
    out.push_str("</section>\n");
    let _ = writeln!(out, "<section id=\"{}\"><h2>Machine and environment</h2>", section_id("machine", index));
    machine_section(out, &page.machines);
    out.push_str("</section>\n");
}

/// label ÷ reference per benchmark on every machine, side by side; sortable by any column.
fn matrix_section(out: &mut String, m: &Matrix) {
    let _ = write!(
        out,
        "<h3>{} vs {} <span class=\"muted\">({}, each machine on its own)</span></h3><div class=\"wide\">\
         <table class=\"sortable matrix\"><thead><tr><th>benchmark</th>",
        esc(&m.label),
        esc(&m.reference),
        esc(&m.metric)
    );
    for c in &m.machines {
        let _ = write!(out, "<th title=\"{}\">{}</th>", esc(&c.description), esc(&c.name));
    }
    out.push_str("</tr></thead><tbody>");
    for row in &m.rows {
        let name = esc(&row.benchmark);
        let _ = write!(
            out,
            "<tr data-filter=\"{name}\"><td class=\"name\" title=\"{name}\">{}</td>",
            esc(&truncate(&row.benchmark, NAME_CHARS))
        );
        for cell in &row.cells {
            match cell {
                Some(r) => {
                    let _ = write!(
                        out,
                        "<td class=\"{}\" data-v=\"{}\" title=\"{}, {} – {} ({}), {}\">{} <span class=\"tick\">{} – {}</span></td>",
                        verdict_class(r.verdict),
                        r.ratio,
                        verdict_class(r.verdict),
                        format_ratio(r.ci_low),
                        format_ratio(r.ci_high),
                        r.method.describe(),
                        format_change(r.ratio),
                        format_ratio(r.ratio),
                        format_ratio(r.ci_low),
                        format_ratio(r.ci_high)
                    );
                }
                None => out.push_str("<td data-v=\"NaN\">—</td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn verdict_class(verdict: Verdict) -> &'static str {
    verdict.as_str()
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

fn forest_section(out: &mut String, comparison: &LabelComparison, page: &MachinePage, metric: &str) {
    let rows = sorted_by_change(&comparison.rows);
    let gm = geomean(&comparison.rows);
    let _ = writeln!(
        out,
        "<h3>{} vs {} <span class=\"muted\">({})</span></h3>",
        esc(&comparison.label),
        esc(&page.reference),
        esc(metric)
    );
    summary_line(out, &comparison.rows, gm);
    out.push_str(
        "<p class=\"legend muted\"><span><i style=\"background:var(--slower)\"></i>slower</span>\
         <span><i style=\"background:var(--faster)\"></i>faster</span>\
         <span><i style=\"background:var(--equivalent)\"></i>equivalent</span>\
         <span><i style=\"background:var(--inconclusive)\"></i>inconclusive</span>\
         <span>bar: change from 1×; whisker: 95 % CI; log scale</span></p>\n",
    );
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

    if compact {
        overview_svg(out, &rows);
    }
    // The axis sits outside the scrolling box so it stays visible for long suites.
    axis_svg(out, &scale, &ticks, &format!("{} ÷ {}", comparison.label, page.reference));

    let top = 4.0;
    let height = top * 2.0 + rows.len().max(1) as f64 * row_height;
    out.push_str(if compact { "<div class=\"scroll\">" } else { "<div class=\"wide\">" });
    let _ = write!(
        out,
        "<svg class=\"forest\" width=\"{w}\" height=\"{h}\" data-row-height=\"{rh}\" data-top=\"{top}\" role=\"img\" aria-label=\"relative {m} per benchmark\">",
        w = num(FOREST_WIDTH),
        h = num(height),
        rh = num(row_height),
        top = num(top),
        m = esc(metric),
    );
    grid_lines(out, &scale, &ticks, 0.0, height.max(4000.0 * row_height));
    for (i, row) in rows.iter().enumerate() {
        forest_row(out, row, &scale, top + i as f64 * row_height, row_height, compact);
    }
    out.push_str("</svg></div>\n");
    if let Some(g) = gm {
        geomean_svg(out, &g, &scale, &ticks);
    }
}

/// For long suites: every ratio at a glance, sorted as the rows below (slowest left),
/// with the CI band, so the share of regressions shows before any scrolling.
fn overview_svg(out: &mut String, rows: &[&RelativeTime]) {
    let (width, height, left, right, top, bottom) = (FOREST_WIDTH, 150.0, 64.0, 12.0, 10.0, 22.0);
    let usable: Vec<&Ratio> = rows.iter().map(|r| &r.change).filter(|r| r.ratio.is_finite() && r.ratio > 0.0).collect();
    if usable.len() < 2 {
        return;
    }
    let y = LogScale::covering(usable.iter().flat_map(|r| [r.ratio, r.ci_low, r.ci_high]), height - bottom, top);
    let x = |i: usize| left + i as f64 / (usable.len() - 1) as f64 * (width - left - right);
    let _ = write!(
        out,
        "<svg class=\"overview\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"all ratios sorted\">",
        num(width),
        num(height)
    );
    let mut grid = String::new();
    for t in y.ticks(22.0) {
        let py = num(y.px(t));
        if t != 1.0 {
            let _ = write!(grid, "M{} {py}H{}", num(left), num(width - right));
        }
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            num(left - 6.0),
            num(y.px(t) + 4.0),
            format_ratio(t)
        );
    }
    let _ = write!(out, "<path class=\"grid\" d=\"{grid}\"/>");
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
    let one = num(y.px(1.0));
    let _ = writeln!(
        out,
        "<path class=\"band\" d=\"{band}Z\"/><line class=\"unity\" x1=\"{}\" x2=\"{}\" y1=\"{one}\" y2=\"{one}\"/><path class=\"hline\" d=\"{line}\"/>\
         <text class=\"tick\" x=\"{}\" y=\"{}\">slowest</text><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{} benchmarks sorted by change (ratio and 95 % CI band)</text>\
         <text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">fastest</text></svg>",
        num(left),
        num(width - right),
        num(left),
        num(height - 6.0),
        num((left + width - right) / 2.0),
        num(height - 6.0),
        usable.len(),
        num(width - right),
        num(height - 6.0),
    );
}

fn summary_line(out: &mut String, rows: &[RelativeTime], gm: Option<Geomean>) {
    let count = |v: Verdict| rows.iter().filter(|r| r.change.verdict == v).count();
    out.push_str("<p class=\"summary\">");
    if let Some(g) = gm {
        let _ = write!(
            out,
            "Geometric mean <b>{}</b> ({}), 95 % CI {} – {}, over {} benchmark{}. ",
            format_ratio(g.ratio),
            format_change(g.ratio),
            format_ratio(g.ci_low),
            format_ratio(g.ci_high),
            g.n,
            plural(g.n)
        );
    }
    let _ = writeln!(
        out,
        "<b class=\"slower\">{} slower</b>, <b class=\"faster\">{} faster</b>, {} equivalent, {} inconclusive.</p>",
        count(Verdict::Slower),
        count(Verdict::Faster),
        count(Verdict::Equivalent),
        count(Verdict::Inconclusive)
    );
}

fn axis_svg(out: &mut String, scale: &LogScale, ticks: &[f64], caption: &str) {
    let _ = write!(out, "<svg class=\"axis\" width=\"{}\" height=\"34\">", num(FOREST_WIDTH));
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"26\" text-anchor=\"end\" class=\"tick\">{}</text>",
        num(NAME_WIDTH - 12.0),
        esc(caption)
    );
    for &t in ticks {
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{}\" y=\"26\" text-anchor=\"middle\">{}</text>",
            num(scale.px(t)),
            format_ratio(t)
        );
    }
    let _ = write!(
        out,
        "<text class=\"tick\" x=\"{}\" y=\"12\" text-anchor=\"end\">← faster</text><text class=\"tick\" x=\"{}\" y=\"12\">slower →</text>\
         <text class=\"tick\" x=\"{}\" y=\"26\">ratio (95 % CI)</text></svg>",
        num(scale.px(1.0) - 6.0),
        num(scale.px(1.0) + 6.0),
        num(PLOT_RIGHT + 14.0)
    );
}

/// Vertical grid lines as one path (one element instead of one per tick), 1× stronger.
fn grid_lines(out: &mut String, scale: &LogScale, ticks: &[f64], y0: f64, y1: f64) {
    let mut d = String::new();
    for &t in ticks.iter().filter(|&&t| t != 1.0) {
        let _ = write!(d, "M{} {}V{}", num(scale.px(t)), num(y0), num(y1));
    }
    let _ = write!(out, "<path class=\"grid\" d=\"{d}\"/>");
    let x1 = num(scale.px(1.0));
    let _ = write!(out, "<line class=\"unity\" x1=\"{x1}\" x2=\"{x1}\" y1=\"{}\" y2=\"{}\"/>", num(y0), num(y1));
}

/// The bar from 1× to the ratio, the CI whisker with caps and the point estimate.
fn ratio_marks(out: &mut String, scale: &LogScale, ratio: f64, lo: f64, hi: f64, cy: f64, row_height: f64) {
    let x1 = scale.px(1.0);
    let x = scale.px(ratio);
    let bar = (row_height * 0.55).round();
    let cap = (row_height * 0.25).round();
    let _ = write!(
        out,
        "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
        num(x.min(x1)),
        num(cy - bar / 2.0),
        num((x - x1).abs().max(1.0)),
        num(bar)
    );
    let (xl, xh) = (scale.px(lo), scale.px(hi));
    let _ = write!(
        out,
        "<path class=\"errbar\" d=\"M{l} {cy}H{h}M{l} {a}V{b}M{h} {a}V{b}\"/>",
        l = num(xl),
        h = num(xh),
        cy = num(cy),
        a = num(cy - cap),
        b = num(cy + cap)
    );
}

fn forest_row(out: &mut String, relative: &RelativeTime, scale: &LogScale, y: f64, row_height: f64, compact: bool) {
    let row = &relative.change;
    let cy = row_height / 2.0;
    let text_y = num(cy + 4.0);
    let p = row.p_value.map(|p| format!(", p = {}", format_p(p))).unwrap_or_default();
    let _ = write!(
        out,
        "<g class=\"r {cls}\" data-name=\"{name}\" transform=\"translate(0,{y})\"><title>{name}\n{ratio} ({change}), {conf:.0} % CI {lo} – {hi}\n{verdict}{p}, n = {n}, {method}</title>\
         <rect class=\"hit\" x=\"0\" y=\"0\" width=\"{w}\" height=\"{rh}\"/>\
         <text x=\"{nx}\" y=\"{text_y}\" text-anchor=\"end\">{short}</text>",
        cls = verdict_class(row.verdict),
        name = esc(&relative.benchmark),
        y = num(y),
        ratio = format_ratio(row.ratio),
        change = format_change(row.ratio),
        conf = row.confidence * 100.0,
        lo = format_ratio(row.ci_low),
        hi = format_ratio(row.ci_high),
        verdict = row.verdict.as_str(),
        n = row.n,
        method = row.method.describe(),
        w = num(FOREST_WIDTH),
        rh = num(row_height),
        nx = num(NAME_WIDTH),
        short = esc(&truncate(&relative.benchmark, NAME_CHARS)),
    );
    ratio_marks(out, scale, row.ratio, row.ci_low, row.ci_high, cy, row_height);
    let _ = write!(
        out,
        "<circle class=\"dot\" cx=\"{}\" cy=\"{}\" r=\"{}\"/><text class=\"val\" x=\"{}\" y=\"{text_y}\">{} <tspan class=\"tick\">{} – {}</tspan></text></g>",
        num(scale.px(row.ratio)),
        num(cy),
        if compact { "2.5" } else { "3.5" },
        num(PLOT_RIGHT + 14.0),
        format_ratio(row.ratio),
        format_ratio(row.ci_low),
        format_ratio(row.ci_high),
    );
}

fn geomean_svg(out: &mut String, g: &Geomean, scale: &LogScale, ticks: &[f64]) {
    let height = 30.0;
    let cy = height / 2.0;
    let _ = write!(out, "<svg class=\"geomean\" width=\"{}\" height=\"{}\"><title>geometric mean of {} ratios: {} ({}), 95 % CI {} – {}</title>",
        num(FOREST_WIDTH), num(height), g.n, format_ratio(g.ratio), format_change(g.ratio), format_ratio(g.ci_low), format_ratio(g.ci_high));
    grid_lines(out, scale, ticks, 0.0, height);
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-weight=\"600\">geometric mean</text>",
        num(NAME_WIDTH),
        num(cy + 4.0)
    );
    ratio_marks(out, scale, g.ratio, g.ci_low, g.ci_high, cy, 22.0);
    let x = scale.px(g.ratio);
    let _ = writeln!(
        out,
        "<path class=\"diamond\" d=\"M{} {}L{} {}L{} {}L{} {}Z\"/><text class=\"val\" x=\"{}\" y=\"{}\" font-weight=\"600\">{} <tspan class=\"tick\">{} – {}</tspan></text></svg>",
        num(x), num(cy - 7.0), num(x + 6.0), num(cy), num(x), num(cy + 7.0), num(x - 6.0), num(cy),
        num(PLOT_RIGHT + 14.0), num(cy + 4.0), format_ratio(g.ratio), format_ratio(g.ci_low), format_ratio(g.ci_high)
    );
}

fn history_section(out: &mut String, page: &MachinePage, metric: &str) {
    let unit = metric::unit(metric);
    if page.histories.iter().all(|h| h.points.is_empty()) {
        out.push_str("<p class=\"muted\">No history yet: store results under more labels to see trends.</p>\n");
        return;
    }
    let _ = write!(
        out,
        "<p class=\"muted\">Median {} per label (oldest left) with its 95 % CI band; dashed lines mark change points \
         (the first label after a shift), dotted the reference label. Benchmarks with change points come first.</p>\n<div class=\"histories\">",
        esc(metric)
    );
    let label_index: HashMap<&str, usize> = page.labels.iter().enumerate().map(|(i, l)| (l.as_str(), i)).collect();
    let mut order: Vec<&BenchmarkHistory> = page.histories.iter().collect();
    let biggest_shift = |h: &BenchmarkHistory| h.change_points.iter().map(|c| c.ratio.ln().abs()).fold(0.0, f64::max);
    order.sort_by(|a, b| biggest_shift(b).total_cmp(&biggest_shift(a)).then_with(|| a.name.cmp(&b.name)));
    // A thousand charts are drawn on every core.
    let charts = crate::parallel::map(
        &order,
        || (),
        |history, ()| {
            let mut chart = String::new();
            history_chart(&mut chart, history, page, &label_index, unit);
            chart
        },
    );
    out.extend(charts);
    out.push_str("</div>\n");
}

fn history_chart(
    out: &mut String,
    history: &BenchmarkHistory,
    page: &MachinePage,
    label_index: &HashMap<&str, usize>,
    unit: &str,
) {
    let name = esc(&history.name);
    let _ = write!(out, "<figure class=\"h\" data-filter=\"{name}\"><figcaption title=\"{name}\">{name}</figcaption>");
    let points: Vec<(f64, &Point)> = history
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (label_index.get(p.label.as_str()).copied().unwrap_or(i) as f64, p))
        .collect();
    let last_x = (page.labels.len().max(history.points.len()).max(2) - 1) as f64;
    let x = |i: f64| HIST_LEFT + i / last_x * (HIST_WIDTH - HIST_LEFT - HIST_RIGHT);
    let y_scale = LinearScale::covering(
        points.iter().flat_map(|(_, p)| {
            let (lo, hi) = p.median_ci.unwrap_or((p.median, p.median));
            [p.median, lo, hi]
        }),
        HIST_HEIGHT - HIST_BOTTOM,
        HIST_TOP,
    );
    let _ = write!(
        out,
        "<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">",
        num(HIST_WIDTH),
        num(HIST_HEIGHT),
        num(HIST_WIDTH),
        num(HIST_HEIGHT)
    );
    // The whole chart's tooltip: long histories have no per-point dots to hover.
    if let (Some((_, first)), Some((_, last))) = (points.first(), points.last()) {
        let _ = write!(
            out,
            "<title>{name}: {} at {} → {} at {} ({}), {} labels</title>",
            esc(&format_value(first.median, unit)),
            esc(&first.label),
            esc(&format_value(last.median, unit)),
            esc(&last.label),
            format_change(last.median / first.median),
            points.len()
        );
    }
    let mut grid = String::new();
    let ticks = y_scale.ticks(3);
    for (&t, label) in ticks.iter().zip(tick_labels(&ticks, unit)) {
        let y = num(y_scale.px(t));
        let _ = write!(grid, "M{} {y}H{}", num(HIST_LEFT), num(HIST_WIDTH - HIST_RIGHT));
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            num(HIST_LEFT - 4.0),
            num(y_scale.px(t) + 4.0),
            esc(&label)
        );
    }
    let _ = write!(out, "<path class=\"grid\" d=\"{grid}\"/>");
    if let Some(&r) = label_index.get(page.reference.as_str()) {
        let rx = num(x(r as f64));
        let _ = write!(out, "<line class=\"refline\" x1=\"{rx}\" x2=\"{rx}\" y1=\"{}\" y2=\"{}\"><title>reference label {}</title></line>", num(HIST_TOP), num(HIST_HEIGHT - HIST_BOTTOM), esc(&page.reference));
    }
    if let (Some(first), Some(last)) = (page.labels.first(), page.labels.last()) {
        let base = num(HIST_HEIGHT - 5.0);
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{}\" y=\"{base}\">{}</text>",
            num(HIST_LEFT),
            esc(&truncate(first, 18))
        );
        if page.labels.len() > 1 {
            let _ = write!(
                out,
                "<text class=\"tick\" x=\"{}\" y=\"{base}\" text-anchor=\"end\">{}</text>",
                num(HIST_WIDTH - HIST_RIGHT),
                esc(&truncate(last, 18))
            );
        }
    }

    // CI band: upper edge left to right, lower edge back.
    let with_ci: Vec<(f64, f64, f64)> =
        points.iter().filter_map(|(i, p)| p.median_ci.map(|(lo, hi)| (*i, lo, hi))).collect();
    if with_ci.len() > 1 {
        let mut d = String::new();
        for (k, (i, _, hi)) in with_ci.iter().enumerate() {
            let _ = write!(d, "{}{} {}", if k == 0 { "M" } else { "L" }, num(x(*i)), num(y_scale.px(*hi)));
        }
        for (i, lo, _) in with_ci.iter().rev() {
            let _ = write!(d, "L{} {}", num(x(*i)), num(y_scale.px(*lo)));
        }
        let _ = write!(out, "<path class=\"band\" d=\"{d}Z\"/>");
    }
    let mut line = String::new();
    for (k, (i, p)) in points.iter().enumerate() {
        let _ = write!(line, "{}{} {}", if k == 0 { "M" } else { "L" }, num(x(*i)), num(y_scale.px(p.median)));
    }
    let _ = write!(out, "<path class=\"hline\" d=\"{line}\"/>");
    if points.len() <= MAX_HISTORY_DOTS {
        for (i, p) in &points {
            let ci = p
                .median_ci
                .map(|(lo, hi)| format!(", 95 % CI {} – {}", format_value(lo, unit), format_value(hi, unit)))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<circle class=\"hdot\" cx=\"{}\" cy=\"{}\" r=\"2.6\"><title>{}: {}{}, n = {}</title></circle>",
                num(x(*i)),
                num(y_scale.px(p.median)),
                esc(&p.label),
                esc(&format_value(p.median, unit)),
                esc(&ci),
                p.n
            );
        }
    }
    for cp in &history.change_points {
        let Some((at, point)) = points.get(cp.index) else { continue };
        let prev = if cp.index > 0 { points[cp.index - 1].0 } else { *at };
        let cx = num(x((prev + at) / 2.0));
        let dir = if cp.ratio > 1.0 { "up" } else { "down" };
        let _ = write!(
            out,
            "<g class=\"cp {dir}\"><title>change point at {}: {} → {} ({}, 95 % CI {} – {}), p = {}</title>\
             <line x1=\"{cx}\" x2=\"{cx}\" y1=\"{}\" y2=\"{}\"/><text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">{}</text></g>",
            esc(&point.label),
            esc(&format_value(cp.before, unit)),
            esc(&format_value(cp.after, unit)),
            format_change(cp.ratio),
            format_change(cp.ratio_ci.0),
            format_change(cp.ratio_ci.1),
            format_p(cp.p_value),
            num(HIST_TOP - 2.0),
            num(HIST_HEIGHT - HIST_BOTTOM),
            num(HIST_TOP - 4.0),
            format_change(cp.ratio)
        );
    }
    out.push_str("</svg></figure>");
}

/// Functions listed per explained benchmark (all of them are in the stored profiles).
const PROFILE_ROWS: usize = 12;

/// Per benchmark found slower: the functions whose own time changed most, then the
/// differential flame graph.
fn explained_section(out: &mut String, explained: &[Explained]) {
    out.push_str(
        "<p class=\"muted\">One run of each build profiled after the benchmark was found slower \
         (<code>perflab run --profile-changes</code>): functions matched by name, their own CPU time estimated \
         from cpu-clock samples, sorted by their part of the change. In the flame graph, red frames spent more \
         time of their own in the slower build, blue ones less; click to zoom.</p>\n",
    );
    for x in explained {
        let (c, change) = (&x.comparison, &x.change);
        let name = esc(&x.benchmark);
        let _ = write!(
            out,
            "<details class=\"explained\" data-filter=\"{name}\" open><summary><b>{}</b> · {} vs {}: {} [{} – {}] in {}</summary>",
            esc(&truncate(&x.benchmark, NAME_CHARS)),
            esc(&change.candidate),
            esc(&change.baseline),
            format_ratio(c.ratio),
            format_ratio(c.ci_low),
            format_ratio(c.ci_high),
            esc(&c.metric)
        );
        for warning in &change.warnings {
            let _ = write!(out, "<p class=\"muted\">{}</p>", esc(warning));
        }
        let _ = write!(
            out,
            "<div class=\"wide\"><table class=\"sortable profile\"><thead><tr><th>function</th><th>object</th>\
             <th>{} (s)</th><th>{} (s)</th><th>change (s)</th><th>part of the change</th></tr></thead><tbody>",
            esc(&change.baseline),
            esc(&change.candidate)
        );
        for f in change.functions.iter().take(PROFILE_ROWS) {
            let _ = write!(
                out,
                "<tr><td class=\"name\" title=\"{name}\">{}</td><td>{}</td><td data-v=\"{}\">{:.3}</td>\
                 <td data-v=\"{}\">{:.3}</td><td data-v=\"{}\">{:+.3}</td><td data-v=\"{}\">{:.0} %</td></tr>",
                esc(&truncate(&f.name, NAME_CHARS)),
                esc(&f.object),
                f.old_s,
                f.old_s,
                f.new_s,
                f.new_s,
                f.change_s,
                f.change_s,
                f.contribution,
                f.contribution * 100.0,
                name = esc(&f.name)
            );
        }
        out.push_str("</tbody></table></div>");
        if let Some(svg) = &change.flame_graph {
            // Self-contained, escaped, and its script finds its own elements: safe inline.
            let _ = write!(out, "<div class=\"flame\">{svg}</div>");
        }
        out.push_str("</details>\n");
    }
}

fn counter_section(out: &mut String, table: &CounterTable) {
    if table.rows.is_empty() {
        out.push_str("<p class=\"muted\">No counters were recorded for these labels.</p>\n");
        return;
    }
    let compact = table.rows.len() > COMPACT_ROWS;
    out.push_str(if compact { "<div class=\"scroll\">" } else { "<div class=\"wide\">" });
    out.push_str("<table class=\"sortable counters\"><thead><tr><th>benchmark</th><th>metric</th>");
    for label in &table.labels {
        let _ = write!(out, "<th>{}</th>", esc(label));
    }
    if let Some(reference) = table.labels.first() {
        for label in table.labels.iter().skip(1) {
            let _ = write!(out, "<th title=\"{l} ÷ {r}\">{l} ÷ {r}</th>", l = esc(label), r = esc(reference));
        }
    }
    out.push_str("</tr></thead><tbody>");
    for row in &table.rows {
        let name = esc(&row.benchmark);
        let unit = metric::unit(&row.metric);
        let _ = write!(
            out,
            "<tr data-filter=\"{name}\"><td class=\"name\" title=\"{name}\">{}</td><td>{}</td>",
            esc(&truncate(&row.benchmark, NAME_CHARS)),
            esc(&row.metric)
        );
        for value in &row.values {
            match value {
                Some(v) => {
                    let _ = write!(out, "<td data-v=\"{v}\">{}</td>", esc(&format_value(*v, unit)));
                }
                None => out.push_str("<td data-v=\"NaN\">—</td>"),
            }
        }
        let reference = row.values.first().copied().flatten();
        for value in row.values.iter().skip(1) {
            match (reference, value) {
                (Some(r), Some(v)) if r > 0.0 => {
                    let _ = write!(out, "<td data-v=\"{}\">{}</td>", v / r, format_ratio(v / r));
                }
                _ => out.push_str("<td data-v=\"NaN\">—</td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
}

fn machine_section(out: &mut String, machines: &[MachineGroup]) {
    if machines.is_empty() {
        out.push_str("<p class=\"muted\">No machine information was recorded.</p>\n");
        return;
    }
    let fingerprints: std::collections::BTreeSet<String> =
        machines.iter().map(|m| crate::store::fingerprint(&m.machine)).collect();
    if fingerprints.len() > 1 {
        let _ = writeln!(out, "<p class=\"notes\">These results come from {} different machine fingerprints; compare labels measured on the same machine.</p>", fingerprints.len());
    } else if machines.len() > 1 {
        out.push_str("<p class=\"notes\">One machine; the labels below ran with different perflab versions or environment facts.</p>\n");
    }
    for info in machines {
        let m = &info.machine;
        out.push_str("<table class=\"kv\"><tbody>");
        let mut kv = |key: &str, value: &str| {
            let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(key), esc(value));
        };
        let flag = |f: Option<bool>| match f {
            Some(true) => "on",
            Some(false) => "off",
            None => "unknown",
        };
        kv("labels", &info.labels.join(", "));
        if let Some(id) = &m.id {
            kv("machine id", id);
        }
        kv("hostname", &m.hostname);
        kv("CPU", &m.cpu_model);
        kv("microcode", m.microcode.as_deref().unwrap_or("unknown"));
        kv("cores", &m.cores.to_string());
        kv("SMT", flag(m.smt));
        kv("memory", &m.memory_mib.map_or("unknown".into(), |mib| format!("{mib} MiB")));
        kv("kernel", &m.kernel);
        kv("CPU frequency governor", m.governor.as_deref().unwrap_or("unknown"));
        kv("boost", flag(m.boost));
        kv("hardware PMU", if m.pmu { "available" } else { "not available" });
        kv("virtualization", m.virtualization.as_deref().unwrap_or("none detected"));
        kv("perflab version", &info.perflab_version);
        for (key, value) in &info.environment {
            kv(key, value);
        }
        out.push_str("</tbody></table>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::row;
    use super::super::{CiMethod, CounterRow};
    use super::*;
    use crate::history::Shift;
    use crate::model::Machine;

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
            comparisons: vec![LabelComparison { label: "v3".into(), rows }],
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
                labels: vec!["v1".into(), "v3".into()],
                rows: names
                    .iter()
                    .map(|n| CounterRow {
                        benchmark: n.to_string(),
                        metric: "instructions".into(),
                        values: vec![Some(1e9), Some(1.1e9)],
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
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("suite &lt;b&gt;") && html.contains("box&quot;1") && html.contains("note &amp; caveat"));
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
        let columns = ["sandy", "haswell"].map(|name| crate::history::matrix::MachineColumn {
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
            rows: vec![crate::history::matrix::MatrixRow {
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
}
