#!/usr/bin/env bash
# Takes the value rules of Claude Code's settings schema out of published releases and writes
# them, with the releases each rule holds for, to crates/store/data/settings-schema.json (what
# crates/store/src/settings/schema.rs checks settings files against).
#
#   scripts/settings-schema.sh [FIRST [LAST [STEP]]]   default: 2.1.100 to the newest, every release
#
# STEP takes every STEP-th release (and always FIRST and LAST); a rule then holds only between
# releases that were read, so a key that changed in between is not checked there. Releases
# already read are kept in ~/.cache/mneme/settings-schema/V.json, so a second run only reads
# the ones it has not seen, and the data file is rebuilt from everything in that cache.
# Each release is downloaded with npm pack (the platform package from 2.1.113, about 70 MB; the
# JavaScript package before) and read by crates/store/data/extract-settings-schema.mjs.
# Needs npm and Node; takes about 20 s per release. Then run scripts/settings-sweep.py: it
# checks, on the real releases, that Mneme agrees with each one about files that break the rules
# read (a release may mend a value before its check).
set -euo pipefail
cd "$(dirname "$0")/.."

FIRST="${1:-2.1.100}"
LAST="${2:-}"
STEP="${3:-1}"
CACHE="${HOME}/.cache/mneme/settings-schema"
OUT="crates/store/data/settings-schema.json"
mkdir -p "$CACHE"

command -v npm >/dev/null || { echo "npm is needed: install Node.js 18 or later" >&2; exit 1; }
releases=$(npm view @anthropic-ai/claude-code versions --json | FIRST="$FIRST" LAST="$LAST" STEP="$STEP" node -e '
  const key = (v) => v.split(".").map(Number);
  const cmp = (a, b) => { const x = key(a), y = key(b); for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i]; return 0; };
  const all = JSON.parse(require("fs").readFileSync(0, "utf8")).filter((v) => /^\d+\.\d+\.\d+$/.test(v)).sort(cmp);
  const last = process.env.LAST || all.at(-1);
  const range = all.filter((v) => cmp(v, process.env.FIRST) >= 0 && cmp(v, last) <= 0);
  const step = Number(process.env.STEP);
  console.log(range.filter((v, i) => i % step === 0 || i === range.length - 1).join("\n"));
')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in $releases; do
  [ -s "$CACHE/$v.json" ] && continue
  rm -rf "${work:?}"/*
  # From 2.1.113 the release is a binary in the platform package; before, cli.js.
  if (cd "$work" && npm pack --silent "@anthropic-ai/claude-code-linux-x64@$v" >/dev/null 2>&1); then
    tar -xzf "$work"/*.tgz -C "$work" package/claude
    bin="$work/package/claude"
  elif (cd "$work" && npm pack --silent "@anthropic-ai/claude-code@$v" >/dev/null 2>&1) && tar -xzf "$work"/*.tgz -C "$work" package/cli.js 2>/dev/null; then
    bin="$work/package/cli.js"
  else
    echo "$v: could not download it; skipped" >&2
    continue
  fi
  if node crates/store/data/extract-settings-schema.mjs "$bin" >"$CACHE/$v.json.tmp"; then
    mv "$CACHE/$v.json.tmp" "$CACHE/$v.json"
    echo "$v: read" >&2
  else
    rm -f "$CACHE/$v.json.tmp"
    echo "$v: the schema could not be read; skipped" >&2
  fi
done

# One run per key and rule: the releases read in a row that give the key that same rule.
CACHE="$CACHE" node -e '
  const fs = require("fs");
  const key = (v) => v.split(".").map(Number);
  const cmp = (a, b) => { const x = key(a), y = key(b); for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i]; return 0; };
  const dir = process.env.CACHE;
  const releases = fs.readdirSync(dir).filter((f) => /^\d+\.\d+\.\d+\.json$/.test(f)).map((f) => f.slice(0, -5)).sort(cmp);
  const keys = {};
  releases.forEach((v, i) => {
    const { keys: rules } = JSON.parse(fs.readFileSync(`${dir}/${v}.json`, "utf8"));
    for (const [name, rule] of Object.entries(rules)) {
      const runs = (keys[name] ??= []);
      const last = runs.at(-1);
      const text = JSON.stringify(rule);
      if (last && last.to === releases[i - 1] && JSON.stringify(last.rule) === text) last.to = v;
      else runs.push({ from: v, to: v, rule });
    }
  });
  const sorted = Object.fromEntries(Object.keys(keys).sort().map((k) => [k, keys[k]]));
  const lines = Object.entries(sorted).map(([k, runs]) => `  ${JSON.stringify(k)}: [\n${runs.map((r) => `    ${JSON.stringify(r)}`).join(",\n")}\n  ]`);
  process.stdout.write(`{\n "releases": ${JSON.stringify(releases)},\n "keys": {\n${lines.join(",\n")}\n }\n}\n`);
' >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "wrote $OUT" >&2
