#!/usr/bin/env bash
# The one command that runs every test: `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
need_tool git git
need_tool python3 python3   # builds the conformance fixtures (testdata/conformance/make_fixtures.py)
need_tool node nodejs
need_debs "${TAURI_BUILD_DEBS[@]}"   # the workspace includes the desktop shell

# The UI is built first: the desktop shell embeds ui/dist.
npm run --silent build:ui

cargo test --workspace --locked "$@"

# End to end in a browser: the built UI in Debian's Chromium (driven by playwright-core)
# against a real `mneme serve` on a fixture home. `npm run e2e` also refreshes the screenshots.
need_tool chromium chromium
cargo build --locked -q -p mneme
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/run.mjs

# End to end on the desktop: the real Tauri window under Xvfb, driven through tauri-driver and
# WebKitWebDriver.
need_debs xvfb xauth webkit2gtk-driver
command -v tauri-driver >/dev/null 2>&1 || cargo install tauri-driver --version '^2' --locked -q
cargo build --locked -q -p mneme-app --features tauri/custom-protocol
xvfb-run -a -s "-screen 0 1280x800x24" \
  cargo test --locked -q -p mneme-app --features tauri/custom-protocol --test window -- --ignored
