//! Tests of the parent module (kept apart so that it stays readable).

use super::*;
use crate::format::{ObjectRef, SampleCount, Task};

/// A profile of this test binary with samples on `normalize`'s first instructions.
fn profile_on_own_code() -> (Profile, u64) {
    let exe = std::env::current_exe().unwrap().to_str().unwrap().to_string();
    let obj = ObjectInfo::load(&exe).unwrap();
    let sym = obj.symbols_named("perflab_profile::symbolize::normalize").next().unwrap().clone();
    let off = obj.file_offset(sym.start).unwrap();
    let sample = |offset, count| SampleCount::example(offset, count, count);
    let p = Profile {
        event: "cpu-clock".into(),
        frequency_hz: 1000,
        duration_s: 1.0,
        cpu_s: 1.0,
        exit_code: Some(0),
        objects: vec![ObjectRef { path: exe }],
        tasks: vec![Task { pid: 1, tid: 1, comm: "t".into() }],
        samples: vec![sample(off, 30), sample(off + 1_000_000_000, 10)],
        ..Profile::default()
    };
    (p, sym.start)
}

#[test]
fn hottest_function_is_disassembled_with_sample_counts() {
    let (p, start) = profile_on_own_code();
    let mut s = Symbolizer::default();
    let fns = annotate(&p, &mut s, None, 3, Syntax::Intel, None, None).unwrap();
    assert_eq!(fns[0].name, "perflab_profile::symbolize::normalize");
    assert_eq!(fns[0].samples, 30);
    assert_eq!(fns[0].instructions[0].address, start);
    assert_eq!(fns[0].instructions[0].samples, 30);
    assert!((fns[0].instructions[0].share - 1.0).abs() < 1e-12);
    assert!(fns[0].instructions.len() > 5);
    assert!((fns[0].share - 0.75).abs() < 1e-12);
}

#[test]
fn unknown_symbols_are_usage_errors() {
    let (p, _) = profile_on_own_code();
    let mut s = Symbolizer::default();
    assert!(annotate(&p, &mut s, Some("no_such_function_xyz"), 3, Syntax::Att, None, None).is_err());
    let named = annotate(&p, &mut s, Some("perflab_profile::symbolize::demangle"), 3, Syntax::Att, None, None).unwrap();
    assert_eq!(named[0].samples, 0);
}

