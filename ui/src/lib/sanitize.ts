// DOMPurify over the previews' HTML: removes anything that could run script or restyle the app
// (script and style elements, event-handler attributes, `javascript:` and other unsafe URLs).
// It needs a DOM, so it runs on the page; marked runs in the preview worker.

import DOMPurify from 'dompurify';

// Links in a preview open outside the app and tell the target nothing about it: `<a>` and an
// image map's `<area>`, which would otherwise navigate the app's own window. Registered once,
// on the module's own DOMPurify instance.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if ((node.tagName === 'A' || node.tagName === 'AREA') && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noreferrer');
  }
});

export function sanitizeHtml(html: string): string {
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true },
    // A preview must not restyle the app around it.
    FORBID_TAGS: ['style'],
    FORBID_ATTR: ['style'],
    // An `id` or `name` from a memory must not shadow the page's globals (`id="__TAURI_INTERNALS__"`
    // would make the browser page think it runs in the desktop app): DOMPurify prefixes them.
    SANITIZE_NAMED_PROPS: true,
  });
}
