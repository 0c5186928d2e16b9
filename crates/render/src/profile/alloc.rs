//! An allocation profile on the terminal (`profile --alloc`, `show` of one): the totals,
//! the call sites with calls, bytes requested and what was still live at exit, the
//! totals per probed function, and what the reader must know about them.

use super::function_label_within;
use crate::color;
use perflab_model::units::group_thousands;
use perflab_profile::alloc::view::Site;
use perflab_profile::allocations::AllocSummary;
use std::fmt::Write;

/// Bytes in the most readable binary unit: 512 B, 74.7 KiB, 1.20 MiB.
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", n / (1024.0 * 1024.0 * 1024.0))
    } else if n >= 1024.0 * 1024.0 {
        format!("{:.2} MiB", n / (1024.0 * 1024.0))
    } else if n >= 1024.0 {
        format!("{:.1} KiB", n / 1024.0)
    } else {
        format!("{n:.0} B")
    }
}

fn count(n: u64) -> String {
    group_thousands(n as i64)
}

/// The whole report, at most `limit` call sites.
pub fn report(command: &str, duration_s: f64, summary: &AllocSummary, sites: &[Site], limit: usize) -> String {
    let mut out = String::new();
    let sampled = match (summary.sample_bytes, summary.every) {
        (Some(mean), _) => {
            format!("allocations sampled by bytes, mean gap {}; per-site figures are estimates", bytes(mean))
        }
        (None, 1) => "every call".to_string(),
        (None, every) => format!("a sample every {every} calls"),
    };
    let header = format!(
        "{} allocations, {} requested by `{command}` ({sampled}, {:.2} s)",
        count(summary.allocations()),
        bytes(summary.allocated_bytes()),
        duration_s
    );
    let _ = writeln!(out, "{}", color::bold(&header));
    if summary.tracked {
        let _ = writeln!(
            out,
            "{} frees released {}; live at exit: {} blocks, {}{}",
            count(summary.frees),
            bytes(summary.freed_bytes),
            count(summary.live_blocks()),
            bytes(summary.live_bytes()),
            if summary.unmatched_frees > 0 {
                format!("; {} frees of blocks not allocated here", count(summary.unmatched_frees))
            } else {
                String::new()
            }
        );
    }
    if sites.is_empty() {
        let _ = writeln!(out, "no allocation was recorded");
    } else {
        let live = summary.tracked;
        let spread = sites.iter().any(|s| s.bytes_sd.is_some());
        let mut columns = format!("{:>12} {:>7} {:>12} {:>7}", "calls", "share", "bytes", "share");
        if spread {
            columns += &format!(" {:>12}", "± 95 %");
        }
        if live {
            columns += &format!(" {:>10} {:>12}", "live", "live bytes");
        }
        let _ = writeln!(out, "{}", color::dim(&format!("{columns}  call site")));
        let (all_calls, all_bytes) = sites.iter().fold((0u64, 0u64), |(c, b), s| (c + s.calls, b + s.bytes));
        let share = |part: u64, whole: u64| if whole == 0 { 0.0 } else { part as f64 / whole as f64 * 100.0 };
        for site in sites.iter().take(limit) {
            let mut row = format!(
                "{:>12} {:>6.2}% {:>12} {:>6.2}%",
                count(site.calls),
                share(site.calls, all_calls),
                bytes(site.bytes),
                share(site.bytes, all_bytes)
            );
            if spread {
                // The estimate's 95 % interval (normal: a sum of independent sampled allocations).
                let half = site.bytes_sd.map_or_else(|| "—".to_string(), |sd| bytes((1.96 * sd).round() as u64));
                row += &format!(" {:>12}", half);
            }
            if live {
                row += &format!(" {:>10} {:>12}", count(site.live_blocks), bytes(site.live_bytes));
            }
            let _ = writeln!(out, "{row}  {}", function_label_within(&site.function, &site.object, Some(60)));
        }
        if sites.len() > limit {
            let _ = writeln!(out, "{}", color::dim(&format!("… {} more call sites (--limit)", sites.len() - limit)));
        }
    }
    let _ = writeln!(out, "{}", color::dim("per function (calls from the program; bytes requested):"));
    for f in summary.functions.iter().filter(|f| f.calls > 0 || f.nested > 0) {
        let what = if f.role.allocates() {
            format!("{} calls, {}", count(f.calls), bytes(f.bytes))
        } else {
            format!("{} calls", count(f.calls))
        };
        let nested =
            if f.nested > 0 { format!(" (+{} from inside the allocator)", count(f.nested)) } else { String::new() };
        let _ = writeln!(out, "  {:<16} {what}{nested}", f.name);
    }
    let idle: Vec<&str> =
        summary.functions.iter().filter(|f| f.calls == 0 && f.nested == 0).map(|f| f.name.as_str()).collect();
    if !idle.is_empty() {
        let seen =
            if summary.sample_bytes.is_some() || summary.notes.iter().any(|n| n.starts_with("recorded in-process")) {
                "also recorded, never called"
            } else {
                "also probed, never called"
            };
        let _ = writeln!(out, "{}", color::dim(&format!("  {seen}: {}", idle.join(", "))));
    }
    for note in &summary.notes {
        let _ = writeln!(out, "{}", color::yellow(&format!("note: {note}")));
    }
    out
}
