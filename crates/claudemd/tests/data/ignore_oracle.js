// Reference answers for crates/claudemd's `paths:` matching (tests/data/ignore_oracle.json):
// Claude Code matches a conditional rule's globs with npm `ignore`: ignore().add(globs).ignores(rel).
//   npm install ignore@7.0.17
//   node ignore_oracle.js 1500 > ignore_oracle.json
// Globs and paths are generated together so that about 40% of the answers are "matches".
const ignore = require('ignore');
let seed = 12345; const rnd = n => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
const pick = a => a[rnd(a.length)];
const SEG = ['src','a','b','test','docs','lib','x.ts','y.py','.hidden','A','Src','c.md','foo bar','a.b.c','tool.py','#x','!x','x '];
const GP = [['*',['a','x.ts','.hidden','']],['**',['a','a/b','']],['?',['a','.','ab']],['[ab]',['a','c','A']],['[!a]',['a','b']],['[a-c]',['b','d']],
 ['*.ts',['x.ts','a/x.ts','.ts']],['*.py',['y.py']],['*.md',['c.md','C.MD']],['.*',['.hidden','a']],['\\#x',['#x']],['\\!x',['!x']],['x\\ ',['x ','x']],
 ['a*b',['ab','a/b','axb']],['**.ts',['x.ts','a/x.ts']],['\\*',['*','a']],['[[:alpha:]]',['a','1']],['a?c',['abc','a/c']],['{a,b}',['a','{a,b}']],['a\\b',['ab','a\\b']]];
function cs() {
  let g = '', ps = ['', '', ''];
  const r = rnd(12);
  if (r === 0) g += '!'; else if (r === 1) g += '/'; else if (r === 2) { g += '**/'; ps = ps.map(p => rnd(2) ? 'z/' : ''); }
  const n = 1 + rnd(3);
  for (let i = 0; i < n; i++) {
    if (i) { g += '/'; ps = ps.map(p => p + '/'); }
    if (rnd(3) === 0) { const s = pick(SEG); g += s; ps = ps.map(p => p + (rnd(6) ? s : pick(SEG))); }
    else { const [gp, samples] = pick(GP); g += gp; ps = ps.map(p => p + pick(samples)); }
  }
  if (rnd(8) === 0) g += '/';
  if (rnd(15) === 0) g += '  ';
  ps = ps.map(p => rnd(4) === 0 ? p + '/' + pick(SEG) : p).map(p => p.replace(/\/+/g, '/').replace(/^\//, '').replace(/\/$/, '')).filter(p => p);
  return [g, ps];
}
const cases = [];
for (let i = 0; i < Number(process.argv[2] || 1500); i++) {
  const [g, paths] = cs(); const globs = [g];
  if (rnd(5) === 0) globs.push(cs()[0]);
  let res;
  try { const ig = ignore().add(globs); res = paths.map(p => { try { return ig.ignores(p); } catch (e) { return 'ERR:' + e.message; } }); } catch (e) { res = paths.map(() => 'ERR:' + e.message); }
  cases.push([globs, paths, res]);
}
process.stdout.write(JSON.stringify(cases));
