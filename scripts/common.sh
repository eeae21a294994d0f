# Shared by run.sh, test.sh and bench.sh: finds the tools, installs what is missing when run
# as root on Debian, and otherwise prints the exact command to run.

need_tool() { # need_tool <command> <debian package>
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "mneme: installing $2 (needed for $1)…" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null || {
      apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null; }
  fi
  command -v "$1" >/dev/null 2>&1 || {
    echo "mneme: '$1' is missing. Install it with: sudo apt-get install -y $2" >&2
    exit 1
  }
}

need_tool cargo cargo
# A shared target dir outside the clone makes repeated runs fast; a cold one still works.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mneme/target}"
mkdir -p "$CARGO_TARGET_DIR"
