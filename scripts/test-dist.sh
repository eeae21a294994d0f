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
# It changes the machine (installs and removes packages), so CI runs it on a throwaway one.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
[ "$(id -u)" = 0 ] || { echo "test-dist: run as root (it installs and removes packages with apt-get)" >&2; exit 1; }
need_debs xvfb xauth webkit2gtk-driver rpm binutils
command -v tauri-driver >/dev/null 2>&1 || cargo install tauri-driver --version '^2' --locked -q
export CARGO_INCREMENTAL=0
step() { echo "test-dist: $* ($((SECONDS / 60))m$((SECONDS % 60))s)" >&2; }
fail() { echo "test-dist: FAIL: $*" >&2; exit 1; }

# `--no-build` tests the packages the last `npm run dist` left (after a change to this script).
if [ "${1:-}" != --no-build ]; then
  step "building the packages"
  npm run --silent dist
fi
release="$CARGO_TARGET_DIR/release"
version="$(cargo metadata --no-deps --format-version 1 --locked | python3 -c \
  'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mneme-app"))')"
deb="$release/bundle/deb/Mneme_${version}_amd64.deb"
rpm="$release/bundle/rpm/Mneme-${version}-1.x86_64.rpm"
server_deb="$(ls "$release"/bundle/server/mneme-server_"${version}"*_amd64.deb)"
for f in "$deb" "$rpm" "$server_deb"; do [ -f "$f" ] || fail "$f was not built"; done
[ "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" = "mneme $version" ] || fail "the app's .deb is not mneme $version"
# cargo-deb adds the Debian revision (-1).
[ "$(dpkg-deb -f "$server_deb" Version)" = "$version-1" ] || fail "the server's .deb is not version $version-1"
ls -l "$deb" "$rpm" "$server_deb" >&2

# Every file (not folder) each package installs, for the comparisons below.
deb_files() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { sub(/^\.?\/?/, "/", $6); print $6 }' | sort; }
deb_files "$deb" > /tmp/test-dist.deb-files
rpm -qlp "$rpm" | sort > /tmp/test-dist.rpm-all
# rpm -ql lists folders too; keep the paths the .deb has as files, and report any extra file.
comm -23 /tmp/test-dist.deb-files /tmp/test-dist.rpm-all > /tmp/test-dist.only-deb
[ ! -s /tmp/test-dist.only-deb ] || fail "in the .deb but not the .rpm: $(tr '\n' ' ' < /tmp/test-dist.only-deb)"
for f in /usr/bin/mneme-app /usr/bin/mneme /usr/share/applications/Mneme.desktop \
         /usr/share/icons/hicolor/128x128/apps/mneme-app.png \
         /usr/share/doc/mneme/THIRD_PARTY_NOTICES.md /usr/share/doc/mneme/DEPENDENCY_NOTICES.md \
         /usr/share/doc/mneme/CHANGELOG.md; do
  grep -qx "$f" /tmp/test-dist.deb-files || fail "the .deb does not install $f"
done
step "the .deb and the .rpm carry the same $(wc -l < /tmp/test-dist.deb-files) files"

# What exists outside the user's data (homes, /tmp) and package-manager bookkeeping, so that an
# install and a purge can be compared with nothing.
snapshot() {
  find /usr /etc /opt /var /srv -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache \
    -o -path /var/log -o -path /var/tmp -o -path /var/lib/systemd -o -path /var/lib/ucf \
    -o -path /var/lib/postgresql -o -path /etc/ld.so.cache \) -prune -o -print 2>/dev/null | sort
}
if dpkg-query -W mneme >/dev/null 2>&1; then apt-get purge -y -q mneme >/dev/null; fi
snapshot > /tmp/test-dist.before

