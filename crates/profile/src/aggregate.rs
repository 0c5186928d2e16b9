//! Flat profiles: samples summed by function, by source line or by object, and by
//! source regions (`--group-by-source 'GLOB:REGEX'`), each row with its share; with
//! call stacks (`profile -g`), inclusive counts per function and the stacks as names
//! (inlined functions expanded, one root per process) for folded output, flame graphs
//! and caller/callee trees.

use super::error::{ProfileError, UnknownChoice};
use super::format::{JitSymbol, Profile, Space, StackCount, Weight};
use super::jitmap;
use super::names::{NameList, Names};
use super::symbolize::{basename, Location, Symbolizer};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What a flat profile groups samples by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// Functions.
    Function,
    /// Source lines (`file:line`).
    Line,
    /// Objects (executables and libraries).
    Object,
}

impl By {
    /// The groupings as `--by` spells them.
    pub const NAMES: [&'static str; 3] = ["function", "line", "object"];
}

impl std::str::FromStr for By {
    type Err = UnknownChoice;
    fn from_str(s: &str) -> Result<By, UnknownChoice> {
        match s {
            "function" => Ok(By::Function),
            "line" => Ok(By::Line),
            "object" => Ok(By::Object),
            other => Err(UnknownChoice { expected: "function, line or object", found: other.to_string() }),
        }
    }
}

/// One row of a flat profile.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// Function, `file:line`, object path or region name, depending on the grouping.
    pub name: String,
    /// Object basename (empty for by-object and region rows, where `name` says it).
    pub object: String,
    /// Samples whose leaf is in it (self).
    pub self_samples: u64,
    /// self_period / all samples' periods, 0–1: each sample weighted by its period, so a
    /// share is of time for clock events and of events for count events (like `perf
    /// report`); for a clock sampled at a fixed rate it equals the share of samples.
    pub self_share: f64,
    /// Sum of sample periods (ns for clock events, events otherwise).
    pub self_period: u64,
    /// Samples with this function anywhere on the stack, each counted once even when
    /// recursive (only for functions of a profile with call stacks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_samples: Option<u64>,
    /// total_period / all samples' periods, 0–1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_share: Option<f64>,
    /// Sum of those samples' periods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_period: Option<u64>,
}

/// The rows of a table that were not made (see [`CallGraph::with_totals`]): how many,
/// and their summed self samples and period, for the terminal's `N more rows` line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RowsLeftOut {
    /// Rows left out.
    pub rows: usize,
    /// Their self samples.
    pub self_samples: u64,
    /// Their self periods.
    pub self_period: u64,
}

/// Where a candidate row of [`CallGraph::with_totals`] comes from.
#[derive(Clone, Copy)]
enum Source {
    /// A row with self samples, by index.
    Row(usize),
    /// A caller without self samples, by name pair.
    Pair(usize),
}

/// A row not yet made: ordered as the table is, the heaviest first (total period, total
/// samples, self period, self samples, all descending), then by name and object.
struct Candidate<'a> {
    totals: (u64, u64, u64, u64),
    name: &'a str,
    object: &'a str,
    source: Source,
}

impl Ord for Candidate<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .totals
            .cmp(&self.totals)
            .then_with(|| self.name.cmp(other.name))
            .then_with(|| self.object.cmp(other.object))
    }
}

impl PartialOrd for Candidate<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Candidate<'_> {}

/// Every sample group of a profile, symbolised once.
pub struct Located {
    /// Where the samples landed, symbolised; shared by every sample group at the same
    /// place (10⁶ threads sampled in one function hold one copy of its names).
    pub location: std::sync::Arc<Location>,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Number of samples.
    pub count: u64,
    /// Sum of their periods (ns for clock events, events otherwise).
    pub period: u64,
}

/// Symbolises (space, object, offset) triples, each unique one once.
struct Resolver<'a> {
    profile: &'a Profile,
    symbolizer: &'a mut Symbolizer,
    cache: HashMap<(u32, u64), std::sync::Arc<Location>>,
    /// Per object of the profile: whether it stands for runtime code (told once, not
    /// per frame).
    runtime: Vec<bool>,
    /// The JIT symbol found last.
    last_runtime_symbol: usize,
}

impl<'a> Resolver<'a> {
    fn new(profile: &'a Profile, symbolizer: &'a mut Symbolizer) -> Resolver<'a> {
        let runtime = profile.objects.iter().map(|o| jitmap::is_runtime_object(&o.path)).collect();
        Resolver { profile, symbolizer, cache: HashMap::new(), runtime, last_runtime_symbol: 0 }
    }
}

/// One frame of a symbolised call stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackFrame {
    /// The function's name (demangled).
    pub function: String,
    /// Object basename (or `[kernel]`, `[unknown]`, a process name for a process root).
    pub object: String,
    /// What the frame is.
    pub kind: FrameKind,
}

/// What a frame of a symbolised stack stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKind {
    /// A function at a code address (its enclosing symbol).
    Code,
    /// A function the compiler inlined into the frame below it in the stack.
    Inlined,
    /// The process the stack belongs to (profiles of several processes).
    Process,
}

/// The object name of runtime code (JIT) in reports.
const JIT_OBJECT: &str = "[jit]";

