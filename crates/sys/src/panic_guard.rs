//! The last line of defence around readers of outside data (perf.data, jitdump): a
//! panic in one — a bug in perflab or in a parsing crate that a file found — becomes an
//! error the caller reports in one line, instead of a crash with a panic report. The
//! causes are fixed where they are found (see `profile/record/perf_data_check.rs`);
//! this only keeps a cause not yet found from taking the process down.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

thread_local! {
    /// Whether this thread runs inside [`catching`] (its panics are kept, not printed).
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Run `f`; a panic inside it is returned as `Err` with its message and place.
pub fn catching<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    let was = GUARDED.with(|g| g.replace(true));
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    outcome.map_err(|payload| {
        CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_else(|| payload_text(payload.as_ref()).to_string())
    })
}

/// Panics of guarded threads are kept for [`catching`]; every other goes to the hook
/// that was there before (Rust's report).
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo| {
            if GUARDED.with(Cell::get) {
                let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
                let text = format!("{}{place}", payload_text(info.payload()));
                CAUGHT.with(|c| *c.borrow_mut() = Some(text));
            } else {
                previous(info);
            }
        }));
    });
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_with_its_message() {
        assert_eq!(catching(|| 7), Ok(7));
        let caught = catching(|| -> u32 { panic!("boom {}", 1) }).unwrap_err();
        assert!(caught.starts_with("boom 1 at crates/sys/src/panic_guard.rs:"), "{caught}");
        let v: Vec<u8> = Vec::new();
        let caught = catching(|| v[3]).unwrap_err();
        assert!(caught.contains("index out of bounds"), "{caught}");
    }
}
