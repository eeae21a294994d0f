// ForceAtlas2 off the main thread, for a bounded number of iterations, so the graph stays
// interactive while it settles. Deterministic: the same positions in give the same positions out.
// Intermediate positions are posted every few iterations so the user sees the layout converge.
//
// Every posted frame is tidied before it leaves the worker (ForceAtlas2's own state is left alone):
// - nodes outside the main connected component (CLAUDE.md files, rules, memories nothing links to)
//   would drift away forever under repulsion and shrink the whole view, so they are packed on
//   rings just outside the main component;
// - on graphs up to a thousand nodes, noverlap pushes overlapping discs apart;
// - when every label is shown (small graphs), node + label boxes are separated in screen pixels,
//   using the viewport size sigma will fit the graph into, so labels do not collide.

import Graph from 'graphology';
import forceAtlas2 from 'graphology-layout-forceatlas2';
import noverlap from 'graphology-layout-noverlap';

export interface LayoutRequest {
  run: number;
  x: Float32Array;
  y: Float32Array;
  /** Node radius in pixels (at camera ratio 1). */
  size: Float32Array;
  /** Rendered label width in pixels; 0 for no label (or not measured). */
  labelWidth: Float32Array;
  /** Flat pairs of node indexes. */
  edges: Uint32Array;
  iterations: number;
  /** The sigma viewport the graph is fitted into. */
  view: { width: number; height: number; padding: number };
  labelSize: number;
  /** Every label is drawn (small graphs): separate label boxes, not just discs. */
  allLabels: boolean;
}

export interface LayoutProgress {
  run: number;
  x: Float32Array;
  y: Float32Array;
  done: boolean;
}

/** Graphs up to this many nodes get noverlap on every frame. */
const NOVERLAP_MAX = 1000;

let current = 0;

self.onmessage = async (ev: MessageEvent<LayoutRequest>) => {
  const req = ev.data;
  const { run, x, y, size, edges, iterations } = req;
  current = run;
  const n = x.length;
  const g = new Graph({ type: 'undirected', multi: false, allowSelfLoops: false });
  for (let i = 0; i < n; i++) g.addNode(i, { x: x[i], y: y[i], size: size[i] });
  for (let i = 0; i + 1 < edges.length; i += 2) {
    const a = edges[i], b = edges[i + 1];
    if (a !== b && !g.hasEdge(a, b)) g.addEdge(a, b);
  }
  const comps = components(n, edges);
  const settings = {
    ...forceAtlas2.inferSettings(n),
    barnesHutOptimize: n > 400,
    barnesHutTheta: 0.6,
    outboundAttractionDistribution: true,
    strongGravityMode: false,
    gravity: n > 400 ? 0.5 : 2,
    scalingRatio: n > 400 ? 4 : 12,
    slowDown: 1,
    adjustSizes: false,
  };
  const chunk = n > 2000 ? 8 : n > 400 ? 15 : 50;
  for (let done = 0; done < iterations; done += chunk) {
    forceAtlas2.assign(g, { iterations: Math.min(chunk, iterations - done), settings });
    const ox = new Float32Array(n), oy = new Float32Array(n);
    const fx = new Float64Array(n), fy = new Float64Array(n);
    g.forEachNode((k, a) => { fx[+k] = a.x; fy[+k] = a.y; });
    const last = done + chunk >= iterations;
    tidy(fx, fy, comps, req, last);
    for (let i = 0; i < n; i++) { ox[i] = fx[i]; oy[i] = fy[i]; }
    (self as unknown as Worker).postMessage({ run, x: ox, y: oy, done: last } satisfies LayoutProgress, [ox.buffer, oy.buffer]);
    // Let a newer request pre-empt this one.
    await new Promise((r) => setTimeout(r, 0));
    if (current !== run) return;
  }
};

interface Components {
  /** Component id of each node. */
  of: Int32Array;
  /** Nodes of each component, largest first (ties: lowest node index first). */
  members: number[][];
}