impl<'a> Resolver<'a> {
    /// The name of runtime code at `offset` (its address) from the profile's JIT
    /// symbols, `[unknown]` outside them; None when the place is not runtime code.
    fn runtime_name(&mut self, space: Space, object: Option<u32>, offset: u64) -> Option<&'a str> {
        let symbols = &self.profile.jit_symbols;
        Some(self.runtime_symbol(space, object, offset)?.map_or(UNKNOWN, |i| symbols[i].name.as_str()))
    }

    /// The number of the JIT symbol holding runtime code at `offset` (None outside them);
    /// None when the place is not runtime code.
    fn runtime_symbol(&mut self, space: Space, object: Option<u32>, offset: u64) -> Option<Option<usize>> {
        let profile: &'a Profile = self.profile;
        let object = object.filter(|&o| space == Space::User && self.runtime[o as usize])?;
        // The recorder writes them sorted by (object, start).
        let symbols = &profile.jit_symbols;
        // The last symbol starting at or before `offset`, where a search would find it.
        let found_at = |i: usize| {
            symbols.get(i).is_some_and(|j| (j.object, j.start) <= (object, offset))
                && symbols.get(i + 1).is_none_or(|n| (n.object, n.start) > (object, offset))
        };
        // A stack's frames come in address order more often than not: the symbol found
        // last and its neighbours first, then a search (1.2 M searches of 1.2 M symbols
        // were a tenth of `show`).
        let last = self.last_runtime_symbol;
        let i = [last, last + 1, last.wrapping_sub(1)]
            .into_iter()
            .find(|&i| found_at(i))
            .or_else(|| symbols.partition_point(|j| (j.object, j.start) <= (object, offset)).checked_sub(1));
        if let Some(i) = i {
            self.last_runtime_symbol = i;
        }
        Some(i.filter(|&i| symbols[i].object == object && offset - symbols[i].start < symbols[i].size))
    }

    fn resolve(&mut self, space: Space, object: Option<u32>, offset: u64) -> Location {
        if let Some(name) = self.runtime_name(space, object, offset) {
            let mut location = special(name);
            location.object = JIT_OBJECT.to_string();
            return location;
        }
        match (space, object) {
            (Space::User, Some(object)) => (*self.resolve_shared(space, Some(object), offset)).clone(),
            (Space::Kernel, _) => self.symbolizer.resolve_kernel(&self.profile.kernel_symbols, offset),
            _ => special("[unknown]"),
        }
    }

    /// [`resolve`](Self::resolve), one shared copy per distinct place in an object file.
    fn resolve_shared(&mut self, space: Space, object: Option<u32>, offset: u64) -> std::sync::Arc<Location> {
        match (space, object) {
            (Space::User, Some(o)) if !self.runtime[o as usize] => {
                let (profile, symbolizer) = (self.profile, &mut *self.symbolizer);
                self.cache
                    .entry((o, offset))
                    .or_insert_with(|| symbolizer.resolve(&profile.objects[o as usize].path, offset).into())
                    .clone()
            }
            _ => self.resolve(space, object, offset).into(),
        }
    }

    /// Functions inlined at a user address, innermost first.
    fn inlined(&mut self, space: Space, object: Option<u32>, offset: u64) -> Vec<String> {
        match (space, object) {
            (Space::User, Some(object)) => self.symbolizer.inlined(&self.profile.objects[object as usize].path, offset),
            _ => Vec::new(),
        }
    }
}

/// Every sample group of `profile`, symbolised (each distinct location once).
pub fn locate(profile: &Profile, symbolizer: &mut Symbolizer) -> Vec<Located> {
    locate_in(profile, &mut Resolver::new(profile, symbolizer))
}

/// Each entry of the profile's `frames`, symbolised (the call stacks' frames), in order.
pub(crate) fn locate_frames(profile: &Profile, symbolizer: &mut Symbolizer) -> Vec<Location> {
    let mut resolver = Resolver::new(profile, symbolizer);
    profile.frames.iter().map(|f| resolver.resolve(f.space, f.object, f.offset)).collect()
}

/// [`locate`] and the profile's call graph (None without call stacks), resolving each
/// distinct address once for both.
pub fn locate_with_graph(profile: &Profile, symbolizer: &mut Symbolizer) -> (Vec<Located>, Option<CallGraph>) {
    let mut resolver = Resolver::new(profile, symbolizer);
    (locate_in(profile, &mut resolver), CallGraph::new(profile, &mut resolver))
}

fn locate_in(profile: &Profile, resolver: &mut Resolver) -> Vec<Located> {
    profile
        .samples
        .iter()
        .map(|s| Located {
            location: resolver.resolve_shared(s.space, s.object, s.offset),
            pid: s.pid,
            tid: s.tid,
            count: s.count,
            period: s.period,
        })
        .collect()
}

