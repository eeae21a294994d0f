# Shared by run.sh, test.sh and bench.sh: finds the tools, installs what is missing when run
# as root on Debian, and otherwise prints the exact command to run.

need_tool() { # need_tool <command> <debian package>
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "mneme: installing $2 (needed for $1)…" >&2
    # A fresh machine's package lists are often stale or empty: the first try stays quiet and
    # the second, after `apt-get update`, says why if it fails too.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null 2>&1 || {
      apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null; }
  fi
  command -v "$1" >/dev/null 2>&1 || {
    echo "mneme: '$1' is missing. Install it with: sudo apt-get install -y $2" >&2
    exit 1
  }
}

# Rust comes from rustup, not Debian: Debian's cargo is years older than the dependencies
# need (Cargo.toml's rust-version), so installing it would only trade one error for another.
need_rust() {
  local want have
  want="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
  if ! command -v cargo >/dev/null 2>&1 || ! command -v rustc >/dev/null 2>&1; then
    echo "mneme: Rust is missing. Install Rust $want or newer with rustup (https://rustup.rs):" >&2
    echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh" >&2
    exit 1
  fi
  have="$(rustc --version | awk '{print $2}')"
  if [ -n "$want" ] && [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n 1)" != "$want" ]; then
    echo "mneme: Rust $have is older than the $want this build needs. Update it with: rustup update stable" >&2
    exit 1
  fi
}
need_rust
# A shared target dir outside the clone makes repeated runs fast; a cold one still works.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mneme/target}"
mkdir -p "$CARGO_TARGET_DIR"

need_debs() { # need_debs <debian package>...: installs the missing ones as root, else says how
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "mneme: installing ${missing[*]}…" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
      apt-get update -q >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
  fi
  for p in "${missing[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || {
      echo "mneme: missing Debian packages. Install them with: sudo apt-get install -y ${missing[*]}" >&2
      exit 1
    }
  done
}

need_tauri_driver() { # tauri-driver for the desktop end-to-end tests, built once into Mneme's cache
  # (like cargo-deny and cargo-deb) so a machine whose ~/.cargo is new does not compile it again.
  local tools="$HOME/.cache/mneme/tools"
  export PATH="$tools/bin:$PATH"
  command -v tauri-driver >/dev/null 2>&1 && return 0
  CARGO_TARGET_DIR="$tools/build" cargo install tauri-driver --version '^2' --locked -q --root "$tools"
}

# What the desktop shell (Tauri 2 on WebKitGTK) needs to build.
TAURI_BUILD_DEBS=(libwebkit2gtk-4.1-dev build-essential libxdo-dev libssl-dev libayatana-appindicator3-dev librsvg2-dev pkg-config)
