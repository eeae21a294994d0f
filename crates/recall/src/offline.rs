//! Offline recall: a BM25F ranker over each memory's name (the file stem), description, type
//! and body, for when no model is configured.
//!
//! BM25F (Zaragoza, Robertson et al.) folds the four fields into one pseudo term frequency per
//! term and document, each field's count weighted and normalised by that field's own length:
//! `tf~ = Σ_f w_f · tf_f / (1 − b_f + b_f · len_f / avglen_f)`, scored as
//! `idf · tf~ / (k1 + tf~)`. The name and description are short and written to be found, so
//! they weigh most; the body is long and weighs least per occurrence.
//!
//! The index is built once per folder scan and answers a query in microseconds: postings per
//! term hold each document's `tf~` precomputed, so a query is one multiply-add per posting.
//! Words are lower-cased, split at anything that is not a letter or digit (and between letters
//! and digits, so `react19` meets `React 19`), stripped of NLTK's English stop words and
//! stemmed with Snowball's English stemmer.
//!
//! Memory types carry intent that words alone miss: "always", "never", "prefer" ask how the
//! user wants things done, which is what `feedback` memories hold. Query words like those
//! (see [`TYPE_CUES`]) raise the score of memories of the matching type.
//!
//! Results below [`RELATIVE_FLOOR`] of the best score are dropped: a long tail of one-word
//! body matches costs the model context and rarely helps, the same judgement Claude Code's
//! selector prompt asks of its model ("only include memories that you are certain will be
//! helpful").

use mneme_core::MemoryType;
use rust_stemmers::{Algorithm, Stemmer};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The fields of a memory, in index order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Field {
    Name,
    Description,
    Type,
    Body,
}

impl Field {
    pub const ALL: [Field; 4] = [Field::Name, Field::Description, Field::Type, Field::Body];

    pub fn as_str(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Description => "description",
            Field::Type => "type",
            Field::Body => "body",
        }
    }
}

/// Field weights `w_f`.
const WEIGHTS: [f32; 4] = [3.0, 2.5, 1.0, 1.0];
/// Length normalisation `b_f`: little for the short fields, the usual 0.75 for the body.
const B: [f32; 4] = [0.3, 0.5, 0.0, 0.75];
/// Saturation `k1`.
const K1: f32 = 1.2;
/// A memory whose type matches the query's intent scores this much more.
const TYPE_BOOST: f32 = 0.3;
/// Results scoring below this share of the best one are dropped.
pub const RELATIVE_FLOOR: f32 = 0.5;

/// Query words that say which type of memory is wanted (matched on the lower-cased word
/// before stemming and stop-word removal, since several are stop words).
pub const TYPE_CUES: &[(MemoryType, &[&str])] = &[
    (
        MemoryType::Feedback,
        &[
            "prefer", "prefers", "preferred", "preference", "preferences", "always", "never", "should", "shouldn't",
            "don't", "avoid", "style", "convention", "conventions", "rule", "rules", "feedback", "habit", "like",
            "want", "wants",
        ],
    ),
    (MemoryType::User, &["i", "i'm", "me", "my", "myself", "user", "role", "background", "expertise", "who"]),
    (
        MemoryType::Project,
        &[
            "project", "status", "deadline", "plan", "planned", "roadmap", "milestone", "release", "goal", "decision",
            "decided", "why", "next", "progress", "phase",
        ],
    ),
    (
        MemoryType::Reference,
        &["reference", "docs", "documentation", "link", "url", "where", "dashboard", "ticket", "tracker", "location"],
    ),
];

/// One memory to index.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub rel_path: String,
    pub abs_path: PathBuf,
    /// `name:` from the frontmatter, shown to people; the indexed name is the file stem.
    pub name: Option<String>,
    pub description: Option<String>,
    pub memory_type: Option<MemoryType>,
    pub body: String,
    pub mtime_ms: i64,
    pub mtime_ns: i64,
}

impl Document {
    /// The file name without folders and `.md`.
    pub fn stem(&self) -> &str {
        let base = self.rel_path.rsplit('/').next().unwrap_or(&self.rel_path);
        base.strip_suffix(".md").unwrap_or(base)
    }
}

