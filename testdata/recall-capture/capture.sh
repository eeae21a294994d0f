#!/usr/bin/env bash
# Captures what real Claude Code 2.1.197 sends for relevant-memory recall, for
# crates/recall/tests/real_capture.rs. Run as root (it needs a network namespace):
#
#   testdata/recall-capture/capture.sh [CLAUDE_BIN]
#
# Recall is behind the GrowthBook flag `tengu_moth_copse` (off by default). Claude Code reads
# flags from `cachedGrowthBookFeatures` in its global config, but only while nonessential
# traffic is allowed; so this run leaves CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC and
# DISABLE_TELEMETRY unset and instead runs Claude Code and the stub API inside a fresh network
# namespace (`unshare -n`) whose only interface is loopback: nothing can leave the machine.
#
# The stub (testdata/conformance/stub_api.py) answers the first main-loop turn with a Read of
# README.md (so the turn has a second iteration, where the recalled memories are attached) and
# every other request with the selection below. Outputs, next to this script:
#   selector_request.json   the side query's body
#   main_loop_system.txt    the role:"system" message carrying the recalled memories
#   captured_at_ms          when it ran (the freshness header depends on it)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONF="$(cd "$HERE/../conformance" && pwd)"
CLAUDE_BIN="${1:-/tmp/cc/node_modules/@anthropic-ai/claude-code-linux-x64/claude}"
FIX=/tmp/ccrecall
SELECTION='{"selected_memories": ["project_billing.md", "ghost.md", "feedback_deploys.md"]}'
PROMPT="can we deploy the billing service on friday"

rm -rf "$FIX"
mkdir -p "$FIX/home/.claude" "$FIX/repo"
git -C "$FIX/repo" init -q
git -C "$FIX/repo" -c user.name=x -c user.email=x@x commit -q --allow-empty -m fixture
echo "hello readme" >"$FIX/repo/README.md"
MEM="$FIX/home/.claude/projects/-tmp-ccrecall-repo/memory"
"$HERE/make_memory.sh" "$MEM"
printf '{"cachedGrowthBookFeatures": {"tengu_moth_copse": true}, "hasCompletedOnboarding": true}\n' \
  >"$FIX/home/.claude/.claude.json"

cat >"$FIX/run.sh" <<RUN
set -e
ip link set lo up
cd "$FIX/repo"
python3 "$CONF/stub_api.py" --port 0 --log "$FIX/requests.jsonl" --port-file "$FIX/port" \
  --reply '$SELECTION' --tool-read "$FIX/repo/README.md" 2>"$FIX/stub.err" &
STUB=\$!
for _ in \$(seq 100); do [ -s "$FIX/port" ] && break; sleep 0.05; done
date +%s%3N >"$FIX/captured_at_ms"
env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb LANG=C.UTF-8 HOME="$FIX/home" \
  CLAUDE_CONFIG_DIR="$FIX/home/.claude" ANTHROPIC_BASE_URL="http://127.0.0.1:\$(cat "$FIX/port")" \
  ANTHROPIC_API_KEY=sk-test DISABLE_AUTOUPDATER=1 \
  timeout 120 "$CLAUDE_BIN" -p "$PROMPT" --output-format json </dev/null >"$FIX/out.json" 2>"$FIX/err.txt" || true
kill \$STUB
RUN
# Claude Code attaches the memories only if its recall prefetch settled before the Read came
# back, which is a race on a fast stub: try a few times.
for attempt in 1 2 3 4 5; do
  rm -f "$FIX/requests.jsonl" "$FIX/port"
  unshare -n bash "$FIX/run.sh"
  grep -q '"role": "system", "content": "Retrieved for possible relevance' "$FIX/requests.jsonl" && break
  [ "$attempt" = 5 ] && { echo "recalled memories never reached the main loop" >&2; exit 1; }
done

python3 - "$FIX" "$HERE" <<'PY'
import json, sys
fix, here = sys.argv[1], sys.argv[2]
reqs = [json.loads(l) for l in open(f"{fix}/requests.jsonl", encoding="utf-8")]
bodies = [r["body"] for r in reqs if isinstance(r.get("body"), dict) and "messages" in r["body"]]
selector = [b for b in bodies if "selecting memories" in json.dumps(b.get("system"))]
assert len(selector) == 1, f"expected one selector request, got {len(selector)}"
# The selector prompt is Claude Code's own prose: it is not committed. real_capture.rs cuts it
# from the installed binary at test time and puts it back in place of this marker.
for block in selector[0]["system"]:
    if block["text"].startswith("You are selecting memories"):
        block["text"] = "<the selector prompt: Claude Code's own text, not kept here; real_capture.rs cuts it from the installed binary>"
json.dump(selector[0], open(f"{here}/selector_request.json", "w", encoding="utf-8"), indent=1, ensure_ascii=False)
systems = [m["content"] for b in bodies for m in b["messages"] if m.get("role") == "system" and "Memory: " in m["content"]]
assert systems, "no recalled memories reached the main loop"
open(f"{here}/main_loop_system.txt", "w", encoding="utf-8").write(systems[-1])
open(f"{here}/captured_at_ms", "w").write(open(f"{fix}/captured_at_ms").read())
print("captured", len(bodies), "requests")
PY
