// Checks both browser runs make on every screen: accessibility (axe-core's WCAG 2 A/AA rules),
// nothing running off the page in a narrow window and, on the Graph, the quality of the layout.

import fs from 'node:fs';
import { requireUi as require } from './harness.mjs';

/** axe-core's rule tags for WCAG 2.0, 2.1 and 2.2, levels A and AA. */
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

let axeSource = null;

/**
 * Runs axe-core's WCAG 2 A/AA rules on the page as it is now and answers the violations as
 * readable lines (empty when clean). The source is evaluated through the DevTools protocol, so the
 * page's Content-Security-Policy (which forbids inline scripts) does not stop it.
 */
export async function axeViolations(page) {
  axeSource ??= fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  const result = await page.evaluate(async (tags) => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map((n) => `${n.target.join(' ')}${n.failureSummary ? ` — ${n.failureSummary.replace(/\s+/g, ' ').slice(0, 200)}` : ''}`),
    }));
  }, WCAG_TAGS);
  return result.map((v) => `${v.id} (${v.impact}): ${v.help}; ${v.nodes.length} node(s), e.g. ${v.nodes.slice(0, 3).join(' | ')}`);
}

/** Fails (through `fail`) when axe finds any WCAG 2 A/AA violation on the page. */
export async function checkAccessible(page, where, fail) {
  const v = await axeViolations(page);
  if (v.length) fail(`accessibility violations on ${where}:\n  ${v.join('\n  ')}`);
}

/**
 * How the settled graph sits on the canvas: the spread of node centres in each axis as a share
 * of the canvas, and how close centres come (the nearest neighbour of each node, in pixels).
 */
export async function graphLayout(page) {
  const { pts, width, height } = await page.evaluate(() => window.__mnemeGraph.positions());
  const n = pts.length / 2;
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < n; i++) {
    x0 = Math.min(x0, pts[2 * i]); x1 = Math.max(x1, pts[2 * i]);
    y0 = Math.min(y0, pts[2 * i + 1]); y1 = Math.max(y1, pts[2 * i + 1]);
  }
  // Nearest neighbours through a grid of 16 px cells: only close pairs matter (a node with none
  // within 16 px counts as 16 px away).
  const cell = 16, grid = new Map();
  const key = (gx, gy) => gx * 100003 + gy;
  for (let i = 0; i < n; i++) {
    const k = key(Math.floor(pts[2 * i] / cell), Math.floor(pts[2 * i + 1] / cell));
    let l = grid.get(k);
    if (!l) grid.set(k, (l = []));
    l.push(i);
  }
  const nearest = new Float64Array(n).fill(cell);
  for (let i = 0; i < n; i++) {
    const gx = Math.floor(pts[2 * i] / cell), gy = Math.floor(pts[2 * i + 1] / cell);
    for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) {
      for (const j of grid.get(key(gx + dx, gy + dy)) ?? []) {
        if (j !== i) nearest[i] = Math.min(nearest[i], Math.hypot(pts[2 * i] - pts[2 * j], pts[2 * i + 1] - pts[2 * j + 1]));
      }
    }
  }
  const sorted = [...nearest].sort((a, b) => a - b);
  return {
    nodes: n,
    spreadX: n ? (x1 - x0) / width : 0,
    spreadY: n ? (y1 - y0) / height : 0,
    minSpacing: n > 1 ? sorted[0] : cell,
    /** The share of nodes whose nearest neighbour is closer than 2 px (drawn on top of each other). */
    stacked: n ? sorted.filter((d) => d < 2).length / n : 0,
  };
}

/**
 * Fails unless the layout uses both axes (each spread at least a quarter of the canvas) and keeps
 * node centres apart: at least `minSpacing` px everywhere on graphs the layout de-overlaps (up
 * to 1,000 nodes), and no more than 1% of nodes stacked on larger ones.
 */
export async function checkGraphLayout(page, where, fail, { minSpacing = 4 } = {}) {
  const q = await graphLayout(page);
  const text = `${q.nodes} nodes: spread ${(q.spreadX * 100).toFixed(0)}% × ${(q.spreadY * 100).toFixed(0)}% of the canvas, ` +
    `closest centres ${q.minSpacing >= 16 ? '16 px or more' : `${q.minSpacing.toFixed(1)} px`} apart, ${(q.stacked * 100).toFixed(2)}% stacked`;
  if (q.nodes >= 10 && (q.spreadX < 0.25 || q.spreadY < 0.25)) fail(`the graph on ${where} does not use both axes: ${text}`);
  if (q.nodes <= 1000 && q.minSpacing < minSpacing) fail(`nodes overlap on the graph of ${where}: ${text}`);
  if (q.nodes > 1000 && q.stacked > 0.01) fail(`too many nodes drawn on top of each other on the graph of ${where}: ${text}`);
  return text;
}

/**
 * What runs past the right edge of the window or of its card, as readable lines (empty when
 * everything fits): a page that scrolls sideways, or a card (or the Projects table's frame) whose
 * content is wider than the card, so a long path or file name is cut off or must be scrolled to,
 * or a page that scrolls down past its own content into blank space.
 * Blocks that scroll on purpose (the exact block, a preview, the graph) keep their overflow to
 * themselves and do not count.
 */
export async function overflowing(page) {
  return page.evaluate(() => {
    const out = [];
    const root = document.documentElement;
    const name = (el) => {
      const text = (el.innerText || el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 80);
      return `${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : ''} “${text}”`;
    };
    if (root.scrollWidth > root.clientWidth + 1) {
      // The innermost elements past the window's edge say what pushed it.
      const past = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > root.clientWidth + 1
        && ![...el.children].some((c) => c.getBoundingClientRect().right > root.clientWidth + 1));
      out.push(`the page is ${root.scrollWidth} px wide in a ${root.clientWidth} px window; past the edge: ${past.slice(0, 3).map(name).join(' | ')}`);
    }
    // Nor further down than its content: an absolutely placed element inside a scrolled list
    // (a row's screen-reader text) whose containing block lies outside the scroller escapes its
    // clipping and leaves the page a long blank stretch to scroll through.
    const shell = document.querySelector('.shell');
    if (shell) {
      const end = shell.getBoundingClientRect().bottom + window.scrollY;
      if (root.scrollHeight > end + 2) {
        // Rows clipped by their own scroller lie below too; an element placed out of the flow is
        // what the page scrolls for, so those are named first.
        const past = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().bottom + window.scrollY > end + 2 && el.getClientRects().length);
        const placed = past.filter((el) => getComputedStyle(el).position !== 'static');
        const below = placed.length ? placed : past.filter((el) => ![...el.children].some((c) => past.includes(c)));
        out.push(`the page scrolls ${Math.round(root.scrollHeight - end)} px past its content; below it: ${below.slice(0, 3).map(name).join(' | ')}`);
      }
    }
    for (const box of document.querySelectorAll('main .card, main .table-wrap')) {
      if (box.scrollWidth > box.clientWidth + 1) out.push(`${name(box).slice(0, 60)}… holds content ${box.scrollWidth - box.clientWidth} px wider than itself`);
    }
    return out;
  });
}

/** Fails when anything on the page as it is now runs past the window or its card (see `overflowing`). */
export async function checkFits(page, where, fail) {
  const o = await overflowing(page);
  if (o.length) fail(`content runs off ${where}:\n  ${o.join('\n  ')}`);
}
