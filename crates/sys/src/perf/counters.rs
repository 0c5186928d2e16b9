//! Counters per run through perf_event_open: opened on the held child with
//! enable_on_exec + inherit (so counting starts at exec and follows children and
//! threads), read after the child is reaped, scaled when multiplexed, and reported as
//! `supported: false` with a human reason wherever the machine cannot count them.

use super::event::{Event, EventKind, EventList};
use super::Probe;
use perflab_model::{CounterReading, Run};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::rc::Rc;

/// Environment switch that makes every hardware event fail as on a machine without a
/// PMU, so the fallback path can be exercised anywhere (documented in docs/counters.md).
pub const FORCE_NO_PMU_ENV: &str = "PERFLAB_FORCE_NO_PMU";
/// Environment switch that fakes a CPU PMU (`1`, or `slots=N` general counters), so the
/// hardware path — groups, modifiers, multiplexing, derived metrics — runs end to end on
/// a machine without one. Its counts are made up (docs/counters.md) and every result
/// says so.
pub const FAKE_PMU_ENV: &str = "PERFLAB_FAKE_PMU";

/// What `perflab stat` counts when no `-e` is given (perf stat's default set).
pub const DEFAULT_STAT_EVENTS: [&str; 8] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
];

/// Derived metrics: name, numerator, denominator, factor (100 for percentages).
pub(crate) const DERIVED: [(&str, &str, &str, f64); 5] = [
    ("ipc", "instructions", "cycles", 1.0),
    ("branch-miss-rate", "branch-misses", "branches", 100.0),
    ("cache-miss-rate", "cache-misses", "cache-references", 100.0),
    ("L1-dcache-miss-rate", "L1-dcache-load-misses", "L1-dcache-loads", 100.0),
    ("LLC-miss-rate", "LLC-load-misses", "LLC-loads", 100.0),
];

/// Events that only happen in kernel mode: a user-only counter reads a false zero.
const KERNEL_ONLY: [&str; 2] = ["context-switches", "cpu-migrations"];

/// Parse `-e` values (perf's syntax, see [`super::event`]) into an event list.
pub fn parse_events(values: &[String]) -> Result<EventList, super::event::EventError> {
    super::event::parse_list(values)
}

/// A metric name split into the event part and perf's modifier suffix (`cycles:u` →
/// `cycles`, `:u`); a tracepoint keeps its colon.
fn split_suffix(name: &str) -> (&str, &str) {
    match name.rsplit_once(':') {
        Some((base, mods)) if !mods.is_empty() && mods.chars().all(|c| "ukhp".contains(c)) && !base.contains(':') => {
            (base, &name[base.len()..])
        }
        _ => (name, ""),
    }
}

/// Whether counters include kernel mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// user+kernel when perf_event_paranoid (or CAP_PERFMON) allows it, else user only.
    #[default]
    Auto,
    /// User mode only (what perf calls `:u`).
    User,
    /// User and kernel mode (needs perf_event_paranoid <= 1 or CAP_PERFMON).
    All,
}

impl Scope {
    /// The scope actually used: `Auto` resolved against this machine's permissions.
    pub fn resolve(self) -> Scope {
        match self {
            Scope::Auto if kernel_counting_allowed() => Scope::All,
            Scope::Auto => Scope::User,
            other => other,
        }
    }

    /// The scope as `--scope` and the output name it (`user+kernel` for [`Scope::All`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Auto => "auto",
            Scope::User => "user",
            Scope::All => "user+kernel",
        }
    }

    /// The names `--counter-scope` takes (`all` is user+kernel).
    pub const NAMES: [&'static str; 3] = ["auto", "user", "all"];
}

/// A `--counter-scope` that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected counter scope auto, user or all, found `{0}`")]
pub struct UnknownScope(pub String);

impl std::str::FromStr for Scope {
    type Err = UnknownScope;
    fn from_str(s: &str) -> Result<Scope, UnknownScope> {
        match s {
            "auto" => Ok(Scope::Auto),
            "user" => Ok(Scope::User),
            "all" | "user+kernel" => Ok(Scope::All),
            other => Err(UnknownScope(other.to_string())),
        }
    }
}

