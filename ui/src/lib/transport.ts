// The one way the UI reaches the engine. `HttpTransport` speaks `mneme serve`'s contract:
// `POST /api/{method}` with a bearer token and a JSON body; live updates over SSE.
// `TauriTransport` speaks the desktop shell's: one command per method (`mergeMemory` →
// `merge_memory`) taking the same body as `{ req: body }`, live updates from the typed
// `files-changed` event, and the desktop-only actions (open in editor, reveal).

import type {
  ContextRequest, ContextView, ErrorCode, FileText, Graph, Health, HomeInfo, MachineSettings,
  MemoryDetail, MemoryEditRequest, MemorySummary, NewMemoryRequest, ProjectInfo, Saved, Trashed,
  TouchedView, TrashListing,
} from './types';
import type { AutoMemDirChange, MergeReport, WatchedFolder } from './types';
import type { ProviderInput, ProviderKind, ProviderTest, ProviderView, RecallView } from './types';
import type { ExtractionReport, InboxItemView, InboxView, PromoteTo, ReviewMode } from './types';
import { invoke } from '@tauri-apps/api/core';
import type {
  TeamHistory, TeamLeadChange, TeamPullResult, TeamPushResult, TeamRemote, TeamRestored, TeamServerSetting, TeamSignIn,
  TeamSignInPoll, TeamStatus, TeamSyncResult,
} from './types';
import type { BackgroundRun, DailyLog, DreamGates, DreamHistory, DreamModeName, DreamView, JobName, SchedulerEvent } from './types';
import { commands, events, type EditorRun } from './bindings';

/** An error as the engine reports it: a code and a sentence that says what to do. */
export class ApiError extends Error {
  constructor(public code: ErrorCode | 'network' | 'unauthorized', message: string, public status = 0) {
    super(message);
  }
}

export type LiveStatus = 'connecting' | 'live' | 'offline';

/** What only the desktop app can do; `null` in the browser (the buttons are hidden there). */
export interface DesktopActions {
  /** Opens a file in the editor Claude Code would pick; resolves when a desktop editor closes. */
  openInEditor(path: string): Promise<EditorRun>;
  /** Shows a folder, or the folder holding a file, in the file manager. */
  reveal(path: string): Promise<void>;
}

export interface Transport {
  call<T>(method: string, body: object): Promise<T>;
  /** Calls `onChanged` with the changed paths whenever the engine sees memory change on disk,
   *  and `onScheduler` with each event of the background scheduler, where one runs. */
  subscribe(onChanged: (paths: string[]) => void, onStatus: (s: LiveStatus) => void, onScheduler?: (e: SchedulerEvent) => void): () => void;
  readonly desktop: DesktopActions | null;
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
  readonly desktop = null;
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

  subscribe(onChanged: (paths: string[]) => void, onStatus: (s: LiveStatus) => void, onScheduler?: (e: SchedulerEvent) => void): () => void {
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
    // `mneme serve --scheduler` only; a malformed event is dropped (the run log has the run).
    es.addEventListener('scheduler', (ev) => {
      try {
        onScheduler?.(JSON.parse((ev as MessageEvent).data) as SchedulerEvent);
      } catch {
        /* see above */
      }
    });
    return () => es.close();
  }
}

/** Whether the page runs inside the desktop shell (Tauri's IPC bridge is present). */
export function inTauri(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}

/** The method names the desktop shell has commands for, straight from the generated bindings. */
type Command = keyof typeof commands;

/** `mergeMemory` → `merge_memory`: serve's method names are the commands' names in camelCase. */
function commandName(method: Command): string {
  return method.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** A rejected command as an `ApiError`: the api's `{code, message}`, or Tauri's own string. */
function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) {
    const { code, message } = e as { code: ErrorCode; message: string };
    return new ApiError(code, message);
  }
  const text = e instanceof Error ? e.message : String(e);
  // Tauri rejects with a plain string when the arguments do not fit the command.
  return new ApiError(/^invalid args/.test(text) ? 'invalid_input' : 'io', text);
}

