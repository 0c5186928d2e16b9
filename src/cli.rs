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
    /// Store results from a hyperfine or perflab JSON file in the history database.
    Import(crate::store::exchange::ImportArgs),
    /// Write stored results as JSON.
    Export(crate::store::exchange::ExportArgs),
    /// Each benchmark over labels, per machine, with change points.
    History(crate::history::HistoryArgs),
    /// Write one self-contained HTML report: relative time vs a reference label, history, counters, machine.
    Report(crate::report::ReportArgs),
}

/// Parse the command line, run, print any failure as one line, and return the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version to stdout with exit 0, usage errors to stderr with 2.
            let code = if err.use_stderr() { crate::error::EXIT_USAGE } else { EXIT_OK };
            let _ = err.print();
            return code;
        }
    };
    crate::render::color::init(&cli.color);
    let result = match cli.command {
        Command::Compare(args) => crate::compare::main(args),
        Command::Import(args) => crate::store::exchange::import_main(args),
        Command::Export(args) => crate::store::exchange::export_main(args),
        Command::History(args) => crate::history::main(args),
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