function components(n: number, edges: Uint32Array): Components {
  const parent = new Int32Array(n);
  for (let i = 0; i < n; i++) parent[i] = i;
  const find = (a: number): number => {
    while (parent[a] !== a) { parent[a] = parent[parent[a]]; a = parent[a]; }
    return a;
  };
  for (let i = 0; i + 1 < edges.length; i += 2) {
    const a = find(edges[i]), b = find(edges[i + 1]);
    if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
  }
  const byRoot = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const r = find(i);
    let m = byRoot.get(r);
    if (!m) byRoot.set(r, (m = []));
    m.push(i);
  }
  const members = [...byRoot.values()].sort((a, b) => b.length - a.length || a[0] - b[0]);
  const of = new Int32Array(n);
  members.forEach((m, c) => { for (const i of m) of[i] = c; });
  return { of, members };
}

function tidy(x: Float64Array, y: Float64Array, comps: Components, req: LayoutRequest, last: boolean) {
  const n = x.length;
  if (n === 0) return;
  packSatellites(x, y, comps);
  // Cheap enough on every frame for small graphs; on bigger ones, once at the end.
  const small = n <= 300;
  if (n <= NOVERLAP_MAX && (small || last)) separateDiscs(x, y, req, small ? 30 : 60);
  // Bigger graphs: noverlap is too slow there, and ForceAtlas2 packs each dense cluster into a
  // blob whose nodes sit on top of each other at the zoom that shows the whole graph.
  if (n > NOVERLAP_MAX && last) spreadDense(x, y, req);
  if (req.allLabels && n <= NOVERLAP_MAX && (n <= 120 || last) && labelsFit(req)) {
    // Label boxes are wide and flat, so separating them pushes nodes apart vertically; when
    // that stretches the graph out of shape (long labels, a hub with many leaves), the spread
    // itself shrinks the pixel scale and the graph ends up a vertical line. Keep the disc layout
    // then: sigma skips labels that would collide.
    const bx = x.slice(), by = y.slice();
    separateLabels(x, y, req);
    if (aspectChange(bx, by, x, y) > 1.6) { x.set(bx); y.set(by); }
    // Label boxes that could not all be cleared may leave discs on top of each other, which
    // the disc pass had kept apart: the discs come first.
    else if (last) separateDiscs(x, y, req, 60);
  }
  if (last && n <= NOVERLAP_MAX) keepDiscsApart(x, y, req);
  if (last) fitAspect(x, y, req);
}

/** Centres closer than this on screen, once laid out, get more disc separation. */
const MIN_CENTRE_PX = 6;

/**
 * Separating discs spreads the graph, and the zoom that fits it then shrinks every distance on
 * screen, so one pass can end with centres a few pixels apart (gantry's 68 nodes: 3.7 to 11 px
 * between runs, as the worker's timing varies). Separate again at the new scale, a few rounds
 * at most, until the closest centres are far enough apart.
 */
function keepDiscsApart(x: Float64Array, y: Float64Array, req: LayoutRequest) {
  for (let round = 0; round < 4 && closestCentresPx(x, y, req) < MIN_CENTRE_PX; round++) separateDiscs(x, y, req, 60);
  // noverlap does not always converge in those rounds (how far ForceAtlas2 got before the last
  // frame depends on the machine's speed: 1.7 px apart was seen under load), so the pairs still
  // too close are pushed apart directly, as for big graphs.
  if (closestCentresPx(x, y, req) < MIN_CENTRE_PX) spreadDense(x, y, req, MIN_CENTRE_PX * 1.25);
}

/** The smallest distance between two node centres, in screen pixels at the fitting zoom. */
function closestCentresPx(x: Float64Array, y: Float64Array, req: LayoutRequest): number {
  const n = x.length;
  let best = Infinity;
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) best = Math.min(best, Math.hypot(x[i] - x[j], y[i] - y[j]));
  }
  return best * pixelsPerUnit(x, y, req.view);
}

/** A finished layout narrower than this share of the canvas's own aspect is stretched… */
const STRETCH_BELOW_SHARE = 0.3;
/** …to this share (layouts in between are left exactly as ForceAtlas2 and the separation left them). */
const MIN_ASPECT_SHARE = 0.45;

/**
 * Stretches a finished layout along its narrow axis when it is much narrower than the canvas
 * (a chain of notes comes out of ForceAtlas2 nearly as a line, and fitted to a wide canvas it
 * fills a thin strip). Stretching one axis only moves nodes apart, and the other axis still
 * decides the zoom, so spacing on screen only grows.
 */
