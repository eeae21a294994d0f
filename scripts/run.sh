#!/usr/bin/env bash
# The one command that runs the app: `npm start`.
#
# With no arguments it starts Mneme's browser mode on your real ~/.claude: it builds the UI if
# needed, starts `mneme serve` on 127.0.0.1 and prints the URL to open (the token in it is
# required). The desktop window arrives with the Tauri shell. With arguments it runs the
# `mneme` command line instead: `npm start -- projects`, `npm start -- context --cwd ~/code/app`.
set -euo pipefail
# npm runs scripts from the package folder; INIT_CWD is where the user typed the command.
here="${INIT_CWD:-$(pwd)}"
cd "$(dirname "$0")/.."
. scripts/common.sh
repo="$(pwd)"
cargo build --release --locked -q -p mneme
MNEME="$CARGO_TARGET_DIR/release/mneme"
if [ $# -gt 0 ]; then
  cd "$here"
  exec "$MNEME" "$@"
fi
need_tool node nodejs
if [ ! -f ui/dist/index.html ] || [ -n "$(find ui/src ui/index.html ui/package.json -newer ui/dist/index.html -print -quit)" ]; then
  echo "mneme: building the UI…" >&2
  npm run --silent build:ui >&2
fi
cd "$here"
exec "$MNEME" serve --ui-dir "$repo/ui/dist"
