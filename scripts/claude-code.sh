#!/usr/bin/env bash
# Installs real Claude Code releases from the npm registry into $HOME/.cache/mneme/claude-code,
# only when they are not there yet.
#
#   scripts/claude-code.sh            the release the model/agent tests pin (2.1.197): prints its binary
#   scripts/claude-code.sh X.Y.Z      that release: prints its binary
#   scripts/claude-code.sh --matrix   every release in crates/core/data/claude-code-versions.txt:
#                                     prints V=PATH,V=PATH for MNEME_CLAUDE_BINS
#
# Tests that run the real CLI find it through MNEME_CLAUDE_BIN / MNEME_CLAUDE_BINS:
#
#   MNEME_CLAUDE_BIN="$(scripts/claude-code.sh)" cargo test -p mneme-model
#
# npm 11 skips the package's postinstall (it only links bin/claude.exe); the binary itself comes
# from the platform package (@anthropic-ai/claude-code-<os>-<arch>), an optional dependency npm
# picks for this machine, so it is used directly. Releases up to 2.1.112 have no binary: their
# cli.js needs Node 18 or later on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

PINNED="2.1.197"
DIR="${HOME}/.cache/mneme/claude-code"

find_bin() { # find_bin VERSION
  local candidate
  # From 2.1.113 a platform binary; up to 2.1.112 the package's own cli.js, run by Node through
  # the `claude` link npm makes for it (its first line is `#!/usr/bin/env node`).
  for candidate in "$DIR/$1"/node_modules/@anthropic-ai/claude-code-*/claude "$DIR/$1/node_modules/.bin/claude"; do
    if [ -x "$candidate" ] && "$candidate" --version 2>/dev/null | grep -q "^$1 "; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

install() { # install VERSION: prints the binary
  local v="$1"
  if ! find_bin "$v"; then
    command -v npm >/dev/null || { echo "npm is needed to install Claude Code $v; install Node.js 18 or later" >&2; exit 1; }
    mkdir -p "$DIR/$v"
    [ -f "$DIR/$v/package.json" ] || printf '{"name":"mneme-claude-code","private":true}\n' >"$DIR/$v/package.json"
    npm install --prefix "$DIR/$v" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$v" >&2
    find_bin "$v" || { echo "Claude Code $v installed into $DIR/$v, but no binary for this platform was found there" >&2; exit 1; }
  fi
}

case "${1:-}" in
  --matrix)
    pairs=()
    while read -r v; do
      v="${v%%#*}"; v="$(echo "$v" | tr -d '[:space:]')"
      [ -n "$v" ] || continue
      pairs+=("$v=$(install "$v")")
    done <crates/core/data/claude-code-versions.txt
    (IFS=,; echo "${pairs[*]}")
    ;;
  "") install "$PINNED" ;;
  *) install "$1" ;;
esac
