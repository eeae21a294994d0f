// Takes the value rules of Claude Code's settings schema out of one release, for the checks in
// crates/store/src/settings/schema.rs: Claude Code ignores a whole settings file when one of its
// keys breaks the schema (a string where a number belongs, 0 where the number must be above 0),
// so Mneme has to know each key's rule to say which files count.
//
//   node crates/store/data/extract-settings-schema.mjs "$(scripts/claude-code.sh 2.1.332)"
//
// Prints {"keys": {KEY: RULE}, "unchecked": [KEY…]}. A rule is what a value must be, in
// Mneme's own notation:
//   {"type": "boolean" | "string" | "number" | "array" | "object" | "enum",
//    "nullable": true,              null is accepted as well
//    "values": [...],               enum: the strings accepted
//    "int": true, "gt"/"gte"/"lt"/"lte": N,   number bounds
//    "minLength"/"maxLength": N,    string length in UTF-16 units, or array length
//    "items": RULE,                 array: the rule of every item
//    "fields": {NAME: RULE},        object: the rules of the fields it declares (others pass)
//    "required": [NAME…],           object: fields that must be there
//    "each": RULE,                  object that is a record with string keys: every value's rule
//    "more": true}                  the schema checks more than this (a pattern, a refinement,
//                                   a field it could not read); those checks are not reproduced
// Only what is certain is written: a key whose schema this script cannot read (a union, a
// preprocess step, a named sub-schema) goes to "unchecked", and a key whose schema falls back
// to a default on a bad value (`.catch`) is left out, since it never rejects the file.
//
// The schema is found by what it holds (an object of keys including $schema, autoMemoryEnabled
// and cleanupPeriodDays), and the minified names of zod's constructors by keys whose type is
// known (autoMemoryEnabled is a boolean, $schema a string, cleanupPeriodDays a number,
// claudeMdExcludes an array); releases that call zod through its namespace (`H.string()`) need
// no guessing. Nothing of the schema's text (its descriptions) is kept.
import fs from "node:fs";
import { jsScanner } from "../../../scripts/js-scan.mjs";

const src = fs.readFileSync(process.argv[2]).toString("latin1");
const { expressionEnd, stringEnd } = jsScanner(src);

/** The top-level `key: value` entries of the object literal opening at `open` in `text`
 *  (the whole bundle unless told). */
function entries(open, text = src, scan = text === src ? { expressionEnd, stringEnd } : jsScanner(text)) {
  const src = text;
  const { expressionEnd, stringEnd } = scan;
  const out = [];
  let i = open + 1;
  while (src[i] !== "}") {
    let key;
    if (src[i] === '"' || src[i] === "'") {
      const close = stringEnd(i);
      key = JSON.parse(src[i] === '"' ? src.slice(i, close) : `"${src.slice(i + 1, close - 1)}"`);
      i = close;
    } else if (src.startsWith("...", i)) {
      key = null;
      i += 3;
    } else {
      const m = /^[A-Za-z_$][\w$]*/.exec(src.slice(i, i + 200));
      if (!m) throw new Error(`unexpected text in the settings schema at ${i}: ${src.slice(i, i + 40)}`);
      key = m[0];
      i += key.length;
    }
    let valueStart = i;
    if (key !== null) {
      if (src[i] !== ":") throw new Error(`no value for ${key} at ${i}`);
      valueStart = i + 1;
    }
    const valueEnd = expressionEnd(valueStart);
    // A spread (`...other`) is kept in its place: what it brings replaces the entries before it.
    out.push(key !== null ? { key, text: src.slice(valueStart, valueEnd) } : { spread: src.slice(valueStart, valueEnd) });
    if (src[valueEnd] === "}") break;
    if (src[valueEnd] !== ",") throw new Error(`the settings schema's object does not go on at ${valueEnd}`);
    i = valueEnd + 1;
  }
  return out;
}

/** The settings schema's keys: the object literal that holds the anchor keys at its top. */
/** Where the settings schema's object starts. */
let schemaAt = 0;

