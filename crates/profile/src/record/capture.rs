//! Copies of runtime code taken while the process lives: JIT code and SBCL's compiled
//! Lisp exist only in the process's memory, and a profile read later (or `annotate`)
//! needs their bytes. As each batch of records is drained, every sampled address in
//! runtime code (see [`super::jit`]) has the page it lies in and its neighbours copied
//! with `process_vm_readv` (once per page); when the recording ends the copies are cut
//! to each runtime symbol of the profile. Code rewritten after its first sample keeps
//! its first copy.

use super::jit::{Classifier, Contents};
use super::records::{Record, Timed};
use crate::format::{CodeBytes, Profile};
use crate::jitmap;
use std::collections::{BTreeMap, HashMap};

const PAGE: u64 = 4096;
/// Pages copied on each side of a sampled page: a function whose hot loop is near a
/// page boundary still gets its start.
const NEIGHBOUR_PAGES: u64 = 1;
/// At most this much code is copied per recording (a busy JIT's hot code is far less).
const MAX_BYTES: usize = 32 << 20;
/// An unnamed region is kept with this much code before and after its sampled
/// addresses, so the instruction before a sample (skid) and the loop around it show.
const UNNAMED_MARGIN: u64 = 96;
/// At most this much of one function's code is stored.
const MAX_SYMBOL_BYTES: u64 = 64 << 10;

#[derive(Default)]
pub(crate) struct CodeCapture {
    /// Per pid: executable mappings start → (end, holds runtime code).
    spaces: HashMap<u32, BTreeMap<u64, (u64, bool)>>,
    classifier: Classifier,
    /// (pid, page address) → the page, None when reading it failed.
    pages: HashMap<(u32, u64), Option<Box<[u8]>>>,
    copied: usize,
    /// The first reason a page could not be copied, and how many could not.
    failure: Option<(String, u64)>,
}

impl CodeCapture {
    /// The classification of every mapped file seen so far, made while it existed.
    pub(crate) fn classifier(&self) -> Classifier {
        self.classifier.clone()
    }

    /// Follow the mappings in `batch` (in time order) and copy the code around every
    /// sample in runtime code while its process still runs.
    pub(crate) fn observe(&mut self, batch: &[Timed]) {
        for (_, record) in batch {
            match record {
                Record::Mmap { pid, start, len, path, .. } => {
                    let runtime = matches!(self.classifier.contents(path), Contents::Runtime { .. });
                    let end = start.saturating_add(*len);
                    let space = self.spaces.entry(*pid).or_default();
                    let overlapping: Vec<u64> =
                        space.range(..end).filter(|(_, (e, _))| *e > *start).map(|(&s, _)| s).collect();
                    for s in overlapping {
                        space.remove(&s);
                    }
                    space.insert(*start, (end, runtime));
                }
                Record::Comm { pid, exec: true, .. } => {
                    self.spaces.remove(pid);
                    self.pages.retain(|(p, _), _| p != pid);
                }
                Record::Fork { pid, ppid, .. } if pid != ppid => {
                    let inherited = self.spaces.get(ppid).cloned().unwrap_or_default();
                    self.spaces.insert(*pid, inherited);
                }
                Record::Sample { pid, ip, kernel: false, .. } => self.sampled(*pid, *ip),
                _ => {}
            }
        }
    }

    fn sampled(&mut self, pid: u32, ip: u64) {
        let Some((&start, &(end, runtime))) = self.spaces.get(&pid).and_then(|s| s.range(..=ip).next_back()) else {
            return;
        };
        if !runtime || ip >= end {
            return;
        }
        let page = ip & !(PAGE - 1);
        if self.pages.contains_key(&(pid, page)) {
            return;
        }
        let first = page.saturating_sub(NEIGHBOUR_PAGES * PAGE).max(start & !(PAGE - 1));
        let last = (page + NEIGHBOUR_PAGES * PAGE).min((end - 1) & !(PAGE - 1));
        let mut at = first;
        while at <= last {
            if !self.pages.contains_key(&(pid, at)) {
                let copy = if self.copied + PAGE as usize > MAX_BYTES {
                    Err(format!("more than {} MiB of code sampled", MAX_BYTES >> 20))
                } else {
                    read_memory(pid, at, PAGE as usize)
                };
                match copy {
                    Ok(bytes) => {
                        self.copied += bytes.len();
                        self.pages.insert((pid, at), Some(bytes.into_boxed_slice()));
                    }
                    Err(why) => {
                        // A neighbour page may be unmapped; only the sampled one counts.
                        if at == page {
                            let failure = self.failure.get_or_insert((why, 0));
                            failure.1 += 1;
                        }
                        self.pages.insert((pid, at), None);
                    }
                }
            }
            at += PAGE;
        }
    }

    /// Give each runtime symbol of the profile its copied code, and say when some
    /// could not be copied.
    pub(crate) fn attach(&self, profile: &mut Profile) {
        let mut missing = 0;
        for symbol in &mut profile.jit_symbols {
            let Some(pid) = profile.objects.get(symbol.object as usize).and_then(|o| jitmap::runtime_pid(&o.path))
            else {
                continue;
            };
            let (from, to) = if symbol.unnamed {
                (symbol.start.saturating_sub(UNNAMED_MARGIN), symbol.start + symbol.size + UNNAMED_MARGIN)
            } else {
                (symbol.start, symbol.start + symbol.size.min(MAX_SYMBOL_BYTES))
            };
            symbol.code = self.bytes(pid, from, to, symbol.start).map(Box::new);
            missing += usize::from(symbol.code.is_none());
        }
        if let Some((why, pages)) = &self.failure {
            profile.code_note = Some(format!(
                "the code of {pages} sampled page{} could not be copied from the running process: {why}",
                if *pages == 1 { "" } else { "s" }
            ));
        } else if missing > 0 {
            profile.code_note = Some(format!(
                "{missing} piece{} of runtime code had no copy (sampled only after its process had exited)",
                if missing == 1 { "" } else { "s" }
            ));
        }
    }

