//! DWARF unwinding of sampled user stacks (`profile -g dwarf`): each sample carries a
//! copy of the top of the user stack and the registers IP, SP and BP; framehop walks it
//! with the CFI of the mapped objects (`.eh_frame` with its `.eh_frame_hdr` index, or
//! `.debug_frame` from the object or its separate debug file) and falls back to frame
//! pointers where an address has no unwind entry (JIT code). The result is a call
//! chain of addresses like the kernel's frame-pointer chain, so the rest of the
//! pipeline treats both alike.

use super::symbolize;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection, ObjectSegment};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

/// How `profile -g` finds the callers of each sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unwinding {
    /// The kernel follows frame pointers while sampling (cheap; needs
    /// `-fno-omit-frame-pointer` code).
    #[default]
    FramePointers,
    /// perflab copies the top of the user stack per sample and unwinds it from CFI
    /// after the fact (works for ordinary `-O2` builds and distribution binaries).
    Dwarf,
}

impl Unwinding {
    /// The methods as `-g` spells them.
    pub const NAMES: [&'static str; 2] = ["fp", "dwarf"];
}

impl std::str::FromStr for Unwinding {
    type Err = super::error::UnknownChoice;
    fn from_str(s: &str) -> Result<Unwinding, Self::Err> {
        match s {
            "fp" => Ok(Unwinding::FramePointers),
            "dwarf" => Ok(Unwinding::Dwarf),
            other => Err(super::error::UnknownChoice { expected: "fp or dwarf", found: other.to_string() }),
        }
    }
}

/// Bytes of user stack copied per sample by default. perf copies 8 KiB; measured here
/// (docs/profiling.md), 8 KiB left some of Debian's python3.11 stacks cut short while
/// 16 KiB reached `_start` in all of them, for twice the bytes per sample.
pub const DEFAULT_STACK_BYTES: u32 = 16 * 1024;
/// The kernel's limit: the sample record size is a u16, so the copy is at most 64 KiB
/// minus the record's other fields, and must be a multiple of 8.
pub const MAX_STACK_BYTES: u32 = 65_528;

/// `sample_regs_user` mask: the registers framehop needs on x86-64 (perf_regs.h:
/// BP = 6, SP = 7, IP = 8). The kernel stores them in bit order.
pub(crate) const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);

/// The user-space state of one sample.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UserStack {
    pub ip: u64,
    pub(crate) sp: u64,
    pub(crate) bp: u64,
    /// The copied stack, starting at `sp`.
    pub bytes: Vec<u8>,
}

impl UserStack {
    /// From the registers in [`REGS_MASK`] order (BP, SP, IP) and the copied stack;
    /// None when the registers are missing (a kernel thread has no user state).
    pub fn new(regs: &[u64], bytes: &[u8]) -> Option<UserStack> {
        match *regs {
            [bp, sp, ip] => Some(UserStack { ip, sp, bp, bytes: bytes.to_vec() }),
            _ => None,
        }
    }

    fn read(&self, address: u64) -> Result<u64, ()> {
        let start = address.checked_sub(self.sp).ok_or(())? as usize;
        let word = self.bytes.get(start..start.checked_add(8).ok_or(())?).ok_or(())?;
        Ok(u64::from_le_bytes(word.try_into().map_err(|_| ())?))
    }
}

/// The unwind sections of one object file, shared by every mapping of it.
#[derive(Clone)]
struct UnwindSections {
    info: ExplicitModuleSectionInfo<Arc<[u8]>>,
    /// PT_LOAD segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
}

impl UnwindSections {
    fn load(path: &str) -> Option<UnwindSections> {
        let file = perflab_sys::files::open_regular(path).ok()?;
        // SAFETY: read-only mapping of an object file, as in symbolize.rs.
        let data = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        let elf = object::File::parse(&*data).ok()?;
        let section = |name: &str| elf.section_by_name(name);
        let range = |name: &str| section(name).map(|s| s.address()..s.address() + s.size());
        let bytes = |s: Option<object::Section>| -> Option<Arc<[u8]>> {
            s.and_then(|s| s.uncompressed_data().ok()).filter(|d| !d.is_empty()).map(|d| Arc::from(&*d))
        };
        // .debug_frame is rare in the object itself; distributions ship it (when at all)
        // in the separate debug file.
        let debug_frame = bytes(section(".debug_frame")).or_else(|| {
            let debug = symbolize::separate_debug_file(&elf, Path::new(path))?;
            let f = perflab_sys::files::open_regular(debug).ok()?;
            // SAFETY: as above.
            let map = unsafe { memmap2::Mmap::map(&f) }.ok()?;
            let obj = object::File::parse(&*map).ok()?;
            bytes(obj.section_by_name(".debug_frame"))
        });
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: range(".text"),
            got_svma: range(".got"),
            eh_frame_svma: range(".eh_frame"),
            eh_frame: bytes(section(".eh_frame")),
            eh_frame_hdr_svma: range(".eh_frame_hdr"),
            eh_frame_hdr: bytes(section(".eh_frame_hdr")),
            debug_frame,
            ..Default::default()
        };
        let segments = elf
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                (offset, size, s.address())
            })
            .collect();
        Some(UnwindSections { info, segments })
    }

    /// The load bias of a mapping of this object at `start` from file offset `pgoff`:
    /// what is added to an address stated in the file to get the address in memory.
    /// `pgoff` is page-aligned while a segment's file offset need not be (lld starts the
    /// code segment mid-page), so the segment is the last one whose first page is at or
    /// before `pgoff`.
    fn bias(&self, start: u64, pgoff: u64) -> u64 {
        let page = |offset: u64| offset & !0xfff;
        let svma = self
            .segments
            .iter()
            .filter(|(offset, size, _)| page(*offset) <= pgoff && pgoff < offset + size)
            .max_by_key(|(offset, _, _)| *offset)
            .map_or(pgoff, |(offset, _, address)| address.wrapping_add(pgoff).wrapping_sub(*offset));
        start.wrapping_sub(svma)
    }
}

