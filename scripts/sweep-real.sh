#!/usr/bin/env bash
# Real repositories that are not in the corpus, through real Claude Code releases: every entry
# of CORPUS (laid out like testdata/realworld: <owner>__<repo>/tree/, with an optional cases.json
# of extra cases, {"name": ["cwd relative to the fixture", "stub args"]}) is captured from each
# release and compared byte for byte with mneme by the version-matrix test, at start and after
# the Reads its cases ask for. Nothing here is committed; it finds what the corpus has not.
#
#   scripts/sweep-real.sh CORPUS [VERSION[,VERSION...]]   # default: the newest release in the matrix
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: scripts/sweep-real.sh CORPUS-FOLDER [VERSION[,VERSION...]]" >&2; exit 2; }
CORPUS="$(cd "$1" && pwd)"
VERSIONS="${2:-$(grep -v '^#' crates/core/data/claude-code-versions.txt | awk 'NF {v=$1} END {print v}')}"
pairs=()
for v in ${VERSIONS//,/ }; do pairs+=("$v=$(bash scripts/claude-code.sh "$v")"); done
echo "sweep: $(find "$CORPUS" -mindepth 2 -maxdepth 2 -name tree | wc -l) repositories from $CORPUS through Claude Code $VERSIONS" >&2
MNEME_CLAUDE_BINS="$(IFS=,; echo "${pairs[*]}")" MNEME_MATRIX_VERSIONS="$VERSIONS" \
  MNEME_MATRIX_REAL_CORPUS="$CORPUS" MNEME_MATRIX_SETS=sweep MNEME_MATRIX_RANDOM=0 MNEME_REQUIRE_CLAUDE=1 \
  cargo test --locked -q -p mneme --test versions -- --nocapture
