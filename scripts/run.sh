#!/usr/bin/env bash
# The one command that runs the app: `npm start`.
#
# With no arguments: where a display exists it opens the Mneme desktop app; without one it
# starts the browser mode (`mneme serve` on 127.0.0.1) and prints the URL to open (the token in
# it is required). Both work on your real ~/.claude. With arguments it runs the `mneme` command
# line instead: `npm start -- projects`, `npm start -- context --cwd ~/code/app`.
set -euo pipefail
# npm runs scripts from the package folder; INIT_CWD is where the user typed the command.
here="${INIT_CWD:-$(pwd)}"
cd "$(dirname "$0")/.."
. scripts/common.sh
repo="$(pwd)"

if [ $# -gt 0 ]; then
  cargo build --release --locked -q -p mneme
  cd "$here"
  exec "$CARGO_TARGET_DIR/release/mneme" "$@"
fi

need_tool node nodejs
if [ ! -f ui/dist/index.html ] || [ -n "$(find ui/src ui/index.html ui/package.json ui/package-lock.json ui/vite.config.ts ui/svelte.config.js -newer ui/dist/index.html -print -quit 2>/dev/null)" ]; then
  echo "mneme: building the UI…" >&2
  npm run --silent build:ui >&2
fi

if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  need_debs "${TAURI_BUILD_DEBS[@]}"
  [ -x "$CARGO_TARGET_DIR/release/mneme-app" ] || echo "mneme: building the desktop app (the first build takes 15 minutes or more on 2 cores)…" >&2
  cargo build --release --locked -q -p mneme-app --features tauri/custom-protocol
  cd "$here"
  exec "$CARGO_TARGET_DIR/release/mneme-app" "$here"
fi

[ -x "$CARGO_TARGET_DIR/release/mneme" ] || echo "mneme: building mneme (the first build takes 10 minutes or more on 2 cores)…" >&2
cargo build --release --locked -q -p mneme
cd "$here"
# --scheduler: extraction, auto dream and team sync run while the page is served, as they do in
# the desktop app (it steps aside when a `mneme daemon` already runs them).
exec "$CARGO_TARGET_DIR/release/mneme" serve --scheduler --ui-dir "$repo/ui/dist"
