//! The command line: parses arguments with clap and dispatches to the library.

use crate::error::{Failure, EXIT_OK};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "perflab", version, about = "A performance lab for native code on Linux")]
pub struct Cli {
    /// When to use colours: auto (only on a terminal, honouring NO_COLOR), always, never.
    #[arg(long, global = true, default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub color: String,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compare two or more commands in randomized interleaved rounds (the first is the baseline).
    Compare(crate::compare::CompareArgs),
    /// Run one command N times and report every metric and counter: median, 95 % CI, spread.
    Stat(crate::stat::StatArgs),
    /// Sample a command (cpu-clock by default, no PMU needed), save and report its profile.
    Profile(crate::profile::ProfileArgs),
    /// Report a saved profile (by function, source line, object or source region).
    Show(crate::profile::ShowArgs),
    /// Disassemble hot functions of a saved profile with per-instruction samples and cost hints.
    Annotate(crate::profile::annotate::AnnotateArgs),
    /// Compare two saved profiles function by function, sorted by contribution to the change.
    Diff(crate::profile::diff::DiffArgs),
    /// Store results from a hyperfine or perflab JSON file in the history database.
    Import(crate::store::exchange::ImportArgs),
    /// Write stored results as JSON.
    Export(crate::store::exchange::ExportArgs),
    /// Run every benchmark of a suite file and store the results under a label.
    Run(crate::run::RunArgs),
    /// Each benchmark over labels, per machine, with change points.
    History(crate::history::HistoryArgs),
    /// Find the commit that made a benchmark slower (git bisect with the compare engine).
    Bisect(crate::bisect::BisectArgs),
    /// Write one self-contained HTML report: relative time vs a reference label, history, counters, machine.
    Report(crate::report::ReportArgs),
}

/// Parse the command line, run, print any failure as one line, and return the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // Help and version go to stdout in full; a usage error is one line.
            if !err.use_stderr() {
                let _ = err.print();
                return EXIT_OK;
            }
            // clap's message runs until the first blank line (a missing-arguments error
            // lists the arguments on the following lines); the rest is usage and a tip.
            let rendered = err.render().to_string();
            let message: Vec<&str> = rendered.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
            let message = message.join(" ");
            eprintln!("perflab: error: {} (see --help)", message.trim_start_matches("error: ").trim());
            return crate::error::EXIT_USAGE;
        }
    };
    crate::render::color::init(&cli.color);
    let result = match cli.command {
        Command::Compare(args) => crate::compare::main(args),
        Command::Stat(args) => crate::stat::main(args),
        Command::Profile(args) => crate::profile::main_profile(args),
        Command::Show(args) => crate::profile::main_show(args),
        Command::Annotate(args) => crate::profile::annotate::main_annotate(args),
        Command::Diff(args) => crate::profile::diff::main_diff(args),
        Command::Import(args) => crate::store::exchange::import_main(args),
        Command::Export(args) => crate::store::exchange::export_main(args),
        Command::Run(args) => crate::run::main(args),
        Command::History(args) => crate::history::main(args),
        Command::Bisect(args) => crate::bisect::main(args),
        Command::Report(args) => crate::report::main(args),
    };
    match result {
        Ok(code) => code,
        Err(failure) => report_failure(&failure),
    }
}

fn report_failure(failure: &Failure) -> i32 {
    match failure {
        Failure::Interrupted => eprintln!("perflab: interrupted"),
        Failure::Other(err) => eprintln!("perflab: error: {err:#}"),
        other => eprintln!("perflab: error: {other}"),
    }
    failure.exit_code()
}
