//! Colour policy: colours only on a terminal, never with NO_COLOR, or as forced by `--color`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_COLOR: AtomicBool = AtomicBool::new(false);

/// Decide once, from `--color` (auto|always|never), NO_COLOR and whether stdout is a TTY.
pub fn init(choice: &str) {
    let on = match choice {
        "always" => true,
        "never" => false,
        _ => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal(),
    };
    STDOUT_COLOR.store(on, Ordering::Relaxed);
}

/// True when standard output gets colours, as [`init`] decided.
pub fn enabled() -> bool {
    STDOUT_COLOR.load(Ordering::Relaxed)
}

/// Paint `text` with an ANSI SGR code when colours are on.
pub(crate) fn paint(text: &str, sgr: &str) -> String {
    if enabled() {
        format!("\x1b[{sgr}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

pub(crate) fn green(text: &str) -> String {
    paint(text, "32")
}
/// `text` in red when colours are on, else as is.
pub fn red(text: &str) -> String {
    paint(text, "31")
}
/// `text` in yellow when colours are on, else as is.
pub fn yellow(text: &str) -> String {
    paint(text, "33")
}
pub(crate) fn bold(text: &str) -> String {
    paint(text, "1")
}
pub(crate) fn dim(text: &str) -> String {
    paint(text, "2")
}
