//! The command line — the only place that knows clap. Each command's arguments live in
//! their own file with the code that turns them into the library's plain settings, runs
//! the library and renders what it returns; failures travel as typed
//! [`Failure`]s to [`main`], which prints one line and returns the documented exit code.

pub mod args;
pub mod compare;
pub mod compare_args;
pub mod doctor;
pub mod fleet;
pub mod layout_cache;
pub mod layouts;
pub mod profile;
pub mod run;
pub mod stat;
pub mod store;
pub mod top;

use crate::error::{Failure, EXIT_OK, EXIT_USAGE};
use clap::{CommandFactory, Parser, Subcommand};
use perflab_model::{Experiment, StopReason};

#[derive(Debug, Parser)]
#[command(name = "perflab", version, about = "A performance lab for native code on Linux")]
pub struct Cli {
    /// When to use colours: auto (only on a terminal, honouring NO_COLOR), always, never.
    #[arg(long, global = true, default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub color: String,
    /// Print tables whole, however wide the terminal (piped output always is).
    #[arg(long, global = true)]
    pub wide: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compare two or more commands in randomized interleaved rounds (the first is the baseline).
    Compare(Box<compare::CompareArgs>),
    /// Run one command N times and report every metric and counter: median, 95 % CI, spread.
    Stat(Box<stat::StatArgs>),
    /// What on this machine disturbs measurements, with fixes; given a command, calibrate its noise.
    Doctor(doctor::DoctorArgs),
    /// Sample a command (cpu-clock by default, no PMU needed), save and report its profile.
    Profile(profile::ProfileArgs),
    /// Live view of the hottest functions (kernel and user) of every CPU, -p PID or a command.
    Top(profile::TopArgs),
    /// Report a saved profile (by function, source line, object or source region).
    Show(profile::ShowArgs),
    /// Disassemble hot functions of a saved profile with per-instruction samples and cost hints.
    Annotate(profile::AnnotateArgs),
    /// Compare two saved profiles function by function, sorted by contribution to the change.
    Diff(profile::DiffArgs),
    /// Store results from a hyperfine or perflab JSON file in the history database.
    Import(store::ImportArgs),
    /// Write stored results as JSON.
    Export(store::ExportArgs),
    /// Run every benchmark of a suite file and store the results under a label.
    Run(run::RunArgs),
    /// Each benchmark over labels, per machine, with change points.
    History(store::HistoryArgs),
    /// Find the commit that made a benchmark slower (git bisect with the compare engine).
    Bisect(run::BisectArgs),
    /// Write one self-contained HTML report: relative time vs a reference label, history, counters, machine.
    Report(store::HtmlReportArgs),
    /// Queue a suite run for a fleet of machines sharing the database (or list, cancel jobs).
    Queue(fleet::QueueArgs),
    /// Run queued jobs on this machine: claim, build, run, store under this machine's fingerprint.
    Agent(fleet::AgentArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one page per command into DIR.
    Man {
        /// Write perflab.1 and perflab-COMMAND.1 into this directory instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

/// Parse the command line, run, print any failure as one line, and return the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return parse_error(err),
    };
    perflab_render::color::init(&cli.color);
    perflab_render::table::set_wide(cli.wide);
    // A uprobe on a stripped object finds its symbols where profiles find names: the
    // debuginfod client lives above perflab-sys, which places the probes.
    perflab_sys::perf::uprobe::set_debug_fetcher(|build_id| match perflab_profile::debuginfod::debuginfo(build_id) {
        perflab_profile::debuginfod::Fetched::Cached(path)
        | perflab_profile::debuginfod::Fetched::Downloaded { path, .. } => Some(path),
        _ => None,
    });
    let Some(command) = cli.command else {
        // `perflab` alone is a request for help, like `cargo` alone.
        crate::output::stdout::write(&Cli::command().render_help().to_string());
        return finish(Ok(()));
    };
    let result = match command {
        Command::Compare(args) => compare::main(*args),
        Command::Stat(args) => stat::main(*args),
        Command::Doctor(args) => doctor::main(args),
        Command::Profile(args) => profile::main_profile(args),
        Command::Top(args) => profile::main_top(args),
        Command::Show(args) => profile::main_show(args),
        Command::Annotate(args) => profile::main_annotate(args),
        Command::Diff(args) => profile::main_diff(args),
        Command::Import(args) => store::main_import(args),
        Command::Export(args) => store::main_export(args),
        Command::Run(args) => run::main(args),
        Command::History(args) => store::main_history(args),
        Command::Bisect(args) => run::main_bisect(args),
        Command::Report(args) => store::main_report(args),
        Command::Queue(args) => fleet::main_queue(args),
        Command::Agent(args) => fleet::main_agent(args),
        Command::Completions { shell } => {
            // clap_complete panics when its writer fails: it writes to memory here.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "perflab", &mut script);
            crate::output::stdout::write_bytes(&script);
            Ok(())
        }
        Command::Man { dir } => man(dir),
    };
    finish(result)
}

/// The exit code of a command's result, after its one-line failure. A failed stdout (a
/// full disk, `| head` gone) comes last: every file and stored run was written by then.
/// The command's own failure (a gate, an interrupt) decides the code; a closed pipe alone
/// ends silently with 141, as cat and grep do.
fn finish(result: Result<(), Failure>) -> i32 {
    let stdout = crate::output::stdout::take_failure().map(Failure::Stdout);
    let mut code = EXIT_OK;
    for failure in [stdout, result.err()].into_iter().flatten() {
        if !failure.is_silent() {
            eprintln!("{}", failure.line());
        }
        code = failure.exit_code();
    }
    code
}

/// Help and version go to stdout in full; a usage error is one line, with clap's
/// "did you mean" tip kept.
fn parse_error(err: clap::Error) -> i32 {
    if !err.use_stderr() {
        crate::output::stdout::write(&err.render().to_string());
        return finish(Ok(()));
    }
    eprintln!("{}", crate::error::printable_line(&one_line(&err.render().to_string())));
    EXIT_USAGE
}

/// clap's message runs until the first blank line (a missing-arguments error lists the
/// arguments on the following lines); a `tip:` paragraph may follow; the rest is usage.
fn one_line(rendered: &str) -> String {
    let mut paragraphs = rendered.split("\n\n");
    let message: Vec<&str> =
        paragraphs.next().unwrap_or_default().lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let tips: Vec<&str> = paragraphs
        .flat_map(str::lines)
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("tip: "))
        .filter(|tip| tip.contains("similar"))
        .collect();
    let mut line = format!("perflab: error: {}", message.join(" ").trim_start_matches("error: ").trim());
    for tip in tips {
        line += &format!(" ({tip})");
    }
    line + " (see --help)"
}

