//! Flame graphs as self-contained interactive SVG: one profile's call stacks
//! ([`profile_svg`]), or two profiles' stacks in one picture coloured by how each
//! frame's own time changed ([`diff_svg_of_graphs`]). Click a frame to zoom, Escape or "Reset
//! zoom" to go back, "Search" to highlight frames matching a regular expression;
//! hovering shows a frame's figures.
//!
//! Written here rather than with inferno, the Rust port of flamegraph.pl: inferno (like
//! flamegraph.pl) is licensed CDDL-1.0, which is not compatible with perflab's
//! MIT/Apache-2.0 terms. The script below is perflab's own. The SVG needs nothing
//! else (no external files or fonts), finds its elements relative to its own
//! `<script>` (no global ids), so several can sit inline in one HTML page, and every
//! name in it is escaped.

use askama::Template;
use perflab_profile::aggregate::{self, CallGraph, FrameKind, FrameName};
use perflab_profile::diff::DiffUnit;
use perflab_profile::format::{Profile, Weight};
use perflab_profile::symbolize::Symbolizer;
use std::borrow::Cow;
use std::collections::BTreeMap;

const WIDTH: f64 = 1200.0;
const PAD: f64 = 10.0;
const FRAME_HEIGHT: f64 = 17.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 26.0;
/// Approximate advance of one character of the 11 px monospace font.
const CHAR_WIDTH: f64 = 6.7;
/// Frames narrower than this (in pixels at full width) are left out: they could not be
/// seen or clicked, and very deep profiles would otherwise make megabyte-sized files.
const MIN_WIDTH_PX: f64 = 0.1;
/// Below the first depth that holds less than this share of the samples, frames' callees
/// are not drawn (unless `min_share` is 0): see [`render`].
const THIN_DEPTH_SHARE: f64 = 0.02;
/// Frames deeper than this are not drawn: a picture 8,000 frames high is 136,000 px
/// tall and, for stacks that differ, millions of boxes (1.2 M for 150 samples of 8,000
/// distinct frames: gigabytes to build). The subtitle says how many samples were cut
/// there; `--flame-focus NAME` draws the stacks from NAME up.
pub const MAX_DEPTH: usize = 1024;

/// One frame of the merged stacks, with its inclusive and own values in the old and
/// new profile (a single profile uses only `new`).
struct Node<'a> {
    frame: FrameName<'a>,
    depth: usize,
    old: f64,
    new: f64,
    old_self: f64,
    new_self: f64,
    /// In name order (as in flamegraph.pl).
    children: Vec<usize>,
    /// It has callees that were left out while merging (too thin to draw, or deeper
    /// than [`MAX_DEPTH`]).
    pruned: bool,
}

/// Stacks merged into a tree, rooted at an unnamed node holding the totals. Only what
/// can be drawn is kept: the stacks are merged in name order, so every frame's value is
/// final once the stacks have moved past it, and the callees of a frame too thin to
/// draw (or to expand) are dropped right then — memory follows the picture, not the
/// number of distinct frames.
struct Tree<'a> {
    nodes: Vec<Node<'a>>,
    /// Summed width per depth over every stack, frames dropped while merging included.
    at_depth: Vec<f64>,
    /// The largest change of a frame's own value, dropped frames included.
    max_self_change: f64,
    /// Stacks cut at [`MAX_DEPTH`]: how many, and their width.
    cut_deep: (usize, f64),
}

/// A stack as the picture draws it: frames (at most [`MAX_DEPTH`]), its value in the
/// old and new profile, and whether deeper frames were cut.
struct Stack<'a> {
    frames: Vec<FrameName<'a>>,
    old: f64,
    new: f64,
    cut: bool,
}

