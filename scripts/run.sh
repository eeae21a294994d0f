#!/usr/bin/env bash
# The one command that runs the app: `npm start`. Until the desktop shell lands this is the
# `mneme` overview of the current folder on the real ~/.claude; extra arguments go to mneme
# (`npm start -- projects`, `npm start -- context --cwd ~/code/app`).
set -euo pipefail
# npm runs scripts from the package folder; INIT_CWD is where the user typed the command.
here="${INIT_CWD:-$(pwd)}"
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo build --release --locked -q -p mneme
cd "$here"
exec "$CARGO_TARGET_DIR/release/mneme" "$@"
