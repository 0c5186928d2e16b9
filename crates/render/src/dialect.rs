//! An experiment's summary in a lightweight markup language — Markdown (`--markdown`,
//! hyperfine's `--export-markdown`, for a pull-request comment), AsciiDoc
//! (`--export-asciidoc`) and Org (`--export-orgmode`): the verdict sentences, a table of
//! the commands (wall time in one unit, `--time-unit` or the first command's), the
//! comparisons and the warnings. One document, three [`Dialect`]s, in the spirit of
//! hyperfine's `MarkupExporter`.

use super::export::Exporter;
use super::style::{Style, TimeUnit};
use super::OutputError;
use crate::verdict::sentence;
use perflab_model::units::{format_level, format_p};
use perflab_model::{metric, Experiment, Verdict};

/// How one markup language writes the few things the summary needs.
pub trait Dialect {
    /// A section heading.
    fn heading(&self, text: &str) -> String;
    /// A list item in bold.
    fn strong_item(&self, text: &str) -> String;
    /// A table with its header; `right[i]` right-aligns column i.
    fn table(&self, header: &[String], right: &[bool], rows: &[Vec<String>]) -> String;
    /// Text from outside (names, messages) that must not break the markup.
    fn escape(&self, text: &str) -> String;
    /// A warning, set apart from the text.
    fn warning(&self, text: &str) -> String;
    /// A note under the tables.
    fn footnote(&self, text: &str) -> String;
}

/// Markdown.
pub struct Markdown;
/// AsciiDoc.
pub struct AsciiDoc;
/// Emacs Org mode.
pub struct Org;

impl Dialect for Markdown {
    fn heading(&self, text: &str) -> String {
        format!("### {text}\n")
    }
    fn strong_item(&self, text: &str) -> String {
        format!("- **{text}**\n")
    }
    fn table(&self, header: &[String], right: &[bool], rows: &[Vec<String>]) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let rule: Vec<&str> = right.iter().map(|r| if *r { "---:" } else { "---" }).collect();
        let mut out = line(header) + &format!("|{}|\n", rule.join("|"));
        for row in rows {
            out += &line(row);
        }
        out
    }
    fn escape(&self, text: &str) -> String {
        text.replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;").replace(['\n', '\r'], " ")
    }
    fn warning(&self, text: &str) -> String {
        format!("> warning: {text}\n")
    }
    fn footnote(&self, text: &str) -> String {
        format!("<sub>{text}</sub>\n")
    }
}

impl Dialect for AsciiDoc {
    fn heading(&self, text: &str) -> String {
        format!("=== {text}\n")
    }
    fn strong_item(&self, text: &str) -> String {
        format!("* *{text}*\n")
    }
    fn table(&self, header: &[String], right: &[bool], rows: &[Vec<String>]) -> String {
        let cols: Vec<&str> = right.iter().map(|r| if *r { ">" } else { "<" }).collect();
        let line = |cells: &[String]| format!("| {}\n", cells.join(" | "));
        let mut out = format!("[cols=\"{}\", options=\"header\"]\n|===\n", cols.join(","));
        out += &line(header);
        for row in rows {
            out += &line(row);
        }
        out + "|===\n"
    }
    fn escape(&self, text: &str) -> String {
        text.replace('|', "\\|").replace(['\n', '\r'], " ")
    }
    fn warning(&self, text: &str) -> String {
        format!("WARNING: {text}\n")
    }
    fn footnote(&self, text: &str) -> String {
        format!("[.small]#{text}#\n")
    }
}

impl Dialect for Org {
    fn heading(&self, text: &str) -> String {
        format!("*** {text}\n")
    }
    fn strong_item(&self, text: &str) -> String {
        format!("- *{text}*\n")
    }
    fn table(&self, header: &[String], _right: &[bool], rows: &[Vec<String>]) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let rule = vec!["---"; header.len()].join("+");
        let mut out = line(header) + &format!("|{rule}|\n");
        for row in rows {
            out += &line(row);
        }
        out
    }
    fn escape(&self, text: &str) -> String {
        text.replace('|', "\\vert{}").replace(['\n', '\r'], " ")
    }
    fn warning(&self, text: &str) -> String {
        format!("- warning: {text}\n")
    }
    fn footnote(&self, text: &str) -> String {
        format!("{text}\n")
    }
}

/// The summary of an experiment in dialect `D`, laid out by a [`Style`] (time unit, order).
pub struct Summary<D> {
    /// The markup language.
    pub dialect: D,
    /// Time unit and order of the commands.
    pub style: Style,
}

impl<D: Dialect> Exporter<Experiment> for Summary<D> {
    fn render(&self, e: &Experiment) -> Result<String, OutputError> {
        Ok(render(&self.dialect, e, &self.style))
    }
}