impl<'a> Node<'a> {
    fn new(frame: FrameName<'a>, depth: usize) -> Node<'a> {
        Node { frame, depth, old: 0.0, new: 0.0, old_self: 0.0, new_self: 0.0, children: Vec::new(), pruned: false }
    }
}

/// The width of a frame: its new value for one profile, the mean of old and new for
/// two (a stack that exists in only one of them is still visible, at half its width).
fn width_of(both: bool, old: f64, new: f64) -> f64 {
    if both {
        (old + new) / 2.0
    } else {
        new
    }
}

impl<'a> Tree<'a> {
    /// Merge `stacks`; `both`: widths from both profiles (see [`width_of`]).
    fn build(mut stacks: Vec<Stack<'a>>, both: bool, opts: &FlameOptions) -> Tree<'a> {
        let root = FrameName { function: "all", object: "", kind: FrameKind::Process };
        let mut tree =
            Tree { nodes: vec![Node::new(root, 0)], at_depth: vec![0.0], max_self_change: 0.0, cut_deep: (0, 0.0) };
        for s in &stacks {
            let w = width_of(both, s.old, s.new);
            if tree.at_depth.len() <= s.frames.len() {
                tree.at_depth.resize(s.frames.len() + 1, 0.0);
            }
            for d in &mut tree.at_depth[..=s.frames.len()] {
                *d += w;
            }
            if s.cut {
                tree.cut_deep.0 += 1;
                tree.cut_deep.1 += w;
            }
        }
        let total = tree.at_depth[0];
        let depth_cap = depth_cap(&tree.at_depth, opts);
        let inner = WIDTH - 2.0 * PAD;
        // Whether a frame of this width and depth has its callees drawn (see `render`).
        let expands = |w: f64, depth: usize| {
            depth == 0
                || (total > 0.0
                    && w / total * inner >= MIN_WIDTH_PX
                    && !(opts.min_share > 0.0 && w / total < opts.min_share)
                    && depth < depth_cap)
        };
        stacks.sort_by(|a, b| a.frames.cmp(&b.frames));
        // The nodes of the previous stack, root first: only they can still grow.
        let mut path: Vec<usize> = vec![0];
        for stack in stacks {
            let common = stack
                .frames
                .iter()
                .zip(&path[1..])
                .take_while(|(frame, &node)| **frame == tree.nodes[node].frame)
                .count();
            while path.len() > common + 1 {
                let node = path.pop().unwrap_or_default();
                tree.close(node, both, &expands);
            }
            for frame in &stack.frames[common..] {
                let parent = *path.last().unwrap_or(&0);
                let index = tree.nodes.len();
                tree.nodes.push(Node::new(*frame, path.len()));
                tree.nodes[parent].children.push(index);
                path.push(index);
            }
            for &node in &path {
                tree.nodes[node].old += stack.old;
                tree.nodes[node].new += stack.new;
            }
            let leaf = &mut tree.nodes[*path.last().unwrap_or(&0)];
            if stack.cut {
                leaf.pruned = true;
            } else {
                leaf.old_self += stack.old;
                leaf.new_self += stack.new;
            }
        }
        while let Some(node) = path.pop() {
            tree.close(node, both, &expands);
        }
        tree
    }

    /// `node`'s value is final: note its own change, and drop its callees (the last
    /// nodes made, all of them) when they will not be drawn.
    fn close(&mut self, node: usize, both: bool, expands: &dyn Fn(f64, usize) -> bool) {
        let n = &self.nodes[node];
        self.max_self_change = self.max_self_change.max((n.new_self - n.old_self).abs());
        if !n.children.is_empty() && !expands(width_of(both, n.old, n.new), n.depth) {
            self.nodes.truncate(node + 1);
            let n = &mut self.nodes[node];
            n.children = Vec::new();
            n.pruned = true;
        }
    }
}

/// Where the stacks have thinned out: the first depth holding under
/// [`THIN_DEPTH_SHARE`] of the whole. Deeper frames (a few thin towers, ~200 frames high
/// in CPython) would set the picture's height and leave it an empty page.
fn depth_cap(at_depth: &[f64], opts: &FlameOptions) -> usize {
    let total = at_depth.first().copied().unwrap_or(0.0);
    if opts.min_share > 0.0 && total > 0.0 {
        at_depth.iter().position(|w| w / total < THIN_DEPTH_SHARE).unwrap_or(usize::MAX)
    } else {
        usize::MAX
    }
}

/// How the stacks are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlameView {
    /// Root at the bottom, callees above (Gregg's flame graph).
    #[default]
    Flame,
    /// Root at the top, callees below.
    Icicle,
    /// Every stack reversed: the functions that were running at the top, their callers
    /// below them (bottom-up: where time is spent, whoever called).
    Inverted,
}

impl FlameView {
    /// The views as `--flame-view` spells them.
    pub const NAMES: [&'static str; 3] = ["flame", "icicle", "inverted"];
}

impl std::str::FromStr for FlameView {
    type Err = perflab_profile::error::UnknownChoice;
    fn from_str(s: &str) -> Result<FlameView, Self::Err> {
        match s {
            "flame" => Ok(FlameView::Flame),
            "icicle" => Ok(FlameView::Icicle),
            "inverted" => Ok(FlameView::Inverted),
            other => Err(perflab_profile::error::UnknownChoice {
                expected: "flame, icicle or inverted",
                found: other.to_string(),
            }),
        }
    }
}

/// What a flame graph shows and how.
#[derive(Debug, Clone, PartialEq)]
pub struct FlameOptions {
    /// Which way the stacks grow.
    pub view: FlameView,
    /// Only stacks through this function, each starting at its outermost call.
    pub focus: Option<String>,
    /// Sibling frames each under this share of the whole are drawn as one "other" frame
    /// (0 keeps them all): deep profiles are otherwise slivers on an empty page.
    pub min_share: f64,
    /// Differential graphs: scale the old profile to the new one's total first, so
    /// widths and colours compare shares of time (a 20× slower build would otherwise be
    /// drawn mostly from the new profile and be red everywhere).
    pub normalize: bool,
}

/// The default share under which sibling frames are merged into "other" (0.5 %: 6 px
/// of the picture, too thin for a label).
pub const DEFAULT_MIN_SHARE: f64 = 0.005;

impl Default for FlameOptions {
    fn default() -> FlameOptions {
        FlameOptions { view: FlameView::Flame, focus: None, min_share: DEFAULT_MIN_SHARE, normalize: true }
    }
}

impl FlameOptions {
    /// The stack as this view draws it (at most [`MAX_DEPTH`] frames), or None when
    /// the focus drops it.
    fn shape<'a>(&self, frames: &[FrameName<'a>], old: f64, new: f64) -> Option<Stack<'a>> {
        let from = match &self.focus {
            Some(name) => frames.iter().position(|f| f.function == name)?,
            None => 0,
        };
        let frames = &frames[from..];
        let cut = frames.len() > MAX_DEPTH;
        let frames: Vec<FrameName<'a>> = if self.view == FlameView::Inverted {
            frames.iter().rev().take(MAX_DEPTH).copied().collect()
        } else {
            frames.iter().take(MAX_DEPTH).copied().collect()
        };
        Some(Stack { frames, old, new, cut })
    }

    /// What the subtitle says about the options in force.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(f) = &self.focus {
            parts.push(format!("focus on {f}"));
        }
        match self.view {
            FlameView::Flame => {}
            FlameView::Icicle => parts.push("icicle".into()),
            FlameView::Inverted => parts.push("inverted: running functions on top, callers below".into()),
        }
        if self.min_share > 0.0 {
            parts.push(format!("frames under {}% drawn as \"other\"", self.min_share * 100.0));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" — {}", parts.join(", "))
        }
    }
}

