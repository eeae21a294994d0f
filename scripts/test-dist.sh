#!/usr/bin/env bash
# `npm run test:dist`: the packages as people install them. Builds them (`npm run dist`), then,
# on this machine, as root:
#   the app's .deb   apt-get install ./…deb; the installed window, started from its desktop
#                    entry on a fixture home, shows "What Claude sees" (read over WebDriver)
#                    equal to the installed `mneme context`, and About names the build
#                    (src-tauri/tests/installed.rs); screenshot in docs/screenshots/;
#                    apt-get purge leaves no file behind outside the user's data
#   the app's .rpm   carries the same files as the .deb (rpm -qlp)
#   mneme-server     its .deb installed; the unit's ExecStart run as systemd runs it (the
#                    mneme-server user, the settings file, UMask) answers /healthz and keeps a
#                    0600 database; purge removes user, state and settings
#
# `--debug` does the same with the dev build `npm test` has just compiled (`scripts/dist.sh
# --debug`: same bundler configuration, nothing compiled again); `npm test` ends with it, so CI
# runs it. `--no-build` tests the packages the last dist left (after a change to this script).
#
# It installs and removes packages, so it runs as root on a machine it may change, and puts the
# machine back as it found it: whatever happens, what it installed is purged and the server it
# started is stopped (an EXIT trap); the file lists before install and after purge must match.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "test-dist: run as root (sudo npm run test:dist): it installs and removes packages with apt-get" >&2; exit 1; }
. scripts/common.sh
step() { echo "test-dist: $* ($((SECONDS / 60))m$((SECONDS % 60))s)" >&2; }
fail() { echo "test-dist: FAIL: $*" >&2; exit 1; }
profile=release build=1
for arg in "$@"; do
  case "$arg" in
    --debug) profile=debug ;;
    --no-build) build=0 ;;
    *) echo "test-dist: unknown argument '$arg' (use: scripts/test-dist.sh [--debug] [--no-build])" >&2; exit 2 ;;
  esac
done

# Prerequisites it cannot install itself, each with what to do.
command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 \
  || fail "apt-get and dpkg-deb are missing: the install test needs a Debian-based system (it installs the .deb)"
# The packages install machine-wide, so two test runs on one machine take turns here (the
# second waits) instead of one purging what the other is checking.
exec 9>/var/lock/mneme-test-dist.lock
if ! flock -n 9; then
  step "another install test is running on this machine; waiting for it"
  flock 9
fi
for pkg in mneme mneme-server; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then
    fail "$pkg is already installed here; the test installs its own build and must leave the machine as it found it. Remove it first: apt-get purge -y $pkg"
  fi
done
need_tool python3 python3
need_tool setpriv util-linux
need_debs xvfb xauth webkit2gtk-driver rpm binutils
need_tauri_driver
export CARGO_INCREMENTAL=0
# One commit stamped into every binary (scripts/build_stamp.rs), as in scripts/dist.sh and
# scripts/test.sh; the same value keeps cargo from rebuilding them for the installed test below.
MNEME_COMMIT="${MNEME_COMMIT:-$(git rev-parse --short=12 HEAD)}"
export MNEME_COMMIT

# What this run installs or starts is undone on any exit, failures included.
work="$(mktemp -d /tmp/mneme-test-dist.XXXXXX)"
app_installed=0 server_installed=0 server_pid=
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  if [ "$app_installed" = 1 ]; then DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mneme >/dev/null 2>&1 || true; fi
  if [ "$server_installed" = 1 ]; then DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mneme-server >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if [ "$build" = 1 ]; then
  step "building the packages ($profile)"
  if [ "$profile" = release ]; then npm run --silent dist; else bash scripts/dist.sh --debug; fi
  step "packages built"
fi
out="$CARGO_TARGET_DIR/$profile"
version="$(cargo metadata --no-deps --format-version 1 --locked | python3 -c \
  'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mneme-app"))')"
