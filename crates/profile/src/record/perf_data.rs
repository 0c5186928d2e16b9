//! perf.data as a source: the records of a `perf record` file (read with samply's
//! linux-perf-data) become the same `Record`s a live recording produces and go
//! through the same converter, so a perf.data file is symbolized, shown, annotated and
//! diffed by perflab's own pipeline. Samples of one event are kept (any event: clocks,
//! hardware and software counts, tracepoints); `-g` call chains are used as they are,
//! `--call-graph dwarf` stack copies are unwound with framehop like perflab's own;
//! `-a`/`-p` recordings and kernel samples work (kernel functions are named from
//! /proc/kallsyms when the file comes from this boot); JIT code is named from jitdump
//! files the process mapped (`jit-PID.dump`) or from perf maps.

use super::converter::Converter;
use super::perf_data_check;
use super::records::Record;
use super::unwinding::unwind_record;
use crate::error::ProfileError;
use crate::format::{DwarfStats, Profile, RecordTarget, Space};
use crate::kernel::Kallsyms;
use crate::symbolize::basename;
use crate::target;
use crate::unwind::{DwarfUnwinder, UserStack};
use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, HardwareEventId, PerfEventType, SampleRecord, SamplingPolicy, SoftwareCounterType,
};
use linux_perf_data::{AttributeDescription, PerfFileReader, PerfFileRecord};
use std::io::Read;
use std::path::Path;

/// The first bytes of a perf.data file (both the file and the pipe format).
const MAGIC: &[u8] = b"PERFILE2";

/// x86-64 register numbers in perf_regs.h, as `sample_regs_user` numbers them.
const REG_BP: u64 = 6;
const REG_SP: u64 = 7;
const REG_IP: u64 = 8;

