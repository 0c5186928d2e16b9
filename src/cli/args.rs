//! Option groups several commands share, defined once so they parse, check and default
//! alike, and their conversion into the library's plain settings.

// Doc comments here are --help text (clap), read by people on a terminal: brackets mean
// what they say, not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use crate::error::Failure;
use crate::output::Outputs;
use crate::usage;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use perflab_engine::measure::output::{Parser, FORMAT_NAMES};
use perflab_engine::measure::{MeasureOptions, Mode};
use perflab_engine::plan::SettingsLayer;
use perflab_model::metric::Better;
use perflab_model::units;
use perflab_model::Experiment;
use perflab_model::{Hooks, Iterations, Settings};
use perflab_render::dialect;
use perflab_render::export::Part;
use perflab_render::hyperfine::{HyperfineCsv, HyperfineJson};
use perflab_render::json::Json;
use perflab_render::style::{SortOrder, Style, TimeUnit};
use perflab_sys::command::{resolve_program, scan_values, Shell, DEFAULT_SHELL};
use perflab_sys::perf::counters::Scope;
use serde::Serialize;

/// clap value parsers over the library's unit parsers.
pub fn duration(text: &str) -> Result<f64, units::ParseError> {
    units::parse_duration(text)
}
/// `--estimator`: one estimator, or the choice by the rounds' shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EstimatorChoice {
    Fixed(perflab_model::Estimator),
    ByShape,
}

pub fn estimator_choice(text: &str) -> Result<EstimatorChoice, String> {
    if text == "auto" {
        return Ok(EstimatorChoice::ByShape);
    }
    perflab_model::Estimator::parse(text)
        .map(EstimatorChoice::Fixed)
        .ok_or_else(|| format!("`{text}` is not one of hodges_lehmann (or hl), median, trimmed_mean, auto"))
}

pub fn percent(text: &str) -> Result<f64, units::ParseError> {
    units::parse_percent(text)
}
pub fn confidence(text: &str) -> Result<f64, units::ParseError> {
    units::parse_confidence(text)
}

/// Help text ending in the default as clap shows it; the options are `Option`s (so a
/// suite can tell "not set" from "set to the default"), which clap cannot show a default for.
fn with_default(help: &str, default: impl std::fmt::Display) -> String {
    format!("{help} [default: {default}]")
}

/// The experiment-design options of `compare` and `run`. `None` means "not set here":
/// the defaults are layered in by `experiment::plan::settings`, never by clap.
#[derive(Debug, Args, Clone, Default)]
pub struct ExperimentArgs {
    /// Run exactly N measured rounds (no adaptive stopping).
    #[arg(short = 'r', long, visible_alias = "runs", value_name = "N")]
    pub rounds: Option<u32>,
    #[arg(short = 'm', long, visible_alias = "min-runs", value_name = "N",
          help = with_default("Rounds before the first look at the statistics (hyperfine's --min-runs)",
                              Settings::default().min_rounds))]
    pub min_rounds: Option<u32>,
    #[arg(short = 'M', long, visible_alias = "max-runs", value_name = "N",
          help = with_default("Stop after this many measured rounds even without a verdict (hyperfine's --max-runs)",
                              Settings::default().max_rounds))]
    pub max_rounds: Option<u32>,
    #[arg(long, value_name = "DURATION", value_parser = duration,
          help = with_default("Stop after this much time even without a verdict (e.g. 60, 90s, 5m)",
                              format!("{}s", Settings::default().max_time_s)))]
    pub max_time: Option<f64>,
    /// A deadline: plan the rounds to end by it (as --max-time), and say after the first
    /// look what it can resolve at the noise seen so far (e.g. 10s, 2m). `run`: the whole
    /// run's deadline, its benchmarks' rounds interleaved (docs/suites.md, "One budget").
    #[arg(long, value_name = "DURATION", value_parser = duration, conflicts_with_all = ["max_time", "rounds"])]
    pub budget: Option<f64>,
    /// How the deciding comparisons are estimated: auto (default: chosen from the rounds'
    /// shape at the looks from 20 rounds on, Hodges–Lehmann before and unless another is
    /// clearly more efficient; docs/statistics.md), hodges_lehmann or hl (signed-rank
    /// interval), median (sign-test interval), trimmed_mean (20 %, t interval)
    #[arg(long, value_name = "NAME", value_parser = estimator_choice)]
    pub estimator: Option<EstimatorChoice>,
    #[arg(long, value_name = "PCT", value_parser = percent,
          help = with_default("Equivalence margin in percent: a CI inside ±PCT is `equivalent`",
                              Settings::default().threshold * 100.0))]
    pub threshold: Option<f64>,
    /// Seed of the random round order and padding (default: random, recorded in the output).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep going when a command exits non-zero (its runs still count).
    #[arg(long, short = 'i')]
    pub ignore_failure: bool,
    #[command(flatten)]
    pub runner: RunnerArgs,
}

