//! What a profile lacks that could be had, said with the report instead of left for the
//! reader to guess: call stacks cut at their own function (code without frame pointers
//! under `-g`), source lines that `--group-by-source` needs, names of a stripped object's
//! functions — each with where it was looked for and how to get it — and, attached to a
//! process, the work its children did.

use super::aggregate::{Located, OUTSIDE_REGIONS};
use super::format::{Profile, RecordTarget, Space};
use super::symbolize::{basename, Symbolizer};
use std::collections::BTreeMap;

/// Below this many user-space samples with call stacks, a share says too little.
const MIN_STACKS: u64 = 20;
/// Share of user-space samples whose stack holds only their own function above which
/// frame pointers are taken to be missing (with them, every stack reaches `main`).
const SHALLOW_SHARE: f64 = 0.5;

/// With `-g` (frame pointers): when most user-space samples' stacks end at their own
/// function, the code was built without frame pointers and the kernel could not walk
/// its stack — the callers (and `main`) are missing. `-g dwarf` recovers them.
pub(crate) fn shallow_stacks(profile: &Profile) -> Option<String> {
    if profile.stacks.is_empty() || profile.dwarf.is_some() {
        return None;
    }
    let (mut user, mut shallow) = (0u64, 0u64);
    for stack in &profile.stacks {
        let spaces: Vec<Space> =
            stack.frames.iter().filter_map(|&f| profile.frames.get(f as usize)).map(|f| f.space).collect();
        let user_frames = spaces.iter().filter(|s| **s == Space::User).count();
        if user_frames == 0 {
            continue;
        }
        user += stack.count;
        if user_frames == 1 {
            shallow += stack.count;
        }
    }
    let share = shallow as f64 / user.max(1) as f64;
    (user >= MIN_STACKS && share >= SHALLOW_SHARE).then(|| {
        format!(
            "{:.0} % of the samples' call stacks stop at their own function, with no caller: the code was most likely built without frame pointers (-fomit-frame-pointer, the default from -O1), which `-g` (frame pointers) needs — `-g dwarf` unwinds such code from its DWARF, or rebuild with -fno-omit-frame-pointer",
            share * 100.0
        )
    })
}

/// Sampled functions of objects that have no name for them (`postgres+0x5c7730`): the
/// object is stripped and no debug file was found; says where it was looked for.
pub(crate) fn unnamed_functions(located: &[Located], symbolizer: &mut Symbolizer) -> Vec<String> {
    let mut by_object: BTreeMap<&str, u64> = BTreeMap::new();
    for l in located {
        let object = l.location.object.as_str();
        if object.starts_with('[') {
            continue;
        }
        if l.location.function.starts_with(&format!("{}+0x", basename(object))) {
            *by_object.entry(object).or_default() += l.count;
        }
    }
    by_object
        .into_iter()
        .filter_map(|(object, samples)| {
            let searched = symbolizer.debug_searched(object)?;
            Some(format!(
                "{samples} sample(s) in functions of {} that have no name (shown as {}+0xOFFSET): {searched}",
                basename(object),
                basename(object)
            ))
        })
        .collect()
}

/// `--group-by-source` needs source lines: when samples have none (an object without
/// line tables, Debian's libruby), or no sampled file matched, say so instead of one
/// silent `[outside regions]` row.
pub(crate) fn missing_lines(
    located: &[Located],
    rows_outside: u64,
    spec: &str,
    symbolizer: &mut Symbolizer,
) -> Vec<String> {
    let total: u64 = located.iter().map(|l| l.count).sum();
    if total == 0 || rows_outside == 0 {
        return Vec::new();
    }
    let mut without: BTreeMap<&str, u64> = BTreeMap::new();
    for l in located.iter().filter(|l| l.location.line.is_none() && !l.location.object.starts_with('[')) {
        *without.entry(l.location.object.as_str()).or_default() += l.count;
    }
    let lineless: u64 = without.values().sum();
    let mut out = Vec::new();
    if lineless as f64 >= 0.25 * total as f64 {
        let mut objects: Vec<(&str, u64)> = without.into_iter().collect();
        objects.sort_by(|a, b| b.1.cmp(&a.1));
        for (object, samples) in objects.iter().take(3) {
            let why = symbolizer.debug_searched(object).unwrap_or_else(|| {
                format!("{} has no line tables (built without -g, or its debug file is elsewhere)", basename(object))
            });
            out.push(format!(
                "--group-by-source: {:.0} % of the samples ({samples}) are in {}, which has no source line information, so they count as {OUTSIDE_REGIONS}: {why}; {}",
                *samples as f64 / total as f64 * 100.0,
                basename(object),
                how_to_get_lines(object)
            ));
        }
    } else if rows_outside == total {
        let mut files: Vec<&str> = located.iter().filter_map(|l| l.location.file.as_deref()).map(basename).collect();
        files.sort_unstable();
        files.dedup();
        let shown: Vec<&str> = files.iter().take(5).copied().collect();
        out.push(format!(
            "--group-by-source `{spec}`: every sample is {OUTSIDE_REGIONS} — no sampled line is in a file matching it, or none follows a line matching its pattern (sampled files: {}{})",
            shown.join(", "),
            if files.len() > 5 { ", …" } else { "" }
        ));
    }
    out
}

