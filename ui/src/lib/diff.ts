// How a line diff is drawn. The diff itself comes from the engine (mneme-api's `LineDiff`,
// computed with the `similar` crate); this only shapes it for display.

import type { DiffLine } from './bindings';

/** A row of a drawn diff: a line, or a run of unchanged lines folded into one. */
export type DiffRow = DiffLine | { op: 'gap'; text: string };

/** The sign shown before each line. */
export const SIGN = { same: ' ', removed: '-', added: '+', gap: '…' } as const;

/** Folds each run of unchanged lines down to `context` lines either side of a change (none at
 *  the start or end of the text), so a long file shows only what changed and around it. */
export function collapse(lines: DiffLine[], context: number): DiffRow[] {
  const out: DiffRow[] = [];
  let i = 0;
  while (i < lines.length) {
    if (lines[i].op !== 'same') {
      out.push(lines[i++]);
      continue;
    }
    let j = i;
    while (j < lines.length && lines[j].op === 'same') j++;
    const run = lines.slice(i, j);
    const head = i === 0 ? 0 : context;
    const tail = j === lines.length ? 0 : context;
    if (run.length > head + tail + 1) {
      const folded = run.length - head - tail;
      out.push(...run.slice(0, head), { op: 'gap', text: `${folded} unchanged ${folded === 1 ? 'line' : 'lines'}` }, ...run.slice(run.length - tail));
    } else {
      out.push(...run);
    }
    i = j;
  }
  return out;
}
