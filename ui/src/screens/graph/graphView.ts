// The WebGL graph: a graphology graph drawn by sigma, laid out by ForceAtlas2 in a worker.
// Colours come from the app's CSS variables so light and dark themes both read well.

import Graph from 'graphology';
import Sigma from 'sigma';
import { EdgeArrowProgram, EdgeRectangleProgram, type EdgeProgramType } from 'sigma/rendering';
import type { NodeDisplayData, PartialButFor } from 'sigma/types';
import type { Settings } from 'sigma/settings';
import { createNodeBorderProgram } from '@sigma/node-border';
import type { Graph as GraphDto, GraphNode } from '../../lib/bindings';
import type { LayoutProgress, LayoutRequest } from './layout.worker';

export type ColorBy = 'type' | 'scope';
export type { EdgeKind, NodeKind } from '../../lib/bindings';
import type { EdgeKind, NodeKind } from '../../lib/bindings';

export interface Palette {
  bg: string;
  panel: string;
  text: string;
  muted: string;
  border: string;
  accent: string;
  font: string;
  dark: boolean;
  type: Record<string, string>;
  scope: Record<string, string>;
  kind: Record<'index' | 'claudeMd' | 'rule' | 'ghost', string>;
  edge: Record<EdgeKind, string>;
}

export function readPalette(): Palette {
  const cs = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => cs.getPropertyValue(name).trim() || fallback;
  const bg = v('--panel', '#ffffff');
  const dark = luminance(bg) < 0.35;
  return {
    bg,
    panel: v('--panel', '#ffffff'),
    text: v('--text', '#1b1f24'),
    muted: v('--muted', '#5d6673'),
    border: v('--border', '#dde1e7'),
    accent: v('--accent', '#3b5bdb'),
    font: v('--sans', 'system-ui, sans-serif'),
    dark,
    type: dark
      ? { user: '#b197fc', feedback: '#ff922b', project: '#4dabf7', reference: '#38d9a9', none: '#adb5bd' }
      : { user: '#7048e8', feedback: '#e8590c', project: '#1c7ed6', reference: '#0ca678', none: '#868e96' },
    scope: dark ? { private: '#7c96ff', team: '#f783ac' } : { private: '#3b5bdb', team: '#d6336c' },
    kind: dark
      ? { index: '#e6e9ee', claudeMd: '#fcc419', rule: '#e599f7', ghost: '#6c7480' }
      : { index: '#1b1f24', claudeMd: '#e0a800', rule: '#ae3ec9', ghost: '#9aa1ab' },
    edge: dark
      ? { link: 'rgba(170,180,195,0.55)', indexPointer: 'rgba(124,150,255,0.30)', include: 'rgba(252,196,25,0.75)' }
      : { link: 'rgba(60,70,85,0.55)', indexPointer: 'rgba(59,91,219,0.45)', include: 'rgba(224,168,0,0.9)' },
  };
}

function luminance(color: string): number {
  const m = /^#([0-9a-f]{6})$/i.exec(color);
  if (!m) return 1;
  const n = parseInt(m[1], 16);
  return (0.2126 * ((n >> 16) & 255) + 0.7152 * ((n >> 8) & 255) + 0.0722 * (n & 255)) / 255;
}

/** A colour blended towards the background: what non-matching nodes fade to during a search. */
function fade(color: string, bg: string, amount: number): string {
  const p = (c: string) => {
    const m = /^#([0-9a-f]{6})$/i.exec(c);
    if (m) { const n = parseInt(m[1], 16); return [(n >> 16) & 255, (n >> 8) & 255, n & 255]; }
    const r = /rgba?\(([^)]+)\)/.exec(c);
    return r ? r[1].split(',').slice(0, 3).map((s) => +s) : [128, 128, 128];
  };
  const a = p(color), b = p(bg);
  const mix = a.map((x, i) => Math.round(x * (1 - amount) + b[i] * amount));
  return `rgb(${mix.join(',')})`;
}

