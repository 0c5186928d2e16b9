//! `perflab top`'s data: what the live view is asked to watch ([`TopOptions`]), how the
//! user has arranged it ([`View`]), and one interval's samples as rows per process and
//! function ([`rows`]). The terminal, keys and frames are the binary's and the
//! renderer's.

use super::aggregate::Located;
use super::record::RecordOptions;
use std::time::Duration;

/// How `perflab top` samples and shows.
#[derive(Debug, Clone)]
pub struct TopOptions {
    /// What to sample.
    pub record: RecordOptions,
    /// Every CPU was chosen because no target was given (said when that fails).
    pub every_cpu_by_default: bool,
    /// Time between refreshes; each frame shows the samples of the last interval.
    pub interval: Duration,
    /// Stop after this many frames (None: until `q`, Ctrl-C or the target's end).
    pub iterations: Option<u32>,
    /// Plain-text frames on stdout even on a terminal.
    pub batch: bool,
    /// Rows per frame (on a terminal, at most what fits).
    pub limit: usize,
}

/// How rows are ordered (`s` cycles through them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Most samples first.
    Samples,
    /// By process id.
    Pid,
    /// By command name.
    Command,
    /// By function name.
    Function,
}

impl SortKey {
    /// The next order, as `s` cycles.
    pub fn next(self) -> SortKey {
        match self {
            SortKey::Samples => SortKey::Pid,
            SortKey::Pid => SortKey::Command,
            SortKey::Command => SortKey::Function,
            SortKey::Function => SortKey::Samples,
        }
    }

    /// The order's name in the header.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Samples => "samples",
            SortKey::Pid => "pid",
            SortKey::Command => "command",
            SortKey::Function => "function",
        }
    }
}

/// What the keys set: the order, a filter, and whether the view is frozen.
#[derive(Debug, Clone)]
pub struct View {
    /// How rows are ordered.
    pub sort: SortKey,
    /// Rows whose pid, command or function contains this (case-insensitive).
    pub filter: String,
    /// The filter being typed after `/`, until Enter or Esc.
    pub typing: Option<String>,
    /// True while the view is frozen.
    pub paused: bool,
}

impl Default for View {
    fn default() -> View {
        View { sort: SortKey::Samples, filter: String::new(), typing: None, paused: false }
    }
}

/// One row of the view: a function's samples in one process.
#[derive(Debug, Clone, PartialEq)]
pub struct TopRow {
    /// Process id.
    pub pid: u32,
    /// Its command name.
    pub comm: String,
    /// The function's name.
    pub function: String,
    /// Its object's basename.
    pub object: String,
    /// Samples in the interval.
    pub samples: u64,
    /// Of all samples of the interval (before filtering), 0–1.
    pub share: f64,
}

/// The interval's samples per (process, function), filtered and sorted as `view` says.
pub fn rows(window: &super::format::Profile, located: &[Located], view: &View) -> Vec<TopRow> {
    let total = located.iter().map(|l| l.count).sum::<u64>().max(1);
    let mut grouped: std::collections::HashMap<(u32, &str, &str), u64> = std::collections::HashMap::new();
    for l in located {
        *grouped.entry((l.pid, l.location.function.as_str(), l.location.object.as_str())).or_default() += l.count;
    }
    let comm = |pid: u32| {
        let tasks = window.tasks.iter().filter(|t| t.pid == pid);
        let main = tasks.clone().find(|t| t.tid == pid).or_else(|| tasks.clone().next());
        main.map_or(String::new(), |t| t.comm.clone())
    };
    let filter = view.filter.to_lowercase();
    let mut out: Vec<TopRow> = grouped
        .into_iter()
        .map(|((pid, function, object), samples)| TopRow {
            pid,
            comm: comm(pid),
            function: function.to_string(),
            object: super::symbolize::basename(object).to_string(),
            samples,
            share: samples as f64 / total as f64,
        })
        .filter(|r| {
            filter.is_empty()
                || r.pid.to_string().contains(&filter)
                || r.comm.to_lowercase().contains(&filter)
                || r.function.to_lowercase().contains(&filter)
        })
        .collect();
    let by_samples = |a: &TopRow, b: &TopRow| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function));
    out.sort_by(|a, b| match view.sort {
        SortKey::Samples => by_samples(a, b),
        SortKey::Pid => a.pid.cmp(&b.pid).then(by_samples(a, b)),
        SortKey::Command => a.comm.cmp(&b.comm).then(a.pid.cmp(&b.pid)).then(by_samples(a, b)),
        SortKey::Function => a.function.cmp(&b.function).then(by_samples(a, b)),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_per_process_and_function_with_the_command_name() {
        use crate::format::{Profile, Task};
        use crate::symbolize::Location;
        let located = |pid, function: &str, count| Located {
            location: Location { object: "/bin/app".into(), function: function.into(), file: None, line: None }.into(),
            pid,
            tid: pid,
            count,
            period: count,
        };
        let window = Profile {
            tasks: vec![Task { pid: 1, tid: 1, comm: "ours".into() }, Task { pid: 2, tid: 2, comm: "theirs".into() }],
            ..Profile::default()
        };
        let samples = [located(1, "spin", 30), located(2, "spin", 50), located(1, "spin", 10), located(1, "main", 10)];
        let mut view = View::default();
        let all = rows(&window, &samples, &view);
        let summary: Vec<(u32, &str, &str, u64)> =
            all.iter().map(|r| (r.pid, r.comm.as_str(), r.function.as_str(), r.samples)).collect();
        assert_eq!(summary, [(2, "theirs", "spin", 50), (1, "ours", "spin", 40), (1, "ours", "main", 10)]);
        assert!((all[0].share - 0.5).abs() < 1e-12);
        view.filter = "OURS".into();
        assert_eq!(rows(&window, &samples, &view).len(), 2);
        view.filter.clear();
        view.sort = SortKey::Function;
        assert_eq!(rows(&window, &samples, &view)[0].function, "main");
    }
}