/// /proc/sys/kernel/perf_event_paranoid, when readable.
pub fn paranoid_level() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

/// Kernel-mode counting of another process is allowed at paranoid <= 1, or with
/// CAP_PERFMON (38) or CAP_SYS_ADMIN (21), which bypass the paranoid check.
fn kernel_counting_allowed() -> bool {
    paranoid_level().is_some_and(|level| level <= 1) || perf_capable()
}

/// CAP_PERFMON (38) or CAP_SYS_ADMIN (21) in the effective set: perf_event_paranoid does
/// not apply.
fn perf_capable() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return false };
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    cap_eff & (1 << 38 | 1 << 21) != 0
}

/// A raw reading: the count and the kernel's time_enabled/time_running (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawCount {
    /// The counter's value while it was scheduled.
    pub count: u64,
    /// Nanoseconds the counter was enabled.
    pub time_enabled: u64,
    /// Nanoseconds it was actually on the PMU (less than enabled when multiplexed).
    pub time_running: u64,
}

/// An opened counter, read once after the child was reaped (or at every interval).
pub trait OpenCounter {
    /// The count so far with its enabled/running times.
    fn read(&mut self) -> io::Result<RawCount>;
}

/// Whose events a counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// A child held before exec: counting starts at its exec and follows its children.
    Exec(libc::pid_t),
    /// A running process or thread: counting starts now and follows threads it creates.
    Attach(libc::pid_t),
    /// One thread only (`--per-thread`): no inheritance.
    Thread(libc::pid_t),
    /// Every task on one CPU (`-a`).
    Cpu(usize),
}

/// Opens counters (abstracted so tests can fake a PMU or its absence).
pub trait CounterOpener {
    /// Open `events` as one perf group (one event: alone), all-or-nothing.
    /// `scope_excludes_kernel` decides kernel counting for events whose modifiers do not.
    fn open_group(
        &self,
        events: &[&Event],
        target: Target,
        scope_excludes_kernel: bool,
    ) -> io::Result<Vec<Box<dyn OpenCounter>>>;
}

/// The real opener: perf_event_open via perf-event2.
pub struct PerfOpener;

struct PerfCounter(perf_event::Counter);

impl OpenCounter for PerfCounter {
    fn read(&mut self) -> io::Result<RawCount> {
        let c = self.0.read_count_and_time()?;
        Ok(RawCount { count: c.count, time_enabled: c.time_enabled, time_running: c.time_running })
    }
}

/// A builder for one event on `target`; `leader`: the event is a group member, enabled
/// with its leader rather than at exec on its own.
fn builder(event: &Event, target: Target, scope_excludes_kernel: bool, leader: bool) -> perf_event::Builder<'static> {
    let mut b = perf_event::Builder::new(event.kind);
    match target {
        Target::Exec(pid) => b.observe_pid(pid).any_cpu().inherit(true).enable_on_exec(leader).enabled(!leader),
        Target::Attach(pid) => b.observe_pid(pid).any_cpu().inherit(true).enabled(true),
        Target::Thread(tid) => b.observe_pid(tid).any_cpu().enabled(true),
        Target::Cpu(cpu) => b.any_pid().one_cpu(cpu).enabled(true),
    };
    event.modifiers.apply(&mut b, scope_excludes_kernel);
    // Counting needs no precise IP; perf drops it for counting too (it only makes
    // sampling PMUs refuse the event).
    b.precise_ip(perf_event::SampleSkid::Arbitrary);
    b
}

impl CounterOpener for PerfOpener {
    fn open_group(
        &self,
        events: &[&Event],
        target: Target,
        scope_excludes_kernel: bool,
    ) -> io::Result<Vec<Box<dyn OpenCounter>>> {
        let Some((first, rest)) = events.split_first() else { return Ok(Vec::new()) };
        let mut leader = builder(first, target, scope_excludes_kernel, true).build()?;
        let mut members = Vec::new();
        for event in rest {
            members.push(builder(event, target, scope_excludes_kernel, false).build_with_group(&mut leader)?);
        }
        let mut out: Vec<Box<dyn OpenCounter>> = vec![Box::new(PerfCounter(leader))];
        out.extend(members.into_iter().map(|c| Box::new(PerfCounter(c)) as Box<dyn OpenCounter>));
        Ok(out)
    }
}

