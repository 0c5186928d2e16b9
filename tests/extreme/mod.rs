//! Well-formed inputs at extreme scale (issue #40 item 1), written at test time and never
//! committed: perf.data files of deep call stacks and of 10⁵–10⁶ threads, perf maps of
//! 10⁷ lines or of huge names, jitdump files of 10⁷ records. perf.data is written by
//! hand here (linux-perf-data only reads it) in the layout `perf record` writes: a
//! header, one `cpu-clock` attribute, records in time order with a finished-round
//! marker every few thousand records, and no feature sections.

#![allow(dead_code)]

use std::io::{BufWriter, Write};
use std::path::Path;

const PERF_RECORD_MMAP: u32 = 1;
const PERF_RECORD_COMM: u32 = 3;
const PERF_RECORD_EXIT: u32 = 4;
const PERF_RECORD_FORK: u32 = 7;
const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_RECORD_FINISHED_ROUND: u32 = 68;
const MISC_USER: u16 = 2;
const MISC_COMM_EXEC: u16 = 1 << 13;
/// IP | TID | TIME | CALLCHAIN | PERIOD.
const SAMPLE_TYPE: u64 = 1 | 2 | 4 | 32 | 256;
const ATTR_SIZE: usize = 128;
const HEADER_SIZE: usize = 104;
const PERF_CONTEXT_USER: u64 = (-512i64) as u64;
/// Every sample stands for 1 ms of cpu-clock.
pub const PERIOD_NS: u64 = 1_000_000;

/// A perf.data being written: records are appended in time order.
pub struct PerfData {
    out: BufWriter<std::fs::File>,
    data_size: u64,
    time: u64,
    since_round: u32,
}

impl PerfData {
    pub fn create(path: &Path) -> PerfData {
        let file = std::fs::File::create(path).unwrap();
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let data_offset = (HEADER_SIZE + ATTR_SIZE + 16 + 8) as u64;
        let mut header = Vec::with_capacity(HEADER_SIZE);
        header.extend_from_slice(b"PERFILE2");
        for v in [HEADER_SIZE as u64, (ATTR_SIZE + 16) as u64, HEADER_SIZE as u64, (ATTR_SIZE + 16) as u64] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        // data section (size patched in finish), event types, no features.
        for v in [data_offset, 0, 0, 0, 0, 0, 0, 0] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        out.write_all(&header).unwrap();
        let mut attr = [0u8; ATTR_SIZE];
        attr[0..4].copy_from_slice(&1u32.to_le_bytes()); // PERF_TYPE_SOFTWARE
        attr[4..8].copy_from_slice(&(ATTR_SIZE as u32).to_le_bytes());
        // config 0: cpu-clock
        attr[16..24].copy_from_slice(&PERIOD_NS.to_le_bytes());
        attr[24..32].copy_from_slice(&SAMPLE_TYPE.to_le_bytes());
        // Recorded on CLOCK_MONOTONIC (`perf record -k mono`), as `perf inject --jit`
        // needs to place a jitdump's code loads among the records.
        let flags: u64 = 1 << 5 /* exclude_kernel */ | 1 << 18 /* sample_id_all */ | 1 << 25 /* use_clockid */;
        attr[40..48].copy_from_slice(&flags.to_le_bytes());
        attr[92..96].copy_from_slice(&1i32.to_le_bytes()); // clockid: CLOCK_MONOTONIC
        out.write_all(&attr).unwrap();
        let ids_offset = (HEADER_SIZE + ATTR_SIZE + 16) as u64;
        out.write_all(&ids_offset.to_le_bytes()).unwrap();
        out.write_all(&8u64.to_le_bytes()).unwrap();
        out.write_all(&1u64.to_le_bytes()).unwrap();
        PerfData { out, data_size: 0, time: 1_000_000_000, since_round: 0 }
    }

    fn record(&mut self, kind: u32, misc: u16, body: &[u8]) {
        let size = 8 + body.len();
        assert!(size <= u16::MAX as usize && size.is_multiple_of(8), "record of {size} bytes");
        self.out.write_all(&kind.to_le_bytes()).unwrap();
        self.out.write_all(&misc.to_le_bytes()).unwrap();
        self.out.write_all(&(size as u16).to_le_bytes()).unwrap();
        self.out.write_all(body).unwrap();
        self.data_size += size as u64;
        self.since_round += 1;
        if self.since_round == 4096 && kind != PERF_RECORD_FINISHED_ROUND {
            self.since_round = 0;
            self.record(PERF_RECORD_FINISHED_ROUND, 0, &[]);
        }
    }

