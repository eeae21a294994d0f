// Shared app state: the engine, the current project folder, live-update ticks, theme.

import { untrack } from 'svelte';
import type { Engine, LiveStatus } from './transport';
import type { AgentScope, ProviderChoice } from './bindings';
import type { SchedulerEvent } from './bindings';
import { shortPathIn } from './paths';

/** How many scheduler events the page keeps for the live display. */
const SCHEDULER_EVENTS_KEPT = 50;

class AppState {
  api: Engine | null = null;
  /** The project folder every screen looks from. */
  cwd = $state('');
  home = $state('');
  /** Claude Code's config home, and whether it exists yet (the welcome screen says). */
  configHome = $state('');
  configHomeExists = $state(false);
  /** Bumped on every `changed` event; screens reload their data when it moves. */
  liveTick = $state(0);
  lastChanged = $state<string[]>([]);
  live = $state<LiveStatus>('connecting');
  theme = $state<'system' | 'light' | 'dark'>('system');
  ready = $state(false);
  /** The sub-agent whose memory folder the Memories screen works on; `null` = auto memory. */
  agent = $state<{ name: string; scope: AgentScope } | null>(null);
  /** A memory (relative path) another screen asked the Memories screen to open. */
  openMemory = $state<string | null>(null);
  /** Why the app cannot start, when it cannot. */
  fatal = $state('');
  /** Whether the background scheduler runs in the process the page talks to. */
  scheduler = $state(false);
  /** Its latest events, oldest first. */
  schedulerEvents = $state<SchedulerEvent[]>([]);
}

export const app = new AppState();

/** Keeps a scheduler event for the live display. */
export function noteSchedulerEvent(e: SchedulerEvent) {
  app.schedulerEvents = [...app.schedulerEvents.slice(-(SCHEDULER_EVENTS_KEPT - 1)), e];
}

/** The folder memory operations work on: the project's auto memory, or the chosen sub-agent's
 *  memory folder (`agent`, `agentScope`). */
export function memoryFolder(): { cwd: string; agent?: string; agentScope?: AgentScope } {
  return app.agent ? { cwd: app.cwd, agent: app.agent.name, agentScope: app.agent.scope } : { cwd: app.cwd };
}

export function engineOf(): Engine {
  if (!app.api) throw new Error('engine not ready');
  return app.api;
}

const THEME_KEY = 'mneme.theme';

export function loadTheme() {
  const t = localStorage.getItem(THEME_KEY);
  app.theme = t === 'light' || t === 'dark' ? t : 'system';
  applyTheme();
}

export function cycleTheme() {
  app.theme = app.theme === 'system' ? 'light' : app.theme === 'light' ? 'dark' : 'system';
  localStorage.setItem(THEME_KEY, app.theme);
  applyTheme();
}

function applyTheme() {
  const root = document.documentElement;
  if (app.theme === 'system') root.removeAttribute('data-theme');
  else root.setAttribute('data-theme', app.theme);
}

/** Human sizes and ages. */
export function fmtNum(n: number): string {
  return n.toLocaleString('en-US');
}

export function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(1)} GB`;
}

/** "1 memory", "3 memories": a count with its noun (`many` defaults to `one` + "s"). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "today", "3 days ago", … for a whole number of days; one wording with every relative time (lib/time.ts). */
export { daysAgo as fmtAge } from './time';

export function fmtTime(ms: number | null): string {
  if (!ms) return '—';
  return new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** How sure Mneme is of a Claude Code release's behaviours, in words. With no Claude Code on
 *  this machine (`basis` `assumed`) the badge sits beside "No Claude Code was found", so it says
 *  which release's behaviour is shown and never reads as "your Claude Code was checked". */
export function fidelityLabel(r: { version: string; basis: string; fidelity: string }): { text: string; title: string } {
  if (r.basis === 'assumed') {
    return {
      text: `showing ${r.version}’s behaviour`,
      title: `No Claude Code was found on this machine, so Mneme shows what Claude Code ${r.version} does: the newest release it checks against the real binary on every test run. Nothing on this machine was checked.`,
    };
  }
  switch (r.fidelity) {
    case 'verified':
      return { text: 'release verified', title: 'Mneme checks this release against its real binary on every test run' };
    case 'bisected':
      return { text: 'release bisected', title: 'Between two releases Mneme checks against their real binaries; its behaviours were bisected' };
    default:
      return { text: 'release not verified', title: 'Outside the releases Mneme checks: the nearest known behaviours are shown' };
  }
}

/** `path` relative to `base` (the open folder) when inside it, else with the home folder shown as `~`. */
export function shortPath(path: string, base = app.cwd): string {
  return shortPathIn(path, base, app.home);
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Calls `load` once now, and again whenever the project folder changes, the engine reports a
 *  change on disk, or `also` (any other reactive value the screen depends on) changes. Call it
 *  while a component initialises: the effect lives as long as the component. */
export function reloadOnChange(load: () => void, also: () => unknown = () => undefined) {
  $effect(() => {
    void app.cwd;
    void app.liveTick;
    also();
    untrack(load);
  });
}

/** The engines a screen can run a job with: offline always, plus the configured provider when it
 *  is usable. */
export async function usableEngines(): Promise<ProviderChoice[]> {
  const p = await engineOf().providerSettings({});
  return ['offline', ...p.usable.filter((k) => k !== 'offline' && k === p.kind)];
}
