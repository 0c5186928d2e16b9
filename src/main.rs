//! `perflab` binary: a thin shell over the library (see `perflab::cli`).

fn main() {
    // perflab runs benchmarked commands from a copy of itself (see `perflab::executor::launcher`).
    if let Some(code) = perflab::executor::launcher::serve_if_requested() {
        std::process::exit(code);
    }
    // Rust ignores SIGPIPE, which turns `perflab show ... | head` into a panic on the
    // next print; a command-line tool should end quietly instead, like cat or grep.
    // SAFETY: setting a signal disposition before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    std::process::exit(perflab::cli::main());
}