/// How values are shown and frames coloured.
enum Colouring {
    /// One profile: values are samples (a clock) or events (a count event).
    Single { unit: &'static str },
    /// Two profiles: values are in the diff's unit (seconds for clocks); widths are the
    /// mean of old and new, so a stack that exists in only one of them is still visible
    /// (at half its width). `scale`: what the old values were multiplied by (equal
    /// totals), 1 when absolute.
    Differential { max_self_change: f64, scale: f64, unit: DiffUnit },
    /// Two commands' stacks, coloured only by the explanation's verdicts: a function
    /// found slower red, faster blue (stronger for a larger contribution), all else grey.
    Verdicts { changes: BTreeMap<String, f64>, max_change: f64 },
}

/// The flame graph of a profile's call stacks; None when it has none (recorded
/// without `-g`, or no samples).
pub fn profile_svg(profile: &Profile, title: &str) -> Option<String> {
    let mut symbolizer = Symbolizer::default();
    call_graph_svg(profile, &aggregate::locate_with_graph(profile, &mut symbolizer).1?, title)
}

/// [`profile_svg`] for a call graph already resolved.
pub fn call_graph_svg(profile: &Profile, graph: &CallGraph, title: &str) -> Option<String> {
    call_graph_svg_with(profile, graph, title, &FlameOptions::default())
}

/// [`call_graph_svg`] with a view, focus and merge threshold; None without samples
/// (or none through the focus).
pub(crate) fn call_graph_svg_with(
    profile: &Profile,
    graph: &CallGraph,
    title: &str,
    opts: &FlameOptions,
) -> Option<String> {
    // Widths weigh each sample by its period: samples of a clock, events otherwise.
    let weight = profile.weight();
    let stacks =
        graph.stacks_by_name().filter_map(|s| opts.shape(&s.frames, 0.0, weight.of(s.samples, s.period) as f64));
    let tree = Tree::build(stacks.collect(), false, opts);
    if tree.nodes[0].new == 0.0 {
        return None;
    }
    let mut subtitle = format!("{} samples of {} {}", profile.total_samples(), profile.event, profile.sampling());
    if opts.focus.is_some() {
        subtitle = format!("{} {} of {subtitle}", tree.nodes[0].new, unit_name(weight));
    }
    if weight == Weight::Events {
        subtitle += "; widths are events (each sample weighs its period)";
    }
    subtitle += &opts.describe();
    subtitle += &tree.describe_cut(unit_name(weight));
    Some(render(&tree, &Colouring::Single { unit: unit_name(weight) }, title, &subtitle, opts))
}

/// A flame graph without frames, saying why (`message`).
pub fn empty_svg(title: &str, message: &str) -> String {
    let tree = Tree::build(Vec::new(), false, &FlameOptions::default());
    render(&tree, &Colouring::Single { unit: "samples" }, title, message, &FlameOptions::default())
}

/// The differential flame graph of two profiles, matched by function names (never by
/// address): red frames spent more time of their own in `new`, blue ones less; the old
/// profile scaled to the new one's total unless `opts` says absolute (see
/// [`FlameOptions::normalize`]). Made from the two profiles' call graphs (see
/// [`call_graph`]); of the profiles themselves only their events and commands are read,
/// so a caller may have let go of their stacks, frames and runtime symbols.
pub fn diff_svg_of_graphs(
    [old, new]: [&Profile; 2],
    [old_graph, new_graph]: [&CallGraph; 2],
    title: &str,
    opts: &FlameOptions,
) -> Option<String> {
    // Seconds for clocks, events for one count event, samples across different events.
    let unit = DiffUnit::of(old, new);
    let old_total: f64 = old_graph.stacks_by_name().map(|s| unit.value(s.samples, s.period)).sum();
    let new_total: f64 = new_graph.stacks_by_name().map(|s| unit.value(s.samples, s.period)).sum();
    let scale = if opts.normalize && old_total > 0.0 { new_total / old_total } else { 1.0 };
    let mut stacks = Vec::new();
    for (profile, graph, is_old) in [(old, old_graph, true), (new, new_graph, false)] {
        for s in graph.stacks_by_name() {
            let frames: Vec<FrameName> = s.frames.iter().map(|f| matching_frame(profile, *f)).collect();
            let value = unit.value(s.samples, s.period);
            let (o, n) = if is_old { (value * scale, 0.0) } else { (0.0, value) };
            stacks.extend(opts.shape(&frames, o, n));
        }
    }
    let tree = Tree::build(stacks, true, opts);
    if tree.nodes[0].old + tree.nodes[0].new == 0.0 {
        return Some(render(&tree, &Colouring::Single { unit: "samples" }, title, "no stacks through the focus", opts));
    }
    let max_self_change = tree.max_self_change;
    let (o, n) = (old_total, new_total);
    let change = if o > 0.0 { format!(" ({:.2}×)", n / o) } else { String::new() };
    let (totals, absolute, own) = match unit {
        DiffUnit::Seconds => (format!("≈ {o:.3} s → {n:.3} s"), "seconds", "more own time, blue: less"),
        DiffUnit::Events => (format!("{o:.0} → {n:.0} events"), "events", "more own events, blue: fewer"),
        DiffUnit::Samples => (format!("{o:.0} → {n:.0} samples"), "samples", "more own samples, blue: fewer"),
    };
    let scaled = if scale != 1.0 {
        format!("; old scaled ×{scale:.3} to equal totals (shares compared; --flame-absolute: {absolute})")
    } else {
        String::new()
    };
    let subtitle = format!("{totals}{change}{scaled}; red: {own}{}{}", opts.describe(), tree.describe_cut(absolute));
    Some(render(&tree, &Colouring::Differential { max_self_change, scale, unit }, title, &subtitle, opts))
}

/// The differential flame graph of an explanation (`compare --explain`): the stacks of
/// every sampled run of both commands (folded `root;…;leaf` → time per run), widths the
/// mean of the two, coloured only where the explanation found a real change —
/// `changes` maps a function to its contribution per run (positive: slower), every
/// other frame is grey. None without stacks.
pub(crate) fn explained_svg<'a>(
    old: &'a BTreeMap<String, f64>,
    new: &'a BTreeMap<String, f64>,
    changes: BTreeMap<String, f64>,
    title: &str,
    subtitle: &str,
) -> Option<String> {
    let frames = |folded: &'a str| -> Vec<FrameName<'a>> {
        folded.split(';').map(|f| FrameName { function: f, object: "", kind: FrameKind::Code }).collect()
    };
    let opts = FlameOptions::default();
    let stacks = old
        .iter()
        .map(|(stack, value)| (stack, *value, 0.0))
        .chain(new.iter().map(|(stack, value)| (stack, 0.0, *value)))
        .filter_map(|(stack, o, n)| opts.shape(&frames(stack), o, n));
    let tree = Tree::build(stacks.collect(), true, &opts);
    if tree.nodes[0].old + tree.nodes[0].new == 0.0 {
        return None;
    }
    let max_change = changes.values().map(|c| c.abs()).fold(0.0, f64::max);
    Some(render(&tree, &Colouring::Verdicts { changes, max_change }, title, subtitle, &FlameOptions::default()))
}

