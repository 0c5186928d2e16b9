#!/bin/sh
# Database size per 1,000 stored runs (SQLite, WAL checkpointed), for the README.
# Usage: scripts/store-size.sh [RUNS...]   (default 1000 10000 100000)
set -eu
cd "$(dirname "$0")/.."
# Sizes do not depend on the build profile; the debug build is already there.
exec cargo run --quiet --example store_size -- "$@"
