// One polite live region for the whole page, there from the start. Screen readers announce a
// change inside a live region they already know; a `role="status"` element inserted together
// with its text (how "Saved." used to appear) is read by some and missed by others. Messages
// that say how something the user did turned out go through it: the visible note stays
// where it is, and this region says it once more, out of sight.

// index.html holds the region, so it is in the page before anything is said into it.
let region: HTMLElement | null = null;
let pending: ReturnType<typeof setTimeout> | undefined;

function liveRegion(): HTMLElement {
  if (region?.isConnected) return region;
  region = document.getElementById('announcer');
  if (!region) {
    region = document.createElement('div');
    region.id = 'announcer';
    region.className = 'sr-only';
    region.setAttribute('role', 'status');
    region.setAttribute('aria-live', 'polite');
    region.dataset.testid = 'announcer';
    document.body.append(region);
  }
  return region;
}

/** Says `text` to screen readers. The same sentence twice in a row (a second "Saved.") is a
 *  change too: the region is emptied first and filled a moment later. */
export function announce(text: string) {
  const r = liveRegion();
  const said = text.replace(/\s+/g, ' ').trim();
  clearTimeout(pending);
  r.textContent = '';
  if (said) pending = setTimeout(() => (r.textContent = said), 50);
}

/** On a note that appears when something finished (`use:announced={text}`): its text goes to
 *  the live region when it appears and whenever `text` changes. */
export function announced(node: HTMLElement, text?: string) {
  announce(text ?? node.textContent ?? '');
  return {
    update(next?: string) {
      announce(next ?? node.textContent ?? '');
    },
  };
}
