//! The converter: interprets a recording's records in time order — one handler per kind
//! of record — keeping each process's executable mappings and tasks, and turns every
//! sample (and each frame of its call chain) into (object, file offset) against the
//! mappings live at that moment, so the profile can be symbolized after the processes
//! are gone. Whatever the source of the records, this is where they become a profile.

use super::jit::{Classifier, Contents, JitObjects};
use super::objects::Objects;
use super::records::{Record, Timed, PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX, PERF_CONTEXT_USER};
use crate::format::{FrameRef, Profile, SampleCount, Space, StackCount, Task, Timeline};
use crate::offcpu;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A stack's identity: (pid, tid, frame ids leaf first).
type StackKey = (u32, u32, Vec<u32>);

#[derive(Clone)]
struct Mapping {
    start: u64,
    end: u64,
    pgoff: u64,
    object: u32,
    path: std::rc::Rc<str>,
    /// An object file, or code generated at run time (its addresses stay addresses).
    contents: Contents,
}

/// (pid, tid, space, object, offset) of a sampled location.
type LocationKey = (u32, u32, Space, Option<u32>, u64);

/// Records in, a profile out.
pub(crate) struct Converter {
    call_graph: bool,
    /// Per pid: its executable mappings by start (looked up for every frame).
    spaces: FxHashMap<u32, BTreeMap<u64, Mapping>>,
    objects: Objects,
    tasks: BTreeMap<(u32, u32), String>,
    live: HashMap<u32, HashSet<u32>>,
    /// Per sampled location: its number in `locations`. Each key is held once, here
    /// (10⁶ threads make 10⁶ locations and stacks).
    location_ids: FxHashMap<LocationKey, u32>,
    /// Per location in order of appearance: (samples, summed period).
    locations: Vec<(u64, u64)>,
    /// Every distinct frame, in the order numbered: the profile's `frames` as they stand.
    frames: Vec<FrameRef>,
    /// Each frame's number, found by its hash: (number in `frames`, 32 bits of the
    /// hash). 8 bytes an entry, not the 32 of a map from frames to numbers, and grown
    /// without reading a frame again: at 1.2 M distinct frames the map's cache misses
    /// were a third of `show`. (hashed with rustc-hash: SipHash took seconds there.)
    frame_ids: hashbrown::HashTable<(u32, u32)>,
    /// (pid, tid, frame ids leaf first) → its number in `stacks`.
    stack_ids: FxHashMap<StackKey, u32>,
    /// Per stack in order of appearance: (samples, summed period).
    stacks: Vec<(u64, u64)>,
    /// Every sample: (time, location number, stack number or NO_STACK, period).
    timeline: Vec<(u64, u32, u32, u64)>,
    jit: JitObjects,
    classifier: Classifier,
    off_cpu: offcpu::Tracker,
    lost: u64,
    /// The first timestamp seen (records that existed before recording have 0).
    first_time: Option<u64>,
    last_time: u64,
}

/// The timeline's mark of a sample recorded without its stack.
const NO_STACK: u32 = u32::MAX;

impl Converter {
    /// `call_graph`: keep each sample's call chain as a stack.
    pub(crate) fn new(call_graph: bool) -> Converter {
        Converter {
            call_graph,
            spaces: FxHashMap::default(),
            objects: Objects::default(),
            tasks: BTreeMap::new(),
            live: HashMap::new(),
            location_ids: FxHashMap::default(),
            locations: Vec::new(),
            frames: Vec::new(),
            frame_ids: hashbrown::HashTable::new(),
            stack_ids: FxHashMap::default(),
            stacks: Vec::new(),
            timeline: Vec::new(),
            jit: JitObjects::default(),
            classifier: Classifier::default(),
            off_cpu: offcpu::Tracker::default(),
            lost: 0,
            first_time: None,
            last_time: 0,
        }
    }

