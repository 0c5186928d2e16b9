//! `perflab diff` on the terminal: both sides' totals, the total change, and one line
//! per matched row sorted by its change, with its contribution to the total — in CPU
//! seconds (clock events), events (count events) or samples (different events).

use crate::color;
use crate::terminal::escape;
use perflab_profile::diff::{Change, DiffReport, DiffUnit, Side};
use std::fmt::Write;

/// A signed change in the unit, red when it grew, green when it shrank.
fn signed(value: f64, unit: DiffUnit) -> String {
    let text = plain_signed(value, unit);
    if value < 0.0 {
        color::green(&text)
    } else if value > 0.0 {
        color::red(&text)
    } else {
        text
    }
}

fn plain_signed(value: f64, unit: DiffUnit) -> String {
    match unit {
        DiffUnit::Seconds => format!("{value:+.3} s"),
        DiffUnit::Events | DiffUnit::Samples => format!("{value:+.0}"),
    }
}

fn amount(value: f64, unit: DiffUnit) -> String {
    match unit {
        DiffUnit::Seconds => format!("{value:>7.3} s"),
        DiffUnit::Events | DiffUnit::Samples => format!("{value:>9.0}"),
    }
}

fn side_total(side: &Side, unit: DiffUnit) -> (String, f64) {
    match unit {
        DiffUnit::Seconds => {
            let s = side.estimated_s.unwrap_or(0.0);
            (format!("≈ {s:.3} s"), s)
        }
        DiffUnit::Events => {
            let e = side.events.unwrap_or(0) as f64;
            (format!("{e:.0} {} events", side.event), e)
        }
        DiffUnit::Samples => (format!("of {}", side.event), side.samples as f64),
    }
}

fn values(c: &Change, unit: DiffUnit) -> (f64, f64) {
    match unit {
        DiffUnit::Seconds => (c.old_s, c.new_s),
        DiffUnit::Events => (c.old_events.unwrap_or(0) as f64, c.new_events.unwrap_or(0) as f64),
        DiffUnit::Samples => (c.old_samples as f64, c.new_samples as f64),
    }
}

/// The diff table, at most `limit` rows.
pub fn report(r: &DiffReport, limit: usize) -> String {
    let mut out = String::new();
    let unit = r.unit;
    let (old_text, old_total) = side_total(&r.old, unit);
    let (new_text, _) = side_total(&r.new, unit);
    let pct = if old_total > 0.0 { format!(" ({:+.1}%)", r.total_change / old_total * 100.0) } else { String::new() };
    let sides = format!(
        "old {}: {} samples {old_text}   new {}: {} samples {new_text}",
        r.old.path, r.old.samples, r.new.path, r.new.samples
    );
    let _ = writeln!(out, "{}", color::bold(&sides));
    let _ = writeln!(out, "total change {}{pct}", signed(r.total_change, unit));
    let what = match unit {
        DiffUnit::Seconds => "time old → new",
        DiffUnit::Events => "events old → new",
        DiffUnit::Samples => "samples old → new",
    };
    let columns = format!("{:>10}  {:>8}  {what:>21}  {:>17}  name", "change", "of total", "share old → new");
    let _ = writeln!(out, "{}", color::dim(&columns));
    for c in r.changes.iter().take(limit) {
        let change = c.change(unit);
        let pad = " ".repeat(10usize.saturating_sub(plain_signed(change, unit).chars().count()));
        let object = if c.object.is_empty() || c.object == c.name {
            String::new()
        } else {
            color::dim(&format!("  [{}]", c.object))
        };
        let (old, new) = values(c, unit);
        let _ = writeln!(
            out,
            "{pad}{}  {:>7.1}%  {} → {}  {:>6.2}% → {:>6.2}%  {}{object}",
            signed(change, unit),
            c.contribution * 100.0,
            amount(old, unit),
            amount(new, unit),
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