#[test]
fn kernel_functions_are_disassembled_from_the_kernel_image_with_the_kaslr_slide() {
    // This test binary stands in for vmlinux: the "running kernel" has it 0x1000_0000 higher.
    let exe = std::env::current_exe().unwrap();
    let obj = ObjectInfo::load(exe.to_str().unwrap()).unwrap();
    let name = "perflab_profile::symbolize::normalize";
    let sym = obj.symbols_named(name).next().unwrap().clone();
    let slide = 0x1000_0000;
    let running = sym.start + slide;
    let kernel_sample = |offset, count| SampleCount {
        pid: 1,
        tid: 1,
        space: Space::Kernel,
        object: None,
        offset,
        count,
        period: count,
    };
    let mut p = Profile {
        event: "cpu-clock".into(),
        frequency_hz: 1000,
        samples: vec![kernel_sample(running, 7), kernel_sample(running + 1, 0)],
        kernel_symbols: vec![crate::format::KernelSymbol {
            start: running,
            end: running + obj.symbol_len(&sym),
            name: name.to_string(),
            module: None,
        }],
        ..Profile::default()
    };
    let mut s = Symbolizer::default();
    let fns = annotate(&p, &mut s, Some(name), 3, Syntax::Att, None, Some(&exe)).unwrap();
    assert_eq!((fns[0].instructions[0].address, fns[0].instructions[0].samples), (sym.start, 7));
    // Without an image: one clear reason, for a named function an error.
    let err = annotate(&p, &mut s, Some(name), 3, Syntax::Att, None, Some(Path::new("/nonexistent/vmlinux")));
    let err = err.expect_err("an error for a named function");
    assert!(matches!(err, ProfileError::CannotAnnotateKernel { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot use /nonexistent/vmlinux"), "{err}");
    let hottest = annotate(&p, &mut s, None, 3, Syntax::Att, None, Some(Path::new("/nonexistent/vmlinux"))).unwrap();
    assert!(hottest.is_empty());
    assert!(s.warnings.last().unwrap().contains("hot kernel functions are not annotated"), "{:?}", s.warnings);
    // A profile whose kernel addresses were unreadable says so.
    p.kernel_symbols.clear();
    p.kernel_symbols_note = Some("/proc/kallsyms shows zero addresses".into());
    let image = s.object(exe.to_str().unwrap()).unwrap();
    assert_eq!(kernel_target(&p, &image, name).err().unwrap().to_string(), "/proc/kallsyms shows zero addresses");
}

/// A profile of runtime code: `bytes` at 0x1000 named `F` (and `more` names inside),
/// in a process called `comm`, with one sample at each of `sampled`.
fn runtime_profile(bytes: &[u8], comm: &str, sampled: &[u64], more: &[(&str, u64)]) -> Profile {
    let symbol = |name: &str, start: u64, size: u64| crate::format::JitSymbol {
        object: 0,
        start,
        size,
        name: name.to_string(),
        unnamed: false,
        code: Some(Box::new(crate::format::CodeBytes::new(start, &bytes[(start - 0x1000) as usize..]))),
    };
    let mut jit_symbols = vec![symbol("F", 0x1000, bytes.len() as u64)];
    jit_symbols.extend(more.iter().map(|(name, start)| symbol(name, *start, 0x1000 + bytes.len() as u64 - start)));
    Profile {
        event: "cpu-clock".into(),
        frequency_hz: 1000,
        objects: vec![ObjectRef { path: "[jit:7]".into() }],
        tasks: vec![Task { pid: 7, tid: 7, comm: comm.into() }],
        samples: sampled
            .iter()
            .map(|a| SampleCount {
                pid: 7,
                tid: 7,
                space: Space::User,
                object: Some(0),
                offset: *a,
                count: 1,
                period: 1,
            })
            .collect(),
        jit_symbols,
        ..Profile::default()
    }
}

/// The listing of `F` in `p`: (address, text) per row.
fn listing(p: &Profile) -> Vec<(u64, String)> {
    let mut s = Symbolizer::default();
    let fns = annotate(p, &mut s, Some("F"), 1, Syntax::Att, None, None).unwrap();
    fns[0].instructions.iter().map(|i| (i.address, i.text.clone())).collect()
}

#[test]
fn an_sbcl_trap_code_after_int3_is_not_decoded_as_an_instruction() {
    // int3; trap code 9 (pending interrupt); mov %r13, 0x28(%r13); ret — SBCL's end of a
    // pseudo-atomic section, where perf and objdump read `or %ecx, -0x77(%rbp); insl`.
    let bytes = [0xcc, 0x09, 0x4d, 0x89, 0x6d, 0x28, 0xc3];
    let sbcl = listing(&runtime_profile(&bytes, "sbcl", &[0x1000], &[]));
    let expected = [(0x1000, "int3   # trap 9 (pending interrupt)"), (0x1002, "mov %r13, 0x28(%r13)"), (0x1006, "ret")];
    let expected: Vec<(u64, String)> = expected.iter().map(|(a, t)| (*a, t.to_string())).collect();
    assert_eq!(sbcl, expected);
    // In another runtime's code `int3` is one byte, as the CPU reads it.
    let other = listing(&runtime_profile(&bytes, "node", &[0x1000], &[]));
    assert_eq!(other[1], (0x1001, "or %ecx, -0x77(%rbp)".to_string()), "{other:?}");
}

#[test]
fn an_sbcl_error_trap_carries_its_arguments_up_to_the_next_instruction_start() {
    // je over an error trap (code 32) with four bytes of arguments, to a ret.
    let bytes = [0x74, 0x06, 0xcc, 0x20, 0x15, 0x8a, 0x01, 0x2c, 0xc3];
    let rows = listing(&runtime_profile(&bytes, "sbcl", &[0x1000], &[]));
    let texts: Vec<&str> = rows.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        texts,
        ["je 0x1008", "int3   # trap 32", ".byte 0x15, 0x8a, 0x01, 0x2c   # trap arguments", "ret"],
        "{rows:x?}"
    );
}

#[test]
fn a_jump_into_the_middle_of_a_misdecoded_instruction_resynchronises_there() {
    // je +1 jumps over one byte of data (0xb8), which linear decoding takes for
    // `mov $imm32, %eax`, swallowing the mov and the ret the branch goes to.
    let bytes = [0x74, 0x01, 0xb8, 0x48, 0x89, 0xc8, 0xc3];
    let p = runtime_profile(&bytes, "node", &[0x1000], &[]);
    let rows = listing(&p);
    let texts: Vec<&str> = rows.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["je 0x1003", ".byte 0xb8   # data: an instruction starts inside", "mov %rcx, %rax", "ret"]);
    let mut s = Symbolizer::default();
    let f = &annotate(&p, &mut s, Some("F"), 1, Syntax::Att, None, None).unwrap()[0];
    assert_eq!(f.instructions[1].data, Some("skipped"));
    assert_eq!(f.instructions[2].address, 0x1003);
    // A perf-map entry starting inside an instruction is a start too.
    let bytes = [0x90, 0xb8, 0x48, 0x89, 0xc8, 0xc3];
    let rows = listing(&runtime_profile(&bytes, "node", &[0x1000], &[("G", 0x1002)]));
    assert_eq!(rows[2], (0x1002, "mov %rcx, %rax".to_string()), "{rows:x?}");
}

/// A function of `n` 4-byte instructions at 0x1000; `shape` marks what each one is.
fn synthetic(n: usize, shares: &[f64], shape: impl Fn(usize, &mut AnnotatedInstruction)) -> AnnotatedFunction {
    let instructions = (0..n)
        .map(|i| {
            let mut ins = AnnotatedInstruction {
                address: 0x1000 + 4 * i as u64,
                text: "nop".into(),
                samples: (shares[i] * 1000.0).round() as u64,
                share: shares[i],
                source: None,
                inlined: None,
                hints: Vec::new(),
                jump_to: None,
                call_to: None,
                conditional: false,
                ends_block: false,
                indirect_jump: false,
                data: None,
                trap: None,
                mca: None,
            };
            shape(i, &mut ins);
            ins
        })
        .collect();
    AnnotatedFunction {
        name: "f".into(),
        object: "o".into(),
        start: 0x1000,
        samples: 1000,
        share: 1.0,
        instructions,
        mca: None,
        generated: false,
        note: None,
    }
}

#[test]
fn an_interpreter_loop_shows_its_hottest_blocks_not_its_back_edges() {
    // 200 instructions: handlers of 5 ending in an indirect jump (dispatch), and a
    // conditional branch at the end back to the entry: the "loop" spans everything.
    let n = 200;
    let mut shares = vec![0.05 / 180.0; n];
    // Two hot handlers: 60 % in 20..=24, 30 % in 100..=104.
    (20..25).for_each(|i| shares[i] = 0.12);
    (100..105).for_each(|i| shares[i] = 0.06);
    let sum: f64 = shares.iter().sum();
    shares.iter_mut().for_each(|s| *s /= sum);
    let f = synthetic(n, &shares, |i, ins| {
        if i == n - 1 {
            (ins.jump_to, ins.conditional, ins.ends_block) = (Some(0x1000), true, true);
        } else if i % 5 == 4 {
            (ins.indirect_jump, ins.ends_block) = (true, true);
        }
    });
    let view = hot_view(&f);
    let ranked = view.ranked.expect("the ranked view");
    assert_eq!((ranked.indirect_jumps, ranked.blocks), (39, 40));
    assert_eq!(ranked.shown.iter().map(|b| (b.0, b.1)).collect::<Vec<_>>(), [(20, 24), (100, 104)]);
    assert!(ranked.share() > 0.9 && ranked.loop_cover > 0.99);
    assert_eq!(view.shown.iter().filter(|s| **s).count(), 10);

    // A small hot loop in a long function keeps the loop rule: no ranking.
    let mut shares = vec![0.0; n];
    (50..60).for_each(|i| shares[i] = 0.1);
    let f = synthetic(n, &shares, |i, ins| {
        if i == 59 {
            (ins.jump_to, ins.conditional, ins.ends_block) = (Some(0x1000 + 4 * 50), true, true);
        }
    });
    let view = hot_view(&f);
    assert!(view.ranked.is_none());
    assert!(view.shown[50..60].iter().all(|s| *s) && !view.shown[0] && !view.shown[n - 1]);
}

#[test]
fn a_lock_prefix_a_branch_goes_past_is_named_a_prefix() {
    // je 1f; lock; 1: cmpxchg %ecx, (%rdx); ret — glibc's way to lock only when threaded.
    let bytes = [0x74, 0x01, 0xf0, 0x0f, 0xb1, 0x0a, 0xc3];
    let p = runtime_profile(&bytes, "node", &[0x1000], &[]);
    let mut s = Symbolizer::default();
    let f = &annotate(&p, &mut s, Some("F"), 1, Syntax::Att, None, None).unwrap()[0];
    let texts: Vec<&str> = f.instructions.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(f.instructions[1].data, Some("prefix"), "{texts:?}");
    assert_eq!(texts[2], "cmpxchg %ecx, (%rdx)", "{texts:?}");
}
