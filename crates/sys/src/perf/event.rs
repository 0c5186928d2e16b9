//! perf's event syntax, parsed once for `stat`, `compare -e` and `profile -e`: symbolic
//! names and aliases, modifiers (`:u :k :h :p :pp :ppp`), groups (`{a,b}`), raw events
//! (`rUUEE`), PMU-formatted events (`cpu/event=0x3c,umask=0x00/`, `msr/tsc/`, encoded
//! from the PMU's sysfs `format/` files) and tracepoints (`sched:sched_switch`, their id
//! read from tracefs) and dynamic probes on user functions (`uprobe:libc.so.6:malloc`,
//! see [`super::uprobe`]).
//!
//! Hand-written because perf's own parser is part of perf (C, lex/yacc); the PMU field
//! encoding is perf-event2's `Dynamic`, which reads the same sysfs files.

use perf_event::events::{Dynamic, Hardware, Software};
use perf_event_open_sys::bindings;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why an event list could not be parsed (a usage error: exit 2).
#[derive(Debug, Error)]
pub enum EventError {
    /// A name that is no symbolic event, alias, raw event, PMU event or tracepoint.
    #[error("unknown event `{name}`; valid events: {valid} (and raw rUUEE, PMU/field=value,…/, subsystem:tracepoint)")]
    Unknown {
        /// The name given.
        name: String,
        /// The symbolic names accepted, for the message.
        valid: String,
    },
    /// A modifier letter perf does not have.
    #[error("event `{event}`: unknown modifier `{modifier}` (perf's u, k, h, p, pp, ppp are accepted)")]
    Modifier {
        /// The event as written.
        event: String,
        /// The letter.
        modifier: char,
    },
    /// More than three `p`s.
    #[error("event `{event}`: precise level {level} asked (p, pp or ppp: at most 3)")]
    Precise {
        /// The event as written.
        event: String,
        /// The precise level asked for.
        level: usize,
    },
    /// `r…` not followed by 1 to 16 hex digits.
    #[error("event `{event}`: `{text}` is not a raw event (expected r followed by 1 to 16 hex digits, e.g. r00c0)")]
    Raw {
        /// The event as written.
        event: String,
        /// The part after `r`.
        text: String,
    },
    /// A `pmu/…/` event of a PMU this machine does not have.
    #[error("event `{event}`: this machine has no PMU `{pmu}` (it has: {present}){hint}")]
    NoPmu {
        /// The event as written.
        event: String,
        /// The PMU named.
        pmu: String,
        /// The PMUs the machine has, for the message.
        present: String,
        /// A sentence for the usual cause (a VM without a CPU PMU), or empty.
        hint: &'static str,
    },
    /// The PMU's sysfs files cannot be read.
    #[error("event `{event}`: PMU `{pmu}` cannot be read from /sys/bus/event_source/devices: {source}")]
    Pmu {
        /// The event as written.
        event: String,
        /// The PMU named.
        pmu: String,
        /// The read error.
        #[source]
        source: std::io::Error,
    },
    /// A `field=value` term the PMU's `format/` files do not allow.
    #[error("event `{event}`: {what}")]
    PmuTerm {
        /// The event as written.
        event: String,
        /// What is wrong with the term.
        what: String,
    },
    /// A tracepoint tracefs does not have, or whose id cannot be read.
    #[error("tracepoint `{event}`: {what}")]
    Tracepoint {
        /// The tracepoint as written.
        event: String,
        /// What is wrong.
        what: String,
    },
    /// A uprobe (`uprobe:OBJECT:FUNCTION`) that cannot be placed: no such object or
    /// symbol, or the kernel refused it.
    #[error("probe `{event}`: {what}")]
    Uprobe {
        /// The probe as written.
        event: String,
        /// Why it cannot be placed.
        what: String,
    },
    /// The list's `{`/`}` do not pair up.
    #[error("unbalanced braces in the event list `{0}` (a group is written {{a,b}})")]
    Braces(String),
    /// A group inside a group, or an empty one.
    #[error("a group cannot be nested or empty: `{0}`")]
    Group(String),
}