fn unit_name(weight: Weight) -> &'static str {
    match weight {
        Weight::Time => "samples",
        Weight::Events => "events",
    }
}

/// The profile's call stacks, symbolised; None when it has none.
pub fn call_graph(profile: &Profile) -> Option<CallGraph> {
    let mut symbolizer = Symbolizer::default();
    let graph = aggregate::locate_with_graph(profile, &mut symbolizer).1?;
    let has_stacks = graph.stacks_by_name().next().is_some();
    has_stacks.then_some(graph)
}

/// A frame of `profile`'s program named as `perflab diff` matches them.
fn matching_frame<'a>(profile: &Profile, frame: FrameName<'a>) -> FrameName<'a> {
    match frame.kind {
        FrameKind::Code => FrameName { object: aggregate::matching_object(profile, frame.object), ..frame },
        _ => frame,
    }
}

impl Tree<'_> {
    /// What the subtitle says of stacks cut at [`MAX_DEPTH`] (`unit`: what widths count).
    fn describe_cut(&self, unit: &str) -> String {
        let (stacks, width) = self.cut_deep;
        if stacks == 0 {
            return String::new();
        }
        format!(
            "; {stacks} stacks deeper than {MAX_DEPTH} frames ({width:.0} {unit}) cut there: --flame-focus NAME draws from NAME up"
        )
    }
}

/// FNV-1a: a stable hash so a function keeps its colour across runs and pictures.
fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn fill(node: &Node, mode: &Colouring) -> String {
    match mode {
        Colouring::Single { .. } => {
            let h = hash(node.frame.function);
            let (v1, v2) = ((h & 0xff) as f64 / 255.0, ((h >> 8) & 0xff) as f64 / 255.0);
            let f = &node.frame;
            if f.kind == FrameKind::Process {
                format!("rgb({},{},{})", 170 + (v1 * 30.0) as u8, 180 + (v2 * 30.0) as u8, 220)
            } else if perflab_profile::kernel::is_kernel_object(f.object) {
                format!("rgb({},{},{})", 230, 140 + (v1 * 50.0) as u8, 40 + (v2 * 30.0) as u8)
            } else if f.object == "[jit]" {
                format!("rgb({},{},{})", 60 + (v1 * 40.0) as u8, 190 + (v2 * 40.0) as u8, 120)
            } else if f.function == "[unknown]" {
                "rgb(190,190,190)".to_string()
            } else {
                // flamegraph's "hot" palette: red through yellow.
                let (r, g, b) = (205.0 + 50.0 * v1, 230.0 * v2, 55.0 * v1);
                let lighten = if f.kind == FrameKind::Inlined { 0.35 } else { 0.0 };
                let mix = |c: f64| (c + (255.0 - c) * lighten) as u8;
                format!("rgb({},{},{})", mix(r), mix(g), mix(b))
            }
        }
        Colouring::Verdicts { changes, max_change } => match changes.get(node.frame.function) {
            Some(&change) => {
                let strength = if *max_change > 0.0 { (change.abs() / max_change).min(1.0) } else { 0.0 };
                let fade = (200.0 - 160.0 * strength) as u8;
                if change > 0.0 {
                    format!("rgb(250,{fade},{fade})")
                } else {
                    format!("rgb({fade},{fade},250)")
                }
            }
            None => "rgb(225,225,225)".to_string(),
        },
        Colouring::Differential { max_self_change, .. } => {
            let change = node.new_self - node.old_self;
            let strength = if *max_self_change > 0.0 { (change.abs() / max_self_change).min(1.0) } else { 0.0 };
            let fade = (235.0 - 190.0 * strength) as u8;
            if change > 0.0 {
                format!("rgb(250,{fade},{fade})")
            } else if change < 0.0 {
                format!("rgb({fade},{fade},250)")
            } else {
                "rgb(235,235,235)".to_string()
            }
        }
    }
}

