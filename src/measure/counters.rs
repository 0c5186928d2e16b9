//! Counters per run through perf_event_open: opened on the held child with
//! enable_on_exec + inherit (so counting starts at exec and follows children and
//! threads), read after the child is reaped, scaled when multiplexed, and reported as
//! `supported: false` with a human reason wherever the machine cannot count them.

use super::Probe;
use crate::model::{CounterReading, Run};
use perf_event::events::{Hardware, Software};
use std::collections::BTreeMap;
use std::io;

/// Environment switch that makes every hardware event fail as on a machine without a
/// PMU, so the fallback path can be exercised anywhere (documented in docs/counters.md).
pub const FORCE_NO_PMU_ENV: &str = "PERFLAB_FORCE_NO_PMU";

/// A countable event, by its perf name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSpec {
    /// perf's canonical event name (also the metric name).
    pub name: &'static str,
    pub kind: EventKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Hardware(Hardware),
    Software(Software),
}

impl EventKind {
    fn is_hardware(self) -> bool {
        matches!(self, EventKind::Hardware(_))
    }
}

/// Lets a builder open whichever kind it is (counting here, sampling in the profiler).
impl perf_event::events::Event for EventKind {
    fn update_attrs(self, attr: &mut perf_event_open_sys::bindings::perf_event_attr) {
        match self {
            EventKind::Hardware(hw) => hw.update_attrs(attr),
            EventKind::Software(sw) => sw.update_attrs(attr),
        }
    }
}

/// The event perf calls `name` (or an alias of it); the one table of event names.
pub fn event(name: &str) -> Result<EventSpec, crate::error::Failure> {
    let found = EVENTS.iter().find(|(canonical, aliases, _)| *canonical == name || aliases.contains(&name));
    let Some(&(canonical, _, kind)) = found else {
        let valid: Vec<&str> = EVENTS.iter().map(|(n, _, _)| *n).collect();
        return Err(crate::usage!("unknown event `{name}`; valid events: {}", valid.join(", ")));
    };
    Ok(EventSpec { name: canonical, kind })
}

/// Every event `-e` accepts: perf's name, then its aliases.
const EVENTS: &[(&str, &[&str], EventKind)] = &[
    ("cycles", &["cpu-cycles"], EventKind::Hardware(Hardware::CPU_CYCLES)),
    ("instructions", &[], EventKind::Hardware(Hardware::INSTRUCTIONS)),
    ("branches", &["branch-instructions"], EventKind::Hardware(Hardware::BRANCH_INSTRUCTIONS)),
    ("branch-misses", &[], EventKind::Hardware(Hardware::BRANCH_MISSES)),
    ("cache-references", &[], EventKind::Hardware(Hardware::CACHE_REFERENCES)),
    ("cache-misses", &[], EventKind::Hardware(Hardware::CACHE_MISSES)),
    ("stalled-cycles-frontend", &["idle-cycles-frontend"], EventKind::Hardware(Hardware::STALLED_CYCLES_FRONTEND)),
    ("stalled-cycles-backend", &["idle-cycles-backend"], EventKind::Hardware(Hardware::STALLED_CYCLES_BACKEND)),
    ("ref-cycles", &[], EventKind::Hardware(Hardware::REF_CPU_CYCLES)),
    ("task-clock", &[], EventKind::Software(Software::TASK_CLOCK)),
    ("cpu-clock", &[], EventKind::Software(Software::CPU_CLOCK)),
    ("page-faults", &["faults"], EventKind::Software(Software::PAGE_FAULTS)),
    ("context-switches", &["cs"], EventKind::Software(Software::CONTEXT_SWITCHES)),
    ("cpu-migrations", &["migrations"], EventKind::Software(Software::CPU_MIGRATIONS)),
    ("minor-faults", &[], EventKind::Software(Software::PAGE_FAULTS_MIN)),
    ("major-faults", &[], EventKind::Software(Software::PAGE_FAULTS_MAJ)),
];

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
pub const DERIVED: [(&str, &str, &str, f64); 3] = [
    ("ipc", "instructions", "cycles", 1.0),
    ("branch-miss-rate", "branch-misses", "branches", 100.0),
    ("cache-miss-rate", "cache-misses", "cache-references", 100.0),
];

