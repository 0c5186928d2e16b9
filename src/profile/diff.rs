//! `perflab diff OLD NEW`: change per function (or source line, or object) in share
//! and in estimated time, matched by name — normalised (object basename, function) —
//! never by address, so two different builds compare; sorted by contribution to the
//! total change. `--stacks` compares whole call stacks instead (matched by their
//! function names, root to leaf), and `--flamegraph` draws the differential flame graph.

use super::aggregate::{self, By, Row};
use super::flame;
use super::format::Profile;
use super::symbolize::Symbolizer;
use crate::error::Failure;
use crate::render::color;
use crate::usage;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// The baseline profile.
    pub old: PathBuf,
    /// The profile to compare with it.
    pub new: PathBuf,
    /// Match and report by function, source line or object.
    pub by: By,
    /// Rows to print in the terminal table.
    pub limit: usize,
    /// Write the diff as JSON to FILE (`-` for stdout).
    pub json: Option<PathBuf>,
    /// Compare call stacks (root;…;leaf) instead of rows grouped `by`; needs `-g` profiles.
    pub stacks: bool,
    /// Write the differential flame graph (SVG) to FILE; needs `-g` profiles.
    pub flamegraph: Option<PathBuf>,
    /// How the differential flame graph is drawn (normalised to equal totals by default).
    pub flame: super::flame::FlameOptions,
}

/// One matched row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Change {
    pub name: String,
    pub object: String,
    pub old_samples: u64,
    pub new_samples: u64,
    pub old_share: f64,
    pub new_share: f64,
    /// new_share − old_share (0–1 scale).
    pub share_change: f64,
    /// Estimated seconds of CPU time (clock events: sum of periods; other events:
    /// samples / frequency).
    pub old_s: f64,
    pub new_s: f64,
    pub change_s: f64,
    /// change_s / total change; the rows' contributions sum to 1.
    pub contribution: f64,
}

#[derive(Debug, Serialize)]
pub struct Side {
    pub path: String,
    pub event: String,
    pub samples: u64,
    pub estimated_s: f64,
}

#[derive(Debug, Serialize)]
pub struct DiffReport {
    pub schema_version: u32,
    pub old: Side,
    pub new: Side,
    pub total_change_s: f64,
    pub changes: Vec<Change>,
    pub warnings: Vec<String>,
}

/// Seconds a row stands for.
fn seconds(profile: &Profile, row: &Row) -> f64 {
    if profile.period_is_time() {
        row.self_period as f64 / 1e9
    } else {
        row.self_samples as f64 / profile.frequency_hz as f64
    }
}

fn total_seconds(profile: &Profile) -> f64 {
    if profile.period_is_time() {
        profile.total_period() as f64 / 1e9
    } else {
        profile.total_samples() as f64 / profile.frequency_hz as f64
    }
}

fn matching_key(profile: &Profile, row: &Row) -> (String, String) {
    (aggregate::matching_object(profile, &row.object).to_string(), row.name.clone())
}

pub fn diff(old: &Profile, new: &Profile, by: By) -> (Vec<Change>, Vec<String>) {
    let mut symbolizer = Symbolizer::default();
    let old_rows = aggregate::flat(&aggregate::locate(old, &mut symbolizer), by);
    let new_rows = aggregate::flat(&aggregate::locate(new, &mut symbolizer), by);
    changes(old, new, &old_rows, &new_rows, symbolizer.warnings)
}

