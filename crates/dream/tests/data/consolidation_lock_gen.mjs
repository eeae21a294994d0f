// Writes the lock driver from the installed Claude Code binary to stdout:
//   node consolidation_lock_gen.mjs /path/to/claude > consolidation_lock_cc.mjs
// crates/cli/tests/dream_interop.rs runs it at test time into the build folder; the output is
// Claude Code's own code and is never committed.
// It cuts Claude Code's consolidationLock module (the lock path, readLastConsolidatedAt,
// tryAcquireConsolidationLock, rollbackConsolidationLock, listSessionsTouchedSince, their
// constants and the bundler's lazy initialiser) and isProcessRunning out of the Bun-compiled
// binary's embedded JavaScript, byte for byte, and wraps them in a small driver so tests can
// run Claude Code's own lock code under node without the binary. recordConsolidation (used
// only by the manual /dream command in the TypeScript sources) is not in the 2.1.197 bundle:
// the bundler dropped it, so there is nothing of it to cut.
import fs from "node:fs";

if (!process.argv[2]) throw new Error("usage: node consolidation_lock_gen.mjs /path/to/claude");
const bin = fs.readFileSync(process.argv[2]).toString("latin1");
const utf8 = (s) => Buffer.from(s, "latin1").toString("utf8");
const cut = (re, what) => {
  const m = bin.match(re);
  if (!m) throw new Error(`${what} not found in the binary`);
  return m;
};

// From the lock-path function to the module's `var X=E(()=>{...})` initialiser, which ends the
// module and names the lock file and the 60-minute constant just before it.
const [module] = cut(
  /function [\w$]+\(\)\{return [\w$]+\.join\([\w$]+\(\),[\w$]+\)\}async function [\w$]+\(\)\{try\{return\(await [\w$]+\.stat\([\w$]+\(\)\)\)\.mtimeMs\}catch\{return 0\}\}[\s\S]*?=".consolidate-lock",[\w$]+=3600000;var [\w$]+=E\(\(\)=>\{[^}]*\}\);/,
  "the consolidationLock module",
);
const code = utf8(module);
const name = (re, what) => {
  const m = code.match(re);
  if (!m) throw new Error(`${what} not found in the consolidationLock module`);
  return m;
};
const [, lockPath, memDir] = name(/^function ([\w$]+)\(\)\{return [\w$]+\.join\(([\w$]+)\(\),/, "the lock path");
const [, readLast] = name(/async function ([\w$]+)\(\)\{try\{return\(await [\w$]+\.stat\(/, "readLastConsolidatedAt");
const [, tryAcquire] = name(/async function ([\w$]+)\(\)\{let e=[\w$]+\(\),t,n;try\{/, "tryAcquireConsolidationLock");
const [, rollback] = name(/async function ([\w$]+)\(e\)\{let t=[\w$]+\(\);try\{if\(e===0\)/, "rollbackConsolidationLock");
const [, isRunning] = name(/n!==void 0&&([\w$]+)\(n\)\)return /, "the isProcessRunning call");
const [, debug] = name(/return ([\w$]+)\(`\[autoDream\] lock held by live PID/, "the debug logger");
const [, errorText] = name(/rollback failed: \$\{([\w$]+)\(n\)\}/, "the error formatter");
const [, init, imports] = name(/var ([\w$]+)=E\(\(\)=>\{((?:[\w$]+\(\);)*)/, "the module initialiser");
// listSessionsTouchedSince's helpers: not called here, so they refuse loudly if ever reached.
const sessionNames = name(/async function [\w$]+\(e\)\{let t=([\w$]+)\(([\w$]+)\(\)\);return\(await ([\w$]+)\(t,!0\)\)/, "listSessionsTouchedSince").slice(1);

const [processRunning] = cut(
  new RegExp(`function ${isRunning.replace(/\$/g, "\\$")}\\(e\\)\\{if\\(e<=1\\)return!1;try\\{return process\\.kill\\(e,0\\),!0\\}catch\\{return!1\\}\\}`),
  "isProcessRunning",
);

const stubs = [...imports.matchAll(/([\w$]+)\(\)/g)].map((m) => `const ${m[1]}=()=>{};`).join("");
const refuse = sessionNames.map((n) => `const ${n}=()=>{throw new Error("listSessionsTouchedSince is not driven here")};`).join("");

process.stdout.write(`// GENERATED at test time by consolidation_lock_gen.mjs from ${process.argv[2]};
// not to be committed (it holds Claude Code's own code).
//
// The two lines after "CUT FROM THE BINARY" are Claude Code's own code, byte for byte: its
// consolidationLock module (${lockPath} = the lock path, ${readLast} = readLastConsolidatedAt,
// ${tryAcquire} = tryAcquireConsolidationLock, ${rollback} = rollbackConsolidationLock, then
// listSessionsTouchedSince, the ".consolidate-lock" name and the 60-minute HOLDER_STALE_MS) and
// ${isRunning} = isProcessRunning. Everything else stands in for what the bundle imports: the
// lazy-init helper, the memory folder (${memDir}, from the command line), the debug logger
// (${debug}, to stderr) and the error formatter (${errorText}).
//
// Driver: node consolidation_lock_cc.mjs MEMORY_DIR, then one command a line on stdin, each
// answered by one JSON line on stdout: "acquire" -> {"acquired": <prior mtime ms, or null>},
// "rollback <ms>" -> {"rolledBack": true}, "last" -> {"lastConsolidatedAt": <ms>}. The process
// (whose PID is what acquire writes) stays alive until stdin closes, like a Claude Code session.
import { createRequire } from "node:module";
import readline from "node:readline";

const require = createRequire(import.meta.url);
const MEMORY_DIR = process.argv[2];
if (!MEMORY_DIR) throw new Error("usage: node consolidation_lock_cc.mjs MEMORY_DIR");
const E = (f) => f;
${stubs}${refuse}
const ${memDir} = () => MEMORY_DIR;
const ${debug} = (m) => process.stderr.write(m + "\\n");
const ${errorText} = (e) => (e instanceof Error ? e.message : String(e));
// CUT FROM THE BINARY
${code}
${utf8(processRunning)}
${init}();

const say = (v) => process.stdout.write(JSON.stringify(v) + "\\n");
say({ ready: process.pid });
for await (const line of readline.createInterface({ input: process.stdin })) {
  const [op, arg] = line.trim().split(/\\s+/);
  if (op === "acquire") say({ acquired: await ${tryAcquire}() });
  else if (op === "rollback") { await ${rollback}(Number(arg)); say({ rolledBack: true }); }
  else if (op === "last") say({ lastConsolidatedAt: await ${readLast}() });
  else if (op) throw new Error(\`unknown command: \${line}\`);
}
`);
