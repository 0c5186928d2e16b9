#!/usr/bin/env python3
"""Cost and agreement of DWARF call stacks (`perflab profile -g dwarf`), side by side
with `perf record --call-graph dwarf` in the same run.

Workload: Debian's /usr/bin/python3.11 serialising and parsing JSON (~1.5 s; no frame
pointers anywhere, C extension _json under the interpreter). Per interleaved round:
the bare program, perflab -g fp, perflab -g dwarf (16 KiB, the default copy, and
8 KiB), perf record --call-graph dwarf (perf's default 8 KiB copy) and perf
record -g (frame pointers).

Reported, medians over the rounds:
  * the profiled program's CPU time (user+sys, wait4; the kernel's stack copies are
    charged to it) and the profiler's own CPU time (everything else in the process
    tree: perflab unwinds while recording, perf only writes perf.data and unwinds in
    `perf script`/`perf report`, timed separately);
  * per-sample cost = (profiler tree CPU − bare CPU) / samples;
  * profile file size and bytes per sample;
  * for perflab: stacks cut short (the walk did not reach the outermost frame).
Then, once: the top-3 caller chains (3 nearest callers) of the 3 hottest functions by
perflab and by perf, and whether node's hot JS function (--perf-basic-prof) is among
perflab's top-5 rows.

Usage: scripts/stacks-eval.py [ROUNDS]   (default 5)
Needs a release build (cargo build --release; PERFLAB=path selects another binary),
perf (linux-perf), python3.11; node is optional.
"""
import collections
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERFLAB = os.environ.get("PERFLAB", os.path.join(ROOT, "target", "release", "perflab"))
PYTHON = "/usr/bin/python3.11"
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
FREQ = "997"
WORKLOAD = """import json
data = [{"id": i, "name": "item%d" % i, "tags": ["a", "b", "c"], "value": i * 1.5,
         "nested": {"x": [1, 2, 3], "y": None}} for i in range(2000)]
for _ in range(90):
    json.loads(json.dumps(data))
"""


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(args):
    """Wall and CPU time of a command and all its descendants."""
    before, start = children_cpu(), time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, children_cpu() - before


def perflab_body(path):
    with open(path, "rb") as f:
        f.readline()
        return json.load(f)


def perf_samples(data):
    out = subprocess.run(["perf", "script", "-F", "period", "-i", data], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.strip())


def run_variant(name, script, tmp):
    if name == "bare":
        wall, cpu = timed([PYTHON, script])
        return {"wall": wall, "cpu": cpu, "program_cpu": cpu}
    if name.startswith("perflab"):
        out = os.path.join(tmp, "p.profile")
        mode = {"perflab fp": ["-g", "fp"], "perflab dwarf 16K": ["-g", "dwarf"],
                "perflab dwarf 8K": ["-g", "dwarf", "--stack-size", "8192"]}[name]
        wall, cpu = timed([PERFLAB, "profile", "-F", FREQ, "-o", out, "--limit", "0"] + mode + ["--", PYTHON, script])
        body = perflab_body(out)
        samples = sum(s["count"] for s in body["samples"])
        dwarf = body.get("dwarf") or {}
        return {"wall": wall, "cpu": cpu, "program_cpu": body["cpu_s"], "samples": samples,
                "size": os.path.getsize(out), "truncated": dwarf.get("truncated", 0) / max(dwarf.get("unwound", 1), 1)}
    data = os.path.join(tmp, "perf.data")
    mode = ["--call-graph", "dwarf"] if name == "perf dwarf 8K" else ["-g"]
    wall, cpu = timed(["perf", "record", "-q", "-e", "cpu-clock", "-F", FREQ, "-o", data] + mode + ["--", PYTHON, script])
    _, report_cpu = timed(["perf", "report", "--stdio", "-i", data])
    return {"wall": wall, "cpu": cpu, "samples": perf_samples(data), "size": os.path.getsize(data),
            "report_cpu": report_cpu}


VARIANTS = ["bare", "perflab fp", "perflab dwarf 16K", "perflab dwarf 8K", "perf fp", "perf dwarf 8K"]


def chains_perflab(profile, function):
    """Top-3 chains of the 3 nearest (non-inlined) callers, from `show --callers` JSON."""
    out = subprocess.run([PERFLAB, "show", profile, "--callers", function, "--json", "-"],
                         capture_output=True, text=True, check=True).stdout
    nodes = json.loads(out)["callers"]
    below = collections.Counter()
    for n in nodes:
        if "parent" in n:
            below[n["parent"]] += n["samples"]
    chains = collections.Counter()
    for i, n in enumerate(nodes):
        here = n["samples"] - below[i]
        if here <= 0:
            continue
        path, at = [], i
        while at is not None:
            if not nodes[at].get("inlined"):
                path.append(nodes[at]["name"])
            at = nodes[at].get("parent")
        path.reverse()
        chains[tuple(comparable(f) for f in path[1:4])] += here
    return [c for c, _ in chains.most_common(3)]