/// Whether the file at `path` is a perf.data file (by its magic bytes).
pub(crate) fn is_perf_data(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    perflab_sys::files::open_regular(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == MAGIC
}

/// A profile read from perf.data, with what the user should know about it.
pub(crate) struct PerfData {
    pub profile: Profile,
    pub warnings: Vec<String>,
}

/// Read `path`, keeping the samples of `event` (perf's name for it, e.g. `cycles:u`;
/// None: the first sampled event in the file). perf.data comes from other machines and
/// other perf versions: its layout is checked before the parser sees it
/// (`perf_data_check`), and a panic left in the parser becomes an error.
pub fn read(path: &Path, event: Option<&str>) -> Result<PerfData, ProfileError> {
    let read_error = |source| ProfileError::Read { path: path.to_path_buf(), source };
    let file = perflab_sys::files::open_regular(path).map_err(read_error)?;
    let len = file.metadata().map_err(read_error)?.len();
    let layout = |why| ProfileError::PerfDataLayout { path: path.to_path_buf(), why };
    let checked = perf_data_check::check(&file, len).map_err(layout)?;
    std::io::Seek::rewind(&mut &file).map_err(read_error)?;
    perflab_sys::panic_guard::catching(|| read_checked(path, file, checked, event))
        .map_err(|panic| layout(format!("the reader failed on it ({panic}; a perflab bug, please report it)")))?
}

fn read_checked(
    path: &Path,
    file: std::fs::File,
    checked: perf_data_check::Checked,
    event: Option<&str>,
) -> Result<PerfData, ProfileError> {
    let perf_data_error = |source| ProfileError::PerfData { path: path.to_path_buf(), source };
    let PerfFileReader { mut perf_file, mut record_iter } =
        PerfFileReader::parse_file(std::io::BufReader::new(file)).map_err(perf_data_error)?;
    let attributes = perf_file.event_attributes().to_vec();
    let names: Vec<String> = attributes.iter().map(event_name).collect();
    let sampled: Vec<usize> = (0..attributes.len()).filter(|&i| is_sampled(&attributes[i])).collect();
    let content = |why: String| ProfileError::PerfDataContent { path: path.to_path_buf(), why };
    let chosen = match event {
        Some(wanted) => sampled
            .iter()
            .copied()
            .find(|&i| names[i] == wanted)
            .ok_or_else(|| content(format!("no sampled event `{wanted}` (it has {})", list(&sampled, &names))))?,
        None => *sampled.first().ok_or_else(|| content("no sampled event (a `perf stat` file?)".into()))?,
    };
    let mut warnings = Vec::new();
    if sampled.len() > 1 && event.is_none() {
        warnings.push(format!(
            "{} has samples of {} events ({}): showing {} (choose with --event NAME)",
            path.display(),
            sampled.len(),
            list(&sampled, &names),
            names[chosen]
        ));
    }
    let attr = attributes[chosen].attributes();
    let fixed_period = match attr.sampling_policy {
        SamplingPolicy::Period(p) => Some(p.get()),
        _ => None,
    };
    let dwarf = attr.sample_regs_user != 0 && attr.sample_stack_user > 0;
    let call_graph =
        dwarf || attr.sample_format.contains(linux_perf_data::linux_perf_event_reader::SampleFormat::CALLCHAIN);
    let mut unwinder = dwarf.then(|| (DwarfUnwinder::default(), DwarfStats::new(attr.sample_stack_user)));

    let mut converter = Converter::new(call_graph);
    let mut seen = Seen::default();
    while let Some(record) = record_iter.next_record(&mut perf_file).map_err(perf_data_error)? {
        let PerfFileRecord::EventRecord { attr_index, record } = record else { continue };
        let time = record.timestamp().unwrap_or(0);
        let Ok(parsed) = record.parse() else {
            seen.unparsed += 1;
            continue;
        };
        let record = match parsed {
            EventRecord::Sample(s) if attr_index == chosen => {
                let Some(record) = sample(&s, fixed_period) else { continue };
                seen.sample(time);
                record
            }
            EventRecord::Sample(_) => continue,
            EventRecord::Mmap(m) => {
                let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                match seen.mapping(m.pid, &path, m.address, m.page_offset, m.is_executable) {
                    Some(pid) => Record::Mmap { pid, start: m.address, len: m.length, pgoff: m.page_offset, path },
                    None => continue,
                }
            }
            EventRecord::Mmap2(m) => {
                let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                let executable = m.protection & libc::PROT_EXEC as u32 != 0;
                match seen.mapping(m.pid, &path, m.address, m.page_offset, executable) {
                    Some(pid) => Record::Mmap { pid, start: m.address, len: m.length, pgoff: m.page_offset, path },
                    None => continue,
                }
            }
            EventRecord::Comm(c) => {
                let (Ok(pid), Ok(tid)) = (u32::try_from(c.pid), u32::try_from(c.tid)) else { continue };
                if c.is_execve && time > 0 && seen.first_exec.is_none() {
                    seen.first_exec = Some(pid);
                }
                let comm = String::from_utf8_lossy(&c.name.as_slice()).into_owned();
                Record::Comm { pid, tid, comm, exec: c.is_execve }
            }
            EventRecord::Fork(f) => match (u32::try_from(f.pid), u32::try_from(f.ppid), u32::try_from(f.tid)) {
                (Ok(pid), Ok(ppid), Ok(tid)) => Record::Fork { pid, ppid, tid },
                _ => continue,
            },
            EventRecord::Exit(e) => match (u32::try_from(e.pid), u32::try_from(e.tid)) {
                (Ok(pid), Ok(tid)) => Record::Exit { pid, tid },
                _ => continue,
            },
            EventRecord::Lost(l) => Record::Lost(l.count),
            _ => continue,
        };
        let mut record = record;
        if let Some((unwinder, stats)) = &mut unwinder {
            unwind_record(unwinder, stats, &mut record);
        }
        converter.handle(time, record);
    }

    let cmdline = if checked.cmdline_readable { perf_file.cmdline().ok().flatten() } else { None };
    let (target, mut command) = recorded_target(cmdline.as_deref());
    // The program as it ran (its path), for matching builds in `diff`.
    match (&seen.program, command.first_mut()) {
        (Some(program), Some(first)) if basename(first) == basename(program) => *first = program.clone(),
        (Some(program), None) if target.is_command() => command = vec![program.clone()],
        _ => {}
    }
    let mut profile = Profile {
        event: names[chosen].clone(),
        frequency_hz: match attr.sampling_policy {
            SamplingPolicy::Frequency(f) => f,
            _ => 0,
        },
        sample_period: fixed_period,
        command,
        started: String::new(),
        duration_s: seen.duration_s(),
        target,
        ..Profile::default()
    };
    converter.finish(&mut profile);
    profile.dwarf = unwinder.map(|(_, stats)| stats);
    if profile.frequency_hz == 0 && profile.sample_period.is_none() {
        // A file whose event says neither (cannot happen for a sampled event); keep the
        // profile valid and say nothing false about the rate.
        profile.sample_period = Some(1);
    }
    name_kernel(&mut profile, &perf_file, seen.kernel_text);
    warnings.extend(changed_objects(&perf_file, &profile));
    if seen.unparsed > 0 {
        warnings.push(format!("{} records of {} could not be parsed and were skipped", seen.unparsed, path.display()));
    }
    if profile.lost > 0 {
        warnings.push(format!("perf lost {} records while recording {}", profile.lost, path.display()));
    }
    Ok(PerfData { profile, warnings })
}

/// What the reader learnt on the way besides the records.
#[derive(Default)]
struct Seen {
    first_sample: Option<u64>,
    last_sample: u64,
    /// The first process that exec'd after recording began: the launched command.
    first_exec: Option<u32>,
    /// Its program (the first file it mapped after exec).
    program: Option<String>,
    /// Where perf saw the running kernel's `_text` (its KASLR position).
    kernel_text: Option<u64>,
    unparsed: u64,
}

impl Seen {
    fn sample(&mut self, time: u64) {
        if time > 0 {
            self.first_sample.get_or_insert(time);
            self.last_sample = self.last_sample.max(time);
        }
    }

    fn duration_s(&self) -> f64 {
        self.first_sample.map_or(0.0, |first| (self.last_sample - first) as f64 / 1e9)
    }

    /// The pid an executable user mapping belongs to (None: a kernel map, whose `_text`
    /// position is noted, or a data mapping).
    fn mapping(&mut self, pid: i32, path: &str, address: u64, pgoff: u64, executable: bool) -> Option<u32> {
        if path.starts_with("[kernel.kallsyms]") {
            // perf writes the kernel map with pgoff = the address of `_text`.
            self.kernel_text = Some(pgoff).filter(|&p| p != 0).or(Some(address));
            return None;
        }
        let pid = u32::try_from(pid).ok()?;
        if !executable {
            return None;
        }
        if self.program.is_none() && self.first_exec == Some(pid) && path.starts_with('/') {
            self.program = Some(path.to_string());
        }
        Some(pid)
    }
}

/// A sample of the chosen event as a record; its period from the sample, else the
/// event's fixed one.
fn sample(s: &SampleRecord, fixed_period: Option<u64>) -> Option<Record> {
    let pid = u32::try_from(s.pid?).ok()?;
    let tid = u32::try_from(s.tid?).ok()?;
    let ip = s.ip?;
    let period = s.period.or(fixed_period).unwrap_or(1);
    let kernel = s.cpu_mode == CpuMode::Kernel;
    let chain: Vec<u64> = s.callchain.as_ref().map_or(Vec::new(), |c| (0..c.len()).filter_map(|i| c.get(i)).collect());
    let record = Record::Sample { pid, tid, ip, period, kernel, chain };
    let stack = s.user_regs.as_ref().zip(s.user_stack.as_ref()).and_then(|(regs, (bytes, size))| {
        let (bp, sp, ip) = (regs.get(REG_BP)?, regs.get(REG_SP)?, regs.get(REG_IP)?);
        let bytes = bytes.as_slice();
        let valid = (*size as usize).min(bytes.len());
        UserStack::new(&[bp, sp, ip], &bytes[..valid])
    });
    Some(match stack {
        Some(stack) => Record::StackSample(Box::new(record), stack),
        None => record,
    })
}

/// Whether an event of the file took samples (not a counter, not perf's dummy event
/// that only carries mappings).
fn is_sampled(attribute: &AttributeDescription) -> bool {
    let attr = attribute.attributes();
    !matches!(attr.sampling_policy, SamplingPolicy::NoSampling)
        && !matches!(attr.type_, PerfEventType::Software(SoftwareCounterType::Dummy))
}

/// perf's name for an event (from the file's event descriptions), else one made from
/// its type.
fn event_name(attribute: &AttributeDescription) -> String {
    if let Some(name) = attribute.name() {
        return name.to_string();
    }
    match attribute.attributes().type_ {
        PerfEventType::Software(t) => match t {
            SoftwareCounterType::CpuClock => "cpu-clock",
            SoftwareCounterType::TaskClock => "task-clock",
            SoftwareCounterType::PageFaults => "page-faults",
            SoftwareCounterType::ContextSwitches => "context-switches",
            SoftwareCounterType::CpuMigrations => "cpu-migrations",
            SoftwareCounterType::PageFaultsMin => "minor-faults",
            SoftwareCounterType::PageFaultsMaj => "major-faults",
            _ => "software-event",
        }
        .to_string(),
        PerfEventType::Hardware(id, _) => match id {
            HardwareEventId::CpuCycles => "cycles",
            HardwareEventId::Instructions => "instructions",
            HardwareEventId::CacheReferences => "cache-references",
            HardwareEventId::CacheMisses => "cache-misses",
            HardwareEventId::BranchInstructions => "branches",
            HardwareEventId::BranchMisses => "branch-misses",
            _ => "hardware-event",
        }
        .to_string(),
        PerfEventType::Tracepoint(id) => format!("tracepoint-{id}"),
        _ => "event".to_string(),
    }
}

fn list(indices: &[usize], names: &[String]) -> String {
    indices.iter().map(|&i| names[i].as_str()).collect::<Vec<_>>().join(", ")
}

/// perf record's options that take a value (tools/perf/builtin-record.c), short and
/// long; a long one may also be written `--name=value`.
const SHORT_WITH_VALUE: &str = "ecoFmCGuDjtprkI";
const LONG_WITH_VALUE: [&str; 20] = [
    "--event",
    "--filter",
    "--pid",
    "--tid",
    "--realtime",
    "--count",
    "--output",
    "--freq",
    "--mmap-pages",
    "--call-graph",
    "--cpu",
    "--cgroup",
    "--uid",
    "--delay",
    "--branch-filter",
    "--clockid",
    "--max-size",
    "--user-regs",
    "--control",
    "--switch-output-event",
];

/// What `perf record` sampled, from its command line (`perf record [options] [command]`):
/// `-a` every CPU, `-p`/`--pid` running processes, else the command after the options.
fn recorded_target(cmdline: Option<&[&str]>) -> (RecordTarget, Vec<String>) {
    let Some(args) = cmdline else { return (RecordTarget::Command, Vec::new()) };
    let start = args.iter().position(|a| *a == "record").map_or(0, |i| i + 1);
    let mut pids = Vec::new();
    let mut all_cpus = false;
    let mut i = start;
    let mut command = Vec::new();
    while i < args.len() {
        let arg = args[i];
        i += 1;
        if arg == "--" {
            command = args[i..].iter().map(|s| s.to_string()).collect();
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None if LONG_WITH_VALUE.contains(&arg) => {
                    i += 1;
                    (long, args.get(i - 1).copied())
                }
                None => (long, None),
            };
            match (name, value) {
                ("all-cpus", _) => all_cpus = true,
                ("pid", Some(list)) => pids.extend(target::parse_pids(list).unwrap_or_default()),
                _ => {}
            }
            continue;
        }
        let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            // The first word that is no option begins the command.
            command = args[i - 1..].iter().map(|s| s.to_string()).collect();
            break;
        };
        // Bundled short flags (`-ag`); a flag taking a value takes the rest of the word
        // or the next word.
        for (at, flag) in flags.char_indices() {
            if flag == 'a' {
                all_cpus = true;
            }
            if SHORT_WITH_VALUE.contains(flag) {
                let rest = &flags[at + 1..];
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).copied()
                } else {
                    Some(rest)
                };
                if flag == 'p' {
                    pids.extend(value.and_then(|v| target::parse_pids(v).ok()).unwrap_or_default());
                }
                break;
            }
        }
    }
    let target = if all_cpus {
        RecordTarget::AllCpus
    } else if !pids.is_empty() {
        RecordTarget::Pids(pids)
    } else {
        RecordTarget::Command
    };
    (target, command)
}

