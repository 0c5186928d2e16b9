#!/usr/bin/env python3
"""Symbolization throughput of `perflab show` vs `perf report` on the same workload.

The workload is rustc compiling a generated crate (~2-4 s): its samples spread over
thousands of functions in librustc_driver (~150 MB) and libLLVM. The workload is
recorded once by `perflab profile` and once by `perf record` (same event and rate);
then each reader turns its own file into a flat per-function profile, several times,
and we report samples per second of the median run.

Usage: scripts/symbolize-throughput.py [REPEATS]
Needs a release build (cargo build --release), rustc and perf.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERFLAB = os.path.join(ROOT, "target", "release", "perflab")
REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
RATE = "4000"


def generate(path):
    with open(path, "w") as f:
        for i in range(400):
            f.write(
                f"pub fn f{i}(v: &[u64]) -> u64 {{ v.iter().map(|x| x.wrapping_mul({i} + 1)).filter(|x| x % 3 == {i % 3}).sum() }}\n"
                f"#[derive(Debug, Clone, PartialEq)] pub struct S{i} {{ a: Vec<String>, b: Option<u32> }}\n"
            )


def timed(args):
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    for tool in ("rustc", "perf"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is required")
    if not os.access(PERFLAB, os.X_OK):
        sys.exit("build first: cargo build --release")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "gen.rs")
        generate(src)
        rustc = ["rustc", "--crate-type", "lib", "-O", "--out-dir", tmp, src]
        ours = os.path.join(tmp, "w.profile")
        perf_data = os.path.join(tmp, "perf.data")
        subprocess.run([PERFLAB, "profile", "-F", RATE, "-o", ours, "--"] + rustc, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", RATE, "-o", perf_data, "--"] + rustc, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(ours, "rb") as f:
            f.readline()
            body = json.load(f)
        n_ours = sum(s["count"] for s in body["samples"])
        distinct = len(body["samples"])
        n_perf = int(subprocess.run(["perf", "script", "-i", perf_data, "-F", "ip"], capture_output=True, text=True).stdout.count("\n"))
        t_ours = [timed([PERFLAB, "show", ours, "--json", os.path.join(tmp, "o.json")]) for _ in range(REPEATS)]
        t_perf = [timed(["perf", "report", "-i", perf_data, "--stdio", "--sort", "sym"]) for _ in range(REPEATS)]
        m_ours, m_perf = statistics.median(t_ours), statistics.median(t_perf)
        print(f"workload: rustc -O on a generated 800-item crate, cpu-clock at {RATE} Hz")
        print(f"perflab show:  {n_ours} samples ({distinct} distinct task/address pairs) in {m_ours:.3f} s (median of {REPEATS}) = {n_ours / m_ours:,.0f} samples/s")
        print(f"perf report:   {n_perf} samples in {m_perf:.3f} s (median of {REPEATS}) = {n_perf / m_perf:,.0f} samples/s")


if __name__ == "__main__":
    main()