    /// Interpret `records` (from any source, any CPU) in time order into `profile`, with
    /// no runtime code copied (a held run's probe names native code only).
    pub(crate) fn convert(records: Vec<Timed>, profile: &mut Profile, call_graph: bool) {
        Converter::convert_classified(records, profile, call_graph, Classifier::default())
    }

    /// [`convert`](Self::convert) with the mapped files already classified while they
    /// existed (a code file may be deleted before the recording ends).
    pub(crate) fn convert_classified(
        mut records: Vec<Timed>,
        profile: &mut Profile,
        call_graph: bool,
        classifier: Classifier,
    ) {
        // Stable: records of one CPU with equal timestamps keep their ring order.
        records.sort_by_key(|(time, _)| *time);
        let mut converter = Converter::new(call_graph);
        converter.classifier = classifier;
        for (time, record) in records {
            converter.handle(time, record);
        }
        converter.finish(profile);
    }

    pub(crate) fn handle(&mut self, time: u64, record: Record) {
        self.last_time = self.last_time.max(time);
        if self.first_time.is_none() && time > 0 {
            self.first_time = Some(time);
        }
        match record {
            Record::Mmap { pid, start, len, pgoff, path } => self.on_mmap(pid, start, len, pgoff, &path),
            Record::Comm { pid, tid, comm, exec } => self.on_comm(pid, tid, comm, exec),
            Record::Exit { pid, tid } => self.on_exit(pid, tid),
            Record::Fork { pid, ppid, tid } => self.on_fork(pid, ppid, tid),
            Record::Lost(n) => self.lost += n,
            // Never here: the session has unwound each into the record it carries.
            Record::StackSample(..) => {}
            Record::Sample { pid, tid, ip, period, kernel, chain } => {
                self.on_sample(time, pid, tid, ip, period, kernel, &chain)
            }
            Record::SwitchedOut { pid, tid, ip, chain } => self.on_switched_out(time, pid, tid, ip, &chain),
            Record::Switch { tid, out: true, preempted: true } => self.off_cpu.preempted(tid),
            Record::Switch { out: true, .. } => {}
            Record::Switch { tid, out: false, .. } => self.off_cpu.switched_in(time, tid),
        }
    }

    fn on_mmap(&mut self, pid: u32, start: u64, len: u64, pgoff: u64, path: &str) {
        if super::jit::is_jitdump_path(path) {
            // The runtime maps its jitdump file as a marker for perf: the file names its
            // JIT code, and the mapping itself holds no code.
            self.jit.jitdump(pid, path);
            return;
        }
        let contents = self.classifier.contents(path);
        let object = self.objects.id(path);
        let end = start.saturating_add(len);
        let space = self.spaces.entry(pid).or_default();
        // A new mapping replaces whatever it overlaps (munmap + mmap, mprotect splits).
        let overlapping: Vec<u64> = space.range(..end).filter(|(_, m)| m.end > start).map(|(&s, _)| s).collect();
        for s in overlapping {
            space.remove(&s);
        }
        space.insert(start, Mapping { start, end, pgoff, object, path: path.into(), contents });
    }

    fn on_comm(&mut self, pid: u32, tid: u32, comm: String, exec: bool) {
        if exec {
            self.spaces.remove(&pid);
        }
        self.live.entry(pid).or_default().insert(tid);
        self.tasks.insert((pid, tid), comm);
    }

    /// The address space dies with the process's last thread (the main thread may exit
    /// first); a later process reusing the pid gets its own from FORK/MMAP2.
    fn on_exit(&mut self, pid: u32, tid: u32) {
        self.off_cpu.exited(tid);
        let threads = self.live.entry(pid).or_default();
        threads.remove(&tid);
        if threads.is_empty() {
            self.live.remove(&pid);
            self.spaces.remove(&pid);
        }
    }

