#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on 127.0.0.1 for the team sync server's tests and benchmarks.
#
#   eval "$(scripts/pg.sh)"    # starts one; prints `export MNEME_TEST_PG_URL=…` and MNEME_TEST_PG_DIR
#   scripts/pg.sh stop         # stops the one named by MNEME_TEST_PG_DIR and deletes it
#
# The cluster lives in a fresh temporary folder on a random loopback port (another one is tried
# when someone else binds it first), trusts only local connections, and knows one superuser,
# `mneme`. initdb refuses to run as root, so as root the cluster runs as the unprivileged
# `postgres` user (Debian's postgresql is installed first when missing); otherwise it runs as
# the current user, or the script prints the install command.
# Only the export lines go to standard output; everything else goes to standard error.
set -euo pipefail

say() { echo "pg.sh: $*" >&2; }

pg_bin() { # the newest PostgreSQL bin folder, or nothing
  local d best=""
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && best="$d"
  done
  if [ -z "$best" ] && command -v initdb >/dev/null 2>&1; then
    best="$(dirname "$(readlink -f "$(command -v initdb)")")"
  fi
  echo "$best"
}

as_owner() { # as_owner <user> <command>...: runs as <user> when we are root, else as ourselves
  local user="$1"; shift
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$user" -- "$@"
  else
    "$@"
  fi
}

if [ "${1:-}" = stop ]; then
  dir="${MNEME_TEST_PG_DIR:?set MNEME_TEST_PG_DIR to the folder scripts/pg.sh printed}"
  bin="$(pg_bin)"
  owner="$(stat -c %U "$dir")"
  cd "$dir" # pg_ctl fails in a working directory its owner cannot read
  as_owner "$owner" "$bin/pg_ctl" -D "$dir/data" stop -m fast -w >/dev/null 2>&1 || true
  cd /
  rm -rf "$dir"
  say "stopped and removed $dir"
  exit 0
fi

bin="$(pg_bin)"
if [ -z "$bin" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing postgresql…"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null 2>&1 || {
      apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null; }
    bin="$(pg_bin)"
  fi
  if [ -z "$bin" ]; then
    say "PostgreSQL is not installed. Install it, then run this script again:"
    say "  sudo apt-get install -y postgresql && eval \"\$(scripts/pg.sh)\""
    exit 1
  fi
fi

if [ "$(id -u)" = 0 ]; then
  if id postgres >/dev/null 2>&1; then owner=postgres; else owner=nobody; fi
else
  owner="$(id -un)"
fi

dir="$(mktemp -d /tmp/mneme-pg.XXXXXX)"
chmod 700 "$dir"
[ "$(id -u)" = 0 ] && chown "$owner" "$dir"
cd "$dir" # runuser keeps the working directory; the owner must be able to read it

as_owner "$owner" "$bin/initdb" -D "$dir/data" -U mneme --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
  say "initdb failed:"; cat "$dir/initdb.log" >&2; exit 1; }

# PostgreSQL cannot be told to pick a port itself (port 0 is refused), so a port is picked
# here and may be taken by someone else before the server binds it (another test run's
# cluster, say). Each start therefore tries a fresh random port and retries only when the
# server could not bind it; anything else fails at once with the server's log. The Unix
# socket lives in the cluster's own folder, so it never collides.
random_port() { # from below Linux's ephemeral range (32768+), where outgoing connections do not take ports
  shuf -i 20000-32000 -n 1
}

started=""
attempts=20
for attempt in $(seq "$attempts"); do
  port="$(random_port)"
  rm -f "$dir/server.log"
  # Tests open one pool per server they start, several at a time: allow plenty of connections.
  if as_owner "$owner" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=500" >/dev/null 2>&1; then
    started=1
    break
  fi
  if grep -qE 'could not bind|Address already in use|could not create any TCP/IP sockets' "$dir/server.log" 2>/dev/null; then
    say "port $port was taken before the server bound it (attempt $attempt of $attempts); trying another"
    continue
  fi
  break
done
if [ -z "$started" ]; then
  say "the server did not start:"; tail -20 "$dir/server.log" >&2
  say "(its folder $dir is left for a look; remove it with: MNEME_TEST_PG_DIR=$dir scripts/pg.sh stop)"
  exit 1
fi

say "PostgreSQL ($("$bin/postgres" --version | awk '{print $3}')) on 127.0.0.1:$port in $dir; stop it with: scripts/pg.sh stop"
echo "export MNEME_TEST_PG_URL=postgres://mneme@127.0.0.1:$port/postgres"
echo "export MNEME_TEST_PG_DIR=$dir"