/// The call stacks of a profile with every frame symbolised (each unique frame once).
/// Names are interned: each distinct function or object name is held once and frames
/// hold indices (150 stacks of 8,000 distinct frames took ~0.9 GB with a pair of
/// strings per frame); the stacks' frames lie in one array.
pub struct CallGraph {
    /// Every distinct function and object name, once.
    names: NameList,
    /// Every distinct (function, object basename) pair, as indices into `names`.
    pairs: Vec<(u32, u32)>,
    /// Per frame of the profile: its pair.
    frame_pairs: Vec<u32>,
    /// Per frame of the profile that has any: the functions inlined at it, innermost
    /// first (indices into `names`).
    inlined: HashMap<u32, Vec<u32>>,
    /// Every stack's frame indices, leaf first, one stack after the other.
    stack_frames: Vec<u32>,
    /// Per stack: its frames in `stack_frames`, samples and period.
    stacks: Vec<GraphStack>,
    /// Process name per pid: the root of its stacks when the profile has several processes.
    roots: HashMap<u32, String>,
    /// All stacks' summed periods: what shares are of.
    period: u64,
    /// What folded stacks count.
    weight: Weight,
}

/// One stack of a [`CallGraph`].
#[derive(Clone)]
struct GraphStack {
    pid: u32,
    /// Its frames: `stack_frames[start..end]`.
    start: usize,
    end: usize,
    samples: u64,
    period: u64,
}

/// Runtime code outside every symbol.
const UNKNOWN: &str = "[unknown]";

/// Is `symbol` a region named by its own start (`[anon 0x…]`: code in anonymous memory
/// that nothing names, as the recorder names it)?
fn is_anonymous_region(symbol: &JitSymbol) -> bool {
    let start = symbol.name.strip_prefix("[anon 0x").and_then(|rest| rest.strip_suffix(']'));
    symbol.unnamed && start.and_then(|hex| u64::from_str_radix(hex, 16).ok()) == Some(symbol.start)
}

/// Do the anonymous regions' names differ from each other and from every other runtime
/// name? Then each is numbered without looking it up. They do when the runtime code is
/// one process's, its symbols start at different addresses (as the recorder writes
/// them: sorted, one per start) and no other runtime name begins as theirs do; two
/// processes' regions at one address share a name, and are looked up.
fn anonymous_regions_unique(profile: &Profile) -> bool {
    let symbols = &profile.jit_symbols;
    symbols.windows(2).all(|w| w[0].object == w[1].object && w[0].start < w[1].start)
        && !symbols.iter().any(|s| s.name.starts_with("[anon ") && !is_anonymous_region(s))
}

/// The number of the (function, object) name pair `pair`, numbered in `pairs` when new:
/// the function's first pair is found in `first_pair` (by function name), any other in
/// `other_pairs`.
fn pair_id(
    pair: (u32, u32),
    pairs: &mut Vec<(u32, u32)>,
    first_pair: &mut Vec<u32>,
    other_pairs: &mut rustc_hash::FxHashMap<(u32, u32), u32>,
) -> u32 {
    const NONE: u32 = u32::MAX;
    let function = pair.0 as usize;
    if first_pair.len() <= function {
        first_pair.resize(function + 1, NONE);
    }
    let first = first_pair[function];
    if first != NONE && pairs[first as usize] == pair {
        return first;
    }
    if let Some(&id) = other_pairs.get(&pair) {
        return id;
    }
    let id = pairs.len() as u32;
    pairs.push(pair);
    if first == NONE {
        first_pair[function] = id;
    } else {
        other_pairs.insert(pair, id);
    }
    id
}

/// The stacks' frames laid one after the other, and each stack's place in them.
fn laid_out(stacks: &[StackCount]) -> (Vec<u32>, Vec<GraphStack>) {
    let mut frames = Vec::with_capacity(stacks.iter().map(|s| s.frames.len()).sum());
    let laid = stacks
        .iter()
        .map(|s| {
            let start = frames.len();
            frames.extend_from_slice(&s.frames);
            GraphStack { pid: s.pid, start, end: frames.len(), samples: s.count, period: s.period }
        })
        .collect();
    (frames, laid)
}

/// A call stack as names, outermost first, with what it stands for.
/// The object name comparisons give the profiled program itself, so two builds whose
/// programs have different file names still match (`perflab diff`, the differential
/// flame graph): `object` when it is the program `profile` ran, else `object` unchanged.
pub fn matching_object<'a>(profile: &Profile, object: &'a str) -> &'a str {
    let program = profile.command.first().map(|c| basename(c)).unwrap_or("");
    if !program.is_empty() && object == program {
        "[command]"
    } else {
        object
    }
}

/// One frame of a symbolised call stack, its names borrowed from the [`CallGraph`];
/// ordered like [`StackFrame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameName<'a> {
    /// The function's name (demangled).
    pub function: &'a str,
    /// Object basename (or `[kernel]`, `[unknown]`, empty for a process root).
    pub object: &'a str,
    /// What the frame is.
    pub kind: FrameKind,
}

impl FrameName<'_> {
    /// The frame with its own copies of the names.
    pub fn to_owned(&self) -> StackFrame {
        StackFrame { function: self.function.to_string(), object: self.object.to_string(), kind: self.kind }
    }
}

/// A call stack by borrowed names, with the samples that have it.
pub struct StackNames<'a> {
    /// Frames, outermost first.
    pub frames: Vec<FrameName<'a>>,
    /// Samples with this stack.
    pub samples: u64,
    /// Sum of their periods (ns for clock events, events otherwise).
    pub period: u64,
}

/// A call stack by names, with the samples that have it.
pub struct NamedStack {
    /// Frames, outermost first.
    pub frames: Vec<StackFrame>,
    /// Samples with this stack.
    pub samples: u64,
    /// Sum of their periods (ns for clock events, events otherwise).
    pub period: u64,
}

