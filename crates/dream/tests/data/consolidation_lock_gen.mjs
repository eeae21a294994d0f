// Writes the lock driver from the installed Claude Code binary to stdout:
//   node consolidation_lock_gen.mjs /path/to/claude > consolidation_lock_cc.mjs
// crates/cli/tests/dream_interop.rs runs it at test time into the build folder; the output is
// Claude Code's own code and is never committed.
// It cuts Claude Code's consolidationLock module (the lock path, readLastConsolidatedAt,
// tryAcquireConsolidationLock, rollbackConsolidationLock, listSessionsTouchedSince, their
// constants, and in the older layouts the bundler's lazy initialiser and recordConsolidation)
// and isProcessRunning out of the binary's embedded JavaScript (or, up to 2.1.112, the
// package's cli.js), byte for byte, and wraps them in a small driver so tests can run Claude
// Code's own lock code under node without the binary.
//
// Exit status 3, with one line on stderr, when the binary holds no such module at all (no
// `.consolidate-lock` anywhere: a release built without auto dream); 1 when it holds one this
// script cannot cut (a layout it does not know), which is a failure, not a skip.
//
// The module is found by what it holds, never by minified names, which change with every
// release: the declaration naming the lock file together with the 60-minute constant, the
// lock-path function that joins a folder with that name, the `[autoDream]` messages,
// `String(process.pid)` and the rollback's `=== 0` unlink. Three layouts are known:
//   - one bundle, the module ended by the bundler's lazy initialiser, which loads fs/promises
//     and path with require (2.1.113 to 2.1.197, 2.1.282 to 2.1.316); functions take no folder,
//     the lock path asks a function for the memory folder;
//   - the same as an ES module (2.1.100's cli.js): fs/promises and path imported just before;
//   - ES module text whose functions take the memory folder (and a storage backend, which only
//     a server flag turns on): imports of fs/promises and path, the declaration, then functions,
//     inside a larger chunk (2.1.257 to 2.1.278) or as a chunk of its own (2.1.332, 2.1.337).
// recordConsolidation (used only by the manual /dream command) is in the first two from
// 2.1.100 to 2.1.145 and gone from 2.1.146; the driver offers it as "record".
import fs from "node:fs";

if (!process.argv[2]) throw new Error("usage: node consolidation_lock_gen.mjs /path/to/claude");
const bin = fs.readFileSync(process.argv[2]).toString("latin1");
const utf8 = (s) => Buffer.from(s, "latin1").toString("utf8");
const esc = (n) => n.replace(/[$]/g, "\\$");

// The declaration that names the lock file and the stale-holder hour together. A binary may
// hold the bundle twice (2.1.113 does); the first is as good as the second.
const decl = /var (?:[\w$]+,)*([\w$]+)=".consolidate-lock",([\w$]+)=3600000;/.exec(bin);
if (!decl) {
  if (!bin.includes(".consolidate-lock")) {
    process.stderr.write(`no consolidationLock module in ${process.argv[2]}: the release holds no ".consolidate-lock" at all (auto dream is not built into it)\n`);
    process.exit(3);
  }
  throw new Error(`${process.argv[2]} names ".consolidate-lock", but not next to the 60-minute HOLDER_STALE_MS constant: a layout this script does not know`);
}
const lockName = decl[1];
const declEnd = decl.index + decl[0].length;

// The lock path: `function P(){return join(memoryDir(),NAME)}` (or `path.join`), or, where the
// functions take the folder, `function P(e){return join(e,NAME)}`; the one nearest the
// declaration (the module's own).
const lockPathRe = new RegExp(`function ([\\w$]+)\\(([\\w$]*)\\)\\{return (?:[\\w$]+\\.join|[\\w$]+)\\((?:([\\w$]+)\\(\\)|([\\w$]+)),${esc(lockName)}\\)\\}`, "g");
const window = [Math.max(0, decl.index - 30000), declEnd + 3000];
const lockPaths = [...bin.slice(...window).matchAll(lockPathRe)]
  .map((m) => ({ at: window[0] + m.index, end: window[0] + m.index + m[0].length, name: m[1], param: m[2], memDir: m[3], arg: m[4] }))
  .filter((m) => (m.param === "" ? m.memDir !== undefined : m.arg === m.param));