/// Wraps an opener so CPU-PMU events fail with ENOENT, as on a machine without a PMU.
pub(crate) struct NoPmuOpener<O>(pub O);

impl<O: CounterOpener> CounterOpener for NoPmuOpener<O> {
    fn open_group(
        &self,
        events: &[&Event],
        target: Target,
        scope_excludes_kernel: bool,
    ) -> io::Result<Vec<Box<dyn OpenCounter>>> {
        if events.iter().any(|e| e.kind.needs_cpu_pmu()) {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        self.0.open_group(events, target, scope_excludes_kernel)
    }
}

/// A made-up CPU PMU for tests and demonstrations (`PERFLAB_FAKE_PMU`): each CPU-PMU
/// event counts the target's real task-clock (ns) times a fixed rate per event (3 GHz
/// cycles, 1.5 instructions per cycle, 1 % branch misses, …), so derived metrics are
/// exact and known; with more events than `slots` general counters they are
/// multiplexed (time_running = time_enabled · slots / events) and a group larger than
/// `slots` never runs, as on a real PMU; `ppp` is refused (EOPNOTSUPP). Software events
/// and tracepoints go to the real opener.
pub(crate) struct FakePmuOpener<O> {
    pub inner: O,
    pub slots: usize,
    /// CPU-PMU events opened per target so far (all are opened before any is read).
    opened: Rc<RefCell<BTreeMap<String, usize>>>,
}

impl<O> FakePmuOpener<O> {
    pub fn new(inner: O, slots: usize) -> Self {
        FakePmuOpener { inner, slots: slots.max(1), opened: Rc::default() }
    }