struct Posting {
    doc: u32,
    /// `tf~ / (k1 + tf~)`, the per-document half of the score.
    weight: f32,
    /// Which fields hold the term (bit per [`Field`]), for the explanation.
    fields: u8,
}

/// The BM25F index over one folder's memories.
pub struct Index {
    docs: Vec<Document>,
    terms: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    stemmer: Stemmer,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("docs", &self.docs.len()).field("terms", &self.terms.len()).finish()
    }
}

/// One ranked memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// Position in [`Index::docs`].
    pub doc: usize,
    pub score: f32,
    /// For each field, the query words it matched, in query order.
    pub matched: Vec<(Field, Vec<String>)>,
    /// The type the query's wording asked for, when this memory has it.
    pub type_boost: Option<MemoryType>,
}

impl Hit {
    /// A short human explanation: `name: deploy · description: deploy, ci · type boost: feedback`.
    pub fn why(&self) -> String {
        let mut parts: Vec<String> =
            self.matched.iter().map(|(f, words)| format!("{}: {}", f.as_str(), words.join(", "))).collect();
        if let Some(t) = self.type_boost {
            parts.push(format!("asked for {} memories", t.as_str()));
        }
        format!("matched {}", parts.join(" · "))
    }
}

fn stop_words() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| stop_words::lookup("en").unwrap_or(&[]).iter().copied().collect())
}

/// Calls `f` with each word of `text`: runs of letters or of digits, lower-cased.
fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut digits = false;
    for c in text.chars() {
        // ASCII first: the Unicode tables cost more than everything else in an index build.
        let (alnum, d) = if c.is_ascii() { (c.is_ascii_alphanumeric(), c.is_ascii_digit()) } else { (c.is_alphanumeric(), c.is_numeric()) };
        if alnum {
            if !word.is_empty() && d != digits {
                f(word.trim_end_matches('\''));
                word.clear();
            }
            digits = d;
            if c.is_ascii() {
                word.push(c.to_ascii_lowercase());
            } else {
                word.extend(c.to_lowercase());
            }
        } else if c == '\'' && !word.is_empty() && !digits {
            // Keep contractions whole so the stop-word list (which has "don't") sees them.
            word.push(c);
        } else if !word.is_empty() {
            f(word.trim_end_matches('\''));
            word.clear();
        }
    }
    if !word.is_empty() {
        f(word.trim_end_matches('\''));
    }
}

impl Index {
    fn term(&self, word: &str) -> Option<String> {
        if word.is_empty() || stop_words().contains(word) {
            return None;
        }
        // "user's" is "user" for matching.
        let word = word.strip_suffix("'s").unwrap_or(word);
        if word.contains('\'') {
            return None;
        }
        Some(self.stemmer.stem(word).into_owned())
    }

