//! `perflab diff OLD NEW`: change per function (or source line, or object) in share
//! and in CPU seconds (clock events) or events (count events), matched by name — normalised (object basename, function) —
//! never by address, so two different builds compare; sorted by contribution to the
//! total change. `--stacks` compares whole call stacks instead (matched by their
//! function names, root to leaf), and `--flamegraph` draws the differential flame graph.

use super::aggregate::{self, By, Row};
use super::error::ProfileError;
use super::format::Profile;
use super::symbolize::Symbolizer;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// What a diff measures changes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffUnit {
    /// Both profiles sample a clock: summed periods are CPU seconds.
    Seconds,
    /// Both sample the same count event: summed periods are events.
    Events,
    /// They sample different events: only samples and shares compare.
    Samples,
}

impl DiffUnit {
    /// What `old` and `new` can be compared in: seconds when both sample a clock, events when both count the same event, else samples.
    pub fn of(old: &Profile, new: &Profile) -> DiffUnit {
        if old.period_is_time() && new.period_is_time() {
            DiffUnit::Seconds
        } else if old.event == new.event {
            DiffUnit::Events
        } else {
            DiffUnit::Samples
        }
    }

    /// A row's (or a whole profile's) value in this unit.
    pub fn value(self, samples: u64, period: u64) -> f64 {
        match self {
            DiffUnit::Seconds => period as f64 / 1e9,
            DiffUnit::Events => period as f64,
            DiffUnit::Samples => samples as f64,
        }
    }
}

fn nan() -> f64 {
    f64::NAN
}

fn is_nan(value: &f64) -> bool {
    value.is_nan()
}

/// One matched row. Shares are of each profile's weight (time or events, every sample
/// weighing its period).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Change {
    /// The function (or line, or object) name.
    pub name: String,
    /// Its object's basename.
    pub object: String,
    /// Samples in it in the old profile.
    pub old_samples: u64,
    /// Samples in it in the new profile.
    pub new_samples: u64,
    /// Its share of the old profile's weight (0–1).
    pub old_share: f64,
    /// Its share of the new profile's weight (0–1).
    pub new_share: f64,
    /// new_share − old_share (0–1 scale).
    pub share_change: f64,
    /// CPU seconds (summed periods of a clock event); only in `seconds` diffs.
    #[serde(default = "nan", skip_serializing_if = "is_nan")]
    pub old_s: f64,
    /// CPU seconds in it in the new profile; only in `seconds` diffs.
    #[serde(default = "nan", skip_serializing_if = "is_nan")]
    pub new_s: f64,
    /// new_s − old_s.
    #[serde(default = "nan", skip_serializing_if = "is_nan")]
    pub change_s: f64,
    /// Events (summed periods of a count event); only in `events` diffs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_events: Option<u64>,
    /// Events in it in the new profile; only in `events` diffs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_events: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) change_events: Option<i64>,
    /// This row's change / the total change, in the diff's unit; the rows'
    /// contributions sum to 1.
    pub contribution: f64,
}

impl Change {
    /// The change in the diff's unit.
    pub fn change(&self, unit: DiffUnit) -> f64 {
        match unit {
            DiffUnit::Seconds => self.change_s,
            DiffUnit::Events => self.change_events.unwrap_or(0) as f64,
            DiffUnit::Samples => self.new_samples as f64 - self.old_samples as f64,
        }
    }
}

/// One of the two profiles of a diff.
#[derive(Debug, Serialize)]
pub struct Side {
    /// The profile file.
    pub path: String,
    /// The event it sampled.
    pub event: String,
    /// Samples in it.
    pub samples: u64,
    /// All samples' CPU seconds (`seconds` diffs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_s: Option<f64>,
    /// All samples' events (`events` diffs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
}

/// What `perflab diff --json` writes.
#[derive(Debug, Serialize)]
pub struct DiffReport {
    /// Version of this report's JSON schema.
    pub schema_version: u32,
    /// What changes are measured in: `seconds`, `events` or `samples`.
    pub unit: DiffUnit,
    /// The old profile.
    pub old: Side,
    /// The new profile.
    pub new: Side,
    /// The total change in `unit`.
    pub total_change: f64,
    /// The same in seconds (`seconds` diffs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) total_change_s: Option<f64>,
    /// The matched rows.
    pub changes: Vec<Change>,
    /// Doubts about the comparison, one line each.
    pub warnings: Vec<String>,
}

