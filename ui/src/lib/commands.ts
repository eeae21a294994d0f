// The engine's problems and errors carry the command that mends them as a field of their own
// (`command`: e.g. `iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new` for a memory saved as
// Windows-1252, with FILE standing for the file), together with the message as whole sentences
// before and after it; the message itself names the command too, in backticks, for the command
// line. Here such a message is laid out as the sentences before, the command set apart, and the
// sentences after, and where the screen knows the file, FILE becomes that file, so the command
// can be copied and run as shown. Backticks in the prose (paths, names) stay prose, shown as code.

import type { CommandFix } from './bindings';

/** A piece of a message: prose, or a command to show apart and offer to copy. */
export type Part = { text: string } | { code: string };

/** Characters no POSIX shell reads specially, so a path made only of them needs no quotes. */
const PLAIN = /^[A-Za-z0-9_./,:@%+=-]+$/;

/** `path` as one shell word: as it is when it can be, else in single quotes (a `'` inside
 *  closes them, is escaped and opens them again). Under `home` it starts `~/`, outside the
 *  quotes (where the shell expands it), so the command is as short as the path people see. */
export function shellWord(path: string, home = ''): string {
  const quote = (p: string) => (p !== '' && PLAIN.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`);
  const h = home.replace(/\/+$/, '');
  const rest = h && path.startsWith(`${h}/`) ? path.slice(h.length + 1) : '';
  return rest ? `~/${quote(rest)}` : quote(path);
}

/**
 * `message` laid out around its `command` (the engine's field; none, all prose): the sentences
 * before it, the command, the sentences after it. With `file`, a command naming FILE runs in the
 * file's folder (`cd` there first, `~/` under `home`) with FILE as the file's name, and the
 * prose names it too, so "move FILE.new over FILE" names the same file the command does and can
 * be done in the same terminal.
 */
export function messageParts(message: string, command?: CommandFix | null, given?: { path: string; name: string; home?: string }): Part[] {
  // A problem about the folder itself names no file: FILE stays as written.
  const file = given?.name && given.path ? given : undefined;
  const prose = (t: string): Part[] => (t ? [{ text: file ? t.replace(/\bFILE\b/g, file.name) : t }] : []);
  const cmd = command?.line?.trim();
  if (!cmd || !command) return prose(message);
  return [...prose(command.before), { code: file ? inItsFolder(cmd, file) : cmd }, ...prose(command.after)];
}

/** `relPath` (always `/`-separated, as the engine reports it) inside the folder `dir`. */
export function inFolder(dir: string, relPath: string): string {
  const sep = /\\/.test(dir) && !dir.includes('/') ? '\\' : '/';
  return `${dir.replace(/[\\/]+$/, '')}${sep}${sep === '\\' ? relPath.replace(/\//g, '\\') : relPath}`;
}

/** `code` with FILE as `file`'s name, after a `cd` to its folder: a memory's full path is long
 *  (the project's folder name under ~/.claude/projects), and written out for FILE and FILE.new
 *  alike the command was mostly path. */
function inItsFolder(code: string, file: { path: string; name: string; home?: string }): string {
  if (!/\bFILE\b/.test(code)) return code;
  // A name starting with `-` would be read as an option: `./` keeps it a file.
  const name = file.name.startsWith('-') ? `./${file.name}` : file.name;
  const named = code.replace(/\bFILE(\.new)?\b/g, (_, ext: string | undefined) => shellWord(name + (ext ?? '')));
  if (!file.path.endsWith(file.name) || file.path === file.name) return code.replace(/\bFILE(\.new)?\b/g, (_, ext: string | undefined) => shellWord(file.path + (ext ?? ''), file.home));
  const dir = file.path.slice(0, file.path.length - file.name.length).replace(/(.)[\\/]+$/, '$1');
  return `cd ${shellWord(dir, file.home)} && ${named}`;
}
