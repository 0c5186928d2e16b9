//! `perflab top`'s frames: a header naming the target, the window and the keys, then one
//! line per process and function, as text for a terminal.

use perflab_profile::record::{RecordOptions, RecordingMode};
use perflab_profile::top::{TopRow, View};
use std::time::Duration;

/// The keys, as the header lists them.
pub const KEYS: &str = "q quit · s sort · / filter · p pause";

/// One refresh: a header naming the target, the window and the keys, then the rows.
pub fn frame(
    window: &perflab_profile::format::Profile,
    rows: &[TopRow],
    record: &RecordOptions,
    elapsed: Duration,
    view: &View,
    limit: usize,
    interactive: bool,
) -> Vec<String> {
    use crate::color;
    let target = match &record.mode {
        RecordingMode::Launch { argv, .. } => crate::terminal::escape(&argv.join(" ")),
        RecordingMode::Pids { pids, .. } => {
            format!("PID {}", pids.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
        }
        RecordingMode::AllCpus { .. } => "every CPU".to_string(),
    };
    let mut state = format!("sorted by {}", view.sort.name());
    if let Some(typing) = &view.typing {
        state += &format!(" · filter: {}▏ (Enter applies, Esc cancels)", crate::terminal::escape(typing));
    } else if !view.filter.is_empty() {
        state += &format!(" · filter \"{}\" (Esc clears)", crate::terminal::escape(&view.filter));
    }
    if view.paused {
        state += " · PAUSED (p resumes)";
    }
    let mut lines = vec![
        color::bold(&format!(
            "perflab top — {target} — {} samples of {} in {:.1} s at {} Hz{}",
            window.total_samples(),
            window.event,
            elapsed.as_secs_f64(),
            window.frequency_hz,
            if window.lost > 0 { format!(", {} lost", window.lost) } else { String::new() }
        )),
        color::dim(&if interactive { format!("{state} — keys: {KEYS}") } else { state }),
        color::dim(&format!("{:>7} {:>9} {:>7}  {:<15} function", "share", "samples", "pid", "command")),
    ];
    if let Some(note) = perflab_profile::kernel::missing_symbols_warning(window) {
        lines.insert(1, color::dim(&note));
    }
    for row in rows.iter().take(limit) {
        let share = crate::profile::paint_share(row.share, &format!("{:>6.2}%", row.share * 100.0));
        lines.push(format!(
            "{share} {:>9} {:>7}  {:<15} {}",
            row.samples,
            row.pid,
            crate::terminal::escape(&row.comm),
            crate::profile::function_label(&row.function, &row.object)
        ));
    }
    if rows.is_empty() {
        lines.push(if view.filter.is_empty() {
            "no samples in this interval".to_string()
        } else {
            "no samples match the filter in this interval".to_string()
        });
    } else if rows.len() > limit {
        let rest: u64 = rows[limit..].iter().map(|r| r.samples).sum();
        lines.push(color::dim(&format!("{:>7} {rest:>9}  ({} more rows)", "", rows.len() - limit)));
    }
    lines
}

/// The line cut to `width` visible columns, ANSI colour sequences kept whole.
pub fn cut_to_width(line: &str, width: usize) -> String {
    let mut out = String::new();
    let mut visible = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            out.push(c);
            for c in chars.by_ref() {
                out.push(c);
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        if visible == width {
            out.push_str("\u{1b}[0m");
            break;
        }
        out.push(c);
        visible += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_to_the_width_keeping_colour_codes() {
        assert_eq!(cut_to_width("abcdef", 3), "abc\u{1b}[0m");
        assert_eq!(cut_to_width("\u{1b}[31mabc\u{1b}[0m", 2), "\u{1b}[31mab\u{1b}[0m");
        assert_eq!(cut_to_width("ab", 5), "ab");
    }
}
