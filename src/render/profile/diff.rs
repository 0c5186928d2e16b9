//! `perflab diff` on the terminal: both sides' totals, the total change, and one line
//! per matched row sorted by its change, with its contribution to the total.

use crate::profile::diff::DiffReport;
use crate::render::color;
use crate::render::terminal::escape;
use std::fmt::Write;

fn signed_seconds(s: f64) -> String {
    let text = format!("{s:+.3} s");
    if s < 0.0 {
        color::green(&text)
    } else if s > 0.0 {
        color::red(&text)
    } else {
        text
    }
}

/// The diff table, at most `limit` rows.
pub fn report(r: &DiffReport, limit: usize) -> String {
    let mut out = String::new();
    let pct = if r.old.estimated_s > 0.0 {
        format!(" ({:+.1}%)", r.total_change_s / r.old.estimated_s * 100.0)
    } else {
        String::new()
    };
    let sides = format!(
        "old {}: {} samples ≈ {:.3} s   new {}: {} samples ≈ {:.3} s",
        r.old.path, r.old.samples, r.old.estimated_s, r.new.path, r.new.samples, r.new.estimated_s
    );
    let _ = writeln!(out, "{}", color::bold(&sides));
    let _ = writeln!(out, "total change {}{pct}", signed_seconds(r.total_change_s));
    let columns =
        format!("{:>10}  {:>8}  {:>21}  {:>17}  name", "change", "of total", "time old → new", "share old → new");
    let _ = writeln!(out, "{}", color::dim(&columns));
    for c in r.changes.iter().take(limit) {
        let seconds = signed_seconds(c.change_s);
        let pad = " ".repeat(10usize.saturating_sub(format!("{:+.3} s", c.change_s).chars().count()));
        let object = if c.object.is_empty() || c.object == c.name {
            String::new()
        } else {
            color::dim(&format!("  [{}]", c.object))
        };
        let _ = writeln!(
            out,
            "{pad}{seconds}  {:>7.1}%  {:>7.3} s → {:>7.3} s  {:>6.2}% → {:>6.2}%  {}{object}",
            c.contribution * 100.0,
            c.old_s,
            c.new_s,
            c.old_share * 100.0,
            c.new_share * 100.0,
            leaf_end(&escape(&c.name), 120)
        );
    }
    if r.changes.len() > limit {
        let _ =
            writeln!(out, "{}", color::dim(&format!("({} more rows; --limit to see them)", r.changes.len() - limit)));
    }
    out
}

/// A call stack's leaf end is what tells stacks apart: keep the last `max` characters.
fn leaf_end(name: &str, max: usize) -> String {
    let count = name.chars().count();
    if count <= max {
        return name.to_string();
    }
    "…".to_string() + &name.chars().skip(count - max + 1).collect::<String>()
}
