#!/usr/bin/env bash
# Runs a command inside a private D-Bus session with an unlocked gnome-keyring, so code that
# uses the OS keyring (Secret Service) works on a headless machine or in CI:
#
#   scripts/with-keyring.sh cargo test -p mneme-team -- --ignored keyring
#
# The keyring files live in a temporary folder that is removed afterwards; the person's own
# keyring is never touched. As root, missing packages are installed with apt-get (gnome-keyring
# for the Secret Service, dbus for dbus-run-session, libsecret-tools so tests can read a secret
# back through Secret Service itself); otherwise the install command is printed.
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: scripts/with-keyring.sh COMMAND [ARG...]" >&2
    exit 2
fi

missing=()
command -v dbus-run-session >/dev/null 2>&1 || missing+=(dbus)
command -v gnome-keyring-daemon >/dev/null 2>&1 || missing+=(gnome-keyring)
command -v secret-tool >/dev/null 2>&1 || missing+=(libsecret-tools)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "with-keyring: installing ${missing[*]}" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
        echo "with-keyring: missing ${missing[*]}; install them with: sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/mneme-keyring.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -m 700 -p "$scratch/data" "$scratch/runtime"

# gnome-keyring keeps its files under $XDG_DATA_HOME/keyrings and its sockets under
# $XDG_RUNTIME_DIR; both point into the scratch folder. A throwaway password on stdin creates
# and unlocks a fresh login keyring (an empty one makes the daemon ask a graphical prompter,
# which a headless session does not have); the daemon prints GNOME_KEYRING_CONTROL to export.
XDG_DATA_HOME="$scratch/data" XDG_RUNTIME_DIR="$scratch/runtime" \
    dbus-run-session -- bash -c '
        set -euo pipefail
        eval "$(printf "mneme" | gnome-keyring-daemon --unlock --components=secrets)"
        export GNOME_KEYRING_CONTROL
        # Tests that see this require the keyring to work (store, then read back through
        # secret-tool) instead of also accepting "no keyring reachable".
        export MNEME_TEST_KEYRING=1
        exec "$@"
    ' with-keyring "$@"
