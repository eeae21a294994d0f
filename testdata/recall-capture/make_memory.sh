#!/usr/bin/env bash
# The memory folder of the recall capture, with fixed modification times. Shared by
# capture.sh and (through the same contents and times) crates/recall/tests/real_capture.rs.
set -euo pipefail
MEM="$1"
mkdir -p "$MEM"
cat >"$MEM/feedback_deploys.md" <<'MD'
---
name: Deploys
description: Never deploy on Fridays
metadata:
  type: feedback
---

Deploys wait for Monday.
MD
cat >"$MEM/project_billing.md" <<'MD'
---
name: Billing
description: Billing service rewrite status
metadata:
  type: project
---

Stripe webhooks move to v2.
MD
cat >"$MEM/user_role.md" <<'MD'
---
name: Role
description: Senior Rust developer, new to React
type: user
---

Explain frontend in backend terms.
MD
printf -- '- [Deploys](feedback_deploys.md) — no Friday deploys\n' >"$MEM/MEMORY.md"
touch -d '2026-11-01T10:00:00Z' "$MEM/user_role.md"
touch -d '2026-11-20T10:00:00.250Z' "$MEM/project_billing.md"
touch -d '2026-11-29T10:00:00.125Z' "$MEM/feedback_deploys.md"
