#!/usr/bin/env bash
# Recall evaluation: `npm run eval:recall`. recall@5 and precision@5 on the labelled real-world
# prompts for the offline ranker and every configured model provider; see docs/recall.md.
# Arguments pass through: --providers offline,anthropic,openai,claude-cli  --verbose  --json  --sweep
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo run --locked -q -p mneme-recall --example eval -- "$@"
