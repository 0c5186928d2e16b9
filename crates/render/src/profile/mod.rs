//! The profile commands' terminal output — the flat report ([`flat`]), allocation
//! profiles ([`alloc`]), the diff
//! ([`diff`]) and the annotation ([`annotate`]) — as strings, from the data the
//! profile library computes; plus the file formats a profile is written in
//! ([`export`] chooses the `exporter::ProfileExporter`: JSON, folded stacks, flame graphs,
//! the Firefox Profiler, speedscope, pprof — one module each).

pub mod alloc;
pub mod annotate;
pub mod diff;
pub mod export;
pub(crate) mod exporter;
pub(crate) mod firefox;
pub mod flame;
pub(crate) mod flamegraph;
pub mod flat;
pub(crate) mod folded;
pub mod json;
pub(crate) mod pprof;
pub mod samples;
pub(crate) mod speedscope;
pub mod top;

use super::color;
use super::terminal::escape;
use perflab_profile::kernel;

/// Colour a share by how hot it is.
pub(crate) fn paint_share(share: f64, text: &str) -> String {
    if share >= 0.10 {
        color::red(text)
    } else if share >= 0.02 {
        color::yellow(text)
    } else {
        text.to_string()
    }
}

/// A row's name with its object: `[k] name` for kernel functions (like perf), the
/// module dimmed after it; user functions get their object dimmed in brackets.
pub(crate) fn function_label(name: &str, object: &str) -> String {
    let escaped = escape(name);
    if object.is_empty() || object == name {
        return escaped;
    }
    if kernel::is_kernel_object(object) {
        let module = if object == kernel::KERNEL_OBJECT { String::new() } else { color::dim(&format!("  {object}")) };
        return format!("[k] {escaped}{module}");
    }
    // `[jit]`, `[vdso]`: already bracketed.
    let object = escape(object);
    let object = if object.starts_with('[') { object } else { format!("[{object}]") };
    format!("{escaped}{}", color::dim(&format!("  {object}")))
}

/// [`function_label`] in at most `width` terminal columns: the object goes first, then
/// the name is shortened in the middle (`render::table::abbreviate`).
pub(crate) fn function_label_within(name: &str, object: &str, width: Option<usize>) -> String {
    let full = function_label(name, object);
    let Some(width) = width.filter(|&w| super::table::display_width(&full) > w) else { return full };
    let prefix = if kernel::is_kernel_object(object) && object != name { "[k] " } else { "" };
    format!("{prefix}{}", super::table::abbreviate(&escape(name), width.saturating_sub(prefix.len()).max(12)))
}

/// `perflab: warning: …` lines for stderr.
pub fn warnings(warnings: &[String]) -> String {
    // A warning quotes what a file or a process said (object paths, a kernel release, a
    // comm): escaped, as every line perflab prints.
    warnings.iter().map(|w| format!("perflab: warning: {}\n", crate::escape(w))).collect()
}