/// What the kernel is asked to count: perf_event_attr's type and config words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A generic hardware event (PERF_TYPE_HARDWARE: cycles, instructions, …).
    Hardware(Hardware),
    /// A software event of the kernel (PERF_TYPE_SOFTWARE: task-clock, page-faults, …).
    Software(Software),
    /// A generic hardware cache event (PERF_TYPE_HW_CACHE), config = id | op << 8 | result << 16.
    Cache(u64),
    /// A raw PMU event (PERF_TYPE_RAW), the config perf's `rUUEE` gives.
    Raw(u64),
    /// An event of a PMU named in sysfs (`cpu/…/`, `msr/tsc/`): its type and configs.
    Pmu {
        /// The PMU's type number (sysfs `type`).
        pmu_type: u32,
        /// perf_event_attr's `config`.
        config: u64,
        /// perf_event_attr's `config1`.
        config1: u64,
        /// perf_event_attr's `config2`.
        config2: u64,
    },
    /// A kernel tracepoint by its tracefs id.
    Tracepoint(u64),
    /// A breakpoint on a user function (the uprobe PMU, see [`super::uprobe`]).
    Uprobe(super::uprobe::Uprobe),
}

impl EventKind {
    /// Counted by the CPU's performance monitoring unit (absent in most VMs).
    pub(crate) fn needs_cpu_pmu(self) -> bool {
        match self {
            EventKind::Hardware(_) | EventKind::Cache(_) | EventKind::Raw(_) => true,
            EventKind::Pmu { pmu_type, .. } => pmu_type == bindings::PERF_TYPE_RAW,
            EventKind::Software(_) | EventKind::Tracepoint(_) | EventKind::Uprobe(_) => false,
        }
    }
}

/// Lets a builder open whichever kind it is (counting here, sampling in the profiler).
impl perf_event::events::Event for EventKind {
    fn update_attrs(self, attr: &mut bindings::perf_event_attr) {
        match self {
            EventKind::Hardware(hw) => hw.update_attrs(attr),
            EventKind::Software(sw) => sw.update_attrs(attr),
            EventKind::Cache(config) => {
                attr.type_ = bindings::PERF_TYPE_HW_CACHE;
                attr.config = config;
            }
            EventKind::Raw(config) => {
                attr.type_ = bindings::PERF_TYPE_RAW;
                attr.config = config;
            }
            EventKind::Pmu { pmu_type, config, config1, config2 } => {
                attr.type_ = pmu_type;
                attr.config = config;
                attr.__bindgen_anon_3.config1 = config1;
                attr.__bindgen_anon_4.config2 = config2;
            }
            EventKind::Tracepoint(id) => {
                attr.type_ = bindings::PERF_TYPE_TRACEPOINT;
                attr.config = id;
            }
            EventKind::Uprobe(probe) => probe.update_attrs(attr),
        }
    }
}

/// perf's modifiers: which privilege levels count, and the precise-IP level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modifiers {
    /// Count in user mode.
    pub user: bool,
    /// Count in the kernel.
    pub kernel: bool,
    /// Count in the hypervisor.
    pub hypervisor: bool,
    /// 0–3: `p`, `pp`, `ppp` (sampling skid; meaningless for counting).
    pub precise: u8,
}

impl Modifiers {
    /// True when `u`, `k` or `h` chose the privilege levels (else `--counter-scope` does).
    pub(crate) fn chooses_levels(self) -> bool {
        self.user || self.kernel || self.hypervisor
    }

    /// Whether kernel mode is left out; `scope_excludes_kernel` decides when no modifier does.
    pub fn exclude_kernel(self, scope_excludes_kernel: bool) -> bool {
        if self.chooses_levels() {
            !self.kernel
        } else {
            scope_excludes_kernel
        }
    }

    pub(crate) fn exclude_user(self) -> bool {
        self.chooses_levels() && !self.user
    }

    /// Hypervisor mode: excluded with `u`/`k` unless `h`; otherwise with kernel mode
    /// (as perf does: some PMUs, like msr, refuse any exclusion).
    pub fn exclude_hv(self, scope_excludes_kernel: bool) -> bool {
        if self.chooses_levels() {
            !self.hypervisor
        } else {
            scope_excludes_kernel
        }
    }

