//! Tests of the parent module (kept apart so that it stays readable).

use super::*;
use crate::format::{ObjectRef, SampleCount, Task};

/// A profile of this test binary with samples on `normalize`'s first instructions.
fn profile_on_own_code() -> (Profile, u64) {
    let exe = std::env::current_exe().unwrap().to_str().unwrap().to_string();
    let obj = ObjectInfo::load(&exe).unwrap();
    let sym = obj.symbols_named("perflab_profile::symbolize::normalize").next().unwrap().clone();
    let off = obj.file_offset(sym.start).unwrap();
    let sample = |offset, count| SampleCount {
        pid: 1,
        tid: 1,
        space: Space::User,
        object: Some(0),
        offset,
        count,
        period: count,
    };
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
