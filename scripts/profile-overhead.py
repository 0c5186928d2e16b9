#!/usr/bin/env python3
"""Sampling overhead of `perflab profile`: slowdown of a CPU-bound program.

Runs tests/fixtures/spin.c (~1 s of dependent multiply-adds) alternately bare and
under `perflab profile` at the default rate (and at -F 4000, and with call stacks
`-g`, for reference), in interleaved rounds, and compares medians of the program's
CPU time (user + sys from wait4; perflab records the same for the profiled command)
and of its wall time (exec → exit as perflab measures it, vs fork → wait for the
bare run), and the size of the saved profile.

It also sizes the sampling probe of `compare --explain` / `run --profile-changes`
(crates/engine/src/measure/sampling.rs), which opens the same cpu-clock perf event on the run with
frame-pointer call stacks or none: `-g` is the same frame-pointer unwinding, so the
`-F 997`/`-F 499` rows with and without `-g` are the probe's costs at those rates.
Each round runs every variant once in a shuffled order; the paired column is the
median over rounds of (variant CPU / that round's bare CPU − 1), with a 95 % interval
of that median (order statistics), less sensitive to the machine's load drifting than
the ratio of medians.

Usage: scripts/profile-overhead.py [ROUNDS] [ITERATIONS]
Needs a release build (cargo build --release; PERFLAB=path selects another binary)
and a C compiler.
"""
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERFLAB = os.environ.get("PERFLAB", os.path.join(ROOT, "target", "release", "perflab"))
VARIANTS = {
    "default": [],
    "4000": ["-F", "4000"],
    "-g": ["-g"],
    "499": ["-F", "499"],
    "-g 499": ["-g", "-F", "499"],
}
LABELS = {
    "default": "-F 997 (default)",
    "4000": "-F 4000",
    "-g": "-g (-F 997)",
    "499": "-F 499",
    "-g 499": "-g -F 499",
}
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
ITERATIONS = sys.argv[2] if len(sys.argv) > 2 else "1200000000"


def bare(exe):
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.execv(exe, [exe, ITERATIONS])
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0
    return wall, usage.ru_utime + usage.ru_stime


def profiled(exe, out, options):
    args = [PERFLAB, "profile", "-o", out] + options
    subprocess.run(args + ["--", exe, ITERATIONS], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out, "rb") as f:
        f.readline()
        body = json.load(f)
    return body["duration_s"], body["cpu_s"], sum(s["count"] for s in body["samples"]), os.path.getsize(out)


def median_interval(values, level=0.95):
    """Distribution-free interval of the median: order statistics k and n-1-k with
    P(Binomial(n, 1/2) < k+1) ≤ (1 − level)/2."""
    xs = sorted(values)
    n = len(xs)
    tail, k = 0.0, -1
    while True:
        p = math.comb(n, k + 1) / 2**n
        if tail + p > (1 - level) / 2:
            break
        tail += p
        k += 1
    if k < 0:
        return None
    return xs[k], xs[n - 1 - k]


def main():
    if not os.access(PERFLAB, os.X_OK):
        sys.exit("build first: cargo build --release")
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "spin")
        subprocess.run(["cc", "-O2", os.path.join(ROOT, "tests", "fixtures", "spin.c"), "-o", exe], check=True)
        out = os.path.join(tmp, "p.profile")
        runs = {"bare": [], **{v: [] for v in VARIANTS}}
        samples = {v: [] for v in VARIANTS}
        sizes = {v: [] for v in VARIANTS}
        order = ["bare"] + list(VARIANTS)
        rng = random.Random(1)
        for _ in range(ROUNDS):
            rng.shuffle(order)
            for variant in order:
                if variant == "bare":
                    runs["bare"].append(bare(exe))
                    continue
                wall, cpu, n, size = profiled(exe, out, VARIANTS[variant])
                runs[variant].append((wall, cpu))
                samples[variant].append(n)
                sizes[variant].append(size)
        b_wall = statistics.median(w for w, _ in runs["bare"])
        b_cpu = statistics.median(c for _, c in runs["bare"])
        print(f"spin {ITERATIONS}: {ROUNDS} interleaved rounds (shuffled order), medians; load: {os.getloadavg()}")
        print(f"  bare:            wall {b_wall:.4f} s  cpu {b_cpu:.4f} s")
        for variant in VARIANTS:
            wall = statistics.median(w for w, _ in runs[variant])
            cpu = statistics.median(c for _, c in runs[variant])
            paired = [c / b - 1 for (_, c), (_, b) in zip(runs[variant], runs["bare"])]
            ci = median_interval(paired)
            ci_text = f" [{ci[0] * 100:+.2f}, {ci[1] * 100:+.2f}]" if ci else ""
            print(
                f"  {LABELS[variant]:<17}wall {wall:.4f} s ({(wall / b_wall - 1) * 100:+.2f} %)  "
                f"cpu {cpu:.4f} s ({(cpu / b_cpu - 1) * 100:+.2f} %; paired {statistics.median(paired) * 100:+.2f} %{ci_text})  "
                f"samples {statistics.median(samples[variant]):.0f}  file {statistics.median(sizes[variant]):.0f} B"
            )


if __name__ == "__main__":
    main()
