// Regenerates claude_code_oracle.json from the real Claude Code 2.1.197 binary:
//   node claude_code_oracle.mjs /path/to/claude > claude_code_oracle.json
// It cuts the secret scanner module (rule table, scanForSecrets, redactSecrets, the label
// function) out of the Bun-compiled binary's embedded JavaScript and runs it unchanged on
// every text of ../../../../testdata/secrets/gitleaks-examples.jsonl plus cases.json, so the
// Rust port is checked against Claude Code's own code, not a re-reading of it. The texts are
// named by their index in that list; a redacted text by a hash of it.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = fs.readFileSync(process.argv[2]).toString("latin1");
const utf8 = (s) => Buffer.from(s, "latin1").toString("utf8");

const module = bin.match(
  /function \w+\(e\)\{return \w+\.map\(\(t\)=>\(\{id:t\.id,confidence:t\.confidence,re:new RegExp[\s\S]*?=\{aws:"AWS"[^}]*\}\}\);/,
);
if (!module) throw new Error("secret scanner module not found in the binary");
const code = utf8(module[0]);
const name = (re) => {
  const m = code.match(re);
  if (!m) throw new Error(`function not found: ${re}`);
  return m[1];
};
const scanName = name(/function (\w+)\(e\)\{\w+\?\?=\w+\(!1\);let t=\[\];for\(let n of \w+\)if\(n\.confidence==="high"/);
const redactName = name(/function (\w+)\(e\)\{\w+\?\?=\w+\(!0\);for\(let t of/);
const labelName = name(/function (\w+)\(e\)\{return e\.split\("-"\)\.map/);
const tableName = name(/(\w+)=\[\{id:"url-userinfo"/);
const capName = name(/\?\?(\w+)\(t\)\)\.join\(" "\)/);
const cap = utf8(bin.match(new RegExp(`function ${capName}\\(e\\)\\{return e\\.charAt\\(0\\)\\.toUpperCase\\(\\)\\+e\\.slice\\(1\\)\\}`))[0]);

// The module is wrapped in the bundler's lazy-init helper `var X=E(()=>{...})`: run it with
// stand-ins for the helper and for the one import its initialiser calls, then call X().
const initName = code.match(/var (\w+)=E\(\(\)=>\{or\(\);/)[1];
const cc = new Function(
  `const E=(f)=>f; const or=()=>{}; ${cap}; ${code}; ${initName}();
   return { scan: ${scanName}, redact: ${redactName}, label: ${labelName}, table: ${tableName} };`,
)();

const gitleaks = fs
  .readFileSync(path.join(here, "../../../../testdata/secrets/gitleaks-examples.jsonl"), "utf8")
  .trim()
  .split("\n")
  .map((l) => JSON.parse(l).text);
const extra = JSON.parse(fs.readFileSync(path.join(here, "cases.json"), "utf8"));
const texts = [...gitleaks, ...extra];

// FNV-1a (32 bits) of the UTF-8 of a text: the redacted texts are kept as these, which is
// enough to see that Mneme's redaction gives the same text without vendoring 7,000 of them.
const fnv = (s) => {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, "utf8")) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
};
const rules = cc.table.map((r) => ({ id: r.id, source: r.source, flags: r.flags ?? "", confidence: r.confidence, label: cc.label(r.id) }));
const found = texts.flatMap((t, i) => {
  const ids = cc.scan(t).map((f) => f.ruleId);
  return ids.length ? [`  "${i}": ${JSON.stringify(ids)}`] : [];
});
const redacted = texts.flatMap((t, i) => {
  const r = cc.redact(t);
  return r === t ? [] : [`  "${i}": "${fnv(r)}"`];
});
process.stdout.write(`{
 "generatedFrom": "Claude Code 2.1.197 (claude-code-linux-x64), secretScanner module",
 "texts": ${texts.length},
 "rules": [
  ${rules.map((r) => JSON.stringify(r)).join(",\n  ")}
 ],
 "found": {
${found.join(",\n")}
 },
 "redacted": {
${redacted.join(",\n")}
 }
}
`);
