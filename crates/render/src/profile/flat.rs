//! The flat report on the terminal: a header line, the table (by function with total
//! and self shares when there are call stacks), the samples per process and thread,
//! the caller/callee trees and off-CPU time.

use super::{function_label, function_label_within, paint_share};
use crate::color;
use crate::table::display_width;
use crate::terminal::escape;
use perflab_profile::aggregate::Row;
use perflab_profile::callers::{Direction, TreeNode};
use perflab_profile::format::{RecordTarget, Weight};
use perflab_profile::offcpu::OffCpuReport;
use perflab_profile::report::{FlatReport, TaskSamples};
use perflab_profile::sort::SortedTable;
use std::fmt::Write;

/// Branches of the caller/callee trees with less than this share of the function's
/// samples are summed into one line.
pub(crate) const TREE_MIN_SHARE: f64 = 0.005;

/// The whole terminal report, at most `limit` rows per table.
pub fn report(r: &FlatReport, limit: usize) -> String {
    let mut out = table(r, limit);
    out += &tasks(&r.tasks, limit);
    for (tree, direction) in [(&r.caller_tree, Direction::Callers), (&r.callee_tree, Direction::Callees)] {
        if let Some(tree) = tree {
            out.push('\n');
            out += &self::tree(tree, direction, r.period, TREE_MIN_SHARE);
        }
    }
    if let Some(off_cpu) = &r.off_cpu {
        out += &self::off_cpu(off_cpu, limit);
    }
    out
}

fn table(r: &FlatReport, limit: usize) -> String {
    let mut out = String::new();
    let what = r.table_kind.noun();
    let lost = if r.lost > 0 { format!(", {} lost", r.lost) } else { String::new() };
    let header = format!("{} samples of {} {} ({:.2} s){lost}", r.samples, r.event, r.sampling, r.duration_s);
    let _ = writeln!(out, "{}", color::bold(&header));
    let rows: &[Row] = r.table_rows();
    if rows.is_empty() {
        let _ = writeln!(out, "{}", no_samples(r));
        return out;
    }
    let _ = writeln!(out, "{}", color::dim(&weight_line(r)));
    if let Some(sorted) = &r.sorted {
        out += &sorted_table(sorted, r.weight == Weight::Events, limit);
        return out;
    }
    let totals = rows.iter().any(|r| r.total_share.is_some());
    let events = r.weight == Weight::Events;
    let mut columns = if totals { format!("{:>7} {:>7}", "total", "self") } else { format!("{:>7}", "share") };
    columns += &format!(" {:>9}", "samples");
    if events {
        columns += &format!(" {:>12}", "events");
    }
    let _ = writeln!(out, "{}", color::dim(&format!("{columns}  {what}")));
    let width = crate::table::width(crate::table::Stream::Stdout);
    for row in rows.iter().take(limit) {
        let mut share = paint_share(row.self_share, &format!("{:>6.2}%", row.self_share * 100.0));
        if let Some(total) = row.total_share {
            share = format!("{} {share}", paint_share(total, &format!("{:>6.2}%", total * 100.0)));
        }
        let mut counts = format!("{:>9}", row.self_samples);
        if events {
            counts += &format!(" {:>12}", row.self_period);
        }
        // Too wide for the terminal, a row loses its object, then the middle of its name.
        let used = if totals { 15 } else { 7 } + 1 + counts.len() + 2;
        let room = width.map(|w| w.saturating_sub(used));
        let _ = writeln!(out, "{share} {counts}  {}", function_label_within(&row.name, &row.object, room));
    }
    // Rows past the limit: those made and not shown, and those not made at all.
    let rest = &rows[limit.min(rows.len())..];
    let not_made = r.table_left_out().unwrap_or_default();
    let more_rows = rest.len() + not_made.rows;
    if more_rows > 0 {
        let mut counts = format!("{:>9}", rest.iter().map(|r| r.self_samples).sum::<u64>() + not_made.self_samples);
        if events {
            counts += &format!(" {:>12}", rest.iter().map(|r| r.self_period).sum::<u64>() + not_made.self_period);
        }
        let indent = if totals { 16 } else { 8 };
        let more = format!("{:indent$}{counts}  ({more_rows} more rows; --limit to see them)", "");
        let _ = writeln!(out, "{}", color::dim(&more));
    }
    out
}

