// Evaluates Claude Code 2.1.197's own buildExtractPrompt (cut out of the binary) to produce
// the expected prompts in extract_prompt.json.
//   node extract_prompt_oracle.mjs [CLAUDE_BIN] > extract_prompt.json
import { readFileSync } from "node:fs";
const bin = process.argv[2] ?? "/tmp/cc/node_modules/@anthropic-ai/claude-code-linux-x64/claude";
const buf = readFileSync(bin);
const marker = Buffer.from("function nLl(e,t,n){");
const at = buf.lastIndexOf(marker);
if (at < 0) throw new Error("buildExtractPrompt not found");
const end = buf.indexOf(Buffer.from("var rLl=E("), at);
const src = buf.subarray(at, end).toString("utf8");
// The minified tool-name constants and the platform check, as on Linux.
const env = { Hu: () => true, Co: "Bash", ys: "PowerShell", Ms: "Read", Wc: "Grep", ku: "Glob", Ca: "Edit", Rc: "Write" };
const nLl = new Function(...Object.keys(env), `${src}; return nLl;`)(...Object.values(env));
const manifest = "- [user] user_role.md (2026-01-01T00:00:00.000Z): role\n- notes.md (2026-01-02T00:00:00.000Z)";
const cases = [];
for (const n of [1, 7]) for (const m of ["", manifest]) for (const team of [false, true])
  cases.push({ n, manifest: m, team, prompt: nLl(n, m, team) });
console.log(JSON.stringify({ source: src, cases }, null, 1));