    /// The copied bytes of `from..to` in `pid` that are contiguous with `anchor` (a
    /// sampled or entry address; else the first copied page after it, else the first
    /// in the range), None when nothing of it was copied.
    fn bytes(&self, pid: u32, from: u64, to: u64, anchor: u64) -> Option<CodeBytes> {
        let page_of = |a: u64| a & !(PAGE - 1);
        let copied = |page: u64| self.pages.get(&(pid, page)).and_then(Option::as_deref);
        // A long function's start may not have been copied: then from its first copy on.
        let anchor = std::iter::successors(Some(page_of(anchor)), |p| Some(p + PAGE))
            .chain(std::iter::successors(Some(page_of(from)), |p| Some(p + PAGE)))
            .take_while(|&p| p < to)
            .find(|&p| copied(p).is_some())?;
        let mut first = page_of(anchor);
        while first > page_of(from) && copied(first - PAGE).is_some() {
            first -= PAGE;
        }
        let mut last = page_of(anchor);
        while last < page_of(to.saturating_sub(1)) && copied(last + PAGE).is_some() {
            last += PAGE;
        }
        let start = from.max(first);
        let end = to.min(last + PAGE);
        let mut bytes = Vec::with_capacity((end - start) as usize);
        let mut page = first;
        while page <= last {
            let data = copied(page)?;
            let lo = start.max(page) - page;
            let hi = end.min(page + PAGE) - page;
            if lo < hi {
                bytes.extend_from_slice(&data[lo as usize..hi as usize]);
            }
            page += PAGE;
        }
        Some(CodeBytes::new(start, &bytes))
    }
}

/// `len` bytes at `address` in process `pid` (same permissions as ptrace: our own
/// processes, or root).
fn read_memory(pid: u32, address: u64, len: usize) -> Result<Vec<u8>, String> {
    let mut buffer = vec![0u8; len];
    let local = libc::iovec { iov_base: buffer.as_mut_ptr().cast(), iov_len: len };
    let remote = libc::iovec { iov_base: address as *mut libc::c_void, iov_len: len };
    // SAFETY: the local iovec points at `buffer`, which outlives the call; the remote one
    // is only read by the kernel on the other process's behalf.
    let read = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if read < 0 {
        return Err(format!("process_vm_readv: {}", std::io::Error::last_os_error()));
    }
    buffer.truncate(read as usize);
    if buffer.len() < len {
        return Err("the page was only partly readable".into());
    }
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{JitSymbol, ObjectRef};

    #[test]
    fn code_sampled_in_anonymous_memory_is_copied_and_cut_to_its_symbols() {
        // This process's own anonymous memory stands for a JIT heap.
        let heap: Vec<u8> = (0..3 * PAGE as usize).map(|i| (i % 251) as u8).collect();
        let base = heap.as_ptr() as u64;
        let pid = std::process::id();
        let mut capture = CodeCapture::default();
        let ip = base + PAGE + 100;
        capture.observe(&[
            (1, Record::Mmap { pid, start: base, len: heap.len() as u64, pgoff: 0, path: "//anon".into() }),
            (2, Record::Sample { pid, tid: pid, ip, period: 1, kernel: false, chain: vec![] }),
        ]);
        let mut profile = Profile {
            objects: vec![ObjectRef { path: jitmap::runtime_object(pid) }],
            jit_symbols: vec![
                JitSymbol { object: 0, start: ip, size: 10, name: "f".into(), unnamed: false, code: None },
                JitSymbol { object: 0, start: ip, size: 1, name: "r".into(), unnamed: true, code: None },
            ],
            ..Profile::default()
        };
        capture.attach(&mut profile);
        let named = profile.jit_symbols[0].code.as_ref().unwrap();
        assert_eq!(named.start, ip);
        let offset = (ip - base) as usize;
        assert_eq!(named.bytes().unwrap(), heap[offset..offset + 10]);
        let unnamed = profile.jit_symbols[1].code.as_ref().unwrap();
        assert_eq!(unnamed.start, ip - UNNAMED_MARGIN);
        assert_eq!(unnamed.bytes().unwrap().len() as u64, 2 * UNNAMED_MARGIN + 1);
        assert_eq!(profile.code_note, None);
        drop(heap);
    }

    #[test]
    fn a_process_that_cannot_be_read_is_said() {
        let mut capture = CodeCapture::default();
        // pid 0 is never a process whose memory can be read.
        capture.observe(&[
            (1, Record::Mmap { pid: 0, start: 0x10000, len: 0x1000, pgoff: 0, path: "//anon".into() }),
            (2, Record::Sample { pid: 0, tid: 0, ip: 0x10010, period: 1, kernel: false, chain: vec![] }),
        ]);
        let mut profile = Profile {
            objects: vec![ObjectRef { path: jitmap::runtime_object(0) }],
            jit_symbols: vec![JitSymbol {
                object: 0,
                start: 0x10010,
                size: 1,
                name: "r".into(),
                unnamed: true,
                code: None,
            }],
            ..Profile::default()
        };
        capture.attach(&mut profile);
        assert!(profile.jit_symbols[0].code.is_none());
        assert!(profile.code_note.as_deref().unwrap().contains("could not be copied"), "{:?}", profile.code_note);
    }
}