function fitAspect(x: Float64Array, y: Float64Array, req: LayoutRequest) {
  const n = x.length;
  if (n < 3) return;
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < n; i++) {
    x0 = Math.min(x0, x[i]); x1 = Math.max(x1, x[i]);
    y0 = Math.min(y0, y[i]); y1 = Math.max(y1, y[i]);
  }
  const gw = x1 - x0, gh = y1 - y0;
  if (gw <= 0 && gh <= 0) return;
  const vw = Math.max(1, req.view.width - 2 * req.view.padding), vh = Math.max(1, req.view.height - 2 * req.view.padding);
  const canvas = vw / vh;
  const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  if (gw < STRETCH_BELOW_SHARE * canvas * gh) {
    // Too tall: widen. A graph with no width at all gets a deterministic zigzag.
    const want = MIN_ASPECT_SHARE * canvas * gh;
    if (gw <= 1e-9) { for (let i = 0; i < n; i++) x[i] = cx + (i % 2 ? 0.5 : -0.5) * want; return; }
    const k = want / gw;
    for (let i = 0; i < n; i++) x[i] = cx + (x[i] - cx) * k;
  } else if (gh * canvas < STRETCH_BELOW_SHARE * gw) {
    // Too wide: heighten.
    const want = (MIN_ASPECT_SHARE * gw) / canvas;
    if (gh <= 1e-9) { for (let i = 0; i < n; i++) y[i] = cy + (i % 2 ? 0.5 : -0.5) * want; return; }
    const k = want / gh;
    for (let i = 0; i < n; i++) y[i] = cy + (y[i] - cy) * k;
  }
}

/** Whether every label can be drawn without overlap at all: label boxes covering at most a
 *  third of the canvas (beyond that, separating them only stretches the graph). */
function labelsFit(req: LayoutRequest): boolean {
  const { size, labelWidth, labelSize, view } = req;
  let area = 0;
  for (let i = 0; i < size.length; i++) {
    const w = 2 * size[i] + (labelWidth[i] > 0 ? 3 + labelWidth[i] : 0) + 6;
    const h = 2 * Math.max(size[i], labelWidth[i] > 0 ? labelSize * 0.6 : 0) + 6;
    area += w * h;
  }
  const canvas = Math.max(1, view.width - 2 * view.padding) * Math.max(1, view.height - 2 * view.padding);
  return area <= canvas / 3;
}

/** How much the bounding box's height-to-width ratio changed (a factor, at least 1). */
function aspectChange(x0: Float64Array, y0: Float64Array, x1: Float64Array, y1: Float64Array): number {
  const ratio = (x: Float64Array, y: Float64Array) => {
    let a = Infinity, b = -Infinity, c = Infinity, d = -Infinity;
    for (let i = 0; i < x.length; i++) { a = Math.min(a, x[i]); b = Math.max(b, x[i]); c = Math.min(c, y[i]); d = Math.max(d, y[i]); }
    return (d - c || 1e-9) / (b - a || 1e-9);
  };
  const r0 = ratio(x0, y0), r1 = ratio(x1, y1);
  return Math.max(r0 / r1, r1 / r0);
}

/**
 * Puts every component but the main one on rings just outside the main component, in the order
 * they already sit around it, evenly spread, so they neither drift off nor pile up.
 */