fn describe(node: &Node, mode: &Colouring, total_old: f64, total_new: f64) -> String {
    use std::fmt::Write;
    let f = &node.frame;
    // One string written in place: a box's name and figures were four strings each,
    // for each of 150,000 boxes.
    let mut name = String::with_capacity(f.function.len() + f.object.len() + 64);
    name.push_str(f.function);
    if !f.object.is_empty() && f.object != f.function {
        let _ = write!(name, " [{}]", f.object);
    }
    if f.kind == FrameKind::Inlined {
        name += " (inlined)";
    }
    let share = |v: f64, total: f64| if total > 0.0 { v / total * 100.0 } else { 0.0 };
    match mode {
        Colouring::Single { unit } => {
            let _ = write!(name, ": {} {unit} ({:.2}%), {} own", node.new, share(node.new, total_new), node.new_self);
            name
        }
        Colouring::Verdicts { changes, .. } => format!(
            "{name}: {:.3} → {:.3} per run ({:.2}% → {:.2}%){}",
            node.old,
            node.new,
            share(node.old, total_old),
            share(node.new, total_new),
            match changes.get(f.function) {
                Some(c) => format!(", a real change: {c:+.3} per run of its own"),
                None => String::new(),
            }
        ),
        Colouring::Differential { scale, unit: DiffUnit::Seconds, .. } => format!(
            "{name}: {:.4} s → {:.4} s ({:.2}% → {:.2}%), own {:+.4} s{}",
            node.old / scale,
            node.new,
            share(node.old, total_old),
            share(node.new, total_new),
            node.new_self - node.old_self,
            if *scale != 1.0 { " (of the old time scaled to equal totals)" } else { "" }
        ),
        Colouring::Differential { scale, unit, .. } => format!(
            "{name}: {:.0} → {:.0} {} ({:.2}% → {:.2}%), own {:+.0}{}",
            node.old / scale,
            node.new,
            if *unit == DiffUnit::Events { "events" } else { "samples" },
            share(node.old, total_old),
            share(node.new, total_new),
            node.new_self - node.old_self,
            if *scale != 1.0 { " (of the old count scaled to equal totals)" } else { "" }
        ),
    }
}

/// Names shown in the picture: control characters escaped (XML cannot carry most of
/// them even as references), then escaped by the template where written.
fn visible(text: &str) -> Cow<'_, str> {
    perflab_sys::text::escape_cow(text)
}

/// One box of the picture: a node of the tree, or several small siblings merged.
struct Placed<'a> {
    node: Option<usize>,
    /// A node under the threshold drawn alone, its callees left out (thin deep towers
    /// would otherwise set the picture's height).
    cut: bool,
    /// For merged siblings: (how many, their summed node values).
    other: Option<(usize, Node<'a>)>,
    depth: usize,
    /// Left edge as a fraction of the whole width.
    x: f64,
}