/// The `--sort` table: share, samples (and events), then one column per key in the
/// order given, each as wide as its widest shown value (the last one unpadded, shortened
/// in the middle when the terminal is too narrow).
fn sorted_table(t: &SortedTable, events: bool, limit: usize) -> String {
    let mut out = String::new();
    let shown = &t.rows[..t.rows.len().min(limit)];
    let cells: Vec<Vec<String>> = shown.iter().map(|r| r.keys.iter().map(|k| escape(k)).collect()).collect();
    let widths: Vec<usize> = t
        .keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let widest = cells.iter().map(|c| display_width(&c[i])).max().unwrap_or(0);
            widest.max(key.header().len())
        })
        .collect();
    let pad = |text: &str, width: usize| {
        let fill = width.saturating_sub(display_width(text));
        format!("{text}{}", " ".repeat(fill))
    };
    let line = |counts: String, values: &[String]| {
        let last = values.len().saturating_sub(1);
        let columns: Vec<String> =
            values.iter().enumerate().map(|(i, v)| if i == last { v.clone() } else { pad(v, widths[i]) }).collect();
        format!("{counts}  {}", columns.join("  "))
    };
    let mut header = format!("{:>7} {:>9}", "share", "samples");
    if events {
        header += &format!(" {:>12}", "events");
    }
    let headers: Vec<String> = t.keys.iter().map(|k| k.header().to_string()).collect();
    let _ = writeln!(out, "{}", color::dim(&line(header, &headers)));
    let width = crate::table::width(crate::table::Stream::Stdout);
    for (row, mut values) in shown.iter().zip(cells) {
        let mut counts = format!(
            "{} {:>9}",
            paint_share(row.self_share, &format!("{:>6.2}%", row.self_share * 100.0)),
            row.self_samples
        );
        if events {
            counts += &format!(" {:>12}", row.self_period);
        }
        // Too wide for the terminal, the last key's value is shortened in the middle.
        let full = display_width(&line(counts.clone(), &values));
        if let Some(width) = width.filter(|&w| full > w) {
            let last = values.last_mut().expect("at least one key");
            let room = width.saturating_sub(full - display_width(last)).max(12);
            *last = crate::table::abbreviate(last, room);
        }
        let _ = writeln!(out, "{}", line(counts, &values));
    }
    if t.rows.len() > limit {
        let rest = &t.rows[limit..];
        let mut counts = format!("{:>7} {:>9}", "", rest.iter().map(|r| r.self_samples).sum::<u64>());
        if events {
            counts += &format!(" {:>12}", rest.iter().map(|r| r.self_period).sum::<u64>());
        }
        let more = format!("{counts}  ({} more rows; --limit to see them)", t.rows.len() - limit);
        let _ = writeln!(out, "{}", color::dim(&more));
    }
    out
}

/// What the shares are of, said once under the header.
fn weight_line(r: &FlatReport) -> String {
    match r.weight {
        Weight::Time => "shares of sampled CPU time (each sample weighs its period)".to_string(),
        Weight::Events => {
            format!("shares of {} {} events (each sample weighs its period), not of samples", r.period, r.event)
        }
    }
}

/// Why a report has no rows.
fn no_samples(r: &FlatReport) -> String {
    match &r.target {
        RecordTarget::Command if r.command.is_empty() => "no samples".to_string(),
        RecordTarget::Command => format!("no samples (the command ran too briefly for {})", r.sampling),
        RecordTarget::Pids(pids) => {
            let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
            let pids = pids.join(",");
            match r.weight {
                Weight::Time => format!(
                    "no samples: PID {pids} was idle (asleep or blocked) for the {:.2} s recorded; an attached process is sampled only while it runs on a CPU",
                    r.duration_s
                ),
                Weight::Events => format!("no samples: PID {pids} had no {} events in the {:.2} s recorded", r.event, r.duration_s),
            }
        }
        RecordTarget::AllCpus => format!("no samples on any CPU in {:.2} s", r.duration_s),
    }
}

