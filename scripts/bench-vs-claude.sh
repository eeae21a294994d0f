#!/usr/bin/env bash
# Whole-process timings of mneme and of real Claude Code 2.1.197 on the same material
# (benches/make_bench_fixtures.py), with hyperfine. Claude Code runs fully offline against the
# conformance stub API on 127.0.0.1, exactly as testdata/conformance/capture.sh runs it.
#
#   scripts/bench-vs-claude.sh            # needs hyperfine, python3 and strace; Claude Code 2.1.197
#                                         # comes from scripts/claude-code.sh unless CLAUDE_BIN is set
#   scripts/bench-vs-claude.sh --memories # only the 10,000-topic-file rows (Claude Code on the empty
#                                         # repository and on that material, mneme memories list and
#                                         # manifest), in one run
#   MNEME_BIN=/path/to/mneme scripts/bench-vs-claude.sh   # time that binary, no build
set -euo pipefail
ONLY=all
case "${1:-}" in
  "") ;;
  --memories) ONLY=memories ;;
  *) echo "unknown option '$1'; use --memories for the 10,000-topic-file rows only, or no option for every row" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
. scripts/common.sh
need_tool hyperfine hyperfine
CLAUDE_BIN="${CLAUDE_BIN:-$(bash scripts/claude-code.sh 2.1.197)}"
[ -x "$CLAUDE_BIN" ] || { echo "no Claude Code at $CLAUDE_BIN; set CLAUDE_BIN to a Claude Code 2.1.197 binary" >&2; exit 1; }
# MNEME_BIN: time an already built binary (e.g. a copy kept for a before/after run) instead.
if [ -n "${MNEME_BIN:-}" ]; then
  MNEME="$MNEME_BIN"
else
  cargo build --release --locked -q -p mneme
  MNEME="$CARGO_TARGET_DIR/release/mneme"
fi
ROOT=/tmp/mneme-bench
python3 benches/make_bench_fixtures.py "$ROOT" >/dev/null

PORTFILE=$(mktemp -u)
python3 testdata/conformance/stub_api.py --port 0 --log /dev/null --port-file "$PORTFILE" >/dev/null 2>&1 &
STUB=$!
trap 'kill $STUB 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s "$PORTFILE" ] && break; sleep 0.05; done
PORT=$(cat "$PORTFILE")

cwd_of() { if [ "$1" = deep ]; then cat "$ROOT/deep/cwd"; else echo "$ROOT/$1/repo"; fi; }
claude_cmd() {
  local fx="$ROOT/$1"
  echo "bash -c 'cd $(cwd_of "$1") && env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb LANG=C.UTF-8 HOME=$fx/home CLAUDE_CONFIG_DIR=$fx/home/.claude ANTHROPIC_BASE_URL=http://127.0.0.1:$PORT ANTHROPIC_API_KEY=sk-test DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 $CLAUDE_BIN -p hello --output-format json </dev/null >/dev/null'"
}
mneme_cmd() {
  local fx="$ROOT/$1"
  echo "env HOME=$fx/home CLAUDE_CONFIG_DIR=$fx/home/.claude MNEME_DATA_DIR=$ROOT/data $MNEME $2 --cwd $(cwd_of "$1")"
}
# hyperfine on mneme itself: the material's environment is hyperfine's own, so no `env` process
# (~0.5 ms here) is timed with it. (Claude Code's rows need no such care: its wrapper's cost is in
# the empty repository's row too, and only the difference is compared.)
mneme_bench() {
  local name="$1" fx="$ROOT/$2"
  HOME=$fx/home CLAUDE_CONFIG_DIR=$fx/home/.claude MNEME_DATA_DIR=$ROOT/data \
    hyperfine -N --warmup 3 --runs 30 -n "$name" "$MNEME $3 --cwd $(cwd_of "$2")"
}
if [ "$ONLY" = memories ]; then
  hyperfine -N --warmup 1 --runs "${CLAUDE_RUNS:-5}" \
    -n "claude: empty repo" "$(claude_cmd empty)" \
    -n "claude: 10,000 topic files" "$(claude_cmd big)"
  mneme_bench "mneme memories list (10,000 topic files)" big 'memories list --json'
  mneme_bench "mneme memories manifest (10,000 topic files)" big 'memories manifest'
  exit 0
fi
hyperfine -N --warmup 1 --runs "${CLAUDE_RUNS:-5}" \
  -n "claude: empty repo" "$(claude_cmd empty)" \
  -n "claude: 10,000 topic files" "$(claude_cmd big)" \
  -n "claude: 30-level chain" "$(claude_cmd deep)" \
  -n "claude: 2,000 rules" "$(claude_cmd rules)" \
  -n "claude: 500 includes" "$(claude_cmd includes)"
mneme_bench "mneme memories list (10,000 topic files)" big 'memories list --json'
mneme_bench "mneme memories manifest (10,000 topic files)" big 'memories manifest'
mneme_bench "mneme context (30-level chain)" deep context
mneme_bench "mneme context (2,000 rules)" rules context
mneme_bench "mneme context (500 includes)" includes context
mneme_bench "mneme context (empty repo)" empty context

# System calls per loaded file: the whole process's calls, less the empty repository's, over
# the files the context loads.
calls() { eval "strace -f -c -o /tmp/mneme-bench/strace.txt $(mneme_cmd "$1" context) >/dev/null"; awk '$NF == "total" {print $4}' /tmp/mneme-bench/strace.txt; }
if command -v strace >/dev/null; then
  base=$(calls empty)
  for fx in deep rules includes; do
    n=$(eval "$(mneme_cmd "$fx" 'context --json')" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["files"]))')
    c=$(calls "$fx")
    echo "$fx: $c system calls ($base for the empty repository), $n files loaded: $(( (c - base) / n )).$(( (c - base) * 10 / n % 10 )) calls per file"
  done
fi
