//! The Markdown rendering, for a pull-request comment.

use crate::analysis::verdict::sentence;
use crate::model::{metric, Experiment};
use crate::units::{format_level, format_p, format_seconds};

pub fn render(e: &Experiment) -> String {
    let primary = e.primary_metric.as_str();
    let mut out = String::from("### perflab\n\n");
    for c in e.comparisons.iter().filter(|c| c.metric == primary) {
        out.push_str(&format!("- **{}**\n", escape(&sentence(c, e.settings.threshold, e.rounds))));
    }
    out.push_str("\n| command | wall median | MAD | min | max |\n|---|---:|---:|---:|---:|\n");
    for c in &e.commands {
        if let Some(w) = c.summary.get(metric::WALL) {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                escape(&c.name),
                format_seconds(w.median),
                format_seconds(w.mad),
                format_seconds(w.min),
                format_seconds(w.max)
            ));
        }
    }
    if !e.comparisons.is_empty() {
        let level = format_level(e.comparisons[0].confidence);
        out.push_str(&format!(
            "\n| candidate | metric | ratio | {level} % CI | p | verdict |\n|---|---|---:|---|---:|---|\n"
        ));
        for c in &e.comparisons {
            let ci = match (c.ci_high.is_finite(), c.n) {
                (true, _) => format!("[{:.4}, {:.4}]", c.ci_low, c.ci_high),
                (false, 1) => "none: one run".to_string(),
                (false, _) => "too few rounds".to_string(),
            };
            out.push_str(&format!(
                "| {} | {} | {:.4} | {ci} | {} | {} |\n",
                escape(&c.candidate),
                c.metric,
                c.ratio,
                format_p(c.p_value),
                c.verdict.as_str()
            ));
        }
    }
    for w in &e.warnings {
        out.push_str(&format!("\n> warning: {}\n", escape(&w.message)));
    }
    out.push_str(&format!(
        "\n<sub>{} rounds, seed {}, perflab {}</sub>\n",
        e.rounds, e.settings.seed, e.perflab_version
    ));
    out
}

/// Keep command text from breaking the table or injecting markup.
fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;").replace('\n', " ")
}
