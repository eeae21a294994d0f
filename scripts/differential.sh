#!/usr/bin/env bash
# Differential run against real Claude Code releases, including ones outside the test matrix:
# the version matrix's fixtures plus a fresh random sweep (testdata/differential/gen*.py) run
# through each release's real binary and through `mneme --claude-version`, compared byte for
# byte by the matrix test itself (crates/cli/tests/versions.rs). Releases are installed from npm
# into $HOME/.cache/mneme/claude-code when missing; captures are cached per release and tree.
#
#   scripts/differential.sh VERSION[,VERSION...] [N] [SEED]
#   scripts/differential.sh 2.1.260,2.1.300 100 9001     # two releases, 100 random trees, seed 9001
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
[ $# -ge 1 ] || { echo "usage: scripts/differential.sh VERSION[,VERSION...] [N random trees, default 100] [SEED, default a random one]" >&2; exit 2; }
VERSIONS="$1"; N="${2:-100}"; SEED="${3:-$RANDOM}"
pairs=()
for v in ${VERSIONS//,/ }; do pairs+=("$v=$(bash scripts/claude-code.sh "$v")"); done
echo "differential: Claude Code $VERSIONS, $N random trees, seed $SEED" >&2
MNEME_CLAUDE_BINS="$(IFS=,; echo "${pairs[*]}")" MNEME_MATRIX_VERSIONS="$VERSIONS" \
  MNEME_MATRIX_RANDOM="$N" MNEME_MATRIX_SEED="$SEED" MNEME_REQUIRE_CLAUDE=1 \
  cargo test --locked -q -p mneme --test versions -- --nocapture
