// Renders Markdown off the page's thread for `MarkdownPreview`: a request is `{ id, src }`, the
// answer `{ id, html }` (not yet sanitised: DOMPurify needs the page's DOM).
import { markdownToHtml } from './markdown';

export interface RenderRequest { id: number; src: string }
export interface RenderAnswer { id: number; html: string }

self.onmessage = (ev: MessageEvent<RenderRequest>) => {
  const { id, src } = ev.data;
  (self as unknown as Worker).postMessage({ id, html: markdownToHtml(src) } satisfies RenderAnswer);
};
