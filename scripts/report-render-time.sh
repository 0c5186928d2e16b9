#!/bin/sh
# Time to produce the HTML report of a synthetic suite (default 1,000 benchmarks x 100
# labels x 10 runs), for the README:
#   1. in memory: arranging the results (medians, CIs, intervals, change points) + rendering;
#   2. end to end: `perflab report --db` on a SQLite history holding the same results
#      (stored label after label, as suites store them), five times.
# Usage: scripts/report-render-time.sh [BENCHMARKS] [LABELS]
set -eu
cd "$(dirname "$0")/.."
benchmarks=${1:-1000}
labels=${2:-100}
cargo build --quiet --release --bin perflab --example report_render_time
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
./target/release/examples/report_render_time "$benchmarks" "$labels" --out "$tmp/memory.html"
./target/release/examples/report_render_time "$benchmarks" "$labels" --db "$tmp/history.db"
echo "end to end from SQLite ($(du -h "$tmp/history.db" | cut -f1)), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in 1 2 3 4 5; do
    /usr/bin/time -f "  %e s wall, %U s user, %S s sys, %M KiB peak" \
        ./target/release/perflab report --db "$tmp/history.db" --out "$tmp/report.html" 2>&1 | grep -v '^perflab: wrote'
done
echo "$(du -h "$tmp/report.html" | cut -f1) HTML; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
