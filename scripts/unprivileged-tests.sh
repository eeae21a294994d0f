#!/usr/bin/env bash
# Runs the tests named `unprivileged_*` (ignored in plain `cargo test`) as a user that file
# permissions apply to. They check how unreadable files are reported, which cannot happen for
# root: as root the test binaries are copied to a scratch folder and run as `nobody` (setpriv,
# no supplementary groups, no capabilities); as anyone else they run as that user.
#
#   scripts/unprivileged-tests.sh
#
# Each binary must run and pass at least one such test, so a renamed or deleted test fails here
# instead of passing unnoticed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
need_tool python3 python3

test_binary() { # test_binary <cargo target selection>...: builds it, prints the executable
  cargo test --locked -q --no-run --message-format=json "$@" | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])
'
}
# The test targets that hold `unprivileged_` tests.
bins="$(test_binary -p mneme-claudemd --test loader)
$(test_binary -p mneme-store --lib)"
[ "$(wc -l <<<"$bins")" -eq 2 ] || { echo "unprivileged-tests: expected 2 test binaries, got: $bins" >&2; exit 1; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/mneme-unprivileged.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin" "$scratch/tmp" "$scratch/home"
run=()
if [ "$(id -u)" = 0 ]; then
  # The shared target folder usually sits under /root, which nobody cannot enter: copy the
  # binaries into a folder of their own, and give nobody its own HOME and TMPDIR.
  chmod 755 "$scratch" "$scratch/bin"
  chown nobody "$scratch/tmp" "$scratch/home"
  run=(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --bounding-set=-all)
fi

status=0
while read -r bin; do
  cp "$bin" "$scratch/bin/"
  exe="$scratch/bin/$(basename "$bin")"
  chmod 755 "$exe"
  out=$(cd "$scratch" && env HOME="$scratch/home" TMPDIR="$scratch/tmp" "${run[@]}" "$exe" --ignored unprivileged_ 2>&1) || status=1
  echo "$out"
  grep -Eq '^test result: ok\. [1-9][0-9]* passed' <<<"$out" || {
    echo "unprivileged-tests: $(basename "$bin") ran no unprivileged_ test or one failed" >&2
    status=1
  }
done <<<"$bins"
exit "$status"