fn render<'a>(tree: &Tree<'a>, mode: &Colouring, title: &str, subtitle: &str, opts: &FlameOptions) -> String {
    let root = &tree.nodes[0];
    let weight = |n: &Node| match mode {
        Colouring::Single { .. } => n.new,
        Colouring::Differential { .. } | Colouring::Verdicts { .. } => (n.old + n.new) / 2.0,
    };
    let total = weight(root);
    let inner = WIDTH - 2.0 * PAD;
    // Lay out depth first: (node, x as a fraction of the total), children left to right;
    // siblings each under the threshold share one "other" box after the others.
    let mut placed: Vec<Placed<'a>> = Vec::new();
    let mut todo = vec![(0usize, 0.0f64)];
    let mut max_depth = 0;
    let small = |c: usize| weight(&tree.nodes[c]) / total < opts.min_share;
    let depth_cap = depth_cap(&tree.at_depth, opts);
    while let Some((i, x)) = todo.pop() {
        let node = &tree.nodes[i];
        if total <= 0.0 || weight(node) / total * inner < MIN_WIDTH_PX {
            continue;
        }
        let has_callees = !node.children.is_empty() || node.pruned;
        let cut = i != 0 && (small(i) || node.depth >= depth_cap || node.pruned) && has_callees;
        placed.push(Placed { node: Some(i), cut, other: None, depth: node.depth, x });
        max_depth = max_depth.max(node.depth);
        if cut {
            continue;
        }
        let merged: Vec<usize> = node.children.iter().copied().filter(|&c| small(c)).collect();
        let merge = merged.len() >= 2;
        let mut child_x = x;
        let mut children = Vec::new();
        for &c in &node.children {
            if merge && small(c) {
                continue;
            }
            children.push((c, child_x));
            child_x += weight(&tree.nodes[c]) / total;
        }
        if merge {
            let mut sum = Node::new(FrameName { function: "other", object: "", kind: FrameKind::Code }, node.depth + 1);
            for &c in &merged {
                let n = &tree.nodes[c];
                sum.old += n.old;
                sum.new += n.new;
                sum.old_self += n.old;
                sum.new_self += n.new;
            }
            if weight(&sum) / total * inner >= MIN_WIDTH_PX {
                max_depth = max_depth.max(node.depth + 1);
                placed.push(Placed {
                    node: None,
                    cut: false,
                    other: Some((merged.len(), sum)),
                    depth: node.depth + 1,
                    x: child_x,
                });
            }
        }
        todo.extend(children.into_iter().rev());
    }
    let height = TOP + (max_depth + 1) as f64 * FRAME_HEIGHT + BOTTOM;
    let mut boxes = Vec::with_capacity(placed.len());
    for Placed { node, cut, other, depth, x } in &placed {
        let (node, tip, colour) = match (node, other) {
            (Some(i), _) => {
                let node = &tree.nodes[*i];
                let mut tip = describe(node, mode, root.old, root.new);
                if *cut {
                    tip += &format!(
                        "; its callees are not drawn (under {}% of the whole, or where under {}% of the samples go deeper: --flame-min-share 0 or --flame-focus show them)",
                        opts.min_share * 100.0,
                        THIN_DEPTH_SHARE * 100.0
                    );
                }
                (node, tip, fill(node, mode))
            }
            (None, Some((count, sum))) => {
                let what = describe(sum, mode, root.old, root.new);
                let tip = format!(
                    "{count} functions, each under {}% of the whole, drawn as one: {}",
                    opts.min_share * 100.0,
                    what.split_once(": ").map_or(what.as_str(), |(_, figures)| figures)
                );
                (sum, tip, "rgb(205,205,198)".to_string())
            }
            (None, None) => continue,
        };
        let x = *x;
        let w = weight(node) / total;
        let (px, pw) = (PAD + x * inner, w * inner);
        let y = match opts.view {
            FlameView::Flame => height - BOTTOM - (depth + 1) as f64 * FRAME_HEIGHT,
            FlameView::Icicle | FlameView::Inverted => TOP + 4.0 + *depth as f64 * FRAME_HEIGHT,
        };
        let name = visible(node.frame.function);
        let chars = ((pw - 6.0) / CHAR_WIDTH).floor();
        let label = if chars < 3.0 {
            Cow::Borrowed("")
        } else if name.chars().count() as f64 <= chars {
            name.clone()
        } else {
            Cow::Owned(name.chars().take(chars as usize - 2).collect::<String>() + "..")
        };
        boxes.push(FrameBox {
            x: Fixed(x),
            w: Fixed(w),
            depth: *depth,
            name,
            tip: perflab_sys::text::escape_owned(tip),
            px: Fixed(px),
            y: Fixed(y),
            pw: Fixed(pw),
            h: Fixed(FRAME_HEIGHT - 1.0),
            fill: colour,
            tx: Fixed(px + 3.0),
            ty: Fixed(y + FRAME_HEIGHT - 5.0),
            label,
        });
    }
    let page = FlameSvg {
        width: WIDTH,
        height,
        pad: PAD,
        char_width: CHAR_WIDTH,
        mid: WIDTH / 2.0,
        right: WIDTH - PAD,
        bottom_text: height - 8.0,
        title: visible(title).into_owned(),
        subtitle: visible(subtitle).into_owned(),
        boxes,
        script: SCRIPT,
    };
    // Room made once: grown by doubling, the 40 MB of 150,000 boxes were copied twice.
    let mut svg =
        String::with_capacity(SCRIPT.len() + 4096 + page.boxes.iter().map(FrameBox::size_hint).sum::<usize>());
    // Rendering into a String fails only if a value's Display fails; none of these can.
    let _ = page.render_into(&mut svg);
    svg
}

/// The picture: every name in it (title, frames, tooltips) is escaped by the template.
#[derive(Template)]
#[template(path = "flame/flame.svg", escape = "html")]
struct FlameSvg<'a> {
    width: f64,
    height: f64,
    pad: f64,
    char_width: f64,
    mid: f64,
    right: f64,
    bottom_text: f64,
    title: String,
    subtitle: String,
    boxes: Vec<FrameBox<'a>>,
    script: &'static str,
}

/// One drawn box; its numbers are formatted by the template to the precision the
/// script reads as they are written (150,000 boxes of 150 samples × 1,024 frames held
/// five strings each).
struct FrameBox<'a> {
    x: Fixed<6>,
    w: Fixed<6>,
    depth: usize,
    name: Cow<'a, str>,
    tip: String,
    px: Fixed<2>,
    y: Fixed<2>,
    pw: Fixed<2>,
    h: Fixed<2>,
    fill: String,
    tx: Fixed<2>,
    ty: Fixed<2>,
    label: Cow<'a, str>,
}