/// One line per process for multi-task targets: how the samples split between tasks,
/// busiest process first, at most `limit` processes (system-wide profiles have hundreds)
/// and, per process, its main thread and at most `limit` other threads, busiest first
/// (a process of 10⁶ threads made a line of 17 MB).
fn tasks(tasks: &[TaskSamples], limit: usize) -> String {
    let mut out = String::new();
    if tasks.len() < 2 {
        return out;
    }
    // Per pid: its samples and its tasks, summed once (a scan of every task per process
    // is quadratic in a system-wide profile).
    let mut by_pid: std::collections::BTreeMap<u32, (u64, Vec<&TaskSamples>)> = std::collections::BTreeMap::new();
    for t in tasks {
        let entry = by_pid.entry(t.pid).or_default();
        entry.0 += t.samples;
        entry.1.push(t);
    }
    let all = by_pid.len();
    let mut pids: Vec<(u32, u64)> =
        by_pid.iter().filter(|(_, (n, _))| *n > 0).map(|(&pid, (n, _))| (pid, *n)).collect();
    pids.sort_by_key(|&(pid, n)| (std::cmp::Reverse(n), pid));
    let _ = writeln!(out, "{}", color::dim(&format!("{} tasks in {all} processes:", tasks.len())));
    for &(pid, _) in pids.iter().take(limit) {
        let own = &by_pid[&pid].1;
        let mut threads: Vec<&TaskSamples> = own.iter().copied().filter(|t| t.tid != pid).collect();
        threads.sort_by_key(|t| (std::cmp::Reverse(t.samples), t.tid));
        let mut shown: Vec<String> =
            own.iter().filter(|t| t.tid == pid).map(|t| format!("{} samples", t.samples)).collect();
        shown.extend(threads.iter().take(limit).map(|t| format!("thread {}: {}", t.tid, t.samples)));
        if threads.len() > limit {
            let rest = &threads[limit..];
            let samples: u64 = rest.iter().map(|t| t.samples).sum();
            shown.push(format!("{} more threads ({samples} samples)", rest.len()));
        }
        let comm = own.first().map_or(String::new(), |t| escape(&t.comm));
        let _ = writeln!(out, "{}", color::dim(&format!("  pid {pid} {comm}: {}", shown.join(", "))));
    }
    let hidden = all - pids.len().min(limit);
    if hidden > 0 {
        let more = format!("  ({hidden} more processes, {} without samples)", all - pids.len());
        let _ = writeln!(out, "{}", color::dim(&more));
    }
    out
}

/// The tree indented, one line per function; a chain of single children is joined on
/// one line (`a ← b ← c`), and branches under `min_share` are summarised.
pub fn tree(tree: &TreeNode, direction: Direction, all_period: u64, min_share: f64) -> String {
    let what = match direction {
        Direction::Callers => "callers",
        Direction::Callees => "callees",
    };
    let mut out = String::new();
    let header = format!(
        "{what} of {} ({} samples, {:.2}% of all)",
        escape(&tree.name),
        tree.samples,
        tree.period as f64 / all_period.max(1) as f64 * 100.0
    );
    let _ = writeln!(out, "{}", color::bold(&header));
    let arrow = if direction == Direction::Callers { " ← " } else { " → " };
    for line in tree_lines(tree, arrow, min_share) {
        let _ = writeln!(out, "{line}");
    }
    out
}

fn tree_lines(tree: &TreeNode, arrow: &str, min_share: f64) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo: Vec<(&TreeNode, usize)> = tree.children.iter().rev().map(|c| (c, 1)).collect();
    while let Some((node, depth)) = todo.pop() {
        if node.share < min_share {
            continue;
        }
        let mut chain = vec![tree_label(node)];
        let mut last = node;
        while let [only] = last.children.as_slice() {
            if only.samples != last.samples {
                break;
            }
            chain.push(tree_label(only));
            last = only;
        }
        let share = paint_share(last.share, &format!("{:>6.2}%", last.share * 100.0));
        out.push(format!("{share} {:>9}  {}{}", last.samples, "  ".repeat(depth - 1), chain.join(arrow)));
        let hidden: u64 = last.children.iter().filter(|c| c.share < min_share).map(|c| c.samples).sum();
        if hidden > 0 {
            out.push(color::dim(&format!("{:>7} {hidden:>9}  {}(smaller branches)", "", "  ".repeat(depth))));
        }
        todo.extend(last.children.iter().rev().map(|c| (c, depth + 1)));
    }
    out
}