    /// Events per unit of task-clock (ns) for a faked event.
    pub fn rate(base: &str) -> f64 {
        match base {
            "cycles" | "ref-cycles" => 3.0,
            "instructions" => 4.5,
            "branches" => 0.9,
            "branch-misses" => 0.009,
            "cache-references" => 0.03,
            "cache-misses" => 0.003,
            "L1-dcache-loads" => 1.2,
            "L1-dcache-load-misses" => 0.024,
            "LLC-loads" => 0.01,
            "LLC-load-misses" => 0.002,
            _ => 1.0,
        }
    }
}

struct FakeCounter {
    clock: Box<dyn OpenCounter>,
    rate: f64,
    key: String,
    group_size: usize,
    slots: usize,
    opened: Rc<RefCell<BTreeMap<String, usize>>>,
}

impl OpenCounter for FakeCounter {
    fn read(&mut self) -> io::Result<RawCount> {
        let clock = self.clock.read()?;
        let total = self.opened.borrow().get(&self.key).copied().unwrap_or(1).max(1);
        let time_running = if self.group_size > self.slots {
            0
        } else if total > self.slots {
            clock.time_enabled * self.slots as u64 / total as u64
        } else {
            clock.time_enabled
        };
        let count = (clock.count as f64 * self.rate * time_running as f64 / clock.time_enabled.max(1) as f64) as u64;
        Ok(RawCount { count, time_enabled: clock.time_enabled, time_running })
    }
}

impl<O: CounterOpener> CounterOpener for FakePmuOpener<O> {
    fn open_group(
        &self,
        events: &[&Event],
        target: Target,
        scope_excludes_kernel: bool,
    ) -> io::Result<Vec<Box<dyn OpenCounter>>> {
        if !events.iter().any(|e| e.kind.needs_cpu_pmu()) {
            return self.inner.open_group(events, target, scope_excludes_kernel);
        }
        if events.iter().any(|e| e.modifiers.precise >= 3) {
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        let key = format!("{target:?}");
        *self.opened.borrow_mut().entry(key.clone()).or_default() +=
            events.iter().filter(|e| e.kind.needs_cpu_pmu()).count();
        let clock = super::event::parse_one("task-clock").expect("a symbolic event");
        let mut out: Vec<Box<dyn OpenCounter>> = Vec::new();
        for event in events {
            if !event.kind.needs_cpu_pmu() {
                out.extend(self.inner.open_group(&[event], target, scope_excludes_kernel)?);
                continue;
            }
            let mut counter = self.inner.open_group(&[&clock], target, scope_excludes_kernel)?;
            out.push(Box::new(FakeCounter {
                clock: counter.remove(0),
                rate: Self::rate(&event.base),
                key: key.clone(),
                group_size: events.len(),
                slots: self.slots,
                opened: self.opened.clone(),
            }));
        }
        Ok(out)
    }
}

/// The opener for this process: the real one, the forced no-PMU one
/// (`PERFLAB_FORCE_NO_PMU=1`) or the fake PMU (`PERFLAB_FAKE_PMU`).
pub fn system_opener() -> Box<dyn CounterOpener> {
    if std::env::var(FORCE_NO_PMU_ENV).is_ok_and(|v| !v.is_empty() && v != "0") {
        Box::new(NoPmuOpener(PerfOpener))
    } else if let Some(slots) = fake_pmu_slots() {
        Box::new(FakePmuOpener::new(NoPmuOpener(PerfOpener), slots))
    } else {
        Box::new(PerfOpener)
    }
}

/// The fake PMU's general counters when `PERFLAB_FAKE_PMU` asks for one (`1`: 4).
pub fn fake_pmu_slots() -> Option<usize> {
    let value = std::env::var(FAKE_PMU_ENV).ok().filter(|v| !v.is_empty() && v != "0")?;
    Some(value.strip_prefix("slots=").and_then(|n| n.parse().ok()).unwrap_or(4))
}

const NEVER_ENABLED: &str = "the counter was never enabled (the program did not exec?)";
const EXITED_BEFORE_OPEN: &str = "the process exited before its counters could be opened";

/// Why an event could not be opened, for a human.
/// `privileged`: paranoid and capabilities allow kernel counting, so a denial comes
/// from elsewhere.
pub(crate) fn open_failure_reason(
    event: &Event,
    err: &io::Error,
    paranoid: Option<i32>,
    scope: Scope,
    privileged: bool,
) -> String {
    let level = paranoid.map_or_else(|| "?".to_string(), |l| l.to_string());
    let tracepoint = matches!(event.kind, EventKind::Tracepoint(_));
    match err.raw_os_error() {
        Some(libc::ENOENT | libc::ENODEV) if event.kind.needs_cpu_pmu() => {
            "no hardware PMU (virtualized?): the kernel does not offer this event here".to_string()
        }
        Some(libc::EOPNOTSUPP) if event.modifiers.precise > 0 => format!(
            "the PMU does not support precise level {} (:{}) here",
            event.modifiers.precise,
            "p".repeat(event.modifiers.precise as usize)
        ),
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) if event.kind.needs_cpu_pmu() => {
            "no hardware PMU (virtualized?): the kernel does not offer this event here".to_string()
        }
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) => "the kernel does not offer this event".to_string(),
        Some(libc::EACCES | libc::EPERM) if tracepoint && !privileged => {
            format!("tracepoints need root or CAP_PERFMON (perf_event_paranoid={level} allows them only at -1)")
        }
        Some(libc::EACCES | libc::EPERM) if privileged => format!(
            "perf_event_open was denied although perf_event_paranoid={level} and perflab's privileges allow it: \
             a seccomp filter (containers) or a security module blocks it"
        ),
        Some(libc::EACCES | libc::EPERM) if scope == Scope::All || event.modifiers.kernel => format!(
            "perf_event_paranoid={level} forbids counting kernel mode; try --counter-scope user (or :u), \
             run as root, or `sysctl kernel.perf_event_paranoid=1`"
        ),
        Some(libc::EACCES | libc::EPERM) => format!(
            "perf_event_paranoid={level} forbids it; try `sysctl kernel.perf_event_paranoid=2` (or lower), \
             or run with CAP_PERFMON"
        ),
        Some(libc::ESRCH) => EXITED_BEFORE_OPEN.to_string(),
        Some(libc::EMFILE | libc::ENFILE) => "too many open files to open another counter".to_string(),
        Some(libc::EINVAL) => "the kernel rejected this event's configuration (EINVAL)".to_string(),
        _ => format!("perf_event_open failed: {err}"),
    }
}