impl ExperimentArgs {
    /// What the command line sets, to lay over a suite's options.
    pub fn options(&self) -> SettingsLayer {
        SettingsLayer {
            rounds: self.rounds,
            warmup: self.runner.warmup,
            min_rounds: self.min_rounds,
            max_rounds: self.max_rounds,
            max_time: self.budget.or(self.max_time),
            timeout: self.runner.timeout,
            threshold: self.threshold,
            ..SettingsLayer::default()
        }
    }
}

/// How each run is executed and reported; shared by `compare`, `run` and `stat`.
#[derive(Debug, Args, Clone, Default)]
pub struct RunnerArgs {
    #[arg(short = 'w', long, value_name = "N",
          help = with_default("Warm-up runs of each command, not counted",
                              format!("{}; 0 in instruction mode", Settings::default().warmup_rounds)))]
    pub warmup: Option<u32>,
    /// Kill a run (its whole process group) after this long.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub timeout: Option<f64>,
    /// Let the commands' stdout and stderr through instead of discarding them.
    #[arg(long)]
    pub show_output: bool,
    /// Leave running what a measured command left in its process group (background
    /// children, daemons); by default the group is killed after every run, so nothing
    /// from one run runs beside the next.
    #[arg(long)]
    pub keep_children: bool,
    /// Write perflab's result as JSON, every run included (`-` for stdout; docs/json-schema.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Do not show the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

impl RunnerArgs {
    /// The progress bar is drawn only on a terminal, unless turned off.
    pub fn progress_hidden(&self) -> bool {
        self.no_progress || !std::io::IsTerminal::is_terminal(&std::io::stderr())
    }
}

/// `-e` of stat and compare: every event accepted (a test keeps it in step with
/// `measure::event::SYMBOLIC`).
pub const COUNTED_EVENTS_HELP: &str =
    "Counters to read per run via perf_event_open, in perf's syntax, comma-separated: \
cycles, instructions, branches, branch-misses, cache-references, cache-misses, bus-cycles, \
stalled-cycles-frontend, stalled-cycles-backend, ref-cycles, task-clock, cpu-clock, page-faults, minor-faults, \
major-faults, context-switches, cpu-migrations, alignment-faults, emulation-faults, L1-dcache-loads, \
L1-dcache-load-misses, L1-dcache-stores, L1-icache-load-misses, LLC-loads, LLC-load-misses, LLC-stores, \
LLC-store-misses, dTLB-loads, dTLB-load-misses, iTLB-loads, iTLB-load-misses, branch-loads, branch-load-misses \
(aliases: cpu-cycles, branch-instructions, faults, cs, migrations, idle-cycles-frontend, idle-cycles-backend); \
modifiers :u :k :h :p/:pp/:ppp (cycles:u); groups {cycles,instructions} (counted together, all-or-nothing); \
raw rUUEE (r00c0); PMU events pmu/field=value,…/ or pmu/name/ (cpu/event=0x3c,umask=0x00/, msr/tsc/); \
tracepoints subsystem:name (sched:sched_switch; root)";

