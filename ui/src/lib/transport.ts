// The one way the UI reaches the engine. `HttpTransport` speaks `mneme serve`'s contract:
// `POST /api/{method}` with a bearer token and a JSON body; live updates over SSE. A Tauri
// implementation of `Transport` slots in later without touching the screens.

import type {
  ContextRequest, ContextView, ErrorCode, FileText, Graph, Health, HomeInfo, MachineSettings,
  MemoryDetail, MemoryEditRequest, MemorySummary, NewMemoryRequest, ProjectInfo, Saved, Trashed,
  TouchedView, TrashListing,
} from './types';
import type { AutoMemDirChange, MergeReport, WatchedFolder } from './types';

/** An error as the engine reports it: a code and a sentence that says what to do. */
export class ApiError extends Error {
  constructor(public code: ErrorCode | 'network' | 'unauthorized', message: string, public status = 0) {
    super(message);
  }
}

export type LiveStatus = 'connecting' | 'live' | 'offline';

export interface Transport {
  call<T>(method: string, body: object): Promise<T>;
  /** Calls `onChanged` with the changed paths whenever the engine sees memory change on disk. */
  subscribe(onChanged: (paths: string[]) => void, onStatus: (s: LiveStatus) => void): () => void;
}

const TOKEN_KEY = 'mneme.token';

/** Takes `?token=` from the address bar into sessionStorage and strips it from the URL. */
export function takeToken(): string | null {
  const url = new URL(window.location.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete('token');
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
    return fromUrl;
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

export class HttpTransport implements Transport {
  constructor(private token: string, private base = '') {}

  async call<T>(method: string, body: object): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.base}/api/${method}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${this.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    } catch {
      throw new ApiError('network', 'Mneme is not answering. Is `mneme serve` still running? Start it again and open the link it prints.');
    }
    const text = await res.text();
    let data: unknown = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON: reported below */
    }
    if (res.ok) return data as T;
    if (res.status === 401 || res.status === 403) {
      throw new ApiError('unauthorized', 'This page’s access token was refused. Open the link `mneme serve` printed (it ends in ?token=…).', res.status);
    }
    const err = data as { code?: ErrorCode; message?: string } | null;
    throw new ApiError(err?.code ?? 'io', err?.message ?? `The server answered ${res.status} ${res.statusText}.`, res.status);
  }

  subscribe(onChanged: (paths: string[]) => void, onStatus: (s: LiveStatus) => void): () => void {
    onStatus('connecting');
    const es = new EventSource(`${this.base}/api/events?token=${encodeURIComponent(this.token)}`);
    es.onopen = () => onStatus('live');
    es.onerror = () => onStatus(es.readyState === EventSource.CLOSED ? 'offline' : 'connecting');
    es.addEventListener('changed', (ev) => {
      try {
        const data = JSON.parse((ev as MessageEvent).data) as { paths?: string[] };
        onChanged(data.paths ?? []);
      } catch {
        onChanged([]);
      }
    });
    return () => es.close();
  }
}

/** Typed methods over any transport. */
export function engine(t: Transport) {
  return {
    home: () => t.call<HomeInfo>('home', {}),
    context: (req: ContextRequest) => t.call<ContextView>('context', req),
    touched: (cwd: string, files: string[]) => t.call<TouchedView>('touched', { cwd, files }),
    readFile: (cwd: string, path: string) => t.call<FileText>('readFile', { cwd, path }),
    saveFile: (cwd: string, path: string, content: string, revision: string) =>
      t.call<Saved>('saveFile', { cwd, path, content, revision }),
    projects: () => t.call<ProjectInfo[]>('projects', {}),
    memories: (cwd: string, kind?: string, search?: string) =>
      t.call<MemorySummary[]>('memories', { cwd, kind: kind || undefined, search: search || undefined }),
    memory: (cwd: string, memory: string) => t.call<MemoryDetail>('memory', { cwd, memory }),
    createMemory: (req: NewMemoryRequest) => t.call<MemorySummary>('createMemory', req),
    saveMemory: (cwd: string, relPath: string, content: string, revision: string) =>
      t.call<Saved>('saveMemory', { cwd, relPath, content, revision }),
    editMemory: (req: MemoryEditRequest) => t.call<MemorySummary>('editMemory', req),
    deleteMemory: (cwd: string, memory: string) => t.call<Trashed>('deleteMemory', { cwd, memory }),
    trash: (cwd: string) => t.call<TrashListing>('trash', { cwd }),
    restoreMemory: async (cwd: string, id: string) => {
      const r = await t.call<string | { path: string }>('restoreMemory', { cwd, id });
      return typeof r === 'string' ? r : r.path;
    },
    health: (cwd: string) => t.call<Health>('health', { cwd }),
    fixIndex: async (cwd: string) => {
      const r = await t.call<string[] | { changes: string[] }>('fixIndex', { cwd });
      return Array.isArray(r) ? r : r.changes;
    },
    graph: (cwd: string) => t.call<Graph>('graph', { cwd }),
    machineSettings: () => t.call<MachineSettings>('machineSettings', {}),
    setAutoMemory: (on: boolean) => t.call<unknown>('setAutoMemory', { on }),
    setAutoDream: (on: boolean) => t.call<unknown>('setAutoDream', { on }),
    watch: (cwd: string) => t.call<unknown>('watch', { cwd }),
    /** Merges the orphan project folder `from` into the memory of the project at `cwd`. */
    mergeMemory: (from: string, cwd: string, dryRun = false) => t.call<MergeReport>('mergeMemory', { from, cwd, dryRun }),
    /** Sets `autoMemoryDirectory`; `null` removes it. */
    setAutoMemoryDirectory: (value: string | null) => t.call<AutoMemDirChange>('setAutoMemoryDirectory', { value }),
    watching: async () => (await t.call<{ folders: WatchedFolder[] }>('watching', {})).folders,
  };
}

export type Engine = ReturnType<typeof engine>;