/// Name kernel addresses from this machine's /proc/kallsyms, but only when the file
/// was recorded on the running kernel at its current position (same release, same
/// `_text`): after a reboot the addresses would name the wrong functions.
fn name_kernel(profile: &mut Profile, perf_file: &linux_perf_data::PerfFile, text: Option<u64>) {
    let has_kernel = profile.samples.iter().any(|s| s.space == Space::Kernel)
        || profile.frames.iter().any(|f| f.space == Space::Kernel);
    if !has_kernel {
        return;
    }
    let recorded = perf_file.os_release().ok().flatten().map(str::to_string);
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|r| r.trim().to_string()).ok();
    if recorded.is_some() && recorded != running {
        profile.kernel_symbols_note = Some(format!(
            "recorded on kernel {}, this is {}",
            recorded.unwrap_or_default(),
            running.unwrap_or_else(|| "unknown".into())
        ));
        return;
    }
    match Kallsyms::read() {
        Ok(kallsyms) => {
            let here = kallsyms.address_of("_text");
            if let (Some(then), Some(now)) = (text, here) {
                if then != now {
                    profile.kernel_symbols_note =
                        Some("recorded before this machine last booted (the kernel moved)".to_string());
                    return;
                }
            }
            kallsyms.keep_used(profile);
        }
        Err(why) => profile.kernel_symbols_note = Some(why.to_string()),
    }
}

