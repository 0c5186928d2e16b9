//! perflab's documented exit codes (README, "Exit codes"). The `perflab` binary maps
//! every failure to one of them; the few places below it that must end a process
//! themselves (the spawner helper, a SIGBUS on a truncated database) use the same
//! numbers.

/// Done.
pub const EXIT_OK: i32 = 0;
/// A `--fail-if-slower` gate tripped.
pub const EXIT_GATE: i32 = 1;
/// Usage error or bad input; also an output that could not be written.
pub const EXIT_USAGE: i32 = 2;
/// A benchmarked command failed, was killed or timed out.
pub const EXIT_COMMAND_FAILED: i32 = 3;
/// `run --gate`: no regression found, but some compared benchmark ended undecided.
pub const EXIT_UNDECIDED: i32 = 4;
/// Interrupted (Ctrl-C / SIGTERM); what was measured is kept.
pub const EXIT_INTERRUPTED: i32 = 130;
/// 128 + SIGPIPE, what a shell reports for `cat` whose reader left.
pub const EXIT_CLOSED_PIPE: i32 = 141;
