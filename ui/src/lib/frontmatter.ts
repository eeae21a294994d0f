// Reads and edits the frontmatter of a memory file in place: only the lines of fields the user
// changed are rewritten, so unknown keys (originSessionId, created, last_read, …), comments,
// order and the frontmatter generation (top-level `type:` or `metadata: { type: }`) survive.

export interface Fields {
  name: string;
  description: string;
  type: string;
}

export interface Parsed {
  hasFrontmatter: boolean;
  /** Frontmatter lines, without the `---` fences. */
  lines: string[];
  /** Line ending used by the file. */
  eol: string;
  /** The file's UTF-8 byte-order mark (`\uFEFF`), or ''. The frontmatter is read after it, as
   *  the memory scan and Claude Code's recall read it (a file saved by a Windows editor), and
   *  `withFields` writes it back first. */
  bom: string;
  body: string;
  fields: Fields;
  /** `top` = older generation (`type:` at the top level), `metadata` = current. */
  typeAt: 'top' | 'metadata' | 'none';
}

const OPEN = /^---[ \t]*\r?\n/;

export function parseMemory(file: string): Parsed {
  const bom = file.startsWith('\uFEFF') ? '\uFEFF' : '';
  const content = file.slice(bom.length);
  const eol = content.includes('\r\n') ? '\r\n' : '\n';
  const open = OPEN.exec(content);
  if (!open) return { hasFrontmatter: false, lines: [], eol, bom, body: content, fields: { name: '', description: '', type: '' }, typeAt: 'none' };
  const rest = content.slice(open[0].length);
  const close = /^---[ \t]*(\r?\n|$)/m.exec(rest);
  if (!close) return { hasFrontmatter: false, lines: [], eol, bom, body: content, fields: { name: '', description: '', type: '' }, typeAt: 'none' };
  const fm = rest.slice(0, close.index);
  const body = rest.slice(close.index + close[0].length);
  const lines = fm.replace(/\r?\n$/, '').split(/\r?\n/);
  if (fm === '') lines.length = 0;
  const top = (key: string) => {
    const span = findKey(lines, key, 0, lines.length, 0);
    return span ? readScalar(lines, span) : null;
  };
  let type = top('type');
  let typeAt: Parsed['typeAt'] = type !== null ? 'top' : 'none';
  if (type === null) {
    const meta = findKey(lines, 'metadata', 0, lines.length, 0);
    if (meta) {
      const child = findKey(lines, 'type', meta.start + 1, meta.end, -1);
      if (child) {
        type = readScalar(lines, child);
        typeAt = 'metadata';
      }
    }
  }
  return {
    hasFrontmatter: true, lines, eol, bom, body,
    fields: { name: top('name') ?? '', description: top('description') ?? '', type: (type ?? '').trim() },
    typeAt,
  };
}

interface Span { start: number; end: number; indent: number; key: string }

/** The line span of `key:` among lines [from, to); indent -1 = any indent deeper than 0. */
function findKey(lines: string[], key: string, from: number, to: number, indent: number): Span | null {
  for (let i = from; i < to; i++) {
    const m = /^(\s*)([A-Za-z0-9_-]+)\s*:(.*)$/.exec(lines[i]);
    if (!m || m[2] !== key) continue;
    const ind = m[1].length;
    if (indent === 0 ? ind !== 0 : ind === 0) continue;
    let end = i + 1;
    while (end < to && (lines[end].trim() === '' || indentOf(lines[end]) > ind)) end++;
    while (end > i + 1 && lines[end - 1].trim() === '') end--;
    return { start: i, end, indent: ind, key };
  }
  return null;
}

function indentOf(line: string): number {
  return /^\s*/.exec(line)![0].length;
}

function readScalar(lines: string[], span: Span): string {
  const first = lines[span.start].replace(/^\s*[A-Za-z0-9_-]+\s*:\s?/, '');
  const more = lines.slice(span.start + 1, span.end).map((l) => l.trim());
  const head = first.trim();
  if (head === '|' || head === '>' || /^[|>][+-]?$/.test(head)) {
    return head.startsWith('|') ? more.join('\n') : more.join(' ');
  }
  const raw = [head, ...more].filter((s) => s !== '').join(' ');
  if (raw.startsWith("'") && raw.endsWith("'") && raw.length >= 2) return raw.slice(1, -1).replace(/''/g, "'");
  if (raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2) {
    try {
      return JSON.parse(raw) as string;
    } catch {
      return raw.slice(1, -1);
    }
  }
  return stripComment(raw);
}

