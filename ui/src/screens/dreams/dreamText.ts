// Words and small formatters for the Dreams screen.

import type { BackgroundRun, DreamFileAction, DreamState, JobName, ProviderChoice, RunOutcome, SchedulerEvent } from '../../lib/bindings';

/** "in 5 minutes", "in 3 hours", "now" for a time in ms since the epoch. */
export function fromNow(ms: number, now = Date.now()): string {
  const m = Math.round((ms - now) / 60_000);
  if (m <= 0) return 'now';
  if (m < 60) return m === 1 ? 'in a minute' : `in ${m} minutes`;
  const h = Math.round(m / 60);
  if (h < 36) return h === 1 ? 'in an hour' : `in ${h} hours`;
  return `in ${Math.round(h / 24)} days`;
}

/** "just now", "12 minutes ago", "3 hours ago", "2 days ago"; one wording with every relative time
 *  (a time ahead of this clock says so: a lock stamped on another machine or before the clock
 *  was set back). */
export { ago } from '../../lib/time';

export function hours(h: number): string {
  return h >= 100 ? `${Math.round(h)}` : h.toFixed(1);
}

export const ENGINES: Record<ProviderChoice, string> = {
  offline: 'Offline (rules only)',
  'claude-cli': 'Claude Code CLI',
  anthropic: 'Anthropic API',
  openai: 'OpenAI-compatible',
};

export const STATE: Record<DreamState, { label: string; tone: '' | 'good' | 'warn' | 'bad' | 'rule' | 'subtle' }> = {
  pending: { label: 'pending', tone: 'warn' },
  applied: { label: 'applied', tone: 'good' },
  rejected: { label: 'rejected', tone: 'subtle' },
  undone: { label: 'undone', tone: 'rule' },
  failed: { label: 'failed', tone: 'bad' },
};

export const ACTION: Record<DreamFileAction, { label: string; tone: string }> = {
  added: { label: 'added', tone: 'good' },
  changed: { label: 'changed', tone: 'warn' },
  merged: { label: 'merged', tone: 'rule' },
  removed: { label: 'removed', tone: 'bad' },
};

export const JOB: Record<JobName, string> = { extraction: 'Extraction', dream: 'Dream', 'team-sync': 'Team sync', 'claude-code-check': 'Claude Code check' };

/** A run's job for people: a job a newer Mneme added (no `job` here) goes by the name its log gives it. */
export function jobOf(run: BackgroundRun): string {
  return run.job ? JOB[run.job] : `${run.newerJob ?? 'A job'} (a newer Mneme's job)`;
}

export const OUTCOME: Record<RunOutcome, string> = { done: 'good', skipped: 'subtle', failed: 'bad', cancelled: 'warn', newer: 'subtle' };

/** A run's outcome for its badge: one a newer Mneme recorded (`newer`) goes by the name its log gives it. */
export function outcomeOf(run: BackgroundRun): string {
  return run.outcome === 'newer' ? `finished (a newer Mneme's outcome: '${run.newerOutcome ?? 'unknown'}')` : run.outcome;
}

/** `+1 ~3 −1`, in words for screen readers. */
export function counts(added: number, changed: number, removed: number): { short: string; long: string } {
  const words = [
    added && `${added} added`,
    changed && `${changed} changed`,
    removed && `${removed} removed`,
  ].filter(Boolean) as string[];
  return { short: `+${added} ~${changed} −${removed}`, long: words.length ? words.join(', ') : 'no changes' };
}

/** The last part of a path, for a scheduler target (a memory folder, a transcript). */
export function lastPart(path: string): string {
  const parts = path.replace(/\/+$/, '').split('/');
  const tail = parts.pop() ?? path;
  // A memory folder is always called `memory`: its project folder names it better.
  return tail === 'memory' && parts.length ? `${parts.pop()}/memory` : tail;
}

/** One line for a live scheduler event. */
export function eventLine(e: SchedulerEvent): string {
  switch (e.kind) {
    case 'started':
      return `${JOB[e.job]} started: ${lastPart(e.target)}`;
    case 'progress':
      return `${JOB[e.job]}: ${e.message}`;
    case 'finished':
      return `${jobOf(e.run)} ${outcomeOf(e.run)}: ${e.run.summary}`;
  }
}