impl FrameBox<'_> {
    /// About how many bytes the template writes for this box (names escaped as
    /// they are, without their entities).
    fn size_hint(&self) -> usize {
        290 + 2 * self.name.len() + self.tip.len() + self.label.len()
    }
}

/// A number written with at most `DECIMALS` digits after the point (trailing zeros
/// dropped, as the picture's integral heights were written before), in integer
/// arithmetic: `format!("{:.6}")` made a String per number through Grisu, and with
/// the shortest form of the others a third of drawing 150,000 boxes. Written by hand:
/// the float formatting crates (ryu) write the shortest form, not a fixed precision.
#[derive(Clone, Copy)]
struct Fixed<const DECIMALS: u32>(f64);

impl<const DECIMALS: u32> std::fmt::Display for Fixed<DECIMALS> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scale = 10u64.pow(DECIMALS);
        let scaled = (self.0.abs() * scale as f64).round();
        // Beyond 2^53 an integer cannot hold every value (nor do decimals matter there):
        // the shortest form.
        if !scaled.is_finite() || scaled >= 9.0e15 {
            return write!(f, "{}", self.0);
        }
        let scaled = scaled as u64;
        if self.0 < 0.0 && scaled != 0 {
            f.write_str("-")?;
        }
        let (whole, mut fraction) = (scaled / scale, scaled % scale);
        if fraction == 0 {
            return write!(f, "{whole}");
        }
        let mut digits = DECIMALS as usize;
        while fraction % 10 == 0 {
            fraction /= 10;
            digits -= 1;
        }
        write!(f, "{whole}.{fraction:0digits$}")
    }
}

