// ForceAtlas2 off the main thread, for a bounded number of iterations, so the graph stays
// interactive while it settles. Deterministic: the same positions in give the same positions out.
// Intermediate positions are posted every few iterations so the user sees the layout converge.

import Graph from 'graphology';
import forceAtlas2 from 'graphology-layout-forceatlas2';

export interface LayoutRequest {
  run: number;
  x: Float32Array;
  y: Float32Array;
  size: Float32Array;
  /** Flat pairs of node indexes. */
  edges: Uint32Array;
  iterations: number;
}

export interface LayoutProgress {
  run: number;
  x: Float32Array;
  y: Float32Array;
  done: boolean;
}

let current = 0;

self.onmessage = async (ev: MessageEvent<LayoutRequest>) => {
  const { run, x, y, size, edges, iterations } = ev.data;
  current = run;
  const n = x.length;
  const g = new Graph({ type: 'undirected', multi: false, allowSelfLoops: false });
  for (let i = 0; i < n; i++) g.addNode(i, { x: x[i], y: y[i], size: size[i] });
  for (let i = 0; i + 1 < edges.length; i += 2) {
    const a = edges[i], b = edges[i + 1];
    if (a !== b && !g.hasEdge(a, b)) g.addEdge(a, b);
  }
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
    g.forEachNode((k, a) => { ox[+k] = a.x; oy[+k] = a.y; });
    const last = done + chunk >= iterations;
    (self as unknown as Worker).postMessage({ run, x: ox, y: oy, done: last } satisfies LayoutProgress, [ox.buffer, oy.buffer]);
    // Let a newer request pre-empt this one.
    await new Promise((r) => setTimeout(r, 0));
    if (current !== run) return;
  }
};
