// The one way the UI reaches the engine. Every operation, its request and its answer come
// from the generated bindings (`./bindings`, made from the api's one list of operations), and
// both back ends answer in the same shape, so nothing here knows any single operation.
// `HttpTransport` speaks `mneme serve`'s contract: `POST /api/{method}` with a bearer token and
// the request as the JSON body; live updates over SSE. `TauriTransport` speaks the desktop
// shell's: one command per operation (`mergeMemory` → `merge_memory`) taking the request as
// `{ req }`, live updates from the typed events, and the desktop-only actions.

import { invoke } from '@tauri-apps/api/core';
import { commands, events, type About, type CommandFix, type EditorRun, type ErrorCode, type FilesChanged, type SchedulerEvent } from './bindings';

/** An error as the engine reports it: a code and a sentence that says what to do, and the
 *  command to run when that is the fix (its `command`, shown apart with a Copy button). */
export class ApiError extends Error {
  constructor(public code: ErrorCode | 'network' | 'unauthorized', message: string, public status = 0, public command: CommandFix | null = null) {
    super(message);
  }
}

/** The engine's `command` of an error's JSON, when it has the shape the bindings give it. */
function commandOf(e: unknown): CommandFix | null {
  const c = e && typeof e === 'object' && 'command' in e ? (e as { command: unknown }).command : null;
  if (!c || typeof c !== 'object') return null;
  const { before, line, after } = c as Record<string, unknown>;
  return typeof before === 'string' && typeof line === 'string' && typeof after === 'string' ? { before, line, after } : null;
}

export type LiveStatus = 'connecting' | 'live' | 'offline';

/** What only the desktop app can do; `null` in the browser (the buttons are hidden there). */
export interface DesktopActions {
  /** Opens a file in the editor Claude Code would pick; resolves when a desktop editor closes. */
  openInEditor(path: string): Promise<EditorRun>;
  /** Shows a folder, or the folder holding a file, in the file manager. */
  reveal(path: string): Promise<void>;
  /** The app's version and the commit it was built from. */
  about(): Promise<About>;
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
    throw new ApiError(err?.code ?? 'io', err?.message ?? `The server answered ${res.status} ${res.statusText}.`, res.status, commandOf(err));
  }

  // The event stream is read with `fetch`, not EventSource, so the token travels in the
  // Authorization header like every call: EventSource can only put it in the URL, and URLs
  // end up in DevTools' HAR exports (the "sanitized" ones strip only headers), net logs and
  // proxies. `mneme serve` refuses a token in the URL. Reconnects as EventSource would: after
  // a dropped stream, not after a refused token.
  subscribe(onChanged: (paths: string[]) => void, onStatus: (s: LiveStatus) => void, onScheduler?: (e: SchedulerEvent) => void): () => void {
    const stop = new AbortController();
    const dispatch = (event: string, data: string) => {
      if (event === 'changed') {
        try {
          const parsed = JSON.parse(data) as Partial<FilesChanged>;
          onChanged(parsed.paths ?? []);
        } catch {
          onChanged([]);
        }
      } else if (event === 'scheduler') {
        // `mneme serve --scheduler` only; a malformed event is dropped (the run log has the run).
        try {
          onScheduler?.(JSON.parse(data) as SchedulerEvent);
        } catch {
          /* see above */
        }
      }
    };
    const connect = async () => {
      while (!stop.signal.aborted) {
        onStatus('connecting');
        try {
          const res = await fetch(`${this.base}/api/events`, {
            headers: { Authorization: `Bearer ${this.token}`, Accept: 'text/event-stream' },
            cache: 'no-store',
            signal: stop.signal,
          });
          if (!res.ok || !res.body) {
            // A refused token stays refused (EventSource gives up on any non-200 too).
            onStatus('offline');
            return;
          }
          onStatus('live');
          await readEvents(res.body, dispatch);
        } catch {
          /* the server stopped or the stream broke: try again below */
        }
        if (stop.signal.aborted) return;
        onStatus('connecting');
        await new Promise((r) => setTimeout(r, RECONNECT_MS));
      }
    };
    void connect();
    return () => stop.abort();
  }
}

/** How long to wait before reconnecting a dropped event stream (EventSource's default is 3 s). */
const RECONNECT_MS = 3000;

/** Reads a `text/event-stream` body until it ends, calling `dispatch` with each event's type
 *  and data (data lines joined by newlines); comments and unknown fields are skipped. */
async function readEvents(body: ReadableStream<Uint8Array>, dispatch: (event: string, data: string) => void): Promise<void> {
  const reader = body.getReader();
  const utf8 = new TextDecoder();
  let buffered = '';
  let event = 'message';
  let data: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += utf8.decode(value, { stream: true });
    // A `\r` at the end may be half of a `\r\n` still arriving: keep it for the next piece.
    const cut = buffered.endsWith('\r') ? buffered.length - 1 : buffered.length;
    const lines = buffered.slice(0, cut).split(/\r\n|\r|\n/);
    // The last piece is a line still arriving.
    buffered = (lines.pop() ?? '') + buffered.slice(cut);
    for (const line of lines) {
      if (line === '') {
        if (data.length) dispatch(event, data.join('\n'));
        event = 'message';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
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
    return new ApiError(code, message, 0, commandOf(e));
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
    about: () => this.invoke<About>('about', {}),
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
          await this.call<unknown>('watching', {});
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

type Commands = typeof commands;

/** The desktop shell's commands that are not api operations (see `DESKTOP_ONLY` in src-tauri). */
const DESKTOP_ONLY = ['openInEditor', 'reveal', 'about'] as const;

/** An api operation's name, as `mneme serve` spells it. */
export type Method = Exclude<keyof Commands, (typeof DESKTOP_ONLY)[number]>;
/** What an operation takes. */
export type RequestOf<K extends Method> = Parameters<Commands[K]>[0];
/** What an operation answers (the generated command's success value). */
export type AnswerOf<K extends Method> = Extract<Awaited<ReturnType<Commands[K]>>, { status: 'ok' }>['data'];

/** Every api operation as a typed function, plus the desktop-only actions. */
export type Engine = { [K in Method]: (req: RequestOf<K>) => Promise<AnswerOf<K>> } & {
  /** Open in editor / reveal: only in the desktop app. */
  readonly desktop: DesktopActions | null;
};

/** The operations over any transport, one per generated command. */
export function engine(t: Transport): Engine {
  const api: Record<string, unknown> = { desktop: t.desktop };
  for (const method of Object.keys(commands)) {
    if ((DESKTOP_ONLY as readonly string[]).includes(method)) continue;
    api[method] = (req: object) => t.call(method, req);
  }
  return api as Engine;
}
