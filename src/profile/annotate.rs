//! `perflab annotate`: disassembly (iced-x86) of the hottest functions, or a named one,
//! with per-instruction samples and shares, source lines interleaved, jump targets and
//! loop back-edges marked, and instruction-cost hints (see [`super::hints`]).

use super::aggregate::{self, By};
use super::format::{Profile, Space};
use super::hints::{self, Hint};
use super::kernel;
use super::mca::{self, McaBlock, McaInstruction};
use super::paint_share;
use super::symbolize::{basename, normalize, FunctionSymbol, ObjectInfo, Symbolizer};
use crate::error::Failure;
use crate::render::color;
use crate::usage;
use iced_x86::{Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction, IntelFormatter};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Att,
    Intel,
}

impl Syntax {
    pub const NAMES: [&'static str; 2] = ["att", "intel"];
}

impl std::str::FromStr for Syntax {
    type Err = String;
    fn from_str(s: &str) -> Result<Syntax, String> {
        match s {
            "att" => Ok(Syntax::Att),
            "intel" => Ok(Syntax::Intel),
            other => Err(format!("expected syntax att or intel, found `{other}`")),
        }
    }
}

#[derive(Debug, Clone)]
pub struct AnnotateOptions {
    /// A profile saved by `perflab profile`.
    pub profile: PathBuf,
    /// Annotate this function (demangled name, clone suffixes optional) instead of the hottest ones.
    pub symbol: Option<String>,
    /// How many of the hottest functions to annotate when no --symbol is given.
    pub top: usize,
    /// Assembly syntax.
    pub syntax: Syntax,
    /// Write the annotation as JSON to FILE (`-` for stdout).
    pub json: Option<PathBuf>,
    /// Run llvm-mca on each function's hot loop (or hot basic block) for per-instruction
    /// latency and throughput; CPU is an LLVM -mcpu name (default: this machine's family).
    pub mca: Option<String>,
    /// The running kernel's image with symbols (vmlinux) for kernel functions; default:
    /// where perf looks (/boot/vmlinux-RELEASE, /usr/lib/debug/boot/vmlinux-RELEASE, ...).
    pub vmlinux: Option<PathBuf>,
}

/// Where and for which CPU to run llvm-mca.
pub struct McaRequest {
    pub binary: PathBuf,
    pub cpu: String,
}

#[derive(Debug, Serialize)]
pub struct AnnotatedInstruction {
    pub address: u64,
    pub text: String,
    pub samples: u64,
    /// Share of the function's samples, 0–1.
    pub share: f64,
    /// `file:line` of the innermost (inlined) source location.
    pub source: Option<String>,
    /// The function whose code this is, when it was inlined into the annotated one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inlined: Option<String>,
    pub hints: Vec<Hint>,
    /// Near branch target inside the function, if this is a jump.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jump_to: Option<u64>,
    /// Whether this is a conditional branch.
    #[serde(skip)]
    pub conditional: bool,
    /// llvm-mca's figures, for instructions of the analysed hot block (`--mca`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mca: Option<McaInstruction>,
}

#[derive(Debug, Serialize)]
pub struct AnnotatedFunction {
    pub name: String,
    pub object: String,
    pub start: u64,
    pub samples: u64,
    /// Share of all samples in the profile, 0–1.
    pub share: f64,
    pub instructions: Vec<AnnotatedInstruction>,
    /// llvm-mca's summary of the hot block (`--mca`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mca: Option<McaBlock>,
}

#[derive(Serialize)]
struct AnnotateJson<'a> {
    schema_version: u32,
    event: &'a str,
    samples: u64,
    functions: &'a [AnnotatedFunction],
}

