//! Fuzzing the object readers: a real fixture ELF (with DWARF) with random bytes
//! overwritten, truncated or extended, must load as an error or symbolise to
//! something — never panic. Covers object (ELF headers, segments, symbols), gimli and
//! addr2line (DWARF units, lines, inlined functions), the call-graph and off-CPU
//! reports and the disassembly path (also with the mutant as the kernel image).

mod common;

use perflab::profile::aggregate::{self, By};
use perflab::profile::format::{FrameRef, KernelSymbol, ObjectRef, Profile, SampleCount, Space, StackCount};
use perflab::profile::symbolize::{ObjectInfo, Symbolizer};
use proptest::prelude::*;
use std::sync::OnceLock;

fn original() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| std::fs::read(common::fixture("profile_ratio")).unwrap())
}

/// File range of .debug_info through the last .debug_* section.
fn debug_range() -> (usize, usize) {
    use object::{Object, ObjectSection};
    let file = object::File::parse(original()).unwrap();
    let ranges: Vec<(u64, u64)> = file
        .sections()
        .filter(|s| s.name().is_ok_and(|n| n.starts_with(".debug_")))
        .filter_map(|s| s.file_range())
        .collect();
    let start = ranges.iter().map(|r| r.0).min().expect("the fixture has DWARF");
    let end = ranges.iter().map(|r| r.0 + r.1).max().unwrap();
    (start as usize, (end - start) as usize)
}

fn exercise(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mutant");
    std::fs::write(&path, bytes).unwrap();
    let path = path.to_str().unwrap();
    if let Ok(obj) = ObjectInfo::load(path) {
        for offset in [0u64, 0x1000, 0x1040, 0x1100, 0x1200, 0x2000, u64::MAX] {
            if let Some(svma) = obj.svma(offset) {
                let _ = obj.frames(svma);
                let _ = obj.location(svma);
                if let Some(sym) = obj.symbol_at(svma).cloned() {
                    let _ = obj.symbol_name(&sym);
                    let _ = obj.bytes(sym.start, obj.symbol_len(&sym));
                }
            }
        }
    }
    let mut symbolizer = Symbolizer::default();
    let _ = symbolizer.resolve(path, 0x1100);
    // The whole annotate path, hottest function first.
    let profile = Profile {
        event: "cpu-clock".into(),
        frequency_hz: 1000,
        command: vec![path.to_string()],
        duration_s: 1.0,
        cpu_s: 1.0,
        exit_code: Some(0),
        objects: vec![ObjectRef { path: path.to_string() }],
        samples: vec![
            SampleCount { pid: 1, tid: 1, space: Space::User, object: Some(0), offset: 0x1100, count: 3, period: 3 },
            // "Kernel" code in the mutant, slid by 0x1000 as KASLR would.
            SampleCount { pid: 1, tid: 1, space: Space::Kernel, object: None, offset: 0x2140, count: 2, period: 2 },
        ],
        kernel_symbols: vec![KernelSymbol { start: 0x2100, end: 0x2200, name: "heavy_work".into(), module: None }],
        frames: vec![
            FrameRef { space: Space::User, object: Some(0), offset: 0x1100 },
            FrameRef { space: Space::User, object: Some(0), offset: 0x1200 },
        ],
        stacks: vec![StackCount { pid: 1, tid: 1, frames: vec![0, 1, 1], count: 3, period: 3 }],
        off_cpu: vec![StackCount { pid: 1, tid: 1, frames: vec![1, 0], count: 1, period: 5_000_000 }],
        off_cpu_recorded: true,
        ..Profile::default()
    };
    // The call-graph report: every frame symbolised, totals and folded stacks.
    let mut symbolizer = Symbolizer::default();
    let (located, graph) = aggregate::locate_with_graph(&profile, &mut symbolizer);
    let graph = graph.expect("the profile has stacks");
    let _ = graph.with_totals(aggregate::flat(&located, By::Function), Some(20));
    let _ = graph.with_totals(aggregate::flat(&located, By::Function), None);
    let _ = graph.folded();
    let _ = perflab::profile::offcpu::report(&profile, Some(&graph));
    let _ = perflab::profile::annotate::annotate(
        &profile,
        &mut Symbolizer::default(),
        None,
        3,
        perflab::profile::annotate::Syntax::Att,
        None,
        Some(std::path::Path::new(path)),
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), ..ProptestConfig::default() })]

    #[test]
    fn mutated_elf_files_never_panic(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..40)) {
        let mut bytes = original().to_vec();
        for (pos, byte) in edits {
            let i = pos % bytes.len();
            bytes[i] = byte;
        }
        exercise(&bytes);
    }

    #[test]
    fn mutated_dwarf_never_panics(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..20)) {
        let (start, len) = debug_range();
        let mut bytes = original().to_vec();
        for (pos, byte) in edits {
            bytes[start + pos % len] = byte;
        }
        exercise(&bytes);
    }

    #[test]
    fn truncated_elf_files_never_panic(cut in 0usize..100_000) {
        let bytes = original();
        exercise(&bytes[..cut % bytes.len()]);
    }
}

#[test]
fn header_fields_set_to_extremes_never_panic() {
    // e_shoff, e_phoff, e_shnum, e_phnum, e_shstrndx and the first section header's
    // offset/size set to 0 and all-ones.
    let bytes = original();
    for field in [0x20usize, 0x28, 0x38, 0x3c, 0x3e] {
        for fill in [0x00u8, 0xff] {
            let mut b = bytes.to_vec();
            for byte in &mut b[field..field + 2] {
                *byte = fill;
            }
            exercise(&b);
        }
    }
}

/// Cases per property: 200 in the test suite, `PROPTEST_CASES` for a long run (scripts/fuzz).
fn fuzz_cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(200)
}