impl CallGraph {
    /// None when the profile has no call stacks (recorded without `-g` or `--off-cpu`).
    fn new(profile: &Profile, resolver: &mut Resolver) -> Option<CallGraph> {
        if profile.stacks.is_empty() && profile.off_cpu.is_empty() {
            return None;
        }
        // Room for a name per frame made once (at most that many, plus their objects'):
        // grown by doubling, 1.2 M names were copied 20 times over.
        let mut names = Names::with_capacity(profile.frames.len(), 24 * profile.frames.len());
        // Per runtime symbol: the number of its name, once met (its frames share it).
        let mut symbol_names = vec![u32::MAX; profile.jit_symbols.len()];
        let anonymous_unique = anonymous_regions_unique(profile);
        // Per function name: the first pair it made (most functions lie in one object,
        // so most pairs are found without hashing); the other pairs in a map.
        let mut first_pair: Vec<u32> = Vec::new();
        let mut pair_ids: rustc_hash::FxHashMap<(u32, u32), u32> = Default::default();
        let mut pairs = Vec::new();
        let mut inlined = HashMap::new();
        let mut frame_pairs = Vec::with_capacity(profile.frames.len());
        let mut jit_object = None;
        for (i, f) in profile.frames.iter().enumerate() {
            // Runtime code is named from the profile's own symbols, borrowed: no
            // location built per frame, and no inlined functions (it has no DWARF).
            let pair = match resolver.runtime_symbol(f.space, f.object, f.offset) {
                Some(symbol) => {
                    let function = match symbol {
                        Some(s) if symbol_names[s] != u32::MAX => symbol_names[s],
                        Some(s) => {
                            let symbol = &profile.jit_symbols[s];
                            symbol_names[s] = if anonymous_unique && is_anonymous_region(symbol) {
                                names.push_new(&symbol.name)
                            } else {
                                names.intern(&symbol.name)
                            };
                            symbol_names[s]
                        }
                        None => names.intern(UNKNOWN),
                    };
                    (function, *jit_object.get_or_insert_with(|| names.intern(JIT_OBJECT)))
                }
                None => {
                    let l = resolver.resolve_shared(f.space, f.object, f.offset);
                    let pair = (names.intern(&l.function), names.intern(basename(&l.object)));
                    let inlined_here = resolver.inlined(f.space, f.object, f.offset);
                    if !inlined_here.is_empty() {
                        inlined.insert(i as u32, inlined_here.iter().map(|n| names.intern(n)).collect());
                    }
                    pair
                }
            };
            frame_pairs.push(pair_id(pair, &mut pairs, &mut first_pair, &mut pair_ids));
        }
        let (stack_frames, stacks) = laid_out(&profile.stacks);
        let period = stacks.iter().map(|s| s.period).sum();
        Some(CallGraph {
            names: names.into_list(),
            pairs,
            frame_pairs,
            inlined,
            stack_frames,
            stacks,
            roots: process_names(profile),
            period,
            weight: profile.weight(),
        })
    }

    /// A name by its number.
    fn name(&self, n: u32) -> &str {
        self.names.get(n)
    }

    /// The (function, object basename) of a frame of the profile.
    fn frame_names(&self, frame: u32) -> (&str, &str) {
        let (function, object) = self.pairs[self.frame_pairs[frame as usize] as usize];
        (self.name(function), self.name(object))
    }

    /// A stack's frame indices, leaf first.
    fn frames_of(&self, stack: &GraphStack) -> &[u32] {
        &self.stack_frames[stack.start..stack.end]
    }