    /// The trailing sample_id of a non-sample record: pid, tid, time.
    fn sample_id(&mut self, body: &mut Vec<u8>, pid: u32, tid: u32) {
        self.time += 1000;
        body.extend_from_slice(&pid.to_le_bytes());
        body.extend_from_slice(&tid.to_le_bytes());
        body.extend_from_slice(&self.time.to_le_bytes());
    }

    pub fn comm(&mut self, pid: u32, tid: u32, name: &str, exec: bool) {
        let mut body = Vec::new();
        body.extend_from_slice(&pid.to_le_bytes());
        body.extend_from_slice(&tid.to_le_bytes());
        push_string(&mut body, name);
        self.sample_id(&mut body, pid, tid);
        self.record(PERF_RECORD_COMM, if exec { MISC_COMM_EXEC } else { 0 }, &body);
    }

    /// An executable mapping of `path` at `start..start + len`, from file offset `pgoff`.
    pub fn mmap(&mut self, pid: u32, start: u64, len: u64, pgoff: u64, path: &str) {
        let mut body = Vec::new();
        body.extend_from_slice(&pid.to_le_bytes());
        body.extend_from_slice(&pid.to_le_bytes());
        for v in [start, len, pgoff] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        push_string(&mut body, path);
        self.sample_id(&mut body, pid, pid);
        self.record(PERF_RECORD_MMAP, MISC_USER, &body);
    }

    pub fn fork(&mut self, pid: u32, ppid: u32, tid: u32, ptid: u32) {
        self.task_event(PERF_RECORD_FORK, pid, ppid, tid, ptid);
    }

    pub fn exit(&mut self, pid: u32, tid: u32) {
        self.task_event(PERF_RECORD_EXIT, pid, pid, tid, tid);
    }

    fn task_event(&mut self, kind: u32, pid: u32, ppid: u32, tid: u32, ptid: u32) {
        let mut body = Vec::new();
        for v in [pid, ppid, tid, ptid] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&(self.time + 1000).to_le_bytes());
        self.sample_id(&mut body, pid, tid);
        self.record(kind, 0, &body);
    }

    /// A user-mode sample at `ip` whose callers are `callers` (return addresses,
    /// innermost first).
    pub fn sample(&mut self, pid: u32, tid: u32, ip: u64, callers: &[u64]) {
        self.time += 1000;
        let mut body = Vec::with_capacity(48 + 8 * callers.len());
        body.extend_from_slice(&ip.to_le_bytes());
        body.extend_from_slice(&pid.to_le_bytes());
        body.extend_from_slice(&tid.to_le_bytes());
        body.extend_from_slice(&self.time.to_le_bytes());
        body.extend_from_slice(&PERIOD_NS.to_le_bytes());
        body.extend_from_slice(&(2 + callers.len() as u64).to_le_bytes());
        body.extend_from_slice(&PERF_CONTEXT_USER.to_le_bytes());
        body.extend_from_slice(&ip.to_le_bytes());
        for c in callers {
            body.extend_from_slice(&c.to_le_bytes());
        }
        self.record(PERF_RECORD_SAMPLE, MISC_USER, &body);
    }

    pub fn finish(mut self) {
        self.record(PERF_RECORD_FINISHED_ROUND, 0, &[]);
        self.out.flush().unwrap();
        let file = self.out.into_inner().unwrap();
        use std::os::unix::fs::FileExt;
        file.write_all_at(&self.data_size.to_le_bytes(), 48).unwrap();
    }
}

/// A NUL-terminated string padded to 8 bytes.
fn push_string(body: &mut Vec<u8>, s: &str) {
    body.extend_from_slice(s.as_bytes());
    let padded = (s.len() + 1).div_ceil(8) * 8;
    body.resize(body.len() + padded - s.len(), 0);
}

/// Where the generated library's functions lie: `f{i}` at `FUNCTION_BYTES * i` from the
/// start of its text, which is mapped at `LIBRARY_BASE`.
pub const FUNCTION_BYTES: u64 = 16;
pub const LIBRARY_BASE: u64 = 0x7f00_0000_0000;

