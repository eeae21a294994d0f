#!/usr/bin/env bash
# Captures what a real Claude Code release sends for relevant-memory recall, for
# crates/recall/tests/real_capture.rs. Run as root (it needs a network namespace):
#
#   testdata/recall-capture/capture.sh VERSION [CLAUDE_BIN]
#
# CLAUDE_BIN defaults to the release scripts/claude-code.sh installs from npm.
#
# Recall is behind the GrowthBook flag `tengu_moth_copse` (off by default). Claude Code reads
# flags from `cachedGrowthBookFeatures` in its global config, but only while nonessential
# traffic is allowed; so this run leaves CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC and
# DISABLE_TELEMETRY unset and instead runs Claude Code and the stub API inside a fresh network
# namespace (`unshare -n`) whose only interface is loopback: nothing can leave the machine.
#
# The stub (testdata/conformance/stub_api.py) answers the first main-loop turn with a Read of
# README.md (so the turn has a second iteration, where the recalled memories are attached) and
# every other request with the selection below. Outputs, in VERSION/ next to this script:
#   selector_request.json   the side query's body
#   main_loop.json          how the recalled memories reached the main loop: `delivery`
#                           (`systemMessage`: a role:"system" message; `toolResult`: appended
#                           to the Read's result, before 2.1.154) and `text`, with the
#                           `<total_tokens>` budget line of 2.1.233 to 2.1.312 taken out (it
#                           depends on the conversation, not on recall)
#   captured_at_ms          when it ran (the freshness header depends on it)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONF="$(cd "$HERE/../conformance" && pwd)"
VERSION="${1:?usage: capture.sh VERSION [CLAUDE_BIN]}"
CLAUDE_BIN="${2:-$("$HERE/../../scripts/claude-code.sh" "$VERSION")}"
"$CLAUDE_BIN" --version | grep -q "^$VERSION " || { echo "$CLAUDE_BIN is not Claude Code $VERSION" >&2; exit 1; }
OUT="$HERE/$VERSION"
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
  --reply '$SELECTION' --tool-read "$FIX/repo/README.md" --tool-read-delay-ms 1500 2>"$FIX/stub.err" &
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
# back, which is a race on a fast stub (the stub holds the Read back 1.5 s; the Node releases
# scan a folder of a dozen memories slower than that race allowed): try a few times.
for attempt in $(seq 10); do
  rm -f "$FIX/requests.jsonl" "$FIX/port"
  unshare -n bash "$FIX/run.sh"
  grep -q 'Stripe webhooks move to v2' "$FIX/requests.jsonl" && break
  [ "$attempt" = 10 ] && { echo "recalled memories never reached the main loop" >&2; exit 1; }
done

mkdir -p "$OUT"
python3 - "$FIX" "$OUT" <<'PY'
import json, re, sys
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
# The last main-loop request holds the memories: in a role:"system" message (a string, or
# text blocks from 2.1.212), or, before 2.1.154, appended to the Read's tool result.
def texts(content):
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
found = None
main = [b for b in bodies if b not in selector and "Stripe webhooks" in json.dumps(b["messages"])]
assert main, "no recalled memories reached the main loop"
for m in main[-1]["messages"]:
    if m.get("role") == "system" and "Stripe webhooks" in texts(m["content"]):
        text = re.sub(r"^<total_tokens>[^<]*</total_tokens>\n\n", "", texts(m["content"]))
        found = {"delivery": "systemMessage", "text": text}
    elif m.get("role") == "user" and not isinstance(m["content"], str):
        for b in m["content"]:
            c = b.get("content")
            if b.get("type") == "tool_result" and isinstance(c, str) and "Stripe webhooks" in c:
                # From the first reminder that carries a memory (the Read may add its own first).
                starts = [i.start() for i in re.finditer(r"<system-reminder>\n", c)]
                first = next(i for i in starts if "Memory: " in c[i:c.find("</system-reminder>", i)])
                found = {"delivery": "toolResult", "text": c[first:]}
assert found, "no recalled memories reached the main loop"
json.dump(found, open(f"{here}/main_loop.json", "w", encoding="utf-8"), indent=1, ensure_ascii=False)
open(f"{here}/captured_at_ms", "w").write(open(f"{fix}/captured_at_ms").read())
print("captured", len(bodies), "requests")
PY
