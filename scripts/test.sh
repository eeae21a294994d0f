#!/usr/bin/env bash
# The one command that runs every test: `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
need_tool git git
# The run ends with the install test (scripts/test-dist.sh), which installs and purges the
# packages with apt-get: say so now rather than after half an hour of tests.
[ "$(id -u)" = 0 ] || { echo "mneme: npm test ends by installing and removing Mneme's packages with apt-get: run it as root (sudo npm test) on a machine it may change" >&2; exit 1; }
# One commit stamped into every binary this run builds (scripts/build_stamp.rs), so the packages
# the install test makes from them agree even if HEAD moves during the run.
MNEME_COMMIT="${MNEME_COMMIT:-$(git rev-parse --short=12 HEAD)}"
export MNEME_COMMIT
# A test run gains nothing from incremental caches (each clone rebuilds its own crates) and they
# grow by gigabytes a run.
export CARGO_INCREMENTAL=0
need_tool python3 python3   # builds the conformance fixtures (testdata/conformance/make_fixtures.py)
# Old builds of the workspace's own crates pile up in the shared target dir run after run.
python3 scripts/prune-target.py "$CARGO_TARGET_DIR" 8 || true
need_tool node nodejs
need_debs "${TAURI_BUILD_DEBS[@]}" libdbus-1-dev   # the desktop shell; the OS keyring (Secret Service over D-Bus)
# The browser and desktop end-to-end tests at the end need these: installed (or asked for) now,
# so a missing one fails in the first minute, not after twenty minutes of tests.
need_tool chromium chromium
need_debs xvfb xauth webkit2gtk-driver dbus   # dbus: the desktop test of a second launch runs its own session bus
# A project on an exFAT drive (a USB stick or SD card): the engine's tests mount a real exFAT image
# (exfatprogs formats it, exfat-fuse mounts it through a loop device) as root.
need_debs exfat-fuse exfatprogs
need_debs tzdata   # the tz database: the engine's local-time tests date across Europe/Berlin's summer-time change

# The UI is built first: the desktop shell embeds ui/dist. It must type-check (svelte-check
# over every .svelte and .ts file) and its pure helpers pass their unit tests (node's runner).
npm run --silent build:ui
npm run --silent --prefix ui check
node --test ui/tests/

# Real parts for the engine's tests: Claude Code itself (from the npm registry: 2.1.197 for the
# Claude Code CLI provider, every matrix release for the conformance matrix), a throwaway PostgreSQL cluster for the team sync server, and a
# private D-Bus session with gnome-keyring for everything that keeps secrets in the OS keyring.
# Each is required: a missing one fails the run instead of skipping tests.
MNEME_CLAUDE_BIN="$(scripts/claude-code.sh)"
# Every release in the version matrix (crates/core/data/claude-code-versions.txt), for
# crates/cli/tests/versions.rs: each fixture is run through each real binary at test time.
MNEME_CLAUDE_BINS="$(scripts/claude-code.sh --matrix)"
export MNEME_CLAUDE_BIN MNEME_CLAUDE_BINS MNEME_REQUIRE_CLAUDE=1
eval "$(scripts/pg.sh)"
export MNEME_REQUIRE_PG=1
trap 'scripts/pg.sh stop >/dev/null 2>&1 || true' EXIT

# Every dependency's licence allows MIT distribution (allow-list in deny.toml). cargo-deny is
# built once into a cache of its own, like tauri-driver below.
[ -x "$HOME/.cache/mneme/tools/bin/cargo-deny" ] || CARGO_TARGET_DIR="$HOME/.cache/mneme/tools/build" \
  cargo install --locked -q cargo-deny --version '^0.20' --root "$HOME/.cache/mneme/tools"
PATH="$HOME/.cache/mneme/tools/bin:$PATH" cargo deny --locked check licenses
# The hostile-input properties (tests/hostile.rs in each crate) draw from one fixed seed here,
# so a commit passes or fails the same way every run; hunting with fresh seeds and more cases
# is a separate, deliberate run (ARCHITECTURE.md, "Hostile input").
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261202}"
scripts/with-keyring.sh cargo test --workspace --locked "$@"
# Unreadable files reported, not read: file permissions do not bind root, so these tests run as
# an unprivileged user (`nobody` when this runs as root).
scripts/unprivileged-tests.sh
# Mneme's dream lock racing Claude Code's own lock code (cut from the 2.1.197 binary), alone:
# the race is about timing, so it runs while nothing else loads the cores.
cargo test --locked -q -p mneme --test dream_interop -- --ignored racing
# Sign-in and API-key storage against the real keyring (ignored in plain `cargo test`, which may
# run where no Secret Service exists).
scripts/with-keyring.sh cargo test --locked -q -p mneme-team -p mneme-model -p mneme-api -- --ignored keyring
scripts/with-keyring.sh cargo test --locked -q -p mneme --test provider -- --ignored keyring

# End to end in a browser: the built UI in Debian's Chromium (driven by playwright-core)
# against a real `mneme serve` on a fixture home. `npm run e2e` also refreshes the screenshots.
# It re-runs itself under scripts/with-keyring.sh (team sign-in keeps its token in the keyring)
# and starts the real team server binary.
cargo build --locked -q -p mneme -p mneme-team-server
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" MNEME_SERVER_BIN="$CARGO_TARGET_DIR/debug/mneme-server" \
  E2E_NO_SCREENSHOTS=1 node e2e/run.mjs
# Every screen on each real-world repository (testdata/realworld) and a first run on an empty
# home, with axe-core's WCAG 2 A/AA rules and the graph layout checked on each.
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/screens.mjs
# Agent memory in the browser: three agents (user, project, a plugin's), each folder and section.
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/agents.mjs
# The open project's folder removed, renamed and (as root) on a drive unmounted while the app is open.
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/vanish.mjs
# A big home (10,000 memories, 300 projects, a 2 MB CLAUDE.md): every row reachable, the counts right.
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/scale.mjs
# Projects by keyboard: rows by arrow keys and End, the merge plan keeping Tab, Escape putting away
# the plan and then the panel.
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/projects-keyboard.mjs
# The Projects screen while one project's drive hangs (as root: a real exFAT FUSE drive whose
# daemon is stopped): the list comes, that project is marked and offers nothing to open or merge.
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/hung-drive-projects.mjs
# The Dreams and Inbox screens when the saved mode cannot be read: the error, and the mode
# chooser that mends it.
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/mode-unread.mjs
# A Cowork session's managed files its own account could have written: marked unverified, with who
# could have changed them, and not called the organization's policy.
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/unverified-managed.mjs
# A rename stopped between moving the file and its index line: listed once, in plain words, and mended.
MNEME_BIN="$CARGO_TARGET_DIR/debug/mneme" E2E_NO_SCREENSHOTS=1 node e2e/stopped-rename.mjs

# End to end on the desktop: the real Tauri window under Xvfb, driven through tauri-driver and
# WebKitWebDriver. scripts/with-xvfb.sh lets Xvfb choose a free display itself, so a second
# test run at the same time gets another one.
need_tauri_driver
cargo build --locked -q -p mneme-app --features tauri/custom-protocol
scripts/with-xvfb.sh \
  cargo test --locked -q -p mneme-app --features tauri/custom-protocol --test window -- --ignored

# The packages as people install them, from the dev build compiled above (a release build does
# not fit in CI's time on two cores; docs/install.md): the app's .deb installed with apt-get and
# started from its desktop entry under Xvfb, its .rpm's files, the server's .deb and /healthz,
# each purged afterwards.
scripts/test-dist.sh --debug
