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
#
# `scripts/dist.sh --debug` packages the dev build instead, into $CARGO_TARGET_DIR/debug/bundle/:
# the same cargo commands `npm test` runs (so after `npm test` nothing is compiled again), the
# same bundler configuration and packagers. A release build takes close to an hour on two cores,
# which CI's time limit cannot hold on top of `npm test`; the dev build lets CI's install test
# (scripts/test-dist.sh --debug, run by `npm test`) check packaging, install and removal anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
profile=release
case "${1:-}" in
  "") ;;
  --debug) profile=debug ;;
  *) echo "dist: unknown argument '$1' (use: scripts/dist.sh [--debug])" >&2; exit 2 ;;
esac
need_tool node nodejs
need_tool python3 python3
need_debs "${TAURI_BUILD_DEBS[@]}" libdbus-1-dev dpkg-dev
export CARGO_INCREMENTAL=0
# One commit for every binary of this run, even if HEAD moves during the (long) build.
MNEME_COMMIT="${MNEME_COMMIT:-$(git rev-parse --short=12 HEAD)}"
export MNEME_COMMIT

# The Tauri CLI (npm's prebuilt binary, pinned in package-lock.json).
npm ci --no-audit --no-fund --silent
out="$CARGO_TARGET_DIR/$profile"
triple="$(rustc -vV | sed -n 's/^host: //p')"
mkdir -p src-tauri/dist
if [ "$profile" = release ]; then
  # The UI the app embeds.
  npm run --silent build:ui
  # The bundler runs cargo with MACOSX_DEPLOYMENT_TARGET set from tauri.conf.json (on every
  # system), and the C build scripts rebuild when it changes; the same value here keeps one set of
  # release artifacts instead of rebuilding them twice a run.
  MACOSX_DEPLOYMENT_TARGET="$(python3 -c 'import json; print(json.load(open("src-tauri/tauri.conf.json"))["bundle"]["macOS"]["minimumSystemVersion"])')"
  export MACOSX_DEPLOYMENT_TARGET
  # The command-line and server binaries first: the app bundle carries `mneme` as a sidecar
  # (copied at once, before another build sharing the target dir can replace it; checked below).
  cargo build --release --locked -q -p mneme -p mneme-team-server
  cp "$out/mneme" "src-tauri/dist/mneme-$triple"
else
  # Rebuilding ui/ would give its files new times and make cargo recompile the app, so the UI
  # `npm test` built is used; it is built here only when there is none.
  [ -f ui/dist/index.html ] || npm run --silent build:ui
  # Exactly scripts/test.sh's two commands: one command over all three packages would unify
  # their features differently and rebuild the dependencies.
  cargo build --locked -q -p mneme -p mneme-team-server
  cp "$out/mneme" "src-tauri/dist/mneme-$triple"
  cargo build --locked -q -p mneme-app --features tauri/custom-protocol
fi

# What each package must carry besides Mneme's own licence: every linked dependency's notice.
python3 scripts/dependency-notices.py src-tauri/dist/DEPENDENCY_NOTICES.md mneme-app mneme --ui
python3 scripts/dependency-notices.py "$out/mneme-server.DEPENDENCY_NOTICES.md" mneme-team-server

# The sidecar is named here rather than in tauri.conf.json because tauri-build insists that every
# externalBin exists at compile time, which would break every plain `cargo build` of the app.
sidecar='{"bundle":{"externalBin":["dist/mneme"]}}'
if [ "$profile" = release ]; then
  # The app: Tauri builds it (release profile, tauri/custom-protocol) and bundles it.
  node_modules/.bin/tauri build --ci --bundles deb,rpm --config "$sidecar" -- --locked
else
  # The app cargo built above, bundled as it is: no binary patching (it only records the bundle
  # type for Tauri's updater, which Mneme does not use), so the packaged binary is byte for byte
  # the one the desktop window test ran.
  node_modules/.bin/tauri bundle --ci --debug --no-binary-patching --bundles deb,rpm --config "$sidecar"
  # The bundler's unpacked copy of the .deb's tree (about 700 MB of unstripped binaries).
  rm -rf "$out"/bundle/deb/Mneme_*_amd64 "$out"/bundle/rpm/Mneme-*.x86_64
fi

# Both binaries in the packages must carry this run's commit. In a target dir shared with other
# builds (one checkout, several people), another cargo run can replace them mid-run.
"src-tauri/dist/mneme-$triple" --version | grep -q "(commit $MNEME_COMMIT)" && grep -qaF "$MNEME_COMMIT" "$out/mneme-app" || {
  echo "dist: $out/mneme or mneme-app is not the build of commit $MNEME_COMMIT (another build replaced it during this run); run it again" >&2
  exit 1
}

# The server's .deb from the binary built above (cargo-deb, cached like cargo-deny in test.sh).
# cargo-deb reads its asset paths under target/release/ from the chosen profile's folder. With
# the dev profile it warns that this will be refused "in the future"; 3.8 builds it, hence the pin.
tools="$HOME/.cache/mneme/tools"
[ -x "$tools/bin/cargo-deb" ] || CARGO_TARGET_DIR="$tools/build" \
  cargo install --locked -q cargo-deb --version '=3.8.0' --root "$tools"
mkdir -p "$out/bundle/server"
rm -f "$out"/bundle/server/*.deb
if [ "$profile" = release ]; then deb_flags=(--profile release); else deb_flags=(--profile dev --fast); fi
"$tools/bin/cargo-deb" -p mneme-team-server "${deb_flags[@]}" --no-build --no-strip -o "$out/bundle/server/"

echo "mneme dist: packages built:" >&2
ls -1 "$out"/bundle/deb/*.deb "$out"/bundle/rpm/*.rpm "$out"/bundle/server/*.deb >&2
if [ "$profile" = release ]; then
  # The server image's build context: the Dockerfile, the binary and an empty state folder.
  image="$out/bundle/server-image"
  rm -rf "$image" && mkdir -p "$image/state"
  cp crates/team-server/Dockerfile "$out/mneme-server" "$image/"
  echo "mneme dist: container build context: $image (docker build -t mneme-server $image)" >&2
fi
