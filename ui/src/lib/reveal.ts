// A panel or form that appears because the user asked for it (New memory, Trash, Rename) is
// brought into view and given the keyboard: on a long page it would otherwise open below the
// fold while focus stays on the button. Escape inside it cancels, as in a dialog, and when it
// closes the keyboard goes back to what opened it: the browser would drop focus to <body>
// with the panel, and someone on the keyboard or a screen reader would start over from the
// top of the page.

import { disabledFocusTarget, focusWhenEnabled } from './keepFocus';
import { trapFocus } from './trapFocus';

const lost = () => !document.activeElement || document.activeElement === document.body || !document.activeElement.isConnected;

/** Gives focus back to `opener` after an update that took it away (a panel closed, a row
 *  redrawn), when it is still on the page and can take it; else to the screen's main region,
 *  one step later, so that an opener found by another closing panel (a confirmation inside a
 *  form that closed with it) wins over that fallback. */
export function returnFocus(opener: HTMLElement | null) {
  queueMicrotask(() => {
    if (!lost()) return;
    if (opener?.isConnected && opener.matches(':disabled')) {
      // Disabled by what the panel started: focus comes back when it is enabled again, or goes
      // where it names (Clear, once the key is gone: the key's box; lib/keepFocus).
      focusWhenEnabled(disabledFocusTarget(opener));
    } else if (opener?.isConnected) {
      opener.focus({ preventScroll: true });
      // A returned focus the reader cannot see is no better than a lost one. The panel's own
      // smooth scroll may still be running (closed right after it opened): it is stopped first,
      // or it would carry the opener on past the folder bar.
      window.scrollTo({ top: window.scrollY, left: window.scrollX, behavior: 'instant' });
      opener.scrollIntoView?.({ block: 'nearest' });
    } else {
      queueMicrotask(() => {
        if (lost()) document.getElementById('main')?.focus({ preventScroll: true });
      });
    }
  });
}

export function reveal(node: HTMLElement, oncancel?: () => void) {
  const active = document.activeElement;
  const opener = active instanceof HTMLElement && active !== document.body && !node.contains(active) ? active : null;
  node.scrollIntoView?.({ block: 'nearest', behavior: 'smooth' });
  // A confirmation names the control to start on (its Cancel, not the destructive button), or
  // itself when its buttons wait for something (it is then read out whole).
  const first = (node.matches('[data-autofocus]') ? node : null) ?? node.querySelector<HTMLElement>('[data-autofocus]')
    ?? node.querySelector<HTMLElement>('input:not([type=hidden]), textarea, select, button');
  first?.focus({ preventScroll: true });
  const onkey = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && oncancel) {
      e.preventDefault();
      e.stopPropagation();
      oncancel();
    }
  };
  node.addEventListener('keydown', onkey);
  // A confirmation (role alertdialog) that Escape closes keeps Tab inside until it is answered
  // (lib/trapFocus.ts); one without a way out by Escape is left open to Tab.
  const untrap = oncancel && node.matches('[role="alertdialog"]') ? trapFocus(node) : null;
  return {
    update(next?: () => void) {
      oncancel = next;
    },
    destroy() {
      node.removeEventListener('keydown', onkey);
      untrap?.();
      // Only when the keyboard was in the panel (or already fell to <body> with it): a panel
      // closed by a click elsewhere leaves focus where that click put it.
      // (After the update that closed the panel: the opener may be redrawn or re-enabled by it.)
      const now = document.activeElement;
      if (!now || now === document.body || node.contains(now)) returnFocus(opener);
    },
  };
}