enum Slot {
    Open(Box<dyn OpenCounter>),
    Failed(String),
}

/// Opens an event list on targets, with the scope and the reasons of refusals; shared by
/// the per-run probe and live counting (`stat -a/-p/-I`).
pub struct Counting {
    /// The events, in the order and groups `-e` gave.
    pub events: EventList,
    opener: Box<dyn CounterOpener>,
    scope: Scope,
    paranoid: Option<i32>,
    privileged: bool,
}

/// The counters of one event list on one target, as opened.
pub struct OpenSet {
    slots: Vec<Slot>,
}

impl Counting {
    /// `Auto` scope is resolved here against this machine's permissions.
    pub fn new(events: EventList, scope: Scope, opener: Box<dyn CounterOpener>) -> Self {
        Counting {
            events,
            opener,
            scope: scope.resolve(),
            paranoid: paranoid_level(),
            privileged: kernel_counting_allowed(),
        }
    }

    fn reason(&self, event: &Event, err: &io::Error) -> String {
        open_failure_reason(event, err, self.paranoid, self.scope, self.privileged)
    }

    /// Open every event on `target`. Ungrouped events are opened one by one: a group
    /// opens all-or-nothing, and one missing hardware event must not take the software
    /// ones down with it. A `{group}` the kernel refuses is then probed member by member
    /// so the reason names the member that failed (probing only after a refusal opens
    /// the same counters as probing first, at half the cost of every run).
    pub fn open(&self, target: Target) -> OpenSet {
        let exclude_kernel = self.scope == Scope::User;
        let mut slots: Vec<Slot> = Vec::new();
        let mut index = 0;
        while index < self.events.events.len() {
            let range = self.events.group_of(index).unwrap_or(index..index + 1);
            let members: Vec<&Event> = self.events.events[range.clone()].iter().collect();
            match self.opener.open_group(&members, target, exclude_kernel) {
                Ok(counters) => slots.extend(counters.into_iter().map(Slot::Open)),
                Err(err) if members.len() == 1 => slots.push(Slot::Failed(self.reason(members[0], &err))),
                Err(group_err) => {
                    let failed: Vec<String> = members
                        .iter()
                        .filter_map(|m| match self.opener.open_group(&[m], target, exclude_kernel) {
                            Ok(_) => None,
                            Err(err) => Some(format!("{}: {}", m.name, self.reason(m, &err))),
                        })
                        .collect();
                    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
                    let why = if failed.is_empty() {
                        format!(
                            "each member opens alone, but the kernel refused them as one group ({group_err}); \
                             count them without braces"
                        )
                    } else {
                        failed.join("; ")
                    };
                    let reason =
                        format!("group {{{}}} was not opened (a group is all-or-nothing): {why}", names.join(","));
                    slots.extend(members.iter().map(|_| Slot::Failed(reason.clone())));
                }
            }
            index = range.end;
        }
        OpenSet { slots }
    }

    /// Read every counter of `set` (each event's reading, by metric name).
    pub fn read(&self, set: &mut OpenSet) -> BTreeMap<String, CounterReading> {
        let mut out = BTreeMap::new();
        for (index, (event, slot)) in self.events.events.iter().zip(set.slots.iter_mut()).enumerate() {
            let reading = match slot {
                Slot::Failed(reason) => CounterReading::unsupported(reason.clone()),
                Slot::Open(counter) => match counter.read() {
                    Err(err) => CounterReading::unsupported(format!("reading the counter failed: {err}")),
                    Ok(_) if self.kernel_only_unseen(event) => {
                        CounterReading::unsupported(super::kernel_only::unseen_reason(
                            event,
                            self.scope == Scope::User,
                            self.privileged,
                            self.paranoid,
                        ))
                    }
                    Ok(raw) => {
                        let mut reading = scale(raw);
                        if raw.time_running == 0 && self.events.group_of(index).is_some() {
                            reading.reason = reading.reason.map(|r| {
                                format!("{r} (a group is scheduled whole: more events than the PMU's counters?)")
                            });
                        }
                        reading
                    }
                },
            };
            out.insert(event.name.clone(), reading);
        }
        out
    }