    /// Every stack as names, outermost first: the process (when there are several),
    /// then per frame its function followed by the functions inlined into it.
    pub fn named_stacks(&self) -> impl Iterator<Item = NamedStack> + '_ {
        self.stacks_by_name().map(|s| NamedStack {
            frames: s.frames.iter().map(FrameName::to_owned).collect(),
            samples: s.samples,
            period: s.period,
        })
    }

    /// [`named_stacks`](Self::named_stacks) with the names borrowed from the graph: a
    /// stack of 8,000 frames costs 8,000 × 40 bytes, not 8,000 pairs of strings.
    pub fn stacks_by_name(&self) -> impl Iterator<Item = StackNames<'_>> + '_ {
        self.stacks.iter().map(|stack| {
            let frames = self.frames_of(stack);
            let mut names = Vec::with_capacity(frames.len() + 1);
            if let Some(name) = self.roots.get(&stack.pid) {
                names.push(FrameName { function: name, object: "", kind: FrameKind::Process });
            }
            for &f in frames.iter().rev() {
                let (function, object) = self.frame_names(f);
                names.push(FrameName { function, object, kind: FrameKind::Code });
                if let Some(inlined) = self.inlined.get(&f) {
                    names.extend(inlined.iter().rev().map(|&n| FrameName {
                        function: self.name(n),
                        object,
                        kind: FrameKind::Inlined,
                    }));
                }
            }
            StackNames { frames: names, samples: stack.samples, period: stack.period }
        })
    }

    /// All stacks' summed periods: what shares are of.
    pub fn total_period(&self) -> u64 {
        self.period
    }

    /// The same symbolised frames with other stacks of the profile (its off-CPU intervals).
    pub(crate) fn with_stacks(&self, stacks: &[StackCount]) -> CallGraph {
        let (stack_frames, stacks) = laid_out(stacks);
        let period = stacks.iter().map(|s| s.period).sum();
        CallGraph {
            names: self.names.clone(),
            pairs: self.pairs.clone(),
            frame_pairs: self.frame_pairs.clone(),
            inlined: self.inlined.clone(),
            stack_frames,
            stacks,
            roots: self.roots.clone(),
            period,
            weight: self.weight,
        }
    }

    /// Inclusive (samples, period) per (function, object) pair, by pair index: a
    /// function counts once per stack however often it recurses.
    fn inclusive_by_pair(&self) -> Vec<(u64, u64)> {
        let mut totals = vec![(0u64, 0u64); self.pairs.len()];
        // The last stack that counted each pair: no set per stack to clear.
        let mut counted_in = vec![usize::MAX; self.pairs.len()];
        for (i, stack) in self.stacks.iter().enumerate() {
            for &f in self.frames_of(stack) {
                let pair = self.frame_pairs[f as usize] as usize;
                if counted_in[pair] != i {
                    counted_in[pair] = i;
                    totals[pair].0 += stack.samples;
                    totals[pair].1 += stack.period;
                }
            }
        }
        totals
    }

    /// Inclusive (samples, period) per (function, object basename): a function counts
    /// once per stack however often it recurses.
    pub fn inclusive(&self) -> HashMap<(&str, &str), (u64, u64)> {
        self.inclusive_by_pair()
            .into_iter()
            .enumerate()
            .filter(|(_, (samples, _))| *samples > 0)
            .map(|(pair, totals)| {
                let (function, object) = self.pairs[pair];
                ((self.name(function), self.name(object)), totals)
            })
            .collect()
    }

    /// Add the inclusive columns to by-function rows (and rows for callers that have
    /// no self samples), sorted by total weight like `perf report --children`; with
    /// `keep`, only the first `keep` rows are made and the others summed in
    /// [`RowsLeftOut`] (1.2 M distinct functions are 1.2 M rows of two strings each, for
    /// a terminal that shows 20 of them).
    pub fn with_totals(&self, rows: Vec<Row>, keep: Option<usize>) -> (Vec<Row>, Option<RowsLeftOut>) {
        let share = |period: u64| if self.period == 0 { 0.0 } else { period as f64 / self.period as f64 };
        let totals = self.inclusive_by_pair();
        let name_of = |pair: usize| {
            let (function, object) = self.pairs[pair];
            (self.name(function), self.name(object))
        };
        // The rows there are, and per pair with samples but no row a row to come: each
        // a candidate ordered by totals, then self, then names — built as a row only
        // when kept.
        let mut row_totals = vec![(0u64, 0u64); rows.len()];
        let mut has_row = vec![false; self.pairs.len()];
        {
            let mut row_of: HashMap<(&str, &str), usize> = HashMap::new();
            for (i, row) in rows.iter().enumerate() {
                row_of.insert((&row.name, &row.object), i);
            }
            for (pair, &(n, period)) in totals.iter().enumerate() {
                if let Some(&i) = row_of.get(&name_of(pair)).filter(|_| n > 0) {
                    has_row[pair] = true;
                    row_totals[i] = (n, period);
                }
            }
        }
        let candidates = rows
            .iter()
            .zip(&row_totals)
            .enumerate()
            .map(|(i, (row, &(n, period)))| Candidate {
                totals: (period, n, row.self_period, row.self_samples),
                name: &row.name,
                object: &row.object,
                source: Source::Row(i),
            })
            .chain(totals.iter().enumerate().filter(|&(pair, &(n, _))| n > 0 && !has_row[pair]).map(
                |(pair, &(n, period))| {
                    let (name, object) = name_of(pair);
                    Candidate { totals: (period, n, 0, 0), name, object, source: Source::Pair(pair) }
                },
            ));
        let (chosen, left_out) = match keep {
            None => {
                let mut all: Vec<Candidate> = candidates.collect();
                all.sort_unstable();
                (all, None)
            }
            Some(keep) => {
                // The best `keep` in a heap whose top is the worst of them.
                let mut best: std::collections::BinaryHeap<Candidate> = std::collections::BinaryHeap::new();
                let mut left_out = RowsLeftOut::default();
                let mut leave_out = |c: &Candidate| {
                    left_out.rows += 1;
                    left_out.self_samples += c.totals.3;
                    left_out.self_period += c.totals.2;
                };
                for c in candidates {
                    if best.len() < keep {
                        best.push(c);
                    } else if best.peek().is_some_and(|worst| c < *worst) {
                        if let Some(worst) = best.pop() {
                            leave_out(&worst);
                        }
                        best.push(c);
                    } else {
                        leave_out(&c);
                    }
                }
                (best.into_sorted_vec(), Some(left_out).filter(|l| l.rows > 0))
            }
        };
        let chosen: Vec<(Source, (u64, u64, u64, u64))> = chosen.into_iter().map(|c| (c.source, c.totals)).collect();
        let mut rows: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
        let mut table = Vec::with_capacity(chosen.len());
        for (source, (period, n, _, _)) in chosen {
            let mut row = match source {
                Source::Row(i) => rows[i].take().expect("each row chosen once"),
                Source::Pair(pair) => {
                    let (name, object) = name_of(pair);
                    Row {
                        name: name.to_string(),
                        object: object.to_string(),
                        self_samples: 0,
                        self_share: 0.0,
                        self_period: 0,
                        total_samples: None,
                        total_share: None,
                        total_period: None,
                    }
                }
            };
            (row.total_samples, row.total_share, row.total_period) = (Some(n), Some(share(period)), Some(period));
            table.push(row);
        }
        (table, left_out)
    }

    /// Brendan Gregg's folded stacks: `root;caller;leaf COUNT` per distinct stack of
    /// function names (as [`named_stacks`](Self::named_stacks)), sorted. COUNT is the
    /// stack's samples for a clock event (each sample is the same slice of time) and
    /// its events (summed periods) for a count event.
    pub fn folded(&self) -> String {
        let mut lines: BTreeMap<String, u64> = BTreeMap::new();
        for stack in self.named_stacks() {
            *lines.entry(folded_names(&stack.frames)).or_default() += self.weight.of(stack.samples, stack.period);
        }
        lines.into_iter().map(|(stack, n)| format!("{stack} {n}\n")).collect()
    }

    /// (samples, period) per distinct stack of function names, outermost caller first
    /// (stacks differing only in addresses within the same functions merge).
    pub(crate) fn by_names(&self) -> HashMap<Vec<String>, (u64, u64)> {
        let mut stacks: HashMap<Vec<String>, (u64, u64)> = HashMap::new();
        for stack in &self.stacks {
            let names = self.frames_of(stack).iter().rev().map(|&f| self.frame_names(f).0.to_string()).collect();
            let e = stacks.entry(names).or_default();
            e.0 += stack.samples;
            e.1 += stack.period;
        }
        stacks
    }
}

