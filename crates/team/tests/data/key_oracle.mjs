// Regenerates key_oracle.json from the real Claude Code binary:
//   node key_oracle.mjs /path/to/claude > key_oracle.json
// Cuts teamMemPaths (sanitizePathKey, realpathDeepestExisting, isRealPathWithinTeamDir,
// validateTeamMemKey and the PathTraversalError class) out of the Bun-compiled binary, points
// its team folder at a fixture with real symbolic links, and records what each key gives.
// tests/key_oracle.rs builds the same fixture and compares; `$ROOT` stands for its path.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const bin = fs.readFileSync(process.argv[2]).toString("latin1");
const utf8 = (s) => Buffer.from(s, "latin1").toString("utf8");
const m = bin.match(
  /function \w+\(e\)\{if\(e\.includes\("\\x00"\)\)throw new \w+\(`Null byte in path key[\s\S]*?\w+=class \w+ extends Error\{constructor\(e\)\{super\(e\);this\.name="PathTraversalError"\}\}\}\);/,
);
if (!m) throw new Error("teamMemPaths not found in the binary");
const code = utf8(m[0]);
const find = (re) => {
  const r = code.match(re);
  if (!r) throw new Error(`not found: ${re}`);
  return r;
};
const [, teamPath, memPath] = find(/function ([\w$]+)\(\)\{return\([\w$]+\.join\(([\w$]+)\(\),"team"\)\+[\w$]+\.sep\)\.normalize\("NFC"\)\}/);
const [, validate] = find(/async function ([\w$]+)\(e\)\{[\w$]+\(e\);let t=[\w$]+\(\),n=[\w$]+\.join\(t,e\)/);
const [, init] = find(/var ([\w$]+)=E\(\(\)=>\{/);
const [, codeOf] = find(/let s=([\w$]+)\(o\);if\(s==="ENOENT"\)/);
const imports = [...code.match(/E\(\(\)=>\{((?:[\w$]+\(\);)*)/)[1].matchAll(/([\w$]+)\(\)/g)].map((x) => x[1]);

const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "cc-keys-")));
const memory = path.join(root, "memory");
const team = path.join(memory, "team");
// The fixture (tests/key_oracle.rs builds the same).
fs.mkdirSync(path.join(team, "real"), { recursive: true });
fs.mkdirSync(path.join(memory, "outside"));
fs.mkdirSync(path.join(memory, "team-evil"));
fs.writeFileSync(path.join(memory, "outside", "secret.md"), "s");
fs.writeFileSync(path.join(team, "file"), "f");
fs.symlinkSync(path.join(memory, "outside"), path.join(team, "linked"));
fs.symlinkSync(path.join(memory, "outside", "secret.md"), path.join(team, "file.md"));
fs.symlinkSync(path.join(memory, "team-evil"), path.join(team, "evil"));
fs.symlinkSync(path.join(team, "real"), path.join(team, "alias"));
fs.symlinkSync(path.join(memory, "nowhere"), path.join(team, "dangling"));
fs.symlinkSync(path.join(team, "loop-b"), path.join(team, "loop-a"));
fs.symlinkSync(path.join(team, "loop-a"), path.join(team, "loop-b"));

const stubs = imports.map((n) => `const ${n}=()=>{};`).join("");
const api = new Function(
  "require",
  "MEMORY",
  `const E=(f)=>f; ${stubs} const ${memPath}=()=>MEMORY; const ${codeOf}=(e)=>e&&e.code;
   ${code}; ${init}(); return { validate: ${validate}, teamPath: ${teamPath} };`,
)(require, memory);

const keys = JSON.parse(fs.readFileSync(new URL("./key_cases.json", import.meta.url), "utf8"));
const hide = (s) => s.split(root).join("$ROOT");
const cases = [];
for (const key of keys) {
  try {
    cases.push({ key, ok: hide(await api.validate(key)) });
  } catch (e) {
    if (e.name !== "PathTraversalError") throw e;
    cases.push({ key, error: hide(e.message) });
  }
}
fs.rmSync(root, { recursive: true, force: true });
process.stdout.write(JSON.stringify({ generatedFrom: "Claude Code 2.1.197 teamMemPaths", teamPath: hide(api.teamPath()), cases }, null, 1) + "\n");