/// `-e` of profile and top: every event accepted.
pub const SAMPLED_EVENT_HELP: &str = "Event to sample, in perf's syntax: cpu-clock (the default, needs no PMU), \
task-clock, page-faults, minor-faults, major-faults, context-switches, cpu-migrations, alignment-faults, \
emulation-faults, cycles, instructions, branches, branch-misses, cache-references, cache-misses, bus-cycles, \
stalled-cycles-frontend, stalled-cycles-backend, ref-cycles, L1-dcache-loads, L1-dcache-load-misses, \
L1-dcache-stores, L1-icache-load-misses, LLC-loads, LLC-load-misses, LLC-stores, LLC-store-misses, dTLB-loads, \
dTLB-load-misses, iTLB-loads, iTLB-load-misses, branch-loads, branch-load-misses (those after cpu-migrations need \
a hardware PMU); modifiers :u :k :h :p/:pp/:ppp; raw rUUEE; pmu/field=value,…/; tracepoints subsystem:name \
(sched:sched_switch, sampled at every event unless -c; root)";
/// hyperfine's output options, with its meanings (`compare`, `stat`).
#[derive(Debug, Args, Clone, Default)]
pub struct ExportArgs {
    /// Write the results in hyperfine's JSON schema, which its scripts read (perflab's
    /// ratios, intervals and verdicts under `perflab`; `-` for stdout). perflab's own
    /// JSON is --json.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<String>,
    /// Write hyperfine's summary CSV, one row per command (`-` for stdout); one row per
    /// run is --csv.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<String>,
    /// Write a Markdown summary (for a pull-request comment; `-` for stdout).
    #[arg(long, visible_alias = "export-markdown", value_name = "FILE")]
    pub markdown: Option<String>,
    /// Write the summary as an AsciiDoc table (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub export_asciidoc: Option<String>,
    /// Write the summary as an Emacs Org table (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub export_orgmode: Option<String>,
    /// The unit of times in the terminal's tables and in Markdown, AsciiDoc and Org (CSV and
    /// JSON stay in seconds; warnings keep their own) [default: the most readable per value].
    #[arg(short = 'u', long, value_name = "UNIT", value_parser = PossibleValuesParser::new(TimeUnit::NAMES)
          .map(|s| TimeUnit::named(&s).expect("a listed unit")))]
    pub time_unit: Option<TimeUnit>,
    /// Order of the commands in tables and exports: auto and command (as given, baseline
    /// first) or mean-time (fastest mean first).
    #[arg(long, value_name = "METHOD", default_value = "auto", value_parser = PossibleValuesParser::new(SortOrder::NAMES)
          .map(|s| SortOrder::named(&s).expect("a listed order")))]
    pub sort: SortOrder,
    /// auto; basic (no colours, no progress bar); full (colours even off a terminal, and the
    /// progress bar despite --no-progress); nocolor; color (colours, no progress bar); none
    /// (nothing on the terminal but warnings and errors; files are still written).
    #[arg(long, value_name = "TYPE", default_value = "auto", value_parser = PossibleValuesParser::new(OutputStyle::NAMES)
          .map(|s| OutputStyle::named(&s).expect("a listed style")))]
    pub style: OutputStyle,
}

/// hyperfine's `--style`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputStyle {
    #[default]
    Auto,
    Basic,
    Full,
    NoColor,
    Color,
    None,
}