/// Zoom, search and details for one flame graph; everything is looked up from the
/// `<svg>` that contains this script, and names only ever go into `textContent`.
const SCRIPT: &str = include_str!("../../templates/flame/flame.js");

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str) -> FrameName<'_> {
        FrameName { function: name, object: "app", kind: FrameKind::Code }
    }

    /// Every frame kept: `min_share` 0.
    fn tree<'a>(stacks: &[(&[&'a str], f64, f64)]) -> Tree<'a> {
        let opts = FlameOptions { min_share: 0.0, ..FlameOptions::default() };
        let both = stacks.iter().any(|s| s.1 != 0.0);
        let stacks = stacks.iter().filter_map(|(names, old, new)| opts.shape(&frames(names), *old, *new)).collect();
        Tree::build(stacks, both, &opts)
    }

    fn node<'a, 'b>(tree: &'b Tree<'a>, name: &str) -> &'b Node<'a> {
        tree.nodes.iter().find(|n| n.frame.function == name).unwrap()
    }

    #[test]
    fn fixed_numbers_are_within_a_last_digit_of_format_without_trailing_zeros() {
        for v in [0.0, 1.0, 0.5, 0.123456, 0.1234565, 0.9999996, 1e-7, 12.3, 1183.999, 1200.0, -3.25, -1e-9, 7.0e12] {
            let fixed = Fixed::<6>(v).to_string();
            let formatted = format!("{v:.6}");
            // Ties may round the other way (v × 10⁶ is rounded once more than format's
            // exact digits): one unit of the last place, a millionth of the width.
            let apart = (fixed.parse::<f64>().unwrap() - formatted.parse::<f64>().unwrap()).abs();
            assert!(apart <= 1.000001e-6 * v.abs().max(1.0), "{v}: {fixed} against {formatted}");
            assert!(!fixed.contains('.') || !fixed.ends_with('0'), "{fixed}");
        }
        assert_eq!(Fixed::<2>(16.0).to_string(), "16");
        assert_eq!(Fixed::<2>(13.4).to_string(), "13.4");
        assert_eq!(Fixed::<2>(1.005).to_string(), "1");
        assert_eq!(Fixed::<6>(0.0000005).to_string(), "0.000001");
        assert_eq!(Fixed::<2>(f64::NAN).to_string(), "NaN");
        assert_eq!(Fixed::<2>(1e300).to_string(), format!("{}", 1e300));
    }

    #[test]
    fn merges_stacks_into_inclusive_and_own_values() {
        let t = tree(&[(&["main", "a", "leaf"], 0.0, 3.0), (&["main", "b", "leaf"], 0.0, 1.0), (&["main"], 0.0, 1.0)]);
        assert_eq!(t.nodes[0].new, 5.0);
        assert_eq!((node(&t, "main").new, node(&t, "main").new_self), (5.0, 1.0));
        assert_eq!(t.nodes.iter().filter(|n| n.frame.function == "leaf").count(), 2, "leaf under a and under b");
        assert_eq!(node(&t, "a").children.len(), 1);
    }

    #[test]
    fn widths_follow_samples_and_tiny_frames_are_left_out() {
        let t = tree(&[(&["main", "a"], 0.0, 3.0), (&["main", "b"], 0.0, 1.0), (&["main", "tiny"], 0.0, 0.00001)]);
        let svg = render(&t, &Colouring::Single { unit: "samples" }, "t", "s", &FlameOptions::default());
        let width = |name: &str| -> f64 {
            let at = svg.find(&format!("data-n=\"{name}\"")).unwrap();
            let rest = &svg[at..];
            let w = rest.split("width=\"").nth(1).unwrap();
            w[..w.find('"').unwrap()].parse().unwrap()
        };
        assert!((width("a") / width("b") - 3.0).abs() < 0.01);
        assert!((width("main") - (WIDTH - 2.0 * PAD)).abs() < 0.01);
        assert!(!svg.contains("data-n=\"tiny\""));
    }

    fn frames<'a>(names: &[&'a str]) -> Vec<FrameName<'a>> {
        names.iter().map(|n| frame(n)).collect()
    }

    #[test]
    fn small_siblings_become_one_other_box_with_their_count() {
        let mut stacks: Vec<(Vec<String>, f64)> = vec![(vec!["main".into(), "big".into()], 900.0)];
        for i in 0..50 {
            stacks.push((vec!["main".into(), format!("tiny{i}")], 1.0));
        }
        let names: Vec<Vec<&str>> = stacks.iter().map(|(n, _)| n.iter().map(String::as_str).collect()).collect();
        let all_stacks: Vec<(&[&str], f64, f64)> =
            names.iter().zip(&stacks).map(|(n, (_, v))| (n.as_slice(), 0.0, *v)).collect();
        let t = tree(&all_stacks);
        let svg = render(&t, &Colouring::Single { unit: "samples" }, "t", "s", &FlameOptions::default());
        assert!(svg.contains("data-n=\"big\"") && !svg.contains("data-n=\"tiny7\""));
        assert_eq!(svg.matches("data-n=\"other\"").count(), 1);
        assert!(svg.contains("50 functions, each under 0.5% of the whole, drawn as one: 50 samples"), "{svg}");
        // Threshold 0 keeps every frame.
        let all = render(
            &t,
            &Colouring::Single { unit: "samples" },
            "t",
            "s",
            &FlameOptions { min_share: 0.0, ..FlameOptions::default() },
        );
        assert!(all.contains("data-n=\"tiny7\"") && !all.contains("data-n=\"other\""));
    }

    #[test]
    fn focus_cuts_stacks_at_the_function_and_inverted_reverses_them() {
        let focus = FlameOptions { focus: Some("a".into()), ..FlameOptions::default() };
        let shaped = focus.shape(&frames(&["main", "a", "leaf"]), 0.0, 1.0).unwrap();
        assert_eq!(shaped.frames.iter().map(|f| f.function).collect::<Vec<_>>(), ["a", "leaf"]);
        assert!(focus.shape(&frames(&["main", "b", "leaf"]), 0.0, 1.0).is_none());
        let inverted = FlameOptions { view: FlameView::Inverted, ..FlameOptions::default() };
        let shaped = inverted.shape(&frames(&["main", "a", "leaf"]), 0.0, 1.0).unwrap();
        assert_eq!(shaped.frames[0].function, "leaf");
        // Icicle and inverted draw the root at the top.
        let t = tree(&[(&["main", "a"], 0.0, 1.0)]);
        let y = |opts: &FlameOptions, name: &str| -> f64 {
            let svg = render(&t, &Colouring::Single { unit: "samples" }, "t", "s", opts);
            let at = svg.find(&format!("data-n=\"{name}\"")).unwrap();
            let y = svg[at..].split("y=\"").nth(1).unwrap();
            y[..y.find('"').unwrap()].parse().unwrap()
        };
        let flame = FlameOptions::default();
        assert!(y(&flame, "main") < y(&flame, "all"), "flame: callees above");
        assert!(y(&inverted, "main") > y(&inverted, "all"), "root at the top");
    }

    #[test]
    fn hostile_names_are_escaped() {
        let evil = "<script>alert(\"x\")</script> & 'q' \u{1}\u{7}\n]]>";
        let t = tree(&[(&["main", evil], 0.0, 1.0)]);
        let svg = render(&t, &Colouring::Single { unit: "samples" }, evil, evil, &FlameOptions::default());
        assert!(!svg.contains("<script>alert"), "raw markup in the SVG");
        assert!(svg.contains("&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#39;q&#39;"), "{svg}");
        // XML 1.0 cannot carry these even as character references.
        assert!(!svg.chars().any(|c| c.is_control() && c != '\n'), "control characters");
        // The only CDATA section is the script's own.
        assert_eq!(svg.matches("]]>").count(), 1);
        assert_eq!(svg.matches("<script>").count(), 1);
    }

    #[test]
    fn differential_colours_by_own_change_and_keeps_vanished_stacks() {
        let t = tree(&[(&["main", "gone"], 2.0, 0.0), (&["main", "grew"], 1.0, 3.0), (&["main", "same"], 1.0, 1.0)]);
        let max = t.max_self_change;
        let mode = Colouring::Differential { max_self_change: max, scale: 1.0, unit: DiffUnit::Seconds };
        assert_eq!(fill(node(&t, "grew"), &mode), "rgb(250,45,45)");
        assert_eq!(fill(node(&t, "gone"), &mode), "rgb(45,45,250)");
        assert_eq!(fill(node(&t, "same"), &mode), "rgb(235,235,235)");
        let svg = render(&t, &mode, "t", "s", &FlameOptions::default());
        assert!(svg.contains("data-n=\"gone\""), "a vanished stack is drawn");
        assert!(svg.contains("gone [app]: 2.0000 s → 0.0000 s"));
    }
}