/** The desktop shell: Tauri commands over IPC. Answers are the api's DTOs themselves. */
export class TauriTransport implements Transport {
  readonly desktop: DesktopActions = {
    openInEditor: (path) => this.invoke<EditorRun>('open_in_editor', { path }),
    reveal: (path) => this.invoke<void>('reveal', { path }),
  };

  async call<T>(method: string, body: object): Promise<T> {
    if (!Object.hasOwn(commands, method)) {
      throw new ApiError('not_found', `The desktop app has no command for '${method}'.`);
    }
    return this.invoke<T>(commandName(method as Command), { req: body });
  }

  private async invoke<T>(command: string, args: Record<string, unknown>): Promise<T> {
    try {
      return await invoke<T>(command, args);
    } catch (e) {
      throw toApiError(e);
    }
  }

  subscribe(onChanged: (paths: string[]) => void, onStatus: (s: LiveStatus) => void, onScheduler?: (e: SchedulerEvent) => void): () => void {
    onStatus('connecting');
    let stopped = false;
    let unlisten: (() => void) | null = null;
    let unlistenScheduler: (() => void) | null = null;
    if (onScheduler) {
      events.schedulerActivity.listen((e) => onScheduler(e.payload.event)).then(
        (un) => (stopped ? un() : (unlistenScheduler = un)),
        () => {},
      );
    }
    events.filesChanged
      .listen((e) => onChanged(e.payload.paths))
      .then(async (un) => {
        if (stopped) return un();
        unlisten = un;
        // The shell answers `watching` with an error when its file watcher could not start.
        try {
          await this.call('watching', {});
          onStatus('live');
        } catch {
          onStatus('offline');
        }
      }, () => onStatus('offline'));
    return () => {
      stopped = true;
      unlisten?.();
      unlistenScheduler?.();
    };
  }
}

/** The transport for where the page runs: Tauri's IPC in the desktop app, else `mneme serve`. */
export function pickTransport(token: () => string | null): Transport | null {
  if (inTauri()) return new TauriTransport();
  const t = token();
  return t ? new HttpTransport(t) : null;
}