/// Events that only happen in kernel mode: a user-only counter reads a false zero.
const KERNEL_ONLY: [&str; 2] = ["context-switches", "cpu-migrations"];

/// Parse `-e` names (perf's names and aliases) into events, without duplicates.
pub fn parse_events(names: &[String]) -> Result<Vec<EventSpec>, crate::error::Failure> {
    let mut specs: Vec<EventSpec> = Vec::new();
    for raw in names {
        let name = raw.trim();
        if name.is_empty() {
            continue;
        }
        let spec = event(name)?;
        if !specs.iter().any(|s| s.name == spec.name) {
            specs.push(spec);
        }
    }
    Ok(specs)
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

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Scope, String> {
        match s {
            "auto" => Ok(Scope::Auto),
            "user" => Ok(Scope::User),
            "all" | "user+kernel" => Ok(Scope::All),
            other => Err(format!("expected counter scope auto, user or all, found `{other}`")),
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
    if paranoid_level().is_some_and(|level| level <= 1) {
        return true;
    }
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
    pub count: u64,
    pub time_enabled: u64,
    pub time_running: u64,
}

/// An opened counter, read once after the child was reaped.
pub trait OpenCounter {
    fn read(&mut self) -> io::Result<RawCount>;
}

/// Opens one counter on a process (abstracted so tests can fake a PMU or its absence).
pub trait CounterOpener {
    fn open(&self, event: EventSpec, pid: libc::pid_t, exclude_kernel: bool) -> io::Result<Box<dyn OpenCounter>>;
}

/// The real opener: perf_event_open via perf-event2, disabled until the child execs,
/// inherited by its children and threads.
pub struct PerfOpener;

struct PerfCounter(perf_event::Counter);

impl OpenCounter for PerfCounter {
    fn read(&mut self) -> io::Result<RawCount> {
        let c = self.0.read_count_and_time()?;
        Ok(RawCount { count: c.count, time_enabled: c.time_enabled, time_running: c.time_running })
    }
}

impl CounterOpener for PerfOpener {
    fn open(&self, event: EventSpec, pid: libc::pid_t, exclude_kernel: bool) -> io::Result<Box<dyn OpenCounter>> {
        let mut builder = match event.kind {
            kind => perf_event::Builder::new(kind),
        };
        builder
            .observe_pid(pid)
            .any_cpu()
            .enable_on_exec(true)
            .inherit(true)
            .exclude_kernel(exclude_kernel)
            .exclude_hv(true);
        Ok(Box::new(PerfCounter(builder.build()?)))
    }
}

/// Wraps an opener so hardware events fail with ENOENT, as on a machine without a PMU.
pub struct NoPmuOpener<O>(pub O);

impl<O: CounterOpener> CounterOpener for NoPmuOpener<O> {
    fn open(&self, event: EventSpec, pid: libc::pid_t, exclude_kernel: bool) -> io::Result<Box<dyn OpenCounter>> {
        if event.kind.is_hardware() {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        self.0.open(event, pid, exclude_kernel)
    }
}

/// The opener for this process: the real one, or the forced no-PMU one when
/// `PERFLAB_FORCE_NO_PMU=1`.
pub fn system_opener() -> Box<dyn CounterOpener> {
    if std::env::var(FORCE_NO_PMU_ENV).is_ok_and(|v| !v.is_empty() && v != "0") {
        Box::new(NoPmuOpener(PerfOpener))
    } else {
        Box::new(PerfOpener)
    }
}

/// Why an event could not be opened, for a human.
/// `privileged`: paranoid and capabilities allow kernel counting, so a denial comes
/// from elsewhere.
pub fn open_failure_reason(
    event: EventSpec,
    err: &io::Error,
    paranoid: Option<i32>,
    scope: Scope,
    privileged: bool,
) -> String {
    let level = paranoid.map_or_else(|| "?".to_string(), |l| l.to_string());
    match err.raw_os_error() {
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) if event.kind.is_hardware() => {
            "no hardware PMU (virtualized?): the kernel does not offer this event here".to_string()
        }
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) => "the kernel does not offer this event".to_string(),
        Some(libc::EACCES | libc::EPERM) if privileged => format!(
            "perf_event_open was denied although perf_event_paranoid={level} and perflab's privileges allow it: \
             a seccomp filter (containers) or a security module blocks it"
        ),
        Some(libc::EACCES | libc::EPERM) if scope == Scope::All => format!(
            "perf_event_paranoid={level} forbids counting kernel mode; try --counter-scope user, \
             run as root, or `sysctl kernel.perf_event_paranoid=1`"
        ),
        Some(libc::EACCES | libc::EPERM) => format!(
            "perf_event_paranoid={level} forbids it; try `sysctl kernel.perf_event_paranoid=2` (or lower), \
             or run with CAP_PERFMON"
        ),
        Some(libc::ESRCH) => "the process exited before its counters could be opened".to_string(),
        Some(libc::EMFILE | libc::ENFILE) => "too many open files to open another counter".to_string(),
        Some(libc::EINVAL) => "the kernel rejected this event's configuration (EINVAL)".to_string(),
        _ => format!("perf_event_open failed: {err}"),
    }
}

enum Slot {
    Open(Box<dyn OpenCounter>),
    Failed(String),
}

/// The probe that counts `-e` events for one command's runs.
pub struct CountersProbe {
    events: Vec<EventSpec>,
    opener: Box<dyn CounterOpener>,
    scope: Scope,
    paranoid: Option<i32>,
    privileged: bool,
    slots: Vec<(EventSpec, Slot)>,
}

impl CountersProbe {
    /// `Auto` scope is resolved here against this machine's permissions.
    pub fn new(events: Vec<EventSpec>, scope: Scope, opener: Box<dyn CounterOpener>) -> Self {
        CountersProbe {
            events,
            opener,
            scope: scope.resolve(),
            paranoid: paranoid_level(),
            privileged: kernel_counting_allowed(),
            slots: Vec::new(),
        }
    }

    fn read_slot(&self, event: EventSpec, slot: &mut Slot) -> CounterReading {
        let counter = match slot {
            Slot::Failed(reason) => return CounterReading::unsupported(reason.clone()),
            Slot::Open(counter) => counter,
        };
        let raw = match counter.read() {
            Ok(raw) => raw,
            Err(err) => return CounterReading::unsupported(format!("reading the counter failed: {err}")),
        };
        if self.scope == Scope::User && KERNEL_ONLY.contains(&event.name) {
            return CounterReading::unsupported(format!(
                "{} happen in kernel mode, which user-only counting cannot see (perf_event_paranoid={}); \
                 run as root or use `sysctl kernel.perf_event_paranoid=1`",
                event.name,
                self.paranoid.map_or_else(|| "?".into(), |l| l.to_string())
            ));
        }
        scale(raw)
    }
}

/// Turn a raw reading into a reading scaled to the whole run when multiplexed.
pub fn scale(raw: RawCount) -> CounterReading {
    if raw.time_enabled == 0 {
        return CounterReading::unsupported("the counter was never enabled (the program did not exec?)");
    }
    if raw.time_running == 0 {
        return CounterReading::unsupported(
            "the counter never ran: the PMU was busy with other events or is not available to this VM",
        );
    }
    if raw.time_running < raw.time_enabled {
        let value = raw.count as f64 * raw.time_enabled as f64 / raw.time_running as f64;
        CounterReading::value(value, true)
    } else {
        CounterReading::value(raw.count as f64, false)
    }
}

/// Add the derived metrics whose inputs were both requested, computed per run.
pub fn add_derived(counters: &mut BTreeMap<String, CounterReading>) {
    for (name, numerator, denominator, factor) in DERIVED {
        let (Some(num), Some(den)) = (counters.get(numerator), counters.get(denominator)) else { continue };
        let reading = match (num.value, den.value) {
            (Some(n), Some(d)) if d > 0.0 => CounterReading::value(n / d * factor, num.scaled || den.scaled),
            (Some(_), Some(_)) => CounterReading::unsupported(format!("{denominator} was zero")),
            _ => {
                let missing = if num.supported { denominator } else { numerator };
                let why = counters[missing].reason.clone().unwrap_or_default();
                CounterReading::unsupported(format!("needs {numerator} and {denominator}: {missing}: {why}"))
            }
        };
        counters.insert(name.to_string(), reading);
    }
}

impl Probe for CountersProbe {
    fn needs_gate(&self) -> bool {
        true
    }

    /// Events are opened one by one: a group opens all-or-nothing, and one missing
    /// hardware event must not take the software ones down with it.
    fn attach(&mut self, pid: libc::pid_t) -> anyhow::Result<()> {
        self.slots.clear();
        for &event in &self.events {
            let exclude_kernel = self.scope == Scope::User;
            let slot = match self.opener.open(event, pid, exclude_kernel) {
                Ok(counter) => Slot::Open(counter),
                Err(err) => Slot::Failed(open_failure_reason(event, &err, self.paranoid, self.scope, self.privileged)),
            };
            self.slots.push((event, slot));
        }
        Ok(())
    }

    fn collect(&mut self, run: &mut Run) -> anyhow::Result<()> {
        let mut slots = std::mem::take(&mut self.slots);
        if slots.is_empty() {
            // attach never ran (the child could not be started): nothing was counted.
            for &event in &self.events {
                run.counters.insert(event.name.to_string(), CounterReading::unsupported("the run was not counted"));
            }
        }
        for (event, slot) in slots.iter_mut() {
            let reading = self.read_slot(*event, slot);
            run.counters.insert(event.name.to_string(), reading);
        }
        add_derived(&mut run.counters);
        Ok(())
    }
}

/// Metric names a set of events produces (events, then derived ones), in display order.
pub fn metric_names(events: &[EventSpec]) -> Vec<String> {
    let mut names: Vec<String> = events.iter().map(|e| e.name.to_string()).collect();
    for (name, numerator, denominator, _) in DERIVED {
        if names.iter().any(|n| n == numerator) && names.iter().any(|n| n == denominator) {
            names.push(name.to_string());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    fn events(names: &[&str]) -> Vec<EventSpec> {
        parse_events(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    /// (event, pid, exclude_kernel) of every open call.
    type OpenLog = Rc<RefCell<Vec<(&'static str, libc::pid_t, bool)>>>;

    /// A fake PMU: every event reads the configured raw count; records what was opened.
    struct FakePmu {
        readings: BTreeMap<&'static str, RawCount>,
        opened: OpenLog,
        fail_with: Option<i32>,
    }

    struct FakeCounter(RawCount);
    impl OpenCounter for FakeCounter {
        fn read(&mut self) -> io::Result<RawCount> {
            Ok(self.0)
        }
    }

    impl CounterOpener for FakePmu {
        fn open(&self, event: EventSpec, pid: libc::pid_t, exclude_kernel: bool) -> io::Result<Box<dyn OpenCounter>> {
            self.opened.borrow_mut().push((event.name, pid, exclude_kernel));
            if let Some(errno) = self.fail_with {
                return Err(io::Error::from_raw_os_error(errno));
            }
            let raw = self.readings.get(event.name).copied().unwrap_or(RawCount {
                count: 7,
                time_enabled: 100,
                time_running: 100,
            });
            Ok(Box::new(FakeCounter(raw)))
        }
    }

    fn fake(readings: &[(&'static str, u64, u64, u64)]) -> FakePmu {
        FakePmu {
            readings: readings
                .iter()
                .map(|&(n, count, time_enabled, time_running)| (n, RawCount { count, time_enabled, time_running }))
                .collect(),
            opened: Rc::default(),
            fail_with: None,
        }
    }

    fn run_probe(probe: &mut CountersProbe) -> Run {
        probe.attach(4242).unwrap();
        let mut run = Run::default();
        probe.collect(&mut run).unwrap();
        run
    }

    #[test]
    fn parses_perf_names_and_aliases_without_duplicates() {
        let specs = events(&["cpu-cycles", "cycles", "cs", "branch-instructions", " task-clock "]);
        let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
        assert_eq!(names, ["cycles", "context-switches", "branches", "task-clock"]);
    }

    #[test]
    fn unknown_event_is_a_usage_error_listing_valid_names() {
        let err = parse_events(&["cycles:u".to_string()]).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::EXIT_USAGE);
        let text = err.to_string();
        assert!(text.contains("unknown event `cycles:u`"), "{text}");
        assert!(text.contains("branch-misses") && text.contains("major-faults"), "{text}");
    }

    #[test]
    fn working_pmu_reads_values_and_derives_rates() {
        let pmu = fake(&[
            ("cycles", 2_000, 10, 10),
            ("instructions", 3_000, 10, 10),
            ("branches", 400, 10, 10),
            ("branch-misses", 20, 10, 10),
        ]);
        let opened = pmu.opened.clone();
        let mut probe = CountersProbe::new(
            events(&["cycles", "instructions", "branches", "branch-misses"]),
            Scope::All,
            Box::new(pmu),
        );
        let run = run_probe(&mut probe);
        assert_eq!(run.counters["instructions"], CounterReading::value(3_000.0, false));
        assert_eq!(run.counters["ipc"], CounterReading::value(1.5, false));
        assert_eq!(run.counters["branch-miss-rate"], CounterReading::value(5.0, false));
        assert!(!run.counters.contains_key("cache-miss-rate"));
        let opened = opened.borrow();
        assert_eq!(opened.len(), 4);
        assert!(opened.iter().all(|&(_, pid, exclude_kernel)| pid == 4242 && !exclude_kernel));
    }

    #[test]
    fn multiplexed_counts_are_scaled_and_marked() {
        let pmu = fake(&[("cycles", 1_000, 400, 100), ("instructions", 500, 400, 400)]);
        let mut probe = CountersProbe::new(events(&["cycles", "instructions"]), Scope::User, Box::new(pmu));
        let run = run_probe(&mut probe);
        assert_eq!(run.counters["cycles"], CounterReading::value(4_000.0, true));
        assert_eq!(run.counters["instructions"], CounterReading::value(500.0, false));
        // A ratio of a scaled input is itself an estimate.
        assert_eq!(run.counters["ipc"], CounterReading::value(0.125, true));
    }

    #[test]
    fn counter_that_never_ran_is_unsupported_not_zero() {
        let reading = scale(RawCount { count: 0, time_enabled: 1_000, time_running: 0 });
        assert!(!reading.supported && reading.value.is_none());
        assert!(reading.reason.unwrap().contains("never ran"));
    }

    #[test]
    fn no_pmu_reports_hardware_unsupported_and_keeps_software() {
        let pmu = NoPmuOpener(fake(&[("task-clock", 5_000, 10, 10), ("page-faults", 60, 10, 10)]));
        let mut probe = CountersProbe::new(
            events(&["cycles", "instructions", "task-clock", "page-faults"]),
            Scope::All,
            Box::new(pmu),
        );
        let run = run_probe(&mut probe);
        for hw in ["cycles", "instructions", "ipc"] {
            let c = &run.counters[hw];
            assert!(!c.supported && c.value.is_none(), "{hw}: {c:?}");
        }
        assert!(run.counters["cycles"].reason.as_deref().unwrap().contains("no hardware PMU"));
        assert!(run.counters["ipc"].reason.as_deref().unwrap().starts_with("needs instructions and cycles"));
        assert_eq!(run.counters["task-clock"], CounterReading::value(5_000.0, false));
        assert_eq!(run.counters["page-faults"], CounterReading::value(60.0, false));
    }

    #[test]
    fn permission_errors_name_the_paranoid_level_and_a_fix() {
        let cycles = events(&["cycles"])[0];
        let err = io::Error::from_raw_os_error(libc::EACCES);
        let all = open_failure_reason(cycles, &err, Some(2), Scope::All, false);
        assert!(all.contains("perf_event_paranoid=2") && all.contains("--counter-scope user"), "{all}");
        let user = open_failure_reason(cycles, &err, Some(3), Scope::User, false);
        assert!(user.contains("perf_event_paranoid=3") && user.contains("sysctl"), "{user}");
        let blocked = open_failure_reason(cycles, &err, Some(2), Scope::All, true);
        assert!(blocked.contains("seccomp"), "{blocked}");
    }

    #[test]
    fn user_only_scope_excludes_kernel_and_refuses_kernel_only_events() {
        let pmu = fake(&[("context-switches", 0, 10, 10), ("page-faults", 70, 10, 10)]);
        let opened = pmu.opened.clone();
        let mut probe = CountersProbe::new(events(&["context-switches", "page-faults"]), Scope::User, Box::new(pmu));
        let run = run_probe(&mut probe);
        assert!(opened.borrow().iter().all(|&(_, _, exclude_kernel)| exclude_kernel));
        let cs = &run.counters["context-switches"];
        assert!(!cs.supported && cs.reason.as_deref().unwrap().contains("kernel mode"), "{cs:?}");
        assert_eq!(run.counters["page-faults"].value, Some(70.0));
    }

    #[test]
    fn derived_metric_with_zero_denominator_is_unsupported() {
        let mut counters = BTreeMap::new();
        counters.insert("branches".to_string(), CounterReading::value(0.0, false));
        counters.insert("branch-misses".to_string(), CounterReading::value(0.0, false));
        add_derived(&mut counters);
        assert!(!counters["branch-miss-rate"].supported);
    }

    #[test]
    fn metric_names_include_derived_only_with_both_inputs() {
        let names = metric_names(&events(&["cycles", "instructions", "branch-misses"]));
        assert_eq!(names, ["cycles", "instructions", "branch-misses", "ipc"]);
    }

    /// The real opener on this machine: software events count a real child; hardware
    /// events either count or are unsupported with a reason — never a zero.
    #[test]
    fn real_opener_counts_a_forked_child_from_exec() {
        let specs = events(&["task-clock", "page-faults", "instructions"]);
        let mut probe = CountersProbe::new(specs, Scope::Auto, Box::new(PerfOpener));
        let (read_fd, write_fd) = {
            let mut fds = [0; 2];
            // SAFETY: pipe2 fills two descriptors we then own.
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            (fds[0], fds[1])
        };
        let program = std::ffi::CString::new("/bin/true").unwrap();
        let argv = [program.as_ptr(), std::ptr::null()];
        // SAFETY: the child only calls async-signal-safe functions (read, execv, _exit).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe {
                let mut byte = 0u8;
                libc::close(write_fd);
                libc::read(read_fd, (&mut byte as *mut u8).cast(), 1);
                libc::execv(program.as_ptr(), argv.as_ptr());
                libc::_exit(127);
            }
        }
        unsafe { libc::close(read_fd) };
        probe.attach(pid).unwrap();
        unsafe { libc::close(write_fd) };
        let mut status = 0;
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        let mut run = Run::default();
        probe.collect(&mut run).unwrap();
        let task_clock = &run.counters["task-clock"];
        assert!(task_clock.value.is_some_and(|v| v > 0.0), "{task_clock:?}");
        assert!(run.counters["page-faults"].value.is_some_and(|v| v > 0.0));
        let instructions = &run.counters["instructions"];
        if instructions.supported {
            assert!(instructions.value.is_some_and(|v| v > 0.0));
        } else {
            assert!(instructions.reason.is_some() && instructions.value.is_none());
        }
    }
}
