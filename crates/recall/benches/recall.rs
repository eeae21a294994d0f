//! Offline recall over 10,000 memories: building the index (from text in memory, and from the
//! folder on disk), one query on a built index, and a whole `recall` turn with the index
//! already built for the conversation (one answered, one answered with nothing). Figures are in
//! docs/benchmarks.md (`## Recall`).
//!
//! The memories are generated, deterministic and realistic in shape: a `type_topic_words`
//! file name, a 10–20 word description and a 80–250 word body drawn from a 3,000-word
//! vocabulary with a Zipf-like skew, so postings lists have the long tail real text has.

use divan::Bencher;
use mneme_core::FixedClock;
use mneme_model::Cancel;
use mneme_recall::offline::{Document, Index, Tuning};
use mneme_recall::{load_documents, recall, RecallContext, RecallSession};
use mneme_store::memdir::Memdir;
use mneme_store::Environment;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

const N: usize = 10_000;
const QUERIES: [&str; 4] = [
    "why does the deploy pipeline fail after the dependency upgrade",
    "how should I write integration tests for the billing service",
    "always prefer small commits",
    "where is the grafana dashboard for api latency",
];

fn main() {
    divan::main();
}

/// xorshift64*, so the corpus is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Skewed towards small indices: frequent words are frequent.
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
    }
}

const SEEDS: &[&str] = &[
    "deploy", "pipeline", "test", "integration", "database", "migration", "billing", "service", "api", "latency",
    "dashboard", "grafana", "commit", "branch", "review", "release", "schema", "cache", "queue", "worker", "token",
    "auth", "session", "frontend", "react", "component", "lint", "style", "prefer", "always", "never", "incident",
    "rollback", "config", "settings", "permission", "notification", "email", "retry", "timeout", "flaky", "mock",
    "fixture", "docker", "kubernetes", "terraform", "metrics", "logging", "tracing", "upgrade", "dependency",
];

fn vocabulary() -> Vec<String> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut words: Vec<String> = SEEDS.iter().map(|s| s.to_string()).collect();
    const SYLLABLES: [&str; 16] =
        ["ka", "lo", "mi", "ren", "tor", "vel", "sa", "qui", "dra", "pon", "ex", "ul", "bri", "zen", "cor", "fa"];
    while words.len() < 3000 {
        let n = 2 + rng.below(3);
        words.push((0..n).map(|_| SYLLABLES[rng.below(SYLLABLES.len())]).collect());
    }
    words
}

struct Generated {
    rel_path: String,
    description: String,
    kind: &'static str,
    body: String,
}

fn generate() -> Vec<Generated> {
    let vocab = vocabulary();
    let mut rng = Rng(42);
    let kinds = ["user", "feedback", "project", "reference"];
    let phrase = |rng: &mut Rng, n: usize| -> String {
        (0..n).map(|_| vocab[rng.zipf(vocab.len())].as_str()).collect::<Vec<_>>().join(" ")
    };
    (0..N)
        .map(|i| {
            let kind = kinds[i % 4];
            let topic = phrase(&mut rng, 2).replace(' ', "_");
            let n_desc = 10 + rng.below(11);
            let n_body = 80 + rng.below(171);
            Generated {
                rel_path: format!("{kind}_{topic}_{i:05}.md"),
                description: phrase(&mut rng, n_desc),
                kind,
                body: phrase(&mut rng, n_body),
            }
        })
        .collect()
}

fn documents() -> &'static Vec<Document> {
    static DOCS: OnceLock<Vec<Document>> = OnceLock::new();
    DOCS.get_or_init(|| {
        generate()
            .into_iter()
            .enumerate()
            .map(|(i, g)| Document {
                abs_path: PathBuf::from("/m").join(&g.rel_path),
                rel_path: g.rel_path,
                name: None,
                description: Some(g.description),
                memory_type: mneme_core::MemoryType::parse(g.kind),
                body: g.body,
                index_line: None,
                mtime_ms: 1_700_000_000_000 + i as i64,
                mtime_ns: (1_700_000_000_000 + i as i64) * 1_000_000,
            })
            .collect()
    })
}

/// The corpus written as a memory folder, once per run.
fn folder() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        for g in generate() {
            let text = mneme_testsupport::topic(g.rel_path.trim_end_matches(".md"), &g.description, g.kind, &g.body);
            std::fs::write(dir.path().join(&g.rel_path), text).expect("write memory");
        }
        dir
    })
    .path()
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| Index::build(documents().clone()))
}

#[divan::bench(sample_count = 10)]
fn build_index_10k(bencher: Bencher) {
    let docs = documents();
    bencher.with_inputs(|| docs.clone()).bench_values(Index::build);
}

#[divan::bench(sample_count = 10)]
fn scan_folder_and_build_10k(bencher: Bencher) {
    let memdir = Memdir::new(folder(), std::env::temp_dir().join("mneme-bench-trash"), Arc::new(FixedClock::at_unix_secs(0)));
    bencher.bench(|| Index::build(load_documents(&memdir).expect("scan")));
}

#[divan::bench(args = QUERIES)]
fn query_10k(bencher: Bencher, query: &str) {
    let index = index();
    bencher.bench(|| index.search(query, 5, |_| false));
}

/// A prompt made of the first eight words of one memory's description, so the turn surfaces
/// memories: the made-up `QUERIES` use words nearly every generated memory has, and recall
/// rightly answers them with nothing.
fn answered_query() -> &'static str {
    static Q: OnceLock<String> = OnceLock::new();
    Q.get_or_init(|| {
        let d = documents()[1234].description.as_deref().unwrap_or_default();
        d.split(' ').take(8).collect::<Vec<_>>().join(" ")
    })
}

/// The answered prompt's ranking alone, with and without the second look (which looks at every
/// candidate again for the notes that go with the best one), to show what it costs.
#[divan::bench(args = ["second look", "no second look"])]
fn query_answered_10k(bencher: Bencher, which: &str) {
    let index = index();
    let tuning = if which == "second look" { Tuning::default() } else { Tuning { second_look: 0.0, ..Tuning::default() } };
    assert!(!index.search_tuned(answered_query(), 5, |_| false, &tuning).hits.is_empty());
    bencher.bench(|| index.search_tuned(answered_query(), 5, |_| false, &tuning));
}

/// A whole offline `recall` turn (pre-filters, ranking, capped reads of the surfaced files,
/// headers) on a folder of 10,000 whose index the conversation already built: one that
/// surfaces memories, and one that stays silent (the same ranking work, no reads).
#[divan::bench(args = ["answered", "silent"])]
fn recall_turn_10k(bencher: Bencher, which: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let home = tempfile::tempdir().expect("home");
    let env = Environment::with_home(home.path());
    let cancel = Cancel::new();
    let mut session = RecallSession::new();
    let clock: Arc<dyn mneme_core::Clock> = Arc::new(FixedClock::at_unix_secs(1_800_000_000));
    let dir = folder();
    let query = if which == "answered" { answered_query() } else { QUERIES[0] };
    let turn = |session: &mut RecallSession| {
        let mut ctx = RecallContext { env: &env, clock: clock.clone(), cancel: &cancel, transcript: &[], session };
        runtime.block_on(recall(query, dir, None, &mut ctx))
    };
    let first = turn(&mut session);
    match which {
        "answered" => assert!(!first.selected.is_empty(), "the answered query must recall something: {:?}", first.abstained),
        _ => assert!(first.selected.is_empty() && first.abstained.is_some(), "the silent query must recall nothing"),
    }
    bencher.bench_local(|| {
        session.compact();
        turn(&mut session)
    });
}
