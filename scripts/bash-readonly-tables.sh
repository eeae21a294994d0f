#!/usr/bin/env bash
# Takes Claude Code's read-only Bash tables out of every published release in a range and keeps
# one file per set that changed, for the agents' shell (crates/agent/data/readonly/).
#
#   scripts/bash-readonly-tables.sh [FIRST [LAST]]     default: 2.1.113 to the newest release
#
# For each release it downloads only the platform package (npm pack
# @anthropic-ai/claude-code-linux-x64@V, about 70 MB), runs crates/agent/data/extract-readonly.mjs
# on its binary and keeps the result in ~/.cache/mneme/readonly-tables/V.json, so a second run
# only reads the releases it has not seen. It then writes crates/agent/data/readonly/V.json for
# FIRST and for every release whose tables differ from the release before it, and prints the
# `Change::BashReadOnly` lines for crates/core/src/versions.rs and the `TABLES` lines for
# crates/agent/src/bash/tables.rs. Needs npm and Node; takes about 20 s per release.
set -euo pipefail
cd "$(dirname "$0")/.."

FIRST="${1:-2.1.113}"
LAST="${2:-}"
CACHE="${HOME}/.cache/mneme/readonly-tables"
OUT="crates/agent/data/readonly"
mkdir -p "$CACHE" "$OUT"

command -v npm >/dev/null || { echo "npm is needed: install Node.js 18 or later" >&2; exit 1; }
releases=$(npm view @anthropic-ai/claude-code versions --json | FIRST="$FIRST" LAST="$LAST" node -e '
  const key = (v) => v.split(".").map(Number);
  const cmp = (a, b) => { const x = key(a), y = key(b); for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i]; return 0; };
  const all = JSON.parse(require("fs").readFileSync(0, "utf8")).filter((v) => /^\d+\.\d+\.\d+$/.test(v));
  const last = process.env.LAST || all.sort(cmp).at(-1);
  console.log(all.filter((v) => cmp(v, process.env.FIRST) >= 0 && cmp(v, last) <= 0).sort(cmp).join("\n"));
')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in $releases; do
  [ -s "$CACHE/$v.json" ] && continue
  rm -rf "${work:?}"/*
  if ! (cd "$work" && npm pack --silent "@anthropic-ai/claude-code-linux-x64@$v" >/dev/null 2>&1); then
    echo "$v: no linux-x64 package published; skipped" >&2
    continue
  fi
  tar -xzf "$work"/*.tgz -C "$work" package/claude
  node crates/agent/data/extract-readonly.mjs "$work/package/claude" >"$CACHE/$v.json.tmp"
  mv "$CACHE/$v.json.tmp" "$CACHE/$v.json"
  echo "$v: taken" >&2
done

previous=""
for v in $releases; do
  [ -s "$CACHE/$v.json" ] || continue
  if [ -z "$previous" ] || ! cmp -s "$CACHE/$previous.json" "$CACHE/$v.json"; then
    cp "$CACHE/$v.json" "$OUT/$v.json"
    IFS=. read -r a b c <<<"$v"
    echo "    (ClaudeVersion::new($a, $b, $c), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new($a, $b, $c)))),"
    echo "    (\"$v\", include_str!(\"../../data/readonly/$v.json\")),"
  fi
  previous="$v"
done
