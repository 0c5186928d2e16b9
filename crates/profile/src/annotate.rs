//! `perflab annotate`: disassembly (iced-x86) of the hottest functions, or a named one,
//! with per-instruction samples and shares, source lines interleaved, jump targets and
//! loop back-edges marked, and instruction-cost hints (see `super::hints`).

use super::aggregate::{self, By};
use super::error::{NotAnnotated, ProfileError};
use super::format::{Profile, SampleCount, Space};
use super::hints::{self, Hint};
use super::jitmap;
use super::kernel;
use super::mca::{self, McaBlock, McaInstruction};
use super::symbolize::{normalize, FunctionSymbol, ObjectInfo, Symbolizer};
use iced_x86::{FlowControl, Formatter, GasFormatter, Instruction, IntelFormatter};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

mod decode;
use decode::{DataWhy, Decoded, Kind};

/// The assembly syntax of the disassembly (`--syntax`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// AT&T, as objdump and perf annotate print by default.
    Att,
    /// Intel.
    Intel,
}

impl Syntax {
    /// The syntaxes as `--syntax` spells them.
    pub const NAMES: [&'static str; 2] = ["att", "intel"];
}

impl std::str::FromStr for Syntax {
    type Err = super::error::UnknownChoice;
    fn from_str(s: &str) -> Result<Syntax, Self::Err> {
        match s {
            "att" => Ok(Syntax::Att),
            "intel" => Ok(Syntax::Intel),
            other => Err(super::error::UnknownChoice { expected: "syntax att or intel", found: other.to_string() }),
        }
    }
}

/// What `perflab annotate` annotates, and how.
#[derive(Debug, Clone)]
pub struct AnnotateOptions {
    /// Annotate this function (demangled name, clone suffixes optional) instead of the hottest ones.
    pub symbol: Option<String>,
    /// How many of the hottest functions to annotate when no --symbol is given.
    pub top: usize,
    /// Assembly syntax.
    pub syntax: Syntax,
    /// Run llvm-mca on each function's hot loop (or hot basic block) for per-instruction
    /// latency and throughput; CPU is an LLVM -mcpu name (default: this machine's family).
    pub mca: Option<String>,
    /// The running kernel's image with symbols (vmlinux) for kernel functions; default:
    /// where perf looks (/boot/vmlinux-RELEASE, /usr/lib/debug/boot/vmlinux-RELEASE, ...).
    pub vmlinux: Option<PathBuf>,
}

/// Where and for which CPU to run llvm-mca.
pub struct McaRequest {
    /// The llvm-mca executable.
    pub binary: PathBuf,
    /// The LLVM `-mcpu` name to model.
    pub cpu: String,
}

/// One instruction of an annotated function.
#[derive(Debug, Serialize)]
pub struct AnnotatedInstruction {
    /// Its address.
    pub address: u64,
    /// The disassembled instruction.
    pub text: String,
    /// Samples at it.
    pub samples: u64,
    /// Share of the function's samples, 0–1.
    pub share: f64,
    /// `file:line` of the innermost (inlined) source location.
    pub source: Option<String>,
    /// The function whose code this is, when it was inlined into the annotated one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inlined: Option<String>,
    /// What perflab notices about it (see `hints`).
    pub hints: Vec<Hint>,
    /// Near branch target inside the function, if this is a jump.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jump_to: Option<u64>,
    /// The function a call goes to, when it is known (`call <name>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_to: Option<String>,
    /// Whether this is a conditional branch.
    #[serde(skip)]
    pub conditional: bool,
    /// Whether control does not simply go on to the next instruction (a branch, call
    /// target aside; a return, a trap): the end of a basic block.
    #[serde(skip)]
    pub ends_block: bool,
    /// Whether this is an indirect jump (`jmp *%rax`): an interpreter's dispatch.
    #[serde(skip)]
    pub indirect_jump: bool,
    /// These bytes are data, not an instruction: why (`skipped`: a known instruction
    /// start lies inside the instruction they would begin; `prefix`: a prefix a branch
    /// goes past; `trap arguments`: an SBCL
    /// error trap's; `undecodable`; `cut off`: an instruction cut by the end of the code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<&'static str>,
    /// SBCL's trap code, for an `int3` of SBCL code (the row covers both bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trap: Option<u8>,
    /// llvm-mca's figures, for instructions of the analysed hot block (`--mca`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mca: Option<McaInstruction>,
}

/// One function's disassembly with its samples.
#[derive(Debug, Serialize)]
pub struct AnnotatedFunction {
    /// The function's name.
    pub name: String,
    /// Its object.
    pub object: String,
    /// Its first address.
    pub start: u64,
    /// Samples in it.
    pub samples: u64,
    /// Share of all samples in the profile, 0–1.
    pub share: f64,
    /// Its instructions, in address order.
    pub instructions: Vec<AnnotatedInstruction>,
    /// llvm-mca's summary of the hot block (`--mca`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mca: Option<McaBlock>,
    /// Code generated at run time (JIT, SBCL), disassembled from the copy taken while
    /// the process ran.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub generated: bool,
    /// What the reader should know about the disassembly (where decoding started in
    /// unnamed code, a partial copy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The annotation of a profile: `annotate --json` writes it (schema_version 1), the
/// terminal shows its functions.
#[derive(Debug, Serialize)]
pub struct Annotation {
    /// Version of this report's JSON schema.
    pub schema_version: u32,
    /// The event sampled.
    pub event: String,
    /// Samples in the profile.
    pub samples: u64,
    /// The functions annotated, hottest first (or the one asked for).
    pub functions: Vec<AnnotatedFunction>,
    /// Doubts about the annotation, one line each.
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// llvm-mca is installed but was not asked for (the terminal suggests `--mca`).
    #[serde(skip)]
    pub mca_available: bool,
}

/// Annotate the hottest functions of `profile`, or the one named in `opts`.
pub fn annotation(profile: &Profile, opts: &AnnotateOptions) -> Result<Annotation, ProfileError> {
    let installed_mca = mca::find();
    let mca_request = match (&opts.mca, &installed_mca) {
        (None, _) => None,
        (Some(_), None) => return Err(ProfileError::NoMca),
        (Some(cpu), Some(binary)) => Some(McaRequest {
            cpu: if cpu == "auto" { mca::default_cpu(binary) } else { cpu.clone() },
            binary: binary.clone(),
        }),
    };
    let mut symbolizer = Symbolizer::default();
    let functions = annotate(
        profile,
        &mut symbolizer,
        opts.symbol.as_deref(),
        opts.top,
        opts.syntax,
        mca_request.as_ref(),
        opts.vmlinux.as_deref(),
    )?;
    Ok(Annotation {
        schema_version: 1,
        event: profile.event.clone(),
        samples: profile.total_samples(),
        mca_available: opts.mca.is_none() && installed_mca.is_some(),
        functions,
        warnings: symbolizer.warnings,
    })
}

/// A function to disassemble.
enum Target {
    /// A function of an object file (or of the kernel image).
    Object {
        object: Rc<ObjectInfo>,
        symbol: FunctionSymbol,
        /// For a kernel function: running-kernel address − address in the image (KASLR).
        kernel_slide: Option<u64>,
    },
    /// Code generated at run time: the profile's copy of it (`jit_symbols[index]`).
    Runtime { index: usize },
}

/// The kernel image to disassemble kernel functions from: `--vmlinux`, else one where
/// perf looks. The error says why kernel functions cannot be annotated.
fn kernel_image(symbolizer: &mut Symbolizer, vmlinux: Option<&Path>) -> Result<Rc<ObjectInfo>, NotAnnotated> {
    let path = match vmlinux {
        Some(p) => p.to_path_buf(),
        None => kernel::find_vmlinux().ok_or_else(|| {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            NotAnnotated::NoKernelImage { release: release.trim().to_string() }
        })?,
    };
    let path = path.to_str().ok_or(NotAnnotated::KernelImagePath)?.to_string();
    symbolizer.object(&path).ok_or_else(|| {
        let why = symbolizer.warnings.pop().unwrap_or_default();
        NotAnnotated::KernelImage { path, why }
    })
}

/// A kernel function of the profile located in the kernel image.
fn kernel_target(profile: &Profile, image: &Rc<ObjectInfo>, name: &str) -> Result<Target, NotAnnotated> {
    if profile.kernel_symbols.is_empty() {
        return Err(NotAnnotated::NoKernelNames(
            profile
                .kernel_symbols_note
                .clone()
                .unwrap_or_else(|| "the profile has no kernel addresses of named functions".to_string()),
        ));
    }
    let running =
        profile.kernel_symbols.iter().find(|k| normalize(&k.name) == name).ok_or(NotAnnotated::NotSampledKernel)?;
    if let Some(module) = &running.module {
        return Err(NotAnnotated::InModule(module.clone()));
    }
    let symbol =
        image.symbols_named(name).next().cloned().ok_or_else(|| NotAnnotated::NotDefined(image.path.clone()))?;
    let kernel_slide = Some(running.start.wrapping_sub(symbol.start));
    Ok(Target::Object { object: image.clone(), symbol, kernel_slide })
}

fn targets(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    symbol: Option<&str>,
    top: usize,
    vmlinux: Option<&Path>,
) -> Result<Vec<Target>, ProfileError> {
    if let Some(index) = symbol.and_then(|s| runtime_by_address(profile, s)) {
        return Ok(vec![Target::Runtime { index }]);
    }
    let located = aggregate::locate(profile, symbolizer);
    let total = profile.total_samples().max(1);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut kernel_skipped = None;
    // Hottest first: rows are sorted by samples; find one sample of each to get its symbol.
    for row in aggregate::flat(&located, By::Function) {
        if symbol.is_some_and(|s| normalize(s) != row.name && s != row.name) {
            continue;
        }
        if kernel::is_kernel_object(&row.object) && row.name != kernel::KERNEL_OBJECT {
            let target = kernel_image(symbolizer, vmlinux).and_then(|image| kernel_target(profile, &image, &row.name));
            match target {
                Ok(t) => out.push(t),
                Err(why) if symbol.is_some() => {
                    return Err(ProfileError::CannotAnnotateKernel { name: row.name.clone(), why })
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
        let found = match hit {
            None => Err(NotAnnotated::OutsideMappings),
            Some((sample, _)) if is_runtime(profile, sample.object) => runtime_target(profile, sample),
            Some((sample, located)) => match symbolizer.object(&located.location.object) {
                None => Err(NotAnnotated::Unreadable(located.location.object.clone())),
                Some(object) => match object.svma(sample.offset).and_then(|a| object.symbol_at(a)).cloned() {
                    None => Err(NotAnnotated::NoSymbol(object.path.clone())),
                    Some(sym) => Ok(Target::Object { object, symbol: sym, kernel_slide: None }),
                },
            },
        };
        match found {
            Ok(target) => {
                if seen.insert(target_key(&target)) {
                    out.push(target);
                }
            }
            Err(why) if symbol.is_some() => return Err(ProfileError::CannotAnnotate { name: row.name.clone(), why }),
            // Said plainly, so a cooler function annotated instead is not mistaken for the hottest.
            Err(why) => symbolizer.warnings.push(format!(
                "cannot annotate `{}` ({:.1}% of the samples): {why}",
                row.name,
                row.self_samples as f64 * 100.0 / total as f64
            )),
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
                        out.push(Target::Object { object: object.clone(), symbol: sym, kernel_slide: None });
                        break;
                    }
                }
            }
        }
        if out.is_empty() {
            return Err(ProfileError::NotInObjects(name.to_string()));
        }
    }
    Ok(out)
}

fn target_key(target: &Target) -> (String, u64) {
    match target {
        Target::Object { object, symbol, .. } => (object.path.clone(), symbol.start),
        Target::Runtime { index } => (String::new(), *index as u64),
    }
}

fn is_runtime(profile: &Profile, object: Option<u32>) -> bool {
    object.is_some_and(|o| jitmap::is_runtime_object(&profile.objects[o as usize].path))
}

/// Whether runtime code is SBCL's compiled Lisp: its process is called `sbcl`, or it lies
/// in SBCL's core file (`sbcl.core+0x…`). An SBCL program saved as its own executable
/// is not recognised (its traps then decode as plain `int3`).
fn is_sbcl(profile: &Profile, symbol: &crate::format::JitSymbol) -> bool {
    if symbol.unnamed && symbol.name.starts_with("sbcl.core+") {
        return true;
    }
    let pid = jitmap::runtime_pid(&profile.objects[symbol.object as usize].path);
    pid.is_some_and(|pid| profile.tasks.iter().any(|t| t.pid == pid && t.comm == "sbcl"))
}

/// The runtime symbol a sample of runtime code lies in, if its code was copied.
fn runtime_target(profile: &Profile, sample: &SampleCount) -> Result<Target, NotAnnotated> {
    let index = runtime_symbol(profile, sample.object, sample.offset).ok_or(NotAnnotated::RuntimeUnnamed)?;
    if profile.jit_symbols[index].code.is_none() {
        return Err(NotAnnotated::RuntimeNotCopied(
            profile.code_note.clone().unwrap_or_else(|| "recorded by a perflab that did not copy runtime code".into()),
        ));
    }
    Ok(Target::Runtime { index })
}

/// The index of the runtime symbol of `object` covering `address`.
fn runtime_symbol(profile: &Profile, object: Option<u32>, address: u64) -> Option<usize> {
    let object = object?;
    profile.jit_symbols.iter().position(|j| j.object == object && (j.start..j.start + j.size.max(1)).contains(&address))
}

/// `--symbol 0xADDRESS`: the runtime code at that address.
fn runtime_by_address(profile: &Profile, text: &str) -> Option<usize> {
    let address = u64::from_str_radix(text.strip_prefix("0x")?, 16).ok()?;
    profile.jit_symbols.iter().position(|j| {
        let code_end = j.code.as_ref().map_or(0, |c| c.start + c.hex.len() as u64 / 2);
        (j.start..(j.start + j.size).max(code_end)).contains(&address)
    })
}

/// Disassemble `symbol` (or the `top` hottest functions) of `profile` with each instruction's samples.
pub fn annotate(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    symbol: Option<&str>,
    top: usize,
    syntax: Syntax,
    mca: Option<&McaRequest>,
    vmlinux: Option<&Path>,
) -> Result<Vec<AnnotatedFunction>, ProfileError> {
    // Shares weigh each sample by its period (time or events), as everywhere.
    let total = profile.total_period();
    let mut out = Vec::new();
    for target in targets(profile, symbolizer, symbol, top, vmlinux)? {
        let (function, warning) = annotate_one(profile, &target, total, syntax, mca);
        symbolizer.warnings.extend(warning);
        out.push(function);
    }
    Ok(out)
}

/// What to decode for a target: its name, code, samples per address and where its
/// source lines come from.
struct Code {
    name: String,
    object: String,
    start: u64,
    end: u64,
    bytes: Vec<u8>,
    /// Address of `bytes[0]`.
    bytes_start: u64,
    bitness: u32,
    /// Per sampled address: (samples, summed period).
    counts: HashMap<u64, (u64, u64)>,
    lines: Option<Rc<ObjectInfo>>,
    generated: bool,
    note: Option<String>,
    /// Instruction starts known besides the entry and the sampled addresses: other
    /// symbols' (or perf-map entries') starts inside the code.
    starts: BTreeSet<u64>,
    /// SBCL's compiled Lisp (`int3` is followed by a trap code).
    sbcl: bool,
}

fn code_of(profile: &Profile, target: &Target) -> Code {
    match target {
        Target::Object { object, symbol: sym, kernel_slide } => {
            let len = object.symbol_len(sym);
            let end = sym.start + len;
            let mut counts: HashMap<u64, (u64, u64)> = HashMap::new();
            for s in &profile.samples {
                let svma = match (kernel_slide, s.space, s.object) {
                    (Some(slide), Space::Kernel, _) => Some(s.offset.wrapping_sub(*slide)),
                    (None, Space::User, Some(idx)) if profile.objects[idx as usize].path == object.path => {
                        object.svma(s.offset)
                    }
                    _ => None,
                };
                if let Some(a) = svma.filter(|a| (sym.start..end).contains(a)) {
                    let entry = counts.entry(a).or_default();
                    entry.0 += s.count;
                    entry.1 += s.period;
                }
            }
            Code {
                name: normalize(&object.function_name(sym)),
                object: object.path.clone(),
                start: sym.start,
                end,
                bytes: object.bytes(sym.start, len).unwrap_or(&[]).to_vec(),
                bytes_start: sym.start,
                bitness: if object.is_64 { 64 } else { 32 },
                counts,
                lines: Some(object.clone()),
                generated: false,
                note: None,
                starts: object.symbol_starts(sym.start + 1..end).collect(),
                sbcl: false,
            }
        }
        Target::Runtime { index } => {
            let symbol = &profile.jit_symbols[*index];
            let mut counts: HashMap<u64, (u64, u64)> = HashMap::new();
            for s in &profile.samples {
                if s.object == Some(symbol.object) && (symbol.start..symbol.start + symbol.size).contains(&s.offset) {
                    let entry = counts.entry(s.offset).or_default();
                    entry.0 += s.count;
                    entry.1 += s.period;
                }
            }
            let (bytes_start, bytes) =
                symbol.code.as_ref().and_then(|c| Some((c.start, c.bytes()?))).unwrap_or((symbol.start, Vec::new()));
            let object = profile.objects[symbol.object as usize].path.clone();
            let code_end = bytes_start + bytes.len() as u64;
            // Other runtime code named inside the copy (perf-map entries) starts instructions.
            let starts = profile
                .jit_symbols
                .iter()
                .filter(|j| j.object == symbol.object && (bytes_start..code_end).contains(&j.start))
                .map(|j| j.start)
                .collect();
            let mut code = Code {
                name: symbol.name.clone(),
                object,
                start: symbol.start,
                end: bytes_start + bytes.len() as u64,
                bytes,
                bytes_start,
                bitness: 64,
                counts,
                lines: None,
                generated: true,
                note: None,
                starts,
                sbcl: is_sbcl(profile, symbol),
            };
            if symbol.unnamed || bytes_start > symbol.start {
                // Where instructions begin is unknown: start where decoding meets every sampled address.
                let sampled: Vec<u64> = code.counts.keys().copied().collect();
                let start = sync_start(&code.bytes, bytes_start, &sampled, code.bitness, code.sbcl);
                code.note = Some(format!(
                    "nothing names where this code starts: decoding starts at {start:#x}, {} bytes before the \
                     first sampled instruction, where it meets every sampled address; instructions before it are not shown",
                    sampled.iter().min().map_or(0, |m| m.saturating_sub(start))
                ));
                code.start = start;
            } else if code.end < symbol.start + symbol.size {
                code.note = Some(format!(
                    "only the first {} of its {} bytes were copied",
                    code.end.saturating_sub(symbol.start),
                    symbol.size
                ));
            } else {
                code.end = symbol.start + symbol.size;
            }
            code
        }
    }
}

/// Functions up to this many instructions are printed whole.
const SHORT_FUNCTION: usize = 60;
/// An instruction with at least this share of its function's samples is hot: it, the
/// loop around it and `CONTEXT` instructions on each side are printed.
pub(crate) const HOT_INSTRUCTION_SHARE: f64 = 0.01;
const CONTEXT: usize = 4;

/// Hot loops spanning at least this share of a function's instructions say nothing about
/// where it spends its time: an interpreter's handlers all jump back to its dispatch, so
/// the "loops" cover nearly all of it. Its basic blocks are then ranked by samples.
const DISPATCH_COVER: f64 = 0.5;
/// The ranked view shows at most this many blocks...
const RANKED_BLOCKS_MAX: usize = 16;
/// ...and stops once those shown hold this share of the function's samples.
const RANKED_SHARE: f64 = 0.9;

/// What the terminal shows of a function by default.
pub struct HotView {
    /// Per instruction: shown or left out.
    pub shown: Vec<bool>,
    /// Set when the function's back-edges span most of it (an interpreter loop): its
    /// hottest basic blocks are shown instead of its loops.
    pub ranked: Option<RankedBlocks>,
}

/// The hottest basic blocks of a function whose loops span most of it, and its dispatch
/// structure.
pub struct RankedBlocks {
    /// Indirect jumps in the function (an interpreter's dispatch points).
    pub indirect_jumps: usize,
    /// Basic blocks in the function.
    pub blocks: usize,
    /// Share of the function's instructions inside hot loops (what the loop rule would show).
    pub loop_cover: f64,
    /// The blocks shown, hottest first: (first instruction, last instruction, share of the
    /// function's samples).
    pub shown: Vec<(usize, usize, f64)>,
}

impl RankedBlocks {
    /// Share of the function's samples in the blocks shown.
    pub fn share(&self) -> f64 {
        self.shown.iter().map(|b| b.2).sum()
    }
}

/// Which instructions the terminal shows by default: all of a short function (or one
/// without samples); otherwise the hot blocks — every instruction with at least
/// `HOT_INSTRUCTION_SHARE` of the samples, the hot loops around them, and a few
/// instructions of context on each side — unless those loops span most of the function
/// (an interpreter's dispatch): then its hottest basic blocks.
pub fn hot_view(f: &AnnotatedFunction) -> HotView {
    let n = f.instructions.len();
    if n <= SHORT_FUNCTION || f.samples == 0 {
        return HotView { shown: vec![true; n], ranked: None };
    }
    let mut shown = vec![false; n];
    let mut in_loop = vec![false; n];
    let index_of: HashMap<u64, usize> = f.instructions.iter().enumerate().map(|(i, ins)| (ins.address, i)).collect();
    for (i, ins) in f.instructions.iter().enumerate() {
        if ins.share >= HOT_INSTRUCTION_SHARE {
            shown[i.saturating_sub(CONTEXT)..(i + CONTEXT + 1).min(n)].iter_mut().for_each(|s| *s = true);
        }
        // A loop holding a hot instruction is shown whole, from its head to the back-edge.
        if let Some(head) =
            ins.jump_to.filter(|to| ins.conditional && *to <= ins.address).and_then(|to| index_of.get(&to))
        {
            if f.instructions[*head..=i].iter().map(|x| x.share).sum::<f64>() >= hints::HOT_SHARE {
                in_loop[*head..=i].iter_mut().for_each(|s| *s = true);
            }
        }
    }
    let loop_cover = in_loop.iter().filter(|x| **x).count() as f64 / n as f64;
    if loop_cover < DISPATCH_COVER {
        shown.iter_mut().zip(&in_loop).for_each(|(s, l)| *s |= *l);
        return HotView { shown, ranked: None };
    }
    let blocks = basic_blocks(f);
    let mut ranked: Vec<(usize, usize, f64)> = blocks
        .iter()
        .map(|&(first, last)| (first, last, f.instructions[first..=last].iter().map(|x| x.share).sum::<f64>()))
        .collect();
    ranked.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    let mut chosen = Vec::new();
    let mut held = 0.0;
    for block in ranked {
        if chosen.len() >= RANKED_BLOCKS_MAX || held >= RANKED_SHARE || block.2 < HOT_INSTRUCTION_SHARE {
            break;
        }
        held += block.2;
        chosen.push(block);
    }
    let mut shown = vec![false; n];
    for &(first, last, _) in &chosen {
        shown[first..=last].iter_mut().for_each(|s| *s = true);
    }
    let ranked = RankedBlocks {
        indirect_jumps: f.instructions.iter().filter(|i| i.indirect_jump).count(),
        blocks: blocks.len(),
        loop_cover,
        shown: chosen,
    };
    HotView { shown, ranked: Some(ranked) }
}

/// The function's basic blocks as (first, last) instruction indices: a block starts at
/// the entry, at a jump target and after an instruction that ends one (a branch, a
/// return, a trap, data).
fn basic_blocks(f: &AnnotatedFunction) -> Vec<(usize, usize)> {
    let targets: HashSet<u64> = f.instructions.iter().filter_map(|i| i.jump_to).collect();
    let mut blocks = Vec::new();
    let mut first = 0;
    for (i, ins) in f.instructions.iter().enumerate() {
        let next_starts = f.instructions.get(i + 1).is_none_or(|next| targets.contains(&next.address));
        if ins.ends_block || next_starts {
            blocks.push((first, i));
            first = i + 1;
        }
    }
    blocks
}

/// The earliest address in the first bytes of `bytes` from which x86 decoding runs
/// through every sampled address as an instruction boundary, without invalid opcodes:
/// code without a known entry (unnamed runtime code) is decoded from there.
fn sync_start(bytes: &[u8], bytes_start: u64, sampled: &[u64], bitness: u32, sbcl: bool) -> u64 {
    let Some(&first) = sampled.iter().min() else { return bytes_start };
    let last = sampled.iter().copied().max().unwrap_or(first);
    let code = decode::Code { bytes, start: bytes_start, bitness, sbcl };
    let decodes_through = |from: u64| {
        let mut boundaries = HashSet::new();
        let mut ip = from;
        while let Some((ins, kind)) = code.at(ip) {
            if matches!(kind, Kind::Data(_)) {
                return false;
            }
            boundaries.insert(ip);
            if ip >= last {
                break;
            }
            ip = ins.next_ip();
        }
        sampled.iter().all(|a| boundaries.contains(a))
    };
    (bytes_start..=first).find(|&from| decodes_through(from)).unwrap_or(first)
}

fn annotate_one(
    profile: &Profile,
    target: &Target,
    total: u64,
    syntax: Syntax,
    mca: Option<&McaRequest>,
) -> (AnnotatedFunction, Option<String>) {
    let code = code_of(profile, target);
    let (start, end) = (code.start, code.end);
    // Per address: (samples, summed period).
    let counts = &code.counts;
    let offset = (start.saturating_sub(code.bytes_start) as usize).min(code.bytes.len());
    let length = (end.saturating_sub(start) as usize).min(code.bytes.len() - offset);
    let bytes = &code.bytes[offset..offset + length];
    let mut starts = code.starts.clone();
    starts.extend(counts.keys().copied());
    let decoded = decode::decode(&decode::Code { bytes, start, bitness: code.bitness, sbcl: code.sbcl }, &starts);
    let instrs: Vec<Instruction> = decoded.iter().map(|d| d.ins).collect();
    let fn_samples: u64 = counts.values().map(|c| c.0).sum();
    let fn_period: u64 = counts.values().map(|c| c.1).sum();
    let shares: Vec<f64> = instrs
        .iter()
        .map(|i| if fn_period == 0 { 0.0 } else { counts.get(&i.ip()).map_or(0, |c| c.1) as f64 / fn_period as f64 })
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
    let comment = match syntax {
        Syntax::Att => "#",
        Syntax::Intel => ";",
    };
    let mut instructions: Vec<AnnotatedInstruction> = decoded
        .iter()
        .enumerate()
        .map(|(i, Decoded { ins, kind })| {
            let mut text = String::new();
            let data = match kind {
                Kind::Data(why) => Some(why),
                _ => None,
            };
            if let Some(why) = data {
                let at = (ins.ip() - start) as usize;
                let data: Vec<String> = bytes[at..at + ins.len()].iter().map(|b| format!("{b:#04x}")).collect();
                let what = match why {
                    DataWhy::Skipped => "data: an instruction starts inside",
                    DataWhy::Prefix => "prefix of the next instruction, which a branch enters after it",
                    DataWhy::TrapArguments => "trap arguments",
                    DataWhy::Undecodable => "not an instruction",
                    DataWhy::Cut => "cut off by the end of the code",
                };
                text = format!(".byte {}   {comment} {what}", data.join(", "));
            } else {
                formatter.format(ins, &mut text);
                if let Kind::Trap(trap) = kind {
                    text = format!("{text}   {comment} {}", decode::trap_name(*trap));
                }
            }
            let flow = if data.is_some() { FlowControl::Next } else { ins.flow_control() };
            let jump_to = match flow {
                FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch => {
                    Some(ins.near_branch_target()).filter(|t| (start..end).contains(t))
                }
                _ => None,
            };
            let call_to = match flow {
                FlowControl::Call | FlowControl::UnconditionalBranch if jump_to.is_none() => {
                    called_function(profile, target, code.lines.as_deref(), ins.near_branch_target())
                }
                _ => None,
            };
            AnnotatedInstruction {
                address: ins.ip(),
                text,
                samples: counts.get(&ins.ip()).map_or(0, |c| c.0),
                share: shares[i],
                source: code.lines.as_ref().and_then(|o| o.location(ins.ip())).map(|(f, l)| format!("{f}:{l}")),
                inlined: code.lines.as_ref().and_then(|o| inlined_function(o, ins.ip())),
                hints: std::mem::take(&mut hints[i]),
                jump_to,
                call_to,
                conditional: flow == FlowControl::ConditionalBranch,
                ends_block: match kind {
                    Kind::Data(_) => true,
                    Kind::Trap(t) => *t != decode::SBCL_PENDING_INTERRUPT_TRAP,
                    Kind::Code => !matches!(flow, FlowControl::Next | FlowControl::Call | FlowControl::IndirectCall),
                },
                indirect_jump: flow == FlowControl::IndirectBranch,
                data: data.map(|why| match why {
                    DataWhy::Skipped => "skipped",
                    DataWhy::Prefix => "prefix",
                    DataWhy::TrapArguments => "trap arguments",
                    DataWhy::Undecodable => "undecodable",
                    DataWhy::Cut => "cut off",
                }),
                trap: match kind {
                    Kind::Trap(t) => Some(*t),
                    _ => None,
                },
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
            Err(e) => warning = Some(format!("{}: {e}", code.name)),
        }
    }
    let function = AnnotatedFunction {
        name: code.name,
        object: code.object,
        start,
        samples: fn_samples,
        share: if total == 0 { 0.0 } else { fn_period as f64 / total as f64 },
        instructions,
        mca: mca_block,
        generated: code.generated,
        note: code.note,
    };
    (function, warning)
}

/// The name of the function a call (or tail jump) at `address` goes to: a symbol of the
/// same object, or runtime code of the profile.
fn called_function(profile: &Profile, target: &Target, object: Option<&ObjectInfo>, address: u64) -> Option<String> {
    if address == 0 {
        return None;
    }
    if let Some(object) = object {
        let kernel_image = matches!(target, Target::Object { kernel_slide: Some(_), .. });
        if let Some(sym) = object.symbol_at(address).filter(|s| s.start == address || !kernel_image) {
            let name = normalize(&object.function_name(sym));
            let offset = address - sym.start;
            return Some(if offset == 0 { name } else { format!("{name}+{offset:#x}") });
        }
        return None;
    }
    let object = match target {
        Target::Runtime { index } => profile.jit_symbols[*index].object,
        Target::Object { .. } => return None,
    };
    let index = runtime_symbol(profile, Some(object), address)?;
    let symbol = &profile.jit_symbols[index];
    let offset = address - symbol.start;
    Some(if offset == 0 { symbol.name.clone() } else { format!("{}+{offset:#x}", symbol.name) })
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
    let branches: Vec<bool> = instrs
        .iter()
        .zip(annotated.iter())
        .map(|(i, a)| a.ends_block || i.flow_control() != FlowControl::Next)
        .collect();
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

#[cfg(test)]
mod tests;
