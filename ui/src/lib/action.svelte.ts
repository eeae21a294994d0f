// The one way a screen runs something the user asked for (a call to the engine behind a
// button): busy while it runs, so the button can be disabled and a second click ignored; the
// error it ended with, kept until the next run, for the screen to show.

import { errorMessage } from './app.svelte';

export class Action {
  /** Whether a run is going. */
  busy = $state(false);
  /** Runs going: a reload started while another runs (the project changed) must not end `busy`
   *  when the earlier one finishes. */
  #running = 0;

  /** `busy` set from the start: for a load that begins as the component mounts, so the first
   *  frame shows "loading" rather than an empty form. */
  constructor(busy = false) {
    this.busy = busy;
  }
  /** What the last run threw; `null` after a run that succeeded. */
  error = $state<unknown>(null);

  /** The error as the sentence to show, `''` when there is none. */
  get message(): string {
    return this.error == null ? '' : errorMessage(this.error);
  }

  /** Runs `work`: clears the error first, keeps `busy` set meanwhile, and answers what `work`
   *  answered, or `undefined` when it threw (then `error` holds why, unless `handled` took the
   *  error and answered true). Buttons that start a run are disabled while `busy`. */
  async run<T>(work: () => Promise<T>, handled?: (e: unknown) => boolean): Promise<T | undefined> {
    this.#running++;
    this.busy = true;
    this.error = null;
    try {
      return await work();
    } catch (e) {
      if (!handled?.(e)) this.error = e;
      return undefined;
    } finally {
      this.busy = --this.#running > 0;
    }
  }

  clear() {
    this.error = null;
  }
}
