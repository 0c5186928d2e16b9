//! What can go wrong turning the user's command lines, names and parameters into
//! commands to run, and running a helper script, as typed errors.

use std::path::PathBuf;
use thiserror::Error;

/// Bad input in a command, its name, program or parameters (the binary maps it to exit
/// code 2).
#[derive(Debug, Error)]
pub enum CommandError {
    // `/bin/sh` is `command::DEFAULT_SHELL`, written out: this file must not import
    // the module that imports it.
    #[error("command `{command}` has shell syntax ({syntax}), and -N (--no-shell) runs commands without a shell; drop -N to run it with /bin/sh -c, or quote the characters meant literally")]
    ShellSyntaxRefused { command: String, syntax: String },
    #[error("--shell `{0}` is empty or cannot be split into words")]
    BadShell(String),
    #[error("{names} --name given for {commands} commands")]
    MoreNamesThanCommands { names: usize, commands: usize },
    #[error("cannot split command `{command}`: {source}")]
    Unsplittable {
        command: String,
        #[source]
        source: shell_words::ParseError,
    },
    /// The 1-based position of an empty command.
    #[error("command {0} is empty")]
    EmptyCommand(usize),
    #[error("two commands are named `{0}`; give each a distinct --name")]
    DuplicateName(String),
    #[error("program `{0}` does not exist")]
    NoSuchProgram(String),
    #[error("program `{program}` not found on PATH")]
    NotOnPath {
        program: String,
        #[source]
        source: which::Error,
    },
    #[error("cannot inspect `{}`: {source}", path.display())]
    Uninspectable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is a directory, not a program", .0.display())]
    Directory(PathBuf),
    #[error("`{}` is not executable", .0.display())]
    NotExecutable(PathBuf),
    #[error("parameter name `{0}`: expected letters, digits, `_` or `-`")]
    BadParameterName(String),
    #[error("parameter `{0}` needs non-empty values")]
    EmptyParameterValues(String),
    #[error("`{{{placeholder}}}` in `{template}` is not a parameter (-L/-P); write `{{{{{placeholder}}}}}` for literal braces")]
    UnknownPlaceholder { placeholder: String, template: String },
    /// `what` names the scan's part: "--parameter-scan's start", ...
    #[error("{what} `{text}` is not a number")]
    ScanNotANumber { what: &'static str, text: String },
    #[error("--parameter-step-size `{0}` must be positive")]
    ScanStepNotPositive(String),
    #[error("--parameter-scan goes from {low} down to {high}: give the smaller value first")]
    ScanDescending { low: String, high: String },
    #[error("--parameter-scan from {low} to {high} by {step} gives {count} values (at most {max})")]
    ScanTooLong { low: String, high: String, step: String, count: usize, max: usize },
    /// Parameters whose combinations are counted before they are expanded.
    #[error("the parameters make {count} commands ({product}), more than perflab's limit of {limit}")]
    TooManyCombinations { count: String, product: String, limit: u64 },
}

/// A helper script (a build step, a suite's setup or cleanup, a `--cleanup`) that
/// could not run or failed; what its caller maps it to depends on what the script was.
#[derive(Debug, Error)]
pub enum ScriptError {
    #[error("cannot run /bin/sh: {0}")]
    Spawn(#[source] std::io::Error),
    /// `last_line`: the last non-empty line the script wrote to stderr, when captured.
    #[error("`{script}` {status}{}", last_line.as_ref().map(|l| format!(": {l}")).unwrap_or_default())]
    Failed { script: String, status: std::process::ExitStatus, last_line: Option<String> },
}
