//! Measurement beyond what `wait4` gives: counters (perf_event_open) and simulators
//! (valgrind), each a [`Probe`] that the spawner calls around every run; and the metrics
//! a command prints about itself ([`output`]).

pub mod allocations;
pub mod cachegrind;
pub mod error;
pub mod live;
pub mod output;
pub mod probe_cost;
pub mod sampling;

use perflab_model::CommandSpec;
use perflab_sys::perf::{counters, event, Probe};
use std::collections::BTreeMap;

/// What a run measures besides time and rusage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeasureOptions {
    /// perf event names to count per run (empty: none).
    pub events: Vec<String>,
    /// How runs are measured (natively or under cachegrind).
    pub mode: Mode,
    /// Which privilege levels the counters count (`--scope`).
    pub counter_scope: counters::Scope,
    /// Whose events the counters count during each run (`--count-in`).
    pub count_in: counters::CountIn,
    /// How to read the metrics a command prints about itself (empty: none; its output
    /// is then not captured at all).
    pub output: Vec<output::Parser>,
    /// Which iterations of a printed metric make a run's value (the same choice as
    /// `Settings::iterations`, here for the metric names `each` adds).
    pub iterations: perflab_model::Iterations,
    /// Watch every run to explain the comparison function by function (`--explain`);
    /// in instruction mode, cachegrind's per-function counts instead.
    pub explain: Option<Explain>,
}

/// What `--explain` watches in every run.
#[derive(Debug, Clone, PartialEq)]
pub enum Explain {
    /// Samples of an event per function (`--explain-event`).
    Samples(sampling::Sampling),
    /// Allocating calls per call site (`--explain-alloc`).
    Allocations(allocations::Allocations),
}

pub use perflab_model::Mode;

/// The probes a run needs for these options (one set per command).
///
/// `-e` and `--mode instructions` are exclusive: under valgrind, perf counters would
/// count the simulator's JIT, not the program.
pub(crate) fn build_probes(args: &MeasureOptions, argv: &[String]) -> Result<Vec<Box<dyn Probe>>, error::ProbeError> {
    let events = counters::parse_events(&args.events)?;
    if args.count_in != counters::CountIn::Command {
        if events.is_empty() || args.mode == Mode::Instructions {
            return Err(error::ProbeError::CountIn(format!(
                "{}: it scopes the -e counters, and none are counted here",
                args.count_in.spelling()
            )));
        }
        args.count_in.check().map_err(error::ProbeError::CountIn)?;
    }
    if args.mode == Mode::Instructions && !args.output.is_empty() {
        return Err(error::ProbeError::OutputUnderValgrind);
    }
    match args.mode {
        Mode::Instructions if !events.is_empty() => Err(error::ProbeError::EventsUnderValgrind),
        Mode::Instructions if matches!(args.explain, Some(Explain::Allocations(_))) => {
            Err(error::ProbeError::AllocationsUnderValgrind)
        }
        Mode::Instructions => {
            Ok(vec![Box::new(cachegrind::CachegrindProbe::new()?.per_function(args.explain.is_some()))])
        }
        Mode::Wall => {
            let mut probes: Vec<Box<dyn Probe>> = Vec::new();
            if !events.is_empty() {
                probes.push(Box::new(
                    counters::CountersProbe::new(events, args.counter_scope, counters::system_opener())
                        .count_in(args.count_in.clone()),
                ));
            }
            match &args.explain {
                Some(Explain::Samples(sampling)) => {
                    let mut probe = sampling::SamplingProbe::new(sampling)?;
                    probe.set_argv(argv);
                    probes.push(Box::new(probe));
                }
                Some(Explain::Allocations(allocations)) => {
                    probes.push(Box::new(allocations::AllocationProbe::new(allocations, argv)?));
                }
                None => {}
            }
            Ok(probes)
        }
    }
}

/// The metrics the commands print about themselves that are known before they run, in
/// display order (formats whose metric names come from the output add theirs later).
pub(crate) fn output_names(args: &MeasureOptions) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in args.output.iter().flat_map(|p| p.known_names().unwrap_or_default()) {
        if !names.contains(&name) {
            let groups = args.iterations.group_names(&name);
            names.push(name);
            names.extend(groups);
        }
    }
    names
}

/// True when some metric names are only known from the commands' output.
pub(crate) fn output_names_discovered(args: &MeasureOptions) -> bool {
    args.output.iter().any(|p| p.known_names().is_none())
}

/// The counter metrics these options produce per run, in display order.
pub fn metric_names(args: &MeasureOptions) -> Result<Vec<String>, event::EventError> {
    Ok(match args.mode {
        Mode::Instructions => cachegrind::COMPARED
            .iter()
            .chain(cachegrind::RAW_EVENTS.iter().map(|(_, name)| name).filter(|n| !cachegrind::COMPARED.contains(n)))
            .map(|n| n.to_string())
            .collect(),
        Mode::Wall => counters::metric_names(&counters::parse_events(&args.events)?),
    })
}

/// Facts about this machine that can shift these measurements, for
/// `Experiment.environment`. Per-binary facts that differ between commands are keyed
/// `fact[command name]`.
pub(crate) fn environment_facts(args: &MeasureOptions, commands: &[CommandSpec]) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    if !args.events.is_empty() {
        facts.insert("counter_scope".to_string(), args.counter_scope.resolve().as_str().to_string());
        if args.count_in != counters::CountIn::Command {
            facts.insert("counted_in".to_string(), args.count_in.describe());
        }
        if let Some(level) = counters::paranoid_level() {
            facts.insert("perf_event_paranoid".to_string(), level.to_string());
        }
        // Where each uprobe was placed (object, offset, build ID): two experiments count
        // the same function only if these agree.
        if let Ok(events) = counters::parse_events(&args.events) {
            for event in &events.events {
                if let Some(placed) = perflab_sys::perf::uprobe::placement(&event.name) {
                    facts.insert(format!("probe[{}]", event.name), placed.describe());
                }
            }
            facts.extend(probe_cost::facts(&events));
        }
        if let Some(slots) = counters::fake_pmu_slots() {
            facts.insert(
                "fake_pmu".to_string(),
                format!("{}: hardware counts are made up from task-clock ({slots} counters)", counters::FAKE_PMU_ENV),
            );
        }
    }
    if args.mode == Mode::Instructions {
        let per_command: Vec<(&str, BTreeMap<String, String>)> = commands
            .iter()
            .filter_map(|c| {
                let program = perflab_sys::command::resolve_program(c.argv.first()?).ok()?;
                Some((c.name.as_str(), cachegrind::environment_facts(&program)))
            })
            .collect();
        for (name, command_facts) in &per_command {
            for (key, value) in command_facts {
                let shared = per_command.iter().all(|(_, other)| other.get(key) == Some(value));
                let key = if shared { key.clone() } else { format!("{key}[{name}]") };
                facts.insert(key, value.clone());
            }
        }
    }
    facts
}
