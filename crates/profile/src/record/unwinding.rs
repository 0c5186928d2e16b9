//! DWARF unwinding of the stack copies a source delivers (`-g dwarf` recordings, perf.data
//! files recorded with `--call-graph dwarf`): the mapping changes are replayed in time
//! order so that each sample is unwound against its process's mappings of its moment,
//! and each copy is replaced by the addresses it unwound to (a call chain like the
//! kernel's, user frames after a `PERF_CONTEXT_USER` marker).

use super::records::{Record, Timed, PERF_CONTEXT_USER};
use super::source::MAX_STACK;
use crate::format::DwarfStats;
use crate::unwind::DwarfUnwinder;

/// Unwind the user stacks of one batch of records in time order; the stack copies are
/// dropped once unwound.
pub(crate) fn unwind_batch(unwinder: &mut DwarfUnwinder, stats: &mut DwarfStats, batch: &mut [Timed]) {
    batch.sort_by_key(|(time, _)| *time);
    for (_, record) in batch {
        unwind_record(unwinder, stats, record);
    }
}

/// Feed one record to the unwinder: a mapping change is learnt, a stack copy unwound
/// into the record it carries.
pub(crate) fn unwind_record(unwinder: &mut DwarfUnwinder, stats: &mut DwarfStats, record: &mut Record) {
    match record {
        Record::Mmap { pid, start, len, pgoff, path } => unwinder.mmap(*pid, *start, *len, *pgoff, path),
        Record::Comm { pid, exec: true, .. } => unwinder.exec(*pid),
        Record::Fork { pid, ppid, .. } => unwinder.fork(*pid, *ppid),
        Record::StackSample(..) => {
            // Take the record out to move the sample out of its box.
            if let Record::StackSample(mut sample, stack) = std::mem::replace(record, Record::Lost(0)) {
                if let Record::Sample { pid, chain, .. } | Record::SwitchedOut { pid, chain, .. } = sample.as_mut() {
                    let unwound = unwinder.unwind(*pid, &stack, MAX_STACK as usize);
                    stats.count(unwound.truncated);
                    chain.push(PERF_CONTEXT_USER);
                    chain.extend(unwound.addresses);
                }
                *record = *sample;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::DwarfStats;
    use crate::record::records::PERF_CONTEXT_KERNEL;
    use crate::unwind::DwarfUnwinder;
    use crate::unwind::UserStack;

    #[test]
    fn stack_copies_of_samples_and_switch_outs_are_unwound_into_their_chains() {
        // A process the unwinder has no mappings for unwinds to its IP alone.
        let stack = UserStack { ip: 0x1800, sp: 0x7000, bp: 0, bytes: vec![0; 64] };
        let sample = Record::Sample { pid: 10, tid: 10, ip: 0x1800, period: 1, kernel: false, chain: vec![] };
        let blocked =
            Record::SwitchedOut { pid: 10, tid: 10, ip: 0xffff_0010, chain: vec![PERF_CONTEXT_KERNEL, 0xffff_0010] };
        let mut batch = vec![
            (2, Record::StackSample(Box::new(blocked), stack.clone())),
            (1, Record::StackSample(Box::new(sample), stack)),
        ];
        let mut stats = DwarfStats::new(64);
        unwind_batch(&mut DwarfUnwinder::default(), &mut stats, &mut batch);
        assert_eq!((stats.unwound, stats.truncated), (2, 2));
        assert!(matches!(&batch[0].1, Record::Sample { chain, .. } if *chain == [PERF_CONTEXT_USER, 0x1800]));
        let kernel_then_user = [PERF_CONTEXT_KERNEL, 0xffff_0010, PERF_CONTEXT_USER, 0x1800];
        assert!(matches!(&batch[1].1, Record::SwitchedOut { chain, .. } if *chain == kernel_then_user));
    }
}
