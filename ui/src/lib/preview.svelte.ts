// A live Markdown preview that can never freeze the window. marked runs in a worker; the page
// only sanitises the answer. A render that takes longer than PREVIEW_LIMIT_MS is abandoned (the
// worker is terminated, a fresh one serves the next text) and the text is shown as written, with
// a note saying why. While one render runs, newer texts wait and only the newest is rendered, so
// typing fast never queues up work.

import { escapeHtml } from './html';
import { sanitizeHtml } from './sanitize';
import type { RenderAnswer, RenderRequest } from './markdown.worker';

/** How long a preview may take before the text is shown as written instead. Ordinary memories
 *  render in a few milliseconds; a hostile one (a teammate's, a team server's) could take minutes. */
export const PREVIEW_LIMIT_MS = 1500;
const TOO_SLOW = `took longer than ${PREVIEW_LIMIT_MS / 1000} s to render as Markdown`;
/** Texts longer than this are not rendered as Markdown at all: even off the page's thread,
 *  handing the worker megabytes on every keystroke and drawing the answer freezes the editor. */
export const PREVIEW_MAX_CHARS = 500_000;
/** How much of a text shown as written is drawn (the rest is named, not drawn). */
export const SHOWN_MAX_CHARS = 100_000;
/** A fresh worker's first render also loads the worker's script, which on a loaded machine can
 *  take a good part of a second: it gets this much longer, so no ordinary memory is shown raw. */
const WORKER_START_MS = 3000;

export class MarkdownPreview {
  /** The preview's HTML, safe to give `{@html}`. Empty until the first render answers. */
  html = $state('');
  private worker: Worker | null = null;
  private nextId = 0;
  private running: { id: number; src: string; timer: ReturnType<typeof setTimeout> } | null = null;
  private waiting: string | null = null;
  /** The last text given up on: asking again would only wait out the limit again. */
  private slowSrc: string | null = null;
  private disposed = false;

  /** Renders `src` (the newest text wins when several arrive while one renders). */
  update(src: string) {
    if (this.disposed) return;
    if (src.length > PREVIEW_MAX_CHARS) {
      // Whatever was waiting or rendering is out of date now.
      this.waiting = null;
      this.showAsWritten(src, `is ${src.length.toLocaleString('en')} characters long, too long to preview as Markdown`);
      return;
    }
    if (this.running) {
      this.waiting = src;
      return;
    }
    this.start(src);
  }

  /** Forgets what is shown and any render under way: the text is another document now (the
   *  editor opened another memory), and the last one's preview must not stand in for it. */
  reset() {
    if (this.disposed) return;
    this.html = '';
    this.waiting = null;
    if (this.running) {
      clearTimeout(this.running.timer);
      this.running = null;
      this.worker?.terminate();
      this.worker = null;
    }
  }

  /** Stops the worker; call when the screen goes away. */
  dispose() {
    this.disposed = true;
    if (this.running) clearTimeout(this.running.timer);
    this.running = null;
    this.waiting = null;
    this.worker?.terminate();
    this.worker = null;
  }

  private start(src: string) {
    if (src === this.slowSrc) {
      this.showAsWritten(src, TOO_SLOW);
      return;
    }
    const fresh = !this.worker;
    const worker = this.worker ?? this.spawn();
    const id = ++this.nextId;
    const timer = setTimeout(() => this.giveUp(id), PREVIEW_LIMIT_MS + (fresh ? WORKER_START_MS : 0));
    this.running = { id, src, timer };
    worker.postMessage({ id, src } satisfies RenderRequest);
  }

  private spawn(): Worker {
    const worker = new Worker(new URL('./markdown.worker.ts', import.meta.url), { type: 'module' });
    worker.onmessage = (ev: MessageEvent<RenderAnswer>) => {
      if (!this.running || ev.data.id !== this.running.id) return;
      const { src, timer } = this.running;
      clearTimeout(timer);
      this.running = null;
      // A newer text waits: it is drawn next, this one never (it is already out of date).
      if (this.waiting === null) {
        if (ev.data.error !== undefined) this.showAsWritten(src, `could not be rendered as Markdown (${ev.data.error})`);
        else if (ev.data.html === null) this.showAsWritten(src, 'would render to far more HTML than it has text');
        else this.html = sanitizeHtml(ev.data.html);
      }
      this.next();
    };
    // The worker itself failed (its script did not load, or it died): show the text as written
    // and start a fresh one for the next text.
    worker.onerror = (ev: ErrorEvent) => {
      ev.preventDefault();
      if (this.worker === worker) this.worker = null;
      worker.terminate();
      if (!this.running) return;
      const { src, timer } = this.running;
      clearTimeout(timer);
      this.running = null;
      if (this.waiting === null) this.showAsWritten(src, `could not be rendered as Markdown (${ev.message || 'the renderer stopped'})`);
      this.next();
    };
    this.worker = worker;
    return worker;
  }

  private giveUp(id: number) {
    if (!this.running || this.running.id !== id) return;
    const { src } = this.running;
    this.running = null;
    // The worker is still inside marked; only terminating it stops that.
    this.worker?.terminate();
    this.worker = null;
    this.slowSrc = src;
    if (this.waiting === null) this.showAsWritten(src, TOO_SLOW);
    this.next();
  }

  private showAsWritten(src: string, why: string) {
    const cut = src.length > SHOWN_MAX_CHARS;
    const more = cut ? `<p class="preview-note">… and ${(src.length - SHOWN_MAX_CHARS).toLocaleString('en')} more characters, not shown here.</p>` : '';
    this.html =
      `<p class="preview-note">This text ${escapeHtml(why)}, so ${cut ? 'its start is' : 'it is'} shown as written.</p>` +
      `<pre class="preview-raw">${escapeHtml(cut ? src.slice(0, SHOWN_MAX_CHARS) : src)}</pre>` + more;
  }

  private next() {
    const src = this.waiting;
    this.waiting = null;
    if (src !== null) this.start(src);
  }
}

/** A component's preview of `source()` (`null`: nothing to render now): rendered whenever the
 *  text changes, the worker stopped when the component goes away. Call while the component
 *  initialises. */
export function markdownPreview(source: () => string | null): MarkdownPreview {
  const preview = new MarkdownPreview();
  $effect(() => {
    const src = source();
    if (src !== null) preview.update(src);
  });
  $effect(() => () => preview.dispose());
  return preview;
}