fn tree_label(node: &TreeNode) -> String {
    let mut text = escape(&node.name);
    if node.inlined {
        text += " (inlined)";
    }
    if !node.object.is_empty() {
        text += &color::dim(&format!(" [{}]", escape(&node.object)));
    }
    text
}

/// The hottest functions by on + off time, then the longest-blocked stacks.
fn off_cpu(report: &OffCpuReport, limit: usize) -> String {
    let mut out = String::new();
    let header = format!(
        "on-CPU {:.3} s (sampled), off-CPU {:.3} s (blocked), with each function on the stack:",
        report.on_cpu_s, report.off_cpu_s
    );
    let _ = writeln!(out, "{}", color::bold(&header));
    let _ = writeln!(out, "{}", color::dim(&format!("{:>9} {:>9} {:>7}  function", "on-CPU", "off-CPU", "of time")));
    for f in report.functions.iter().take(limit) {
        let label = function_label(&f.name, &f.object);
        let _ = writeln!(out, "{:>8.3}s {:>8.3}s {:>6.2}%  {label}", f.on_cpu_s, f.off_cpu_s, f.share * 100.0);
    }
    if report.stacks.is_empty() {
        let _ = writeln!(out, "{}", color::dim("no thread blocked while recorded"));
        return out;
    }
    let _ = writeln!(out, "{}", color::bold("longest-blocked stacks (outermost caller first):"));
    for s in report.stacks.iter().take(5) {
        let frames: Vec<String> = s.frames.iter().map(|f| escape(f)).collect();
        let plural = if s.blocks == 1 { " " } else { "s" };
        let _ = writeln!(out, "{:>8.3}s {:>7} block{plural}  {}", s.off_cpu_s, s.blocks, frames.join(";"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_profile::callers;

    #[test]
    fn single_child_chains_share_a_line() {
        let graph = callers::example_graph();
        let main = callers::tree(&graph, "x+0x40", Direction::Callees).unwrap();
        let printed = tree_lines(&main, " → ", 0.0).join("\n");
        assert!(printed.contains("x+0x30 [x] → x+0x10 [x]"), "single-child chains on one line:\n{printed}");
    }

    /// A report that made only the rows it shows prints what a report of every row
    /// prints: the same rows and the same `N more rows` line with the same sums.
    #[test]
    fn a_table_of_only_the_shown_rows_prints_the_same() {
        use perflab_profile::format::{FrameRef, ObjectRef, Profile, SampleCount, Space, StackCount};
        use perflab_profile::report::{build, ReportOptions};
        let user = |offset| FrameRef { space: Space::User, object: Some(0), offset };
        let sample = |offset, count| SampleCount::example(offset, count, count * 10);
        let stack = |frames: Vec<u32>, count| StackCount { pid: 1, tid: 1, frames, count, period: count * 10 };
        // Unreadable object: functions are `x+0xOFFSET`; 0x30 and 0x40 only call.
        let profile = Profile {
            event: "cpu-clock".into(),
            frequency_hz: 1000,
            objects: vec![ObjectRef { path: "/nonexistent/x".into() }],
            samples: vec![sample(0x10, 3), sample(0x20, 2), sample(0x50, 1)],
            frames: vec![user(0x10), user(0x20), user(0x30), user(0x40), user(0x50)],
            stacks: vec![stack(vec![0, 2, 3], 3), stack(vec![1, 3], 2), stack(vec![4, 2, 3], 1)],
            ..Profile::default()
        };
        for limit in [1, 2, 4] {
            let all = build(&profile, &ReportOptions::default()).unwrap();
            let options = ReportOptions { function_rows: Some(limit), ..ReportOptions::default() };
            let shown = build(&profile, &options).unwrap();
            assert_eq!(all.flat.functions.len(), 5);
            assert_eq!(shown.flat.functions[..], all.flat.functions[..limit]);
            let left_out = shown.flat.functions_left_out.expect("rows left out");
            assert_eq!(left_out.rows, 5 - limit);
            assert_eq!(left_out.self_samples, all.flat.functions[limit..].iter().map(|r| r.self_samples).sum::<u64>());
            let printed = report(&shown.flat, limit);
            assert_eq!(printed, report(&all.flat, limit));
            assert!(printed.contains(&format!("({} more rows; --limit to see them)", 5 - limit)), "{printed}");
        }
    }
}