pub fn main_annotate(args: &AnnotateOptions) -> Result<(), Failure> {
    let profile = Profile::load(&args.profile)?;
    let installed_mca = mca::find();
    let mca_request = match (&args.mca, &installed_mca) {
        (None, _) => None,
        (Some(_), None) => return Err(usage!("--mca needs llvm-mca on PATH (Debian: apt-get install llvm)")),
        (Some(cpu), Some(binary)) => Some(McaRequest {
            cpu: if cpu == "auto" { mca::default_cpu(binary) } else { cpu.clone() },
            binary: binary.clone(),
        }),
    };
    let mut symbolizer = Symbolizer::default();
    let functions = annotate(
        &profile,
        &mut symbolizer,
        args.symbol.as_deref(),
        args.top,
        args.syntax,
        mca_request.as_ref(),
        args.vmlinux.as_deref(),
    )?;
    for w in &symbolizer.warnings {
        eprintln!("perflab: warning: {w}");
    }
    let to_stdout = args.json.as_deref() == Some(std::path::Path::new("-"));
    if !to_stdout {
        if functions.is_empty() && profile.total_samples() == 0 {
            crate::outln!("the profile has no samples");
        } else if functions.is_empty() {
            crate::outln!("no function with symbols to annotate (the samples are in stripped or special code; see `perflab show`)");
        }
        for f in &functions {
            print_function(f, &profile);
        }
        if args.mca.is_none() && installed_mca.is_some() && !functions.is_empty() {
            crate::outln!(
                "{}",
                color::dim(
                    "llvm-mca is installed: add --mca for per-instruction latency and throughput of each hot loop"
                )
            );
        }
    }
    if let Some(path) = &args.json {
        let doc = AnnotateJson {
            schema_version: 1,
            event: &profile.event,
            samples: profile.total_samples(),
            functions: &functions,
        };
        crate::render::json::write(path, &doc)?;
    }
    Ok(())
}

/// A function to disassemble: its object and symbol.
struct Target {
    object: Rc<ObjectInfo>,
    symbol: FunctionSymbol,
    /// For a kernel function: running-kernel address − address in the image (KASLR).
    kernel_slide: Option<u64>,
}

/// The kernel image to disassemble kernel functions from: `--vmlinux`, else one where
/// perf looks. The error says why kernel functions cannot be annotated.
fn kernel_image(symbolizer: &mut Symbolizer, vmlinux: Option<&Path>) -> Result<Rc<ObjectInfo>, String> {
    let path = match vmlinux {
        Some(p) => p.to_path_buf(),
        None => kernel::find_vmlinux().ok_or_else(|| {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            format!(
                "no readable kernel image (no vmlinux in /boot, /usr/lib/debug or /lib/modules/{}/build; \
                 install the running kernel's debug symbols, e.g. linux-image-{}-dbg, or pass --vmlinux FILE)",
                release.trim(),
                release.trim()
            )
        })?,
    };
    let path = path.to_str().ok_or("the kernel image path is not UTF-8")?.to_string();
    symbolizer.object(&path).ok_or_else(|| {
        let why = symbolizer.warnings.pop().unwrap_or_default();
        format!("cannot use {path} as the kernel image: {why}")
    })
}

/// A kernel function of the profile located in the kernel image.
fn kernel_target(profile: &Profile, image: &Rc<ObjectInfo>, name: &str) -> Result<Target, String> {
    if profile.kernel_symbols.is_empty() {
        return Err(profile
            .kernel_symbols_note
            .clone()
            .unwrap_or_else(|| "the profile has no kernel addresses of named functions".to_string()));
    }
    let running =
        profile.kernel_symbols.iter().find(|k| normalize(&k.name) == name).ok_or("not a sampled kernel function")?;
    if let Some(module) = &running.module {
        return Err(format!("it is in module {module}, not in the kernel image"));
    }
    let symbol =
        image.symbols_named(name).next().cloned().ok_or_else(|| format!("{} does not define it", image.path))?;
    let kernel_slide = Some(running.start.wrapping_sub(symbol.start));
    Ok(Target { object: image.clone(), symbol, kernel_slide })
}

