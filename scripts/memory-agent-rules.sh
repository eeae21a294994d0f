#!/usr/bin/env bash
# Runs real Claude Code releases' memory extraction agent under the user's permission rules and
# checks each answer against what Mneme's agents reproduce (docs/claude-code-versions.md, rows
# 92 and 93: `Profile::memory_agents_obey_permission_rules` from 2.1.292,
# `Profile::writes_refuse_read_denied` from 2.1.228; `mneme_agent::PermissionRules`; rows 96
# and 97: the automount paths and `permissions.blockReadsOutsideWorkingDirectories`).
#
#   scripts/memory-agent-rules.sh [BINARY...]     default: every matrix release
#
# MEMORY_AGENT_RULES_CASES=REGEX runs only the cases whose name matches; MEMORY_AGENT_RULES_SHOW=1
# also prints each tool result's text (to stderr).
#
# Each case runs `claude -p` once in a fresh home with auto memory on and the extraction flags
# cached in `.claude.json`; scripts/memory-agent-stub.py answers the main conversation with
# text and the extraction agent's first request with the case's tool calls. Stub and Claude
# Code run in a network namespace of their own (`unshare -n`: only loopback exists), so
# nothing can leave the machine; that needs root (or unprivileged user namespaces).
# Each answer is judged by its kind only: ok, input (a <tool_use_error>), missing (a call that
# failed on a path that does not exist), refused (an error from the permission check), or that
# the extraction agent never started. A release without
# the extraction agent (its flag unknown to it) is reported and skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