/// Changes per call stack, each named by its folded function names (root first). None
/// when a profile has no call stacks.
pub fn diff_stacks(old: &Profile, new: &Profile) -> Option<(Vec<Change>, Vec<String>)> {
    let mut symbolizer = Symbolizer::default();
    let mut rows = |p: &Profile| -> Option<Vec<Row>> {
        let graph = aggregate::locate_with_graph(p, &mut symbolizer).1?;
        let mut sums: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for stack in graph.named_stacks() {
            let e = sums.entry(aggregate::folded_names(&stack.frames)).or_default();
            e.0 += stack.samples;
            e.1 += stack.period;
        }
        let total = p.total_samples().max(1) as f64;
        Some(
            sums.into_iter()
                .map(|(name, (samples, period))| Row {
                    name,
                    object: String::new(),
                    self_samples: samples,
                    self_share: samples as f64 / total,
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
    if old.event != new.event {
        warnings.insert(
            0,
            format!(
                "the profiles sample different events ({} and {}); times are estimates from sample counts",
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
    let total_change = total_seconds(new) - total_seconds(old);
    let mut changes: Vec<Change> = matched
        .into_iter()
        .map(|((_, name), (o, n))| {
            let object = n.or(o).map(|r| r.object.clone()).unwrap_or_default();
            let old_s = o.map_or(0.0, |r| seconds(old, r));
            let new_s = n.map_or(0.0, |r| seconds(new, r));
            let old_share = o.map_or(0.0, |r| r.self_share);
            let new_share = n.map_or(0.0, |r| r.self_share);
            let change_s = new_s - old_s;
            Change {
                name,
                object,
                old_samples: o.map_or(0, |r| r.self_samples),
                new_samples: n.map_or(0, |r| r.self_samples),
                old_share,
                new_share,
                share_change: new_share - old_share,
                old_s,
                new_s,
                change_s,
                contribution: if total_change == 0.0 { 0.0 } else { change_s / total_change },
            }
        })
        .collect();
    changes.sort_by(|a, b| b.change_s.abs().total_cmp(&a.change_s.abs()).then_with(|| a.name.cmp(&b.name)));
    (changes, warnings)
}

pub fn main_diff(args: &DiffOptions) -> Result<(), Failure> {
    let old = Profile::load(&args.old)?;
    let new = Profile::load(&args.new)?;
    if args.stacks || args.flamegraph.is_some() {
        for (p, path) in [(&old, &args.old), (&new, &args.new)] {
            if p.stacks.is_empty() {
                let flag = if args.stacks { "--stacks" } else { "--flamegraph" };
                return Err(usage!(
                    "{} has no call stacks for {flag} (recorded without `perflab profile -g`, or no samples)",
                    path.display()
                ));
            }
        }
    }
    if args.json.is_some() && args.json == args.flamegraph {
        return Err(usage!("--json and --flamegraph cannot write to the same place"));
    }
    let (changes, warnings) = if args.stacks {
        diff_stacks(&old, &new).expect("both profiles have call stacks (checked above)")
    } else {
        diff(&old, &new, args.by)
    };
    for w in &warnings {
        eprintln!("perflab: warning: {w}");
    }
    let side = |p: &Profile, path: &Path| Side {
        path: path.display().to_string(),
        event: p.event.clone(),
        samples: p.total_samples(),
        estimated_s: total_seconds(p),
    };
    let report = DiffReport {
        schema_version: 1,
        old: side(&old, &args.old),
        new: side(&new, &args.new),
        total_change_s: total_seconds(&new) - total_seconds(&old),
        changes,
        warnings,
    };
    let to_stdout = [&args.json, &args.flamegraph].into_iter().flatten().any(|p| p == Path::new("-"));
    if !to_stdout {
        print_diff(&report, args.limit);
    }
    if let Some(path) = &args.json {
        crate::render::json::write(path, &report)?;
    }
    if let Some(path) = &args.flamegraph {
        let title = format!("perflab diff {} → {}", args.old.display(), args.new.display());
        let svg = flame::diff_svg_with(&old, &new, &title, &args.flame)
            .expect("both profiles have call stacks (checked above)");
        super::write_text(path, &svg)?;
    }
    Ok(())
}

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

fn print_diff(r: &DiffReport, limit: usize) {
    let pct = if r.old.estimated_s > 0.0 {
        format!(" ({:+.1}%)", r.total_change_s / r.old.estimated_s * 100.0)
    } else {
        String::new()
    };
    println!(
        "{}",
        color::bold(&format!(
            "old {}: {} samples ≈ {:.3} s   new {}: {} samples ≈ {:.3} s",
            r.old.path, r.old.samples, r.old.estimated_s, r.new.path, r.new.samples, r.new.estimated_s
        ))
    );
    println!("total change {}{pct}", signed_seconds(r.total_change_s));
    println!(
        "{}",
        color::dim(&format!(
            "{:>10}  {:>8}  {:>21}  {:>17}  name",
            "change", "of total", "time old → new", "share old → new"
        ))
    );
    for c in r.changes.iter().take(limit) {
        let seconds = signed_seconds(c.change_s);
        let pad = " ".repeat(10usize.saturating_sub(format!("{:+.3} s", c.change_s).chars().count()));
        let object = if c.object.is_empty() || c.object == c.name {
            String::new()
        } else {
            color::dim(&format!("  [{}]", c.object))
        };
        println!(
            "{pad}{seconds}  {:>7.1}%  {:>7.3} s → {:>7.3} s  {:>6.2}% → {:>6.2}%  {}{object}",
            c.contribution * 100.0,
            c.old_s,
            c.new_s,
            c.old_share * 100.0,
            c.new_share * 100.0,
            leaf_end(&crate::render::terminal::escape(&c.name), 120)
        );
    }
    if r.changes.len() > limit {
        println!("{}", color::dim(&format!("({} more rows; --limit to see them)", r.changes.len() - limit)));
    }
}

/// A call stack's leaf end is what tells stacks apart: keep the last `max` characters.
fn leaf_end(name: &str, max: usize) -> String {
    let count = name.chars().count();
    if count <= max {
        return name.to_string();
    }
    "…".to_string() + &name.chars().skip(count - max + 1).collect::<String>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::format::{ObjectRef, SampleCount, Space, Task};

    /// Two profiles of this test binary, the second under another file name (a symlink
    /// in `dir`, standing for a second build), with samples on two functions in
    /// different proportions.
    fn pair(dir: &std::path::Path) -> (Profile, Profile) {
        let exe = std::env::current_exe().unwrap().to_str().unwrap().to_string();
        let obj = crate::profile::symbolize::ObjectInfo::load(&exe).unwrap();
        let off = |name: &str| obj.file_offset(obj.symbols_named(name).next().unwrap().start).unwrap();
        let a = off("perflab::profile::symbolize::normalize");
        let b = off("perflab::profile::symbolize::demangle");
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
        assert_eq!(changes[0].name, "perflab::profile::symbolize::normalize");
        assert!((changes[0].change_s - -0.2).abs() < 1e-9);
        assert!((changes[0].contribution - 1.0).abs() < 1e-9);
        assert!((changes[0].old_share - 0.75).abs() < 1e-9);
        assert!((changes[0].new_share - 0.5).abs() < 1e-9);
        assert_eq!(changes[1].change_s, 0.0);
    }
}
