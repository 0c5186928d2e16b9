//! `perf report --sort KEY[,KEY…]`: samples grouped by a tuple of keys (command, thread,
//! object, function, source line) in the order given, one row per distinct tuple with
//! its share. The default views (`--by`) stay as they are; this is the extra table
//! `show --sort` prints, and the keys `diff --sort` accepts.

use super::aggregate::{By, Located};
use super::error::ProfileError;
use super::format::Profile;
use super::kernel;
use super::symbolize::basename;
use serde::Serialize;
use std::collections::HashMap;

/// One of perf report's sort keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    /// The command name (`comm`) of the sampled thread.
    Comm,
    /// The sampled thread, shown `TID:comm` — as in perf, where the `pid` key is per
    /// thread (for a single-threaded process the tid is its pid).
    Pid,
    /// The object the sampled code is in, by file name (`[kernel.kallsyms]` for the
    /// kernel, `[MODULE]` for a kernel module, as perf names them).
    Dso,
    /// The function the sample landed in (self, not inclusive), by name.
    Sym,
    /// The source file (its name) and line of the sampled address.
    Srcline,
}

impl SortKey {
    /// The keys as `--sort` spells them (perf report's names).
    pub const NAMES: [&'static str; 5] = ["comm", "pid", "dso", "sym", "srcline"];

    fn parse(name: &str) -> Option<SortKey> {
        Some(match name {
            "comm" => SortKey::Comm,
            "pid" => SortKey::Pid,
            "dso" => SortKey::Dso,
            // perf accepts both spellings.
            "sym" | "symbol" => SortKey::Sym,
            "srcline" => SortKey::Srcline,
            _ => return None,
        })
    }

    /// perf report's column header for the key.
    pub fn header(self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            SortKey::Pid => "Pid:Command",
            SortKey::Dso => "Shared Object",
            SortKey::Sym => "Symbol",
            SortKey::Srcline => "Source:Line",
        }
    }

    /// The key as `--sort` spells it.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Comm => "comm",
            SortKey::Pid => "pid",
            SortKey::Dso => "dso",
            SortKey::Sym => "sym",
            SortKey::Srcline => "srcline",
        }
    }
}