if (lockPaths.length === 0) throw new Error("the lock-path function (joining a folder with the lock file's name) not found near its declaration");
const lockPath = lockPaths.sort((a, b) => Math.abs(a.at - decl.index) - Math.abs(b.at - decl.index))[0];
const takesFolder = lockPath.param !== "";

// The module's imports of Node's own fs/promises and path, when it imports them (the ES module
// layouts): they stand right before its first statement.
const withImports = (start) => {
  const before = bin.slice(Math.max(0, start - 600), start);
  const m = before.match(/(?:import\{[^}]*\}from"(?:fs\/promises|path)";)+$/);
  return m ? start - m[0].length : start;
};

// Where a function that starts at `at` ends: its parameters' parentheses, then its body's
// braces, skipping strings and template literals (whose `${…}` nest). Minified code has no
// comments here; a regular expression literal would mislead the count, which the driver's run
// would then show as a syntax error.
const functionEnd = (at) => {
  let i = bin.indexOf("(", at);
  let depth = 0;
  const stack = []; // open template literals, each with the brace depth its `${` opened at
  for (; i < bin.length; i++) {
    const c = bin[i];
    if (stack.length > 0 && stack.at(-1).inText) {
      if (c === "\\") i++;
      else if (c === "`") stack.pop();
      else if (c === "$" && bin[i + 1] === "{") {
        stack.at(-1).inText = false;
        stack.at(-1).depth = depth;
        depth++;
        i++;
      }
      continue;
    }
    if (c === '"' || c === "'") {
      for (i++; bin[i] !== c; i++) if (bin[i] === "\\") i++;
    } else if (c === "`") stack.push({ inText: true, depth: 0 });
    else if (c === "(" || c === "[") depth++;
    else if (c === ")" || c === "]") depth--;
    else if (c === "{") depth++;
    else if (c === "}") {
      depth--;
      if (stack.length > 0 && depth === stack.at(-1).depth) stack.at(-1).inText = true;
      else if (depth === 0 && bin.slice(at, i).includes(")")) return i + 1;
    }
  }
  throw new Error("a function of the consolidationLock module does not end");
};

// The module's text: [start, end).
let start;
let end;
let init = null; // the lazy initialiser: { name, helper, calls }
if (takesFolder) {
  // Imports, the declaration, then a run of functions up to the first statement that is not one.
  start = withImports(decl.index);
  end = declEnd;
  for (;;) {
    const head = /^(?:async )?function [\w$]+\(/.exec(bin.slice(end, end + 200));
    if (!head) break;
    end = functionEnd(end);
  }
  if (end - declEnd > 20000) throw new Error("the consolidationLock module's functions run on past 20,000 characters: not its layout");
} else {
  // The lock path first; after the declaration, the module's lazy initialiser, which runs its
  // dependencies' initialisers and (in a bundle) loads fs/promises and path.
  start = withImports(lockPath.at);
  const m = /^var ([\w$]+)=([\w$]+)\(\(\)=>\{([^}]*)\}\);/.exec(bin.slice(declEnd, declEnd + 2000));
  if (!m) throw new Error("the consolidationLock module's lazy initialiser not found after its declaration");
  init = { name: m[1], helper: m[2], calls: [...m[3].matchAll(/(?:^|[;,])([\w$]+)\(\)/g)].map((c) => c[1]) };
  end = declEnd + m[0].length;
  if (end - start > 30000) throw new Error("the consolidationLock module runs past 30,000 characters: not its layout");
}
const code = utf8(bin.slice(start, end));

