#!/usr/bin/env bash
# The recall manifest against real Claude Code releases: for each memory folder, a release is run
# offline (a network namespace with only loopback, the stub API of testdata/conformance) with
# recall switched on, and the memory list its selector request carries is compared byte for byte
# with `mneme memories manifest --claude-version V` on the same folder, copied with its
# modification times. Run as root (`unshare -n`). Nothing is committed; it finds what the eight
# fixed captures of testdata/recall-capture cannot (the order of files sharing a modification
# time, real frontmatter), as it found the Node releases' tie order (docs/claude-code-versions.md).
#
#   scripts/manifest-sweep.sh VERSION[,VERSION...] [MEMORY-FOLDER...]
#   scripts/manifest-sweep.sh 2.1.100,2.1.332      # every testdata/realworld/*/tree/.claude/memory
#
#   MANIFEST_SWEEP_KEEP=/tmp/out scripts/manifest-sweep.sh 2.1.332 DIR   # also keep both lists of
#                                         # each run there (claude-V-N.txt, mneme-V-N.txt)
#
# Exit 0 when every folder matches on every release, 1 when one differs (the difference is shown).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
[ $# -ge 1 ] || { echo "usage: scripts/manifest-sweep.sh VERSION[,VERSION...] [MEMORY-FOLDER...]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "manifest-sweep: run as root (it isolates Claude Code in a network namespace)" >&2; exit 2; }
VERSIONS="$1"; shift
if [ $# -eq 0 ]; then set -- testdata/realworld/*/tree/.claude/memory; fi
cargo build --locked -q -p mneme
MNEME="$CARGO_TARGET_DIR/debug/mneme"
CONF="$PWD/testdata/conformance"
FIX="$(mktemp -d /tmp/mneme-manifest-sweep.XXXXXX)"
trap 'rm -rf "$FIX"' EXIT
differ=0
for v in ${VERSIONS//,/ }; do
  bin="$(bash scripts/claude-code.sh "$v")"
  for folder in "$@"; do
    [ -d "$folder" ] || { echo "manifest-sweep: no folder $folder" >&2; exit 2; }
    rm -rf "$FIX/case"; mkdir -p "$FIX/case/home/.claude" "$FIX/case/repo"
    git -C "$FIX/case/repo" init -q
    git -C "$FIX/case/repo" -c user.name=x -c user.email=x@x commit -q --allow-empty -m fixture
    echo "hello" >"$FIX/case/repo/README.md"
    key="$(echo "$FIX/case/repo" | sed 's/[^A-Za-z0-9]/-/g')"
    mkdir -p "$FIX/case/home/.claude/projects/$key/memory"
    cp -a "$folder/." "$FIX/case/home/.claude/projects/$key/memory/"
    # Recall is behind a GrowthBook flag, read from the global config (see recall-capture/capture.sh).
    printf '{"cachedGrowthBookFeatures": {"tengu_moth_copse": true}, "hasCompletedOnboarding": true}\n' \
      >"$FIX/case/home/.claude/.claude.json"
    cat >"$FIX/case/run.sh" <<RUN
set -e
ip link set lo up
cd "$FIX/case/repo"
python3 "$CONF/stub_api.py" --port 0 --log "$FIX/case/requests.jsonl" --port-file "$FIX/case/port" \
  --reply '{"selected_memories": []}' --tool-read "$FIX/case/repo/README.md" 2>/dev/null &
STUB=\$!
for _ in \$(seq 100); do [ -s "$FIX/case/port" ] && break; sleep 0.05; done
env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb LANG=C.UTF-8 HOME="$FIX/case/home" \
  CLAUDE_CONFIG_DIR="$FIX/case/home/.claude" ANTHROPIC_BASE_URL="http://127.0.0.1:\$(cat "$FIX/case/port")" \
  ANTHROPIC_API_KEY=sk-test DISABLE_AUTOUPDATER=1 \
  timeout 120 "$bin" -p "what do you remember about this project" --output-format json </dev/null >/dev/null 2>&1 || true
kill \$STUB
RUN
    # The selector runs beside the main loop; on a fast stub the turn can end before it is sent.
    for _ in 1 2 3 4 5 6; do
      rm -f "$FIX/case/requests.jsonl" "$FIX/case/port"
      unshare -n bash "$FIX/case/run.sh"
      grep -q "selecting memories" "$FIX/case/requests.jsonl" 2>/dev/null && break
    done
    python3 - "$FIX/case/requests.jsonl" >"$FIX/claude.txt" <<'PY'
import json, sys
bodies = [json.loads(l).get("body") for l in open(sys.argv[1], encoding="utf-8")]
selector = [b for b in bodies if isinstance(b, dict) and "selecting memories" in json.dumps(b.get("system"))]
for m in (selector[0]["messages"] if selector else []):
    text = m["content"] if isinstance(m["content"], str) else "".join(b.get("text", "") for b in m["content"])
    if "Available memories:\n" in text:
        manifest = text.split("Available memories:\n", 1)[1]
        # Releases before 2.1.91 may add the recently used tools after it (none on a first turn).
        print(manifest.split("\n\nRecently used tools")[0])
        break
PY
    env HOME="$FIX/case/home" CLAUDE_CONFIG_DIR="$FIX/case/home/.claude" PATH=/usr/bin:/bin \
      "$MNEME" memories manifest --cwd "$FIX/case/repo" --claude-version "$v" >"$FIX/mneme.txt"
    if [ -n "${MANIFEST_SWEEP_KEEP:-}" ]; then
      mkdir -p "$MANIFEST_SWEEP_KEEP"
      n=$(( ${n:-0} + 1 ))
      cp "$FIX/claude.txt" "$MANIFEST_SWEEP_KEEP/claude-$v-$n.txt"
      cp "$FIX/mneme.txt" "$MANIFEST_SWEEP_KEEP/mneme-$v-$n.txt"
    fi
    if ! [ -s "$FIX/claude.txt" ]; then
      if [ -s "$FIX/mneme.txt" ]; then echo "NO RECALL $v $folder (Claude Code sent no selector request)"; differ=1
      else echo "same      $v $folder (no topic files)"; fi
    elif cmp -s "$FIX/claude.txt" "$FIX/mneme.txt"; then
      echo "same      $v $folder ($(wc -l <"$FIX/claude.txt") memories)"
    else
      echo "DIFFERS   $v $folder (< Claude Code, > mneme)"; diff "$FIX/claude.txt" "$FIX/mneme.txt" | head -20 || true
      differ=1
    fi
  done
done
exit "$differ"
