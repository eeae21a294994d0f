#!/usr/bin/env bash
# How deep a CLAUDE.md may nest before real Claude Code leaves it out (its Markdown lexer runs
# out of JavaScript stack), found by bisection: each probe runs Claude Code offline against the
# conformance stub API on 127.0.0.1 and looks for the file's marker in what it sent.
#
#   scripts/claude-nesting-limit.sh VERSION CONSTRUCT [LOW HIGH]
#     CONSTRUCT: quote (>>>…), list (- - …), quotelist (> - > - …), em (_a _a …), strong (**a …)
#     LOW must load and HIGH must not (default 1000 30000); prints the last depth that loaded.
# The answer depends on the stack Claude Code gets (`ulimit -s`; 8 MiB on most systems).
# Figures: docs/benchmarks.md, "How deep Claude Code nests".
set -euo pipefail
cd "$(dirname "$0")/.."
V="${1:?usage: $0 VERSION CONSTRUCT [LOW HIGH]}"; C="${2:?construct: quote, list, quotelist, em or strong}"
LO="${3:-1000}"; HI="${4:-30000}"
BIN="$(bash scripts/claude-code.sh "$V")"
WORK="$(mktemp -d)"; STUB=""
trap 'rm -rf "$WORK"; [ -z "$STUB" ] || kill "$STUB" 2>/dev/null || true' EXIT
python3 testdata/conformance/stub_api.py --port 0 --log "$WORK/requests.jsonl" --port-file "$WORK/port" >/dev/null 2>&1 &
STUB=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
PORT="$(cat "$WORK/port")"

# 0 when Claude Code sent the file at this depth, 1 when it left it out.
loads() {
  local repo="$WORK/repo" home="$WORK/home"
  rm -rf "$repo" "$home"; mkdir -p "$repo" "$home/.claude"; git -C "$repo" init -q
  # The comment sends the file through the lexer (without `@` or `<!--` it is not lexed).
  python3 - "$C" "$1" > "$repo/CLAUDE.md" <<'PY'
import sys
c, d = sys.argv[1], int(sys.argv[2])
body = {"quote": ">" * d + " NESTMARK", "list": "- " * d + "NESTMARK", "quotelist": "> - " * d + "NESTMARK",
        "em": "_a " * d + "NESTMARK" + " a_" * d, "strong": "**a " * d + "NESTMARK" + " a**" * d}[c]
print("<!-- c -->\n" + body)
PY
  : > "$WORK/requests.jsonl"
  (cd "$repo" && env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb LANG=C.UTF-8 HOME="$home" \
    CLAUDE_CONFIG_DIR="$home/.claude" ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=sk-test \
    DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    timeout 600 "$BIN" -p hello --output-format json </dev/null >/dev/null 2>&1) || true
  [ -s "$WORK/requests.jsonl" ] || { echo "Claude Code $V sent no request at depth $1; see its output by running it by hand" >&2; exit 1; }
  grep -q NESTMARK "$WORK/requests.jsonl"
}
loads "$LO" || { echo "Claude Code $V already leaves the file out at $LO levels; pass a lower LOW" >&2; exit 1; }
! loads "$HI" || { echo "Claude Code $V still loads the file at $HI levels; pass a higher HIGH" >&2; exit 1; }
while [ $((HI - LO)) -gt $((LO / 100 + 1)) ]; do
  MID=$(((LO + HI) / 2))
  if loads "$MID"; then LO=$MID; else HI=$MID; fi
done
echo "Claude Code $V, $C: loads $LO levels, leaves the file out at $HI (ulimit -s $(ulimit -s))"
