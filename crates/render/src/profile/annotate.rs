//! `perflab annotate` on the terminal: per function a header, then per instruction its
//! share and samples, address and text, with source lines interleaved where they
//! change, jump targets (`▶`), called functions, loop back-edges, llvm-mca figures and
//! cost hints; a long function shows its hot blocks only (`--all`: every instruction).

use super::paint_share;
use crate::color;
use perflab_profile::annotate::{hot_view, AnnotatedFunction, AnnotatedInstruction, Annotation, HotView};
use perflab_profile::symbolize::basename;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

/// Source text cache for interleaving.
#[derive(Default)]
struct Sources(HashMap<String, Option<Vec<String>>>);

impl Sources {
    fn line(&mut self, location: &str) -> Option<String> {
        let (file, line) = location.rsplit_once(':')?;
        let line: usize = line.parse().ok()?;
        let lines = self.0.entry(file.to_string()).or_insert_with(|| {
            perflab_sys::files::read_regular_to_string(file).ok().map(|t| t.lines().map(String::from).collect())
        });
        let text = lines.as_ref()?.get(line.checked_sub(1)?)?.trim();
        // Keep one source line on one terminal line.
        Some(match text.char_indices().nth(100) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.to_string(),
        })
    }
}

/// Every annotated function, or why there is none; `all`: every instruction, not only
/// a long function's hot blocks.
pub fn report(a: &Annotation, all: bool) -> String {
    let mut out = String::new();
    if a.functions.is_empty() && a.samples == 0 {
        out += "the profile has no samples\n";
    } else if a.functions.is_empty() {
        out +=
            "no function with symbols to annotate (the samples are in stripped or special code; see `perflab show`)\n";
    }
    for f in &a.functions {
        out += &function(f, a, all);
    }
    if a.mca_available && !a.functions.is_empty() {
        let hint = "llvm-mca is installed: add --mca for per-instruction latency and throughput of each hot loop";
        let _ = writeln!(out, "{}", color::dim(hint));
    }
    out
}

/// The line standing for instructions left out.
fn elided(instructions: &[AnnotatedInstruction], total: u64) -> String {
    let (Some(first), Some(last)) = (instructions.first(), instructions.last()) else { return String::new() };
    let samples: u64 = instructions.iter().map(|i| i.samples).sum();
    let share = if total == 0 { 0.0 } else { samples as f64 * 100.0 / total as f64 };
    let line = color::dim(&format!(
        "{:>19}… {} instruction{} {:x}–{:x} not shown: {samples} samples ({share:.2}%); --all shows them",
        "",
        instructions.len(),
        if instructions.len() == 1 { "" } else { "s" },
        first.address,
        last.address
    ));
    format!("{line}\n")
}

fn function(f: &AnnotatedFunction, a: &Annotation, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  {}",
        color::bold(&f.name),
        color::dim(&format!(
            "{}  {} samples, {:.2}% of {} {} samples",
            match basename(&f.object) {
                bracketed if bracketed.starts_with('[') => bracketed.to_string(),
                name => format!("[{name}]"),
            },
            f.samples,
            f.share * 100.0,
            a.samples,
            a.event
        ))
    );
    if let Some(note) = &f.note {
        let _ = writeln!(out, "{}", color::dim(&format!("  ({note})")));
    }
    if f.instructions.is_empty() {
        out += "  no code to disassemble\n";
    }
    let targets: HashSet<u64> = f.instructions.iter().filter_map(|i| i.jump_to).collect();
    let mut sources = Sources::default();
    let mut last_source: Option<(&str, Option<&str>)> = None;
    let mut explained: BTreeMap<&str, ()> = BTreeMap::new();
    let view = if all { HotView { shown: vec![true; f.instructions.len()], ranked: None } } else { hot_view(f) };
    let shown = view.shown;
    // An interpreter loop: its hottest blocks, each headed by its rank and share.
    let mut block_heads: HashMap<usize, (usize, f64)> = HashMap::new();
    if let Some(r) = &view.ranked {
        let _ = writeln!(
            out,
            "{}",
            color::dim(&format!(
                "  dispatch: {} indirect jump{} / {} basic blocks; back-edges span {:.0}% of the function, so \
                 showing the {} hottest blocks holding {:.1}% of its samples (--all shows everything)",
                r.indirect_jumps,
                if r.indirect_jumps == 1 { "" } else { "s" },
                r.blocks,
                r.loop_cover * 100.0,
                r.shown.len(),
                r.share() * 100.0
            ))
        );
        for (rank, &(first, _, share)) in r.shown.iter().enumerate() {
            block_heads.insert(first, (rank + 1, share));
        }
    }
    let mut elided_from = None;
    for (i, ins) in f.instructions.iter().enumerate() {
        if !shown[i] {
            elided_from.get_or_insert(i);
            continue;
        }
        if let Some(from) = elided_from.take() {
            out += &elided(&f.instructions[from..i], f.samples);
            last_source = None;
        }
        if let Some((rank, share)) = block_heads.get(&i) {
            let head = format!("{:>19}── hottest block #{rank}: {:.2}% of the function's samples", "", share * 100.0);
            let _ = writeln!(out, "{}", color::dim(&head));
        }
        let here = ins.source.as_deref().map(|s| (s, ins.inlined.as_deref()));
        if here != last_source {
            if let Some((loc, inlined)) = here {
                let text = sources.line(loc).unwrap_or_default();
                let from = inlined.map_or(String::new(), |f| format!("  [inlined {f}]"));
                let _ = writeln!(out, "{}", color::dim(&format!("{:>19}{}  {text}{from}", "", basename(loc))));
            }
            last_source = here;
        }
        let share = if ins.samples == 0 { String::new() } else { format!("{:.2}%", ins.share * 100.0) };
        let samples = if ins.samples == 0 { String::new() } else { ins.samples.to_string() };
        let gutter = if targets.contains(&ins.address) { "▶" } else { " " };
        let mut text = ins.text.clone();
        if let Some(callee) = &ins.call_to {
            text.push_str(&format!(" <{}>", crate::terminal::escape(callee)));
        }
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
        let _ = writeln!(
            out,
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
            let _ = writeln!(out, "{:>27}{}", "", color::yellow(&format!("⚠ {}{latency}", h.title)));
            if h.id != "skid" && explained.insert(h.id.as_str(), ()).is_none() {
                let _ = writeln!(out, "{:>29}{}", "", color::dim(&h.detail));
            }
        }
    }
    if let Some(from) = elided_from {
        out += &elided(&f.instructions[from..], f.samples);
    }
    if let Some(m) = &f.mca {
        let _ = writeln!(
            out,
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
    out.push('\n');
    out
}
