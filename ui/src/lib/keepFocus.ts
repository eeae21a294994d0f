// A button disabled while the work it started runs (Push, Dream now, Test connection, a switch
// being written) loses the keyboard focus: the browser moves focus to <body>, and someone on
// the keyboard or a screen reader is sent back to the top of the page. Focus goes back to the
// button once it is enabled again, unless the user has put it somewhere else meanwhile. A
// button that stays disabled once done (Save, with nothing left unsaved) names where the
// keyboard goes instead: `data-disabled-focus`, a selector looked up in its section or form.

let waiting: HTMLElement | null = null;
let observer: MutationObserver | null = null;

function stop() {
  observer?.disconnect();
  observer = null;
  waiting = null;
}

/** Whether the keyboard focus is nowhere (on <body>, or on an element no longer in the page). */
export function focusLost(): boolean {
  const a = document.activeElement;
  return !a || a === document.body || !a.isConnected;
}

/** Where the keyboard goes from `t`, a control disabled under it: what it names in
 *  `data-disabled-focus`, else itself (once enabled again). */
export function disabledFocusTarget(t: HTMLElement): HTMLElement {
  const instead = t.dataset.disabledFocus;
  return (instead && (t.closest('section, form') ?? document).querySelector<HTMLElement>(instead)) || t;
}

/** Focuses `target` now if it can take focus, else once it is enabled again, unless focus has
 *  gone somewhere else by then. */
export function focusWhenEnabled(target: HTMLElement) {
  stop();
  if (!target.matches(':disabled')) {
    target.focus({ preventScroll: true });
    return;
  }
  waiting = target;
  observer = new MutationObserver(() => {
    const w = waiting;
    if (!w || !w.isConnected) return stop();
    if (w.matches(':disabled')) return;
    stop();
    if (focusLost()) w.focus({ preventScroll: true });
  });
  observer.observe(target, { attributes: true, attributeFilter: ['disabled'] });
}

/** Starts the watch (main.ts, once). */
export function keepFocusThroughBusy() {
  document.addEventListener('focusout', (e) => {
    const t = e.target;
    // The browser blurs a control it disabled with nowhere to go (no related target).
    if (e.relatedTarget || !(t instanceof HTMLElement) || !t.isConnected || !t.matches(':disabled')) return;
    focusWhenEnabled(disabledFocusTarget(t));
  });
  // Focus put anywhere else ends the wait.
  document.addEventListener('focusin', stop);
}
