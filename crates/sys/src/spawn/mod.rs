//! Starting a command and measuring that one process: [`process`] (posix_spawn or a
//! gated fork, `wait4`'s rusage, a wait that reacts to interrupts and time-outs),
//! [`launcher`] (the helper process runs start from, so a run's peak RSS is its own) and
//! [`contention`] (how long a run waited for a CPU, and how much of that a neighbour
//! caused).

pub mod captures;
pub mod contention;
pub mod environment;
pub mod error;
pub mod launcher;
pub mod process;
