// Writes claude_code_scan_<version>.json from a real Claude Code release:
//   node claude_code_scan_oracle.mjs /path/to/claude > claude_code_scan_X.Y.Z.json
// (the binary of a release from 2.1.113 on, or an older release's cli.js). It runs the release's
// own secret scanner on every text of ../../../../testdata/secrets/gitleaks-examples.jsonl plus
// cases.json and records what `scanForSecrets` returns for each (only the texts where it finds
// something, by index), the release's token rules and its private-key check, for
// tests/claude_code_oracle.rs to hold Mneme's tables to.
//
// How the scanner is reached depends on how the release was built:
// - From 2.1.250 it is a module of its own inside the Bun executable: its chunk and the chunks it
//   imports are read out of the executable's module graph into a temporary folder and imported,
//   and the scanner class's own `scan` method runs.
// - Before that it sits inside one large bundle that cannot be loaded on its own: the rule table
//   is cut out and evaluated (with the few variables its sources name), and the scan loop, the
//   rule builder and the private-key span check are matched against the shapes they have in
//   those releases, so that the verdicts computed here are the release's. An unknown shape stops
//   the script rather than guess.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const binPath = process.argv[2];
const buf = fs.readFileSync(binPath);
const texts = [
  ...fs
    .readFileSync(path.join(here, "../../../../testdata/secrets/gitleaks-examples.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l).text),
  ...JSON.parse(fs.readFileSync(path.join(here, "cases.json"), "utf8")),
];
const utf8 = (s) => Buffer.from(s, "latin1").toString("utf8");

function bunGraph(buf) {
  const tr = buf.lastIndexOf("\n---- Bun! ----\n");
  if (tr < 0) return null;
  const off = tr - 32;
  const byteCount = Number(buf.readBigUInt64LE(off));
  const mo = buf.readUInt32LE(off + 8), ml = buf.readUInt32LE(off + 12);
  const base = off - byteCount;
  for (const size of [32, 36, 40, 44, 48, 52, 56, 60, 64]) {
    if (ml % size) continue;
    const mods = new Map();
    let ok = true;
    for (let k = 0; k < ml / size; k++) {
      const e = base + mo + k * size;
      const [no, nl, co, cl] = [0, 4, 8, 12].map((d) => buf.readUInt32LE(e + d));
      const name = buf.subarray(base + no, base + no + nl).toString("latin1");
      if (!name.startsWith("/$bunfs/")) { ok = false; break; }
      mods.set(name, buf.subarray(base + co, base + co + cl));
    }
    if (ok) return mods;
  }
  return null;
}

// Scan a JS expression from `at` until a top-level `,` `;` or closing bracket.
function exprEnd(s, at, closeOnly = false) {
  let depth = 0;
  const stack = [];
  for (let i = at; i < s.length; i++) {
    const c = s[i];
    const top = stack.at(-1);
    if (top === '"' || top === "'") {
      if (c === "\\") i++;
      else if (c === top) stack.pop();
      continue;
    }
    if (top === "`") {
      if (c === "\\") i++;
      else if (c === "`") stack.pop();
      else if (c === "$" && s[i + 1] === "{") { stack.push("${"); i++; }
      continue;
    }
    if (c === '"' || c === "'" || c === "`") stack.push(c);
    else if (c === "(" || c === "[" || c === "{") stack.push(c);
    else if (c === ")" || c === "]" || c === "}") {
      if (stack.length === 0) return i;
      stack.pop();
    } else if (!closeOnly && (c === "," || c === ";") && stack.length === 0) return i;
  }
  return s.length;
}

async function esm(mods, scannerName) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cc-scanner-"));
  const todo = [scannerName], seen = new Set();
  while (todo.length) {
    const name = todo.pop();
    if (seen.has(name)) continue;
    seen.add(name);
    let code = mods.get(name).toString("latin1");
    for (const m of code.matchAll(/(?:from|import)"(\/\$bunfs\/root\/[^"]+)"/g)) todo.push(m[1]);
    code = code.replaceAll('"/$bunfs/root/', '"./');
    code = code.replace(/(^|[;{})\s])(?:await\s+)?using\s+(?=[A-Za-z_$][\w$]*\s*=)/g, "$1const ");
    if (name === scannerName) code += `\nexport const __mneme = new ${code.match(/class (\w+)\{testRules=null;/)[1]};\n`;
    fs.writeFileSync(path.join(dir, path.basename(name)), Buffer.from(code, "latin1"));
  }
  let m;
  try {
    m = await import(pathToFileURL(path.join(dir, path.basename(scannerName))).href);
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
  const s = m.__mneme;
  const scan = (t) => s.scan(t);
  scan("");
  const rules = s.testRules.filter((r) => r.confidence === "high").map((r) => {
    const re = r.re ?? r.regexFor("");
    const out = { id: r.id, source: re.source, flags: re.flags };
    if (r.prefilter) out.prefilter = { source: r.prefilter.source, flags: r.prefilter.flags };
    return out;
  });
  const code = mods.get(scannerName).toString("latin1");
  const privateKey = code.includes("(?:-{1,4}BEGIN)") ? "span-redacted" : "span";
  return { form: "esm", rules, privateKey, scan };
}

function cjs(src) {
  // The rule table, its entries, and the identifiers their sources use.
  let at = src.indexOf('[{id:"url-userinfo"');
  if (at < 0) at = src.indexOf('[{id:"aws-access-token"');
  if (at < 0) throw new Error("no rule table");
  const table = src.slice(at, exprEnd(src, at));
  const entries = [];
  for (let i = 1; i < table.length - 1; ) {
    const e = exprEnd(table, i);
    entries.push(table.slice(i, e));
    i = e + 1;
  }
  const defs = new Map();
  const resolve = (name) => {
    if (defs.has(name)) return;
    const re = new RegExp(`[,;{(\\s]${name.replace(/\$/g, "\\$")}=(?!=)`, "g");
    let best = -1;
    for (const m of src.slice(Math.max(0, at - 400000), at).matchAll(re)) best = m.index + m[0].length;
    if (best < 0) throw new Error(`no definition of ${name}`);
    const base = Math.max(0, at - 400000);
    const start = base + best;
    const expr = src.slice(start, exprEnd(src, start));
    defs.set(name, expr);
    for (const id of freeIds(expr)) resolve(id);
  };
  const high = entries.filter((e) => !/confidence:"low"/.test(e));
  for (const e of high) for (const id of freeIds(e)) resolve(id);
  const order = [...defs.keys()].reverse();
  const rules = new Function(`${order.map((n) => `const ${n}=${defs.get(n)};`).join("\n")}
    return [${high.join(",")}];`)().map((r) => ({ id: r.id, source: r.source, flags: r.flags ?? "" }));
  // How the release runs them: every rule (before confidence levels) or the high ones, with
  // the private key as a rule of the table or as a BEGIN/END span check.
  let loop;
  if (/function [\w$]+\(([\w$]+)\)\{let [\w$]+=\[\],([\w$]+)=new Set;for\(let ([\w$]+) of [\w$]+\(\)\)\{if\(\2\.has\(\3\.id\)\)continue;if\(\3\.re\.test\(\1\)\)/.test(src)) loop = "all";
  else if (/for\(let ([\w$]) of [\w$.]+\)if\(\1\.confidence==="high"&&\1\.re\.test\(\w\)\)/.test(src)) loop = "high";
  else throw new Error("scan loop of an unknown shape");
  const builder = /re:new RegExp\(\$?\w*\.source,\w+\?\(\$?\w*\.flags\?\?""\)\.replace\("g",""\)\+"g":\$?\w*\.flags\?\?""\)|re:new RegExp\(\$?\w*\.source,\$?\w*\.flags\)/;
  if (!builder.test(src.slice(Math.max(0, at - 3000000), at + 3000000))) throw new Error("rule builder of an unknown shape");
  let privateKey = "rule";
  const span = src.match(/if\(([\w$]+)\(e\)\)\w\.push\(\{ruleId:"private-key"/);
  if (!rules.some((r) => r.id === "private-key")) {
    if (!span) throw new Error("no private-key check");
    const esc = (n) => n.replace(/\$/g, "\\$");
    const fn = src.match(new RegExp(`function ${esc(span[1])}\\(e\\)\\{return ([\\w$]+)\\(e,0\\)!==null\\}`))[1];
    const from = src.search(new RegExp(`function ${esc(fn)}\\(e,t\\)\\{`));
    const open = src.indexOf("{", from);
    const body = src.slice(from, exprEnd(src, open + 1, true) + 1);
    const literals = /\/-----(?:BEGIN|END)\[ A-Z0-9_-\]\{0,100\}\?PRIVATE KEY\(\?: BLOCK\)\?-----\/gi/g;
    // Older builds keep the two regexes at module level: check their definitions instead.
    let inline = body;
    for (const m of body.matchAll(/([\w$]+)\.lastIndex=/g)) {
      const def = src.match(new RegExp(`[,;{(\\s]${esc(m[1])}=(\\/-----(?:BEGIN|END)[^\\n]*?-----\\/gi)[,;]`, "g"));
      if (def) inline = inline.replaceAll(`${m[1]}.lastIndex`, `RE.lastIndex`).replaceAll(`${m[1]}.exec`, `RE.exec`);
    }
    const shape = inline.replace(literals, "RE").replace(/\b(?!RE\b|exec|lastIndex|index|length|return|null|let|if|function|start|end)[A-Za-z_$][\w$]{0,3}(?![\w$])/g, "_");
    const want = [
      "function _(_,_){let _=RE,_=RE;_.lastIndex=_;let _=_.exec(_);if(!_)return null;_.lastIndex=_.index+_[0].length+_;let _=_.exec(_);if(!_)return null;return{start:_.index,end:_.index+_[0].length}}",
      "function _(_,_){RE.lastIndex=_;let _=RE.exec(_);if(!_)return null;RE.lastIndex=_.index+_[0].length+_;let _=RE.exec(_);if(!_)return null;return{start:_.index,end:_.index+_[0].length}}",
    ];
    const gap = body.match(/\[0\]\.length\+([\w$]+)/)[1];
    if (!new RegExp(`[,;{(\\s]${esc(gap)}=64[,;]`).test(src)) throw new Error("private-key span: the gap is not 64");
    if (!want.includes(shape)) throw new Error(`private-key span of an unknown shape: ${shape}`);
    privateKey = "span";
  }
  const compiled = rules.map((r) => ({ id: r.id, re: new RegExp(r.source, (r.flags ?? "").replace("g", "")) }));
  const begin = /-----BEGIN[ A-Z0-9_-]{0,100}?PRIVATE KEY(?: BLOCK)?-----/gi, endRe = /-----END[ A-Z0-9_-]{0,100}?PRIVATE KEY(?: BLOCK)?-----/gi;
  const spanFound = (t) => {
    begin.lastIndex = 0;
    const b = begin.exec(t);
    if (!b) return false;
    endRe.lastIndex = b.index + b[0].length + 64;
    return endRe.exec(t) !== null;
  };
  const scan = (t) => {
    const out = compiled.filter((r) => r.re.test(t)).map((r) => ({ ruleId: r.id }));
    if (privateKey === "span" && spanFound(t)) out.push({ ruleId: "private-key" });
    return out;
  };
  const maps = [...src.matchAll(/\{aws:"AWS",gcp:"GCP"[^}]*\}/g)].map((m) => m[0]);
  if (new Set(maps).size !== 1) throw new Error(`label maps: ${new Set(maps).size}`);
  const map = new Function(`return ${maps[0]}`)();
  const label = (id) => id.split("-").map((w) => map[w] ?? w.charAt(0).toUpperCase() + w.slice(1)).join(" ");
  return { form: `cjs-${loop}`, rules, privateKey, scan: (t) => scan(t).map((f) => ({ ...f, label: label(f.ruleId) })) };
}

function freeIds(expr) {
  const out = new Set();
  const s = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""');
  // identifiers inside ${…} of template literals and outside any literal
  const parts = [];
  let i = 0;
  while (i < s.length) {
    if (s[i] === "`") {
      let j = i + 1;
      while (j < s.length && s[j] !== "`") {
        if (s[j] === "\\") j += 2;
        else if (s[j] === "$" && s[j + 1] === "{") { const e = exprEnd(s, j + 2); parts.push(s.slice(j + 2, e)); j = e + 1; }
        else j++;
      }
      i = j + 1;
    } else { parts.push(s[i]); i++; }
  }
  const code = parts.join("");
  for (const m of code.matchAll(/(?<![\w$.])([A-Za-z_$][\w$]*)(?![\w$]*\s*:)/g)) {
    if (!["id", "source", "flags", "confidence", "true", "false", "null", "void", "new", "RegExp", "String", "raw"].includes(m[1])) out.add(m[1]);
  }
  return out;
}

const mods = bunGraph(buf);
let result;
const scannerChunk = mods && [...mods].find(([n, d]) => n.includes("chunk-") && d.includes('[{id:"url-userinfo"'));
if (scannerChunk) result = await esm(mods, scannerChunk[0]);
else result = cjs(utf8(buf.toString("latin1")));
const version = (buf.toString("latin1").match(/\/\/ Version: (\d+\.\d+\.\d+)/) ?? [])[1] ?? path.basename(path.dirname(binPath));
const scans = texts.map((t) => result.scan(t));
const out = {
  generatedFrom: `Claude Code ${version}`,
  form: result.form,
  privateKey: result.privateKey,
  texts: texts.length,
  rules: result.rules,
  labels: Object.fromEntries(scans.flat().map((f) => [f.ruleId, f.label])),
  found: Object.fromEntries(scans.flatMap((s, i) => (s.length ? [[i, s.map((f) => f.ruleId)]] : []))),
};
// One rule or text per line keeps the vendored files reviewable in a diff.
const lines = Object.entries(out).map(([k, v]) =>
  Array.isArray(v) ? ` "${k}": [\n  ${v.map((x) => JSON.stringify(x)).join(",\n  ")}\n ]`
  : v && typeof v === "object" ? ` "${k}": {\n  ${Object.entries(v).map(([a, b]) => `${JSON.stringify(a)}: ${JSON.stringify(b)}`).join(",\n  ")}\n }`
  : ` "${k}": ${JSON.stringify(v)}`);
process.stdout.write(`{\n${lines.join(",\n")}\n}\n`);