function packSatellites(x: Float64Array, y: Float64Array, { members }: Components) {
  const main = members[0];
  let cx = 0, cy = 0, R = 0;
  let sats = members.slice(1);
  if (main.length > 1) {
    for (const i of main) { cx += x[i]; cy += y[i]; }
    cx /= main.length; cy /= main.length;
    for (const i of main) R = Math.max(R, Math.hypot(x[i] - cx, y[i] - cy));
  } else {
    // No edges anywhere the main component is a single node: lay every node out alike.
    sats = members;
  }
  if (sats.length === 0) return;
  // A typical spacing between neighbouring nodes, in layout units.
  const s = main.length > 1 ? Math.max(R * Math.sqrt(Math.PI / main.length), R * 0.02, 1e-3) : 10;
  const items = sats.map((m) => {
    let mx = 0, my = 0;
    for (const i of m) { mx += x[i]; my += y[i]; }
    mx /= m.length; my /= m.length;
    let r = 0;
    for (const i of m) r = Math.max(r, Math.hypot(x[i] - mx, y[i] - my));
    return { m, mx, my, r, angle: Math.atan2(my - cy, mx - cx), first: m[0] };
  });
  items.sort((a, b) => a.angle - b.angle || a.first - b.first);
  let ring = main.length > 1 ? R + Math.max(1.5 * s, 0.08 * R) : 0;
  let k = 0;
  while (k < items.length) {
    // Fill this ring as far as its circumference allows (at least one item).
    const circumference = 2 * Math.PI * ring;
    let used = 0, end = k, widest = 0;
    while (end < items.length) {
      const need = 2 * items[end].r + s;
      if (end > k && used + need > circumference) break;
      used += need;
      widest = Math.max(widest, items[end].r);
      end++;
    }
    const count = end - k;
    const start = items[k].angle;
    for (let j = 0; j < count; j++) {
      const it = items[k + j];
      const a = count === 1 && ring === 0 ? 0 : start + (2 * Math.PI * j) / count;
      const rr = ring + (ring === 0 ? 0 : it.r);
      const tx = cx + rr * Math.cos(a), ty = cy + rr * Math.sin(a);
      for (const i of it.m) { x[i] += tx - it.mx; y[i] += ty - it.my; }
    }
    ring += (ring === 0 ? widest + s : 2 * widest + s);
    k = end;
  }
}

/** How many screen pixels one layout unit spans once sigma fits the graph (camera ratio 1). */
function pixelsPerUnit(x: Float64Array, y: Float64Array, view: LayoutRequest['view']): number {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < x.length; i++) {
    x0 = Math.min(x0, x[i]); x1 = Math.max(x1, x[i]);
    y0 = Math.min(y0, y[i]); y1 = Math.max(y1, y[i]);
  }
  const gw = x1 - x0 || 1, gh = y1 - y0 || 1;
  const w = Math.max(1, view.width), h = Math.max(1, view.height);
  const smallest = Math.max(1, Math.min(w, h) - 2 * view.padding);
  // sigma's getCorrectionRatio.
  const vr = h / w, gr = gh / gw;
  const correction = (vr < 1 && gr > 1) || (vr > 1 && gr < 1) ? 1 : Math.min(Math.max(gr, 1 / gr), Math.max(1 / vr, vr));
  return (smallest * correction) / Math.max(gw, gh);
}

/**
 * Pushes apart node centres closer than a few pixels (at the zoom that fits the whole graph),
 * through a grid, so only close pairs are compared: dense clusters swell into the space around
 * them while the layout's shape stays. The target is below the spacing the canvas allows on
 * average, so it can always be met.
 */
function spreadDense(x: Float64Array, y: Float64Array, req: LayoutRequest, wanted = 4) {
  const n = x.length;
  const w = Math.max(1, req.view.width - 2 * req.view.padding), h = Math.max(1, req.view.height - 2 * req.view.padding);
  const target = Math.min(wanted, 0.5 * Math.sqrt((w * h) / n));
  const px = new Float64Array(n), py = new Float64Array(n);
  const grid = new Map<number, number[]>();
  let firstPassMoved = 0;
  // Each round re-measures the pixel scale: spreading widens the graph, which shrinks the scale
  // and brings centres closer on screen again. Rounds stop once a round starts with nothing to
  // move (four were not always enough at the e2e's window size: 2.8% of 5,000 nodes stacked).
  for (let round = 0; round < 12; round++) {
    const ppu = pixelsPerUnit(x, y, req.view) * 0.97;
    for (let i = 0; i < n; i++) { px[i] = x[i] * ppu; py[i] = y[i] * ppu; }
    for (let it = 0; it < 30; it++) {
      grid.clear();
      for (let i = 0; i < n; i++) {
        const k = Math.floor(px[i] / target) * 73856093 ^ Math.floor(py[i] / target) * 19349663;
        let c = grid.get(k);
        if (!c) grid.set(k, (c = []));
        c.push(i);
      }
      let moved = 0;
      for (let i = 0; i < n; i++) {
        const gx = Math.floor(px[i] / target), gy = Math.floor(py[i] / target);
        for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) {
          const c = grid.get((gx + dx) * 73856093 ^ (gy + dy) * 19349663);
          if (!c) continue;
          for (const j of c) {
            if (j <= i) continue;
            let ddx = px[j] - px[i], ddy = py[j] - py[i];
            let d = Math.hypot(ddx, ddy);
            if (d >= target) continue;
            // Coincident nodes part in a direction of their own (deterministic).
            if (d < 1e-6) { const a = ((i * 7919 + j * 104729) % 360) * (Math.PI / 180); ddx = Math.cos(a); ddy = Math.sin(a); d = 1; } else { ddx /= d; ddy /= d; d = Math.max(d, 1e-6); }
            const push = (target - Math.hypot(px[j] - px[i], py[j] - py[i])) / 2;
            px[i] -= ddx * push; py[i] -= ddy * push;
            px[j] += ddx * push; py[j] += ddy * push;
            moved++;
          }
        }
      }
      if (moved === 0) break;
      if (it === 0) firstPassMoved = moved;
    }
    for (let i = 0; i < n; i++) { x[i] = px[i] / ppu; y[i] = py[i] / ppu; }
    if (firstPassMoved === 0) break;
    firstPassMoved = 0;
  }
}

