// Extracts Claude Code's read-only Bash allowlist (readOnlyValidation's tables) from an
// installed release into the JSON that crates/agent/src/bash/tables.rs loads. Callbacks
// (additionalCommandIsDangerousCallback) are recorded by command name only: their logic is
// ported by hand in readonly.rs, and a callback it does not know refuses the command.
//
//   node crates/agent/data/extract-readonly.mjs "$(scripts/claude-code.sh 2.1.197)" > crates/agent/data/readonly.json
//
// Works on the releases from 2.1.113 to 2.1.332 at least (2.1.100 has no glob-safe list yet):
// each table is found by what it holds, not by its minified name, and evaluated in a sandbox
// that looks up every name it uses in the source, at the definition nearest to where it is
// used, so renamed helpers and reordered modules do not matter. A table that cannot be found
// stops the script. `crates/agent/tests/readonly_tables.rs` checks that readonly.json is what
// this prints for the release it was taken from.
import fs from "node:fs";
import vm from "node:vm";
import { jsScanner } from "../../../scripts/js-scan.mjs";

const src = fs.readFileSync(process.argv[2]).toString("latin1");

const { expressionEnd, bracketEnd } = jsScanner(src);

/** The assignment `NAME=EXPR` whose expression holds the text at `at`. */
function assignmentAround(at) {
  for (let eq = src.lastIndexOf("=", at); eq >= 0; eq = src.lastIndexOf("=", eq - 1)) {
    if ("=!<>+-*/%&|^".includes(src[eq - 1]) || src[eq + 1] === "=" || src[eq + 1] === ">") continue;
    const m = /[A-Za-z_$][\w$]*$/.exec(src.slice(Math.max(0, eq - 40), eq));
    if (!m) continue;
    const end = expressionEnd(eq + 1);
    if (end > at) return { name: m[0], start: eq + 1, end, text: src.slice(eq + 1, end) };
  }
  throw new Error(`no assignment around ${at}`);
}

/** The assignment whose expression holds `anchor`, at its occurrence nearest to `near`. */
function assignmentWith(anchor, near = 0) {
  let best = -1;
  for (let at = src.indexOf(anchor); at >= 0; at = src.indexOf(anchor, at + 1)) {
    if (best < 0 || Math.abs(at - near) < Math.abs(best - near)) best = at;
  }
  if (best < 0) throw new Error(`not found in this release: ${anchor}`);
  return assignmentAround(best);
}

/** The match of `re` (global) nearest to `near`. */
function nearest(re, near) {
  let best = -1;
  for (const m of src.matchAll(re)) if (best < 0 || Math.abs(m.index - near) < Math.abs(best - near)) best = m.index;
  if (best < 0) throw new Error(`not found in this release: ${re}`);
  return best;
}

/** Where each bundled module starts: Bun's binaries hold many (`// @bun` opens each), and a
 *  minified name means something else in each. */
const MODULES = [...src.matchAll(/\/\/ @bun\b/g)].map((m) => m.index);

/** The module holding `at`, as `[start, end)`. */
function moduleOf(at) {
  let lo = 0;
  let hi = MODULES.length - 1;
  if (hi < 0 || at < MODULES[0]) return [0, MODULES[0] ?? src.length];
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (MODULES[mid] <= at) lo = mid;
    else hi = mid - 1;
  }
  return [MODULES[lo], MODULES[lo + 1] ?? src.length];
}

const esc = (name) => name.replace(/\$/g, "\\$");

/** Definitions of `name` (`name=…` or `function name(`) between `from` and `to`, nearest to
 *  `near` first. */
function definitionsIn(name, from, to, near) {
  const re = new RegExp(`(?<![\\w$.])(?:function\\s+${esc(name)}\\s*\\(|${esc(name)}=(?![=>]))`, "g");
  re.lastIndex = from;
  const out = [];
  for (let m = re.exec(src); m && m.index < to; m = re.exec(src)) out.push(m.index);
  return out.sort((a, b) => Math.abs(a - near) - Math.abs(b - near));
}

/** Every definition of `name` as seen from `near`: in its own module; else, when the module
 *  imports it (`import{x as name}`), where another module exports `x`; else anywhere. */
function definitionsOf(name, near) {
  const [from, to] = moduleOf(near);
  const local = definitionsIn(name, from, to, near);
  if (local.length > 0) return local;
  const imported = new RegExp(`import\\{[^}]*?(?<![\\w$])(?:([\\w$]+) as )?${esc(name)}(?![\\w$])[^}]*\\}from`, "g");
  imported.lastIndex = from;
  const m = imported.exec(src);
  if (m && m.index < to) {
    const exported = m[1] ?? name;
    const exports = new RegExp(`export\\{[^}]*?(?<![\\w$])(?:([\\w$]+) as )?${esc(exported)}(?![\\w$])`, "g");
    for (const e of src.matchAll(exports)) {
      const [efrom, eto] = moduleOf(e.index);
      const found = definitionsIn(e[1] ?? exported, efrom, eto, e.index);
      if (found.length > 0) return found;
    }
  }
  return definitionsIn(name, 0, src.length, near);
}