/** Typed methods over any transport. Where serve wraps an answer in an object (`{path}`,
 *  `{changes}`, `{text}`, `{folders}`) the desktop shell answers the bare value; both are
 *  accepted. */
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
    /** The memory manifest Claude Code's recall shows the model. */
    manifest: async (cwd: string) => {
      const r = await t.call<string | { text: string }>('manifest', { cwd });
      return typeof r === 'string' ? r : r.text;
    },
    /** Merges the orphan project folder `from` into the memory of the project at `cwd`. */
    mergeMemory: (from: string, cwd: string, dryRun = false) => t.call<MergeReport>('mergeMemory', { from, cwd, dryRun }),
    /** Sets `autoMemoryDirectory`; `null` removes it. */
    setAutoMemoryDirectory: (value: string | null) => t.call<AutoMemDirChange>('setAutoMemoryDirectory', { value }),
    /** The model provider: settings, the write-only key, a connection test. */
    providerSettings: () => t.call<ProviderView>('providerSettings', {}),
    setProviderSettings: (req: ProviderInput) => t.call<ProviderView>('setProviderSettings', req),
    /** Stores the key in the OS keyring; `null` removes it. */
    setProviderKey: (key: string | null) => t.call<ProviderView>('setProviderKey', { key }),
    testProvider: (req: ProviderInput) => t.call<ProviderTest>('testProvider', req),
    /** Which memories Claude Code would recall for `prompt` in `cwd`; `provider` absent = the saved one. */
    recall: (cwd: string, prompt: string, provider?: ProviderKind) => t.call<RecallView>('recall', { cwd, prompt, provider }),
    /** The review inbox of the project at `cwd`. */
    inbox: (cwd: string) => t.call<InboxView>('inbox', { cwd }),
    setReviewMode: (cwd: string, mode: ReviewMode) => t.call<InboxView>('setReviewMode', { cwd, mode }),
    inboxKeep: (id: string) => t.call<InboxItemView>('inboxKeep', { id }),
    /** Replaces one proposed file (whole content); with `keep`, writes the item too. */
    inboxEdit: (id: string, file: string, content: string, keep: boolean) =>
      t.call<InboxItemView>('inboxEdit', { id, file, content, keep }),
    inboxDiscard: (id: string) => t.call<InboxItemView>('inboxDiscard', { id }),
    inboxPromote: (id: string, to: PromoteTo) => t.call<InboxItemView>('inboxPromote', { id, to }),
    /** Extraction over the project's newest transcript; `provider` absent = offline. */
    runExtraction: (cwd: string, provider?: ProviderKind) => t.call<ExtractionReport>('runExtraction', { cwd, provider }),
    watching: async () => {
      const r = await t.call<WatchedFolder[] | { folders: WatchedFolder[] }>('watching', {});
      return Array.isArray(r) ? r : r.folders;
    },
    /** Team memory: status from disk and keyring; `teamRemote` asks the team server. */
    teamStatus: (cwd: string) => t.call<TeamStatus>('teamStatus', { cwd }),
    teamRemote: (cwd: string) => t.call<TeamRemote>('teamRemote', { cwd }),
    /** Saves the team server's address; `null` forgets it. */
    setTeamServer: (url: string | null) => t.call<TeamServerSetting>('setTeamServer', { url }),
    teamPull: (cwd: string) => t.call<TeamPullResult>('teamPull', { cwd }),
    teamPush: (cwd: string) => t.call<TeamPushResult>('teamPush', { cwd }),
    teamSync: (cwd: string) => t.call<TeamSyncResult>('teamSync', { cwd }),
    teamHistory: (cwd: string, key: string) => t.call<TeamHistory>('teamHistory', { cwd, key }),
    teamRollback: (cwd: string, key: string, version: number) => t.call<TeamLeadChange>('teamRollback', { cwd, key, version }),
    teamRemove: (cwd: string, key: string) => t.call<TeamLeadChange>('teamRemove', { cwd, key }),
    teamRestoreConflict: (cwd: string, trashId: string) => t.call<TeamRestored>('teamRestoreConflict', { cwd, trashId }),
    teamSignIn: (server?: string) => t.call<TeamSignIn>('teamSignIn', { server }),
    teamSignInPoll: (id: string) => t.call<TeamSignInPoll>('teamSignInPoll', { id }),
    teamSignOut: () => t.call<{ server: string }>('teamSignOut', {}),
    /** Auto dream of the project at `cwd`: the gates, the mode, dream now, history, review, undo. */
    dreamStatus: (cwd: string) => t.call<DreamGates>('dreamStatus', { cwd }),
    setDreamMode: (cwd: string, mode: DreamModeName) => t.call<DreamGates>('setDreamMode', { cwd, mode }),
    /** `provider` absent = the offline dream. */
    runDream: (cwd: string, provider?: ProviderKind) => t.call<DreamView>('runDream', { cwd, provider }),
    dreamHistory: (cwd: string) => t.call<DreamHistory>('dreamHistory', { cwd }),
    dream: (cwd: string, id: string) => t.call<DreamView>('dream', { cwd, id }),
    approveDream: (cwd: string, id: string) => t.call<DreamView>('approveDream', { cwd, id }),
    rejectDream: (cwd: string, id: string) => t.call<DreamView>('rejectDream', { cwd, id }),
    /** `force` undoes even though files changed since the dream (their text stays in its record). */
    undoDream: (cwd: string, id: string, force = false) => t.call<DreamView>('undoDream', { cwd, id, force }),
    /** A daily log; `date` (`YYYY-MM-DD`) absent = today. */
    dailyLog: (cwd: string, date?: string) => t.call<DailyLog>('dailyLog', { cwd, date }),
    appendDailyLog: (cwd: string, text: string) => t.call<DailyLog>('appendDailyLog', { cwd, text }),
    /** The newest runs of the background scheduler (the app, `mneme serve --scheduler`, `mneme daemon`). */
    backgroundRuns: async (limit = 20, job?: JobName) => {
      const r = await t.call<BackgroundRun[] | { runs: BackgroundRun[] }>('backgroundRuns', { limit, job });
      return Array.isArray(r) ? r : r.runs;
    },
    /** Open in editor / reveal: only in the desktop app. */
    desktop: t.desktop,
  };
}

export type Engine = ReturnType<typeof engine>;