fn man(dir: Option<std::path::PathBuf>) -> Result<(), Failure> {
    let cli = Cli::command();
    let Some(dir) = dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cli).render(&mut page).map_err(|e| Failure::Other(e.into()))?;
        crate::output::stdout::write_bytes(&page);
        return Ok(());
    };
    std::fs::create_dir_all(&dir).map_err(|e| crate::usage!("cannot create {}: {e}", dir.display()))?;
    let write = |name: String, command: clap::Command| -> Result<(), Failure> {
        let path = dir.join(format!("{name}.1"));
        let mut file =
            std::fs::File::create(&path).map_err(|e| crate::usage!("cannot write {}: {e}", path.display()))?;
        clap_mangen::Man::new(command.name(name)).render(&mut file).map_err(|e| Failure::Other(e.into()))
    };
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        write(format!("perflab-{}", sub.get_name()), sub.clone())?;
    }
    write("perflab".to_string(), cli)
}

/// What an experiment's stop means for the command's outcome: an interrupt or a failed
/// command becomes the failure `main` reports (after the results were written).
pub fn outcome(experiment: &Experiment, unit: &str) -> Result<(), Failure> {
    match experiment.stop_reason {
        StopReason::Interrupted => Err(Failure::Interrupted(format!(
            "interrupted after {} {unit}; the results above cover them",
            experiment.rounds
        ))),
        StopReason::CommandFailed => {
            Err(Failure::CommandFailed(experiment.failure.clone().unwrap_or_else(|| "a command failed".into())))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_are_one_line_with_the_suggestion() {
        let err = Cli::try_parse_from(["perflab", "comapre"]).unwrap_err();
        let line = one_line(&err.render().to_string());
        assert!(!line.contains('\n'), "{line}");
        assert!(line.contains("'comapre'") && line.contains("'compare'"), "{line}");
        let err = Cli::try_parse_from(["perflab", "compare", "--treshold", "1", "a", "b"]).unwrap_err();
        let line = one_line(&err.render().to_string());
        assert!(line.contains("--threshold"), "{line}");
    }

    #[test]
    fn short_flags_mean_one_thing_across_commands() {
        // Every short flag, with the long name it stands for, per command: a letter may
        // not stand for two different options (a global flag is seen by every command).
        let mut meanings: std::collections::BTreeMap<char, std::collections::BTreeSet<String>> = Default::default();
        for sub in Cli::command().get_subcommands() {
            for arg in sub.get_arguments() {
                if let (Some(short), Some(long)) = (arg.get_short(), arg.get_long()) {
                    meanings.entry(short).or_default().insert(long.to_string());
                }
            }
        }
        // `-e` selects perf events in every command (several to count, one to sample);
        // `-l` is a label, `-o` an output file, `-m`/`-M` hyperfine's --min-runs/--max-runs.
        // `-c` is each origin's: hyperfine's `--cleanup` for benchmarks, perf record's
        // `--count` (a sample every N events) for `profile`.
        let allowed = [('e', ["event", "events"].as_slice()), ('c', ["cleanup", "count"].as_slice())];
        for (short, longs) in meanings {
            let fine =
                allowed.iter().any(|(c, names)| *c == short && longs.iter().all(|l| names.contains(&l.as_str())));
            assert!(longs.len() == 1 || fine, "-{short} means {longs:?}");
        }
    }
}