/** The value each definition (by its place in the source) evaluated to. */
const values = new Map();
/** Definitions being evaluated: a name that refers back to itself gets a stub. */
const evaluating = new Set();
const stub = () => false;
const BUILTINS = { RegExp, Set, Map, Object, Array, String, Number, JSON, Math, Symbol, require: () => ({}) };

/** The value of the definition at `at` (`function f(…){…}` or `f=…`; an imported name is
 *  defined under another), its own names looked up near it. */
function definitionValue(at) {
  if (values.has(at)) return values.get(at);
  if (evaluating.has(at)) return stub;
  evaluating.add(at);
  try {
    const code = src.startsWith("function", at)
      ? src.slice(at, bracketEnd(src.indexOf("{", at)))
      : src.slice(src.indexOf("=", at) + 1, expressionEnd(src.indexOf("=", at) + 1));
    const value = sandbox(at)(code);
    values.set(at, value);
    return value;
  } finally {
    evaluating.delete(at);
  }
}

/** Evaluates code as if written at `near`: a name it uses is its definition nearest to
 *  `near` that evaluates (a minified name is reused by many modules; the nearest is the one in
 *  scope); what cannot be found or evaluated is a function answering false (the callbacks,
 *  of which only the presence matters). */
function sandbox(near) {
  const resolved = {};
  const handler = {
    has: (t, key) => typeof key === "string" && key !== "undefined",
    get(t, key) {
      if (typeof key !== "string") return undefined;
      if (key in BUILTINS) return BUILTINS[key];
      if (key in resolved) return resolved[key];
      resolved[key] = stub;
      for (const at of definitionsOf(key, near).slice(0, 3)) {
        try {
          resolved[key] = definitionValue(at);
          break;
        } catch {
          // the next definition, or the stub
        }
      }
      return resolved[key];
    },
    set(t, key, value) {
      resolved[key] = value;
      return true;
    },
  };
  const ctx = vm.createContext(new Proxy({}, handler));
  // A wrong guess can run into a loop: give up on it after a while.
  return (code) => vm.runInContext(`(${code})`, ctx, { timeout: 5000 });
}

// The main table: every command with its safe flags, in order; `xargs` comes first.
const main = assignmentWith("{xargs:{safeFlags:");
const evaluate = sandbox(main.start);
const tableObj = evaluate(main.text);
// The lists next to it, each found by what it holds.
const listWith = (anchor) => evaluate(assignmentWith(anchor, main.start).text);
/** The value of the name the first match of `re` captures, looked up near the match. */
const named = (re, what) => {
  const m = re.exec(src);
  if (!m) throw new Error(`not found in this release: ${what}`);
  return sandbox(m.index)(m[1]);
};
// The commands xargs may run: what the flag walk is handed as its targets.
const xargsTargets = named(/xargsTargetCommands:[^?]{0,40}\?([\w$]+)/, "xargs's targets");
const readonlyCommands = listWith('"cal","uptime"');
const exactCommands = listWith('"pwd","whoami"');
const exactArgv = listWith('[["claude","-h"]');
// find's predicates that run, write or delete: the set holding both -execdir and -fprint0.
const findDangerous = evaluate(assignmentAround(nearest(/new Set\(\[(?=[^\]]*"-execdir")(?=[^\]]*"-fprint0")/g, main.start)).text);
const findWithArg = listWith('new Set(["-name","-iname"');
const globSafe = listWith('new Set(["ls","cat","head","tail","wc","stat"');
// The patterns: one built from each read-only command, then hand-written ones (`echo` first).
const patterns = /new Set\(\[\.\.\.[\w$]+\.map\([\w$]+\),\/\^echo/.exec(src);
if (!patterns) throw new Error("not found in this release: the read-only patterns");
const regexes = evaluate(assignmentAround(patterns.index).text);

// From 2.1.324 jq's pattern no longer carries its own guard: the code refuses a jq whose
// words match this pattern (a program read from a file, modules, the environment).
const jqGuardAt = src.indexOf("=/^-[a-zA-Z]*[fL]|^--(?:from-file");
const jqGuard = jqGuardAt < 0 ? null : sandbox(jqGuardAt)(src.slice(jqGuardAt + 1, expressionEnd(jqGuardAt + 1))).source;

const table = {};
for (const [name, cfg] of Object.entries(tableObj)) {
  table[name] = {
    safeFlags: cfg.safeFlags ?? {},
    respectsDoubleDash: cfg.respectsDoubleDash !== false,
    regex: cfg.regex ? cfg.regex.source : null,
    hasCallback: typeof cfg.additionalCommandIsDangerousCallback === "function",
  };
}
const out = {
  // Order matters: the first entry whose words prefix the command wins.
  commands: Object.keys(tableObj),
  table,
  xargsTargets: [...xargsTargets],
  readonlyCommands: [...readonlyCommands],
  exactCommands: [...exactCommands],
  exactArgv: [...exactArgv],
  findDangerous: [...findDangerous],
  findWithArg: [...findWithArg],
  globSafe: [...globSafe],
  regexes: [...regexes].map((r) => r.source),
  jqGuard,
};
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