fn targets(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    symbol: Option<&str>,
    top: usize,
    vmlinux: Option<&Path>,
) -> Result<Vec<Target>, Failure> {
    let located = aggregate::locate(profile, symbolizer);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut kernel_skipped = None;
    // Hottest first: rows are sorted by samples; find one sample of each to get its symbol.
    for row in aggregate::flat(&located, By::Function) {
        if symbol.is_some_and(|s| normalize(s) != row.name) {
            continue;
        }
        if kernel::is_kernel_object(&row.object) && row.name != kernel::KERNEL_OBJECT {
            let target = kernel_image(symbolizer, vmlinux).and_then(|image| kernel_target(profile, &image, &row.name));
            match target {
                Ok(t) => out.push(t),
                Err(why) if symbol.is_some() => {
                    return Err(usage!("cannot annotate kernel function `{}`: {why}", row.name))
                }
                Err(why) => kernel_skipped = kernel_skipped.or(Some(why)),
            }
            if symbol.is_none() && out.len() >= top {
                break;
            }
            continue;
        }
        let hit = profile
            .samples
            .iter()
            .zip(&located)
            .find(|(s, l)| s.space == Space::User && l.location.function == row.name);
        let Some((sample, located)) = hit else { continue };
        let Some(object) = symbolizer.object(&located.location.object) else { continue };
        let Some(sym) = object.svma(sample.offset).and_then(|a| object.symbol_at(a)).cloned() else { continue };
        if seen.insert((object.path.clone(), sym.start)) {
            out.push(Target { object, symbol: sym, kernel_slide: None });
        }
        if symbol.is_none() && out.len() >= top {
            break;
        }
    }
    if let Some(why) = kernel_skipped {
        symbolizer.warnings.push(format!("hot kernel functions are not annotated: {why}"));
    }
    if let Some(name) = symbol {
        if out.is_empty() {
            // Not sampled: still disassemble it if one of the profiled objects defines it.
            for o in &profile.objects {
                if let Some(object) = symbolizer.object(&o.path) {
                    if let Some(sym) = object.symbols_named(&normalize(name)).next().cloned() {
                        out.push(Target { object: object.clone(), symbol: sym, kernel_slide: None });
                        break;
                    }
                }
            }
        }
        if out.is_empty() {
            return Err(usage!("function `{name}` is not in the profile's objects (see `perflab show` for names)"));
        }
    }
    Ok(out)
}

pub fn annotate(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    symbol: Option<&str>,
    top: usize,
    syntax: Syntax,
    mca: Option<&McaRequest>,
    vmlinux: Option<&Path>,
) -> Result<Vec<AnnotatedFunction>, Failure> {
    let total = profile.total_samples();
    let mut out = Vec::new();
    for target in targets(profile, symbolizer, symbol, top, vmlinux)? {
        let (function, warning) = annotate_one(profile, &target, total, syntax, mca);
        symbolizer.warnings.extend(warning);
        out.push(function);
    }
    Ok(out)
}

fn annotate_one(
    profile: &Profile,
    target: &Target,
    total: u64,
    syntax: Syntax,
    mca: Option<&McaRequest>,
) -> (AnnotatedFunction, Option<String>) {
    let object = &target.object;
    let sym = &target.symbol;
    let len = object.symbol_len(sym);
    let end = sym.start + len;
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for s in &profile.samples {
        let svma = match (target.kernel_slide, s.space, s.object) {
            (Some(slide), Space::Kernel, _) => Some(s.offset.wrapping_sub(slide)),
            (None, Space::User, Some(idx)) if profile.objects[idx as usize].path == object.path => {
                object.svma(s.offset)
            }
            _ => None,
        };
        if let Some(a) = svma.filter(|a| (sym.start..end).contains(a)) {
            *counts.entry(a).or_default() += s.count;
        }
    }
    let bytes = object.bytes(sym.start, len).unwrap_or(&[]);
    let bitness = if object.is_64 { 64 } else { 32 };
    let instrs: Vec<Instruction> =
        Decoder::with_ip(bitness, bytes, sym.start, DecoderOptions::NONE).into_iter().collect();
    let fn_samples: u64 = counts.values().sum();
    let shares: Vec<f64> =
        instrs
            .iter()
            .map(|i| {
                if fn_samples == 0 {
                    0.0
                } else {
                    counts.get(&i.ip()).copied().unwrap_or(0) as f64 / fn_samples as f64
                }
            })
            .collect();
    // Our events never request precise_ip, so every sample may skid.
    let mut hints = hints::assign(&instrs, &shares, true);
    let mut formatter: Box<dyn Formatter> = match syntax {
        Syntax::Att => Box::new(GasFormatter::new()),
        Syntax::Intel => Box::new(IntelFormatter::new()),
    };
    let options = formatter.options_mut();
    options.set_hex_prefix("0x");
    options.set_hex_suffix("");
    options.set_uppercase_hex(false);
    options.set_branch_leading_zeros(false);
    options.set_space_after_operand_separator(true);
    let mut instructions: Vec<AnnotatedInstruction> = instrs
        .iter()
        .enumerate()
        .map(|(i, ins)| {
            let mut text = String::new();
            formatter.format(ins, &mut text);
            let jump_to = match ins.flow_control() {
                FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch => {
                    Some(ins.near_branch_target()).filter(|t| (sym.start..end).contains(t))
                }
                _ => None,
            };
            AnnotatedInstruction {
                address: ins.ip(),
                text,
                samples: counts.get(&ins.ip()).copied().unwrap_or(0),
                share: shares[i],
                source: object.location(ins.ip()).map(|(f, l)| format!("{f}:{l}")),
                inlined: inlined_function(object, ins.ip()),
                hints: std::mem::take(&mut hints[i]),
                jump_to,
                conditional: ins.flow_control() == FlowControl::ConditionalBranch,
                mca: None,
            }
        })
        .collect();
    let mut warning = None;
    let hottest = (0..instrs.len()).max_by_key(|&i| instructions[i].samples).filter(|&i| instructions[i].samples > 0);
    let mut mca_block = None;
    if let (Some(request), Some(hottest)) = (mca, hottest) {
        match run_mca(request, &instrs, &mut instructions, hottest) {
            Ok(block) => mca_block = Some(block),
            Err(e) => warning = Some(format!("{}: {e}", normalize(&object.function_name(sym)))),
        }
    }
    let function = AnnotatedFunction {
        name: normalize(&object.function_name(sym)),
        object: object.path.clone(),
        start: sym.start,
        samples: fn_samples,
        share: if total == 0 { 0.0 } else { fn_samples as f64 / total as f64 },
        instructions,
        mca: mca_block,
    };
    (function, warning)
}