    /// Apply the levels and precision to a builder (after its own defaults were set).
    pub fn apply(self, builder: &mut perf_event::Builder, scope_excludes_kernel: bool) {
        builder
            .exclude_user(self.exclude_user())
            .exclude_kernel(self.exclude_kernel(scope_excludes_kernel))
            .exclude_hv(self.exclude_hv(scope_excludes_kernel));
        let skid = match self.precise {
            0 => perf_event::SampleSkid::Arbitrary,
            1 => perf_event::SampleSkid::Constant,
            2 => perf_event::SampleSkid::RequestZero,
            _ => perf_event::SampleSkid::RequireZero,
        };
        builder.precise_ip(skid);
    }

    fn suffix(self) -> String {
        let mut s = String::new();
        for (on, c) in [(self.user, 'u'), (self.kernel, 'k'), (self.hypervisor, 'h')] {
            if on {
                s.push(c);
            }
        }
        s.extend(std::iter::repeat_n('p', self.precise as usize));
        s
    }
}

/// One event as `-e` named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The metric name: perf's canonical name, with the modifiers as perf prints them
    /// (`cycles:u`, `sched:sched_switch`, `r00c0`, `msr/tsc/`).
    pub name: String,
    /// The canonical name without modifiers (what derived metrics and kernel-only checks use).
    pub base: String,
    /// What perf_event_open needs to open it.
    pub kind: EventKind,
    /// Its `:ukh…` modifiers (which privilege levels are counted).
    pub modifiers: Modifiers,
}

/// A parsed `-e` list: the events in order, and which of them form perf groups.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventList {
    /// The events, in the order given.
    pub events: Vec<Event>,
    /// Index ranges into `events` opened as one group each (all-or-nothing).
    pub groups: Vec<std::ops::Range<usize>>,
}

impl EventList {
    /// True when the list names no event.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The group an event belongs to, if any.
    pub(crate) fn group_of(&self, index: usize) -> Option<std::ops::Range<usize>> {
        self.groups.iter().find(|g| g.contains(&index)).cloned()
    }
}

/// Symbolic events `-e` accepts: perf's name, its aliases, what it is.
pub const SYMBOLIC: &[(&str, &[&str], EventKind)] = &[
    ("cycles", &["cpu-cycles"], EventKind::Hardware(Hardware::CPU_CYCLES)),
    ("instructions", &[], EventKind::Hardware(Hardware::INSTRUCTIONS)),
    ("branches", &["branch-instructions"], EventKind::Hardware(Hardware::BRANCH_INSTRUCTIONS)),
    ("branch-misses", &[], EventKind::Hardware(Hardware::BRANCH_MISSES)),
    ("cache-references", &[], EventKind::Hardware(Hardware::CACHE_REFERENCES)),
    ("cache-misses", &[], EventKind::Hardware(Hardware::CACHE_MISSES)),
    ("bus-cycles", &[], EventKind::Hardware(Hardware::BUS_CYCLES)),
    ("stalled-cycles-frontend", &["idle-cycles-frontend"], EventKind::Hardware(Hardware::STALLED_CYCLES_FRONTEND)),
    ("stalled-cycles-backend", &["idle-cycles-backend"], EventKind::Hardware(Hardware::STALLED_CYCLES_BACKEND)),
    ("ref-cycles", &[], EventKind::Hardware(Hardware::REF_CPU_CYCLES)),
    ("task-clock", &[], EventKind::Software(Software::TASK_CLOCK)),
    ("cpu-clock", &[], EventKind::Software(Software::CPU_CLOCK)),
    ("page-faults", &["faults"], EventKind::Software(Software::PAGE_FAULTS)),
    ("minor-faults", &[], EventKind::Software(Software::PAGE_FAULTS_MIN)),
    ("major-faults", &[], EventKind::Software(Software::PAGE_FAULTS_MAJ)),
    ("context-switches", &["cs"], EventKind::Software(Software::CONTEXT_SWITCHES)),
    ("cpu-migrations", &["migrations"], EventKind::Software(Software::CPU_MIGRATIONS)),
    ("alignment-faults", &[], EventKind::Software(Software::ALIGNMENT_FAULTS)),
    ("emulation-faults", &[], EventKind::Software(Software::EMULATION_FAULTS)),
    ("L1-dcache-loads", &[], EventKind::Cache(cache(0, 0, 0))),
    ("L1-dcache-load-misses", &[], EventKind::Cache(cache(0, 0, 1))),
    ("L1-dcache-stores", &[], EventKind::Cache(cache(0, 1, 0))),
    ("L1-icache-load-misses", &[], EventKind::Cache(cache(1, 0, 1))),
    ("LLC-loads", &[], EventKind::Cache(cache(2, 0, 0))),
    ("LLC-load-misses", &[], EventKind::Cache(cache(2, 0, 1))),
    ("LLC-stores", &[], EventKind::Cache(cache(2, 1, 0))),
    ("LLC-store-misses", &[], EventKind::Cache(cache(2, 1, 1))),
    ("dTLB-loads", &[], EventKind::Cache(cache(3, 0, 0))),
    ("dTLB-load-misses", &[], EventKind::Cache(cache(3, 0, 1))),
    ("iTLB-loads", &[], EventKind::Cache(cache(4, 0, 0))),
    ("iTLB-load-misses", &[], EventKind::Cache(cache(4, 0, 1))),
    ("branch-loads", &[], EventKind::Cache(cache(5, 0, 0))),
    ("branch-load-misses", &[], EventKind::Cache(cache(5, 0, 1))),
];

