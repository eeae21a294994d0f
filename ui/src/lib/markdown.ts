// Markdown to HTML for the previews of CLAUDE.md files and memory bodies: marked renders
// (GitHub-flavoured, the dialect these files are written in). Nothing here is about exactness:
// how Claude Code reads a file is the engine's business; this is only how a person sees it.
//
// The HTML is not safe to show as it is: `sanitize.ts` cleans it. And marked takes time that
// grows faster than the text on some inputs (a 56 KB paragraph of `**a b* ` takes it ~18 s), so
// the app renders in a worker with a time limit (`preview.svelte.ts`): a memory a teammate
// shared must not freeze the window. This module therefore touches no DOM.

import { Marked, type TokenizerAndRendererExtension } from 'marked';
import { escapeHtml } from './html';

/** `[[name]]`, the wikilink some memory folders use between notes: shown as a chip, not a link. */
const wikilink: TokenizerAndRendererExtension = {
  name: 'wikilink',
  level: 'inline',
  start: (src) => src.indexOf('[['),
  tokenizer(src) {
    const m = /^\[\[([^\]\n]+)\]\]/.exec(src);
    return m ? { type: 'wikilink', raw: m[0], text: m[1] } : undefined;
  },
  renderer: (token) => `<span class="wikilink">[[${escapeHtml(token.text)}]]</span>`,
};

const marked = new Marked({ gfm: true, async: false }, { extensions: [wikilink] });

/** The HTML marked makes of `src`, not yet sanitised. */
export function markdownToHtml(src: string): string {
  return marked.parse(src) as string;
}

/** The most HTML a preview of `src` may be. Ordinary Markdown renders to one to three times its
 *  length; a link reference defined once with a long address and used thousands of times renders
 *  to hundreds of megabytes from a hundred kilobytes, which sanitising and drawing on the page's
 *  thread would freeze the window over (and could exhaust its memory). */
export function maxPreviewHtml(src: string): number {
  return Math.max(2_000_000, src.length * 8);
}
