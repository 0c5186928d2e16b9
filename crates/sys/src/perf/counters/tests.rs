//! Tests of the parent module (kept apart so that it stays readable).

use super::*;
use std::cell::RefCell;
use std::rc::Rc;

fn events(names: &[&str]) -> EventList {
    parse_events(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

/// (event, target, exclude_kernel) of every event opened.
type OpenLog = Rc<RefCell<Vec<(String, Target, bool)>>>;

/// A fake PMU: every event reads the configured raw count; records what was opened.
struct FakePmu {
    readings: BTreeMap<&'static str, RawCount>,
    opened: OpenLog,
    fail_with: Option<i32>,
    /// Events that fail with this errno, alone or in a group.
    refuse: Vec<(&'static str, i32)>,
}

struct FakeCounter(RawCount);
impl OpenCounter for FakeCounter {
    fn read(&mut self) -> io::Result<RawCount> {
        Ok(self.0)
    }
}

impl CounterOpener for FakePmu {
    fn open_group(
        &self,
        events: &[&Event],
        target: Target,
        scope_excludes_kernel: bool,
    ) -> io::Result<Vec<Box<dyn OpenCounter>>> {
        if let Some(errno) = self.fail_with {
            return Err(io::Error::from_raw_os_error(errno));
        }
        if let Some((_, errno)) = self.refuse.iter().find(|(n, _)| events.iter().any(|e| e.name == *n)) {
            return Err(io::Error::from_raw_os_error(*errno));
        }
        let mut out: Vec<Box<dyn OpenCounter>> = Vec::new();
        for event in events {
            let exclude_kernel = event.modifiers.exclude_kernel(scope_excludes_kernel);
            self.opened.borrow_mut().push((event.name.clone(), target, exclude_kernel));
            let raw = self.readings.get(event.name.as_str()).copied().unwrap_or(RawCount {
                count: 7,
                time_enabled: 100,
                time_running: 100,
            });
            out.push(Box::new(FakeCounter(raw)));
        }
        Ok(out)
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
        refuse: Vec::new(),
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
    let names: Vec<&str> = specs.events.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["cycles", "context-switches", "branches", "task-clock"]);
}

#[test]
fn unknown_event_is_a_usage_error_listing_valid_names() {
    let err = parse_events(&["cycle".to_string()]).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("unknown event `cycle`"), "{text}");
    assert!(text.contains("branch-misses") && text.contains("major-faults"), "{text}");
}

#[test]
fn a_refused_group_names_the_member_that_failed_and_spares_the_rest() {
    let mut pmu = fake(&[("task-clock", 5_000, 10, 10)]);
    pmu.refuse = vec![("instructions", libc::ENOENT)];
    let mut probe = CountersProbe::new(events(&["task-clock,{cycles,instructions}"]), Scope::All, Box::new(pmu));
    let run = run_probe(&mut probe);
    assert_eq!(run.counters["task-clock"].value, Some(5_000.0));
    for member in ["cycles", "instructions"] {
        let reason = run.counters[member].reason.clone().unwrap();
        assert!(reason.starts_with("group {cycles,instructions} was not opened"), "{reason}");
        assert!(reason.contains("instructions: no hardware PMU"), "{reason}");
        assert!(!reason.contains("cycles: "), "cycles opens alone: {reason}");
    }
}

#[test]
fn modifiers_choose_the_levels_per_event_and_derive_per_suffix() {
    let pmu = fake(&[("cycles:u", 1_000, 10, 10), ("instructions:u", 2_000, 10, 10), ("cycles", 4_000, 10, 10)]);
    let opened = pmu.opened.clone();
    let mut probe =
        CountersProbe::new(events(&["cycles:u,instructions:u,cycles,context-switches:u"]), Scope::All, Box::new(pmu));
    let run = run_probe(&mut probe);
    assert_eq!(run.counters["ipc:u"], CounterReading::value(2.0, false));
    assert!(!run.counters.contains_key("ipc"), "instructions without :u was not counted");
    let log = opened.borrow();
    let kernel_of = |n: &str| log.iter().find(|(name, _, _)| name == n).unwrap().2;
    assert!(kernel_of("cycles:u") && !kernel_of("cycles"), "{log:?}");
    let cs = &run.counters["context-switches:u"];
    assert!(!cs.supported && cs.reason.as_deref().unwrap().contains("kernel mode"), "{cs:?}");
    assert_eq!(
        metric_names(&events(&["cycles:u,instructions:u,cycles"])),
        ["cycles:u", "instructions:u", "cycles", "ipc:u"]
    );
}

/// The fake PMU seam: counts are task-clock times fixed rates, so the derived metrics
/// are exact; too many events multiplex, a too-large group never runs.
#[test]
fn the_fake_pmu_multiplexes_and_starves_oversized_groups() {
    let clock = fake(&[("task-clock", 1_000_000, 100, 100)]);
    let list = events(&["cycles,instructions,branches,branch-misses,cache-misses"]);
    let mut probe = CountersProbe::new(list, Scope::All, Box::new(FakePmuOpener::new(clock, 4)));
    let run = run_probe(&mut probe);
    let cycles = &run.counters["cycles"];
    assert!(cycles.scaled, "5 events on 4 counters multiplex: {cycles:?}");
    assert!((cycles.value.unwrap() - 3_000_000.0).abs() < 1.0, "{cycles:?}");
    assert!((run.counters["ipc"].value.unwrap() - 1.5).abs() < 1e-9);
    assert!((run.counters["branch-miss-rate"].value.unwrap() - 1.0).abs() < 1e-9);

    let clock = fake(&[("task-clock", 1_000_000, 100, 100)]);
    let list = events(&["{cycles,instructions,branches}"]);
    let mut probe = CountersProbe::new(list, Scope::All, Box::new(FakePmuOpener::new(clock, 2)));
    let run = run_probe(&mut probe);
    let reason = run.counters["cycles"].reason.clone().unwrap();
    assert!(reason.contains("never ran") && reason.contains("scheduled whole"), "{reason}");

    let clock = fake(&[("task-clock", 1_000_000, 100, 100)]);
    let mut probe = CountersProbe::new(events(&["cycles:ppp"]), Scope::All, Box::new(FakePmuOpener::new(clock, 4)));
    let run = run_probe(&mut probe);
    let reason = run.counters["cycles:ppp"].reason.clone().unwrap();
    assert!(reason.contains("precise level 3"), "{reason}");
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
    let mut probe =
        CountersProbe::new(events(&["cycles", "instructions", "branches", "branch-misses"]), Scope::All, Box::new(pmu));
    let run = run_probe(&mut probe);
    assert_eq!(run.counters["instructions"], CounterReading::value(3_000.0, false));
    assert_eq!(run.counters["ipc"], CounterReading::value(1.5, false));
    assert_eq!(run.counters["branch-miss-rate"], CounterReading::value(5.0, false));
    assert!(!run.counters.contains_key("cache-miss-rate"));
    let opened = opened.borrow();
    assert_eq!(opened.len(), 4);
    assert!(opened.iter().all(|(_, target, exclude_kernel)| *target == Target::Exec(4242) && !exclude_kernel));
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
    let mut probe =
        CountersProbe::new(events(&["cycles", "instructions", "task-clock", "page-faults"]), Scope::All, Box::new(pmu));
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
    let cycles = events(&["cycles"]).events.remove(0);
    let cycles = &cycles;
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
    assert!(opened.borrow().iter().all(|(_, _, exclude_kernel)| *exclude_kernel));
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