/// PERF_TYPE_HW_CACHE's config: cache id | operation << 8 | result << 16.
const fn cache(id: u64, op: u64, result: u64) -> u64 {
    id | op << 8 | result << 16
}

/// What `perf stat -d` adds to the default set (perf's "detailed" L1 and LLC events).
pub const DETAILED: [&str; 4] = ["L1-dcache-loads", "L1-dcache-load-misses", "LLC-loads", "LLC-load-misses"];

/// Every symbolic name, for `--help` and error messages.
pub(crate) fn symbolic_names() -> Vec<&'static str> {
    SYMBOLIC.iter().map(|(n, _, _)| *n).collect()
}

/// Where sysfs keeps PMUs and tracefs keeps tracepoints; a seam for tests.
#[derive(Debug, Clone)]
pub(crate) struct Sysfs {
    pub(crate) pmus: PathBuf,
    /// tracefs roots to try, in order.
    pub(crate) tracing: Vec<PathBuf>,
    /// Mount tracefs at the first root when none has events (perf does the same; root only).
    pub(crate) mount_tracefs: bool,
    /// Try every uprobe on perflab itself while parsing, so one that cannot be placed is
    /// refused before any run (off only where the PMU directory is made up).
    pub(crate) try_probes: bool,
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs {
            pmus: PathBuf::from("/sys/bus/event_source/devices"),
            tracing: super::tracefs::default_roots(),
            mount_tracefs: true,
            try_probes: true,
        }
    }
}

/// Parse `-e` values (each may hold a comma-separated list) with this machine's sysfs.
pub(crate) fn parse_list(values: &[String]) -> Result<EventList, EventError> {
    parse_list_with(values, &Sysfs::default())
}

/// Parse one event (`profile -e`); a group is refused by the caller if it cannot sample one.
pub fn parse_one(text: &str) -> Result<Event, EventError> {
    parse_event(text.trim(), &Sysfs::default())
}

pub(crate) fn parse_list_with(values: &[String], sysfs: &Sysfs) -> Result<EventList, EventError> {
    let mut list = EventList::default();
    for value in values {
        for token in split_top_level(value)? {
            let token = token.trim();
            if token.is_empty() {
                continue;
            }
            if let Some(inner) = token.strip_prefix('{') {
                // `{a,b}` or `{a,b}:u` (a modifier after the group applies to every member).
                let (body, group_mods) = inner.rsplit_once('}').ok_or_else(|| EventError::Braces(value.clone()))?;
                if body.contains('{') || body.trim().is_empty() {
                    return Err(EventError::Group(token.to_string()));
                }
                let start = list.events.len();
                for member in split_top_level(body)? {
                    let member = member.trim();
                    if member.is_empty() {
                        continue;
                    }
                    let text = match group_mods.strip_prefix(':') {
                        Some(mods) if !mods.is_empty() => format!("{member}:{mods}"),
                        _ => member.to_string(),
                    };
                    let event = parse_event(&text, sysfs)?;
                    if !list.events.iter().any(|e| e.name == event.name) {
                        list.events.push(event);
                    }
                }
                if list.events.len() > start {
                    list.groups.push(start..list.events.len());
                }
            } else {
                let event = parse_event(token, sysfs)?;
                if !list.events.iter().any(|e| e.name == event.name) {
                    list.events.push(event);
                }
            }
        }
    }
    Ok(list)
}