    fn on_fork(&mut self, pid: u32, ppid: u32, tid: u32) {
        if pid != ppid {
            let inherited = self.spaces.get(&ppid).cloned().unwrap_or_default();
            self.spaces.insert(pid, inherited);
        }
        self.live.entry(pid).or_default().insert(tid);
        let comm = self.tasks.get(&(ppid, ppid)).cloned().unwrap_or_default();
        self.tasks.entry((pid, tid)).or_insert(comm);
    }

    // The fields of one sample record, as both readers (live ring buffer, perf.data) hand
    // them over; a struct for them would be built only to be taken apart here.
    #[allow(clippy::too_many_arguments)]
    fn on_sample(&mut self, time: u64, pid: u32, tid: u32, ip: u64, period: u64, kernel: bool, chain: &[u64]) {
        self.on_samples(time, pid, tid, ip, 1, period, kernel, chain)
    }

    /// `count` samples of one stack at once, `period` their sum: what an aggregating
    /// recorder (the in-process allocation recorder) hands over per call stack.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_samples(
        &mut self,
        time: u64,
        pid: u32,
        tid: u32,
        ip: u64,
        count: u64,
        period: u64,
        kernel: bool,
        chain: &[u64],
    ) {
        self.tasks.entry((pid, tid)).or_default();
        self.live.entry(pid).or_default().insert(tid);
        let leaf = self.locate(pid, ip, kernel);
        let key = (pid, tid, leaf.space, leaf.object, leaf.offset);
        let next = self.locations.len() as u32;
        let location = *self.location_ids.entry(key).or_insert(next);
        if location == next {
            self.locations.push((0, 0));
            self.new_frame(pid, leaf);
        }
        let entry = &mut self.locations[location as usize];
        entry.0 += count;
        entry.1 += period;
        let mut stack = NO_STACK;
        if self.call_graph {
            let key = (pid, tid, self.stack_ids(pid, leaf, chain));
            let next = self.stacks.len() as u32;
            stack = *self.stack_ids.entry(key).or_insert(next);
            if stack == next {
                self.stacks.push((0, 0));
            }
            let entry = &mut self.stacks[stack as usize];
            entry.0 += count;
            entry.1 += period;
        }
        self.timeline.push((time, location, stack, period));
    }

    fn on_switched_out(&mut self, time: u64, pid: u32, tid: u32, ip: u64, chain: &[u64]) {
        self.tasks.entry((pid, tid)).or_default();
        let leaf = self.locate(pid, ip, true);
        let ids = self.stack_ids(pid, leaf, chain);
        self.off_cpu.switched_out(time, pid, tid, ids);
    }

    /// The mapping of `pid` live now that holds `address`.
    fn mapping(&self, pid: u32, address: u64) -> Option<&Mapping> {
        self.spaces.get(&pid).and_then(|s| s.range(..=address).next_back()).map(|(_, m)| m).filter(|m| address < m.end)
    }

    /// An address normalised against `pid`'s mappings live now: (object, file offset)
    /// in an object file, the process's runtime code (JIT, SBCL) by address.
    fn locate(&mut self, pid: u32, address: u64, kernel: bool) -> FrameRef {
        if kernel {
            return FrameRef { space: Space::Kernel, object: None, offset: address };
        }
        let in_mapping = match self.mapping(pid, address) {
            Some(m) if m.contents == Contents::Object => {
                return FrameRef { space: Space::User, object: Some(m.object), offset: address - m.start + m.pgoff }
            }
            Some(_) => true,
            None => false,
        };
        self.jit.attribute(pid, address, in_mapping, &mut self.objects).unwrap_or(FrameRef {
            space: Space::Unmapped,
            object: None,
            offset: address,
        })
    }

    /// `frame`, located in `pid` just now, is new to the profile (as a frame or a
    /// sampled location): runtime code keeps where it lay, to be named at the end.
    fn new_frame(&mut self, pid: u32, frame: FrameRef) {
        if !self.jit.is_runtime_code(pid, frame.object) {
            return;
        }
        // The mapping's path is shared, not copied per sampled address (1.2 M frames).
        let place = self
            .mapping(pid, frame.offset)
            .map(|m| (m.path.clone(), m.start, m.pgoff, matches!(m.contents, Contents::Runtime { anonymous: true })));
        if let Some(object) = frame.object {
            self.jit.place(object, frame.offset, place);
        }
    }

    /// Frame ids (leaf first) of a sampled location and its callers in `chain`, every
    /// frame numbered once per profile.
    fn stack_ids(&mut self, pid: u32, leaf: FrameRef, chain: &[u64]) -> Vec<u32> {
        let mut ids = Vec::with_capacity(chain.len());
        ids.push(self.frame_id(pid, leaf));
        for (address, kernel) in callers(chain) {
            let frame = self.locate(pid, address, kernel);
            ids.push(self.frame_id(pid, frame));
        }
        ids
    }

    /// The number of `frame` (located in `pid`), numbered when new.
    fn frame_id(&mut self, pid: u32, frame: FrameRef) -> u32 {
        use std::hash::BuildHasher;
        let hash = rustc_hash::FxBuildHasher.hash_one(frame) as u32;
        let frames = &self.frames;
        let entry = self.frame_ids.entry(
            crate::names::spread(hash),
            |&(id, h)| h == hash && frames[id as usize] == frame,
            |&(_, h)| crate::names::spread(h),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(found) => found.get().0,
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                let id = self.frames.len() as u32;
                vacant.insert((id, hash));
                self.frames.push(frame);
                self.new_frame(pid, frame);
                id
            }
        }
    }

    /// Everything interpreted so far, into `profile`.
    pub(crate) fn finish(mut self, profile: &mut Profile) {
        profile.lost += self.lost;
        profile.off_cpu = self.off_cpu.finish(self.last_time);
        profile.tasks = self.tasks.into_iter().map(|((pid, tid), comm)| Task { pid, tid, comm }).collect();
        // Samples and stacks sorted for a stable file; the timeline follows the sort.
        let mut location_keys: Vec<LocationKey> = vec![(0, 0, Space::Unmapped, None, 0); self.locations.len()];
        for (key, id) in std::mem::take(&mut self.location_ids) {
            location_keys[id as usize] = key;
        }
        let mut order: Vec<u32> = (0..self.locations.len() as u32).collect();
        order.sort_by_key(|&i| location_keys[i as usize]);
        let mut sample_index = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            sample_index[old as usize] = new as u32;
        }
        profile.samples = order
            .iter()
            .map(|&i| {
                let (pid, tid, space, object, offset) = location_keys[i as usize];
                let (count, period) = self.locations[i as usize];
                SampleCount { pid, tid, space, object, offset, count, period }
            })
            .collect();
        drop(location_keys);
        self.frame_ids = hashbrown::HashTable::new();
        profile.frames = std::mem::take(&mut self.frames);
        let mut stack_keys: Vec<StackKey> = vec![(0, 0, Vec::new()); self.stacks.len()];
        for (key, id) in std::mem::take(&mut self.stack_ids) {
            stack_keys[id as usize] = key;
        }
        let mut order: Vec<u32> = (0..self.stacks.len() as u32).collect();
        order.sort_by(|&a, &b| stack_keys[a as usize].cmp(&stack_keys[b as usize]));
        let mut stack_index = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            stack_index[old as usize] = new as u32;
        }
        profile.stacks = order
            .iter()
            .map(|&i| {
                let (pid, tid, frames) = std::mem::take(&mut stack_keys[i as usize]);
                let (count, period) = self.stacks[i as usize];
                StackCount { pid, tid, frames, count, period }
            })
            .collect();
        drop(stack_keys);
        profile.timeline = timeline(&self.timeline, self.first_time, &sample_index, &stack_index, &profile.samples);
        profile.objects = self.objects.list;
        profile.jit_symbols = self.jit.symbols();
    }
}

