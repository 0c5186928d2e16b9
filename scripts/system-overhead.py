#!/usr/bin/env python3
"""Overhead of attaching (`perflab profile -p`) and of off-CPU recording (`--off-cpu`),
side by side with perf doing the same.

Attach: tests/fixtures/spin.c (~1 s of dependent multiply-adds) is started bare, or
with `perflab profile -p PID` / `perf record -p PID` attached right after it starts and
until it exits; its CPU and wall time come from wait4 (this script is its parent).

Off-CPU: tests/fixtures/pingpong.c (a pipe ping-pong: every round trip is two blocking
reads and two context switches, the worst case for switch recording) reports the time
of its own round trips; it runs bare, under `perflab profile` (on-CPU only), under
`perflab profile --off-cpu`, and under `perf record -g --switch-events -e cpu-clock -e
cs/period=1/` (perf's equivalent without BPF). Profile sizes are reported too.

Variants run in interleaved rounds (order rotated each round); medians are reported.

Usage: scripts/system-overhead.py [ROUNDS] [SPIN_ITERATIONS] [ROUND_TRIPS]
Needs root (attach, kernel samples), perf, a C compiler and a release build
(cargo build --release; PERFLAB=path selects another binary).
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERFLAB = os.environ.get("PERFLAB", os.path.join(ROOT, "target", "release", "perflab"))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
SPIN = sys.argv[2] if len(sys.argv) > 2 else "1200000000"
TRIPS = sys.argv[3] if len(sys.argv) > 3 else "100000"
QUIET = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}


def build(tmp, name, flags=()):
    exe = os.path.join(tmp, name)
    subprocess.run(["cc", "-O2", *flags, os.path.join(ROOT, "tests", "fixtures", name + ".c"), "-o", exe], check=True)
    return exe


def spin_run(exe, attach, out):
    """(wall s, cpu s, profile bytes) of one spin run, with `attach(pid)` started beside it."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.execv(exe, [exe, SPIN])
    recorder = subprocess.Popen(attach(pid, out), **QUIET) if attach else None
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0
    if recorder:
        assert recorder.wait(timeout=60) == 0, "the recorder failed"
    return wall, usage.ru_utime + usage.ru_stime, os.path.getsize(out) if attach else 0


ATTACH = {
    "bare": None,
    "perflab -p": lambda pid, out: [PERFLAB, "profile", "-p", str(pid), "-o", out],
    "perf record -p": lambda pid, out: ["perf", "record", "-q", "-F", "997", "-e", "cpu-clock", "-p", str(pid), "-o", out],
}


def pingpong_run(exe, prefix, out):
    """(seconds the round trips took, profile bytes)."""
    argv = [a.replace("OUT", out) for a in prefix] + [exe, TRIPS]
    text = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    seconds = float(re.search(r"round trips in ([\d.]+) s", text).group(1))
    return seconds, os.path.getsize(out) if prefix else 0


OFF_CPU = {
    "bare": [],
    "perflab profile": [PERFLAB, "profile", "-o", "OUT", "--"],
    "perflab --off-cpu": [PERFLAB, "profile", "--off-cpu", "-o", "OUT", "--"],
    "perf record cs+switch": ["perf", "record", "-q", "-g", "--switch-events", "-e", "cpu-clock/freq=997/",
                              "-e", "cs/period=1/", "-o", "OUT", "--"],
}


def report(title, results, key, unit):
    base = statistics.median(r[key] for r in results["bare"])
    print(title)
    for name, runs in results.items():
        value = statistics.median(r[key] for r in runs)
        size = statistics.median(r[-1] for r in runs)
        extra = f"  profile {size / 1024:.0f} KiB" if size else ""
        print(f"  {name:<22} {value:.4f} {unit} ({(value / base - 1) * 100:+.1f} %){extra}")


def main():
    if not os.access(PERFLAB, os.X_OK):
        sys.exit("build first: cargo build --release")
    with tempfile.TemporaryDirectory() as tmp:
        spin = build(tmp, "spin")
        pingpong = build(tmp, "pingpong")
        out = os.path.join(tmp, "out")
        attach = {name: [] for name in ATTACH}
        off = {name: [] for name in OFF_CPU}
        for r in range(ROUNDS):
            names = list(ATTACH)
            for name in names[r % len(names):] + names[:r % len(names)]:
                attach[name].append(spin_run(spin, ATTACH[name], out))
            names = list(OFF_CPU)
            for name in names[r % len(names):] + names[:r % len(names)]:
                off[name].append(pingpong_run(pingpong, OFF_CPU[name], out))
        print(f"{ROUNDS} interleaved rounds, medians")
        report(f"attach: spin {SPIN}, CPU time (wait4)", attach, 1, "s")
        report(f"attach: spin {SPIN}, wall time", attach, 0, "s")
        report(f"off-CPU: pingpong {TRIPS} round trips, their own time", off, 0, "s")


if __name__ == "__main__":
    main()
