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
//
// Two layouts are known. In one large bundle (2.1.197) the module is a run of functions ended
// by the bundler's lazy initialiser. In a build split into ES module chunks (2.1.332, 2.1.337)
// it is a chunk of its own: imports, the lock file's name and the 60-minute constant, functions
// that take the memory folder (and a storage backend, which only a server flag turns on), and an
// `export{…}`. Either is found by what it holds (the lock file's name, `String(process.pid)`,
// the `[autoDream]` messages), never by minified names, which change with every release.
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
const bundled = bin.match(
  /function [\w$]+\(\)\{return [\w$]+\.join\([\w$]+\(\),[\w$]+\)\}async function [\w$]+\(\)\{try\{return\(await [\w$]+\.stat\([\w$]+\(\)\)\)\.mtimeMs\}catch\{return 0\}\}[\s\S]*?=".consolidate-lock",[\w$]+=3600000;var [\w$]+=E\(\(\)=>\{[^}]*\}\);/,
);
if (!bundled) {
  process.stdout.write(chunked());
  process.exit(0);
}
const code = utf8(bundled[0]);
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

// The module as an ES module chunk of its own: the chunk that names the lock file and the
// 60-minute constant together. Its imports from other chunks become stand-ins (the functions
// that use them are not driven, or are given the folder themselves); its imports of Node's own
// modules stay; isProcessRunning, which it imports, is cut from the binary by its body.
function chunked() {
  const at = bin.search(/\bvar [\w$]+=".consolidate-lock",[\w$]+=3600000;/);
  if (at < 0) throw new Error("the consolidationLock module not found in the binary (neither as one bundle's module nor as a chunk of its own)");
  const start = bin.lastIndexOf("// @bun", at);
  const end = bin.indexOf("export{", at);
  if (start < 0 || end < 0 || at - start > 4000 || end - at > 20000) throw new Error("the consolidationLock chunk's bounds not found around its lock file name");
  const endAt = bin.indexOf("}", end) + 1;
  const chunk = utf8(bin.slice(start, endAt));
  const stubbed = [];
  let code = chunk.replace(/^\/\/.*\n/gm, "").replace(/import\{([^}]*)\}from"(\/\$bunfs\/[^"]+)";?/g, (_, names) => {
    for (const n of names.split(",")) stubbed.push(n.split(" as ").at(-1).trim());
    return "";
  }).trim();
  const inChunk = (re, what) => {
    const m = code.match(re);
    if (!m) throw new Error(`${what} not found in the consolidationLock chunk`);
    return m;
  };
  // The function around a landmark: the last `async function NAME(PARAMS){` before it.
  const around = (landmark, what) => {
    const i = code.indexOf(landmark);
    if (i < 0) throw new Error(`${what} not found in the consolidationLock chunk`);
    const heads = [...code.slice(0, i).matchAll(/async function ([\w$]+)\(((?:[\w$]+(?:=[\w$]+\(\))?,?)*)\)\{/g)];
    if (heads.length === 0) throw new Error(`${what}'s function not found in the consolidationLock chunk`);
    const [, name, params] = heads.at(-1);
    return { name, params: params.split(",") };
  };
  // tryAcquireConsolidationLock(folder, backend): the one that writes this process's PID.
  const tryAcquire = around("String(process.pid)", "tryAcquireConsolidationLock");
  // readLastConsolidatedAt(folder, backend): the lock file's mtime, 0 without one.
  const readLast = around(".mtimeMs}catch{return 0}", "readLastConsolidatedAt");
  // rollbackConsolidationLock(folder, prior, backend): the first `rollback failed` is the file's.
  const rollback = around("rollback failed: ${", "rollbackConsolidationLock");
  for (const [f, n] of [[tryAcquire, 2], [readLast, 2], [rollback, 3]]) {
    if (f.params.length !== n) throw new Error(`${f.name} takes ${f.params.join(",")}, not the ${n} parameters this driver gives it`);
  }
  if (!/^[\w$]+=[\w$]+\(\)$/.test(readLast.params[0])) throw new Error(`${readLast.name}'s folder is not a default parameter`);
  const [, isRunning] = inChunk(/if\([\w$]+!==void 0&&([\w$]+)\([\w$]+\)\)return /, "the isProcessRunning call");
  const [, debug] = inChunk(/return ([\w$]+)\(`\[autoDream\] lock held by live PID/, "the debug logger");
  const [, errorText] = inChunk(/rollback failed: \$\{([\w$]+)\(/, "the error formatter");
  for (const n of [isRunning, debug, errorText]) {
    if (!stubbed.includes(n)) throw new Error(`${n} is not one of the chunk's imports (${stubbed.join(",")})`);
  }
  const esc = (n) => n.replace(/\$/g, "\\$");
  const [processRunning] = cut(
    new RegExp(`function ${esc(isRunning)}\\(([\\w$]+)\\)\\{if\\(\\1<=1\\)return!1;try\\{return process\\.kill\\(\\1,0\\),!0\\}catch\\{return!1\\}\\}`),
    "isProcessRunning",
  );
  const driverNames = ["MEMORY_DIR", "say", "readline", "createRequire", "require", "line", "op", "arg"];
  const declared = new Set([...code.matchAll(/(?:function |[{,(]|var |let |const )([\w$]+)(?=[=(,)}])/g)].map((m) => m[1]).concat(stubbed));
  for (const n of driverNames) if (declared.has(n)) throw new Error(`the chunk declares ${n}, a name the driver uses`);
  // Every other import stands in as a function that does nothing (the session's storage-backend
  // flag reads as off, so the lock is the file in the memory folder, as without the flag).
  const stubs = stubbed
    .filter((n) => ![isRunning, debug, errorText].includes(n))
    .map((n) => `const ${n}=()=>{};`)
    .join("");
  return `// GENERATED at test time by consolidation_lock_gen.mjs from ${process.argv[2]};
// not to be committed (it holds Claude Code's own code).
//
// The code after "CUT FROM THE BINARY" is Claude Code's own, byte for byte: its consolidationLock
// chunk without its imports from other chunks (${tryAcquire.name} = tryAcquireConsolidationLock,
// ${readLast.name} = readLastConsolidatedAt, ${rollback.name} = rollbackConsolidationLock, each
// taking the memory folder; the ".consolidate-lock" name and the 60-minute HOLDER_STALE_MS) and
// ${isRunning} = isProcessRunning. Everything else stands in for what the chunk imports: the debug
// logger (${debug}, to stderr), the error formatter (${errorText}) and functions that do nothing
// (the memory folder is handed to the lock functions; no storage backend is).
//
// Driver: as for the one-bundle layout (acquire, rollback <ms>, last; one JSON line each).
import readline from "node:readline";

const MEMORY_DIR = process.argv[2];
if (!MEMORY_DIR) throw new Error("usage: node consolidation_lock_cc.mjs MEMORY_DIR");
${stubs}
const ${debug} = (m) => process.stderr.write(m + "\\n");
const ${errorText} = (e) => (e instanceof Error ? e.message : String(e));
// CUT FROM THE BINARY
${code}
${utf8(processRunning)}

const say = (v) => process.stdout.write(JSON.stringify(v) + "\\n");
say({ ready: process.pid });
for await (const line of readline.createInterface({ input: process.stdin })) {
  const [op, arg] = line.trim().split(/\\s+/);
  if (op === "acquire") say({ acquired: await ${tryAcquire.name}(MEMORY_DIR) });
  else if (op === "rollback") { await ${rollback.name}(MEMORY_DIR, Number(arg)); say({ rolledBack: true }); }
  else if (op === "last") say({ lastConsolidatedAt: await ${readLast.name}(MEMORY_DIR) });
  else if (op) throw new Error(\`unknown command: \${line}\`);
}
`;
}
