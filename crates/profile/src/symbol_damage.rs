//! Whether a debug file's function symbols can be trusted before its names replace a
//! binary's own: one from a debuginfod server or a local debug directory can carry the
//! right build ID and still be damaged.

use object::{Object, ObjectSymbol, SymbolKind};

/// Why the function symbols of `elf` cannot be trusted — some have a name that is blank,
/// not UTF-8 or holds control characters, which no compiler writes (a damaged or forged
/// file: a zeroed string table blanks every name) — or None when every name reads.
pub(crate) fn damaged_symbols(elf: &object::File) -> Option<String> {
    let (mut functions, mut unreadable) = (0usize, 0usize);
    for s in elf.symbols().chain(elf.dynamic_symbols()) {
        if s.kind() != SymbolKind::Text || s.address() == 0 || !s.is_definition() {
            continue;
        }
        functions += 1;
        let readable = s
            .name_bytes()
            .ok()
            .and_then(|n| std::str::from_utf8(n).ok())
            .is_some_and(|n| !n.is_empty() && !n.chars().any(char::is_control));
        if !readable {
            unreadable += 1;
        }
    }
    (unreadable > 0).then(|| format!("{unreadable} of its {functions} function symbols have no readable name"))
}