/// A shared library of `functions` distinct functions `f0`…, each [`FUNCTION_BYTES`]
/// long, assembled with `cc` (None when there is none); returns its path and the file
/// offset of `f0`.
pub fn library_of_functions(dir: &Path, functions: usize) -> Option<(std::path::PathBuf, u64)> {
    let asm = dir.join("deep.s");
    let mut s = String::from(".text\n.p2align 4\n");
    for i in 0..functions {
        s.push_str(&format!(
            ".globl f{i}\n.type f{i},@function\nf{i}:\n call f{}\n ret\n.p2align 4\n.size f{i},16\n",
            i + 1
        ));
    }
    s.push_str(&format!(".globl f{functions}\nf{functions}:\n ret\n"));
    std::fs::write(&asm, s).unwrap();
    let lib = dir.join("libdeep.so");
    let built =
        std::process::Command::new("cc").args(["-shared", "-nostdlib", "-o"]).arg(&lib).arg(&asm).output().ok()?;
    if !built.status.success() {
        return None;
    }
    let nm = std::process::Command::new("nm").arg(&lib).output().ok()?;
    let text = String::from_utf8_lossy(&nm.stdout);
    let f0 = text.lines().find(|l| l.ends_with(" f0"))?;
    let address = u64::from_str_radix(f0.split(' ').next()?, 16).ok()?;
    // Shared objects from cc map their text at its virtual address = file offset here.
    Some((lib, address))
}

/// The library mapped whole (its segments' addresses are their file offsets).
fn mapped_len(library: &Path) -> u64 {
    std::fs::metadata(library).unwrap().len().div_ceil(4096) * 4096
}

/// `samples` samples of `depth` frames each through the library's functions: sample s
/// is in `f{depth-1}` called by `f{depth-2}` … by `f0`; the return addresses differ from
/// sample to sample when `distinct` (each sample then has its own 8,000 frame
/// addresses, all in the same functions), else every sample has the same stack.
pub fn deep_stacks(path: &Path, library: &Path, f0_offset: u64, samples: u32, depth: u64, distinct: bool) {
    let mut data = PerfData::create(path);
    let pid = 4242;
    data.comm(pid, pid, "deep", true);
    data.mmap(pid, LIBRARY_BASE, mapped_len(library), 0, library.to_str().unwrap());
    let address = |i: u64, within: u64| LIBRARY_BASE + f0_offset + i * FUNCTION_BYTES + within;
    for s in 0..samples {
        // Within a function of 16 bytes: the call ends at byte 5; a distinct sample
        // returns to bytes 5..15 of its callers.
        let within = if distinct { 5 + (s as u64 % 10) } else { 5 };
        let callers: Vec<u64> = (0..depth - 1).rev().map(|i| address(i, within)).collect();
        data.sample(pid, pid, address(depth - 1, 0), &callers);
    }
    data.finish();
}

/// One process with `threads` threads, each sampled `per_thread` times in one of the
/// library's first 16 functions (called from `f0`), then exiting.
pub fn many_threads(path: &Path, library: &Path, f0_offset: u64, threads: u32, per_thread: u32) {
    let mut data = PerfData::create(path);
    let pid = 5000;
    data.comm(pid, pid, "threads", true);
    data.mmap(pid, LIBRARY_BASE, mapped_len(library), 0, library.to_str().unwrap());
    let address = |i: u64| LIBRARY_BASE + f0_offset + i * FUNCTION_BYTES;
    for t in 0..threads {
        let tid = pid + 1 + t;
        data.fork(pid, pid, tid, pid);
        data.comm(pid, tid, &format!("worker-{}", t % 1000), false);
        for k in 0..per_thread {
            data.sample(pid, tid, address(1 + (t + k) as u64 % 15), &[address(0) + 5]);
        }
        data.exit(pid, tid);
    }
    data.finish();
}

/// A process whose samples lie in anonymous executable memory at `addresses`, for its
/// perf map or jitdump to name; `jitdump`: the process maps this jitdump file as
/// runtimes do for `perf inject --jit`.
pub fn runtime_samples(path: &Path, pid: u32, addresses: &[u64], jitdump: Option<&Path>) {
    let mut data = PerfData::create(path);
    data.comm(pid, pid, "runtime", true);
    data.mmap(pid, 0x4000_0000, 0x4000_0000, 0, "//anon");
    if let Some(dump) = jitdump {
        data.mmap(pid, 0x7e00_0000_0000, 4096, 0, dump.to_str().unwrap());
    }
    for &a in addresses {
        data.sample(pid, pid, a, &[]);
    }
    data.finish();
}

