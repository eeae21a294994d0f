// Relative times ("5 minutes ago"), one wording for every screen. The times come from this
// computer's clock, from files another machine wrote (a synced folder, a copied project) and
// from a team server, so any of them can be ahead of this clock, or nonsense: a time ahead of
// the clock says so instead of reading "-3 minutes ago", and one no date can hold says that.

/**
 * How far ahead of the clock a time may be and still read "just now": two machines kept by
 * NTP differ by well under a second, a server's rounding and the time a request takes by a
 * few seconds, and saying "a clock is wrong" over that would be crying wolf.
 */
export const SKEW_MS = 60_000;

/** What a time ahead of the clock by more than [`SKEW_MS`] reads. No parentheses: screens show it
 *  inside a date's ("Dec 10, 7:45 AM (in the future: a clock is wrong)"). */
export const FUTURE = 'in the future: a clock is wrong';

/** What a time no date can hold (not a number, or past JavaScript's ±273,790 years) reads. */
export const UNKNOWN = 'at an unknown time';

/** The farthest a JavaScript `Date` reaches from the epoch, either way, in ms. */
const MAX_DATE_MS = 8.64e15;

const DAY_MS = 86_400_000;

/**
 * "just now", "5 minutes ago", "3 hours ago", "yesterday", "12 days ago", "2 months ago",
 * "3 years ago" for a time in ms since the epoch; "never" for none (`null`, or 0: the
 * engine's "not yet"), [`FUTURE`] ahead of the clock, [`UNKNOWN`] for a time no date holds
 * (`Date.parse` of a malformed string, or a server's year 300,000).
 */
export function ago(ms: number | null | undefined, now = Date.now()): string {
  if (ms === null || ms === undefined || ms === 0) return 'never';
  if (!Number.isFinite(ms) || Math.abs(ms) > MAX_DATE_MS) return UNKNOWN;
  const diff = now - ms;
  if (diff < -SKEW_MS) return FUTURE;
  const s = Math.round(diff / 1000);
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return m === 1 ? 'a minute ago' : `${m} minutes ago`;
  const h = Math.round(m / 60);
  if (h < 24) return h === 1 ? 'an hour ago' : `${h} hours ago`;
  return daysAgo(Math.round(diff / DAY_MS));
}

/**
 * The same words for a whole number of days since a change (what the engine counts for a
 * memory's age): "today", "yesterday", "12 days ago", "a month ago", …; a negative count (a
 * file dated ahead of the clock) is [`FUTURE`].
 */
export function daysAgo(days: number): string {
  if (!Number.isFinite(days)) return UNKNOWN;
  if (days < 0) return FUTURE;
  if (days < 1) return 'today';
  if (days < 2) return 'yesterday';
  if (days < 31) return `${Math.round(days)} days ago`;
  if (days < 60) return 'a month ago';
  if (days < 365) return `${Math.round(days / 30)} months ago`;
  if (days < 730) return 'a year ago';
  return `${Math.round(days / 365)} years ago`;
}

/** The longest a team sign-in code lives: the engine caps a server's `expires_in` at an hour
 *  (`mneme_team::auth::MAX_CODE_LIFETIME`), so a countdown never starts from more. */
export const MAX_CODE_LIFE_MS = 60 * 60_000;

/**
 * How long a sign-in code has to live when it is shown, in ms: the engine's `expiresInSecs`
 * (counted by the engine, so no wall clock is read here), kept within 0 and
 * [`MAX_CODE_LIFE_MS`]. From here on the countdown runs on [`timeLeft`]'s monotonic clock, as the
 * engine counts the code's life in time waited: a wall clock stepped by hand or by NTP would make
 * it jump, and one already wrong when the code is shown would start it wrong.
 */
export function codeLife(expiresInSecs: number): number {
  const life = expiresInSecs * 1000;
  return Number.isFinite(life) ? Math.min(MAX_CODE_LIFE_MS, Math.max(0, life)) : 0;
}

/** What is left of `lifeMs` counted from `shownAt`, both read from a monotonic clock
 *  (`performance.now()`); never below 0, nor above the life (a clock read before `shownAt`). */
export function timeLeft(lifeMs: number, shownAt: number, now: number): number {
  return Math.min(lifeMs, Math.max(0, lifeMs - (now - shownAt)));
}

/** A countdown as a clock face, rounded up to the second: "14:05", "0:09", "0:00". */
export function countdown(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}
