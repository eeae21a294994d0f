#!/usr/bin/env bash
# `npm run dist`: the packages a person or a team installs, from a release build.
#
#   the desktop app   .deb and .rpm (Tauri's bundler): the window, its desktop entry and icon,
#                     the `mneme` command line beside it, licence notices
#   mneme-server      .deb (cargo-deb): the binary and its systemd unit; and the build context
#                     of its container image (crates/team-server/Dockerfile + the binary)
#
# Everything lands under $CARGO_TARGET_DIR/release/bundle/ (printed at the end). The version is
# the workspace's (Cargo.toml), the commit stamped into each binary is HEAD's (build.rs).
# AppImage (its bundler downloads linuxdeploy from GitHub), .dmg and .msi are configured in
# src-tauri/tauri.conf.json but built only on their own systems: docs/install.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
need_tool node nodejs
need_tool python3 python3
need_debs "${TAURI_BUILD_DEBS[@]}" libdbus-1-dev dpkg-dev
export CARGO_INCREMENTAL=0
# One commit for every binary of this run, even if HEAD moves during the (long) build.
MNEME_COMMIT="${MNEME_COMMIT:-$(git rev-parse --short=12 HEAD)}"
export MNEME_COMMIT

# The UI the app embeds, and the Tauri CLI (npm's prebuilt binary, pinned in package-lock.json).
npm run --silent build:ui
npm ci --no-audit --no-fund --silent

# The bundler runs cargo with MACOSX_DEPLOYMENT_TARGET set from tauri.conf.json (on every
# system), and the C build scripts rebuild when it changes; the same value here keeps one set of
# release artifacts instead of rebuilding them twice a run.
MACOSX_DEPLOYMENT_TARGET="$(python3 -c 'import json; print(json.load(open("src-tauri/tauri.conf.json"))["bundle"]["macOS"]["minimumSystemVersion"])')"
export MACOSX_DEPLOYMENT_TARGET
# The command-line and server binaries first: the app bundle carries `mneme` as a sidecar.
cargo build --release --locked -q -p mneme -p mneme-team-server
release="$CARGO_TARGET_DIR/release"
triple="$(rustc -vV | sed -n 's/^host: //p')"
mkdir -p src-tauri/dist
cp "$release/mneme" "src-tauri/dist/mneme-$triple"

# What each package must carry besides Mneme's own licence: every linked dependency's notice.
python3 scripts/dependency-notices.py src-tauri/dist/DEPENDENCY_NOTICES.md mneme-app mneme --ui
python3 scripts/dependency-notices.py "$release/mneme-server.DEPENDENCY_NOTICES.md" mneme-team-server

# The app: Tauri builds it (release profile, tauri/custom-protocol) and bundles it. The sidecar is
# named here rather than in tauri.conf.json because tauri-build insists that every externalBin
# exists at compile time, which would break every plain `cargo build` of the app.
node_modules/.bin/tauri build --ci --bundles deb,rpm \
  --config '{"bundle":{"externalBin":["dist/mneme"]}}' -- --locked

# The server's .deb from the binary built above (cargo-deb, cached like cargo-deny in test.sh).
tools="$HOME/.cache/mneme/tools"
[ -x "$tools/bin/cargo-deb" ] || CARGO_TARGET_DIR="$tools/build" \
  cargo install --locked -q cargo-deb --version '^3' --root "$tools"
mkdir -p "$release/bundle/server"
"$tools/bin/cargo-deb" -p mneme-team-server --no-build --no-strip -o "$release/bundle/server/"

# The server image's build context: the Dockerfile, the binary and an empty state folder.
image="$release/bundle/server-image"
rm -rf "$image" && mkdir -p "$image/state"
cp crates/team-server/Dockerfile "$release/mneme-server" "$image/"

echo "mneme dist: packages built:" >&2
ls -1 "$release"/bundle/deb/*.deb "$release"/bundle/rpm/*.rpm "$release"/bundle/server/*.deb >&2
echo "mneme dist: container build context: $image (docker build -t mneme-server $image)" >&2
