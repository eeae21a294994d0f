// Renders Markdown off the page's thread for `MarkdownPreview`: a request is `{ id, src }`, the
// answer `{ id, html }` (not yet sanitised: DOMPurify needs the page's DOM), or `html: null` when
// the HTML would be too large to hand the page (see `maxPreviewHtml`).
import { markdownToHtml, maxPreviewHtml } from './markdown';

export interface RenderRequest { id: number; src: string }
export interface RenderAnswer { id: number; html: string | null }

self.onmessage = (ev: MessageEvent<RenderRequest>) => {
  const { id, src } = ev.data;
  const html = markdownToHtml(src);
  (self as unknown as Worker).postMessage({ id, html: html.length > maxPreviewHtml(src) ? null : html } satisfies RenderAnswer);
};
