// Markdown previews of CLAUDE.md files and memory bodies, fed to `{@html}`: marked renders
// (GitHub-flavoured, the dialect these files are written in), DOMPurify then removes anything
// that could run script or restyle the app (script and style elements, event-handler
// attributes, `javascript:` and other unsafe URLs). Nothing here is about exactness: how Claude
// Code reads a file is the engine's business; this is only how a person sees it.

import { Marked, type TokenizerAndRendererExtension } from 'marked';
import DOMPurify from 'dompurify';

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

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const marked = new Marked({ gfm: true, async: false }, { extensions: [wikilink] });

// Links in a preview open outside the app and tell the target nothing about it. Registered once,
// on the module's own DOMPurify instance.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noreferrer');
  }
});

export function renderMarkdown(src: string): string {
  const html = marked.parse(src) as string;
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true },
    // A preview must not restyle the app around it.
    FORBID_TAGS: ['style'],
    FORBID_ATTR: ['style'],
  });
}
