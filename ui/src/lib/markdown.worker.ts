// Renders Markdown off the page's thread for `MarkdownPreview`: a request is `{ id, src }`, the
// answer `{ id, html }` (not yet sanitised: DOMPurify needs the page's DOM), or `html: null` when
// the HTML would be too large to hand the page (see `maxPreviewHtml`).
import { markdownToHtml, maxPreviewHtml } from './markdown';

export interface RenderRequest { id: number; src: string }
/** `error`: marked threw (a text nested deeper than its recursion goes overflows the stack). */
export interface RenderAnswer { id: number; html: string | null; error?: string }

self.onmessage = (ev: MessageEvent<RenderRequest>) => {
  const { id, src } = ev.data;
  let answer: RenderAnswer;
  try {
    const html = markdownToHtml(src);
    answer = { id, html: html.length > maxPreviewHtml(src) ? null : html };
  } catch (e) {
    // A stack overflow is a text nested deeper than marked recurses; any other failure says
    // what it was.
    const deep = e instanceof RangeError && /call stack/i.test(e.message);
    answer = { id, html: null, error: deep ? 'it nests too deeply' : String(e) };
  }
  (self as unknown as Worker).postMessage(answer satisfies RenderAnswer);
};
