#!/usr/bin/env bash
# Installs the Claude Code release Mneme is exact against (2.1.197) from the npm registry into
# $HOME/.cache/mneme/claude-code, only when it is not there yet, and prints the native binary's path.
# Tests that run the real CLI find it through MNEME_CLAUDE_BIN:
#
#   MNEME_CLAUDE_BIN="$(scripts/claude-code.sh)" cargo test -p mneme-model
#
# npm 11 skips the package's postinstall (it only links bin/claude.exe); the binary itself comes
# from the platform package (@anthropic-ai/claude-code-<os>-<arch>), an optional dependency npm
# picks for this machine, so it is used directly.
set -euo pipefail

VERSION="2.1.197"
DIR="${HOME}/.cache/mneme/claude-code"

find_bin() {
  local candidate
  for candidate in "$DIR"/node_modules/@anthropic-ai/claude-code-*/claude; do
    if [ -x "$candidate" ] && "$candidate" --version 2>/dev/null | grep -q "^$VERSION "; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! find_bin; then
  command -v npm >/dev/null || { echo "npm is needed to install Claude Code $VERSION; install Node.js 18 or later" >&2; exit 1; }
  mkdir -p "$DIR"
  [ -f "$DIR/package.json" ] || printf '{"name":"mneme-claude-code","private":true}\n' >"$DIR/package.json"
  npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$VERSION" >&2
  find_bin || { echo "Claude Code $VERSION installed into $DIR, but no binary for this platform was found there" >&2; exit 1; }
fi