/// Split at commas outside `{…}` and outside `pmu/…/` terms (a uprobe's path is no
/// PMU term: its slashes do not count).
fn split_top_level(text: &str) -> Result<Vec<&str>, EventError> {
    let (mut depth, mut in_pmu, mut start) = (0i32, false, 0usize);
    let mut parts = Vec::new();
    for (i, c) in text.char_indices() {
        let part = text[start..].trim_start_matches([' ', '{']);
        let in_uprobe = part.starts_with("uprobe:") || part.starts_with("uretprobe:");
        match c {
            '/' if in_uprobe => {}
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth < 0 {
                    return Err(EventError::Braces(text.to_string()));
                }
            }
            '/' => in_pmu = !in_pmu,
            ',' if depth == 0 && !in_pmu => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(EventError::Braces(text.to_string()));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn parse_event(text: &str, sysfs: &Sysfs) -> Result<Event, EventError> {
    if let Some((name, placed)) = super::uprobe::parse_with(text, || tracing_root(sysfs), sysfs.try_probes) {
        return match placed {
            Ok(probe) => Ok(Event {
                name: name.clone(),
                base: name,
                kind: EventKind::Uprobe(probe),
                modifiers: Modifiers::default(),
            }),
            Err(what) => Err(EventError::Uprobe { event: name, what }),
        };
    }
    // PMU-formatted: `pmu/terms/` followed by optional `:mods` (perf also takes `pmu/terms/mods`).
    if let Some((pmu, rest)) = text.split_once('/') {
        let (terms, tail) = rest.rsplit_once('/').ok_or_else(|| EventError::PmuTerm {
            event: text.to_string(),
            what: "a PMU event is written pmu/field=value,…/ (closing `/` missing)".into(),
        })?;
        let modifiers = parse_modifiers(text, tail.strip_prefix(':').unwrap_or(tail))?;
        let kind = pmu_event(text, pmu, terms, sysfs)?;
        return Ok(named(format!("{pmu}/{terms}/"), kind, modifiers));
    }
    let (head, tail) = match text.split_once(':') {
        Some((h, t)) => (h, Some(t)),
        None => (text, None),
    };
    if let Some(&(canonical, _, kind)) = SYMBOLIC.iter().find(|(n, aliases, _)| *n == head || aliases.contains(&head)) {
        let modifiers = parse_modifiers(text, tail.unwrap_or(""))?;
        return Ok(named(canonical.to_string(), kind, modifiers));
    }
    if let Some(hex) = head.strip_prefix('r').filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit())) {
        let config = u64::from_str_radix(hex, 16)
            .ok()
            .filter(|_| hex.len() <= 16)
            .ok_or_else(|| EventError::Raw { event: text.to_string(), text: head.to_string() })?;
        let modifiers = parse_modifiers(text, tail.unwrap_or(""))?;
        return Ok(named(head.to_string(), EventKind::Raw(config), modifiers));
    }
    if let Some(rest) = tail {
        // `subsystem:tracepoint` or `subsystem:tracepoint:mods`.
        let (name, mods) = rest.split_once(':').unwrap_or((rest, ""));
        let id = tracepoint_id(text, head, name, sysfs)?;
        let modifiers = parse_modifiers(text, mods)?;
        return Ok(named(format!("{head}:{name}"), EventKind::Tracepoint(id), modifiers));
    }
    Err(EventError::Unknown { name: text.to_string(), valid: symbolic_names().join(", ") })
}

fn named(base: String, kind: EventKind, modifiers: Modifiers) -> Event {
    let suffix = modifiers.suffix();
    let name = if suffix.is_empty() { base.clone() } else { format!("{base}:{suffix}") };
    Event { name, base, kind, modifiers }
}