/** Graphs with fewer nodes than this are framed at a readable size instead of filling the canvas
 *  (`GraphView.frameSmall`); the e2e layout check asks larger ones to use both axes. */
const SMALL_GRAPH = 10;

/** A stable pseudo-random number in [0, 1) from a string: seeds the first layout. */
function hash01(s: string, salt: number): number {
  let h = 2166136261 ^ salt;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  h = Math.imul(h ^ (h >>> 15), 2246822507);
  h = Math.imul(h ^ (h >>> 13), 3266489909);
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

export interface Filters {
  kinds: Set<NodeKind>;
  types: Set<string>;
  search: string;
  colorBy: ColorBy;
}

type NodeAttrs = {
  x: number; y: number; size: number; label: string; kind: NodeKind; path: string | null;
  memoryType: string | null; scope: string | null; degree: number;
  color?: string; borderColor?: string; borderSize?: number; type?: string;
};

export interface Hover { id: string; node: GraphNode; x: number; y: number }

export class GraphView {
  graph = new Graph<NodeAttrs>({ type: 'directed', multi: true, allowSelfLoops: true });
  sigma: Sigma<NodeAttrs>;
  private worker: Worker | null = null;
  /** Small graphs show every label, so the layout makes room for them. */
  private allLabels = false;
  private run = 0;
  private order: string[] = [];
  private matches = new Set<string>();
  private byId = new Map<string, GraphNode>();
  filters: Filters = { kinds: new Set(), types: new Set(), search: '', colorBy: 'type' };
  palette: Palette;
  onLayout: (settling: boolean) => void = () => {};
  /** How long the last layout took, and how many iterations it ran (shown by the e2e test). */
  lastLayoutMs = 0;
  lastIterations = 0;
  private layoutStarted = 0;
  /** The node the keyboard is on (ringed), or none (`moveKeyboard`). */
  private kbd: string | null = null;
  /** Where the keyboard's node was last said to be on screen, to tell its listener only of moves. */
  private kbdAt = '';
  /** Told where the keyboard's node is on screen after each frame that moved it (its tooltip
   *  follows it), and null when there is none. */
  onKeyboard: (h: Hover | null) => void = () => {};

  constructor(
    container: HTMLElement,
    private handlers: { click: (n: GraphNode) => void; hover: (h: Hover | null) => void },
  ) {
    this.palette = readPalette();
    const NodeProgram = createNodeBorderProgram<NodeAttrs>({
      borders: [
        { size: { attribute: 'borderSize', defaultValue: 0 }, color: { attribute: 'borderColor' } },
        { size: { fill: true }, color: { attribute: 'color' } },
      ],
      drawHover: (ctx, data, settings) => this.drawHover(ctx, data, settings),
      drawLabel: (ctx, data, settings) => this.drawLabel(ctx, data, settings),
    });
    this.sigma = new Sigma<NodeAttrs>(this.graph, container, {
      defaultNodeType: 'node',
      nodeProgramClasses: { node: NodeProgram },
      edgeProgramClasses: {
        arrow: EdgeArrowProgram as unknown as EdgeProgramType<NodeAttrs>,
        line: EdgeRectangleProgram as unknown as EdgeProgramType<NodeAttrs>,
      },
      defaultEdgeType: 'line',
      renderEdgeLabels: false,
      labelSize: 12,
      labelWeight: '500',
      labelDensity: 0.6,
      labelGridCellSize: 110,
      labelRenderedSizeThreshold: 7,
      zIndex: true,
      minCameraRatio: 0.02,
      maxCameraRatio: 4,
      stagePadding: 50,
      hideEdgesOnMove: false,
      nodeReducer: (id, a) => this.nodeReducer(id, a),
      edgeReducer: (id, a) => this.edgeReducer(id, a as unknown as { kind: EdgeKind }),
    });
    this.applyTheme();
    this.sigma.on('clickNode', ({ node }) => {
      const n = this.byId.get(node);
      if (n) handlers.click(n);
    });
    this.sigma.on('enterNode', ({ node }) => {
      const n = this.byId.get(node);
      const d = this.sigma.getNodeDisplayData(node);
      if (!n || !d) return;
      const p = this.sigma.framedGraphToViewport(d);
      handlers.hover({ id: node, node: n, x: p.x, y: p.y });
      container.style.cursor = 'pointer';
    });
    this.sigma.on('leaveNode', () => {
      handlers.hover(null);
      container.style.cursor = '';
    });
    this.sigma.getCamera().on('updated', () => handlers.hover(null));
    this.sigma.on('beforeRender', () => { this.drawnLabels.length = 0; this.labelsDrawn = []; });
    this.sigma.on('afterRender', () => this.tellKeyboard());
  }

  /** Label boxes drawn in the current frame (flat x0, y0, x1, y1), to skip colliding labels. */
  private drawnLabels: number[] = [];
  /** The labels drawn in the last frame, left and right ends in canvas pixels (for tests). */
  private labelsDrawn: { x0: number; x1: number; text: string }[] = [];
  private labelWidths = new Map<string, number>();
  private measureCtx: CanvasRenderingContext2D | null = null;

  /** A label's rendered width in pixels, in the label font (cached). */
  private labelWidth(label: string, font: string): number {
    const key = font + '\u0000' + label;
    let w = this.labelWidths.get(key);
    if (w === undefined) {
      this.measureCtx ??= document.createElement('canvas').getContext('2d');
      if (!this.measureCtx) return label.length * 7;
      this.measureCtx.font = font;
      w = this.measureCtx.measureText(label).width;
      if (this.labelWidths.size > 20000) this.labelWidths.clear();
      this.labelWidths.set(key, w);
    }
    return w;
  }

  private labelFont(settings: Settings<NodeAttrs>): string {
    return `${settings.labelWeight} ${settings.labelSize}px ${settings.labelFont}`;
  }

  /** The canvas's width in CSS pixels, which labels must stay inside. */
  private canvasWidth(ctx: CanvasRenderingContext2D): number {
    return this.sigma ? this.sigma.getDimensions().width : ctx.canvas.width / (window.devicePixelRatio || 1);
  }

  /** `label` cut with an ellipsis to at most `room` pixels (whole when it fits). */
  private fitLabel(label: string, font: string, room: number): { text: string; w: number } {
    const whole = this.labelWidth(label, font);
    if (whole <= room) return { text: label, w: whole };
    const chars = Array.from(label);
    let lo = 0, hi = chars.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.labelWidth(chars.slice(0, mid).join('') + '…', font) <= room) lo = mid;
      else hi = mid - 1;
    }
    const text = chars.slice(0, lo).join('') + '…';
    return { text, w: this.labelWidth(text, font) };
  }

  /** Where a label goes so it stays inside the canvas: right of the disc, else left of it,
   *  else on the roomier side cut with an ellipsis (the hover and the side panel show it whole).
   *  `gap` is the space between the disc and the text. */
  private placeLabel(label: string, font: string, x: number, r: number, gap: number, width: number): { text: string; x: number; w: number } {
    const margin = 4;
    const right = width - margin - (x + r + gap), left = x - r - gap - margin;
    const w = this.labelWidth(label, font);
    if (w <= right) return { text: label, x: x + r + gap, w };
    if (w <= left) return { text: label, x: x - r - gap - w, w };
    const fit = this.fitLabel(label, font, Math.max(right, left));
    return { ...fit, x: right >= left ? x + r + gap : x - r - gap - fit.w };
  }

  /** sigma's label, right of the disc (left of it at the canvas's right edge), but never over a
   *  label already drawn in this frame and never past the canvas. */
  private drawLabel(ctx: CanvasRenderingContext2D, data: PartialButFor<NodeDisplayData, 'x' | 'y' | 'size' | 'label' | 'color'>, settings: Settings<NodeAttrs>) {
    if (!data.label) return;
    const size = settings.labelSize;
    const font = this.labelFont(settings);
    const at = this.placeLabel(data.label, font, data.x, data.size, 3, this.canvasWidth(ctx));
    const x0 = at.x - 1, x1 = x0 + at.w + 2;
    const y0 = data.y - size * 0.62, y1 = data.y + size * 0.62;
    const d = this.drawnLabels;
    for (let i = 0; i < d.length; i += 4) {
      if (x0 < d[i + 2] && x1 > d[i] && y0 < d[i + 3] && y1 > d[i + 1]) return;
    }
    d.push(x0, y0, x1, y1);
    this.labelsDrawn.push({ x0: at.x, x1: at.x + at.w, text: at.text });
    ctx.fillStyle = settings.labelColor.color ?? this.palette.text;
    ctx.font = font;
    ctx.fillText(at.text, at.x, data.y + size / 3);
  }

  private drawHover(ctx: CanvasRenderingContext2D, data: PartialButFor<NodeDisplayData, 'x' | 'y' | 'size' | 'label' | 'color'>, settings: Settings<NodeAttrs>) {
    const p = this.palette;
    ctx.beginPath();
    ctx.arc(data.x, data.y, data.size + 3, 0, Math.PI * 2);
    ctx.strokeStyle = p.accent;
    ctx.lineWidth = 2;
    ctx.stroke();
    // The keyboard's node: search matches are drawn with the ring above too, so it gets a
    // second, wider one outside it, on a halo of the background that keeps it clear of edges.
    if ((data as { key?: string }).key === this.kbd) {
      ctx.beginPath();
      ctx.arc(data.x, data.y, data.size + 8, 0, Math.PI * 2);
      ctx.strokeStyle = p.panel;
      ctx.lineWidth = 6;
      ctx.stroke();
      ctx.strokeStyle = p.accent;
      ctx.lineWidth = 3;
      ctx.stroke();
    }
    if (!data.label) return;
    const font = `600 ${settings.labelSize}px ${settings.labelFont}`;
    const at = this.placeLabel(data.label, font, data.x, data.size, 6, this.canvasWidth(ctx));
    const y = data.y;
    ctx.font = font;
    ctx.fillStyle = p.panel;
    ctx.globalAlpha = 0.92;
    ctx.fillRect(at.x - 3, y - settings.labelSize / 2 - 3, at.w + 6, settings.labelSize + 6);
    ctx.globalAlpha = 1;
    ctx.fillStyle = p.text;
    ctx.fillText(at.text, at.x, y + settings.labelSize / 3);
  }

  applyTheme() {
    this.palette = readPalette();
    this.sigma.setSetting('labelColor', { color: this.palette.text });
    this.sigma.setSetting('labelFont', this.palette.font);
    this.labelWidths.clear();
    this.sigma.refresh();
  }

  setFilters(f: Partial<Filters>) {
    Object.assign(this.filters, f);
    const q = this.filters.search.trim().toLowerCase();
    this.matches = new Set();
    if (q) {
      for (const n of this.byId.values()) {
        if (n.label.toLowerCase().includes(q) || (n.path ?? '').toLowerCase().includes(q)) this.matches.add(n.id);
      }
    }
    this.sigma.refresh({ skipIndexation: false });
  }

  searchMatches(): GraphNode[] {
    return [...this.matches].map((id) => this.byId.get(id)!).filter((n) => this.visible(n));
  }

  visible(n: { kind: NodeKind; memoryType: string | null }): boolean {
    if (!this.filters.kinds.has(n.kind)) return false;
    if (n.kind === 'memory' && !this.filters.types.has(n.memoryType ?? 'none')) return false;
    return true;
  }

  colorOf(a: { kind: NodeKind; memoryType: string | null; scope: string | null }): string {
    const p = this.palette;
    if (a.kind === 'memory') {
      return this.filters.colorBy === 'scope' ? p.scope[a.scope ?? 'private'] : p.type[a.memoryType ?? 'none'];
    }
    if (a.kind === 'index' && this.filters.colorBy === 'scope') return p.scope[a.scope ?? 'private'];
    return p.kind[a.kind];
  }

  private nodeReducer(id: string, a: NodeAttrs): Partial<NodeDisplayData> & Record<string, unknown> {
    const p = this.palette;
    if (!this.visible(a)) return { ...a, hidden: true };
    let color = this.colorOf(a);
    let borderColor = color;
    let borderSize = 0;
    if (a.kind === 'ghost') {
      borderColor = color;
      color = p.bg;
      borderSize = 0.42;
    } else if (a.kind !== 'memory') {
      borderColor = p.text;
      borderSize = 0.2;
    }
    const searching = this.filters.search.trim() !== '';
    // The keyboard's node is drawn in full with its label and ring, whatever the search fades.
    if (id === this.kbd) return { ...a, color, borderColor, borderSize, highlighted: true, forceLabel: true, zIndex: 3 };
    if (searching && !this.matches.has(id)) {
      return { ...a, color: fade(color, p.bg, 0.82), borderColor: fade(borderColor, p.bg, 0.82), borderSize, label: '', zIndex: 0 };
    }
    if (searching) return { ...a, color, borderColor, borderSize, highlighted: true, forceLabel: this.matches.size <= 40, zIndex: 2, size: a.size * 1.4 };
    return { ...a, color, borderColor, borderSize, zIndex: a.kind === 'memory' ? 1 : 2 };
  }

  private edgeReducer(id: string, a: { kind: EdgeKind }): Record<string, unknown> {
    const g = this.graph;
    const s = g.getNodeAttributes(g.source(id)), t = g.getNodeAttributes(g.target(id));
    if (!this.visible(s) || !this.visible(t)) return { hidden: true };
    const p = this.palette;
    let color = p.edge[a.kind];
    if (this.filters.search.trim() && !(this.matches.has(g.source(id)) || this.matches.has(g.target(id)))) {
      color = p.dark ? 'rgba(120,130,140,0.10)' : 'rgba(120,130,140,0.10)';
    }
    return { ...a, color, size: a.kind === 'include' ? 2.5 : a.kind === 'link' ? 1.6 : 1.2, type: a.kind === 'indexPointer' ? 'line' : 'arrow' };
  }

  /** CLAUDE.md files and rules are named by their path: there are often several CLAUDE.md. */
  labelOf: (n: GraphNode) => string = (n) => n.label;

  /** Replaces the data, keeping the positions of nodes that were already there. */
  setData(data: GraphDto) {
    const g = this.graph;
    const old = new Map<string, { x: number; y: number }>();
    g.forEachNode((k, a) => old.set(k, { x: a.x, y: a.y }));
    // A different project (or a first load) gets a full layout; a few new nodes only a short one.
    const kept = data.nodes.reduce((k, x) => k + (old.has(x.id) ? 1 : 0), 0);
    const fresh = kept < data.nodes.length / 2;
    if (fresh) old.clear();
    this.byId = new Map(data.nodes.map((n) => [n.id, n]));
    const degree = new Map<string, number>();
    const neighbour = new Map<string, string>();
    for (const e of data.edges) {
      if (!this.byId.has(e.source) || !this.byId.has(e.target)) continue;
      degree.set(e.source, (degree.get(e.source) ?? 0) + 1);
      degree.set(e.target, (degree.get(e.target) ?? 0) + 1);
      if (!neighbour.has(e.target)) neighbour.set(e.target, e.source);
      if (!neighbour.has(e.source)) neighbour.set(e.source, e.target);
    }
    const n = data.nodes.length;
    const base = n > 2000 ? 2.2 : n > 300 ? 3.5 : 7;
    const radius = Math.sqrt(n) * 10;
    g.clear();
    let added = 0;
    for (const node of data.nodes) {
      const deg = degree.get(node.id) ?? 0;
      let pos = old.get(node.id);
      if (!pos) {
        added++;
        const nb = neighbour.get(node.id);
        const np = nb ? old.get(nb) : undefined;
        const ang = hash01(node.id, 1) * Math.PI * 2;
        const r = np ? 5 * hash01(node.id, 2) + 1 : radius * Math.sqrt(hash01(node.id, 2));
        pos = { x: (np?.x ?? 0) + r * Math.cos(ang), y: (np?.y ?? 0) + r * Math.sin(ang) };
      }
      const size = node.kind === 'index' ? base * 2.2
        : node.kind === 'claudeMd' ? base * 1.6
        : node.kind === 'rule' ? base * 1.25
        : node.kind === 'ghost' ? base * 0.9
        : base * (1 + Math.min(1.2, Math.log2(1 + deg) * 0.3));
      g.addNode(node.id, {
        x: pos.x, y: pos.y, size, label: this.labelOf(node), kind: node.kind, path: node.path,
        memoryType: node.memoryType, scope: node.scope, degree: deg,
      });
    }
    for (const e of data.edges) {
      if (g.hasNode(e.source) && g.hasNode(e.target)) g.addEdge(e.source, e.target, { kind: e.kind });
    }
    this.order = data.nodes.map((x) => x.id);
    // Small graphs label everything; big ones label what has room (zoom in for more).
    const small = n <= 300;
    this.allLabels = small;
    this.sigma.setSetting('labelRenderedSizeThreshold', small ? 0 : 7);
    this.sigma.setSetting('labelGridCellSize', small ? 40 : 110);
    this.sigma.setSetting('labelDensity', small ? 2 : 0.6);
    this.sigma.setSetting('hideEdgesOnMove', data.edges.length > 4000);
    this.setFilters({});
    // An empty graph has nothing to lay out, but is settled all the same (layout says so).
    if (fresh || added > 0 || n === 0) this.layout(fresh ? (n > 2000 ? 200 : n > 400 ? 300 : 500) : Math.min(120, 20 + added * 4));
  }

  private layout(iterations: number) {
    const g = this.graph;
    const n = this.order.length;
    if (n === 0) { this.onLayout(false); return; }
    const index = new Map(this.order.map((id, i) => [id, i]));
    const x = new Float32Array(n), y = new Float32Array(n), size = new Float32Array(n), labelWidth = new Float32Array(n);
    const settings = this.sigma.getSettings();
    const font = this.labelFont(settings);
    this.order.forEach((id, i) => {
      const a = g.getNodeAttributes(id);
      x[i] = a.x; y[i] = a.y; size[i] = a.size;
      if (this.allLabels && a.label) labelWidth[i] = this.labelWidth(a.label, font);
    });
    const edges: number[] = [];
    g.forEachEdge((_e, _a, s, t) => { edges.push(index.get(s)!, index.get(t)!); });
    if (!this.worker) {
      this.worker = new Worker(new URL('./layout.worker.ts', import.meta.url), { type: 'module' });
      this.worker.onmessage = (ev: MessageEvent<LayoutProgress>) => {
        const { run, x: nx, y: ny, done } = ev.data;
        if (run !== this.run || nx.length !== this.order.length) return;
        const pos = new Map<string, number>(this.order.map((id, i) => [id, i]));
        this.graph.updateEachNodeAttributes((id, a) => {
          const i = pos.get(id);
          if (i !== undefined) { a.x = nx[i]; a.y = ny[i]; }
          return a;
        }, { attributes: ['x', 'y'] });
        if (done) {
          this.frameSmall();
          this.lastLayoutMs = performance.now() - this.layoutStarted;
          this.onLayout(false);
        }
      };
    }
    this.run++;
    // The layout moves every node: sigma fits them to the view again as they move.
    this.sigma.setCustomBBox(null);
    this.layoutStarted = performance.now();
    this.lastIterations = iterations;
    this.onLayout(true);
    const dims = this.sigma.getDimensions();
    const req: LayoutRequest = {
      run: this.run, x, y, size, labelWidth, edges: Uint32Array.from(edges), iterations,
      view: { width: dims.width, height: dims.height, padding: this.sigma.getStagePadding() },
      labelSize: settings.labelSize,
      allLabels: this.allLabels,
    };
    this.worker.postMessage(req, [x.buffer, y.buffer, size.buffer, labelWidth.buffer, req.edges.buffer]);
  }

  /** A graph of a few nodes is not stretched over the whole canvas: sigma fits any graph's
   *  extent to the view, which flings two lone files to opposite corners, a label cut off at
   *  the edge. Below `SMALL_GRAPH` nodes the frame is widened until the closest two sit about
   *  a label's width apart, in the middle of the canvas. */
  private frameSmall() {
    this.sigma.setCustomBBox(null);
    this.sigma.refresh();
    const ids = this.graph.nodes();
    if (ids.length < 2 || ids.length >= SMALL_GRAPH) return;
    const font = this.labelFont(this.sigma.getSettings());
    const pts = ids.map((id) => this.sigma.graphToViewport(this.graph.getNodeAttributes(id)));
    let closest = Infinity;
    for (let i = 0; i < pts.length; i++) {
      for (let j = i + 1; j < pts.length; j++) closest = Math.min(closest, Math.hypot(pts[i].x - pts[j].x, pts[i].y - pts[j].y));
    }
    const widest = Math.max(...ids.map((id) => this.labelWidth(this.graph.getNodeAttribute(id, 'label') ?? '', font)));
    const target = Math.max(160, widest + 48);
    if (!(closest > target && Number.isFinite(closest))) return;
    // Sigma scales the frame's longer side to the view: widening both sides by k shrinks every
    // on-screen distance by k, about the same centre.
    const k = closest / target;
    const { x: [x0, x1], y: [y0, y1] } = this.sigma.getBBox();
    const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2, hx = ((x1 - x0) / 2) * k, hy = ((y1 - y0) / 2) * k;
    this.sigma.setCustomBBox({ x: [cx - hx, cx + hx], y: [cy - hy, cy + hy] });
    this.sigma.refresh();
  }

  /** The node with `id`, as the engine sent it. */
  node(id: string): GraphNode | undefined {
    return this.byId.get(id);
  }

  /** The nodes `id` links to and those linking to it (each once, whatever the kind of edge). */
  neighbours(id: string): { out: GraphNode[]; in: GraphNode[] } {
    if (!this.graph.hasNode(id)) return { out: [], in: [] };
    const of = (ids: string[]) => [...new Set(ids)].filter((x) => x !== id).map((x) => this.byId.get(x)).filter((n): n is GraphNode => !!n);
    return { out: of(this.graph.outNeighbors(id)), in: of(this.graph.inNeighbors(id)) };
  }

  /** The nodes drawn now (not hidden by a filter) with their centres on screen. */
  private drawn(): { id: string; x: number; y: number }[] {
    const all: { id: string; x: number; y: number }[] = [];
    this.graph.forEachNode((id) => {
      const d = this.sigma.getNodeDisplayData(id);
      if (!d || d.hidden) return;
      const p = this.sigma.framedGraphToViewport(d);
      all.push({ id, x: p.x, y: p.y });
    });
    return all;
  }

  /** The keyboard's node, when it is still drawn. */
  keyboardNode(): string | null {
    if (!this.kbd) return null;
    const d = this.sigma.getNodeDisplayData(this.kbd);
    return d && !d.hidden ? this.kbd : null;
  }

  /**
   * Moves the keyboard's ring and answers the node it is on now (null when nothing is drawn).
   *
   * `start`: onto the node it was on, if still drawn, else the one nearest the middle of the view.
   * An arrow: onto the nearest node in that direction on screen, as the eye reads the picture.
   * (Following edges instead would leave nodes without links unreachable, and a link's
   * direction on screen is arbitrary.) Candidates lie within 60° either side of the arrow; the
   * score is the distance along the arrow plus twice the distance across it, so a node straight
   * ahead wins over a nearer one off to the side. With none in that cone, any node on that side
   * of the line through the current one will do; with none there, the ring stays.
   */
  moveKeyboard(how: 'start' | 'left' | 'right' | 'up' | 'down'): string | null {
    const all = this.drawn();
    const cur = this.keyboardNode();
    let to: string | null = cur;
    if (how === 'start' || !cur) {
      if (!cur) {
        const { width, height } = this.sigma.getDimensions();
        let best = Infinity;
        for (const n of all) {
          const d = Math.hypot(n.x - width / 2, n.y - height / 2);
          if (d < best) { best = d; to = n.id; }
        }
      }
    } else {
      const here = all.find((n) => n.id === cur)!;
      const [ux, uy] = how === 'left' ? [-1, 0] : how === 'right' ? [1, 0] : how === 'up' ? [0, -1] : [0, 1];
      let best = Infinity, bestWide = Infinity, wide: string | null = null;
      for (const n of all) {
        if (n.id === cur) continue;
        const dx = n.x - here.x, dy = n.y - here.y;
        const along = dx * ux + dy * uy, across = Math.abs(dx * uy - dy * ux);
        if (along <= 0.5) continue;
        const score = along + 2 * across;
        if (across <= along * Math.sqrt(3)) {
          if (score < best) { best = score; to = n.id; }
        } else if (score < bestWide) { bestWide = score; wide = n.id; }
      }
      if (best === Infinity && wide) to = wide;
    }
    this.setKeyboard(to);
    return to;
  }

  /** Puts the keyboard's ring on `id` (or takes it away), bringing the node into view. */
  setKeyboard(id: string | null) {
    this.kbd = id;
    this.kbdAt = '';
    // In full: the reducers draw the ring and the label.
    this.sigma.refresh();
    if (!id) return;
    const p = this.viewportOf(id);
    const { width, height } = this.sigma.getDimensions();
    const margin = 48;
    if (p && (p.x < margin || p.y < margin || p.x > width - margin || p.y > height - margin)) {
      const d = this.sigma.getNodeDisplayData(id)!;
      this.sigma.getCamera().animate({ x: d.x, y: d.y }, { duration: 250 });
    }
  }

  private tellKeyboard() {
    const id = this.keyboardNode();
    const n = id ? this.byId.get(id) : undefined;
    const p = id ? this.viewportOf(id) : null;
    const at = n && p ? `${id}@${Math.round(p.x)},${Math.round(p.y)}` : '';
    if (at === this.kbdAt) return;
    this.kbdAt = at;
    this.onKeyboard(n && p ? { id: id!, node: n, x: p.x, y: p.y } : null);
  }

  focus(id: string) {
    const d = this.sigma.getNodeDisplayData(id);
    if (!d) return;
    this.sigma.getCamera().animate({ x: d.x, y: d.y, ratio: 0.25 }, { duration: 400 });
  }

  reset() {
    this.sigma.getCamera().animatedReset({ duration: 300 });
  }

  zoom(inOut: 1 | -1) {
    const c = this.sigma.getCamera();
    if (inOut > 0) c.animatedZoom({ duration: 200 });
    else c.animatedUnzoom({ duration: 200 });
  }

  /** Where a node is on screen, relative to the container (for tests and tooltips). */
  viewportOf(id: string): { x: number; y: number } | null {
    const d = this.sigma.getNodeDisplayData(id);
    return d ? this.sigma.framedGraphToViewport(d) : null;
  }

  /** The labels of the last frame and the canvas's width: e2e checks none runs past the edge. */
  labels(): { labels: { x0: number; x1: number; text: string }[]; width: number } {
    return { labels: this.labelsDrawn.slice(), width: this.sigma.getDimensions().width };
  }

  /** Every drawn node's centre on the canvas (flat x, y pairs) and the canvas size: what the
   *  e2e tests measure the layout's quality on. */
  positions(): { pts: number[]; width: number; height: number } {
    const pts: number[] = [];
    this.graph.forEachNode((id) => {
      const d = this.sigma.getNodeDisplayData(id);
      if (!d || d.hidden) return;
      const p = this.sigma.framedGraphToViewport(d);
      pts.push(p.x, p.y);
    });
    const { width, height } = this.sigma.getDimensions();
    return { pts, width, height };
  }

  kill() {
    this.worker?.terminate();
    this.worker = null;
    this.sigma.kill();
  }
}
