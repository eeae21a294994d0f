#!/usr/bin/env bash
# Runs a command with a private virtual X display (Xvfb, 1280x800), for the desktop window
# tests:
#
#   scripts/with-xvfb.sh cargo test -p mneme-app --test window -- --ignored
#
# Xvfb picks a free display number itself and reports it (-displayfd), the display's
# equivalent of binding port 0: two test runs at once never get the same display. (xvfb-run
# -a looks for a free number first and then starts Xvfb on it, racing any other run doing the
# same.) The display listens on its Unix socket only and stops when the command ends.
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: scripts/with-xvfb.sh COMMAND [ARG...]" >&2
  exit 2
fi
command -v Xvfb >/dev/null 2>&1 || { echo "with-xvfb: Xvfb is missing; install it with: sudo apt-get install -y xvfb" >&2; exit 1; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/mneme-xvfb.XXXXXX")
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>"$scratch/display" 2>"$scratch/xvfb.log" &
xvfb=$!
trap 'kill "$xvfb" 2>/dev/null || true; wait "$xvfb" 2>/dev/null || true; rm -rf "$scratch"' EXIT

# Xvfb writes the number once the display accepts connections.
for _ in $(seq 200); do
  [ -s "$scratch/display" ] && break
  kill -0 "$xvfb" 2>/dev/null || { echo "with-xvfb: Xvfb stopped before it was ready:" >&2; cat "$scratch/xvfb.log" >&2; exit 1; }
  sleep 0.1
done
[ -s "$scratch/display" ] || { echo "with-xvfb: Xvfb reported no display within 20 s:" >&2; cat "$scratch/xvfb.log" >&2; exit 1; }
DISPLAY=":$(head -n 1 "$scratch/display")"
export DISPLAY
"$@"