fn parse_modifiers(event: &str, text: &str) -> Result<Modifiers, EventError> {
    let mut m = Modifiers::default();
    let mut precise = 0usize;
    for c in text.chars() {
        match c {
            'u' => m.user = true,
            'k' => m.kernel = true,
            'h' => m.hypervisor = true,
            'p' => precise += 1,
            other => return Err(EventError::Modifier { event: event.to_string(), modifier: other }),
        }
    }
    if precise > 3 {
        return Err(EventError::Precise { event: event.to_string(), level: precise });
    }
    m.precise = precise as u8;
    Ok(m)
}

/// The PMUs sysfs lists, sorted (for the error that names a missing one).
fn present_pmus(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if names.is_empty() {
        names.push("none readable".into());
    }
    names
}

/// Encode `field=value,…` (or a named event of the PMU, like `msr/tsc/`) with the PMU's
/// sysfs format, as perf does.
fn pmu_event(event: &str, pmu: &str, terms: &str, sysfs: &Sysfs) -> Result<EventKind, EventError> {
    let dir = sysfs.pmus.join(pmu);
    if !dir.exists() {
        // Unlike a symbolic event, a PMU event cannot be opened (and reported unsupported)
        // without the PMU's format files to encode it: refused, as perf does, naming what is here.
        return Err(EventError::NoPmu {
            event: event.to_string(),
            pmu: pmu.to_string(),
            present: present_pmus(&sysfs.pmus).join(", "),
            hint: if pmu == "cpu" || pmu.starts_with("cpu_") { "; a virtual machine often has no CPU PMU" } else { "" },
        });
    }
    let pmu_error = |source| EventError::Pmu { event: event.to_string(), pmu: pmu.to_string(), source };
    let mut builder = Dynamic::builder(&dir).map_err(pmu_error)?;
    // perf leaves a field that no term names at 0; perf-event2 insists on every field.
    let fields: Vec<String> = builder.fields().map(|(f, _)| f.to_string()).collect();
    for field in &fields {
        builder.field(field, 0).expect("0 fits every field");
    }
    let term_error = |what: String| EventError::PmuTerm { event: event.to_string(), what };
    for term in terms.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match term.split_once('=') {
            Some((field, value)) => {
                let value = parse_number(value.trim())
                    .ok_or_else(|| term_error(format!("`{value}` is not a number (decimal or 0x…)")))?;
                builder
                    .field(field.trim(), value)
                    .map_err(|e| term_error(format!("{e} (the fields of {pmu} are: {})", fields.join(", "))))?;
            }
            // A bare word is an event the PMU names in its events/ directory.
            None => {
                builder.event(term).map_err(|e| {
                    let names = std::fs::read_dir(dir.join("events"))
                        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
                        .unwrap_or_else(|_| Vec::<String>::new());
                    term_error(format!("{pmu} has no event `{term}` ({e}); its events: {}", names.join(", ")))
                })?;
            }
        }
    }
    let dynamic = builder.build().map_err(|e| term_error(format!("{e}")))?;
    let mut attr = bindings::perf_event_attr::default();
    perf_event::events::Event::update_attrs(dynamic, &mut attr);
    // SAFETY: the unions hold plain u64 words; update_attrs wrote them.
    let (config1, config2) = unsafe { (attr.__bindgen_anon_3.config1, attr.__bindgen_anon_4.config2) };
    Ok(EventKind::Pmu { pmu_type: attr.type_, config: attr.config, config1, config2 })
}

fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The id of `subsystem:name` from tracefs (mounted first, as perf does, when root and
/// no tracefs is mounted).
fn tracepoint_id(event: &str, subsystem: &str, name: &str, sysfs: &Sysfs) -> Result<u64, EventError> {
    let error = |what: String| EventError::Tracepoint { event: event.to_string(), what };
    if subsystem.is_empty() || name.is_empty() || [subsystem, name].iter().any(|p| p.contains(['/', '.'])) {
        return Err(error("expected subsystem:name, e.g. sched:sched_switch".into()));
    }
    let root = tracing_root(sysfs).ok_or_else(|| {
        error(format!(
            "no tracefs with events at {} (mount it: `mount -t tracefs nodev /sys/kernel/tracing`, as root)",
            sysfs.tracing.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" or ")
        ))
    })?;
    let path = root.join("events").join(subsystem).join(name).join("id");
    match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse().map_err(|_| error(format!("{} does not hold a number", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(error(format!(
            "{} is readable by root only: tracepoints need root (or CAP_PERFMON and tracefs access)",
            path.display()
        ))),
        Err(_) if !root.join("events").join(subsystem).is_dir() => {
            Err(error(format!("no tracepoint subsystem `{subsystem}` in {}", root.join("events").display())))
        }
        Err(_) => Err(error(format!(
            "no tracepoint `{name}` in {} (e.g. {})",
            root.join("events").join(subsystem).display(),
            examples(&root.join("events").join(subsystem)).join(", ")
        ))),
    }
}

fn examples(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten().filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    names.sort();
    names.truncate(5);
    names
}

fn tracing_root(sysfs: &Sysfs) -> Option<PathBuf> {
    super::tracefs::root(&sysfs.tracing, sysfs.mount_tracefs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &[&str]) -> Result<EventList, EventError> {
        parse_list_with(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &fake_sysfs())
    }

    /// A sysfs tree of our own: a `cpu` PMU with perf's x86 format and a tracefs with one
    /// tracepoint, so encoding is checked without the machine's PMU.
    fn fake_sysfs() -> Sysfs {
        // Written once per test process: tests run in parallel, and rewriting a file
        // another test is reading would hand it an empty format file.
        static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        let root = ROOT.get_or_init(|| {
            let root = std::env::temp_dir().join(format!("perflab-fake-sysfs-{}", std::process::id()));
            let cpu = root.join("devices/cpu");
            std::fs::create_dir_all(cpu.join("format")).unwrap();
            std::fs::create_dir_all(cpu.join("events")).unwrap();
            std::fs::write(cpu.join("type"), "4\n").unwrap();
            for (field, bits) in [
                ("event", "config:0-7"),
                ("umask", "config:8-15"),
                ("cmask", "config:24-31"),
                ("inv", "config:23"),
                ("ldlat", "config1:0-15"),
            ] {
                std::fs::write(cpu.join("format").join(field), format!("{bits}\n")).unwrap();
            }
            std::fs::write(cpu.join("events/cycles-t"), "event=0x3c,in_tx=1\n").unwrap();
            std::fs::write(cpu.join("events/mem-loads"), "event=0xcd,umask=0x1,ldlat=3\n").unwrap();
            let tp = root.join("tracing/events/sched/sched_switch");
            std::fs::create_dir_all(&tp).unwrap();
            std::fs::write(tp.join("id"), "372\n").unwrap();
            root
        });
        Sysfs {
            pmus: root.join("devices"),
            tracing: vec![root.join("tracing")],
            mount_tracefs: false,
            try_probes: false,
        }
    }

    #[test]
    fn symbolic_names_aliases_and_modifiers() {
        let list = parse(&["cpu-cycles:u,cs,instructions:kp", "task-clock:ppp"]).unwrap();
        let names: Vec<&str> = list.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["cycles:u", "context-switches", "instructions:kp", "task-clock:ppp"]);
        let cycles = &list.events[0];
        assert_eq!(cycles.base, "cycles");
        assert!(cycles.modifiers.exclude_kernel(false) && !cycles.modifiers.exclude_user());
        let ins = list.events[2].modifiers;
        assert!(ins.exclude_user() && !ins.exclude_kernel(true) && ins.precise == 1);
        // Without u/k/h the scope decides.
        assert!(list.events[1].modifiers.exclude_kernel(true) && !list.events[1].modifiers.exclude_kernel(false));
        assert!(matches!(parse(&["cycles:x"]), Err(EventError::Modifier { modifier: 'x', .. })));
        assert!(matches!(parse(&["cycles:pppp"]), Err(EventError::Precise { level: 4, .. })));
    }

    #[test]
    fn raw_events_are_hex_configs() {
        let list = parse(&["r00c0,r1a2b:u"]).unwrap();
        assert_eq!(list.events[0].kind, EventKind::Raw(0xc0));
        assert_eq!(list.events[1].kind, EventKind::Raw(0x1a2b));
        assert_eq!(list.events[1].name, "r1a2b:u");
        assert!(parse(&["r12345678901234567"]).is_err());
    }

    #[test]
    fn pmu_terms_are_encoded_from_the_format_files() {
        let list = parse(&["cpu/event=0x3c,umask=0x01,cmask=2,inv=1/,cpu/mem-loads/:u"]).unwrap();
        assert_eq!(
            list.events[0].kind,
            EventKind::Pmu { pmu_type: 4, config: 0x3c | 0x01 << 8 | 1 << 23 | 2 << 24, config1: 0, config2: 0 }
        );
        assert_eq!(list.events[0].name, "cpu/event=0x3c,umask=0x01,cmask=2,inv=1/");
        assert_eq!(
            list.events[1].kind,
            EventKind::Pmu { pmu_type: 4, config: 0xcd | 0x1 << 8, config1: 3, config2: 0 }
        );
        assert_eq!(list.events[1].name, "cpu/mem-loads/:u");
        let unknown = parse(&["cpu/evnt=1/"]).unwrap_err().to_string();
        assert!(unknown.contains("the fields of cpu are") && unknown.contains("umask"), "{unknown}");
        assert!(parse(&["cpu/umask=0x100/"]).is_err(), "8-bit field overflow");
        let missing = parse(&["nopmu/event=1/"]).unwrap_err().to_string();
        assert!(missing.contains("no PMU `nopmu` (it has: cpu)"), "{missing}");
        assert!(!missing.contains('\n'), "one line: {missing}");
    }

    #[test]
    fn groups_keep_their_members_together() {
        let list = parse(&["task-clock,{cycles,instructions}:u,page-faults"]).unwrap();
        let names: Vec<&str> = list.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["task-clock", "cycles:u", "instructions:u", "page-faults"]);
        assert_eq!(list.groups, vec![1..3]);
        assert_eq!(list.group_of(2), Some(1..3));
        assert_eq!(list.group_of(0), None);
        assert!(matches!(parse(&["{cycles,instructions"]), Err(EventError::Braces(_))));
        assert!(matches!(parse(&["{}"]), Err(EventError::Group(_))));
        assert!(matches!(parse(&["{a,{b}}"]), Err(EventError::Group(_))));
    }

    #[test]
    fn tracepoints_read_their_id_from_tracefs() {
        let list = parse(&["sched:sched_switch,sched:sched_switch"]).unwrap();
        assert_eq!(list.events.len(), 1, "duplicates are dropped");
        assert_eq!(list.events[0].kind, EventKind::Tracepoint(372));
        let err = parse(&["sched:nope"]).unwrap_err().to_string();
        assert!(err.contains("no tracepoint `nope`") && err.contains("sched_switch"), "{err}");
        let err = parse(&["nosuch:thing"]).unwrap_err().to_string();
        assert!(err.contains("no tracepoint subsystem `nosuch`"), "{err}");
    }

    /// A uprobe's path holds slashes but is no `pmu/…/` term: the list still splits at
    /// its commas (no such object: the probe is refused by name).
    #[test]
    fn a_uprobe_path_does_not_swallow_the_rest_of_the_list() {
        let err = parse(&["cycles,uprobe:/usr/bin/prog:f,task-clock"]).unwrap_err().to_string();
        assert!(err.starts_with("probe `uprobe:/usr/bin/prog:f`: ") && err.contains("no file /usr/bin/prog"), "{err}");
        let err = parse(&["{uretprobe:/a/b/c:g,cycles}"]).unwrap_err().to_string();
        assert!(err.starts_with("probe `uretprobe:/a/b/c:g`: "), "{err}");
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let err = parse(&["cyclez"]).unwrap_err().to_string();
        assert!(err.contains("unknown event `cyclez`") && err.contains("major-faults") && err.contains("LLC-loads"));
    }

    /// On this machine (root, tracefs mountable) the real tracepoint resolves; elsewhere
    /// the reason is a sentence, not a panic.
    #[test]
    fn the_machines_tracefs_names_sched_switch_or_says_why_not() {
        match parse_list(&["sched:sched_switch".to_string()]) {
            Ok(list) => assert!(matches!(list.events[0].kind, EventKind::Tracepoint(id) if id > 0)),
            Err(e) => assert!(e.to_string().starts_with("tracepoint `sched:sched_switch`"), "{e}"),
        }
    }
}