/// The summary document.
pub fn render(d: &dyn Dialect, e: &Experiment, style: &Style) -> String {
    let primary = e.primary_metric.as_str();
    let order = style.order(e);
    let position = |name: &str| order.iter().position(|&i| e.commands[i].name == name).unwrap_or(usize::MAX);
    let mut out = d.heading("perflab") + "\n";
    let mut comparisons: Vec<_> = e.comparisons.iter().collect();
    comparisons.sort_by_key(|c| position(&c.candidate));
    for c in comparisons.iter().filter(|c| c.metric == primary) {
        out += &d.strong_item(&d.escape(&sentence(c, e.settings.threshold, e.rounds)));
    }
    // One unit for the whole table, like hyperfine: given, or the first command's.
    let first_median = order.first().and_then(|&i| e.commands[i].summary.get(metric::WALL)).map(|s| s.median);
    let unit = style.time_unit.unwrap_or_else(|| TimeUnit::for_value(first_median.unwrap_or(1.0)));
    let u = unit.symbol();
    let header: Vec<String> = [
        "command".to_string(),
        format!("wall median [{u}]"),
        format!("MAD [{u}]"),
        format!("min [{u}]"),
        format!("max [{u}]"),
    ]
    .to_vec();
    let rows: Vec<Vec<String>> = order
        .iter()
        .filter_map(|&i| {
            let c = &e.commands[i];
            let w = c.summary.get(metric::WALL)?;
            Some(vec![
                d.escape(&c.name),
                unit.number(w.median),
                unit.number(w.mad),
                unit.number(w.min),
                unit.number(w.max),
            ])
        })
        .collect();
    if !rows.is_empty() {
        out += "\n";
        out += &d.table(&header, &[false, true, true, true, true], &rows);
    }
    if !comparisons.is_empty() {
        let level = format_level(comparisons[0].confidence);
        let header: Vec<String> = ["candidate", "metric", "ratio", &format!("{level} % CI"), "p", "verdict"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let rows: Vec<Vec<String>> = comparisons
            .iter()
            .map(|c| {
                if c.verdict == Verdict::NotComparable {
                    let why = c.flags.first().map_or(String::new(), |f| d.escape(f));
                    let dash = "-".to_string();
                    return vec![
                        d.escape(&c.candidate),
                        c.metric.clone(),
                        dash.clone(),
                        why,
                        dash,
                        c.verdict.as_str().into(),
                    ];
                }
                vec![
                    d.escape(&c.candidate),
                    c.metric.clone(),
                    format!("{:.4}", c.ratio),
                    if c.ci_high.is_finite() {
                        format!("[{:.4}, {:.4}]", c.ci_low, c.ci_high)
                    } else if c.n == 1 {
                        "none: one run".to_string()
                    } else {
                        "too few rounds".to_string()
                    },
                    format_p(c.p_value),
                    c.verdict.as_str().to_string(),
                ]
            })
            .collect();
        out += "\n";
        out += &d.table(&header, &[false, false, true, false, true, false], &rows);
    }
    for w in &e.warnings {
        out += "\n";
        out += &d.warning(&d.escape(&w.message));
    }
    out += "\n";
    out += &d.footnote(&format!("{} rounds, seed {}, perflab {}", e.rounds, e.settings.seed, e.perflab_version));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::experiment;
    use crate::style::SortOrder;

    #[test]
    fn snapshots_of_the_three_dialects() {
        let e = experiment(&["old", "new|pipe", "fastest"], &[0.05, 0.055, 0.03], Some(8));
        let style = Style { time_unit: Some(TimeUnit::Millisecond), sort: SortOrder::MeanTime, width: None };
        insta::assert_snapshot!("markdown", render(&Markdown, &e, &style));
        insta::assert_snapshot!("asciidoc", render(&AsciiDoc, &e, &style));
        insta::assert_snapshot!("orgmode", render(&Org, &e, &style));
    }

    #[test]
    fn tables_keep_their_shape_whatever_the_names() {
        let e = experiment(&["a|b", "c\nd"], &[0.05, 0.05], Some(6));
        for (name, d) in [("md", &Markdown as &dyn Dialect), ("adoc", &AsciiDoc), ("org", &Org)] {
            let text = render(d, &e, &Style::default());
            // The command table's rows: five cells each, however the names are written.
            let rows: Vec<&str> = text
                .lines()
                .filter(|l| {
                    (l.starts_with("| a") || l.starts_with("| c d")) && !l.contains("_s |") && !l.ends_with("_s")
                })
                .collect();
            assert_eq!(rows.len(), 2, "{name}: {text}");
            for row in rows {
                // Escaped pipes do not split cells.
                let unescaped = row.replace("\\|", "").replace("\\vert{}", "");
                assert_eq!(unescaped.matches('|').count(), if name == "adoc" { 5 } else { 6 }, "{name}: {row}");
            }
        }
    }
}