function settingsEntries() {
  const wanted = ["autoMemoryEnabled", "cleanupPeriodDays"];
  for (let at = src.indexOf("{$schema:"); at >= 0; at = src.indexOf("{$schema:", at + 1)) {
    let list;
    try {
      list = entries(at);
    } catch (e) {
      if (process.env.DEBUG) console.error(at, e.message);
      continue;
    }
    const keys = new Set(list.map((e) => e.key));
    if (wanted.every((k) => keys.has(k))) {
      schemaAt = at;
      return list;
    }
  }
  throw new Error("no settings schema found in this release (an object with $schema, autoMemoryEnabled and cleanupPeriodDays)");
}

/** Where the bracket opening at `open` closes, past any commas inside it. */
function closeOf(scan, text, open) {
  for (let i = open + 1; ; ) {
    const end = scan.expressionEnd(i);
    if (text[end] !== "," && text[end] !== ";") return end;
    i = end + 1;
  }
}

/** `base(args).method(args)…` as {base, args, calls: [{name, args}]}, or null for anything else. */
function chain(text) {
  text = text.trim();
  if (text.startsWith("()=>")) text = text.slice(4);
  const scan = jsScanner(text);
  const m = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)?\(/.exec(text);
  if (!m) return null;
  const base = m[0].slice(0, -1);
  let close = closeOf(scan, text, m[0].length - 1) + 1;
  const parts = { base, args: text.slice(m[0].length, close - 1), calls: [] };
  let i = close;
  while (i < text.length) {
    const c = /^\.([A-Za-z_$][\w$]*)\(/.exec(text.slice(i));
    if (!c) return null;
    close = closeOf(scan, text, i + c[0].length - 1) + 1;
    parts.calls.push({ name: c[1], args: text.slice(i + c[0].length, close - 1) });
    i = close;
  }
  return parts;
}

/** The top-level comma-separated arguments of a call's argument text. */
function splitArgs(text) {
  const closed = `${text})`;
  const scan = jsScanner(closed);
  const out = [];
  for (let i = 0; i < text.length; ) {
    const end = scan.expressionEnd(i);
    out.push(text.slice(i, end));
    i = end + 1;
  }
  return out;
}

const NUMBER = /^-?(\d+(\.\d+)?(e[+-]?\d+)?|\.\d+)$/i;
const numberArg = (args) => (NUMBER.test(splitArgs(args)[0]?.trim() ?? "") ? Number(splitArgs(args)[0]) : undefined);
const stringList = (text) => {
  const t = text.trim();
  if (!/^\[("([^"\\]|\\.)*"(,"([^"\\]|\\.)*")*)?\]$/.test(t)) return undefined;
  return JSON.parse(t);
};

/** Zod's constructors by their names in the namespace style, or by what the anchors showed. */
const KINDS = {
  boolean: "boolean",
  string: "string",
  number: "number",
  array: "array",
  object: "object",
  strictObject: "object",
  looseObject: "object",
  record: "record",
  enum: "enum",
};

/** Calls after which a field may be left out of its object. */
const OPTIONAL = new Set(["optional", "default", "prefault", "nullish"]);

/** The fields an object schema's literal declares, as {fields, required, more}: a field
 *  is required when its schema is read and nothing makes it optional; a field whose schema is
 *  not read is neither checked nor required (it may be optional), and makes the rule `more`. */
function shapeOf(literal, aliases) {
  const out = { fields: {}, required: [] };
  let list;
  try {
    list = expand(entries(0, literal));
  } catch {
    return { more: true };
  }
  // A spread whose keys are not known may replace any field before it.
  const unknownAt = list.findLastIndex((item) => item.unresolved !== undefined);
  const fields = new Map();
  for (const [i, item] of list.entries()) {
    if (item.unresolved !== undefined) continue;
    fields.set(item.key, i < unknownAt || item.maybe ? { unchecked: true } : ruleOf(item.text, aliases));
  }
  for (const [key, field] of fields) {
    if (field.caught) continue;
    if (field.unchecked) {
      out.more = true;
      continue;
    }
    if (!field.optional) out.required.push(key);
    delete field.optional;
    if (field.more) out.more = true;
    out.fields[key] = field;
  }
  // A spread this script cannot follow brings fields it does not see.
  if (unknownAt >= 0) out.more = true;
  if (Object.keys(out.fields).length === 0) delete out.fields;
  if (out.required.length === 0) delete out.required;
  return out;
}