impl OutputStyle {
    pub const NAMES: [&'static str; 6] = ["auto", "basic", "full", "nocolor", "color", "none"];

    pub fn named(name: &str) -> Option<OutputStyle> {
        Some(match name {
            "auto" => OutputStyle::Auto,
            "basic" => OutputStyle::Basic,
            "full" => OutputStyle::Full,
            "nocolor" => OutputStyle::NoColor,
            "color" => OutputStyle::Color,
            "none" => OutputStyle::None,
            _ => return None,
        })
    }

    /// Applies the colour choice (over `--color`, when the style makes one).
    pub fn apply_colors(self) {
        match self {
            OutputStyle::Basic | OutputStyle::NoColor | OutputStyle::None => perflab_render::color::init("never"),
            OutputStyle::Full | OutputStyle::Color => perflab_render::color::init("always"),
            OutputStyle::Auto => {}
        }
    }

    /// Whether the progress bar is hidden, given what the other options say.
    pub fn hides_progress(self, otherwise_hidden: bool) -> bool {
        match self {
            OutputStyle::Basic | OutputStyle::Color | OutputStyle::None => true,
            OutputStyle::Full => false,
            OutputStyle::Auto | OutputStyle::NoColor => otherwise_hidden,
        }
    }

    /// Whether the terminal report is printed.
    pub fn shows_report(self) -> bool {
        self != OutputStyle::None
    }
}

impl ExportArgs {
    /// Every file output of a result `R` holding an experiment (`experiment_of` finds it):
    /// perflab's JSON of `R` for `json`, the other formats of the experiment; checked
    /// before anything runs.
    pub fn outputs<'a, R: Serialize + 'a>(
        &self,
        json: Option<&str>,
        experiment_of: fn(&R) -> &Experiment,
    ) -> Result<Outputs<'a, R>, Failure> {
        let style = self.layout(None);
        let mut outputs = Outputs::new();
        if let Some(path) = json {
            outputs.add("--json", path, Json)?;
        }
        if let Some(path) = &self.export_json {
            outputs.add("--export-json", path, Part(HyperfineJson, experiment_of))?;
        }
        if let Some(path) = &self.export_csv {
            outputs.add("--export-csv", path, Part(HyperfineCsv, experiment_of))?;
        }
        if let Some(path) = &self.markdown {
            let summary = dialect::Summary { dialect: dialect::Markdown, style };
            outputs.add("--markdown", path, Part(summary, experiment_of))?;
        }
        if let Some(path) = &self.export_asciidoc {
            let summary = dialect::Summary { dialect: dialect::AsciiDoc, style };
            outputs.add("--export-asciidoc", path, Part(summary, experiment_of))?;
        }
        if let Some(path) = &self.export_orgmode {
            let summary = dialect::Summary { dialect: dialect::Org, style };
            outputs.add("--export-orgmode", path, Part(summary, experiment_of))?;
        }
        Ok(outputs)
    }

    /// The time unit and order, for tables `width` wide.
    pub fn layout(&self, width: Option<usize>) -> Style {
        Style { time_unit: self.time_unit, sort: self.sort, width }
    }
}

/// What a run measures besides time: counters or instruction mode.
#[derive(Debug, Clone, Args, Default)]
pub struct MeasureArgs {
    #[arg(short = 'e', long = "events", value_name = "EVENTS", help = COUNTED_EVENTS_HELP)]
    pub events: Vec<String>,
    /// wall: time each run natively; instructions: run under valgrind cachegrind.
    #[arg(long, default_value = "wall",
          value_parser = PossibleValuesParser::new(Mode::NAMES).map(|s| s.parse::<Mode>().expect("a listed mode")))]
    pub mode: Mode,
    /// Count user mode only, or user+kernel (auto: user+kernel when perf_event_paranoid
    /// or CAP_PERFMON allows it).
    #[arg(long, default_value = "auto", value_name = "SCOPE",
          value_parser = PossibleValuesParser::new(Scope::NAMES).map(|s| s.parse::<Scope>().expect("a listed scope")))]
    pub counter_scope: Scope,
    /// Whose events -e counts during each run: `command` (it, its threads and children),
    /// `comm:NAME` (running processes of that name and the children they start, e.g. a
    /// server's backends: `comm:postgres`), `pid:PID` (a process and its descendants) or
    /// `system` (every process). Times are still the command's.
    #[arg(long, default_value = "command", value_name = "WHOM")]
    pub count_in: perflab_sys::perf::counters::CountIn,
}

impl MeasureArgs {
    /// With the parsers of `output` (see [`OutputArgs::options`]).
    pub fn options(&self, output: &SettingsLayer) -> MeasureOptions {
        MeasureOptions {
            events: self.events.clone(),
            mode: self.mode,
            counter_scope: self.counter_scope,
            count_in: self.count_in.clone(),
            output: output.output.clone().unwrap_or_default(),
            iterations: output.iterations.unwrap_or_default(),
            explain: None,
        }
    }
}