/// `root;caller;leaf`: `;` inside a name would split a frame, so it becomes `:`, and a
/// line break would end the line, so control characters become escapes.
pub fn folded_names(frames: &[StackFrame]) -> String {
    let names: Vec<String> = frames.iter().map(|f| perflab_sys::text::escape(&f.function).replace(';', ":")).collect();
    names.join(";")
}

/// Names for per-process roots: only when samples come from more than one process.
fn process_names(profile: &Profile) -> HashMap<u32, String> {
    let pids: HashSet<u32> = profile.stacks.iter().map(|s| s.pid).collect();
    if pids.len() < 2 {
        return HashMap::new();
    }
    pids.into_iter()
        .map(|pid| {
            let comm = profile.tasks.iter().filter(|t| t.pid == pid).min_by_key(|t| t.tid != pid).map(|t| &t.comm);
            let name = match comm {
                Some(comm) if !comm.is_empty() => comm.clone(),
                _ => format!("pid {pid}"),
            };
            (pid, name)
        })
        .collect()
}

fn special(name: &str) -> Location {
    Location { object: name.to_string(), function: name.to_string(), file: None, line: None }
}

/// Sum samples under a key and turn them into rows sorted by samples (then name).
fn rows_by(located: &[Located], mut key: impl FnMut(&Location) -> (String, String)) -> Vec<Row> {
    let total: u64 = located.iter().map(|l| l.period).sum();
    let mut sums: HashMap<(String, String), (u64, u64)> = HashMap::new();
    for l in located {
        let e = sums.entry(key(&l.location)).or_default();
        e.0 += l.count;
        e.1 += l.period;
    }
    let mut rows: Vec<Row> = sums
        .into_iter()
        .map(|((name, object), (n, period))| Row {
            name,
            object,
            self_samples: n,
            self_share: if total == 0 { 0.0 } else { period as f64 / total as f64 },
            self_period: period,
            total_samples: None,
            total_share: None,
            total_period: None,
        })
        .collect();
    rows.sort_by(|a, b| {
        (b.self_period, b.self_samples).cmp(&(a.self_period, a.self_samples)).then_with(|| a.name.cmp(&b.name))
    });
    rows
}

/// The flat profile grouped `by`, sorted by samples (then name).
pub fn flat(located: &[Located], by: By) -> Vec<Row> {
    match by {
        By::Function => rows_by(located, |l| (l.function.clone(), basename(&l.object).to_string())),
        By::Object => rows_by(located, |l| (l.object.clone(), String::new())),
        By::Line => rows_by(located, |l| {
            let name = match (&l.file, l.line) {
                (Some(f), Some(line)) => format!("{f}:{line}"),
                _ => format!("{} (no line info)", l.function),
            };
            (name, basename(&l.object).to_string())
        }),
    }
}

/// `GLOB:REGEX`: source files matching GLOB are cut into regions starting at each line
/// matching REGEX, named by its first capture group.
pub struct SourceRegions {
    glob: globset::GlobMatcher,
    regex: regex::Regex,
    /// Region starts per file: (line, name), ascending; None when unreadable.
    files: HashMap<String, Option<Vec<(u32, String)>>>,
    /// Source files that could not be read, one line each.
    pub warnings: Vec<String>,
}

pub(crate) const OUTSIDE_REGIONS: &str = "[outside regions]";