/// The innermost inlined function at `ip`, if `ip` is in inlined code.
fn inlined_function(object: &ObjectInfo, ip: u64) -> Option<String> {
    let frames = object.frames(ip);
    if frames.len() < 2 {
        return None;
    }
    frames.into_iter().next()?.function.map(|f| normalize(&f))
}

/// Analyse the hot block with llvm-mca (always in AT&T syntax, which LLVM's assembler reads).
fn run_mca(
    request: &McaRequest,
    instrs: &[Instruction],
    annotated: &mut [AnnotatedInstruction],
    hottest: usize,
) -> Result<McaBlock, String> {
    let addresses: Vec<u64> = instrs.iter().map(|i| i.ip()).collect();
    let jumps: Vec<Option<u64>> = annotated.iter().map(|a| a.jump_to).collect();
    let branches: Vec<bool> = instrs.iter().map(|i| i.flow_control() != FlowControl::Next).collect();
    let (start, end) = mca::hot_block(&addresses, &jumps, &branches, hottest);
    let mut gas = GasFormatter::new();
    let lines: Vec<String> = instrs[start..=end]
        .iter()
        .map(|i| {
            let mut text = String::new();
            gas.format(i, &mut text);
            text
        })
        .collect();
    let (rows, iterations, total_cycles, block_rthroughput) = mca::analyse(&request.binary, &request.cpu, &lines)?;
    for (a, row) in annotated[start..=end].iter_mut().zip(rows) {
        a.mca = Some(row);
    }
    Ok(McaBlock {
        cpu: request.cpu.clone(),
        start: addresses[start],
        end: addresses[end],
        iterations,
        total_cycles,
        block_rthroughput,
    })
}

/// Source text cache for interleaving.
#[derive(Default)]
struct Sources(HashMap<String, Option<Vec<String>>>);

impl Sources {
    fn line(&mut self, location: &str) -> Option<String> {
        let (file, line) = location.rsplit_once(':')?;
        let line: usize = line.parse().ok()?;
        let lines = self
            .0
            .entry(file.to_string())
            .or_insert_with(|| std::fs::read_to_string(file).ok().map(|t| t.lines().map(String::from).collect()));
        let text = lines.as_ref()?.get(line.checked_sub(1)?)?.trim();
        // Keep one source line on one terminal line.
        Some(match text.char_indices().nth(100) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.to_string(),
        })
    }
}

