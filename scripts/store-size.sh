#!/bin/sh
# Database size per 1,000 stored runs (SQLite, WAL checkpointed), for the README.
# Usage: scripts/store-size.sh [RUNS...]   (default 1000 10000 100000)
set -eu
cd "$(dirname "$0")/.."
exec cargo run --quiet --release --example store_size -- "$@"
