//! Call sites that reach the allocator through a tail call: at -O2 a function whose last
//! act is `return malloc(n)` ends in `jmp malloc`, its own frame gone, so its allocations
//! are charged to its caller (heaptrack has the same blind spot). The instruction before
//! each call site's return address tells: a direct `call` of a function that is not an
//! allocator means the allocator was entered from inside that function, by a jump.

use super::FAMILY;
use crate::format::Profile;
use crate::symbolize::{normalize, Symbolizer};
use std::collections::BTreeMap;

/// One note per function that tail-called the allocator, with where its allocations were
/// charged and how to see it as a call site of its own.
pub fn notes(profile: &Profile, symbolizer: &mut Symbolizer) -> Vec<String> {
    // (callee, caller) → calls charged to the caller.
    let mut found: BTreeMap<(String, String), u64> = BTreeMap::new();
    for sample in &profile.samples {
        let Some(path) = sample.object.and_then(|o| profile.objects.get(o as usize)).map(|o| o.path.as_str()) else {
            continue;
        };
        let Some(object) = symbolizer.object(path) else { continue };
        // The row's offset is the call instruction's last byte (return address − 1).
        let Some(return_address) = object.svma(sample.offset + 1) else { continue };
        let Some(call) = object.bytes(return_address.wrapping_sub(5), 5) else { continue };
        let [0xe8, r0, r1, r2, r3] = *call else { continue };
        let target = return_address.wrapping_add(i32::from_le_bytes([r0, r1, r2, r3]) as i64 as u64);
        // A call into the PLT (no symbol) or of an allocator itself is the ordinary case.
        let Some(symbol) = object.symbol_at(target) else { continue };
        if symbol.start != target {
            continue;
        }
        let callee = normalize(&object.function_name(symbol));
        if FAMILY.iter().any(|(name, _)| callee == *name || callee.starts_with(&format!("{name}@"))) {
            continue;
        }
        let caller = symbolizer.resolve(path, sample.offset).function;
        *found.entry((callee, caller)).or_default() += sample.count;
    }
    found
        .into_iter()
        .map(|((callee, caller), calls)| {
            format!(
                "{calls} allocation(s) shown in {caller} were made by {callee}, which {caller} calls and which reaches the allocator by a tail call (`jmp`, its own frame gone); to see {callee} as a call site, build it with -fno-optimize-sibling-calls (or __attribute__((optimize(\"no-optimize-sibling-calls\"))))"
            )
        })
        .collect()
}