/// Warnings for sampled objects whose file on disk is not the one perf recorded (its
/// build id differs): their names may be wrong.
fn changed_objects(perf_file: &linux_perf_data::PerfFile, profile: &Profile) -> Vec<String> {
    let Ok(build_ids) = perf_file.build_ids() else { return Vec::new() };
    let used: std::collections::HashSet<&str> = profile.objects.iter().map(|o| o.path.as_str()).collect();
    let mut warnings = Vec::new();
    for info in build_ids.values() {
        let path = String::from_utf8_lossy(&info.path).into_owned();
        if !used.contains(path.as_str()) || info.build_id.is_empty() {
            continue;
        }
        let Some(now) = build_id(&path) else { continue };
        // perf pads build ids to 20 bytes with zeros.
        let recorded = &info.build_id[..now.len().min(info.build_id.len())];
        if recorded != now.as_slice() {
            warnings
                .push(format!("{path} changed since it was recorded (its build id differs): names in it may be wrong"));
        }
    }
    warnings.sort();
    warnings
}

fn build_id(path: &str) -> Option<Vec<u8>> {
    use object::Object;
    // The path comes from the file: only a regular file is read (not a FIFO or /dev/zero).
    let data = perflab_sys::files::read_regular(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    file.build_id().ok().flatten().map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_and_command_come_from_perfs_command_line() {
        let parse = |args: &[&str]| recorded_target(Some(args));
        let words = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(parse(&["perf", "record", "-g", "./app", "-a"]), (RecordTarget::Command, words(&["./app", "-a"])));
        assert_eq!(
            parse(&["/usr/bin/perf", "record", "-F", "99", "-e", "cycles", "--call-graph", "dwarf", "x"]),
            (RecordTarget::Command, words(&["x"]))
        );
        assert_eq!(parse(&["perf", "record", "-a", "-g", "sleep", "1"]).0, RecordTarget::AllCpus);
        assert_eq!(
            parse(&["perf", "record", "-ag", "--", "sleep", "1"]),
            (RecordTarget::AllCpus, words(&["sleep", "1"]))
        );
        assert_eq!(parse(&["perf", "record", "-p", "12,13"]).0, RecordTarget::Pids(vec![12, 13]));
        assert_eq!(parse(&["perf", "record", "--pid=7", "-o", "x.data"]).0, RecordTarget::Pids(vec![7]));
        assert_eq!(parse(&["perf", "record", "-gp9", "-F", "99"]).0, RecordTarget::Pids(vec![9]));
        assert_eq!(parse(&["perf", "record", "--", "x", "-a"]), (RecordTarget::Command, words(&["x", "-a"])));
        assert_eq!(recorded_target(None), (RecordTarget::Command, vec![]));
    }

    #[test]
    fn garbage_is_not_perf_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"PERFILE2 but nothing else").unwrap();
        assert!(is_perf_data(&path));
        assert!(matches!(read(&path, None), Err(ProfileError::PerfDataLayout { .. })));
        std::fs::write(&path, b"perflab-profile 2\n{}").unwrap();
        assert!(!is_perf_data(&path));
    }
}