/// Metrics the commands print about themselves (`compare`, `stat`).
#[derive(Debug, Clone, Args, Default)]
pub struct OutputArgs {
    /// A metric the command prints, as a regular expression whose named captures are
    /// the metrics, e.g. 'tps = (?<tps>[0-9.]+)'. Every match is one sample (an
    /// iteration); stdout, then stderr, is searched. Repeatable.
    #[arg(long = "output-metric", value_name = "REGEX")]
    pub output_metrics: Vec<String>,
    /// Read the metrics of a known output: pgbench (tps, latency_ms), google-benchmark
    /// (NAME:real_ns, NAME:cpu_ns, …), jsonl (lines {"metric": NAME, "value": NUMBER}).
    #[arg(long = "parse", value_name = "FORMAT", value_parser = PossibleValuesParser::new(FORMAT_NAMES))]
    pub parse: Vec<String>,
    /// Metrics where more is better (names ending in _per_s, tps and qps already are).
    #[arg(long, value_delimiter = ',', value_name = "METRIC")]
    pub higher_is_better: Vec<String>,
    /// Metrics where less is better (the default for other names).
    #[arg(long, value_delimiter = ',', value_name = "METRIC")]
    pub lower_is_better: Vec<String>,
    /// Which iterations of a metric printed several times per run make the run's value:
    /// all (their mean), first (the first --warmup-iterations: the cold start), steady (the
    /// mean of those after them), each (all decides; NAME[first] and NAME[steady] get
    /// their own verdicts), or a number N: the N-th value each run printed alone (one
    /// statement of several timed the same way).
    #[arg(long, default_value = "all", value_name = "all|first|steady|each|N",
          value_parser = |s: &str| Iterations::named(s, 1).map(|_| s.to_string()).map_err(|e| e.to_string()))]
    pub iterations: String,
    /// Iterations in the first group (left out of the steady state).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub warmup_iterations: u32,
}

impl OutputArgs {
    /// The parsers, directions and iteration choice, as options to lay over the rest.
    pub fn options(&self) -> Result<SettingsLayer, Failure> {
        let mut parsers = Vec::new();
        for format in &self.parse {
            parsers.push(Parser::format(format)?);
        }
        for text in &self.output_metrics {
            parsers.push(Parser::regex(text)?);
        }
        let mut better = std::collections::BTreeMap::new();
        for (names, direction) in [(&self.higher_is_better, Better::Higher), (&self.lower_is_better, Better::Lower)] {
            for name in names {
                if better.insert(name.clone(), direction).is_some_and(|d| d != direction) {
                    return Err(usage!("`{name}` is given both --higher-is-better and --lower-is-better"));
                }
            }
        }
        Ok(SettingsLayer {
            output: (!parsers.is_empty()).then_some(parsers),
            better: (!better.is_empty()).then_some(better),
            iterations: Some(Iterations::named(&self.iterations, self.warmup_iterations)?),
            ..SettingsLayer::default()
        })
    }
}

/// Commands run around the measured ones, and their input (hyperfine's spellings).
#[derive(Debug, Clone, Args, Default)]
pub struct HookArgs {
    /// Run CMD (through sh -c) before every run, not timed; give it once for all
    /// commands or once per command. A failure stops with exit 3.
    #[arg(long, value_name = "CMD")]
    pub prepare: Vec<String>,
    /// Run CMD after every run, not timed (once, or once per command).
    #[arg(short = 'C', long, value_name = "CMD")]
    pub conclude: Vec<String>,
    /// Run CMD once before the first round (once, or once per command).
    #[arg(short = 's', long, value_name = "CMD")]
    pub setup: Vec<String>,
    /// Run CMD once after the last round, also after a failure or an interrupt (once, or
    /// once per command).
    #[arg(short = 'c', long, value_name = "CMD")]
    pub cleanup: Vec<String>,
    /// Give every run FILE as its standard input (default: /dev/null).
    #[arg(long, value_name = "FILE")]
    pub input: Option<String>,
}

