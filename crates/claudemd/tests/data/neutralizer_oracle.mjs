// Runs the MEMORY.md tag neutralizer of a real Claude Code binary (2.1.284 on) and prints what it
// does, for the Rust port to be checked against Claude Code's own code:
//
//   bun neutralizer_oracle.mjs /path/to/claude reading  > /tmp/reading.txt
//   bun neutralizer_oracle.mjs /path/to/claude cases    > neutralizer_<version>.json
//
// Run it with the Bun the binary embeds (`strings claude | grep -m1 'Bun v'`; `npm install
// bun@THAT`): the neutralizer reads each character through the runtime's NFKC/NFKD, so another
// runtime's Unicode tables would answer for another Claude Code.
//
// It cuts the module holding the look-alike tables and the matcher out of the binary's embedded
// JavaScript, stands in for its imports (the normalizers, used on one character at a time here,
// and the bracket table, evaluated from the module that defines it), and builds the neutralizer
// the way MEMORY.md's cleaning builds it: the release's tag names but `channel`, `channel` with
// its `source=` tail, and `antml` with a colon after it.
//
// `reading` prints, for every non-ASCII code point the matcher does not read as itself, the code
// point and what it reads as (lookalikes_merge.py makes ../../data/lookalikes.txt of these);
// `cases` runs the neutralizer on every text of neutralizer_cases.json and prints, for each text
// it changes, which brackets it escaped.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const [binPath, mode] = process.argv.slice(2);
if (!binPath || !["reading", "cases"].includes(mode)) {
  console.error("usage: bun neutralizer_oracle.mjs CLAUDE_BINARY reading|cases");
  process.exit(2);
}
const bin = fs.readFileSync(binPath).toString("latin1");
const utf8 = (s) => Buffer.from(s, "latin1").toString("utf8");
const version = bin.match(/\/\/ Version: (\d+\.\d+\.\d+)\n/)[1];

// A module of the bundle: from the end of the header comment before `at` to its `export{...};`.
function moduleAround(at) {
  const start = bin.lastIndexOf("\n// Version: ", at);
  const codeStart = bin.indexOf("\n", start + 1) + 1;
  const exportAt = bin.indexOf("\nexport{", at);
  const end = bin.indexOf("};", exportAt) + 2;
  return { code: utf8(bin.slice(codeStart, exportAt)), exports: bin.slice(exportAt + 8, end - 2).split(",") };
}
// The text of `name=EXPR` (EXPR a `new Map(...)`/`new Set(...)`/literal) inside `code`.
function definition(code, name) {
  const m = new RegExp(`(?:^|[;,{\\s])(?:var |let |const )?${name.replace(/\$/g, "\\$")}=`).exec(code);
  if (!m) throw new Error(`no definition of ${name}`);
  let i = m.index + m[0].length, depth = 0, q = null;
  const start = i;
  for (; i < code.length; i++) {
    const ch = code[i];
    if (q) {
      if (ch === "\\") i++;
      else if (ch === q) q = null;
      else if (q === "`" && ch === "$" && code[i + 1] === "{") { /* template holes hold plain literals here */ }
      continue;
    }
    if (ch === '"' || ch === "'" || ch === "`") q = ch;
    else if ("([{".includes(ch)) depth++;
    else if (")]}".includes(ch)) depth--;
    else if ((ch === "," || ch === ";") && depth === 0) break;
  }
  return code.slice(start, i);
}
// Evaluates `name` in `code`, with what its definition refers to (found by evaluating it and
// defining each name it misses in turn) evaluated first.
function evaluate(code, name, seen = new Map()) {
  if (seen.has(name)) return seen.get(name);
  const expr = definition(code, name);
  const deps = {};
  for (;;) {
    try {
      const value = new Function(...Object.keys(deps), `return (${expr});`)(...Object.values(deps));
      seen.set(name, value);
      return value;
    } catch (e) {
      const missing = e instanceof ReferenceError && e.message.match(/^([\w$]+) is not defined/);
      if (!missing || missing[1] in deps) throw e;
      deps[missing[1]] = evaluate(code, missing[1], seen);
    }
  }
}