/// The pid of the generated runtime processes (+1, +2): above the usual pid_max, so no
/// live process's perf map is overwritten.
pub const RUNTIME_PID: u32 = 4_100_000;

/// 1,000 sampled addresses spread over `entries` pieces of code of 64 bytes (every one
/// when there are fewer), as [`perf_map`] and [`jitdump`] lay them out.
pub fn sampled(entries: u64) -> Vec<u64> {
    let n = entries.clamp(1, 1000);
    (0..n).map(|k| 0x4000_0000 + 64 * (k * entries / n) + 8).collect()
}

/// A perf map of `lines` entries of 64 bytes from 0x4000_0000 on, named `fn{i}`.
pub fn perf_map(path: &Path, lines: u64) {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    for i in 0..lines {
        writeln!(out, "{:x} 40 LazyCompile:*fn{i} /app.js:{i}:1", 0x4000_0000 + 64 * i).unwrap();
    }
    out.flush().unwrap();
}

/// A perf map of `lines` entries whose names are `name_bytes` long.
pub fn perf_map_of_long_names(path: &Path, lines: u64, name_bytes: usize) {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let long: String = "x".repeat(name_bytes);
    for i in 0..lines {
        writeln!(out, "{:x} 40 fn{i}_{long}", 0x4000_0000 + 64 * i).unwrap();
    }
    out.flush().unwrap();
}

/// When the generated jitdump's code is loaded: after [`runtime_samples`] maps the
/// runtime's memory and before its first sample, on the recording's clock (`perf inject
/// --jit` places each load there; a load after a sample would leave it unnamed).
const JIT_LOAD_TIME: u64 = 1_000_003_500;

/// A jitdump of `records` code loads of 64 bytes each from 0x4000_0000 on (code bytes
/// included, as runtimes write them), named `fn{i}`.
pub fn jitdump(path: &Path, pid: u32, records: u64) {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    // Header: magic "JiTD", version 1, total_size 40, elf_mach x86-64, pad, pid,
    // timestamp, flags.
    out.write_all(&0x4A69_5444u32.to_le_bytes()).unwrap();
    out.write_all(&1u32.to_le_bytes()).unwrap();
    out.write_all(&40u32.to_le_bytes()).unwrap();
    out.write_all(&62u32.to_le_bytes()).unwrap();
    out.write_all(&0u32.to_le_bytes()).unwrap();
    out.write_all(&pid.to_le_bytes()).unwrap();
    out.write_all(&1u64.to_le_bytes()).unwrap();
    out.write_all(&0u64.to_le_bytes()).unwrap();
    let code = [0xc3u8; 64];
    for i in 0..records {
        let name = format!("LazyCompile:*fn{i} /app.js:{i}:1\0");
        let address = 0x4000_0000 + 64 * i;
        let size = 16 + 4 + 4 + 8 * 4 + name.len() + code.len();
        out.write_all(&0u32.to_le_bytes()).unwrap(); // JIT_CODE_LOAD
        out.write_all(&(size as u32).to_le_bytes()).unwrap();
        out.write_all(&JIT_LOAD_TIME.to_le_bytes()).unwrap();
        out.write_all(&pid.to_le_bytes()).unwrap();
        out.write_all(&pid.to_le_bytes()).unwrap();
        for v in [address, address, code.len() as u64, i] {
            out.write_all(&v.to_le_bytes()).unwrap();
        }
        out.write_all(name.as_bytes()).unwrap();
        out.write_all(&code).unwrap();
    }
    out.flush().unwrap();
}

/// `samples` samples of `depth` frames each in anonymous executable memory (JIT code
/// nothing names), no two frames at the same place: every sample's stack is its own,
/// `samples × depth` distinct frames, each one unnamed region of its own (1 KiB apart).
pub fn diverging_stacks(path: &Path, samples: u64, depth: u64) {
    let mut data = PerfData::create(path);
    let pid = 4343;
    data.comm(pid, pid, "diverge", true);
    data.mmap(pid, 0x1_0000_0000, samples * depth * 1024 + 4096, 0, "//anon");
    for s in 0..samples {
        let address = |i: u64| 0x1_0000_0000 + (s * depth + i) * 1024;
        let callers: Vec<u64> = (0..depth - 1).rev().map(|i| address(i) + 5).collect();
        data.sample(pid, pid, address(depth - 1), &callers);
    }
    data.finish();
}