    /// Builds the index. Cost is linear in the text; see `benches/recall.rs`.
    pub fn build(docs: Vec<Document>) -> Index {
        let mut index = Index { docs: Vec::new(), terms: HashMap::new(), postings: Vec::new(), stemmer: Stemmer::create(Algorithm::English) };
        // Per document: term id -> counts per field.
        let mut counts: Vec<Vec<(u32, [u16; 4])>> = Vec::with_capacity(docs.len());
        let mut lengths: Vec<[u32; 4]> = Vec::with_capacity(docs.len());
        // This document's counts, and where each term sits in them (`usize::MAX`: absent).
        let mut local: Vec<(u32, [u16; 4])> = Vec::new();
        let mut slot: Vec<usize> = Vec::new();
        // Word -> term id (none for a stop word): stemming and the owned key are paid once per
        // distinct word, not once per occurrence.
        let mut seen: HashMap<String, Option<u32>> = HashMap::new();
        for doc in &docs {
            for (t, _) in local.drain(..) {
                slot[t as usize] = usize::MAX;
            }
            let mut len = [0u32; 4];
            let stem_words = doc.stem().replace(['_', '-', '.'], " ");
            let type_word = doc.memory_type.map(MemoryType::as_str).unwrap_or("");
            let texts = [stem_words.as_str(), doc.description.as_deref().unwrap_or(""), type_word, doc.body.as_str()];
            for (f, text) in texts.iter().enumerate() {
                for_each_word(text, |w| {
                    let id = match seen.get(w) {
                        Some(id) => *id,
                        None => {
                            let id = index.term(w).map(|t| {
                                let next = u32::try_from(index.terms.len()).unwrap_or(u32::MAX);
                                *index.terms.entry(t).or_insert(next)
                            });
                            seen.insert(w.to_string(), id);
                            id
                        }
                    };
                    let Some(id) = id else { return };
                    let id_at = id as usize;
                    if slot.len() <= id_at {
                        slot.resize(id_at + 1, usize::MAX);
                    }
                    if slot[id_at] == usize::MAX {
                        slot[id_at] = local.len();
                        local.push((id, [0; 4]));
                    }
                    let c = &mut local[slot[id_at]].1;
                    c[f] = c[f].saturating_add(1);
                    len[f] += 1;
                });
            }
            counts.push(local.clone());
            lengths.push(len);
        }
        let n = docs.len().max(1) as f32;
        let mut avg = [0f32; 4];
        for l in &lengths {
            for f in 0..4 {
                avg[f] += l[f] as f32;
            }
        }
        for a in &mut avg {
            *a = (*a / n).max(1.0);
        }
        index.postings = (0..index.terms.len()).map(|_| Vec::new()).collect();
        for (d, (doc_counts, len)) in counts.into_iter().zip(&lengths).enumerate() {
            let norm: [f32; 4] = std::array::from_fn(|f| WEIGHTS[f] / (1.0 - B[f] + B[f] * len[f] as f32 / avg[f]));
            for (term, c) in doc_counts {
                let tf: f32 = (0..4).map(|f| f32::from(c[f]) * norm[f]).sum();
                let fields = (0..4).filter(|&f| c[f] > 0).fold(0u8, |m, f| m | (1 << f));
                index.postings[term as usize].push(Posting { doc: d as u32, weight: tf / (K1 + tf), fields });
            }
        }
        index.docs = docs;
        index
    }

    /// The indexed memories.
    pub fn docs(&self) -> &[Document] {
        &self.docs
    }