    fn kernel_only_unseen(&self, event: &Event) -> bool {
        KERNEL_ONLY.contains(&event.base.as_str()) && event.modifiers.exclude_kernel(self.scope == Scope::User)
    }

    /// The sum over the tasks of a `--count-in` scope: a task that ended between listing
    /// and opening (ESRCH), or that never ran while counted (time enabled 0: a server's
    /// idle process), counted nothing.
    fn read_sum_scoped(&self, sets: &mut [OpenSet]) -> BTreeMap<String, CounterReading> {
        let exited = |slot: &Slot| matches!(slot, Slot::Failed(reason) if reason.starts_with(EXITED_BEFORE_OPEN));
        let readings = sets.iter_mut().filter(|s| !s.slots.iter().all(exited)).map(|set| {
            let mut read = self.read(set);
            for reading in read.values_mut().filter(|r| r.reason.as_deref() == Some(NEVER_ENABLED)) {
                *reading = CounterReading::value(0.0, false);
            }
            read
        });
        sum_readings(readings)
    }

    /// Readings of targets summed per event (all CPUs of `-a`, all threads of `-p`).
    pub fn read_sum(&self, sets: &mut [OpenSet]) -> BTreeMap<String, CounterReading> {
        sum_readings(sets.iter_mut().map(|set| self.read(set)))
    }
}

/// Readings summed per event; a counter some target could not read leaves the sum unknown.
fn sum_readings(readings: impl Iterator<Item = BTreeMap<String, CounterReading>>) -> BTreeMap<String, CounterReading> {
    let mut total: BTreeMap<String, CounterReading> = BTreeMap::new();
    for (name, reading) in readings.flatten() {
        match total.get_mut(&name) {
            None => {
                total.insert(name, reading);
            }
            Some(sum) => match (sum.value, reading.value) {
                (Some(a), Some(b)) => {
                    sum.value = Some(a + b);
                    sum.scaled |= reading.scaled;
                }
                (Some(_), None) => *sum = reading,
                _ => {}
            },
        }
    }
    total
}

/// Whose events a run's counters count (`--count-in`): the measured command, or — for
/// work a command hands to a server (psql's query runs in a PostgreSQL backend, which is
/// the postmaster's child, not psql's) — other processes, during each run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CountIn {
    /// The command and the threads and children it starts (perf stat's default).
    #[default]
    Command,
    /// Every process on every CPU, from the run's start to its end.
    System,
    /// The processes whose name (comm) is this at each run's start, with their threads
    /// and the children they start during the run.
    Comm(String),
    /// This process and its descendants at each run's start, with the children they start
    /// during the run.
    Tree(libc::pid_t),
}

impl CountIn {
    /// The scope as `--count-in` takes it.
    pub fn spelling(&self) -> String {
        match self {
            CountIn::Command => "command".into(),
            CountIn::System => "system".into(),
            CountIn::Comm(name) => format!("comm:{name}"),
            CountIn::Tree(pid) => format!("pid:{pid}"),
        }
    }

    /// For people: whose events were counted during each run.
    pub fn describe(&self) -> String {
        match self {
            CountIn::Command => "the command, its threads and children".into(),
            CountIn::System => "every process on every CPU during each run".into(),
            CountIn::Comm(name) => {
                format!("the processes named {name} (and the children they start) during each run, not the command")
            }
            CountIn::Tree(pid) => {
                format!("process {pid} and its descendants during each run, not the command")
            }
        }
    }

