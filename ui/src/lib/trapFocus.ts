// An inline confirmation ("Delete for good?", "Discard this run?") is a question the page waits
// on: it takes the keyboard when it opens and Escape closes it (lib/reveal.ts). Tab kept inside
// it until then, as in a modal dialog: otherwise Tab walks out into the page behind, where a
// keyboard or screen-reader user can go on working while the question stays open above,
// unanswered and out of sight. Escape (or answering) is always the way out, so only a question
// that Escape closes is held this way (WCAG 2.1.2, no keyboard trap).

const TABBABLE = 'a[href], button, input:not([type=hidden]), select, textarea, [tabindex]:not([tabindex="-1"])';

/** What Tab can reach inside `node`, in page order: enabled and drawn. */
export function tabbables(node: HTMLElement): HTMLElement[] {
  return [...node.querySelectorAll<HTMLElement>(TABBABLE)].filter((el) => !el.matches(':disabled') && el.tabIndex >= 0 && el.getClientRects().length > 0);
}

/** Keeps Tab and Shift+Tab inside `node`, wrapping from its last stop to its first and back.
 *  Answers the function that lets go. A mouse click elsewhere still moves focus out. */
export function trapFocus(node: HTMLElement): () => void {
  const onkey = (e: KeyboardEvent) => {
    if (e.key !== 'Tab' || e.altKey || e.ctrlKey || e.metaKey) return;
    const stops = tabbables(node);
    const at = stops.indexOf(document.activeElement as HTMLElement);
    // From the first stop backwards, the last forwards, or from the question itself (focused
    // whole while its buttons wait), the next stop is at the other end.
    if (!stops.length) e.preventDefault();
    else if (e.shiftKey && at <= 0) { e.preventDefault(); stops[stops.length - 1].focus(); }
    else if (!e.shiftKey && (at < 0 || at === stops.length - 1)) { e.preventDefault(); stops[0].focus(); }
  };
  node.addEventListener('keydown', onkey);
  return () => node.removeEventListener('keydown', onkey);
}