def comparable(name):
    if "+0x" in name:
        return "[unknown]"
    for suffix in (".isra", ".part", ".constprop", ".cold", ".lto_priv"):
        if suffix in name:
            name = name[: name.index(suffix)]
    return name


def chains_perf(data, function):
    out = subprocess.run(["perf", "script", "--no-inline", "-F", "ip,sym", "-i", data],
                         capture_output=True, text=True).stdout
    chains = collections.Counter()
    for block in out.split("\n\n"):
        frames = [comparable(line.strip().split(" ", 1)[1]) for line in block.splitlines() if " " in line.strip()]
        if function in frames:
            at = len(frames) - 1 - frames[::-1].index(function)
            chains[tuple(frames[at + 1: at + 4])] += 1
    return [c for c, _ in chains.most_common(3)]


def main():
    for tool in (PERFLAB, PYTHON):
        if not os.access(tool, os.X_OK):
            sys.exit(f"missing {tool} (cargo build --release; apt-get install python3.11)")
    if not shutil.which("perf"):
        sys.exit("perf is needed for the side-by-side figures (apt-get install linux-perf)")
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "work.py")
        with open(script, "w") as f:
            f.write(WORKLOAD)
        results = {v: [] for v in VARIANTS}
        for _ in range(ROUNDS):
            for v in VARIANTS:
                results[v].append(run_variant(v, script, tmp))
        med = lambda v, key: statistics.median(r[key] for r in results[v])  # noqa: E731
        bare = med("bare", "cpu")
        print(f"{PYTHON} json workload, -F {FREQ}, {ROUNDS} interleaved rounds, medians")
        print(f"  {'variant':<18} {'wall s':>7} {'tree CPU s':>10} {'per sample':>11} {'samples':>7} "
              f"{'file':>9} {'B/sample':>8}  other")
        print(f"  {'bare':<18} {med('bare', 'wall'):>7.3f} {bare:>10.3f}")
        for v in VARIANTS[1:]:
            n = med(v, "samples")
            per_sample = (med(v, "cpu") - bare) / n * 1e6 if n else float("nan")
            other = ""
            if v.startswith("perflab"):
                other = f"program CPU {med(v, 'program_cpu'):.3f} s"
                if "dwarf" in v:
                    other += f", stacks cut short {med(v, 'truncated') * 100:.1f} %"
            else:
                other = f"+ perf report {med(v, 'report_cpu'):.3f} s CPU"
            print(f"  {v:<18} {med(v, 'wall'):>7.3f} {med(v, 'cpu'):>10.3f} {per_sample:>8.0f} µs "
                  f"{n:>7.0f} {med(v, 'size') / 1024:>7.0f} KB {med(v, 'size') / n:>8.0f}  {other}")

        # Agreement of caller chains with perf on the same workload.
        profile, data = os.path.join(tmp, "a.profile"), os.path.join(tmp, "a.data")
        subprocess.run([PERFLAB, "profile", "-g", "dwarf", "-F", "2000", "-o", profile, "--limit", "0", "--", PYTHON,
                        script], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf", "-o", data,
                        "--", PYTHON, script], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shown = json.loads(subprocess.run([PERFLAB, "show", profile, "--json", "-"], capture_output=True, text=True,
                                          check=True).stdout)
        top = [f["name"] for f in sorted(shown["functions"], key=lambda f: -f["self_samples"])
               if not f["name"].startswith("[") and "+0x" not in f["name"]][:3]  # perf: [unknown]
        print("\ntop-3 caller chains (3 nearest callers) of the 3 hottest functions, perflab vs perf, -F 2000:")
        for function in top:
            ours, theirs = chains_perflab(profile, function), chains_perf(data, function)
            overlap = sum(1 for c in ours if c in theirs)
            print(f"  {function}: {overlap} of {len(ours)} agree")
            for c in ours:
                print(f"    {'=' if c in theirs else ' '} {' ← '.join(c)}")

        if shutil.which("node"):
            js = os.path.join(tmp, "hot.js")
            with open(js, "w") as f:
                f.write("function hotLoopFunction(n) { let s = 0; for (let i = 0; i < n; i++) "
                        "{ s = (s * 31 + i) % 1000003; } return s; }\n"
                        "let t = 0; for (let r = 0; r < 30; r++) t += hotLoopFunction(5e6);\nconsole.log(t);\n")
            out = subprocess.run([PERFLAB, "profile", "-o", os.path.join(tmp, "n.profile"), "--json", "-", "--", "node",
                                  "--perf-basic-prof", js], capture_output=True, text=True, check=True,
                                 cwd=tmp).stdout  # node also writes isolate-*-v8.log into its cwd
            rows = json.loads(out)["functions"]
            rank = next((i + 1 for i, f in enumerate(rows) if "hotLoopFunction" in f["name"]), None)
            total = sum(f["self_samples"] for f in rows)
            share = next((f["self_samples"] / total for f in rows if "hotLoopFunction" in f["name"]), 0)
            print(f"\nnode --perf-basic-prof: hotLoopFunction is row {rank} ({share * 100:.1f} % of samples)")


if __name__ == "__main__":
    main()
