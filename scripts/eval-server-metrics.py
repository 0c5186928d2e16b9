#!/usr/bin/env python3
"""How much a server's own metric narrows the interval: pgbench's tps vs wall time.

Starts a throwaway PostgreSQL (initdb into a temporary directory, Unix socket only, as
the `postgres` user when run as root; stopped at the end whatever happens), then runs
`perflab compare --parse pgbench` and reads, from the very same runs, the comparison of
tps and the comparison of the pgbench process's wall time:

  aa     the same select-only load twice (`pgbench -S -t 3000`), fixed rounds: the
         95 % interval widths of tps and of wall time, how often each was called
         different (it should not be), and how much of the process's wall time is not
         the transactions (wall − 3000/tps: start-up, connection, vacuum, teardown);
  sync   synchronous_commit on vs off under a write load (`pgbench -T 1 -c 2 -j 2`),
         the server reconfigured by --prepare before every run: what tps and wall
         time say (with -T the process runs for a fixed time, so wall time cannot see
         throughput at all).

Usage: scripts/eval-server-metrics.py [TRIALS] [ROUNDS]
PERFLAB=path selects the binary (default target/release/perflab, else target/debug).
"""
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRIALS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 20


def perflab_binary():
    if os.environ.get("PERFLAB"):
        return os.environ["PERFLAB"]
    for profile in ("release", "debug"):
        path = os.path.join(ROOT, "target", profile, "perflab")
        if os.path.exists(path):
            return path
    sys.exit("build perflab first (cargo build --release)")


def server_bin():
    versions = sorted(
        (int(v), os.path.join("/usr/lib/postgresql", v, "bin"))
        for v in os.listdir("/usr/lib/postgresql")
        if v.isdigit() and os.path.exists(os.path.join("/usr/lib/postgresql", v, "bin", "initdb"))
    )
    if not versions:
        sys.exit("PostgreSQL's server binaries are not installed (apt-get install postgresql)")
    return versions[-1][1]


class Cluster:
    def __init__(self):
        self.bin = server_bin()
        self.dir = tempfile.mkdtemp(prefix="perflab-eval-pg-")
        self.root = os.geteuid() == 0
        if self.root:
            subprocess.run(["chown", "postgres", self.dir], check=True)
        self.port = 41000 + os.getpid() % 20000
        self.data = os.path.join(self.dir, "data")
        self.owner(f"{self.bin}/initdb -D {self.data} -A trust -U postgres --no-sync")
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=''"
        self.owner(f"{self.bin}/pg_ctl -D {self.data} -l {self.dir}/log -w -o {shlex.quote(options)} start")
        subprocess.run(self.client("pgbench -i -q -s 1"), shell=True, check=True, capture_output=True)

    def owner(self, command):
        if self.root:
            command = f"runuser -u postgres -- sh -c {shlex.quote(command)}"
        subprocess.run(command, shell=True, check=True, capture_output=True)

    def client(self, program):
        return f"{program} -h {self.dir} -p {self.port} -U postgres postgres"

    def set_commit(self, value):
        psql = self.client("psql -X -q -At")
        return (
            f"{psql} -c \"ALTER SYSTEM SET synchronous_commit = '{value}'\" -c 'SELECT pg_reload_conf()' >/dev/null"
            f" && until [ \"$({psql} -c 'SHOW synchronous_commit')\" = {value} ]; do sleep 0.01; done"
        )

    def stop(self):
        try:
            self.owner(f"{self.bin}/pg_ctl -D {self.data} -m immediate -w stop")
        finally:
            subprocess.run(["rm", "-rf", self.dir])


def compare(args):
    out = subprocess.run([perflab_binary(), "compare", "--shell", "--no-progress", "--json", "-"] + args,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"perflab failed ({out.returncode}): {out.stderr[-2000:]}")
    e = json.loads(out.stdout)
    return {c["metric"]: c for c in e["comparisons"]}, e


def width(c):
    """The interval's width relative to the ratio, in percent."""
    return (c["ci_high"] - c["ci_low"]) / c["ratio"] * 100


def main():
    cluster = Cluster()
    try:
        select = cluster.client("pgbench -S -t 3000")
        aa_args = ["-r", str(ROUNDS), "--parse", "pgbench", select, select]
        print(f"perflab compare --shell -r {ROUNDS} --parse pgbench '{select}' (twice)   × {TRIALS}")
        aa = []
        outside_ms = []
        for trial in range(TRIALS):
            c, e = compare(aa_args)
            aa.append((c["tps"], c["wall_s"]))
            for run in (r for command in e["commands"] for r in command["runs"]):
                outside_ms.append((run["wall_s"] - 3000 / run["counters"]["tps"]["value"]) * 1000)
            print(f"  A/A trial {trial + 1}: tps CI width {width(c['tps']):.2f} % ({c['tps']['verdict']}), "
                  f"wall CI width {width(c['wall_s']):.2f} % ({c['wall_s']['verdict']})", flush=True)
        write = cluster.client("pgbench -T 1 -c 2 -j 2")
        sync_args = ["-r", "6", "--parse", "pgbench", "-n", "sync-on", "-n", "sync-off",
                     "--prepare", cluster.set_commit("on"), "--prepare", cluster.set_commit("off"), write, write]
        print(f"perflab compare --shell -r 6 --parse pgbench --prepare <synchronous_commit=on|off> '{write}' (twice)"
              f"   × {max(1, TRIALS // 2)}")
        sync = []
        for trial in range(max(1, TRIALS // 2)):
            c, _ = compare(sync_args)
            sync.append((c["tps"], c["wall_s"]))
            print(f"  sync trial {trial + 1}: tps {c['tps']['ratio']:.3f} [{c['tps']['ci_low']:.3f}, "
                  f"{c['tps']['ci_high']:.3f}] {c['tps']['verdict']}; wall {c['wall_s']['ratio']:.3f} "
                  f"[{c['wall_s']['ci_low']:.3f}, {c['wall_s']['ci_high']:.3f}] {c['wall_s']['verdict']}", flush=True)
    finally:
        cluster.stop()

    different = lambda cs: sum(c["verdict"] in ("faster", "slower") for c in cs)
    print()
    print(f"A/A: wall time outside the transactions per run: median {statistics.median(outside_ms):.1f} ms")
    print("| load | metric | median 95 % CI width (of the ratio) | called different |")
    print("|---|---|---|---|")
    for name, i in (("tps", 0), ("wall_s", 1)):
        cs = [t[i] for t in aa]
        print(f"| A/A `pgbench -S -t 3000`, {ROUNDS} rounds | {name} | {statistics.median(width(c) for c in cs):.2f} % "
              f"| {different(cs)}/{len(cs)} |")
    for name, i in (("tps", 0), ("wall_s", 1)):
        cs = [t[i] for t in sync]
        ratios = ", ".join(f"{c['ratio']:.2f}" for c in cs)
        print(f"| sync on→off `pgbench -T 1`, 6 rounds | {name} | {statistics.median(width(c) for c in cs):.1f} % "
              f"| {different(cs)}/{len(cs)} (ratios {ratios}; verdicts {', '.join(c['verdict'] for c in cs)}) |")


if __name__ == "__main__":
    main()