fn total(unit: DiffUnit, profile: &Profile) -> f64 {
    unit.value(profile.total_samples(), profile.total_period())
}

fn matching_key(profile: &Profile, row: &Row) -> (String, String) {
    (aggregate::matching_object(profile, &row.object).to_string(), row.name.clone())
}

/// The rows of `old` and `new` grouped `by`, matched by object and name, with the
/// symbolizer's warnings.
pub fn diff(old: &Profile, new: &Profile, by: By) -> (Vec<Change>, Vec<String>) {
    let mut symbolizer = Symbolizer::default();
    let old_rows = aggregate::flat(&aggregate::locate(old, &mut symbolizer), by);
    let new_rows = aggregate::flat(&aggregate::locate(new, &mut symbolizer), by);
    changes(old, new, &old_rows, &new_rows, symbolizer.warnings)
}

/// Changes per call stack, each named by its folded function names (root first). None
/// when a profile has no call stacks.
pub(crate) fn diff_stacks(old: &Profile, new: &Profile) -> Option<(Vec<Change>, Vec<String>)> {
    let mut symbolizer = Symbolizer::default();
    let mut rows = |p: &Profile| -> Option<Vec<Row>> {
        let graph = aggregate::locate_with_graph(p, &mut symbolizer).1?;
        let mut sums: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for stack in graph.named_stacks() {
            let e = sums.entry(aggregate::folded_names(&stack.frames)).or_default();
            e.0 += stack.samples;
            e.1 += stack.period;
        }
        let total = p.total_period().max(1) as f64;
        Some(
            sums.into_iter()
                .map(|(name, (samples, period))| Row {
                    name,
                    object: String::new(),
                    self_samples: samples,
                    self_share: period as f64 / total,
                    self_period: period,
                    total_samples: None,
                    total_share: None,
                    total_period: None,
                })
                .collect(),
        )
    };
    let (old_rows, new_rows) = (rows(old)?, rows(new)?);
    Some(changes(old, new, &old_rows, &new_rows, symbolizer.warnings))
}

fn changes(
    old: &Profile,
    new: &Profile,
    old_rows: &[Row],
    new_rows: &[Row],
    mut warnings: Vec<String>,
) -> (Vec<Change>, Vec<String>) {
    let unit = DiffUnit::of(old, new);
    if unit == DiffUnit::Samples {
        warnings.insert(
            0,
            format!(
                "the profiles sample different events ({} and {}): only samples and shares are compared",
                old.event, new.event
            ),
        );
    }
    type OldNew<'a> = (Option<&'a Row>, Option<&'a Row>);
    let mut matched: BTreeMap<(String, String), OldNew> = BTreeMap::new();
    for r in old_rows {
        matched.entry(matching_key(old, r)).or_default().0 = Some(r);
    }
    for r in new_rows {
        matched.entry(matching_key(new, r)).or_default().1 = Some(r);
    }
    let total_change = total(unit, new) - total(unit, old);
    let value = |r: Option<&Row>| r.map_or(0.0, |r| unit.value(r.self_samples, r.self_period));
    let mut changes: Vec<Change> = matched
        .into_iter()
        .map(|((_, name), (o, n))| {
            let object = n.or(o).map(|r| r.object.clone()).unwrap_or_default();
            let (old_value, new_value) = (value(o), value(n));
            let old_share = o.map_or(0.0, |r| r.self_share);
            let new_share = n.map_or(0.0, |r| r.self_share);
            let seconds = |v: f64| if unit == DiffUnit::Seconds { v } else { f64::NAN };
            let events = |r: Option<&Row>| (unit == DiffUnit::Events).then(|| r.map_or(0, |r| r.self_period));
            let (old_events, new_events) = (events(o), events(n));
            Change {
                name,
                object,
                old_samples: o.map_or(0, |r| r.self_samples),
                new_samples: n.map_or(0, |r| r.self_samples),
                old_share,
                new_share,
                share_change: new_share - old_share,
                old_s: seconds(old_value),
                new_s: seconds(new_value),
                change_s: seconds(new_value - old_value),
                old_events,
                new_events,
                change_events: old_events.zip(new_events).map(|(o, n)| n as i64 - o as i64),
                contribution: if total_change == 0.0 { 0.0 } else { (new_value - old_value) / total_change },
            }
        })
        .collect();
    changes.sort_by(|a, b| b.change(unit).abs().total_cmp(&a.change(unit).abs()).then_with(|| a.name.cmp(&b.name)));
    (changes, warnings)
}

