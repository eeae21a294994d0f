#!/usr/bin/env bash
# The one command that runs every test: `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
need_tool git git
need_tool python3 python3   # builds the conformance fixtures (testdata/conformance/make_fixtures.py)

cargo test --workspace --locked "$@"

# End to end: the built UI in Debian's Chromium (driven by playwright-core) against a real
# `mneme serve` on a fixture home. Screenshots are refreshed by `npm run e2e`, not here.
need_tool node nodejs
need_tool chromium chromium
npm run --silent build:ui
cargo build --locked -q -p mneme
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/run.mjs
