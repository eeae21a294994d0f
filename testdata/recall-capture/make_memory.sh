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
# Frontmatter each runtime's YAML reads its own way (docs/claude-code-versions.md, row 62): tab
# indentation, core-schema numbers, a merge key, a repeated key, `? `, a lone `!`, CRLF.
mkdir -p "$MEM/odd"
printf -- '---\nname: tab meta\ndescription: tabbed metadata\nmetadata:\n\ttype: user\n---\nbody\n' >"$MEM/odd/tab_meta.md"
printf -- '---\nmetadata:\n\ttype: feedback\ndescription: meta first\n---\nbody\n' >"$MEM/odd/tab_meta_first.md"
printf -- '---\ndescription: 017\ntype: user\n---\nbody\n' >"$MEM/odd/num_desc.md"
printf -- '---\n<<: {description: merged desc, type: reference}\nname: m\n---\nbody\n' >"$MEM/odd/merge.md"
printf -- '---\ndescription: first\ndescription: second\n---\nbody\n' >"$MEM/odd/dup.md"
printf -- '---\ndescription: ? asked\n---\nbody\n' >"$MEM/odd/q_desc.md"
printf -- '---\ndescription: !\nname: nm\n---\nbody\n' >"$MEM/odd/bang_desc.md"
printf -- '---\r\nname: n\r\nmetadata:\r\n\ttype: feedback\r\n---\r\nbody\r\n' >"$MEM/odd/crlf_tab.md"
printf -- '---\ndescription: a long line\n \tthat continues\n---\nbody\n' >"$MEM/odd/tab_continues.md"
printf -- '---\n~: x\ndescription: with a null key\n---\nbody\n' >"$MEM/odd/null_key.md"
i=0
for f in tab_meta tab_meta_first num_desc merge dup q_desc bang_desc crlf_tab tab_continues null_key; do
  touch -d "2026-10-01T10:$(printf %02d $i):00Z" "$MEM/odd/$f.md"
  i=$((i + 1))
done
touch -d '2026-10-01T09:00:00Z' "$MEM/odd"
printf -- '- [Deploys](feedback_deploys.md) — no Friday deploys\n' >"$MEM/MEMORY.md"
touch -d '2026-11-01T10:00:00Z' "$MEM/user_role.md"
touch -d '2026-11-20T10:00:00.250Z' "$MEM/project_billing.md"
touch -d '2026-11-29T10:00:00.125Z' "$MEM/feedback_deploys.md"