impl HookArgs {
    /// The hooks of each of `count` commands (a hook given once applies to all), or
    /// none at all.
    pub fn per_command(&self, count: usize) -> Result<Vec<Hooks>, Failure> {
        if self.prepare.is_empty() && self.conclude.is_empty() && self.setup.is_empty() && self.cleanup.is_empty() {
            return Ok(Vec::new());
        }
        let pick = |values: &[String], flag: &str| -> Result<Vec<Option<String>>, Failure> {
            match values.len() {
                0 => Ok(vec![None; count]),
                1 => Ok(vec![Some(values[0].clone()); count]),
                n if n == count => Ok(values.iter().cloned().map(Some).collect()),
                n => Err(usage!("{flag} is given {n} times for {count} commands: give it once, or once per command")),
            }
        };
        let prepare = pick(&self.prepare, "--prepare")?;
        let conclude = pick(&self.conclude, "--conclude")?;
        let setup = pick(&self.setup, "--setup")?;
        let cleanup = pick(&self.cleanup, "--cleanup")?;
        Ok((0..count)
            .map(|i| Hooks {
                prepare: prepare[i].clone(),
                conclude: conclude[i].clone(),
                setup: setup[i].clone(),
                cleanup: cleanup[i].clone(),
            })
            .collect())
    }
}

/// Parameters substituted into the command templates (`compare`).
#[derive(Debug, Clone, Args, Default)]
pub struct ParameterArgs {
    /// Run each command once per value: `{NAME}` in a command (its --name and hooks)
    /// becomes each of the comma-separated VALUES. Repeat for every combination.
    #[arg(short = 'L', long = "parameter-list", num_args = 2, value_names = ["NAME", "VALUES"])]
    pub lists: Vec<String>,
    /// Like --parameter-list with the values LO, LO+STEP, … up to HI.
    #[arg(short = 'P', long = "parameter-scan", num_args = 3, value_names = ["NAME", "LO", "HI"])]
    pub scans: Vec<String>,
    /// The step of --parameter-scan (default 1).
    #[arg(short = 'D', long = "parameter-step-size", value_name = "STEP", requires = "scans")]
    pub step: Option<String>,
}

impl ParameterArgs {
    /// Every parameter with its values, in the order given (lists first).
    pub fn parameters(&self) -> Result<Vec<(String, Vec<String>)>, Failure> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        // clap gives every occurrence's values in one list: two per -L, three per -P.
        for list in self.lists.chunks_exact(2) {
            out.push((list[0].clone(), list[1].split(',').map(str::to_string).collect()));
        }
        for scan in self.scans.chunks_exact(3) {
            out.push((scan[0].clone(), scan_values(&scan[1], &scan[2], self.step.as_deref())?));
        }
        for (i, (name, _)) in out.iter().enumerate() {
            if out[..i].iter().any(|(n, _)| n == name) {
                return Err(usage!("parameter `{name}` is given twice"));
            }
        }
        Ok(out)
    }
}

/// How commands run: directly, or through a shell (`compare`, `stat`, `doctor`), as
/// hyperfine spells it.
#[derive(Debug, Args, Clone, Default)]
pub struct ShellArgs {
    /// Run every command through SHELL -c (`-S bash`, `--shell=zsh`, `--shell 'bash --norc'`;
    /// `default` is /bin/sh, `none` the same as -N). Without it commands run directly, and
    /// a command with shell syntax (| > < ; && $( ) * ~ …) sends every command through
    /// /bin/sh -c, with a note saying so.
    // An optional value, not `require_equals`: `--shell zsh A B` names zsh, as in
    // hyperfine, while a bare `--shell` before an option or `--` still means /bin/sh.
    #[arg(short = 'S', long, value_name = "SHELL", num_args = 0..=1, default_missing_value = DEFAULT_SHELL)]
    pub shell: Option<String>,
    /// Never use a shell (hyperfine's -N): a command with shell syntax is refused instead
    /// of running with its operators as arguments.
    #[arg(short = 'N', long = "no-shell", conflicts_with = "shell")]
    pub no_shell: bool,
}

