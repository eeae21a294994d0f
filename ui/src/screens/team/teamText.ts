// Words and small formatters for the Team screen.

import type { TeamConflictKind, TeamFileStatus } from '../../lib/bindings';

/** Relative times, worded as on every screen (a time ahead of this clock says so). */
export { ago } from '../../lib/time';

/** The absolute time, for tooltips; none for a time no date holds (a server's nonsense reads "Invalid Date"). */
export function exact(ms: number | null | undefined): string {
  return ms && Math.abs(ms) <= 8.64e15 ? new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }) : '';
}

/** `sha256:0123…` → `0123456789ab` (what people compare at a glance). */
export function shortHash(h: string | null | undefined): string {
  return h ? h.replace(/^sha256:/, '').slice(0, 12) : '';
}

export const STATUS: Record<TeamFileStatus, { label: string; tone: '' | 'good' | 'warn' | 'bad' | 'rule'; help: string }> = {
  synced: { label: 'synced', tone: 'good', help: 'The same here and on the server.' },
  modified: { label: 'changed here', tone: 'rule', help: 'Changed on this machine since the last sync. Push sends it.' },
  new: { label: 'new here', tone: 'rule', help: 'Only on this machine. Push uploads it.' },
  stale: { label: 'teammate changed', tone: 'warn', help: 'A teammate changed it since this copy was synced. Pull brings their version.' },
  serverOnly: { label: 'on the server', tone: '', help: 'A teammate shared it; it is not here yet. Pull brings it.' },
  secret: { label: 'secret — held back', tone: 'bad', help: 'It holds something that looks like a secret, so it is never uploaded. Remove the secret to share it.' },
  tooLarge: { label: 'too large', tone: 'bad', help: 'Over 250,000 bytes: never uploaded. Split it into smaller files.' },
  overCap: { label: 'over the cap', tone: 'warn', help: 'Past the server’s entry limit (in sorted order), so it stays on this machine.' },
  removed: { label: 'removed by a lead', tone: 'warn', help: 'A lead removed it for everyone. It is never uploaded again; the next pull moves it to the trash.' },
  unknown: { label: 'not synced yet', tone: '', help: 'Nothing was synced from this folder yet. Sync compares it with the server.' },
};

export const CONFLICT: Record<TeamConflictKind, string> = {
  pulledOverLocalEdit: 'A pull replaced your unsynced edit with the team’s version. Your version is in the trash.',
  pushedOverTeammate: 'Your push replaced a teammate’s newer version. Theirs is kept in the file’s history.',
  deletedByTeammate: 'A lead removed this file for everyone. Your copy went to the trash (Memories → Trash).',
};

/** What a suppression reason means, in a few words. */
export function reasonText(reason: string): string {
  if (reason === 'no_oauth') return 'not signed in';
  if (reason === 'no_repo') return 'no github.com repository';
  if (reason === 'team_memory_too_many_entries' || reason === 'http_413') return 'too many entries for the server';
  if (reason === 'team_memory_storage_full') return 'the server’s storage limit for this repository is reached';
  if (reason === 'team_memory_content_full') return 'the server’s content limit for this repository is reached';
  if (reason === 'team_memory_too_many_keys') return 'one push named too many files for the server';
  if (reason === 'team_memory_key_collision') return 'two team files would be one file on a teammate’s disk';
  if (reason === 'team_memory_invalid_content') return 'a team file holds a character the server cannot store';
  const m = /^http_(\d+)$/.exec(reason);
  if (m) return `the server answered HTTP ${m[1]}`;
  return reason.replace(/_/g, ' ');
}

/** "a.md", "a.md and b.md", "a.md, b.md and c.md". */
export function listFiles(keys: string[]): string {
  return keys.length < 2 ? keys.join('') : `${keys.slice(0, -1).join(', ')} and ${keys[keys.length - 1]}`;
}

/** `n` as a word for the small counts people read in a sentence ("three times"). */
export function times(n: number): string {
  return ['never', 'once', 'twice', 'three times', 'four times', 'five times'][n] ?? `${n} times`;
}

/** What to look at when the team server keeps losing files it accepted: said to someone who may
 *  not run the server, so it names what to ask its admin about. */
export const LOST_CHECK =
  'Check the team server, or ask whoever runs it: is its disk full or failing, was it restored from an old backup, do its logs show errors when files are saved?';

/** One line of a pull result for files the server had accepted from here and no longer holds.
 *  `givenUp` are those lost `max` times in a row, which automatic pushes now hold back. */
export function forgottenLines(forgotten: string[], givenUp: string[], max: number): string[] {
  const again = forgotten.filter((k) => !givenUp.includes(k));
  const out: string[] = [];
  if (again.length) {
    out.push(`The server no longer has ${again.length === 1 ? 'a file' : `${again.length} files`} it had accepted from this computer: `
      + `${listFiles(again)}. ${again.length === 1 ? 'It is' : 'They are'} safe here, and the next push sends ${again.length === 1 ? 'it' : 'them'} again.`);
  }
  if (givenUp.length) {
    out.push(`The server has now lost ${listFiles(givenUp)} ${times(max)} in a row, so automatic pushes stop sending `
      + `${givenUp.length === 1 ? 'it' : 'them'}. ${givenUp.length === 1 ? 'It is' : 'They are'} safe here; Push sends ${givenUp.length === 1 ? 'it' : 'them'} again.`);
  }
  return out;
}