    /// Why this scope cannot count now (no such process running), as `SCOPE: why`.
    pub fn check(&self) -> Result<(), String> {
        if matches!(self, CountIn::Comm(_) | CountIn::Tree(_)) && self.tasks().is_empty() {
            return Err(format!(
                "{}: no such process is running (it must run before each run starts)",
                self.spelling()
            ));
        }
        // Else every counter would be "not supported" with advice about per-process levels.
        if *self == CountIn::System && !perf_capable() {
            if let Some(level) = paranoid_level().filter(|level| *level > 0) {
                return Err(format!(
                    "system: counting every CPU needs root, CAP_PERFMON or perf_event_paranoid ≤ 0 (it is {level})"
                ));
            }
        }
        Ok(())
    }

    /// The tasks to open counters on now: every thread of the selected processes.
    fn tasks(&self) -> Vec<libc::pid_t> {
        let processes: Vec<libc::pid_t> = match self {
            CountIn::Command | CountIn::System => return Vec::new(),
            CountIn::Comm(name) => all_processes().into_iter().filter(|p| comm(*p).as_deref() == Some(name)).collect(),
            CountIn::Tree(root) => {
                let parents: Vec<(libc::pid_t, libc::pid_t)> =
                    all_processes().into_iter().filter_map(|p| Some((p, parent(p)?))).collect();
                let mut tree = vec![*root];
                let mut index = 0;
                while index < tree.len() {
                    let pid = tree[index];
                    tree.extend(parents.iter().filter(|(_, ppid)| *ppid == pid).map(|(p, _)| *p));
                    index += 1;
                }
                tree
            }
        };
        processes.into_iter().flat_map(threads).collect()
    }
}

/// A `--count-in` that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected --count-in command, system, comm:NAME or pid:PID, found `{0}`")]
pub struct UnknownCountIn(pub String);

impl std::str::FromStr for CountIn {
    type Err = UnknownCountIn;
    fn from_str(s: &str) -> Result<CountIn, UnknownCountIn> {
        let bad = || UnknownCountIn(s.to_string());
        Ok(match s.split_once(':') {
            None if s == "command" => CountIn::Command,
            None if s == "system" => CountIn::System,
            // The kernel keeps 15 bytes of a name (TASK_COMM_LEN − 1).
            Some(("comm", name)) if !name.is_empty() && name.len() <= 15 => CountIn::Comm(name.to_string()),
            Some(("pid", pid)) => CountIn::Tree(pid.parse().ok().filter(|p: &libc::pid_t| *p > 0).ok_or_else(bad)?),
            _ => return Err(bad()),
        })
    }
}

fn all_processes() -> Vec<libc::pid_t> {
    std::fs::read_dir("/proc")
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default()
}

fn comm(pid: libc::pid_t) -> Option<String> {
    Some(std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim_end_matches('\n').to_string())
}

fn parent(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name is in parentheses and may hold spaces: fields start after the last ')'.
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

fn threads(pid: libc::pid_t) -> Vec<libc::pid_t> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default()
}

/// The probe that counts `-e` events for one command's runs.
pub struct CountersProbe {
    counting: Counting,
    count_in: CountIn,
    open: Vec<OpenSet>,
    attached: bool,
}

impl CountersProbe {
    /// `Auto` scope is resolved here against this machine's permissions.
    pub fn new(events: EventList, scope: Scope, opener: Box<dyn CounterOpener>) -> Self {
        CountersProbe {
            counting: Counting::new(events, scope, opener),
            count_in: CountIn::Command,
            open: Vec::new(),
            attached: false,
        }
    }

    /// Count in other processes than the command's (see [`CountIn`]).
    pub fn count_in(mut self, count_in: CountIn) -> Self {
        self.count_in = count_in;
        self
    }
}

/// Turn a raw reading into a reading scaled to the whole run when multiplexed.
pub fn scale(raw: RawCount) -> CounterReading {
    if raw.time_enabled == 0 {
        return CounterReading::unsupported(NEVER_ENABLED);
    }
    if raw.time_running == 0 {
        return CounterReading::unsupported(
            "the counter never ran: the PMU was busy with other events or is not available to this VM",
        );
    }
    if raw.time_running < raw.time_enabled {
        // An estimate of a count: whole events, as perf prints it.
        let value = (raw.count as f64 * raw.time_enabled as f64 / raw.time_running as f64).round();
        CounterReading::value(value, true)
    } else {
        CounterReading::value(raw.count as f64, false)
    }
}

