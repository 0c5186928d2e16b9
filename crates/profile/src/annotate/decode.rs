//! Where a function's instructions start: decoded linearly, re-synchronised wherever a
//! known instruction start (a sampled address, a branch target reached from the entry,
//! a symbol or perf-map start) falls inside an instruction decoded before it — the
//! bytes skipped are data — and SBCL's traps (`int3` followed by a trap code and,
//! for error traps, their arguments) decoded as SBCL lays them out.
//!
//! Written by hand: iced-x86 decodes one instruction at a time and has no notion of
//! reachability or of a runtime's data in code (objdump and perf annotate decode
//! linearly and show the garbage).

use iced_x86::{Decoder, DecoderError, DecoderOptions, FlowControl, Instruction, Mnemonic};
use std::collections::BTreeSet;

/// SBCL's trap codes that x86-64 SBCL writes after `int3` (src/compiler/x86-64/parms.lisp,
/// the same in every version since 1.0): `halt` ends the program, `pending interrupt`
/// (at the end of a pseudo-atomic section) returns to the next byte. The numbering of
/// the higher codes (cerror, breakpoints, invalid argument count, internal errors from
/// `error-trap` upward) moved between versions, so they are shown by number.
pub(crate) const SBCL_HALT_TRAP: u8 = 8;
pub(crate) const SBCL_PENDING_INTERRUPT_TRAP: u8 = 9;

/// An error trap's arguments (an error number byte for cerror, then one LEB128 SC+offset
/// per argument of the error, 1–3 bytes each; src/compiler/generic/type-error.lisp
/// `emit-internal-error`) end where the next instruction starts; their count is in a
/// table of the SBCL build, which a profile does not have. So the bytes up to the next
/// known instruction start are taken as the arguments when it is this close; further
/// away, decoding continues right after the trap code.
const TRAP_ARGUMENTS_MAX: u64 = 32;

/// Why bytes are shown as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataWhy {
    /// A known instruction start lies inside the instruction they would begin.
    Skipped,
    /// Prefixes a branch goes past (`je 1f; lock; 1: cmpxchg`, glibc's way of taking
    /// the lock only when threads exist).
    Prefix,
    /// The arguments of an SBCL error trap, up to the next known instruction start.
    TrapArguments,
    /// Not a valid instruction.
    Undecodable,
    /// An instruction cut by the end of the code (or of its copy).
    Cut,
}

/// What one row of the listing is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An instruction.
    Code,
    /// SBCL's `int3` with its trap code (the row's length covers both bytes).
    Trap(u8),
    /// Bytes that are not instructions.
    Data(DataWhy),
}

/// One row: an instruction (for data, an invalid one whose IP and length say which bytes).
#[derive(Debug, Clone)]
pub(crate) struct Decoded {
    pub(crate) ins: Instruction,
    pub(crate) kind: Kind,
}

/// The code of one function and what is known about where its instructions start.
pub(crate) struct Code<'a> {
    pub(crate) bytes: &'a [u8],
    /// Address of `bytes[0]`: the function's entry.
    pub(crate) start: u64,
    pub(crate) bitness: u32,
    /// SBCL's compiled Lisp: `int3` is followed by a trap code.
    pub(crate) sbcl: bool,
}