impl ShellArgs {
    /// The shell choice, the program checked to exist.
    pub fn shell(&self) -> Result<Shell, Failure> {
        if self.no_shell {
            return Ok(Shell::Never);
        }
        let shell = Shell::named(self.shell.as_deref())?;
        if let Shell::Always(words) = &shell {
            resolve_program(&words[0]).map_err(|e| {
                usage!(
                    "--shell `{}`: {e} (--shell takes the shell as its value: `-S bash CMD…`, `--shell=/bin/sh`)",
                    words.join(" ")
                )
            })?;
        }
        Ok(shell)
    }
}

/// Which history database to use (every store command takes it).
#[derive(Debug, Clone, Args, Default)]
pub struct DbArgs {
    /// The history database: a SQLite file or a postgres:// URL
    /// [env: PERFLAB_DB; default: .perflab/perflab.db].
    #[arg(long = "db", value_name = "URL")]
    pub db: Option<String>,
}

impl DbArgs {
    /// Open (and create, when missing) the database, for commands that write to it.
    pub fn open(&self) -> Result<perflab_store::Store, crate::error::Failure> {
        Ok(perflab_store::Store::open(self.db.as_deref())?)
    }

    /// Open an existing database to change it (`queue --cancel`); never creates one.
    pub fn open_existing_to_write(&self) -> Result<perflab_store::Store, crate::error::Failure> {
        Ok(perflab_store::Store::open_existing_to_write(self.db.as_deref())?)
    }

    /// Open an existing database for reading; never creates or writes one. Says so when the
    /// database could only be opened read-only.
    pub fn open_existing(&self) -> Result<perflab_store::Store, crate::error::Failure> {
        let store = perflab_store::Store::open_existing(self.db.as_deref())?;
        if let Some(how) = store.read_only() {
            let what = match how {
                perflab_store::sqlite::ReadOnly::Shared => "",
                perflab_store::sqlite::ReadOnly::Immutable => {
                    " as immutable (its filesystem is read-only; nothing can change it meanwhile)"
                }
                perflab_store::sqlite::ReadOnly::ImmutableWithoutWal => {
                    " as immutable (no WAL index can be made here; a change made meanwhile would not be seen)"
                }
            };
            eprintln!(
                "perflab: note: {} is not writable here: opened read-only{what}",
                perflab_render::terminal::escape(store.location())
            );
        }
        Ok(store)
    }
}

/// `compare --save`: store the comparison in the history too.
#[derive(Debug, Clone, Args, Default)]
pub struct SaveArgs {
    /// Store the result in the history database.
    #[arg(long)]
    pub save: bool,
    /// Label to store it under (default: the git commit, else the time).
    #[arg(long, value_name = "LABEL", requires = "save")]
    pub label: Option<String>,
    /// Benchmark name to store it under (default: the command names joined by ` vs `).
    #[arg(long = "bench", value_name = "NAME", requires = "save")]
    pub bench: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Which builds and benchmarks of a suite run (`run` and `queue`).
#[derive(Debug, Args)]
pub struct SelectionArgs {
    /// The build measured (default: the build named like --label, if any).
    #[arg(long, value_name = "BUILD")]
    pub build: Option<String>,
    /// A build to compare against in interleaved rounds (a name from [builds]).
    #[arg(long, value_name = "BUILD")]
    pub baseline: Option<String>,
    /// Only benchmarks whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub filter: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbolic_event_and_alias_is_in_the_help_of_stat_and_profile() {
        for (name, aliases, _) in perflab_sys::perf::event::SYMBOLIC {
            assert!(SAMPLED_EVENT_HELP.contains(name), "profile --help lacks {name}");
            for n in std::iter::once(name).chain(aliases.iter()) {
                assert!(COUNTED_EVENTS_HELP.contains(n), "stat --help lacks {n}");
            }
        }
    }
}