/** A plain scalar without its trailing comment: what `s.replace(/\s+#.*$/, '')` gives, in one
 *  pass. That regex backtracks over every run of white space not followed by `#`, quadratic in
 *  its length: a description of 80,000 spaces took it 6 s, frozen, on opening the memory. */
export function stripComment(s: string): string {
  // `.*$` reaches the end without a line terminator, so the `#` comes after the last one.
  const last = Math.max(s.lastIndexOf('\n'), s.lastIndexOf('\r'), s.lastIndexOf('\u2028'), s.lastIndexOf('\u2029'));
  const space = (c: string) => /\s/.test(c);
  for (let i = Math.max(last + 1, 1); i < s.length; i++) {
    if (s[i] !== '#' || !space(s[i - 1])) continue;
    let start = i - 1;
    while (start > 0 && space(s[start - 1])) start--;
    return s.slice(0, start);
  }
  return s;
}

/** What YAML reads as a number: a sign, digits (underscores between them), a fraction, an
 * exponent. Written so no two parts can take the same digits: the form with the digits
 * optional before an optional dot backtracked quadratically on a long run of digits that then
 * failed (40,000 digits and a space took 5 s on every keystroke). */
export const YAML_NUMBER = /^[-+]?(?:(?:\d[\d_]*)?\.\d+|\d(?:[\d_]*\d)?)(?:[eE][-+]?\d+)?$/;

/** A YAML scalar for `value`: plain when that reads back the same, else double-quoted. */
export function yamlScalar(value: string): string {
  const plainOk =
    value !== '' &&
    value === value.trim() &&
    !/[\n\r\t]/.test(value) &&
    !/^[-?:,[\]{}#&*!|>'"%@`]/.test(value) &&
    !/: |:$| #/.test(value) &&
    !/^(true|false|yes|no|on|off|null|~|0x[0-9a-f]+|\.inf|\.nan)$/i.test(value) &&
    !YAML_NUMBER.test(value);
  return plainOk ? value : JSON.stringify(value);
}

/**
 * The file with `next` fields written in; unchanged fields keep their bytes. A memory without a
 * type gets one where `newTypeAt` says (the user's Claude Code: a top-level `type:` before
 * 2.1.139); one with a type keeps its form.
 */
export function withFields(content: string, next: Fields, body: string, newTypeAt: 'top' | 'metadata' = 'metadata'): string {
  const p = parseMemory(content);
  const typeLines = (t: string) => (newTypeAt === 'top' ? [`type: ${t}`] : ['metadata:', `  type: ${t}`]);
  if (!p.hasFrontmatter) {
    const lines = [`name: ${yamlScalar(next.name)}`, `description: ${yamlScalar(next.description)}`];
    if (next.type) lines.push(...typeLines(next.type));
    return `${p.bom}---\n${lines.join('\n')}\n---\n${body}`;
  }
  const lines = [...p.lines];
  const setTop = (key: string, value: string) => {
    const span = findKey(lines, key, 0, lines.length, 0);
    const line = `${key}: ${yamlScalar(value)}`;
    if (span) lines.splice(span.start, span.end - span.start, line);
    else lines.push(line);
  };
  if (next.name !== p.fields.name) setTop('name', next.name);
  if (next.description !== p.fields.description) setTop('description', next.description);
  if (next.type !== p.fields.type) {
    if (p.typeAt === 'top' || (p.typeAt === 'none' && newTypeAt === 'top')) setTop('type', next.type);
    else {
      const meta = findKey(lines, 'metadata', 0, lines.length, 0);
      if (meta) {
        const child = findKey(lines, 'type', meta.start + 1, meta.end, -1);
        const ind = child ? ' '.repeat(child.indent) : firstChildIndent(lines, meta) ;
        const line = `${ind}type: ${next.type}`;
        if (child) lines.splice(child.start, child.end - child.start, line);
        else lines.splice(meta.start + 1, 0, line);
      } else {
        lines.push('metadata:', `  type: ${next.type}`);
      }
    }
  }
  const eol = p.eol;
  const fm = lines.join(eol);
  return `${p.bom}---${eol}${fm}${lines.length ? eol : ''}---${eol}${body}`;
}

function firstChildIndent(lines: string[], meta: Span): string {
  for (let i = meta.start + 1; i < meta.end; i++) if (lines[i].trim()) return ' '.repeat(indentOf(lines[i]));
  return '  ';
}
