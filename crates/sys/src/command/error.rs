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
    /// `--no-shell` was given for a command that needs a shell.
    #[error("command `{command}` has shell syntax ({syntax}), and -N (--no-shell) runs commands without a shell; drop -N to run it with /bin/sh -c, or quote the characters meant literally")]
    ShellSyntaxRefused {
        /// The command as typed.
        command: String,
        /// The first shell syntax found in it (`>`, `$(`, …).
        syntax: String,
    },
    /// The `--shell` given is empty or not valid shell words.
    #[error("--shell `{0}` is empty or cannot be split into words")]
    BadShell(String),
    /// More `--name`s than commands.
    #[error("{names} --name given for {commands} commands")]
    MoreNamesThanCommands {
        /// `--name`s given.
        names: usize,
        /// Commands given.
        commands: usize,
    },
    /// A command line is not valid shell words (an unclosed quote) and runs without a shell.
    #[error("cannot split command `{command}`: {source}")]
    Unsplittable {
        /// The command as typed.
        command: String,
        /// What the word splitter found.
        #[source]
        source: shell_words::ParseError,
    },
    /// The 1-based position of an empty command.
    #[error("command {0} is empty")]
    EmptyCommand(usize),
    /// Two commands have the same name.
    #[error("two commands are named `{0}`; give each a distinct --name")]
    DuplicateName(String),
    /// The program, given as a path, does not exist.
    #[error("program `{0}` does not exist")]
    NoSuchProgram(String),
    /// The program, given by name, is not on PATH.
    #[error("program `{program}` not found on PATH")]
    NotOnPath {
        /// The program's name.
        program: String,
        /// Why the PATH lookup failed.
        #[source]
        source: which::Error,
    },
    /// The program's file cannot be examined (permissions, I/O).
    #[error("cannot inspect `{}`: {source}", path.display())]
    Uninspectable {
        /// The program's path.
        path: PathBuf,
        /// The error of the `stat` call.
        #[source]
        source: std::io::Error,
    },
    /// The program named is a directory.
    #[error("`{}` is a directory, not a program", .0.display())]
    Directory(PathBuf),
    /// The program has no execute permission.
    #[error("`{}` is not executable", .0.display())]
    NotExecutable(PathBuf),
    /// A `-L`/`-P` parameter name with characters other than letters, digits, `_` and `-`.
    #[error("parameter name `{0}`: expected letters, digits, `_` or `-`")]
    BadParameterName(String),
    /// A `-L` parameter with no values, or an empty one.
    #[error("parameter `{0}` needs non-empty values")]
    EmptyParameterValues(String),
    /// A `{name}` in a command that no parameter defines.
    #[error("`{{{placeholder}}}` in `{template}` is not a parameter (-L/-P); write `{{{{{placeholder}}}}}` for literal braces")]
    UnknownPlaceholder {
        /// The name between the braces.
        placeholder: String,
        /// The command it is in.
        template: String,
    },
    /// `what` names the scan's part: "--parameter-scan's start", ...
    #[error("{what} `{text}` is not a number")]
    ScanNotANumber {
        /// Which part of the scan it is.
        what: &'static str,
        /// The text given.
        text: String,
    },
    /// `--parameter-step-size` is zero or negative.
    #[error("--parameter-step-size `{0}` must be positive")]
    ScanStepNotPositive(String),
    /// `--parameter-scan` gives the larger bound first.
    #[error("--parameter-scan goes from {low} down to {high}: give the smaller value first")]
    ScanDescending {
        /// The first bound, as typed.
        low: String,
        /// The second bound, as typed.
        high: String,
    },
    /// `--parameter-scan` gives more values than perflab accepts.
    #[error("--parameter-scan from {low} to {high} by {step} gives {count} values (at most {max})")]
    ScanTooLong {
        /// The start, as typed.
        low: String,
        /// The end, as typed.
        high: String,
        /// The step, as typed.
        step: String,
        /// Values the scan gives.
        count: usize,
        /// Most values accepted.
        max: usize,
    },
    /// Parameters whose combinations are counted before they are expanded.
    #[error("the parameters make {count} commands ({product}), more than perflab's limit of {limit}")]
    TooManyCombinations {
        /// Commands the parameters make (`more than …` when it overflows).
        count: String,
        /// The factors multiplied, for the message (`3 values of cc × 4 of opt`).
        product: String,
        /// Most commands perflab expands.
        limit: u64,
    },
}

/// A helper script (a build step, a suite's setup or cleanup, a `--cleanup`) that
/// could not run or failed; what its caller maps it to depends on what the script was.
#[derive(Debug, Error)]
pub enum ScriptError {
    /// `/bin/sh` could not be started.
    #[error("cannot run /bin/sh: {0}")]
    Spawn(#[source] std::io::Error),
    /// `last_line`: the last non-empty line the script wrote to stderr, when captured.
    #[error("`{script}` {status}{}", last_line.as_ref().map(|l| format!(": {l}")).unwrap_or_default())]
    Failed {
        /// The script, as given.
        script: String,
        /// How it ended.
        status: std::process::ExitStatus,
        /// The last non-empty line it wrote to stderr, when captured.
        last_line: Option<String>,
    },
}
