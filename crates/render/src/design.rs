//! The terminal view of builds as a design: the builds' medians with the factors as
//! axes, the main effect of each factor, and (with --pairwise) every pair of builds.

use super::escape;
use crate::verdict::sentence;
use comfy_table::{presets, Table};
use perflab_model::units::{format_level, format_value};
use perflab_model::{DesignAnalysis, Experiment};

fn new_table() -> Table {
    let mut table = Table::new();
    table.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    table.remove_style(comfy_table::TableComponent::HorizontalLines);
    table.remove_style(comfy_table::TableComponent::MiddleIntersections);
    table
}

/// Nothing when the experiment has no design.
pub fn render(e: &Experiment) -> String {
    let Some(d) = &e.design else { return String::new() };
    let mut out = format!("\nbuilds as a design ({} median; rows × columns are the factors' levels):\n", d.metric);
    out.push_str(&axes_table(d));
    out.push('\n');
    if let Some(first) = d.effects.first() {
        out.push_str(&format!(
            "main effects (each level against the first, the mean over the other factors' levels, paired by round; \
             {} % CI each at {} % — Bonferroni over {} contrast{}):\n",
            format_level(first.confidence),
            format_level(first.look_confidence),
            d.effects.len(),
            if d.effects.len() == 1 { "" } else { "s" }
        ));
        for c in &d.effects {
            out.push_str(&format!("  {}\n", escape(&sentence(c, e.settings.threshold, c.n as u32))));
        }
    }
    if let Some(first) = d.pairwise.first() {
        out.push_str(&format!(
            "every pair of builds ({} % CI each at {} % — Bonferroni over {} pair{}):\n",
            format_level(first.confidence),
            format_level(first.look_confidence),
            d.pairwise.len(),
            if d.pairwise.len() == 1 { "" } else { "s" }
        ));
        for c in &d.pairwise {
            out.push_str(&format!("  {}\n", escape(&sentence(c, e.settings.threshold, c.n as u32))));
        }
    }
    out
}

/// Rows: every combination of the factors but the last; columns: the last factor's levels.
fn axes_table(d: &DesignAnalysis) -> String {
    let Some((last, rest)) = d.factors.split_last() else { return String::new() };
    let mut table = new_table();
    let row_label = rest.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(" × ");
    let mut header = vec![format!("{row_label} \\ {}", last.name)];
    header.extend(last.levels.iter().map(|l| escape(l)));
    table.set_header(header);
    let mut rows: Vec<Vec<String>> = Vec::new();
    for cell in &d.cells {
        let key = cell.levels[..rest.len()].to_vec();
        if !rows.contains(&key) {
            rows.push(key);
        }
    }
    for key in rows {
        let mut row = vec![escape(&key.join(" × "))];
        for level in &last.levels {
            let cell = d.cells.iter().find(|c| c.levels[..rest.len()] == key[..] && &c.levels[rest.len()] == level);
            row.push(cell.filter(|c| c.median.is_finite()).map_or("-".into(), |c| format_value(&d.metric, c.median)));
        }
        table.add_row(row);
    }
    table.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_model::{Comparison, DesignCell, Factor};

    /// Issue #28: `-L cc gcc,clang -L disp switch,threaded` printed "95 % CI each at
    /// 9950.0 %" (a level multiplied by 100 twice).
    #[test]
    fn the_corrected_level_is_a_percentage_once() {
        let factor =
            |name: &str, levels: [&str; 2]| Factor { name: name.into(), levels: levels.map(String::from).to_vec() };
        let effect = |c: &str| Comparison { look_confidence: 0.995, ..Comparison::example_slower("cc=gcc", c) };
        let design = DesignAnalysis {
            metric: "wall_s".into(),
            factors: vec![factor("cc", ["gcc", "clang"]), factor("disp", ["switch", "threaded"])],
            cells: vec![DesignCell { command: "a".into(), levels: vec!["gcc".into(), "switch".into()], median: 1.0 }],
            effects: vec![effect("cc=clang"), effect("disp=threaded")],
            pairwise: vec![Comparison { look_confidence: 0.99833, ..Comparison::example_slower("a", "b") }],
        };
        let text = render(&Experiment { design: Some(design), ..Experiment::default() });
        assert!(text.contains("95 % CI each at 99.5 % — Bonferroni over 2 contrasts"), "{text}");
        assert!(text.contains("(95 % CI each at 99.833 % — Bonferroni over 1 pair)"), "{text}");
    }
}
