//! `perflab` binary: a thin shell over the library (see `perflab::cli`).

fn main() {
    std::process::exit(perflab::cli::main());
}
