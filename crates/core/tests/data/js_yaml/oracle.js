// What a Claude Code release's frontmatter reader makes of each block of cases.json, for
// crates/core/tests/bun_yaml.rs. Run it with the Bun the release embeds (`strings claude | grep
// 'Bun v1'`; Bun's releases are on npm as @oven/bun-linux-x64) and the release's retry:
//
//   bun oracle.js quote|quote-array|quote-array-untab cases.json > out.json
//   node oracle_node.mjs path/to/2.1.100/cli.js quote cases.json > out.json   (Node releases)
//
// Claude Code parses the block with Bun.YAML.parse; when that throws it retries once on the
// block with awkward `key: value` lines quoted (and, by release, lists left alone, tabs that
// indent turned into two spaces each, the value required to start with a non-space), and when
// that throws too the frontmatter is empty. A result that is not a plain object is empty too.
// This file restates that procedure in Mneme's words to drive the release's own YAML parser;
// the procedure's release history is in docs/claude-code-versions.md (row 62).
// Under Node, oracle_node.mjs first loads the `yaml` package a Node release bundles and hands
// its parse over as globalThis.ccYamlParse.
const parseYaml = globalThis.ccYamlParse ?? ((text) => Bun.YAML.parse(text));
const [variant, file] = process.argv.slice(-2);
const { cases } = JSON.parse(require("fs").readFileSync(file, "utf8"));
const special = /[{}[\]*&#!|>%@`]|: /;
const keyValue = variant.endsWith("-S") ? /^([a-zA-Z_-]+):\s+(\S.*)$/ : /^([a-zA-Z_-]+):\s+(.+)$/;

function retryText(block) {
  const lines = block.split("\n").map((line) => {
    const m = line.match(keyValue);
    if (!m || !m[1] || !m[2]) return line;
    const [, key, value] = m;
    const wrapped = (q) => value.startsWith(q) && value.endsWith(q);
    if (wrapped('"') || wrapped("'")) return line;
    if (variant !== "quote" && value.startsWith("[") && value.endsWith("]")) {
      try {
        if (Array.isArray(parseYaml(value))) return line;
      } catch {}
    }
    if (!special.test(value)) return line;
    return `${key}: "${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
  });
  const text = lines.join("\n");
  return variant.includes("untab") ? text.replace(/^\t+/gm, (tabs) => "  ".repeat(tabs.length)) : text;
}

// JSON cannot hold every value YAML gives; numbers travel as the text JavaScript prints for them.
function encode(v) {
  if (typeof v === "number") return { $num: String(v) };
  if (typeof v === "bigint") return { $bigint: String(v) };
  if (v === undefined) return { $undefined: true };
  if (v instanceof Date) return { $date: v.toISOString() };
  if (Array.isArray(v)) return v.map(encode);
  if (v !== null && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = encode(x);
    return out;
  }
  return v;
}

const plainObject = (v) => (v !== null && typeof v === "object" && !Array.isArray(v) ? v : {});
const results = cases.map((block) => {
  try {
    return { ok: encode(plainObject(parseYaml(block))) };
  } catch {}
  try {
    return { ok: encode(plainObject(parseYaml(retryText(block)))), retried: true };
  } catch (e) {
    return { error: String((e && e.message) || e).split("\n")[0] };
  }
});
const reader = globalThis.ccYamlParse ? `yaml bundled in ${globalThis.ccYamlFrom}` : `Bun ${Bun.version}`;
process.stdout.write(JSON.stringify({ reader, variant, results }) + "\n");
