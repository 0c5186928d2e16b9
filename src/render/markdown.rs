//! The Markdown rendering, for a pull-request comment.

use crate::analysis::verdict::sentence;
use crate::model::{metric, Experiment, Verdict};
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
            if c.verdict == Verdict::NotComparable {
                let why = c.flags.first().map_or(String::new(), |f| escape(f));
                out.push_str(&format!(
                    "| {} | {} | - | {why} | - | not comparable |\n",
                    escape(&c.candidate),
                    c.metric
                ));
                continue;
            }
            out.push_str(&format!(
                "| {} | {} | {:.4} | [{:.4}, {:.4}] | {} | {} |\n",
                escape(&c.candidate),
                c.metric,
                c.ratio,
                c.ci_low,
                c.ci_high,
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