impl Code<'_> {
    fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// The instruction at `ip` (an SBCL trap with its code byte), None past the end.
    pub(crate) fn at(&self, ip: u64) -> Option<(Instruction, Kind)> {
        let offset = usize::try_from(ip.checked_sub(self.start)?).ok().filter(|o| *o < self.bytes.len())?;
        let mut decoder = Decoder::with_ip(self.bitness, &self.bytes[offset..], ip, DecoderOptions::NONE);
        let mut ins = decoder.decode();
        if ins.is_invalid() {
            let why =
                if decoder.last_error() == DecoderError::NoMoreBytes { DataWhy::Cut } else { DataWhy::Undecodable };
            return Some((ins, Kind::Data(why)));
        }
        if self.sbcl && ins.mnemonic() == Mnemonic::Int3 && ins.len() == 1 {
            if let Some(&code) = self.bytes.get(offset + 1) {
                ins.set_len(2);
                ins.set_ip(ip);
                return Some((ins, Kind::Trap(code)));
            }
        }
        Some((ins, Kind::Code))
    }

    /// Instruction starts reached from `entries` by following fall-through and direct
    /// branches and calls inside the function (recursive descent): their branch targets.
    fn branch_targets(&self, entries: &BTreeSet<u64>) -> BTreeSet<u64> {
        let range = self.start..self.end();
        let mut visited = BTreeSet::new();
        let mut targets = BTreeSet::new();
        let mut work: Vec<u64> = entries.iter().copied().collect();
        while let Some(mut ip) = work.pop() {
            while range.contains(&ip) && visited.insert(ip) {
                let Some((ins, kind)) = self.at(ip) else { break };
                if matches!(kind, Kind::Data(_)) || ins.next_ip() > range.end {
                    break;
                }
                let flow = ins.flow_control();
                if matches!(flow, FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch | FlowControl::Call)
                {
                    let target = ins.near_branch_target();
                    if range.contains(&target) && targets.insert(target) {
                        work.push(target);
                    }
                }
                let ends_path = match kind {
                    // Only the pending-interrupt trap returns to the next byte; the others
                    // stop the program, signal an error or carry arguments of unknown length.
                    Kind::Trap(code) => code != SBCL_PENDING_INTERRUPT_TRAP,
                    _ => matches!(
                        flow,
                        FlowControl::UnconditionalBranch
                            | FlowControl::IndirectBranch
                            | FlowControl::Return
                            | FlowControl::Interrupt
                            | FlowControl::Exception
                    ),
                };
                if ends_path {
                    break;
                }
                ip = ins.next_ip();
            }
        }
        targets
    }
}

/// Decode `code` from its entry. `starts`: addresses known to be instruction starts
/// besides the entry (sampled addresses — the CPU was executing there —, symbol and
/// perf-map starts inside the code); branch targets reached from them are added.
pub(crate) fn decode(code: &Code, starts: &BTreeSet<u64>) -> Vec<Decoded> {
    let end = code.end();
    let mut known: BTreeSet<u64> = starts.iter().copied().filter(|a| (code.start..end).contains(a)).collect();
    known.insert(code.start);
    let targets = code.branch_targets(&known);
    known.extend(targets);
    let data = |ip: u64, to: u64, why: DataWhy| {
        let mut ins = Instruction::default();
        // Length first: iced derives the next IP from it when the IP is set.
        ins.set_len((to - ip) as usize);
        ins.set_ip(ip);
        Decoded { ins, kind: Kind::Data(why) }
    };
    let mut out = Vec::new();
    let mut ip = code.start;
    while ip < end {
        let Some((ins, kind)) = code.at(ip) else { break };
        let next = (ip + ins.len().max(1) as u64).min(end);
        if let Some(&inside) = known.range(ip + 1..next).next() {
            let skipped = &code.bytes[(ip - code.start) as usize..(inside - code.start) as usize];
            let why = if skipped.iter().all(|b| is_legacy_prefix(*b)) { DataWhy::Prefix } else { DataWhy::Skipped };
            out.push(data(ip, inside, why));
            ip = inside;
            continue;
        }
        if let Kind::Data(why) = kind {
            out.push(data(ip, next, why));
            ip = next;
            continue;
        }
        out.push(Decoded { ins, kind });
        ip = next;
        if let Kind::Trap(trap) = kind {
            let has_arguments = trap != SBCL_PENDING_INTERRUPT_TRAP && trap != SBCL_HALT_TRAP;
            if let Some(&resume) = known.range(ip..).next().filter(|k| has_arguments && **k - ip <= TRAP_ARGUMENTS_MAX)
            {
                if resume > ip {
                    out.push(data(ip, resume, DataWhy::TrapArguments));
                    ip = resume;
                }
            }
        }
    }
    out
}

/// Whether `byte` is an x86 legacy prefix (lock, rep, segment, operand or address size).
fn is_legacy_prefix(byte: u8) -> bool {
    matches!(byte, 0xf0 | 0xf2 | 0xf3 | 0x2e | 0x36 | 0x3e | 0x26 | 0x64 | 0x65 | 0x66 | 0x67)
}

/// How a trap code reads in the listing.
pub(crate) fn trap_name(code: u8) -> String {
    match code {
        SBCL_HALT_TRAP => "trap 8 (halt)".to_string(),
        SBCL_PENDING_INTERRUPT_TRAP => "trap 9 (pending interrupt)".to_string(),
        other => format!("trap {other}"),
    }
}