/** Calls that change nothing about which values pass. */
const NEUTRAL = new Set(["optional", "describe", "default", "prefault", "readonly", "meta", "passthrough", "strict", "strip", "loose", "finite"]);

/** Whether the chain ends by falling back on a bad value (`.catch(…)`, then only neutral calls):
 *  such a key never makes the file fail, whatever its schema. */
function caught(c) {
  const at = c.calls.findLastIndex((call) => call.name === "catch");
  return at >= 0 && c.calls.slice(at + 1).every((call) => NEUTRAL.has(call.name));
}

function ruleOf(text, aliases) {
  const c = chain(text);
  if (!c) return { unchecked: true };
  if (caught(c)) return { caught: true };
  const [prefix, name] = c.base.includes(".") ? c.base.split(".") : [null, c.base];
  // `NS.string()` is zod's only where NS is the namespace the anchors use: `z.coerce` (a
  // value turned into a string or number first) is written the same way.
  if (prefix !== null && !aliases.namespaces.has(prefix)) return { unchecked: true };
  let kind = prefix !== null ? KINDS[name] : aliases.get(name);
  if (!kind) return { unchecked: true };
  const args = splitArgs(c.args);
  const rule = { type: kind === "record" ? "object" : kind };
  if (kind === "record") {
    if (args.length !== 2 && args.length !== 3) return { unchecked: true };
    // Every value of a record keyed by any string follows one rule; keys with rules of their
    // own (an enum, a pattern) are more than that.
    const each = ruleOf(args[1], aliases);
    const anyKey = [...aliases].some(([name, k]) => k === "string" && args[0].trim() === `${name}()`) || [...aliases.namespaces].some((ns) => args[0].trim() === `${ns}.string()`);
    if (anyKey && !each.unchecked && !each.caught) {
      delete each.optional;
      rule.each = each;
      if (each.more) rule.more = true;
    } else rule.more = true;
  }
  if (kind === "array") {
    const items = args.length === 1 ? ruleOf(args[0], aliases) : { unchecked: true };
    if (items.caught) rule.more = true;
    else if (items.unchecked) rule.more = true;
    else {
      delete items.optional;
      rule.items = items;
    }
    if (items.more) rule.more = true;
  } else if (kind === "enum") {
    const values = args.length >= 1 ? stringList(args[0]) : undefined;
    if (!values) return { unchecked: true };
    rule.values = values;
  } else if (kind === "object") {
    if (args.length < 1 || !args[0].trim().startsWith("{")) return { unchecked: true };
    Object.assign(rule, shapeOf(args[0].trim(), aliases));
  }
  // Whether a call before has rewritten the value (`.trim()`): later bounds then measure
  // what the file does not hold.
  let rewritten = false;
  for (const call of c.calls) {
    const n = numberArg(call.args);
    if (OPTIONAL.has(call.name)) rule.optional = true;
    if (NEUTRAL.has(call.name)) continue;
    switch (call.name) {
      case "trim":
      case "toLowerCase":
      case "toUpperCase":
      case "normalize":
      case "overwrite":
        rewritten = true;
        rule.more = true;
        break;
      case "partial":
      case "deepPartial":
      case "required":
      case "pick":
      case "omit":
      case "extend":
      case "merge":
      case "safeExtend":
      case "catchall":
        // An object's fields changed after the literal: the literal no longer says them.
        return { unchecked: true };
      case "nullable":
      case "nullish":
        rule.nullable = true;
        break;
      case "catch":
        return { caught: true };
      case "int":
      case "safe":
        rule.int = true;
        break;
      case "positive":
        rule.gt = 0;
        break;
      case "nonnegative":
        rule.gte = 0;
        break;
      case "negative":
        rule.lt = 0;
        break;
      case "nonpositive":
        rule.lte = 0;
        break;
      case "gt":
      case "gte":
      case "lt":
      case "lte":
        if (n === undefined) rule.more = true;
        else rule[call.name] = n;
        break;
      case "min":
      case "max":
      case "length":
      case "nonempty": {
        const bound = call.name === "nonempty" ? 1 : n;
        if (bound === undefined || rewritten) {
          rule.more = true;
          break;
        }
        if (kind === "number") rule[call.name === "min" ? "gte" : "lte"] = bound;
        else if (kind === "string" || kind === "array") {
          if (call.name !== "max") rule.minLength = bound;
          if (call.name === "max" || call.name === "length") rule.maxLength = bound;
        } else rule.more = true;
        break;
      }
      case "or":
      case "and":
      case "pipe":
      case "transform":
        // The value may be accepted another way, or changed before it is checked.
        return { unchecked: true };
      default:
        // A refinement, a pattern, a format: more than this rule says.
        rule.more = true;
    }
  }
  return rule;
}

