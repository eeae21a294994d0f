//! The offline ranker on the labelled real-world prompts (`testdata/recall-eval`) must not get
//! worse: it answers the prompts that have relevant memories, paraphrases included, and stays
//! silent on those that have none. The floors are the figures measured when the abstention
//! bar was calibrated (docs/recall.md), less a small margin, so a regression fails here.

use mneme_core::FixedClock;
use mneme_recall::eval::{evaluate, load_labels, Kind};
use mneme_store::Environment;
use std::path::Path;
use std::sync::Arc;

/// Measured 0.827 / 0.720 / 0.852 (23 of 27) / 0.739.
const MIN_RECALL_AT_5: f64 = 0.80;
const MIN_PRECISION_AT_5: f64 = 0.68;
const MIN_SILENT_SHARE: f64 = 0.80;
const MIN_PARAPHRASE_RECALL_AT_5: f64 = 0.70;

#[tokio::test]
async fn offline_recall_answers_paraphrases_and_stays_silent_without_a_relevant_memory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let labels = load_labels(&root.join("testdata/recall-eval/labels.json")).unwrap();
    let none = labels.prompts.iter().filter(|p| p.kind == Kind::None).count();
    assert!(labels.prompts.len() >= 100 && 4 * none >= labels.prompts.len(), "the set keeps a quarter of no-memory prompts");
    let home = tempfile::tempdir().unwrap();
    let env = Environment::with_home(home.path());
    let report = evaluate(&labels, &root, None, &env, Arc::new(FixedClock::at_unix_secs(1_800_000_000))).await;
    for o in report.outcomes.iter().filter(|o| !o.is_right()) {
        eprintln!("{:?} {} -> {:?} (want {:?}) {}", o.kind, o.prompt, o.retrieved, o.relevant, o.abstained.as_deref().unwrap_or(""));
    }
    let (all, para) = (&report.all, &report.paraphrase);
    eprintln!(
        "recall@5 {:.3} precision@5 {:.3} silent {}/{} paraphrase recall@5 {:.3}",
        all.recall_at_5, all.precision_at_5, all.silent, all.no_memory, para.recall_at_5
    );
    assert_eq!(report.errors, 0);
    assert!(report.folders.len() >= 4);
    assert!(all.recall_at_5 >= MIN_RECALL_AT_5, "recall@5 fell to {:.3}", all.recall_at_5);
    assert!(all.precision_at_5 >= MIN_PRECISION_AT_5, "precision@5 fell to {:.3}", all.precision_at_5);
    assert!(all.silent_share() >= MIN_SILENT_SHARE, "silent on {} of {} no-memory prompts", all.silent, all.no_memory);
    assert!(para.recall_at_5 >= MIN_PARAPHRASE_RECALL_AT_5, "paraphrase recall@5 fell to {:.3}", para.recall_at_5);
}
