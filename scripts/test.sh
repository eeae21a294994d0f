#!/usr/bin/env bash
# The one command that runs every test: `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
need_tool git git
need_tool python3 python3   # builds the conformance fixtures (shared/conformance/make_fixtures.py)


cargo test --workspace --locked "$@"
