// Opening another screen puts the keyboard on that screen's title (its h1): a screen reader
// then says which screen opened ("Memories, heading level 1") and reads on from its top. The
// main region, which took focus before, has no name of its own, so a reader heard only "main".
// The title is made focusable by script only (tabindex -1, no Tab stop) and draws no ring
// (app.css), and focusing it does not scroll: the screen opens at its top.

import { focusLost } from './keepFocus';

/** A screen was opened and its title has not taken focus yet. */
let pending = false;

/** Focus is still where the change of screen put it (the main region), or nowhere: a screen
 *  that put it somewhere on purpose as it opened, or a reader who moved on, keeps it. */
const unclaimed = () => document.activeElement?.id === 'main' || focusLost();

function offer(title: HTMLElement) {
  pending = false;
  if (unclaimed()) title.focus({ preventScroll: true });
}

/** Called by the app once the screen it switched to (or asked for again) is on the page, focus
 *  having been put on the main region meanwhile. The title takes focus now when it is there,
 *  else as it appears (the graph screen is loaded on first use). */
export function focusScreenTitle() {
  pending = true;
  const title = document.querySelector<HTMLElement>('#main .screen-head h1');
  if (title) offer(title);
}

/** `use:screenTitle` on each screen's h1. */
export function screenTitle(node: HTMLElement) {
  node.tabIndex = -1;
  if (pending) offer(node);
}