/** The minified constructor names, learnt from keys whose type Mneme knows. */
function learnAliases(list) {
  const aliases = new Map();
  aliases.namespaces = new Set();
  const anchors = { $schema: "string", autoMemoryEnabled: "boolean", cleanupPeriodDays: "number", claudeMdExcludes: "array", respectGitignore: "boolean" };
  for (const { key, text } of list.filter((item) => item.key !== undefined)) {
    const kind = anchors[key];
    const c = kind && chain(text);
    if (!c) continue;
    if (c.base.includes(".")) {
      const [ns, name] = c.base.split(".");
      if (KINDS[name] === kind) aliases.namespaces.add(ns);
      continue;
    }
    if (aliases.has(c.base) && aliases.get(c.base) !== kind) throw new Error(`${c.base} is both ${aliases.get(c.base)} and ${kind}`);
    aliases.set(c.base, kind);
  }
  // An object schema is a constructor called with one object literal of fields, an enum one
  // called with one array of strings, a record one called with a string schema and another
  // schema (and perhaps its options); a name used more than one way is none of them. A single name as the argument
  // (a shape or a list defined elsewhere) fits any of them.
  const shapes = new Map();
  const note = (base, shape) => shapes.set(base, (shapes.get(base) ?? new Set()).add(shape));
  const stringAlias = [...aliases].find(([, kind]) => kind === "string")?.[0];
  for (const { text } of list.filter((item) => item.key !== undefined)) {
    const c = chain(text);
    if (!c || c.base.includes(".") || aliases.has(c.base)) continue;
    const args = splitArgs(c.args).map((a) => a.trim());
    if (args.length === 1 && /^[A-Za-z_$][\w$]*$/.test(args[0])) note(c.base, "neutral");
    else if (args.length === 1 && args[0].startsWith("{")) note(c.base, "object");
    else if (args.length === 1 && stringList(args[0])) note(c.base, "enum");
    // z.record(keys, values) or z.record(keys, values, {error: …}).
    else if ((args.length === 2 || (args.length === 3 && args[2].startsWith("{"))) && stringAlias && args[0].startsWith(`${stringAlias}()`))
      note(c.base, "record");
    else note(c.base, "other");
  }
  for (const seen of shapes.values()) seen.delete("neutral");
  for (const [base, seen] of shapes) if (seen.size === 1 && !seen.has("other")) aliases.set(base, [...seen][0]);
  return aliases;
}

/** A key written as a lazy schema, `LAZY(()=>NAME(…))`, or as a call `NAME(…)` of a function
 *  that builds one (with neutral calls after either), read through NAME's definition
 *  (`function NAME(…){return …}` or `NAME=WRAP(()=>…)`) when that is the bundle's only
 *  definition of NAME, and only when it builds an object. */