fn print_function(f: &AnnotatedFunction, profile: &Profile) {
    crate::outln!(
        "{}  {}",
        color::bold(&f.name),
        color::dim(&format!(
            "[{}]  {} samples, {:.2}% of {} {} samples",
            basename(&f.object),
            f.samples,
            f.share * 100.0,
            profile.total_samples(),
            profile.event
        ))
    );
    let targets: HashSet<u64> = f.instructions.iter().filter_map(|i| i.jump_to).collect();
    let mut sources = Sources::default();
    let mut last_source: Option<(&str, Option<&str>)> = None;
    let mut explained: BTreeMap<&str, ()> = BTreeMap::new();
    for ins in &f.instructions {
        let here = ins.source.as_deref().map(|s| (s, ins.inlined.as_deref()));
        if here != last_source {
            if let Some((loc, inlined)) = here {
                let text = sources.line(loc).unwrap_or_default();
                let from = inlined.map_or(String::new(), |f| format!("  [inlined {f}]"));
                crate::outln!("{}", color::dim(&format!("{:>19}{}  {text}{from}", "", basename(loc))));
            }
            last_source = here;
        }
        let share = if ins.samples == 0 { String::new() } else { format!("{:.2}%", ins.share * 100.0) };
        let samples = if ins.samples == 0 { String::new() } else { ins.samples.to_string() };
        let gutter = if targets.contains(&ins.address) { "▶" } else { " " };
        let mut text = ins.text.clone();
        if let Some(to) = ins.jump_to.filter(|to| *to <= ins.address) {
            // A conditional backward branch closes a loop; an unconditional one may only
            // share an epilogue.
            let what = if ins.conditional { "loop back" } else { "back" };
            text.push_str(&color::dim(&format!("   ↑ {what} to {to:x}")));
        }
        if let Some(m) = &ins.mca {
            text.push_str(&color::dim(&format!(
                "   [mca: lat {} rthr {:.2} uops {}]",
                m.latency, m.rthroughput, m.uops
            )));
        }
        crate::outln!(
            "{} {samples:>8}  {gutter}{:>6x}:  {text}",
            paint_share(ins.share, &format!("{share:>7}")),
            ins.address
        );
        for h in &ins.hints {
            let latency = if h.latency.is_empty() {
                String::new()
            } else {
                let parts: Vec<String> = h.latency.iter().map(|(k, v)| format!("{k} {v}")).collect();
                format!(" — latency (cycles): {}", parts.join("; "))
            };
            crate::outln!("{:>27}{}", "", color::yellow(&format!("⚠ {}{latency}", h.title)));
            if h.id != "skid" && explained.insert(h.id.as_str(), ()).is_none() {
                crate::outln!("{:>29}{}", "", color::dim(&h.detail));
            }
        }
    }
    if let Some(m) = &f.mca {
        crate::outln!(
            "{}",
            color::bold(&format!(
                "llvm-mca ({}): hot block {:x}..{:x}: {:.2} cycles per iteration at best (block reciprocal throughput), {:.2} simulated",
                m.cpu,
                m.start,
                m.end,
                m.block_rthroughput,
                m.total_cycles as f64 / m.iterations.max(1) as f64
            ))
        );
    }
    crate::outln!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::format::{ObjectRef, SampleCount, Task};

    /// A profile of this test binary with samples on `normalize`'s first instructions.
    fn profile_on_own_code() -> (Profile, u64) {
        let exe = std::env::current_exe().unwrap().to_str().unwrap().to_string();
        let obj = ObjectInfo::load(&exe).unwrap();
        let sym = obj.symbols_named("perflab::profile::symbolize::normalize").next().unwrap().clone();
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
        assert_eq!(fns[0].name, "perflab::profile::symbolize::normalize");
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
        let named =
            annotate(&p, &mut s, Some("perflab::profile::symbolize::demangle"), 3, Syntax::Att, None, None).unwrap();
        assert_eq!(named[0].samples, 0);
    }

    #[test]
    fn kernel_functions_are_disassembled_from_the_kernel_image_with_the_kaslr_slide() {
        // This test binary stands in for vmlinux: the "running kernel" has it 0x1000_0000 higher.
        let exe = std::env::current_exe().unwrap();
        let obj = ObjectInfo::load(exe.to_str().unwrap()).unwrap();
        let name = "perflab::profile::symbolize::normalize";
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
            kernel_symbols: vec![crate::profile::format::KernelSymbol {
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
        assert!(matches!(err, Err(Failure::Usage(m)) if m.contains("cannot use /nonexistent/vmlinux")));
        let hottest =
            annotate(&p, &mut s, None, 3, Syntax::Att, None, Some(Path::new("/nonexistent/vmlinux"))).unwrap();
        assert!(hottest.is_empty());
        assert!(s.warnings.last().unwrap().contains("hot kernel functions are not annotated"), "{:?}", s.warnings);
        // A profile whose kernel addresses were unreadable says so.
        p.kernel_symbols.clear();
        p.kernel_symbols_note = Some("/proc/kallsyms shows zero addresses".into());
        let image = s.object(exe.to_str().unwrap()).unwrap();
        assert_eq!(kernel_target(&p, &image, name).err().unwrap(), "/proc/kallsyms shows zero addresses");
    }
}