    /// The best `k` memories for `query`, skipping those `exclude` rejects, best first. Ties
    /// go to the newer memory, then to the path.
    pub fn search(&self, query: &str, k: usize, exclude: impl Fn(&Document) -> bool) -> Vec<Hit> {
        // Query terms in order, deduplicated, with the word the user typed.
        let mut terms: Vec<(u32, String)> = Vec::new();
        let mut words: Vec<String> = Vec::new();
        for_each_word(query, |w| {
            words.push(w.to_string());
            if let Some(t) = self.term(w) {
                if let Some(&id) = self.terms.get(&t) {
                    if !terms.iter().any(|(i, _)| *i == id) {
                        terms.push((id, w.to_string()));
                    }
                }
            }
        });
        let wanted: Vec<MemoryType> = TYPE_CUES
            .iter()
            .filter(|(_, cues)| words.iter().any(|w| cues.contains(&w.as_str())))
            .map(|(t, _)| *t)
            .collect();
        if terms.is_empty() {
            return Vec::new();
        }
        let n = self.docs.len() as f32;
        let mut scores = vec![0f32; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (id, _) in &terms {
            let postings = &self.postings[*id as usize];
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for p in postings {
                let s = &mut scores[p.doc as usize];
                if *s == 0.0 {
                    touched.push(p.doc);
                }
                *s += idf * p.weight;
            }
        }
        let boosted = |d: u32| self.docs[d as usize].memory_type.filter(|t| wanted.contains(t));
        let mut ranked: Vec<(u32, f32)> = touched
            .into_iter()
            .filter(|&d| !exclude(&self.docs[d as usize]))
            .map(|d| (d, scores[d as usize] * if boosted(d).is_some() { 1.0 + TYPE_BOOST } else { 1.0 }))
            .collect();
        // Only what clears the floor needs sorting.
        let best = ranked.iter().map(|r| r.1).fold(0f32, f32::max);
        ranked.retain(|r| r.1 >= best * RELATIVE_FLOOR);
        ranked.sort_unstable_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.docs[b.0 as usize].mtime_ns.cmp(&self.docs[a.0 as usize].mtime_ns))
                .then_with(|| self.docs[a.0 as usize].rel_path.cmp(&self.docs[b.0 as usize].rel_path))
        });
        ranked
            .into_iter()
            .take(k)
            .map(|(d, score)| Hit { doc: d as usize, score, matched: self.explain(d, &terms), type_boost: boosted(d) })
            .collect()
    }

    fn explain(&self, doc: u32, terms: &[(u32, String)]) -> Vec<(Field, Vec<String>)> {
        let mut out: Vec<(Field, Vec<String>)> = Vec::new();
        for (f, field) in Field::ALL.iter().enumerate() {
            let words: Vec<String> = terms
                .iter()
                .filter(|(id, _)| {
                    let postings = &self.postings[*id as usize];
                    postings
                        .binary_search_by_key(&doc, |p| p.doc)
                        .is_ok_and(|i| postings[i].fields & (1 << f) != 0)
                })
                .map(|(_, w)| w.clone())
                .collect();
            if !words.is_empty() {
                out.push((*field, words));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(rel: &str, description: &str, kind: Option<MemoryType>, body: &str, mtime: i64) -> Document {
        Document {
            rel_path: rel.into(),
            abs_path: PathBuf::from("/m").join(rel),
            name: None,
            description: Some(description.into()),
            memory_type: kind,
            body: body.into(),
            mtime_ms: mtime,
            mtime_ns: mtime * 1_000_000,
        }
    }

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_word(text, |w| out.push(w.to_string()));
        out
    }

    #[test]
    fn words_split_at_case_free_boundaries() {
        assert_eq!(words("React19 event-types, don't PR#271"), vec!["react", "19", "event", "types", "don't", "pr", "271"]);
        assert_eq!(words("users' ÉTÉ"), vec!["users", "été"]);
    }

    fn corpus() -> Index {
        Index::build(vec![
            doc("feedback_testing.md", "How tests should be written: mocking strategy", Some(MemoryType::Feedback), "Prefer real databases over mocks in integration tests.", 3),
            doc("project_deploy.md", "Deploy pipeline status", Some(MemoryType::Project), "The deploy runs on every push to main; tests gate it.", 2),
            doc("reference_dashboards.md", "Where the Grafana dashboards live", Some(MemoryType::Reference), "grafana.internal/d/api-latency", 1),
            doc("user_role.md", "Senior Rust developer, new to React", Some(MemoryType::User), "Frame frontend explanations in backend terms.", 0),
        ])
    }

    #[test]
    fn name_and_description_outweigh_the_body() {
        let idx = corpus();
        let hits = idx.search("why did the deploy fail", 5, |_| false);
        assert_eq!(idx.docs()[hits[0].doc].rel_path, "project_deploy.md");
        assert_eq!(hits[0].why(), "matched name: deploy · description: deploy · body: deploy · asked for project memories");
    }

    #[test]
    fn stems_match_inflections() {
        let idx = corpus();
        let hits = idx.search("mocked testing", 5, |_| false);
        assert_eq!(idx.docs()[hits[0].doc].rel_path, "feedback_testing.md");
        assert_eq!(hits[0].matched[0], (Field::Name, vec!["testing".to_string()]));
    }

    #[test]
    fn type_cues_break_near_ties() {
        let idx = Index::build(vec![
            doc("a.md", "tests", Some(MemoryType::Project), "", 1),
            doc("b.md", "tests", Some(MemoryType::Feedback), "", 0),
        ]);
        let plain = idx.search("tests run", 5, |_| false);
        assert_eq!(idx.docs()[plain[0].doc].rel_path, "a.md", "equal scores: newer first");
        let cued = idx.search("how should tests run", 5, |_| false);
        assert_eq!(idx.docs()[cued[0].doc].rel_path, "b.md");
        assert_eq!(cued[0].type_boost, Some(MemoryType::Feedback));
    }

    #[test]
    fn exclusions_and_the_floor() {
        let idx = corpus();
        let hits = idx.search("grafana dashboards", 5, |d| d.rel_path == "reference_dashboards.md");
        assert!(hits.is_empty(), "{hits:?}");
        assert!(idx.search("the and of", 5, |_| false).is_empty());
        assert!(idx.search("zebra", 5, |_| false).is_empty());
        let many = Index::build((0..20).map(|i| doc(&format!("m{i}.md"), "alpha beta", None, "", i)).collect());
        assert_eq!(many.search("alpha", 5, |_| false).len(), 5);
    }
}