function throughLazy(text, aliases) {
  const m = /^(?:\(\)=>)?(?:[A-Za-z_$][\w$]*\(\(\)=>([A-Za-z_$][\w$]*)\([\w$]*\)\)|([A-Za-z_$][\w$]*)\([\w$]*\))((?:\.[A-Za-z_$][\w$]*\((?:[^()"`']|"(?:[^"\\]|\\.)*"|`[^`]*`|'(?:[^'\\]|\\.)*')*\))*)$/.exec(text.trim());
  if (!m) return { unchecked: true };
  const after = chain(`x()${m[3]}`);
  if (!after || !after.calls.every((call) => NEUTRAL.has(call.name) || call.name === "nullable" || call.name === "nullish")) return { unchecked: true };
  const named = m[1] ?? m[2];
  if (aliases.has(named)) return { unchecked: true };
  const name = named.replace(/\$/g, "\\$");
  // Minified names are reused from scope to scope, and which definition is in scope takes a
  // parser to tell; the nearest one is not always it (2.1.330's `sshHostCommands` would take
  // one 200 KB away that builds a model catalogue, with the real one 230 KB the other way). So
  // every definition that could build a schema counts — a function returning a call chain, an
  // arrow whose body is one, a lazy wrapper — and the nearest is read only when it is within a
  // megabyte of the settings schema and every other is at least ten times as far and a
  // megabyte away (copies of the same text, which some releases carry twice, count once).
  const forms = new RegExp(`(?<![\\w$.])(?:function ${name}\\([\\w$,]*\\)\\{return |${name}=(?:[A-Za-z_$][\\w$]*\\(\\(\\)=>|\\([\\w$,]*\\)=>|[A-Za-z_$][\\w$]*=>))`, "g");
  const candidates = [];
  for (const d of src.matchAll(forms)) {
    const at = d.index + d[0].length;
    // A schema is built by a call: anything else (a block, a template, an operator) is not one.
    const call = /^([A-Za-z_$][\w$]*)(?:\.([A-Za-z_$][\w$]*))?\(/.exec(src.slice(at, at + 200));
    if (!call || (call[2] !== undefined && !aliases.namespaces.has(call[1]))) continue;
    const end = expressionEnd(at);
    // A long body is counted without being read (a reading of megabytes per name would not
    // finish): it may be a schema, so it stands as a rival.
    const body = end - at > 200_000 ? `${at}` : src.slice(at, end);
    if (end - at <= 200_000 && !chain(body)) continue;
    candidates.push({ d, body, distance: Math.abs(d.index - schemaAt) });
  }
  candidates.sort((a, b) => a.distance - b.distance);
  const nearest = candidates[0];
  const rival = candidates.find((c) => c.body !== nearest?.body);
  if (!nearest || nearest.distance > 1_000_000) return { unchecked: true };
  if (rival && (rival.distance < 10 * nearest.distance || rival.distance < 1_000_000)) return { unchecked: true };
  const only = nearest.d;
  const start = only.index + only[0].length;
  const inner = ruleOf(src.slice(start, expressionEnd(start)), aliases);
  if (inner.type !== "object") return { unchecked: true };
  const rule = { ...inner };
  delete rule.optional;
  if (after.calls.some((call) => call.name === "nullable" || call.name === "nullish")) rule.nullable = true;
  return rule;
}

/** The file of the bundle that holds the settings schema: a release's binary carries its
 *  JavaScript as files side by side, separated by NUL bytes, and each file is a scope of its
 *  own (from 2.1.3xx a file of a few hundred kilobytes; before, one of 13 to 18 MB). */
let schemaFile;
function fileOfSchema() {
  if (schemaFile) return schemaFile;
  let start = schemaAt;
  while (start > 0 && src.charCodeAt(start - 1) !== 0) start--;
  let end = schemaAt;
  while (end < src.length && src.charCodeAt(end) !== 0) end++;
  return (schemaFile = { start, text: src.slice(start, end) });
}

/** Where in the bundle the value of `name`'s one definition in the schema's file starts (at
 *  `function` for a declaration, after `=` for an assignment), or -1 when the file defines it
 *  more than once or not at all. Minified names are reused by inner scopes, and which of two
 *  definitions a use sees takes a parser to tell; a name defined once in the file is the one
 *  every use in it sees (an import from another file would define it nowhere in this one).
 *  A definition `could` rules out (a value the use cannot be working with, such as a number
 *  where a function is called) is no rival: 2.1.190's bundle has a class field `als=new …`
 *  beside the function `als` its schema calls. */
function onlyDefinition(name, could = () => true) {
  const { start, text } = fileOfSchema();
  const n = name.replace(/\$/g, "\\$");
  const found = [...text.matchAll(new RegExp(`(?<![\\w$.])(?:function ${n}\\(|${n}=(?![=>]))`, "g"))]
    .map((m) => start + m.index + (m[0].startsWith("function") ? 0 : m[0].length))
    .filter((at) => could(src.slice(at, at + 200)));
  return found.length === 1 ? found[0] : -1;
}

/** Whether a value starting with `text` could be a function: not a literal of another kind
 *  or a `new` object. */
const couldBeFunction = (text) => !/^(new |[-+!]?[\d.]|["'`[{]|!0|!1|void 0|null|true|false)/.test(text);
/** Whether a value starting with `text` could be an object or an array: not a number, a
 *  string, a boolean or nothing. */
const couldBeObject = (text) => !/^([-+]?[\d.]|["'`]|!0|!1|void 0|null|true|false)/.test(text);

/** The object literal opening at `at` in the bundle, as its text, or null. */
function literalAt(at) {
  if (at < 0 || src[at] !== "{") return null;
  const end = expressionEnd(at);
  return src.slice(at, end);
}

/** The keys the feature modules add to the settings schema (2.1.113 on): the schema ends with
 *  `...F(list)` (from 2.1.316 `...MAP(F(list),(a)=>()=>a)`, each schema wrapped like the
 *  schema's own entries), where F merges `REG[name].shape()` over the names in the list, and the
 *  list the release validates with is `LIST.filter((x)=>REG[x].buildGate())`. Each module of
 *  REG is `{buildGate: …, shape: ()=>({key: schema, …}), …}`. A module whose gate is `()=>!0` is
 *  in, `()=>!1` out; any other gate is decided at run time, so its keys may or may not be there.
 *  Null when any part of this is not found as described. */
function featureKeys(call) {
  const direct = /^([A-Za-z_$][\w$]*)\([A-Za-z_$][\w$]*\)$/.exec(call);
  const mapped = /^[A-Za-z_$][\w$]*\(([A-Za-z_$][\w$]*)\([A-Za-z_$][\w$]*\),\(?([A-Za-z_$][\w$]*)\)?=>\(\)=>\2\)$/.exec(call);
  const merge = (direct ?? mapped)?.[1];
  if (merge === undefined) return null;
  const at = onlyDefinition(merge, couldBeFunction);
  if (at < 0) return null;
  const loop = /^function [A-Za-z_$][\w$]*\(([A-Za-z_$][\w$]*)\)\{(?:let|var|const) ([A-Za-z_$][\w$]*)=\{\};for\((?:let|const|var) ([A-Za-z_$][\w$]*) of \1\)\2=\{\.\.\.\2,\.\.\.([A-Za-z_$][\w$]*)\[\3\]\.shape\(\)\};return \2\}/.exec(src.slice(at, at + 300));
  if (!loop) return null;
  const registry = loop[4];
  const modules = literalAt(onlyDefinition(registry, couldBeObject));
  if (modules === null) return null;
  // The list of module names the validating schema is built with.
  const reg = registry.replace(/\$/g, "\\$");
  const gates = [...fileOfSchema().text.matchAll(new RegExp(`(?<![\\w$.])([A-Za-z_$][\\w$]*)\\.filter\\(\\(?([A-Za-z_$][\\w$]*)\\)?=>${reg}\\[\\2\\]\\.buildGate\\(\\)\\)`, "g"))];
  if (gates.length !== 1) return null;
  const listAt = onlyDefinition(gates[0][1], couldBeObject);
  const names = listAt < 0 ? undefined : stringList(src.slice(listAt, expressionEnd(listAt)));
  if (!names) return null;
  let byName;
  try {
    byName = new Map(entries(0, modules).map((m) => [m.key, m.text]));
  } catch {
    return null;
  }
  const out = [];
  for (const name of names) {
    const module = byName.get(name);
    if (module === undefined || !module.trim().startsWith("{")) return null;
    let parts;
    try {
      parts = new Map(entries(0, module.trim()).map((p) => [p.key, p.text?.trim()]));
    } catch {
      return null;
    }
    const gate = parts.get("buildGate");
    if (gate === "()=>!1") continue;
    const shape = parts.get("shape");
    if (!shape?.startsWith("()=>({") || !shape.endsWith("})")) return null;
    const fields = spreadBrings(shape.slice(5, -1));
    if (fields === null) return null;
    const maybe = gate !== "()=>!0";
    out.push(...fields.map((f) => (maybe ? { key: f.key, maybe: true } : f)));
  }
  return out;
}

/** What a spread `...text` in an object of the schema brings: a list of `{key, text}` (the key
 *  and its schema) and `{key, maybe: true}` (a key that is there on some runs only, so its rule
 *  cannot be told), in order; or null when this script cannot tell. Read: nothing (`!1`, `{}`,
 *  what a build leaves of a feature switched off), an object literal, `COND&&{…}` (every key
 *  maybe), and the feature modules (`featureKeys`). */
function spreadBrings(text, depth = 0) {
  const t = text.trim();
  if (depth > 8) return null;
  if (/^(!0|!1|void 0|null|""|\{\})$/.test(t)) return [];
  // The object literal that is the whole of `text` from `open` on, with its spreads expanded;
  // null when it is not one or holds a spread this script cannot follow.
  const literal = (open) => {
    const inner = t.slice(open);
    try {
      if (closeOf(jsScanner(inner), inner, 0) !== inner.length - 1) return null;
      const list = expand(entries(0, inner), depth + 1);
      return list.some((item) => item.unresolved !== undefined) ? null : list;
    } catch {
      return null;
    }
  };
  if (t.startsWith("{")) return literal(0);
  const cond = /^[^{}]*?&&\{/.exec(t);
  if (cond) return literal(cond[0].length - 1)?.map((item) => ({ key: item.key, maybe: true })) ?? null;
  return featureKeys(t);
}

/** A list of `entries` with each spread replaced by what it brings, or by `{unresolved: text}`
 *  where that cannot be told. */
function expand(list, depth = 0) {
  return list.flatMap((item) => {
    if (item.spread === undefined) return [item];
    const brings = spreadBrings(item.spread, depth);
    return brings === null ? [{ unresolved: item.spread }] : brings;
  });
}

const list = settingsEntries();
const aliases = learnAliases(list);
// Later entries replace earlier ones, as in the object the release builds: a key a spread
// brings after the schema's own entry of that name is held to the spread's rule.
const read = new Map();
for (const item of expand(list)) {
  // What a spread this script cannot follow brings is not known, and it may replace any key
  // before it: those are left unchecked (the anchor check below then refuses the release).
  if (item.unresolved !== undefined) {
    console.error(`the settings schema spreads in ...${item.unresolved.slice(0, 80)}, which this script cannot follow: the keys before it are left unchecked`);
    for (const key of read.keys()) read.set(key, { unchecked: true });
    continue;
  }
  if (item.maybe) {
    read.set(item.key, { unchecked: true });
    continue;
  }
  let rule = ruleOf(item.text, aliases);
  if (rule.unchecked) rule = throughLazy(item.text, aliases);
  read.set(item.key, rule);
}
const keys = {};
const unchecked = [];
for (const [key, rule] of read) {
  if (rule.caught) continue;
  delete rule.optional;
  if (rule.unchecked) unchecked.push(key);
  else keys[key] = rule;
}
for (const [key, type] of [["autoMemoryEnabled", "boolean"], ["cleanupPeriodDays", "number"]]) {
  if (keys[key]?.type !== type) throw new Error(`${key} read as ${JSON.stringify(keys[key])}: the schema was not understood`);
}
const sorted = Object.fromEntries(Object.keys(keys).sort().map((k) => [k, keys[k]]));
process.stdout.write(`${JSON.stringify({ keys: sorted, unchecked: unchecked.sort() }, null, 1)}\n`);