if [ "${MEMORY_AGENT_RULES_IN_NS:-}" != 1 ]; then
  if [ $# -eq 0 ]; then
    IFS=, read -r -a pairs <<<"$(scripts/claude-code.sh --matrix)"
    set -- "${pairs[@]#*=}"
  fi
  MEMORY_AGENT_RULES_IN_NS=1 exec unshare -n "$0" "$@"
fi
ip link set lo up

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

# run_case BINARY NAME PERMISSIONS_JSON CALLS_JSON: prints one kind per call, or "none".
run_case() {
  local bin=$1 name=$2 perms=$3 calls=$4 w="$WORK/$2"
  mkdir -p "$w/home/.claude" "$w/home/secret" "$w/proj"
  echo "top secret" >"$w/home/secret/key.txt"
  git -C "$w/proj" init -q
  local proj mem sp port
  proj=$(cd "$w/proj" && pwd -P)
  mem="$w/home/.claude/projects/$(printf '%s' "$proj" | sed 's/[^a-zA-Z0-9]/-/g')/memory"
  echo "notes" >"$proj/notes.md"
  perms=${perms//@HOME@/$w/home}
  perms=${perms//@MEM@/$mem}
  calls=${calls//@HOME@/$w/home}
  calls=${calls//@MEM@/$mem}
  calls=${calls//@PROJ@/$proj}
  printf '%s' "$calls" >"$w/calls.json"
  printf '{"permissions": %s}\n' "$perms" >"$w/home/.claude/settings.json"
  cat >"$w/home/.claude/.claude.json" <<JSON
{"hasCompletedOnboarding": true,
 "cachedGrowthBookFeatures": {"tengu_passport_quail": true, "tengu_slate_thimble": true, "tengu_bramble_lintel": 1},
 "projects": {"$proj": {"hasTrustDialogAccepted": true}}}
JSON
  python3 "$REPO/scripts/memory-agent-stub.py" "$w/log.jsonl" "$w/port" "$w/calls.json" &
  sp=$!
  for _ in $(seq 100); do [ -s "$w/port" ] && break; sleep 0.05; done
  port=$(cat "$w/port")
  (cd "$proj" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$w/home" CLAUDE_CONFIG_DIR="$w/home/.claude" \
    TMPDIR="$w" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=stub DISABLE_AUTOUPDATER=1 \
    CLAUDE_CODE_MAX_RETRIES=0 timeout 120 "$bin" -p "Remember that I prefer tabs over spaces." \
    >"$w/out.txt" 2>"$w/err.txt") || true
  kill "$sp" 2>/dev/null || true
  wait "$sp" 2>/dev/null || true
  python3 - "$w/log.jsonl" "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$w/calls.json")" <<'PY'
import json, os, sys
answers = {}
for line in open(sys.argv[1], encoding="utf-8"):
    body = json.loads(line)["body"]
    if "memory extraction subagent" not in json.dumps(body):
        continue
    for m in body.get("messages") or []:
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id", "").startswith("toolu_"):
                text = json.dumps(b.get("content"))
                kind = "input" if "<tool_use_error>" in text else "missing" if "does not exist" in text else "refused" if b.get("is_error") else "ok"
                answers[int(b["tool_use_id"][6:])] = kind
                if os.environ.get("MEMORY_AGENT_RULES_SHOW") == "1":
                    print(f"  {b['tool_use_id']}: {kind}: {text[:400]}", file=sys.stderr)
    answers.setdefault("started", True)
if "started" not in answers:
    print("none")
else:
    print(" ".join(answers.get(i, "missing") for i in range(int(sys.argv[2]))))
PY
}

# at_least VERSION X.Y.Z: whether VERSION is X.Y.Z or later.
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

WRITE_TABS='["Write", {"file_path": "@MEM@/feedback_tabs.md", "content": "---\nname: tabs\ndescription: prefers tabs\ntype: feedback\n---\nTabs.\n"}]'
WRITE_PRIVATE='["Write", {"file_path": "@MEM@/private.md", "content": "x\n"}]'

for bin in "$@"; do
  version=$("$bin" --version 2>/dev/null | awk '{print $1}')
  rules=no; at_least "$version" 2.1.292 && rules=yes
  readdeny=no; at_least "$version" 2.1.228 && readdeny=yes
  # The read gates (rows 96 and 97): automount paths refused from 2.1.191 (/net/<host>), 2.1.251
  # (/Network/Servers/<host>) and 2.1.257 (/net); the read block from 2.1.257, over shell
  # commands from 2.1.292. A path not refused fails as missing (nothing is mounted here).
  block=no; at_least "$version" 2.1.257 && block=yes
  when() { at_least "$version" "$1" && echo refused || echo missing; }
  # name | permissions | calls | expected kinds (by the two switches) or "none"
  cases=(
    "read_deny|{\"deny\": [\"Read(/@HOME@/secret/**)\"]}|[[\"Read\", {\"file_path\": \"@HOME@/secret/key.txt\"}], [\"Bash\", {\"command\": \"cat @HOME@/secret/key.txt\"}], $WRITE_TABS]|input $([ $rules = yes ] && echo refused || echo ok) ok"
    "read_tool_deny|{\"deny\": [\"Read\"]}|[[\"Read\", {\"file_path\": \"@MEM@/x.md\"}], $WRITE_TABS]|input $([ $readdeny = yes ] && echo input || echo ok)"
    "read_deny_write|{\"deny\": [\"Read(/@MEM@/private.md)\"]}|[$WRITE_PRIVATE, $WRITE_TABS]|$([ $readdeny = yes ] && echo input || echo ok) ok"
    "edit_deny_file|{\"deny\": [\"Edit(/@MEM@/private.md)\"]}|[$WRITE_PRIVATE, $WRITE_TABS]|input ok"
    "edit_ask_file|{\"ask\": [\"Edit(/@MEM@/private.md)\"]}|[$WRITE_PRIVATE, $WRITE_TABS]|$([ $rules = yes ] && echo refused || echo ok) ok"
    "bash_rules|{\"deny\": [\"Bash(cat:*)\"], \"ask\": [\"Bash(ls:*)\"]}|[[\"Bash\", {\"command\": \"cat @HOME@/secret/key.txt\"}], [\"Bash\", {\"command\": \"ls @HOME@\"}], [\"Bash\", {\"command\": \"wc -l @HOME@/secret/key.txt\"}]]|$([ $rules = yes ] && echo refused refused || echo ok ok) ok"
    "edit_deny_folder|{\"deny\": [\"Edit(/@HOME@/.claude/projects/**)\"]}|[$WRITE_TABS]|$([ $rules = yes ] && echo none || echo input)"
    "edit_tool_ask|{\"ask\": [\"Edit\"]}|[$WRITE_TABS]|$([ $rules = yes ] && echo none || echo ok)"
    "net_paths|{}|[[\"Read\", {\"file_path\": \"/net/host/notes.md\"}], [\"Read\", {\"file_path\": \"/net\"}], [\"Read\", {\"file_path\": \"//server/share/notes.md\"}], [\"Read\", {\"file_path\": \"/Network/Servers/host/notes.md\"}], [\"Read\", {\"file_path\": \"/net/../@PROJ@/notes.md\"}], [\"Read\", {\"file_path\": \"@PROJ@/notes.md\"}]]|$(when 2.1.191) $(when 2.1.257) missing $(when 2.1.251) ok ok"
    "read_block|{\"blockReadsOutsideWorkingDirectories\": true}|[[\"Read\", {\"file_path\": \"@HOME@/secret/key.txt\"}], $WRITE_TABS, [\"Read\", {\"file_path\": \"@MEM@/feedback_tabs.md\"}], [\"Read\", {\"file_path\": \"@PROJ@/notes.md\"}], [\"Bash\", {\"command\": \"cat @HOME@/secret/key.txt\"}], [\"Bash\", {\"command\": \"ls @MEM@\"}]]|$([ $block = yes ] && echo refused || echo ok) ok ok ok $([ $block$rules = yesyes ] && echo refused || echo ok) ok"
  )
  for c in "${cases[@]}"; do
    IFS='|' read -r name perms calls expected <<<"$c"
    [[ "$name" =~ ${MEMORY_AGENT_RULES_CASES:-.} ]] || continue
    got=$(run_case "$bin" "$version-$name" "$perms" "$calls")
    if [ "$name" = read_deny ] && [ "$got" = none ]; then
      echo "$version: the extraction agent did not start (no such agent or flag in this release); skipped"
      continue 2
    fi
    if [ "$got" = "$expected" ]; then
      echo "$version $name: $got"
    else
      echo "$version $name: MISMATCH: Claude Code answered '$got', Mneme reproduces '$expected'"
      failures=$((failures + 1))
    fi
  done
done
[ "$failures" -eq 0 ] || { echo "$failures mismatches" >&2; exit 1; }
