//! Builds the in-process allocation recorder (preload/perflab_alloc.c) as a shared
//! library that the crate embeds: `profile --alloc` writes it out and LD_PRELOADs it
//! into the command it launches. Without a C compiler the crate still builds; the
//! recorder is then missing and `--alloc` says so and uses uprobes (`perflab_no_preload`).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let source = "preload/perflab_alloc.c";
    println!("cargo::rerun-if-changed={source}");
    println!("cargo::rustc-check-cfg=cfg(perflab_no_preload)");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("libperflab_alloc.so");
    // cc knows the target's compiler and flags; it builds archives, not shared objects,
    // so the compiler is run directly with -shared.
    let compiler = cc::Build::new().opt_level(2).pic(true).get_compiler();
    let mut command: Command = compiler.to_command();
    command
        .args(["-shared", "-fPIC", "-O2", "-g", "-Wall", "-fvisibility=default", "-o"])
        .arg(&out)
        .arg(source)
        .args(["-ldl", "-lm", "-lpthread", "-lgcc_s"]);
    let built = command.status().map(|s| s.success()).unwrap_or(false);
    if !built {
        println!("cargo::warning=the allocation recorder ({source}) could not be compiled: profile --alloc will use uprobes only");
        println!("cargo::rustc-cfg=perflab_no_preload");
        std::fs::write(&out, b"").expect("write a placeholder in OUT_DIR");
    }
}
