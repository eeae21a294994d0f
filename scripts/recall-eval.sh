#!/usr/bin/env bash
# Recall evaluation: `npm run eval:recall`. recall@5 and precision@5 on the labelled real-world
# prompts for the offline ranker and every configured model provider; see docs/recall.md.
# Arguments pass through: --providers offline,anthropic,openai,claude-cli  --verbose  --json  --sweep  --labels FILE
#   --tune KNOB=VALUE,... (the offline ranker with some of its Tuning knobs changed, e.g. min_score=1.2)
# Without --labels it runs the development set (labels.json, the one the offline ranker is tuned
# on), the held-out sets (heldout.json, read while tuning; heldout2.json and heldout3.json, written
# later from the memory files alone and never run before their first measurement) and all four as
# one set (the combined figures), so all are always seen. --labels may be repeated to run several files as one set.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo run --locked -q -p mneme-recall --example eval -- "$@"
case " $* " in
  *" --labels "*|*" --json "*|*" --sweep "*) ;;
  *)
    echo "Held-out set (read while tuning the bar; fitted on by the confidence model since 2026-12-03):"
    cargo run --locked -q -p mneme-recall --example eval -- --labels testdata/recall-eval/heldout.json "$@"
    echo "Second held-out set (written from the memory files alone; fitted on by the confidence model since 2026-12-03):"
    cargo run --locked -q -p mneme-recall --example eval -- --labels testdata/recall-eval/heldout2.json "$@"
    echo "Third held-out set (written from the memory files alone; the independent estimate):"
    cargo run --locked -q -p mneme-recall --example eval -- --labels testdata/recall-eval/heldout3.json "$@"
    echo "Combined (development + all three held-out sets, as one set):"
    cargo run --locked -q -p mneme-recall --example eval -- --labels testdata/recall-eval/labels.json --labels testdata/recall-eval/heldout.json --labels testdata/recall-eval/heldout2.json --labels testdata/recall-eval/heldout3.json "$@"
    ;;
esac