/// `comm,dso` → the keys, in order; an unknown, empty or repeated key is an error that
/// lists the valid ones.
pub fn parse_keys(spec: &str) -> Result<Vec<SortKey>, ProfileError> {
    let valid = SortKey::NAMES.join(", ");
    let shown = perflab_sys::text::escape(spec);
    let mut keys = Vec::new();
    for name in spec.split(',').map(str::trim) {
        let key = SortKey::parse(name).ok_or_else(|| {
            ProfileError::Option(format!(
                "unknown sort key `{}` in --sort {shown}; valid keys: {valid}",
                perflab_sys::text::escape(name)
            ))
        })?;
        if keys.contains(&key) {
            return Err(ProfileError::Option(format!("sort key `{name}` given twice in --sort {shown}")));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// What `diff --sort` keys mean: two profiles are matched by code, so the keys must name
/// code — `dso,sym` (or `sym`, matched within its object all the same) by function,
/// `dso` by object, `srcline` by source line. `comm` and `pid` are refused: the two runs'
/// processes are different processes (other pids), and a diff per command is a
/// `--comm` filter on both.
pub fn diff_by(keys: &[SortKey]) -> Result<By, ProfileError> {
    use SortKey::*;
    match keys {
        [Sym] | [Dso, Sym] | [Sym, Dso] => Ok(By::Function),
        [Dso] => Ok(By::Object),
        [Srcline] => Ok(By::Line),
        _ => {
            let given: Vec<&str> = keys.iter().map(|k| k.name()).collect();
            Err(ProfileError::Option(format!(
                "diff --sort {} is not supported: diff matches code, so it takes dso,sym (or sym), dso or srcline; for one command use --comm",
                given.join(",")
            )))
        }
    }
}

/// One row: the key values (in the keys' order) and the samples they got. Shares are
/// of all samples' periods, as every table of the flat report (time for a clock event,
/// events for a count event; `perf report`'s Overhead).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KeyedRow {
    /// The row's value of each key, in the keys' order.
    pub keys: Vec<String>,
    /// Samples whose leaf has these values (self).
    pub self_samples: u64,
    /// self_period / all samples' periods, 0–1.
    pub self_share: f64,
    /// Sum of their periods (ns for clock events, events otherwise).
    pub self_period: u64,
}

/// The `--sort` table: the keys and the rows, hottest (by period) first.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SortedTable {
    /// The keys, in the order given.
    pub keys: Vec<SortKey>,
    /// The rows, hottest (by period) first.
    pub rows: Vec<KeyedRow>,
}

/// perf's name of an object, from perflab's (`[kernel]` → `[kernel.kallsyms]`).
pub(crate) fn dso_name(object: &str) -> String {
    if object == kernel::KERNEL_OBJECT {
        return "[kernel.kallsyms]".to_string();
    }
    if let Some(module) = object.strip_prefix("[kernel:").and_then(|m| m.strip_suffix(']')) {
        return format!("[{module}]");
    }
    basename(object).to_string()
}

/// Group the located samples of `profile` by `keys`.
pub fn table(profile: &Profile, located: &[Located], keys: &[SortKey]) -> SortedTable {
    let comms: HashMap<(u32, u32), &str> = profile.tasks.iter().map(|t| ((t.pid, t.tid), t.comm.as_str())).collect();
    let total: u64 = located.iter().map(|l| l.period).sum();
    let mut sums: HashMap<Vec<String>, (u64, u64)> = HashMap::new();
    for l in located {
        let comm = comms.get(&(l.pid, l.tid)).copied().filter(|c| !c.is_empty());
        let values = keys
            .iter()
            .map(|key| match key {
                // perf shows a thread without a comm by its tid.
                SortKey::Comm => comm.map_or_else(|| format!(":{}", l.tid), str::to_string),
                SortKey::Pid => format!("{}:{}", l.tid, comm.unwrap_or("")),
                SortKey::Dso => dso_name(&l.location.object),
                SortKey::Sym => l.location.function.clone(),
                SortKey::Srcline => match (&l.location.file, l.location.line) {
                    (Some(file), Some(line)) => format!("{}:{line}", basename(file)),
                    _ => format!("{} (no line info)", l.location.function),
                },
            })
            .collect();
        let e = sums.entry(values).or_default();
        e.0 += l.count;
        e.1 += l.period;
    }
    let mut rows: Vec<KeyedRow> = sums
        .into_iter()
        .map(|(keys, (samples, period))| KeyedRow {
            keys,
            self_samples: samples,
            self_share: if total == 0 { 0.0 } else { period as f64 / total as f64 },
            self_period: period,
        })
        .collect();
    rows.sort_by(|a, b| {
        (b.self_period, b.self_samples).cmp(&(a.self_period, a.self_samples)).then_with(|| a.keys.cmp(&b.keys))
    });
    SortedTable { keys: keys.to_vec(), rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Task;
    use crate::symbolize::Location;

    fn at(pid: u32, tid: u32, object: &str, function: &str, count: u64) -> Located {
        Located {
            location: Location { object: object.into(), function: function.into(), file: None, line: None }.into(),
            pid,
            tid,
            count,
            period: count * 10,
        }
    }

    #[test]
    fn keys_parse_in_order_and_unknown_ones_list_the_valid() {
        assert_eq!(parse_keys("comm,dso").unwrap(), [SortKey::Comm, SortKey::Dso]);
        assert_eq!(parse_keys("symbol,pid").unwrap(), [SortKey::Sym, SortKey::Pid]);
        let e = parse_keys("comm,cpu").unwrap_err().to_string();
        assert!(e.contains("`cpu`") && e.contains("comm, pid, dso, sym, srcline") && !e.contains('\n'), "{e}");
        assert!(parse_keys("dso,dso").is_err());
        assert!(parse_keys("").is_err());
    }

    #[test]
    fn rows_group_by_the_key_tuple_with_period_shares() {
        let profile = Profile {
            tasks: vec![
                Task { pid: 1, tid: 1, comm: "postgres".into() },
                Task { pid: 1, tid: 2, comm: "postgres".into() },
                Task { pid: 3, tid: 3, comm: "pgbench".into() },
            ],
            ..Profile::default()
        };
        let located = [
            at(1, 1, "/usr/bin/postgres", "exec", 5),
            at(1, 2, "/lib/libc.so.6", "memcpy", 2),
            at(1, 1, "[kernel]", "clear_page", 1),
            at(3, 3, "/lib/libc.so.6", "memcpy", 2),
        ];
        let t = table(&profile, &located, &[SortKey::Comm, SortKey::Dso]);
        let rows: Vec<(Vec<&str>, u64)> =
            t.rows.iter().map(|r| (r.keys.iter().map(String::as_str).collect(), r.self_samples)).collect();
        assert_eq!(
            rows,
            [
                (vec!["postgres", "postgres"], 5),
                (vec!["pgbench", "libc.so.6"], 2),
                (vec!["postgres", "libc.so.6"], 2),
                (vec!["postgres", "[kernel.kallsyms]"], 1),
            ]
        );
        assert!((t.rows[0].self_share - 0.5).abs() < 1e-12);
        let t = table(&profile, &located, &[SortKey::Sym, SortKey::Pid]);
        assert_eq!(t.rows[1].keys, ["memcpy", "2:postgres"], "pid is per thread, as perf's");
        let t = table(&profile, &located, &[SortKey::Sym]);
        assert_eq!((t.rows[1].keys[0].as_str(), t.rows[1].self_samples), ("memcpy", 4));
    }

    #[test]
    fn diff_takes_keys_that_name_code() {
        assert_eq!(diff_by(&parse_keys("dso,sym").unwrap()).unwrap(), By::Function);
        assert_eq!(diff_by(&parse_keys("dso").unwrap()).unwrap(), By::Object);
        assert_eq!(diff_by(&parse_keys("srcline").unwrap()).unwrap(), By::Line);
        let e = diff_by(&parse_keys("comm,dso").unwrap()).unwrap_err().to_string();
        assert!(e.contains("diff --sort comm,dso is not supported"), "{e}");
    }
}