const inModule = (re, what) => {
  const m = code.match(re);
  if (!m) throw new Error(`${what} not found in the consolidationLock module`);
  return m;
};
// The function around a landmark: the last `function NAME(PARAMS){` before it.
const around = (re, what) => {
  const m = inModule(re, what);
  const heads = [...code.slice(0, m.index).matchAll(/function ([\w$]+)\(((?:[\w$]+(?:=[\w$]+\(\))?,?)*)\)\{/g)];
  if (heads.length === 0) throw new Error(`${what}'s function not found in the consolidationLock module`);
  const [, name, params] = heads.at(-1);
  return { name, params: params === "" ? [] : params.split(",") };
};
// tryAcquireConsolidationLock: the one that says a live PID holds the file (the storage
// backend's says "acquired … ago", not "mtime").
const tryAcquire = around(/lock held by live PID \$\{[\w$.]+\} \(mtime /, "tryAcquireConsolidationLock");
// readLastConsolidatedAt: the lock file's mtime, 0 without one.
const readLast = around(/\.mtimeMs\}catch\{return 0\}/, "readLastConsolidatedAt");
// rollbackConsolidationLock: with no prior mtime, the file is removed.
const rollback = around(/if\([\w$]+===0\)\{await [\w$.]+\([\w$]+\);return\}/, "rollbackConsolidationLock");
// recordConsolidation, where the module still holds it (2.1.100 to 2.1.145): the manual
// /dream's stamp, which writes this process's PID with no holder check.
const record = /recordConsolidation write failed/.test(code) ? around(/recordConsolidation write failed/, "recordConsolidation") : null;
const want = takesFolder ? [[tryAcquire, 2], [readLast, 2], [rollback, 3]] : [[tryAcquire, 0], [readLast, 0], [rollback, 1]];
if (record) want.push([record, takesFolder ? 1 : 0]);
for (const [f, n] of want) {
  if (f.params.length !== n) throw new Error(`${f.name} takes (${f.params.join(",")}), not the ${n} parameters this driver gives it`);
}

// The names the module uses but does not hold, which the lock functions call.
const [, isRunning] = inModule(/if\([\w$]+!==void 0&&([\w$]+)\([\w$]+\)\)return /, "the isProcessRunning call");
const [, debug] = inModule(/return ([\w$]+)\(`\[autoDream\] lock held by live PID/, "the debug logger");
// The error formatter, where the rollback's message uses one (not in 2.1.100 to 2.1.122: `.message`).
const errorText = code.match(/rollback failed: \$\{([\w$]+)\(/)?.[1];
// The storage-backend flag, where the functions take a backend (on only by a server flag).
const backendFlag = code.match(/let [\w$]+=([\w$]+)\(\)&&[\w$]+!==void 0\?/)?.[1];

const [processRunning] = bin.match(
  new RegExp(`function ${esc(isRunning)}\\(([\\w$]+)\\)\\{if\\(\\1<=1\\)return!1;try\\{return process\\.kill\\(\\1,0\\),!0\\}catch\\{return!1\\}\\}`),
) ?? [];
if (!processRunning) throw new Error(`isProcessRunning (${isRunning}) not found in the binary with the body this driver knows`);

// What the module declares at its top level, so no stand-in shadows it.
const declared = new Set([
  ...[...code.matchAll(/import\{([^}]*)\}from"/g)].flatMap((m) => m[1].split(",").map((n) => n.split(" as ").at(-1).trim())),
  ...[...code.matchAll(/function ([\w$]+)\(/g)].map((m) => m[1]),
  ...decl[0].slice(4, -1).split(",").map((d) => d.split("=")[0]),
  ...(init ? [init.name] : []),
]);
const standIns = [
  [debug, `(m) => process.stderr.write(m + "\\n")`],
  ...(errorText ? [[errorText, `(e) => (e instanceof Error ? e.message : String(e))`]] : []),
  ...(lockPath.memDir ? [[lockPath.memDir, `() => MEMORY_DIR`]] : []),
  // Off: the lock is the file in the memory folder, as in every session without the flag.
  ...(backendFlag ? [[backendFlag, `() => false`]] : []),
  ...(init ? [[init.helper, `(f) => f`], ...init.calls.map((c) => [c, `() => {}`])] : []),
];
for (const [n] of standIns) if (declared.has(n)) throw new Error(`the consolidationLock module declares ${n}, which this driver expected it to take from elsewhere`);
if (declared.has(isRunning)) throw new Error(`the consolidationLock module declares isProcessRunning (${isRunning}) itself`);
const driverNames = ["MEMORY_DIR", "say", "readline", "createRequire", "require", "line", "op", "arg"];
const used = new Set([...code.matchAll(/(?:function |[{,(]|var |let |const )([\w$]+)(?=[=(,)}])/g)].map((m) => m[1]).concat([...declared]));
for (const n of driverNames) if (used.has(n)) throw new Error(`the consolidationLock module declares ${n}, a name the driver uses`);

const folderArg = takesFolder ? "MEMORY_DIR" : "";
const withFolder = (...rest) => [folderArg, ...rest].filter((a) => a !== "").join(", ");
process.stdout.write(`// GENERATED at test time by consolidation_lock_gen.mjs from ${process.argv[2]};
// not to be committed (it holds Claude Code's own code).
//
// The code after "CUT FROM THE BINARY" is Claude Code's own, byte for byte: its consolidationLock
// module (${lockPath.name} = the lock path, ${tryAcquire.name} = tryAcquireConsolidationLock,
// ${readLast.name} = readLastConsolidatedAt, ${rollback.name} = rollbackConsolidationLock, ${takesFolder ? "each taking the memory folder" : "the folder asked of " + lockPath.memDir + "()"};
// the ".consolidate-lock" name and the 60-minute HOLDER_STALE_MS) and ${isRunning} = isProcessRunning.
// Everything before it stands in for what the module takes from elsewhere: the debug logger
// (${debug}, to stderr)${errorText ? `, the error formatter (${errorText})` : ""}${lockPath.memDir ? `, the memory folder (${lockPath.memDir}, from the command line)` : ""}${backendFlag ? `, the storage-backend flag (${backendFlag}, off)` : ""}${init ? `, the bundler's lazy-init helper (${init.helper}) and the initialisers of the modules it depends on` : ""}.
//
// Driver: node consolidation_lock_cc.mjs MEMORY_DIR, then one command a line on stdin, each
// answered by one JSON line on stdout: "acquire" -> {"acquired": <prior mtime ms, or null>},
// "rollback <ms>" -> {"rolledBack": true}, "last" -> {"lastConsolidatedAt": <ms>}, and where the
// release has recordConsolidation${record ? ` (${record.name}, here)` : " (not here)"}, "record" -> {"recorded": true}. The first line
// says {"ready": <PID>, "records": <whether "record" is there>}. The process (whose PID is what
// acquire writes) stays alive until stdin closes, like a Claude Code session.
import { createRequire } from "node:module";
import readline from "node:readline";

const require = createRequire(import.meta.url);
const MEMORY_DIR = process.argv[2];
if (!MEMORY_DIR) throw new Error("usage: node consolidation_lock_cc.mjs MEMORY_DIR");
${standIns.map(([n, v]) => `const ${n} = ${v};`).join("\n")}
// CUT FROM THE BINARY
${code}
${utf8(processRunning)}
${init ? `${init.name}();` : ""}

const say = (v) => process.stdout.write(JSON.stringify(v) + "\\n");
say({ ready: process.pid, records: ${record !== null} });
for await (const line of readline.createInterface({ input: process.stdin })) {
  const [op, arg] = line.trim().split(/\\s+/);
  if (op === "acquire") say({ acquired: await ${tryAcquire.name}(${withFolder()}) });
  else if (op === "rollback") { await ${rollback.name}(${withFolder("Number(arg)")}); say({ rolledBack: true }); }
  else if (op === "last") say({ lastConsolidatedAt: await ${readLast.name}(${withFolder()}) });${record ? `
  else if (op === "record") { await ${record.name}(${withFolder()}); say({ recorded: true }); }` : ""}
  else if (op) throw new Error(\`unknown command: \${line}\`);
}
`);
