// Extracts Claude Code's read-only Bash allowlist (readOnlyValidation) from the compiled
// binary into readonly.json, which crates/agent/src/bash/tables.rs loads. Callbacks
// (additionalCommandIsDangerousCallback) are recorded by command name only: their logic is
// ported by hand in rules.rs.
//
//   node crates/agent/data/extract-readonly.mjs /path/to/claude > crates/agent/data/readonly.json
import fs from "node:fs";
import vm from "node:vm";

const bin = fs.readFileSync(process.argv[2]).toString("latin1");
function between(start, end) {
  const i = bin.indexOf(start);
  const j = bin.indexOf(end, i);
  if (i < 0 || j < 0) throw new Error(`anchor not found: ${start}`);
  return bin.slice(i, j);
}
// Flag tables and the git/gh/docker/rg/pyright command tables.
const part1 = between('Jjt={"--all"', "gaa=/^-[a-zA-Z0-9_-]/");
// fd/grep flags, the main command table, READONLY_COMMANDS and the regex list.
const part2 = between('bBa={"-h"', "SBa=/^(?:");
// The find-predicate sets referenced by part 2.
const kjt = between('Kjt=new Set(["-name"', ")") + ")";
const yjt = between("Yjt=/^-newer", ",");
// BOp builds the "command followed by safe characters" regex for each READONLY_COMMANDS entry.
const bop = between("function BOp(", "function VOp(");

const stub = (name) => {
  const f = () => false;
  f.stubName = name;
  return f;
};
const ctx = { aN: stub("aN"), _Le: stub("_Le"), ENn: stub("ENn"), tmt: stub("tmt"), bi: stub("bi"), kp: stub("kp") };
vm.createContext(ctx);
vm.runInContext(`${bop};${kjt};${yjt};Sut=new Set();L5e=/x/;${part1};${part2};`, ctx);

const table = {};
function add(name, cfg) {
  table[name] = {
    safeFlags: cfg.safeFlags ?? {},
    respectsDoubleDash: cfg.respectsDoubleDash !== false,
    regex: cfg.regex ? cfg.regex.source : null,
    hasCallback: typeof cfg.additionalCommandIsDangerousCallback === "function",
  };
}
for (const [name, cfg] of Object.entries(ctx.MOp)) add(name, cfg);
const out = {
  // Order matters: the first entry whose words prefix the command wins.
  commands: Object.keys(ctx.MOp),
  table,
  xargsTargets: ctx.OOp,
  readonlyCommands: ctx.zyo,
  exactCommands: [...ctx.WOp],
  exactArgv: ctx.qOp,
  findDangerous: [...ctx.jOp],
  findWithArg: [...ctx.GOp],
  globSafe: [...ctx.KOp],
  regexes: [...ctx.zOp].map((r) => r.source),
};
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
