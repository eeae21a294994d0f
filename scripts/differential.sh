#!/usr/bin/env bash
# Differential run against real Claude Code 2.1.197: random fixtures, captured and compared.
#   scripts/differential.sh [N] [SEED]     (needs /tmp/cc with @anthropic-ai/claude-code@2.1.197)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
N="${1:-40}"; SEED="${2:-$RANDOM}"
cargo build --locked -q -p mneme
MNEME="$CARGO_TARGET_DIR/debug/mneme"
status=0
for gen in gen gen_settings gen_paths; do
  root="/tmp/mneme-diff-$gen"
  rm -rf "$root" "$root-cap" "$root-exp"
  python3 "testdata/differential/$gen.py" "$root" "$N" "$SEED" >/dev/null
  for f in "$root"/*; do OUT_ROOT="$root-cap" testdata/conformance/capture.sh "$f" >/dev/null 2>&1; done
  python3 testdata/conformance-extra/goldens.py "$root-cap" "$root-exp" >/dev/null
  echo "$gen (seed $SEED):"
  python3 testdata/differential/compare.py "$MNEME" "$root" "$root-exp" | tail -20 || status=1
done
exit $status
