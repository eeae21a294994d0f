// Reference outputs for crates/claudemd's marked port (tests/data/marked_oracle.json).
// Claude Code's stripHtmlComments + extractIncludePathsFromTokens, run on real marked 15.0.12:
//   npm install marked@15.0.12
//   python3 marked_cases_gen.py 20261129 400 > in.json && node marked_oracle.mjs < in.json > out.json
// Base file /r/CLAUDE.md, home /h.
import { Lexer } from 'marked';
import path from 'path';
import fs from 'fs';
function stripHtmlCommentsFromTokens(tokens) {
  let result = '';
  const commentSpan = /<!--[\s\S]*?-->/g;
  for (const token of tokens) {
    if (token.type === 'html') {
      const trimmed = token.raw.trimStart();
      if (trimmed.startsWith('<!--') && trimmed.includes('-->')) {
        const residue = token.raw.replace(commentSpan, '');
        if (residue.trim().length > 0) result += residue;
        continue;
      }
    }
    result += token.raw;
  }
  return result;
}
function expandPath(p, base) {
  const home = '/h';
  const t = p.trim();
  if (!t) return path.normalize(base).normalize('NFC');
  if (t === '~') return home;
  if (t.startsWith('~/')) return path.join(home, t.slice(2)).normalize('NFC');
  if (path.isAbsolute(t)) return path.normalize(t).normalize('NFC');
  return path.resolve(base, t).normalize('NFC');
}
function extract(tokens, basePath) {
  const abs = new Set();
  function fromText(s) {
    const re = /(?:^|\s)@((?:[^\s\\]|\\ )+)/g; let m;
    while ((m = re.exec(s)) !== null) {
      let p = m[1]; if (!p) continue;
      const h = p.indexOf('#'); if (h !== -1) p = p.substring(0, h);
      if (!p) continue;
      p = p.replace(/\\ /g, ' ');
      if (p) {
        const ok = p.startsWith('./') || p.startsWith('~/') || (p.startsWith('/') && p !== '/') ||
          (!p.startsWith('@') && !p.match(/^[#%^&*()]+/) && p.match(/^[a-zA-Z0-9._-]/));
        if (ok) abs.add(expandPath(p, path.dirname(basePath)));
      }
    }
  }
  function walk(els) {
    for (const e of els) {
      if (e.type === 'code' || e.type === 'codespan') continue;
      if (e.type === 'html') {
        const raw = e.raw || ''; const tr = raw.trimStart();
        if (tr.startsWith('<!--') && tr.includes('-->')) {
          const r = raw.replace(/<!--[\s\S]*?-->/g, '');
          if (r.trim().length > 0) fromText(r);
        }
        continue;
      }
      if (e.type === 'text') fromText(e.text || '');
      if (e.tokens) walk(e.tokens);
      if (e.items) walk(e.items);
    }
  }
  walk(tokens);
  return [...abs];
}
const inputs = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = inputs.map(s => {
  try {
    const tokens = new Lexer({ gfm: false }).lex(s);
    return { strip: s.includes('<!--') ? stripHtmlCommentsFromTokens(tokens) : s, includes: extract(tokens, '/r/CLAUDE.md') };
  } catch (e) { return { error: String(e) }; }
});
process.stdout.write(JSON.stringify(out, null, 1));