impl SourceRegions {
    /// Parse `GLOB:REGEX` (`--group-by-source`).
    pub fn parse(spec: &str) -> Result<SourceRegions, ProfileError> {
        let (glob, regex) = spec.split_once(':').ok_or_else(|| ProfileError::GroupBySourceSpec(spec.to_string()))?;
        let glob = globset::GlobBuilder::new(glob)
            .literal_separator(false)
            .build()
            .map_err(ProfileError::GroupBySourceGlob)?
            .compile_matcher();
        let regex = regex::Regex::new(regex)
            .map_err(|e| ProfileError::GroupBySourceRegex(perflab_sys::text::regex_error(&e)))?;
        if regex.captures_len() < 2 {
            return Err(ProfileError::GroupBySourceNoCapture);
        }
        Ok(SourceRegions { glob, regex, files: HashMap::new(), warnings: Vec::new() })
    }

    fn starts(&mut self, file: &str) -> Option<&Vec<(u32, String)>> {
        if !self.files.contains_key(file) {
            let matches = self.glob.is_match(file) || self.glob.is_match(basename(file));
            let starts = if !matches {
                None
            } else {
                match perflab_sys::files::read_regular_to_string(file) {
                    Ok(text) => Some(
                        text.lines()
                            .enumerate()
                            .filter_map(|(i, line)| {
                                let name = self.regex.captures(line)?.get(1)?.as_str().to_string();
                                Some((i as u32 + 1, name))
                            })
                            .collect(),
                    ),
                    Err(e) => {
                        self.warnings.push(format!("cannot read source {file} for --group-by-source: {e}"));
                        None
                    }
                }
            };
            self.files.insert(file.to_string(), starts);
        }
        self.files.get(file)?.as_ref()
    }

    /// The region a source line falls in.
    pub(crate) fn region_of(&mut self, file: &str, line: u32) -> Option<String> {
        let starts = self.starts(file)?;
        let i = starts.partition_point(|(start, _)| *start <= line).checked_sub(1)?;
        Some(starts[i].1.clone())
    }

