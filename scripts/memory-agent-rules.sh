#!/usr/bin/env bash
# Runs real Claude Code releases' memory extraction agent under the user's permission rules and
# checks each answer against what Mneme's agents reproduce (docs/claude-code-versions.md, rows
# 92 and 93: `Profile::memory_agents_obey_permission_rules` from 2.1.292,
# `Profile::writes_refuse_read_denied` from 2.1.228; `mneme_agent::PermissionRules`; rows 96
# and 97: the automount paths and `permissions.blockReadsOutsideWorkingDirectories`; rows 100 and
# 101: whose `additionalDirectories` and whose memory folder the block lets through).
#
#   scripts/memory-agent-rules.sh [BINARY...]     default: every matrix release
#
# MEMORY_AGENT_RULES_CASES=REGEX runs only the cases whose name matches; MEMORY_AGENT_RULES_SHOW=1
# also prints each tool result's text (to stderr); MEMORY_AGENT_RULES_KEEP=1 keeps each case's
# folder (home, project, the stub's log, Claude Code's output) and says where.
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
if [ "${MEMORY_AGENT_RULES_KEEP:-}" = 1 ]; then
  echo "work folders kept in $WORK" >&2
else
  trap 'rm -rf "$WORK"' EXIT
fi
failures=0

# run_case BINARY NAME PERMISSIONS_JSON CALLS_JSON [OPTIONS_JSON]: prints one kind per call, or
# "none". OPTIONS_JSON (all keys optional): "args", more command-line arguments (`--add-dir`);
# "project" and "local", the whole `.claude/settings.json` and `.claude/settings.local.json` of
# the project; "flag", a settings file passed with `--settings`; "track", project files to
# `git add` (a local settings file git tracks); "mem", the memory folder the calls' @MEM@ stands
# for, when a settings file chooses one (`autoMemoryDirectory`). @HOME@, @PROJ@ and @MEM@ are
# replaced everywhere, @PIPE@ in the calls.
run_case() {
  local bin=$1 name=$2 perms=$3 calls=$4 opts=${5:-{\}} w="$WORK/$2"
  mkdir -p "$w/home/.claude" "$w/home/secret" "$w/home/other" "$w/proj"
  echo "top secret" >"$w/home/secret/key.txt"
  echo "other" >"$w/home/other/notes.md"
  git -C "$w/proj" init -q
  local proj mem sp port
  proj=$(cd "$w/proj" && pwd -P)
  mem="$w/home/.claude/projects/$(printf '%s' "$proj" | sed 's/[^a-zA-Z0-9]/-/g')/memory"
  echo "notes" >"$proj/notes.md"
  opts=${opts//@HOME@/$w/home}
  opts=${opts//@PROJ@/$proj}
  mem=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("mem", sys.argv[2]))' "$opts" "$mem")
  perms=${perms//@HOME@/$w/home}
  perms=${perms//@MEM@/$mem}
  calls=${calls//@HOME@/$w/home}
  calls=${calls//@MEM@/$mem}
  calls=${calls//@PROJ@/$proj}
  calls=${calls//@PIPE@/|}
  printf '%s' "$calls" >"$w/calls.json"
  printf '{"permissions": %s}\n' "$perms" >"$w/home/.claude/settings.json"
  local -a args=()
  mapfile -t args < <(python3 - "$opts" "$proj" <<'PY'
import json, os, subprocess, sys
opts, proj = json.loads(sys.argv[1]), sys.argv[2]
for key, name in (("project", "settings.json"), ("local", "settings.local.json")):
    if key in opts:
        os.makedirs(os.path.join(proj, ".claude"), exist_ok=True)
        with open(os.path.join(proj, ".claude", name), "w", encoding="utf-8") as f:
            json.dump(opts[key], f)
if opts.get("track"):
    subprocess.run(["git", "-C", proj, "add", "-f", "--", *opts["track"]], check=True)
if "flag" in opts:
    flag = os.path.join(os.path.dirname(proj), "flag-settings.json")
    with open(flag, "w", encoding="utf-8") as f:
        json.dump(opts["flag"], f)
    print("--settings")
    print(flag)
for a in opts.get("args", []):
    print(a)
PY
)
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
    CLAUDE_CODE_MAX_RETRIES=0 timeout 120 "$bin" ${args[@]+"${args[@]}"} -p "Remember that I prefer tabs over spaces." \
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
BLOCK='{"blockReadsOutsideWorkingDirectories": true}'
# Reads of a folder beside the working folder and of one outside both, by Read and by the shell.
READ_BESIDE='[["Read", {"file_path": "@HOME@/secret/key.txt"}], ["Read", {"file_path": "@HOME@/other/notes.md"}], ["Bash", {"command": "cat @HOME@/secret/key.txt"}], ["Bash", {"command": "cat @HOME@/other/notes.md"}]]'
# The memory folder a settings file chose: written, then read by Read and by the shell.
MEM_READS='[["Write", {"file_path": "@MEM@/feedback_tabs.md", "content": "---\nname: tabs\ndescription: prefers tabs\ntype: feedback\n---\nTabs.\n"}], ["Read", {"file_path": "@MEM@/feedback_tabs.md"}], ["Bash", {"command": "ls @MEM@"}]]'
MEM_CHOSEN='"autoMemoryDirectory": "@HOME@/mem"'
# Shell commands the read-only check and the rule check must look into: a pipe, a command
# substitution, `eval`, backquotes; in the working folder, then outside it. (@PIPE@ is `|`, which
# separates a case's fields.)
SHELL_HARD='[["Bash", {"command": "cat @PROJ@/notes.md @PIPE@ wc -l"}], ["Bash", {"command": "echo $(cat @PROJ@/notes.md)"}], ["Bash", {"command": "eval cat @PROJ@/notes.md"}], ["Bash", {"command": "cat @HOME@/secret/key.txt @PIPE@ wc -l"}], ["Bash", {"command": "echo $(cat @HOME@/secret/key.txt)"}], ["Bash", {"command": "cat `echo @HOME@/secret/key.txt`"}]]'

for bin in "$@"; do
  version=$("$bin" --version 2>/dev/null | awk '{print $1}')
  rules=no; at_least "$version" 2.1.292 && rules=yes
  readdeny=no; at_least "$version" 2.1.228 && readdeny=yes
  # The read gates (rows 96 and 97): automount paths refused from 2.1.191 (/net/<host>), 2.1.251
  # (/Network/Servers/<host>) and 2.1.257 (/net); the read block from 2.1.257, over shell
  # commands from 2.1.292. A path not refused fails as missing (nothing is mounted here).
  block=no; at_least "$version" 2.1.257 && block=yes
  when() { at_least "$version" "$1" && echo refused || echo missing; }
  # The cases below `read_block` need the block (2.1.257): on older releases they are not run
  # ("-"). shell A B: A before 2.1.292, when shell commands are not held to the block, B after.
  from_block() { [ $block = yes ] && echo "$1" || echo -; }
  shell() { [ $rules = yes ] && echo "$2" || echo "$1"; }
  # Rows 100 and 101: the project's settings and a local file git tracks are the repository's
  # own: their `additionalDirectories` widen nothing, and a memory folder they chose is not
  # exempt (2.1.257-2.1.272 refuse the Read); from 2.1.273 auto memory is off for such a session
  # and extraction does not start at all ("none"), which Mneme's extraction does not reproduce
  # yet: its agents answer as 2.1.272 does. The block set in the project's own settings instead of
  # the user's changes nothing (`memdir_project_block_project`); without the block the
  # repository's choice keeps memory on (`memdir_project_noblock`, row 28).
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
    "add_dirs_user|{\"blockReadsOutsideWorkingDirectories\": true, \"additionalDirectories\": [\"~/secret\"]}|$READ_BESIDE|$(from_block "ok refused $(shell "ok ok" "ok refused")")"
    "add_dirs_project|$BLOCK|$READ_BESIDE|$(from_block "refused refused $(shell "ok ok" "refused refused")")|{\"project\": {\"permissions\": {\"additionalDirectories\": [\"@HOME@/secret\"]}}}"
    "add_dirs_local|$BLOCK|$READ_BESIDE|$(from_block "ok refused $(shell "ok ok" "ok refused")")|{\"local\": {\"permissions\": {\"additionalDirectories\": [\"@HOME@/secret\"]}}}"
    "add_dirs_local_tracked|$BLOCK|$READ_BESIDE|$(from_block "refused refused $(shell "ok ok" "refused refused")")|{\"local\": {\"permissions\": {\"additionalDirectories\": [\"@HOME@/secret\"]}}, \"track\": [\".claude/settings.local.json\"]}"
    "add_dirs_flag_file|$BLOCK|$READ_BESIDE|$(from_block "ok refused $(shell "ok ok" "ok refused")")|{\"flag\": {\"permissions\": {\"additionalDirectories\": [\"@HOME@/secret\"]}}}"
    "add_dir_flag|$BLOCK|$READ_BESIDE|$(from_block "ok refused $(shell "ok ok" "ok refused")")|{\"args\": [\"--add-dir\", \"@HOME@/secret\"]}"
    "net_add_dir|{\"additionalDirectories\": [\"/net/host\"]}|[[\"Read\", {\"file_path\": \"/net/host/notes.md\"}]]|$(when 2.1.191)|{\"args\": [\"--add-dir\", \"/net/host\"]}"
    "memdir_project|$BLOCK|$MEM_READS|$(from_block "$(at_least "$version" 2.1.273 && echo none || echo ok refused ok)")|{\"project\": {$MEM_CHOSEN}, \"mem\": \"@HOME@/mem\"}"
    "memdir_local|$BLOCK|$MEM_READS|$(from_block "ok ok ok")|{\"local\": {$MEM_CHOSEN}, \"mem\": \"@HOME@/mem\"}"
    "memdir_local_tracked|$BLOCK|$MEM_READS|$(from_block "$(at_least "$version" 2.1.273 && echo none || echo ok refused ok)")|{\"local\": {$MEM_CHOSEN}, \"mem\": \"@HOME@/mem\", \"track\": [\".claude/settings.local.json\"]}"
    "memdir_project_noblock|{}|$MEM_READS|$(from_block "ok ok ok")|{\"project\": {$MEM_CHOSEN}, \"mem\": \"@HOME@/mem\"}"
    "memdir_project_block_project|{}|$MEM_READS|$(from_block "$(at_least "$version" 2.1.273 && echo none || echo ok refused ok)")|{\"project\": {$MEM_CHOSEN, \"permissions\": $BLOCK}, \"mem\": \"@HOME@/mem\"}"
    "shell_hard_block|$BLOCK|$SHELL_HARD|$(from_block "ok refused refused $(shell ok refused) refused refused")"
  )
  for c in "${cases[@]}"; do
    IFS='|' read -r name perms calls expected opts <<<"$c"
    [[ "$name" =~ ${MEMORY_AGENT_RULES_CASES:-.} ]] || continue
    [ "$expected" = - ] && continue
    got=$(run_case "$bin" "$version-$name" "$perms" "$calls" "${opts:-{\}}")
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
