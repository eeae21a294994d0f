// oracle.js for the releases that ran on Node (up to 2.1.112): their `cli.js` bundles the `yaml`
// package, and this takes that very copy out of the bundle: a copy of cli.js whose last
// statement (the call that starts the CLI) is replaced by one that hands the bundled module out
// is imported, so the bundle's modules are defined and nothing runs; then oracle.js runs with
// that module's parse.
//
//   node oracle_node.mjs path/to/cli.js quote cases.json > oracle_node-2.1.100_quote.json
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [cli] = process.argv.slice(2);
const source = readFileSync(cli, "utf8");
// The bundle's lazy module whose exports carry `parse`, `parseDocument` and `YAMLParseError`.
const name = source.match(/var ([\w$]+)=[\w$]+\(\([\w$]+\)=>\{var [^]{0,400}?\.Composer=[\w$]+\.Composer;/)?.[1];
if (!name) throw new Error(`no bundled yaml module found in ${cli}`);
const start = source.trimEnd().match(/[\w$]+\(\);$/);
if (!start) throw new Error(`the last statement of ${cli} is not the call that starts the CLI`);
const end = source.trimEnd().length;
const patched = `${source.slice(0, end - start[0].length)}globalThis.__bundledYaml=${name}();\n`;
const copy = join(mkdtempSync(join(tmpdir(), "cc-yaml-")), "cli.mjs");
writeFileSync(copy, patched);
await import(copy);
globalThis.ccYamlParse = (text) => globalThis.__bundledYaml.parse(text);
globalThis.ccYamlFrom = source.match(/\/\/ Version: (\S+)/)?.[1] ?? cli;
createRequire(import.meta.url)("./oracle.js");