/** noverlap on the node discs, in screen pixels so its margins mean something. */
function separateDiscs(x: Float64Array, y: Float64Array, req: LayoutRequest, maxIterations: number) {
  const n = x.length;
  const ppu = pixelsPerUnit(x, y, req.view);
  const g = new Graph({ type: 'undirected' });
  for (let i = 0; i < n; i++) g.addNode(i, { x: x[i] * ppu, y: y[i] * ppu, size: req.size[i] });
  noverlap.assign(g, { maxIterations, settings: { margin: 2, ratio: 1, speed: 3, gridSize: 20, expansion: 1.1 } });
  g.forEachNode((k, a) => { x[+k] = a.x / ppu; y[+k] = a.y / ppu; });
}

/**
 * Separates node + label boxes (the label sits right of the disc, as sigma draws it), in screen
 * pixels. Spreading the graph changes the pixel scale, so the scale is re-measured a few times.
 */
function separateLabels(x: Float64Array, y: Float64Array, req: LayoutRequest) {
  const n = x.length;
  const { size, labelWidth, labelSize } = req;
  const m = 3;
  const left = new Float64Array(n), right = new Float64Array(n), half = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    left[i] = size[i] + m;
    right[i] = size[i] + (labelWidth[i] > 0 ? 3 + labelWidth[i] : 0) + m;
    half[i] = Math.max(size[i], labelWidth[i] > 0 ? labelSize * 0.6 : 0) + m;
  }
  const px = new Float64Array(n), py = new Float64Array(n);
  for (let round = 0; round < 6; round++) {
    // Aim a little wider than needed: the spread itself shrinks the scale.
    const ppu = pixelsPerUnit(x, y, req.view) * 0.94;
    for (let i = 0; i < n; i++) { px[i] = x[i] * ppu; py[i] = y[i] * ppu; }
    let clean = true;
    for (let it = 0; it < 80; it++) {
      let moved = false;
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const ow = Math.min(px[i] + right[i], px[j] + right[j]) - Math.max(px[i] - left[i], px[j] - left[j]);
          if (ow <= 0) continue;
          const oh = Math.min(py[i] + half[i], py[j] + half[j]) - Math.max(py[i] - half[i], py[j] - half[j]);
          if (oh <= 0) continue;
          moved = true;
          if (oh <= ow) {
            const d = (py[j] > py[i] || (py[j] === py[i] && j > i) ? 1 : -1) * (oh / 2 + 0.5);
            py[i] -= d; py[j] += d;
          } else {
            const ci = px[i] + (right[i] - left[i]) / 2, cj = px[j] + (right[j] - left[j]) / 2;
            const d = (cj > ci || (cj === ci && j > i) ? 1 : -1) * (ow / 2 + 0.5);
            px[i] -= d; px[j] += d;
          }
        }
      }
      if (!moved) break;
      clean = false;
    }
    for (let i = 0; i < n; i++) { x[i] = px[i] / ppu; y[i] = py[i] / ppu; }
    if (clean) break;
  }
}