/// The samples in time order as a [`Timeline`] (None without samples), periods kept
/// only when a location's samples do not all weigh the same.
fn timeline(
    entries: &[(u64, u32, u32, u64)],
    first_time: Option<u64>,
    sample_index: &[u32],
    stack_index: &[u32],
    samples: &[SampleCount],
) -> Option<Timeline> {
    if entries.is_empty() {
        return None;
    }
    let mut t = Timeline::default();
    let mut previous = first_time.unwrap_or(0).min(entries[0].0);
    for &(time, location, stack, period) in entries {
        t.delta_ns.push(time.saturating_sub(previous));
        previous = previous.max(time);
        let sample = sample_index[location as usize];
        t.sample.push(sample);
        if stack != NO_STACK {
            t.stack.push(stack_index[stack as usize]);
        }
        t.period.push(period);
    }
    let uniform = entries.iter().zip(&t.sample).all(|(&(_, _, _, period), &s)| {
        let s = &samples[s as usize];
        period * s.count == s.period
    });
    if uniform {
        t.period.clear();
    }
    if t.stack.len() != t.sample.len() {
        t.stack.clear();
    }
    Some(t)
}

/// The callers in a raw callchain, innermost first, as (address, in kernel). The chain
/// starts with the sampled IP itself, which is skipped. The first address of each
/// context (`PERF_CONTEXT_USER` after kernel frames: the interrupted user IP) is where
/// execution was; every other one is a return address, moved back by one byte into
/// the call instruction so it symbolizes to the caller even when the call is the
/// function's last instruction.
fn callers(chain: &[u64]) -> impl Iterator<Item = (u64, bool)> + '_ {
    let mut kernel = false;
    let mut first_in_context = true;
    let mut leaf_seen = false;
    chain.iter().filter_map(move |&entry| {
        if entry >= PERF_CONTEXT_MAX {
            match entry {
                PERF_CONTEXT_KERNEL => kernel = true,
                PERF_CONTEXT_USER => kernel = false,
                // Hypervisor and guest contexts are not sampled (exclude_hv).
                _ => {}
            }
            first_in_context = true;
            return None;
        }
        let exact = std::mem::replace(&mut first_in_context, false);
        if !std::mem::replace(&mut leaf_seen, true) {
            return None;
        }
        Some((if exact { entry } else { entry.wrapping_sub(1) }, kernel))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Profile {
        Profile { event: "cpu-clock".into(), frequency_hz: 1000, ..Profile::default() }
    }

    #[test]
    fn samples_resolve_against_the_mappings_live_at_their_time() {
        let records = vec![
            (1, Record::Comm { pid: 10, tid: 10, comm: "a".into(), exec: true }),
            (2, Record::Mmap { pid: 10, start: 0x1000, len: 0x2000, pgoff: 0x3000, path: "/a".into() }),
            (3, Record::Sample { pid: 10, tid: 10, ip: 0x1800, period: 5, kernel: false, chain: vec![] }),
            (4, Record::Fork { pid: 11, ppid: 10, tid: 11 }),
            (5, Record::Sample { pid: 11, tid: 11, ip: 0x1800, period: 5, kernel: false, chain: vec![] }),
            // The child execs: its old mappings are gone.
            (6, Record::Comm { pid: 11, tid: 11, comm: "b".into(), exec: true }),
            (7, Record::Sample { pid: 11, tid: 11, ip: 0x1800, period: 5, kernel: false, chain: vec![] }),
            (8, Record::Sample { pid: 10, tid: 12, ip: 0xffff_0000, period: 5, kernel: true, chain: vec![] }),
            (9, Record::Lost(3)),
            // The main thread exits first: thread 12 still uses the mappings.
            (10, Record::Exit { pid: 10, tid: 10 }),
            (11, Record::Sample { pid: 10, tid: 12, ip: 0x1900, period: 5, kernel: false, chain: vec![] }),
            (12, Record::Exit { pid: 10, tid: 12 }),
            // A new process reusing pid 10 without a FORK seen has no mappings.
            (13, Record::Sample { pid: 10, tid: 10, ip: 0x1a00, period: 5, kernel: false, chain: vec![] }),
        ];
        let mut p = empty();
        Converter::convert(records, &mut p, false);
        assert!(p.stacks.is_empty() && p.frames.is_empty());
        assert_eq!(p.objects.len(), 1);
        assert_eq!(p.lost, 3);
        let find = |pid, space| p.samples.iter().find(|s| s.pid == pid && s.space == space).unwrap();
        assert_eq!(find(10, Space::User).offset, 0x3800);
        assert!(p.samples.iter().any(|s| s.tid == 12 && s.offset == 0x3900 && s.space == Space::User));
        assert_eq!(find(10, Space::Unmapped).offset, 0x1a00);
        assert_eq!(find(11, Space::User).offset, 0x3800);
        assert_eq!(find(11, Space::Unmapped).offset, 0x1800);
        assert_eq!(find(10, Space::Kernel).tid, 12);
        assert_eq!(p.tasks.iter().map(|t| t.tid).collect::<Vec<_>>(), [10, 12, 11]);
        // The timeline lists the six samples in time order, each pointing at its row.
        let timeline = p.timeline.as_ref().unwrap();
        let entries: Vec<(u64, u64)> =
            timeline.entries(&p).map(|(time, sample, _, _)| (time, p.samples[sample as usize].offset)).collect();
        assert_eq!(entries, [(2, 0x3800), (4, 0x3800), (6, 0x1800), (7, 0xffff_0000), (10, 0x3900), (12, 0x1a00)]);
        assert!(timeline.period.is_empty() && timeline.stack.is_empty(), "every sample weighs 5: no column needed");
    }

    #[test]
    fn call_chains_become_deduplicated_stacks_of_normalised_frames() {
        let (k, u) = (PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER);
        let sample = |ip, kernel, chain: Vec<u64>| Record::Sample { pid: 10, tid: 10, ip, period: 2, kernel, chain };
        let records = vec![
            (1, Record::Mmap { pid: 10, start: 0x1000, len: 0x2000, pgoff: 0, path: "/a".into() }),
            // User leaf 0x1800 called from 0x1205 (return address) called from 0x1105.
            (2, sample(0x1800, false, vec![u, 0x1800, 0x1205, 0x1105])),
            (3, sample(0x1800, false, vec![u, 0x1800, 0x1205, 0x1105])),
            // In the kernel: every kernel frame is kept (the callers as return address − 1);
            // the first user address is the interrupted IP (exact), the next a return address.
            (4, sample(0xffff_0010, true, vec![k, 0xffff_0010, 0xffff_0020, u, 0x1900, 0x1205, 0x9_0000])),
        ];
        let mut p = empty();
        Converter::convert(records, &mut p, true);
        assert_eq!(p.total_samples(), 3);
        let frames = |s: &StackCount| s.frames.iter().map(|&i| p.frames[i as usize]).collect::<Vec<_>>();
        let user = |offset| FrameRef { space: Space::User, object: Some(0), offset };
        assert_eq!(p.stacks.len(), 2);
        let by_count = |n| p.stacks.iter().find(|s| s.count == n).unwrap();
        assert_eq!(frames(by_count(2)), [user(0x800), user(0x204), user(0x104)]);
        assert_eq!(by_count(2).period, 4);
        let timeline = p.timeline.as_ref().unwrap();
        let stacks: Vec<u64> = timeline.stack.iter().map(|&i| p.stacks[i as usize].count).collect();
        assert_eq!(stacks, [2, 2, 1]);
        assert_eq!(
            frames(by_count(1)),
            [
                FrameRef { space: Space::Kernel, object: None, offset: 0xffff_0010 },
                FrameRef { space: Space::Kernel, object: None, offset: 0xffff_001f },
                user(0x900),
                user(0x204),
                FrameRef { space: Space::Unmapped, object: None, offset: 0x8_ffff },
            ]
        );
    }
}