    /// Rows per region; samples elsewhere are summed in one `[outside regions]` row.
    pub fn rows(&mut self, located: &[Located]) -> Vec<Row> {
        let names: Vec<String> = located
            .iter()
            .map(|l| match (&l.location.file, l.location.line) {
                (Some(f), Some(line)) => self.region_of(f, line).unwrap_or_else(|| OUTSIDE_REGIONS.to_string()),
                _ => OUTSIDE_REGIONS.to_string(),
            })
            .collect();
        let mut i = 0;
        rows_by(located, |_| {
            let name = names[i].clone();
            i += 1;
            (name, String::new())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(function: &str, file: Option<&str>, line: u32, count: u64) -> Located {
        Located {
            location: Location {
                object: "/bin/x".into(),
                function: function.into(),
                file: file.map(String::from),
                line: file.map(|_| line),
            }
            .into(),
            pid: 1,
            tid: 1,
            count,
            period: count * 10,
        }
    }

    #[test]
    fn flat_rows_sum_and_share() {
        let located = vec![at("a", Some("x.c"), 3, 30), at("b", None, 0, 10), at("a", Some("x.c"), 4, 20)];
        let rows = flat(&located, By::Function);
        assert_eq!(rows[0].name, "a");
        assert_eq!(rows[0].self_samples, 50);
        assert!((rows[0].self_share - 50.0 / 60.0).abs() < 1e-12);
        assert_eq!(rows[0].object, "x");
        let lines = flat(&located, By::Line);
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().any(|r| r.name == "b (no line info)"));
        assert_eq!(flat(&located, By::Object)[0].name, "/bin/x");
    }

    #[test]
    fn call_graph_totals_count_recursion_once_and_fold_root_first() {
        use crate::format::{FrameRef, ObjectRef, SampleCount, StackCount};
        let user = |offset| FrameRef { space: Space::User, object: Some(0), offset };
        let stack = |frames: Vec<u32>, count| StackCount { pid: 1, tid: 1, frames, count, period: count * 10 };
        let sample = |offset, count| SampleCount::example(offset, count, count * 10);
        // Unreadable object: functions are named `x+0xOFFSET`, one per frame.
        let profile = Profile {
            event: "cpu-clock".into(),
            frequency_hz: 1000,
            duration_s: 1.0,
            cpu_s: 1.0,
            exit_code: Some(0),
            objects: vec![ObjectRef { path: "/nonexistent/x".into() }],
            samples: vec![sample(0x10, 3), sample(0x20, 1)],
            // leaf ← rec ← rec ← root (recursion), and rec ← root.
            frames: vec![user(0x10), user(0x20), user(0x30)],
            stacks: vec![stack(vec![0, 1, 1, 2], 3), stack(vec![1, 2], 1)],
            ..Profile::default()
        };
        let mut symbolizer = Symbolizer::default();
        let (located, graph) = locate_with_graph(&profile, &mut symbolizer);
        let graph = graph.unwrap();
        let rows = graph.with_totals(flat(&located, By::Function), None).0;
        let row = |name: &str| rows.iter().find(|r| r.name == name).unwrap();
        // By total, ties by self samples.
        assert_eq!(rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["x+0x20", "x+0x30", "x+0x10"]);
        assert_eq!((row("x+0x30").total_samples, row("x+0x30").self_samples), (Some(4), 0));
        assert_eq!(row("x+0x30").total_share, Some(1.0));
        assert_eq!(row("x+0x30").total_period, Some(40));
        assert_eq!((row("x+0x20").total_samples, row("x+0x20").self_samples), (Some(4), 1));
        assert_eq!((row("x+0x10").total_samples, row("x+0x10").self_samples), (Some(3), 3));
        assert_eq!(graph.folded(), "x+0x30;x+0x20 1\nx+0x30;x+0x20;x+0x20;x+0x10 3\n");
        // Only the first row made: the others counted, their self samples summed.
        let (first, left_out) = graph.with_totals(flat(&located, By::Function), Some(1));
        assert_eq!(first[..], rows[..1]);
        assert_eq!(left_out, Some(RowsLeftOut { rows: 2, self_samples: 3, self_period: 30 }));
        assert_eq!(graph.with_totals(flat(&located, By::Function), Some(3)), (rows.clone(), None));
        let mut empty = profile.clone();
        empty.stacks.clear();
        assert!(locate_with_graph(&empty, &mut symbolizer).1.is_none());
    }

    #[test]
    fn runtime_regions_are_one_function_per_name_whether_or_not_looked_up() {
        use crate::format::{FrameRef, ObjectRef, StackCount};
        let region = |object: u32, start: u64, name: &str, unnamed: bool| JitSymbol {
            object,
            start,
            size: 0x10,
            name: name.into(),
            unnamed,
            code: None,
        };
        let frame = |object: u32, offset: u64| FrameRef { space: Space::User, object: Some(object), offset };
        let graph_of = |jit_symbols: Vec<JitSymbol>, frames: Vec<FrameRef>| {
            let profile = Profile {
                event: "cpu-clock".into(),
                objects: vec![ObjectRef { path: "[jit:1]".into() }, ObjectRef { path: "[jit:2]".into() }],
                stacks: (0..frames.len() as u32)
                    .map(|f| StackCount { pid: 1, tid: 1, frames: vec![f], count: 1, period: 1 })
                    .collect(),
                frames,
                jit_symbols,
                ..Profile::default()
            };
            let mut symbolizer = Symbolizer::default();
            let graph = locate_with_graph(&profile, &mut symbolizer).1.unwrap();
            let mut totals: Vec<(String, u64)> =
                graph.inclusive().into_iter().map(|((f, o), (samples, _))| (format!("{f} {o}"), samples)).collect();
            totals.sort();
            (anonymous_regions_unique(&profile), totals)
        };
        // One process: each region its own function, numbered without a lookup; a
        // second frame in a region is the same function.
        let one = vec![region(0, 0x100, "[anon 0x100]", true), region(0, 0x200, "[anon 0x200]", true)];
        let (unique, totals) = graph_of(one, vec![frame(0, 0x100), frame(0, 0x208), frame(0, 0x201)]);
        assert!(unique);
        assert_eq!(totals, [("[anon 0x100] [jit]".to_string(), 1), ("[anon 0x200] [jit]".to_string(), 2)]);
        // Two processes with a region at one address, and a named function that reads
        // like a region: looked up, so each name is one function.
        let two = vec![
            region(0, 0x100, "[anon 0x100]", true),
            region(0, 0x300, "[anon 0x100]", false),
            region(1, 0x100, "[anon 0x100]", true),
        ];
        let (unique, totals) = graph_of(two, vec![frame(0, 0x100), frame(0, 0x300), frame(1, 0x104), frame(1, 0x999)]);
        assert!(!unique);
        assert_eq!(totals, [("[anon 0x100] [jit]".to_string(), 3), ("[unknown] [jit]".to_string(), 1)]);
        // A region not named by its own start is looked up too.
        let odd = vec![region(0, 0x100, "[anon 0x200]", true), region(0, 0x200, "[anon 0x200]", true)];
        assert!(!graph_of(odd, vec![frame(0, 0x100)]).0);
    }

    #[test]
    fn source_regions_start_at_matching_lines() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("insns.def");
        std::fs::write(&src, "prelude\nDEFINE_INSN(nop)\nbody\nDEFINE_INSN(add)\nbody\nbody\n").unwrap();
        let f = src.to_str().unwrap();
        let mut r = SourceRegions::parse(r"*.def:^DEFINE_INSN\((\w+)\)").unwrap();
        assert_eq!(r.region_of(f, 1), None);
        assert_eq!(r.region_of(f, 3).as_deref(), Some("nop"));
        assert_eq!(r.region_of(f, 6).as_deref(), Some("add"));
        let rows = r.rows(&[at("vm", Some(f), 5, 3), at("vm", Some(f), 2, 1), at("other", Some("y.c"), 1, 1)]);
        assert_eq!(
            rows.iter().map(|r| (r.name.as_str(), r.self_samples)).collect::<Vec<_>>(),
            [("add", 3), ("[outside regions]", 1), ("nop", 1)]
        );
    }

    #[test]
    fn bad_region_specs_are_usage_errors() {
        assert!(SourceRegions::parse("nocolon").is_err());
        assert!(SourceRegions::parse("*.c:(unclosed").is_err());
        assert!(SourceRegions::parse("*.c:no_group").is_err());
    }
}