/// One process's address space as the unwinder sees it.
#[derive(Clone, Default)]
struct Process {
    unwinder: UnwinderX86_64<Arc<[u8]>>,
    /// start → end of each module added to `unwinder`.
    modules: BTreeMap<u64, u64>,
}

/// The outcome of unwinding one sample.
#[derive(Debug, PartialEq)]
pub struct Unwound {
    /// The sampled IP, then return addresses, innermost first.
    pub addresses: Vec<u64>,
    /// The walk stopped before reaching the outermost frame (the copy ended, or no
    /// rule applied), so outer callers are missing.
    pub truncated: bool,
}

/// Follows the mappings of every sampled process (from the recording's MMAP2, COMM
/// and FORK records, replayed in time order) and unwinds their samples.
///
/// It keeps its own per-process module lists rather than sharing record.rs's replay:
/// unwinding happens while recording, batch by batch, so that the stack copies (kilobytes
/// per sample) need not be kept until the end.
#[derive(Default)]
pub(crate) struct DwarfUnwinder {
    processes: HashMap<u32, Process>,
    /// Unwind sections per object path (None: unreadable or not an object).
    objects: HashMap<String, Option<Arc<UnwindSections>>>,
    cache: CacheX86_64,
}

impl DwarfUnwinder {
    /// An executable mapping appeared in `pid`: it replaces whatever it overlaps.
    pub(crate) fn mmap(&mut self, pid: u32, start: u64, len: u64, pgoff: u64, path: &str) {
        let end = start.saturating_add(len);
        let sections = if path.starts_with('/') {
            self.objects.entry(path.to_string()).or_insert_with(|| UnwindSections::load(path).map(Arc::new)).clone()
        } else {
            None // [vdso], //anon (JIT code): frame pointers only
        };
        let process = self.processes.entry(pid).or_default();
        let overlapping: Vec<u64> = process.modules.range(..end).filter(|(_, &e)| e > start).map(|(&s, _)| s).collect();
        for s in overlapping {
            process.modules.remove(&s);
            process.unwinder.remove_module(s);
        }
        if let Some(sections) = sections {
            let module = Module::new(path.to_string(), start..end, sections.bias(start, pgoff), sections.info.clone());
            process.unwinder.add_module(module);
            process.modules.insert(start, end);
        }
    }

    /// `pid` called exec: its old mappings are gone.
    pub fn exec(&mut self, pid: u32) {
        self.processes.remove(&pid);
    }

    /// A new process `pid` forked from `ppid` starts with a copy of its mappings.
    pub fn fork(&mut self, pid: u32, ppid: u32) {
        if pid != ppid {
            let inherited = self.processes.get(&ppid).cloned().unwrap_or_default();
            self.processes.insert(pid, inherited);
        }
    }