step "installing $(basename "$deb")"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >/dev/null
[ "$(dpkg-query -W -f='${Version}' mneme)" = "$version" ] || fail "dpkg does not report mneme $version"
step "the installed window (WebDriver, Xvfb)"
entry=/usr/share/applications/Mneme.desktop
MNEME_DESKTOP_ENTRY="$entry" MNEME_PACKAGE_VERSION="$version" MNEME_INSTALLED_SHOT=docs/screenshots/installed-app.png \
  xvfb-run -a -s "-screen 0 1280x800x24" \
  cargo test --locked -q -p mneme-app --features tauri/custom-protocol --test installed -- --ignored
step "purging mneme"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mneme >/dev/null
snapshot > /tmp/test-dist.after
if ! diff -u /tmp/test-dist.before /tmp/test-dist.after >&2; then fail "apt-get purge mneme left the files above"; fi

# The server. Its binary needs only what the distroless image (Dockerfile) has: glibc and libgcc.
needed="$(objdump -p "$release/mneme-server" | awk '/NEEDED/ { print $2 }' | sort | tr '\n' ' ')"
for lib in $needed; do
  case "$lib" in libc.so.6|libm.so.6|libgcc_s.so.1|ld-linux-x86-64.so.2|libpthread.so.0|libdl.so.2|librt.so.1) ;;
    *) fail "mneme-server needs $lib, which gcr.io/distroless/cc-debian12 does not have" ;; esac
done
step "mneme-server links only $needed"

if dpkg-query -W mneme-server >/dev/null 2>&1; then apt-get purge -y -q mneme-server >/dev/null; fi
snapshot > /tmp/test-dist.before
step "installing $(basename "$server_deb")"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$server_deb" >/dev/null
unit="$(dpkg -L mneme-server | grep '/systemd/system/mneme-server.service$')" || fail "no systemd unit installed"
conf=/etc/mneme-server/mneme-server.env
getent passwd mneme-server | grep -q ':/var/lib/mneme-server:/usr/sbin/nologin$' || fail "no mneme-server system user"
[ "$(stat -c '%a %U:%G' /var/lib/mneme-server)" = "700 mneme-server:mneme-server" ] || fail "/var/lib/mneme-server: $(stat -c '%a %U:%G' /var/lib/mneme-server)"
[ "$(stat -c '%a %U:%G' "$conf")" = "640 root:mneme-server" ] || fail "$conf: $(stat -c '%a %U:%G' "$conf")"
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify "$unit" >&2 || fail "systemd-analyze rejects $unit"
fi
# As an admin would: the settings file says where to listen (a free port, for the test).
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
sed -i "s|^MNEME_SERVER_ARGS=.*|MNEME_SERVER_ARGS=--listen 127.0.0.1:$port|" "$conf"
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
(cd / && umask 0077 && exec setpriv --reuid mneme-server --regid mneme-server --init-groups \
  env -i "${env_vars[@]}" "${cmd[@]}") > /tmp/test-dist.server.log 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  python3 -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1).status == 200 else 1)" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat /tmp/test-dist.server.log >&2; fail "mneme-server stopped"; }
  sleep 0.2
done
health="$(python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=2).read().decode())")" \
  || { cat /tmp/test-dist.server.log >&2; fail "no answer on /healthz"; }
step "mneme-server answers /healthz: $health"
db=/var/lib/mneme-server/mneme-server.db
for f in "$db"*; do
  [ "$(stat -c '%a %U' "$f")" = "600 mneme-server" ] || fail "$f: $(stat -c '%a %U' "$f")"
done
/usr/bin/mneme-server --version | grep -qx "mneme-server $version (commit [0-9a-f]\{12\})" || fail "mneme-server --version: $(/usr/bin/mneme-server --version)"
kill -TERM "$server_pid"; wait "$server_pid" || fail "mneme-server did not stop cleanly on SIGTERM"
trap - EXIT
step "purging mneme-server"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mneme-server >/dev/null
getent passwd mneme-server >/dev/null && fail "purge left the mneme-server user"
snapshot > /tmp/test-dist.after
if ! diff -u /tmp/test-dist.before /tmp/test-dist.after >&2; then fail "apt-get purge mneme-server left the files above"; fi
step "passed"