/// Add the derived metrics whose inputs were both counted (with the same modifiers:
/// `ipc:u` from `instructions:u` and `cycles:u`), computed per run.
pub fn add_derived(counters: &mut BTreeMap<String, CounterReading>) {
    for (name, numerator, denominator, factor, suffix) in derived_present(counters.keys()) {
        let (numerator, denominator) = (format!("{numerator}{suffix}"), format!("{denominator}{suffix}"));
        let (num, den) = (&counters[&numerator], &counters[&denominator]);
        let reading = match (num.value, den.value) {
            (Some(n), Some(d)) if d > 0.0 => CounterReading::value(n / d * factor, num.scaled || den.scaled),
            (Some(_), Some(_)) => CounterReading::unsupported(format!("{denominator} was zero")),
            _ => {
                let missing = if num.supported { &denominator } else { &numerator };
                let why = counters[missing].reason.clone().unwrap_or_default();
                CounterReading::unsupported(format!("needs {numerator} and {denominator}: {missing}: {why}"))
            }
        };
        counters.insert(format!("{name}{suffix}"), reading);
    }
}

/// The derived metrics whose inputs are among `names`: (name, numerator, denominator,
/// factor, modifier suffix).
fn derived_present<'a>(
    names: impl Iterator<Item = &'a String> + Clone,
) -> Vec<(&'static str, &'static str, &'static str, f64, String)> {
    let mut out = Vec::new();
    for name in names.clone() {
        let (base, suffix) = split_suffix(name);
        for (derived, numerator, denominator, factor) in DERIVED {
            if base == numerator && names.clone().any(|n| *n == format!("{denominator}{suffix}")) {
                out.push((derived, numerator, denominator, factor, suffix.to_string()));
            }
        }
    }
    out
}

impl Probe for CountersProbe {
    fn needs_gate(&self) -> bool {
        true
    }

    fn attach(&mut self, pid: libc::pid_t) -> anyhow::Result<()> {
        self.open = match &self.count_in {
            CountIn::Command => vec![self.counting.open(Target::Exec(pid))],
            CountIn::System => {
                crate::machine::online_cpu_ids().into_iter().map(|cpu| self.counting.open(Target::Cpu(cpu))).collect()
            }
            scope => {
                scope.check().map_err(|why| anyhow::anyhow!("--count-in {why}"))?;
                scope.tasks().into_iter().map(|tid| self.counting.open(Target::Attach(tid))).collect()
            }
        };
        self.attached = true;
        Ok(())
    }

    fn collect(&mut self, run: &mut Run) -> anyhow::Result<()> {
        let mut sets = std::mem::take(&mut self.open);
        match std::mem::take(&mut self.attached) {
            // A process of the scope that exited before its counters opened counts nothing.
            true if self.count_in != CountIn::Command => run.counters.extend(self.counting.read_sum_scoped(&mut sets)),
            true => run.counters.extend(self.counting.read_sum(&mut sets)),
            // attach never ran (the child could not be started): nothing was counted.
            false => {
                for event in &self.counting.events.events {
                    run.counters.insert(event.name.clone(), CounterReading::unsupported("the run was not counted"));
                }
            }
        }
        add_derived(&mut run.counters);
        Ok(())
    }
}

/// True for a derived metric's name (`ipc`, `ipc:u`, …).
pub fn is_derived(name: &str) -> bool {
    let (base, _) = split_suffix(name);
    DERIVED.iter().any(|(derived, _, _, _)| *derived == base)
}

/// Metric names a set of events produces (events, then derived ones), in display order.
pub fn metric_names(events: &EventList) -> Vec<String> {
    let mut names: Vec<String> = events.events.iter().map(|e| e.name.clone()).collect();
    for (name, _, _, _, suffix) in derived_present(names.iter()) {
        names.push(format!("{name}{suffix}"));
    }
    names
}

#[cfg(test)]
mod tests;
