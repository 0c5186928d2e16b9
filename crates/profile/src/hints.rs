//! Instruction-cost hints: the table in `data/instruction-hints.toml` (kept as data,
//! each fact with its source) and the rules that match it against decoded instructions,
//! including skid: with imprecise sampling (cpu-clock, no PEBS/IBS) the samples of a
//! long-latency instruction land on the instruction after it.

use iced_x86::{Instruction, OpKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

const TABLE_TOML: &str = include_str!("../data/instruction-hints.toml");

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Condition {
    #[default]
    Any,
    MemoryOperand,
    LockPrefix,
    RepPrefix,
    X87,
}

/// One entry of the hint table.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct HintSpec {
    pub id: String,
    #[serde(default)]
    pub(crate) mnemonics: Vec<String>,
    #[serde(default)]
    pub condition: Condition,
    #[serde(default)]
    pub(crate) long_latency: bool,
    #[serde(default)]
    pub(crate) only_when_hot: bool,
    pub title: String,
    pub detail: String,
    #[serde(default)]
    pub latency: BTreeMap<String, String>,
    pub sources: Vec<String>,
}

#[derive(Deserialize)]
struct Table {
    hint: Vec<HintSpec>,
}

/// The built-in table. It is compiled in and checked by a unit test, so a parse
/// failure here is a build defect, not bad user input.
pub fn table() -> &'static [HintSpec] {
    static TABLE: OnceLock<Vec<HintSpec>> = OnceLock::new();
    TABLE.get_or_init(|| toml::from_str::<Table>(TABLE_TOML).expect("data/instruction-hints.toml is valid").hint)
}

pub(crate) fn mnemonic_name(instr: &Instruction) -> String {
    format!("{:?}", instr.mnemonic()).to_lowercase()
}

fn has_memory_operand(instr: &Instruction) -> bool {
    instr.op_kinds().any(|k| k == OpKind::Memory)
}

fn is_x87(instr: &Instruction) -> bool {
    instr.cpuid_features().iter().any(|f| format!("{f:?}").starts_with("FPU"))
}

/// Hints whose rule matches `instr`, ignoring hotness.
pub fn matching(instr: &Instruction) -> Vec<&'static HintSpec> {
    let mnemonic = mnemonic_name(instr);
    table()
        .iter()
        .filter(|h| {
            let named = h.mnemonics.contains(&mnemonic);
            match h.condition {
                Condition::Any => named,
                Condition::MemoryOperand => named && has_memory_operand(instr),
                Condition::RepPrefix => {
                    named && (instr.has_rep_prefix() || instr.has_repe_prefix() || instr.has_repne_prefix())
                }
                Condition::LockPrefix => instr.has_lock_prefix(),
                Condition::X87 => is_x87(instr),
            }
        })
        .collect()
}

/// Share of a function's samples at which an instruction counts as hot.
pub const HOT_SHARE: f64 = 0.02;

/// A hint attached to one instruction of an annotated function.
#[derive(Debug, Clone, Serialize)]
pub struct Hint {
    pub id: String,
    pub title: String,
    pub detail: String,
    pub latency: BTreeMap<String, String>,
    pub sources: Vec<String>,
    /// For `id = "skid"`: the address of the long-latency instruction whose cost most
    /// likely shows up here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skid_from: Option<u64>,
}

impl Hint {
    fn from_spec(spec: &HintSpec) -> Hint {
        Hint {
            id: spec.id.clone(),
            title: spec.title.clone(),
            detail: spec.detail.clone(),
            latency: spec.latency.clone(),
            sources: spec.sources.clone(),
            skid_from: None,
        }
    }
}

/// Hints for each instruction of a function, given per-instruction sample shares
/// (0–1 of the function) and whether the event samples imprecisely (skid).
pub(crate) fn assign(instrs: &[Instruction], shares: &[f64], imprecise: bool) -> Vec<Vec<Hint>> {
    let matched: Vec<Vec<&HintSpec>> = instrs.iter().map(matching).collect();
    let in_hot_loop = hot_loops(instrs, shares);
    let mut out: Vec<Vec<Hint>> = vec![Vec::new(); instrs.len()];
    for (i, specs) in matched.iter().enumerate() {
        let hot_here = shares[i] >= HOT_SHARE || shares.get(i + 1).is_some_and(|s| *s >= HOT_SHARE);
        // A cost hint on code that never ran is noise: only where samples land (on it,
        // or skidded to the next instruction) or inside a hot loop.
        let sampled = shares[i] > 0.0 || shares.get(i + 1).is_some_and(|s| *s > 0.0) || in_hot_loop[i];
        for spec in specs {
            if (spec.only_when_hot && hot_here) || (!spec.only_when_hot && sampled) {
                out[i].push(Hint::from_spec(spec));
            }
        }
        // Skid: the sample IP is the instruction that was about to retire next, so a
        // hot instruction right after a long-latency one is most likely paying for it.
        if imprecise && i + 1 < instrs.len() && shares[i + 1] >= HOT_SHARE {
            if let Some(spec) = specs.iter().find(|s| s.long_latency) {
                let prev = &instrs[i];
                out[i + 1].push(Hint {
                    id: "skid".into(),
                    title: format!(
                        "samples here most likely belong to `{}` at {:#x} just before ({})",
                        mnemonic_name(prev),
                        prev.ip(),
                        spec.id
                    ),
                    detail: "Without precise sampling (cpu-clock, or cycles without PEBS/IBS) the interrupt is taken after the slow instruction completes, so its samples land on the next instruction.".into(),
                    latency: BTreeMap::new(),
                    sources: vec!["perf_event_open(2), precise_ip: \"skid\"; Intel SDM Vol. 3B, PEBS".into()],
                    skid_from: Some(prev.ip()),
                });
            }
        }
    }
    out
}