/// Where an object's line tables come from. Line information is in the object's DWARF
/// (or its separate debug file), never in how stacks were walked: `-g dwarf` unwinds
/// stacks and adds no line, so it is not the advice.
fn how_to_get_lines(object: &str) -> String {
    let name = basename(object);
    if is_shared_library(name) {
        format!(
            "line information needs {name}'s debug info: install its debug package (Debian: the -dbgsym package of the package that ships it, from the debug archive) or set DEBUGINFOD_URLS, or build {name} with -g"
        )
    } else {
        format!("line information needs {name}'s debug info: rebuild it with -g (or install its separate debug file)")
    }
}

/// `libfoo.so`, `libfoo.so.6`, `ld-linux-x86-64.so.2`: named as a shared library.
fn is_shared_library(name: &str) -> bool {
    name.ends_with(".so") || name.contains(".so.")
}

/// Attached to processes (`-p`) that were mostly idle while they have children: children
/// running before the attach are not followed (the kernel only follows tasks created
/// while attached), so their work is in no sample — a server's usually is (the
/// postmaster's backends).
pub(crate) fn children_not_followed(profile: &Profile) -> Option<String> {
    let RecordTarget::Pids(pids) = &profile.target else { return None };
    // Busy beyond 5 % of one CPU: the attached processes themselves did work.
    let busy_share = profile.total_period() as f64 / 1e9 / profile.duration_s.max(1e-9);
    if profile.weight() == super::format::Weight::Time && busy_share > 0.05 {
        return None;
    }
    let children: Vec<u32> = pids.iter().flat_map(|&pid| children_of(pid)).collect();
    if children.is_empty() {
        return None;
    }
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    let shown: Vec<String> = children.iter().take(5).map(u32::to_string).collect();
    Some(format!(
        "{} sample(s) of PID {}, which has {} child process(es) ({}{}): children started before the attach are not followed (the kernel follows only those created while attached), so their work is in no sample — attach to them too (-p {},{}), or sample every CPU for their command name (-a --comm NAME)",
        profile.total_samples(),
        list.join(","),
        children.len(),
        shown.join(", "),
        if children.len() > 5 { ", …" } else { "" },
        list.join(","),
        shown.join(",")
    ))
}

/// The children of every thread of `pid` (`/proc/PID/task/TID/children`); none when it
/// is gone or the kernel does not list them.
pub(crate) fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else { continue };
        out.extend(text.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::Location;

    fn sample(object: &str, count: u64) -> Located {
        Located {
            location: Location { object: object.into(), function: "f".into(), file: None, line: None }.into(),
            pid: 1,
            tid: 1,
            count,
            period: count,
        }
    }

    #[test]
    fn a_library_without_lines_is_told_to_get_its_debug_info_not_to_use_g_dwarf() {
        let located = [sample("/nonexistent/libruby-3.1.so.3.1", 90), sample("/nonexistent/prog", 10)];
        let notes = missing_lines(&located, 100, "x.c:^(\\w+)", &mut Symbolizer::default());
        let library = notes.iter().find(|n| n.contains("libruby-3.1.so.3.1,")).expect("a note for the library");
        assert!(
            library.ends_with("line information needs libruby-3.1.so.3.1's debug info: install its debug package (Debian: the -dbgsym package of the package that ships it, from the debug archive) or set DEBUGINFOD_URLS, or build libruby-3.1.so.3.1 with -g"),
            "{library}"
        );
        assert!(notes.iter().all(|n| !n.contains("-g dwarf")), "{notes:?}");
    }

    #[test]
    fn a_program_without_lines_is_told_to_rebuild_with_g() {
        let notes = missing_lines(&[sample("/nonexistent/prog", 10)], 10, "x.c:^(\\w+)", &mut Symbolizer::default());
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].ends_with(
                "line information needs prog's debug info: rebuild it with -g (or install its separate debug file)"
            ),
            "{}",
            notes[0]
        );
    }
}
