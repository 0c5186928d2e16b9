//! `perflab` binary: a thin shell over the library (see `perflab::cli`).

fn main() {
    // perflab runs benchmarked commands from a copy of itself (see `perflab_sys::spawn::launcher`).
    if let Some(code) = perflab_sys::spawn::launcher::serve_if_requested() {
        std::process::exit(code);
    }
    // SIGPIPE stays ignored (Rust's default): a closed stdout is an error that
    // `render::stdout` keeps until the files and stored runs are written, then perflab
    // exits 141 as cat would — a default SIGPIPE would kill it before.
    std::process::exit(perflab::cli::main());
}