/// Which instructions lie in a hot loop: between the target of a conditional backward
/// branch and the branch, when that span holds at least [`HOT_SHARE`] of the samples.
pub(crate) fn hot_loops(instrs: &[Instruction], shares: &[f64]) -> Vec<bool> {
    let mut hot = vec![false; instrs.len()];
    for (i, ins) in instrs.iter().enumerate() {
        if ins.flow_control() != iced_x86::FlowControl::ConditionalBranch || ins.near_branch_target() > ins.ip() {
            continue;
        }
        let target = ins.near_branch_target();
        let Some(j) = instrs[..=i].iter().position(|x| x.ip() == target) else { continue };
        if shares[j..=i].iter().sum::<f64>() >= HOT_SHARE {
            hot[j..=i].iter_mut().for_each(|h| *h = true);
        }
    }
    hot
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions};

    fn decode(bytes: &[u8]) -> Vec<Instruction> {
        Decoder::with_ip(64, bytes, 0x1000, DecoderOptions::NONE).into_iter().collect()
    }

    fn ids(h: &[Hint]) -> Vec<&str> {
        h.iter().map(|h| h.id.as_str()).collect()
    }

    #[test]
    fn table_parses_and_every_entry_cites_a_source() {
        assert!(table().len() >= 10);
        for h in table() {
            assert!(!h.sources.is_empty(), "{} has no source", h.id);
            assert!(
                !h.mnemonics.is_empty() || matches!(h.condition, Condition::LockPrefix | Condition::X87),
                "{}",
                h.id
            );
        }
    }

    #[test]
    fn cold_instructions_get_no_hints_unless_in_a_hot_loop() {
        // 0x1000: xchg [rdi], rax ; lock add [rdi], eax ; 0x1006: nop ; div rcx ; jne 0x1006 ; xchg [rdi], rax
        let ins = decode(&[0x48, 0x87, 0x07, 0xf0, 0x01, 0x07, 0x90, 0x48, 0xf7, 0xf1, 0x75, 0xfa, 0x48, 0x87, 0x07]);
        assert_eq!(ins[4].near_branch_target(), ins[2].ip(), "the jne closes the loop at the nop");
        // Only the nop in the loop has samples; the div inside the loop gets its hint,
        // the xchg before the loop (cold) and after it (cold) get none.
        let hints = assign(&ins, &[0.0, 0.0, 0.9, 0.0, 0.1, 0.0], true);
        assert!(hints[0].is_empty() && hints[5].is_empty(), "{:?}", hints);
        assert_eq!(ids(&hints[3]), ["div-integer"]);
        // A sampled xchg keeps its hint.
        let hints = assign(&ins, &[0.5, 0.5, 0.0, 0.0, 0.0, 0.0], true);
        assert_eq!(ids(&hints[0]), ["xchg-memory"]);
    }

    #[test]
    fn memory_xchg_and_locked_rmw_match_but_register_xchg_does_not() {
        // xchg [rdi], rax ; xchg rax, rbx ; lock add [rdi], eax
        let ins = decode(&[0x48, 0x87, 0x07, 0x48, 0x93, 0xf0, 0x01, 0x07]);
        assert_eq!(matching(&ins[0]).iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["xchg-memory"]);
        assert!(matching(&ins[1]).is_empty());
        assert_eq!(matching(&ins[2]).iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["lock-rmw"]);
    }

    #[test]
    fn div_bsr_cpuid_x87_match() {
        // div rcx ; bsr rax, rdx ; cpuid ; fld st(1)
        let ins = decode(&[0x48, 0xf7, 0xf1, 0x48, 0x0f, 0xbd, 0xc2, 0x0f, 0xa2, 0xd9, 0xc1]);
        let first = |i: usize| matching(&ins[i])[0].id.clone();
        assert_eq!(first(0), "div-integer");
        assert_eq!(first(1), "bit-scan");
        assert_eq!(first(2), "serializing");
        assert_eq!(first(3), "x87");
    }

    #[test]
    fn skid_points_from_a_hot_instruction_back_at_the_slow_one() {
        // div rcx ; add rax, rdx ; mulsd xmm0, xmm1
        let ins = decode(&[0x48, 0xf7, 0xf1, 0x48, 0x01, 0xd0, 0xf2, 0x0f, 0x59, 0xc1]);
        let hints = assign(&ins, &[0.0, 0.77, 0.0], true);
        assert_eq!(ids(&hints[0]), ["div-integer"]);
        assert_eq!(ids(&hints[1]), ["skid"]);
        assert_eq!(hints[1][0].skid_from, Some(0x1000));
        // The denormal hint is only for hot FP instructions.
        assert!(hints[2].is_empty());
        let precise = assign(&ins, &[0.0, 0.77, 0.5], false);
        assert!(precise[1].is_empty());
        assert_eq!(ids(&precise[2]), ["denormal-prone"]);
    }
}