deb="$out/bundle/deb/Mneme_${version}_amd64.deb"
rpm="$out/bundle/rpm/Mneme-${version}-1.x86_64.rpm"
server_deb="$(ls "$out"/bundle/server/mneme-server_"${version}"*_amd64.deb 2>/dev/null || true)"
dist_cmd="npm run dist"; [ "$profile" = release ] || dist_cmd="scripts/dist.sh --debug"
for f in "$deb" "$rpm" "$server_deb"; do [ -n "$f" ] && [ -f "$f" ] || fail "${f:-the server .deb} was not built (run $dist_cmd)"; done
[ "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" = "mneme $version" ] || fail "the app's .deb is not mneme $version"
# cargo-deb adds the Debian revision (-1).
[ "$(dpkg-deb -f "$server_deb" Version)" = "$version-1" ] || fail "the server's .deb is not version $version-1"
ls -l "$deb" "$rpm" "$server_deb" >&2

# Every file (not folder) each package installs, for the comparisons below.
deb_files() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { sub(/^\.?\/?/, "/", $6); print $6 }' | sort; }
deb_files "$deb" > "$work/deb-files"
rpm -qlp "$rpm" | sort > "$work/rpm-all"
# rpm -ql lists folders too; keep the paths the .deb has as files, and report any extra file.
comm -23 "$work/deb-files" "$work/rpm-all" > "$work/only-deb"
[ ! -s "$work/only-deb" ] || fail "in the .deb but not the .rpm: $(tr '\n' ' ' < "$work/only-deb")"
for f in /usr/bin/mneme-app /usr/bin/mneme /usr/share/applications/Mneme.desktop \
         /usr/share/icons/hicolor/128x128/apps/mneme-app.png \
         /usr/share/doc/mneme/THIRD_PARTY_NOTICES.md /usr/share/doc/mneme/DEPENDENCY_NOTICES.md \
         /usr/share/doc/mneme/CHANGELOG.md; do
  grep -qx "$f" "$work/deb-files" || fail "the .deb does not install $f"
done
step "the .deb and the .rpm carry the same $(wc -l < "$work/deb-files") files"

# What exists outside the user's data (homes, /tmp) and package-manager bookkeeping, so that an
# install and a purge can be compared with nothing.
snapshot() {
  find /usr /etc /opt /var /srv -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache \
    -o -path /var/log -o -path /var/tmp -o -path /var/lib/systemd -o -path /var/lib/ucf \
    -o -path /var/lib/postgresql -o -path /etc/ld.so.cache \) -prune -o -print 2>/dev/null | sort
}
snapshot > "$work/before"

step "installing $(basename "$deb")"
app_installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >/dev/null
[ "$(dpkg-query -W -f='${Version}' mneme)" = "$version" ] || fail "dpkg does not report mneme $version"
step "the installed window (WebDriver, Xvfb)"
entry=/usr/share/applications/Mneme.desktop
# The release packages' screenshot is the one in docs/; the dev build's (CI) stays beside its packages.
shot="$PWD/docs/screenshots/installed-app.png"; [ "$profile" = release ] || shot="$out/bundle/installed-app.png"
MNEME_DESKTOP_ENTRY="$entry" MNEME_PACKAGE_VERSION="$version" MNEME_INSTALLED_SHOT="$shot" \
  xvfb-run -a -s "-screen 0 1280x800x24" \
  cargo test --locked -q -p mneme-app --features tauri/custom-protocol --test installed -- --ignored
step "purging mneme"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mneme >/dev/null
app_installed=0
snapshot > "$work/after"
if ! diff -u "$work/before" "$work/after" >&2; then fail "apt-get purge mneme left the files above"; fi

# The server. Its binary needs only what the distroless image (Dockerfile) has: glibc and libgcc.
needed="$(objdump -p "$out/mneme-server" | awk '/NEEDED/ { print $2 }' | sort | tr '\n' ' ')"
for lib in $needed; do
  case "$lib" in libc.so.6|libm.so.6|libgcc_s.so.1|ld-linux-x86-64.so.2|libpthread.so.0|libdl.so.2|librt.so.1) ;;
    *) fail "mneme-server needs $lib, which gcr.io/distroless/cc-debian12 does not have" ;; esac