    /// Walk one sample's stack: at most `max_frames` addresses.
    pub fn unwind(&mut self, pid: u32, stack: &UserStack, max_frames: usize) -> Unwound {
        let Some(process) = self.processes.get(&pid) else {
            return Unwound { addresses: vec![stack.ip], truncated: true };
        };
        let mut read = |address| stack.read(address);
        let regs = UnwindRegsX86_64::new(stack.ip, stack.sp, stack.bp);
        let mut frames = process.unwinder.iter_frames(stack.ip, regs, &mut self.cache, &mut read);
        let mut addresses = Vec::new();
        let truncated = loop {
            if addresses.len() == max_frames {
                break true;
            }
            match frames.next() {
                Ok(Some(frame)) => addresses.push(match frame {
                    FrameAddress::InstructionPointer(ip) => ip,
                    FrameAddress::ReturnAddress(ra) => ra.get(),
                }),
                Ok(None) => break false,
                Err(_) => break true,
            }
        };
        Unwound { addresses, truncated }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_modes() {
        assert_eq!("dwarf".parse::<Unwinding>(), Ok(Unwinding::Dwarf));
        assert_eq!("fp".parse::<Unwinding>(), Ok(Unwinding::FramePointers));
        assert!("lbr".parse::<Unwinding>().is_err());
        for name in Unwinding::NAMES {
            assert!(name.parse::<Unwinding>().is_ok());
        }
    }

    #[test]
    fn reads_only_inside_the_copy() {
        let stack = UserStack::new(&[0, 0x1000, 0x42], &[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        assert_eq!(stack.read(0x1000), Ok(1));
        assert_eq!(stack.read(0x1008), Err(()), "only 4 of 8 bytes copied");
        assert_eq!(stack.read(0xff8), Err(()));
        assert_eq!(stack.read(u64::MAX), Err(()));
        assert!(UserStack::new(&[], &[]).is_none(), "no user registers (kernel thread)");
    }

    /// Unwinds a real stack: this test's own thread, from a copy of its stack taken
    /// here, against this test binary's mappings from /proc/self/maps. The test binary
    /// is built with frame pointers off by default (Rust's default on x86-64 Linux),
    /// so reaching this function's caller needs the CFI.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn unwinds_this_thread_through_eh_frame() {
        #[inline(never)]
        fn capture() -> UserStack {
            let (ip, sp, bp): (u64, u64, u64);
            // SAFETY: reads three registers, no memory or stack effects.
            unsafe {
                std::arch::asm!("lea {ip}, [rip]", "mov {sp}, rsp", "mov {bp}, rbp", ip = out(reg) ip, sp = out(reg) sp, bp = out(reg) bp);
            }
            // Copy from SP to the top of this thread's stack, as the kernel would.
            // SAFETY: pthread_getattr_np fills `attr` for the calling thread; the range
            // [sp, top) is this thread's live stack.
            let bytes = unsafe {
                let mut attr: libc::pthread_attr_t = std::mem::zeroed();
                assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
                let (mut base, mut size) = (std::ptr::null_mut(), 0);
                assert_eq!(libc::pthread_attr_getstack(&attr, &mut base, &mut size), 0);
                libc::pthread_attr_destroy(&mut attr);
                let top = base as u64 + size as u64;
                std::slice::from_raw_parts(sp as *const u8, (top - sp).min(64 * 1024) as usize).to_vec()
            };
            UserStack { ip, sp, bp, bytes }
        }
        #[inline(never)]
        fn outer_marker() -> UserStack {
            std::hint::black_box(capture())
        }
        let stack = outer_marker();
        let mut unwinder = DwarfUnwinder::default();
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        for line in maps.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 6 || !f[1].contains('x') {
                continue;
            }
            let (start, end) = f[0].split_once('-').unwrap();
            let start = u64::from_str_radix(start, 16).unwrap();
            let end = u64::from_str_radix(end, 16).unwrap();
            let pgoff = u64::from_str_radix(f[2], 16).unwrap();
            unwinder.mmap(1, start, end - start, pgoff, f[5]);
        }
        let unwound = unwinder.unwind(1, &stack, 127);
        let exe = std::env::current_exe().unwrap();
        let mut symbolizer = symbolize::Symbolizer::default();
        let names: Vec<String> = unwound
            .addresses
            .iter()
            .enumerate()
            .filter_map(|(i, &a)| {
                let line = maps.lines().find(|l| {
                    let (s, rest) = l.split_once('-').unwrap();
                    let e = rest.split_whitespace().next().unwrap();
                    let (s, e) = (u64::from_str_radix(s, 16).unwrap(), u64::from_str_radix(e, 16).unwrap());
                    a >= s && a < e && l.ends_with(exe.to_str().unwrap())
                })?;
                let f: Vec<&str> = line.split_whitespace().collect();
                let start = u64::from_str_radix(f[0].split_once('-').unwrap().0, 16).unwrap();
                let pgoff = u64::from_str_radix(f[2], 16).unwrap();
                let lookup = if i == 0 { a } else { a - 1 };
                Some(symbolizer.resolve(f[5], lookup - start + pgoff).function)
            })
            .collect();
        let position = |name: &str| names.iter().position(|n| n.ends_with(name));
        let (capture, outer, test) = (
            position("unwind::tests::unwinds_this_thread_through_eh_frame::capture"),
            position("unwind::tests::unwinds_this_thread_through_eh_frame::outer_marker"),
            position("unwind::tests::unwinds_this_thread_through_eh_frame"),
        );
        assert!(capture == Some(0) && outer == Some(1) && test == Some(2), "{names:?}");
        assert!(unwound.addresses.len() > 5, "reached the test harness's frames too: {names:?}");
    }
}