const marker = bin.indexOf('new Map([["a","aA\\uFF21');
if (marker < 0) throw new Error(`${version}: the look-alike letter table was not found`);
const mod = moduleAround(marker);
let code = mod.code;
const imports = [];
code = code.replace(/import\{([^}]*)\}from"([^"]+)";/g, (_, names, from) => {
  for (const n of names.split(",")) {
    const [orig, local] = n.includes(" as ") ? n.split(" as ") : [n, n];
    imports.push({ orig, local, from });
  }
  return "";
});
// Stand-ins: the normalizers (called here on one character or its decomposition, under 32 UTF-16
// units, where the release's chunked normalizer is `String.prototype.normalize` itself) and the bracket tables of the module defining them.
const nfkc = code.match(/return \w\((\w+)\((\w+)\(\w\(\w\)\)\)\)\}function \2\(\w\)\{return (\w+)\(\w\)\.replace\(\/\\p\{M\}\+\/gu,""\)\}/);
const stubs = {};
if (nfkc) {
  stubs[nfkc[1]] = (s) => { if (s.length >= 32) throw new Error("the oracle's NFKC stand-in takes short texts"); return s.normalize("NFKC"); };
  stubs[nfkc[3]] = (s) => { if (s.length >= 32) throw new Error("the oracle's NFKD stand-in takes short texts"); return s.normalize("NFKD"); };
}
// From 2.1.337 the matcher reads the text a second time made well-formed (lone surrogates as
// U+FFFD, `String.prototype.toWellFormed`), without controls and private-use characters.
const wellFormed = code.match(/let \w=([\w$]+)\(\w\)\.replace\([\w$]+,""\)\.replaceAll\("\\x00"," "\)/);
if (wellFormed) stubs[wellFormed[1]] = (s) => s.toWellFormed();
// The other imports the module's top level needs are the bracket tables (a `new Map`/`new Set`)
// and character classes (strings, or a list of ranges made one); the rest are functions the
// neutralizer never calls.
for (const imp of imports) {
  if (imp.local in stubs) continue;
  const at = bin.search(new RegExp(`\\nexport\\{(?:[\\w$]+,)*${imp.orig.replace(/\$/g, "\\$")}[,}]`));
  const lib = at < 0 ? null : moduleAround(at);
  let expr = null;
  try { expr = lib && definition(lib.code, imp.orig); } catch { expr = null; }
  stubs[imp.local] = expr && /^(?:new (?:Map|Set)\(|[\w$]+\.map\(|["'`])/.test(expr)
    ? evaluate(lib.code, imp.orig)
    : () => { throw new Error(`the oracle left ${imp.local} (from ${imp.from}) out`); };
}

const fn = (re, what) => {
  const m = code.match(re);
  if (!m) throw new Error(`${version}: ${what} not found`);
  return m[1];
};
// From 2.1.337 the factory takes a second argument, how to gate the matching ("ungated": one
// pattern per group, as MEMORY.md's cleaning asks).
const factory = fn(/function ([\w$]+)\(\w(?:,\w="ungated")?\)\{let \w=\w\.filter\(\(\w\)=>\w\.tags\.length>0\)\.map\(/, "the neutralizer factory");
const channelTail = fn(/function ([\w$]+)\(\{name:\w,close:\w,span:\w=/, "the channel tail");
const reading = fn(/function ([\w$]+)\(\w\)\{let \w=\[\],\w=\[\],\w[,=]/, "the reading");
const brackets = fn(/([\w$]+)=\{open:\w+\.open,close:\w+\.close,slash:\w+\.slash\}/, "the bracket classes");
const cc = new Function(...Object.keys(stubs), `${code}; return { factory: ${factory}, channelTail: ${channelTail}, reading: ${reading}, brackets: ${brackets} };`)(...Object.values(stubs));

// The tag names MEMORY.md's cleaning passes (Mneme's `MemoryIndexTags`; the matrix checks the list).
const base = ["bash-input", "bash-stdout", "bash-stderr", "bash-exit-code", "local-command-stdout", "local-command-stderr",
  "local-command-caveat", "command-name", "command-message", "command-args", "task-notification", "agent-message",
  "teammate-message", "cross-session-message", "remote-review", "slack-ping", "slack-tag-message", "tick",
  "fetched-web-content", "coordinator-relay", "artifact-type-instructions", "cowritten-artifact-html",
  "artifact-file-content", "artifact-origin-notes", "artifact-stored-declaration", "system-reminder",
  "system_reminder", "function_results", "tool_use_error", "sandbox_violations", "persisted-output", "total_tokens",
  "user-prompt-submit-hook"];
const tags = bin.includes('"untrusted-widget-state"') ? [...base, "untrusted-widget-state"] : base;
const neutralizer = cc.factory([{ tags }, { tags: ["channel"], tail: cc.channelTail }, { tags: ["antml"], tail: ({ colon }) => `[${colon}]` }], "ungated");

const hex = (cp) => cp.toString(16).toUpperCase().padStart(4, "0");
if (mode === "reading") {
  const lines = [`# Claude Code ${version}`, `open ${[...cc.brackets.open].map((c) => hex(c.codePointAt(0))).join(" ")}`,
    `close ${[...cc.brackets.close].map((c) => hex(c.codePointAt(0))).join(" ")}`];
  // What a reading unit stands for: a letter (the first of a character's letters, or a later
  // one), either of two letters, or the `=`-like sign.
  const unit = (u) => {
    const c = u.charCodeAt(0);
    if (c >= 0xe000 && c < 0xe100) return String.fromCharCode(c - 0xe000);
    if (c >= 0xe200 && c < 0xe300) return String.fromCharCode(c - 0xe200);
    if (c === 0xe100) return "[nv]";
    if (c === 0xe101) return "[uy]";
    if (c === 0xe1f0) return "=";
    if (c === 0xfffd) return "~";
    throw new Error(`unknown reading unit U+${hex(c)}`);
  };
  for (let cp = 0x80; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const ch = String.fromCodePoint(cp);
    const r = cc.reading(ch).reading;
    if (r === ch) continue;
    lines.push(`${hex(cp)} ${[...r].map(unit).join("")}`);
  }
  console.log(lines.join("\n"));
} else {
  // Per text that has any: the brackets escaped, as code point indices; the whole result only
  // where it is not those brackets each replaced by `<\\`.
  const texts = JSON.parse(fs.readFileSync(path.join(here, "neutralizer_cases.json"), "utf8"));
  const lines = [];
  texts.forEach((t, i) => {
    const out = neutralizer.neutralize(t);
    if (out === t) return;
    const cps = neutralizer.openerOffsets(t).map((o) => [...t.slice(0, o)].length);
    const chars = [...t];
    for (const c of cps) chars[c] = "<\\";
    lines.push(`"${i}": ${chars.join("") === out ? JSON.stringify(cps) : JSON.stringify({ out })}`);
  });
  console.log(`{"version": "${version}", "texts": ${texts.length}, "escaped": {\n${lines.join(",\n")}\n}}`);
}