done
step "mneme-server links only $needed"

snapshot > "$work/before"
step "installing $(basename "$server_deb")"
server_installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$server_deb" >/dev/null
unit="$(dpkg -L mneme-server | grep '/systemd/system/mneme-server.service$')" || fail "no systemd unit installed"
conf=/etc/mneme-server/mneme-server.env
getent passwd mneme-server | grep -q ':/var/lib/mneme-server:/usr/sbin/nologin$' || fail "no mneme-server system user"
[ "$(stat -c '%a %U:%G' /var/lib/mneme-server)" = "700 mneme-server:mneme-server" ] || fail "/var/lib/mneme-server: $(stat -c '%a %U:%G' /var/lib/mneme-server)"
[ "$(stat -c '%a %U:%G' "$conf")" = "640 root:mneme-server" ] || fail "$conf: $(stat -c '%a %U:%G' "$conf")"
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify "$unit" >&2 || fail "systemd-analyze rejects $unit"
fi
# As an admin would: the settings file says where to listen (port 0 for the test: the server
# binds a free port itself and logs it, so no port is picked and released before use).
sed -i "s|^MNEME_SERVER_ARGS=.*|MNEME_SERVER_ARGS=--listen 127.0.0.1:0|" "$conf"
# Systemd is not PID 1 here, so the unit's ExecStart runs the way systemd would run it: as
# User=/Group=, with only the EnvironmentFile's variables, $MNEME_SERVER_ARGS split into words,
# UMask=0077, in /. The unit's own lines are read, so a change to the unit is tested.
grep -qx 'User=mneme-server' "$unit" && grep -qx 'UMask=0077' "$unit" && grep -qx "EnvironmentFile=$conf" "$unit" \
  || fail "$unit does not run as mneme-server with UMask=0077 and $conf"
exec_start="$(sed -n 's/^ExecStart=//p' "$unit")"
# The settings file's KEY=value lines, one variable each (a value may hold spaces), as systemd reads them.
mapfile -t env_vars < <(grep -E '^[A-Z_]+=' "$conf")
args_line="$(sed -n 's/^MNEME_SERVER_ARGS=//p' "$conf")"
read -r -a cmd <<< "${exec_start//\$MNEME_SERVER_ARGS/$args_line}"
# The log exists before the server starts: the background job opens it only once it runs, and
# the first read below must not fail on a machine busy enough to run the reader first.
: > "$work/server.log"
(cd / && umask 0077 && exec setpriv --reuid mneme-server --regid mneme-server --init-groups \
  env -i "${env_vars[@]}" "${cmd[@]}") >> "$work/server.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 100); do
  port="$(sed -n 's/.*"message":"listening","addr":"127\.0\.0\.1:\([0-9]*\)".*/\1/p' "$work/server.log" | head -1)"
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "mneme-server stopped"; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/server.log" >&2; fail "mneme-server did not say where it listens within 10 s"; }
for _ in $(seq 100); do
  python3 -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1).status == 200 else 1)" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "mneme-server stopped"; }
  sleep 0.2
done
health="$(python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=2).read().decode())")" \
  || { cat "$work/server.log" >&2; fail "no answer on /healthz"; }
step "mneme-server answers /healthz: $health"
db=/var/lib/mneme-server/mneme-server.db
for f in "$db"*; do
  [ "$(stat -c '%a %U' "$f")" = "600 mneme-server" ] || fail "$f: $(stat -c '%a %U' "$f")"
done
/usr/bin/mneme-server --version | grep -qx "mneme-server $version (commit [0-9a-f]\{12\})" || fail "mneme-server --version: $(/usr/bin/mneme-server --version)"
kill -TERM "$server_pid"; wait "$server_pid" || fail "mneme-server did not stop cleanly on SIGTERM"
server_pid=
step "purging mneme-server"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mneme-server >/dev/null
server_installed=0
getent passwd mneme-server >/dev/null && fail "purge left the mneme-server user"
snapshot > "$work/after"
if ! diff -u "$work/before" "$work/after" >&2; then fail "apt-get purge mneme-server left the files above"; fi
step "passed"
