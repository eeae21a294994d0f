#!/usr/bin/env bash
# Benchmarks: `npm run bench`. Figures and how they compare are in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo bench --locked -p mneme-api -p mneme-recall "$@"