/// The diff of two loaded profiles (`paths` name them in the report): by rows grouped
/// `by`, or with `stacks` by whole call stacks (both profiles need them).
pub fn report(
    old: &Profile,
    new: &Profile,
    paths: [&Path; 2],
    by: By,
    stacks: bool,
) -> Result<DiffReport, ProfileError> {
    let (changes, warnings) = if stacks {
        let missing = |p: &Profile, path: &Path| {
            p.stacks.is_empty().then(|| ProfileError::NoStacks { path: path.to_path_buf(), flag: "--stacks" })
        };
        if let Some(e) = missing(old, paths[0]).or_else(|| missing(new, paths[1])) {
            return Err(e);
        }
        diff_stacks(old, new).expect("both profiles have call stacks (checked above)")
    } else {
        diff(old, new, by)
    };
    let unit = DiffUnit::of(old, new);
    let side = |p: &Profile, path: &Path| Side {
        path: path.display().to_string(),
        event: p.event.clone(),
        samples: p.total_samples(),
        estimated_s: (unit == DiffUnit::Seconds).then(|| total(unit, p)),
        events: (unit == DiffUnit::Events).then(|| p.total_period()),
    };
    let total_change = total(unit, new) - total(unit, old);
    Ok(DiffReport {
        schema_version: 1,
        unit,
        old: side(old, paths[0]),
        new: side(new, paths[1]),
        total_change,
        total_change_s: (unit == DiffUnit::Seconds).then_some(total_change),
        changes,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{ObjectRef, SampleCount, Space, Task};

    /// Two profiles of this test binary, the second under another file name (a symlink
    /// in `dir`, standing for a second build), with samples on two functions in
    /// different proportions.
    fn pair(dir: &std::path::Path) -> (Profile, Profile) {
        let exe = std::env::current_exe().unwrap().to_str().unwrap().to_string();
        let obj = crate::symbolize::ObjectInfo::load(&exe).unwrap();
        let off = |name: &str| obj.file_offset(obj.symbols_named(name).next().unwrap().start).unwrap();
        let a = off("perflab_profile::symbolize::normalize");
        let b = off("perflab_profile::symbolize::demangle");
        let renamed = dir.join("renamed-build");
        std::os::unix::fs::symlink(&exe, &renamed).unwrap();
        let make = |program: &str, na: u64, nb: u64| Profile {
            event: "cpu-clock".into(),
            frequency_hz: 1000,
            command: vec![program.to_string()],
            duration_s: 1.0,
            cpu_s: 1.0,
            exit_code: Some(0),
            objects: vec![ObjectRef { path: program.to_string() }],
            tasks: vec![Task { pid: 1, tid: 1, comm: "t".into() }],
            samples: vec![
                SampleCount {
                    pid: 1,
                    tid: 1,
                    space: Space::User,
                    object: Some(0),
                    offset: a,
                    count: na,
                    period: na * 1_000_000,
                },
                SampleCount {
                    pid: 1,
                    tid: 1,
                    space: Space::User,
                    object: Some(0),
                    offset: b,
                    count: nb,
                    period: nb * 1_000_000,
                },
            ],
            ..Profile::default()
        };
        (make(&exe, 300, 100), make(renamed.to_str().unwrap(), 100, 100))
    }

    #[test]
    fn sorted_by_contribution_and_matched_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let (old, new) = pair(dir.path());
        let (changes, warnings) = diff(&old, &new, By::Function);
        assert!(warnings.is_empty());
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert_eq!(changes[0].name, "perflab_profile::symbolize::normalize");
        assert!((changes[0].change_s - -0.2).abs() < 1e-9);
        assert!((changes[0].contribution - 1.0).abs() < 1e-9);
        assert!((changes[0].old_share - 0.75).abs() < 1e-9);
        assert!((changes[0].new_share - 0.5).abs() < 1e-9);
        assert_eq!(changes[1].change_s, 0.0);
    }
}
