#!/usr/bin/env python3
"""Kernel symbols of `perflab profile` against `perf report`, on a pipe ping-pong.

Builds tests/fixtures/pingpong.c (two processes passing a byte over two pipes: nearly
all time in the kernel), then in each trial records it with `perf record -e cpu-clock`
and with `perflab profile` (alternating which goes first), and compares perf's top-5
kernel symbols ([k] rows of `perf report --sort sym`, clone suffixes like .isra.0
dropped as perflab does) with perflab's top-5 kernel rows. Prints both lists with their
shares and the overlap per trial.

Usage: scripts/kernel-symbols-eval.py [TRIALS] [ROUND_TRIPS]
Needs root (or perf_event_paranoid <= 1 and kptr_restrict 0), perf, a C compiler and a
release build (cargo build --release; PERFLAB=path selects another binary).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERFLAB = os.environ.get("PERFLAB", os.path.join(ROOT, "target", "release", "perflab"))
TRIALS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
ROUND_TRIPS = sys.argv[2] if len(sys.argv) > 2 else "200000"


def strip_clone(name):
    return re.sub(r"\.(isra|part|constprop|cold|lto_priv)(\.\d+)*.*$", "", name)


def perf_top(tmp, exe):
    data = os.path.join(tmp, "perf.data")
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-o", data, "--", exe, ROUND_TRIPS],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = subprocess.run(["perf", "report", "--stdio", "-q", "--sort", "sym", "-i", data],
                            check=True, capture_output=True, text=True).stdout
    rows = []
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[k\] (.+)$", line)
        if m:
            rows.append((strip_clone(m.group(2).strip()), float(m.group(1))))
    return rows[:5]


def perflab_top(tmp, exe):
    out = os.path.join(tmp, "p.profile")
    doc = subprocess.run([PERFLAB, "profile", "-F", "2000", "-o", out, "--json", "-", "--", exe, ROUND_TRIPS],
                         check=True, capture_output=True, text=True).stdout
    rows = [(f["name"], f["self_share"] * 100) for f in json.loads(doc)["functions"] if f["object"].startswith("[kernel")]
    return rows[:5]


def main():
    if not os.access(PERFLAB, os.X_OK):
        sys.exit("build first: cargo build --release")
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "pingpong")
        subprocess.run(["cc", "-O2", "-g", os.path.join(ROOT, "tests", "fixtures", "pingpong.c"), "-o", exe], check=True)
        overlaps = []
        for trial in range(TRIALS):
            if trial % 2 == 0:
                perf, ours = perf_top(tmp, exe), perflab_top(tmp, exe)
            else:
                ours, perf = perflab_top(tmp, exe), perf_top(tmp, exe)
            common = len({n for n, _ in perf} & {n for n, _ in ours})
            overlaps.append(common)
            print(f"trial {trial + 1}: {common}/5 of perf's top-5 kernel symbols in perflab's top-5")
            for (pn, ps), (on, os_) in zip(perf, ours):
                print(f"    perf {ps:6.2f} % {pn:<34} perflab {os_:6.2f} % {on}")
        print(f"pingpong {ROUND_TRIPS}: {TRIALS} trials, overlap min {min(overlaps)}/5, "
              f"median {sorted(overlaps)[len(overlaps) // 2]}/5, >= 4 in {sum(o >= 4 for o in overlaps)} of {TRIALS}")


if __name__ == "__main__":
    main()
