// The engine's problems say what to run in backticks, with FILE standing for the file
// (`iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new` for a memory saved as Windows-1252). Shown
// as one run of text that command was hard to pick out and could not be pasted as it stood: here
// a message is split into its prose and its commands, and where the screen knows the file, FILE
// becomes that file, so the command can be copied and run as shown.

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
 * `message` as prose and the commands it puts in backticks. With `file`, a command naming FILE
 * runs in the file's folder (`cd` there first, `~/` under `home`) with FILE as the file's name,
 * and the prose names it too, so "move FILE.new over FILE" names the same file the command does
 * and can be done in the same terminal. A backtick with no partner (or an empty pair) is left in
 * the prose.
 */
export function messageParts(message: string, given?: { path: string; name: string; home?: string }): Part[] {
  // A problem about the folder itself names no file: FILE stays as written.
  const file = given?.name && given.path ? given : undefined;
  const parts: Part[] = [];
  const text = (t: string) => {
    if (!t) return;
    const s = file ? t.replace(/\bFILE\b/g, file.name) : t;
    const last = parts[parts.length - 1];
    if (last && 'text' in last) last.text += s;
    else parts.push({ text: s });
  };
  let rest = message;
  for (;;) {
    const open = rest.indexOf('`');
    const close = open < 0 ? -1 : rest.indexOf('`', open + 1);
    if (close < 0) break;
    text(rest.slice(0, open));
    const code = rest.slice(open + 1, close);
    if (code.trim()) parts.push({ code: file ? inItsFolder(code, file) : code });
    else text(rest.slice(open, close + 1));
    rest = rest.slice(close + 1);
  }
  text(rest);
  return parts;
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
