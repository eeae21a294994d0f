//! The offline ranker on the labelled real-world prompts must not get worse.

use mneme_core::FixedClock;
use mneme_recall::eval::{evaluate, load_labels};
use mneme_store::Environment;
use std::path::Path;
use std::sync::Arc;

/// 0.928 measured when the labels were written (docs/recall.md), minus a small margin.
const MIN_RECALL_AT_5: f64 = 0.90;

#[tokio::test]
async fn offline_recall_at_5_holds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let labels = load_labels(&root.join("testdata/recall-eval/labels.json")).unwrap();
    assert!(labels.prompts.len() >= 40);
    let home = tempfile::tempdir().unwrap();
    let env = Environment::with_home(home.path());
    let report = evaluate(&labels, &root, None, &env, Arc::new(FixedClock::at_unix_secs(1_800_000_000))).await;
    for o in &report.outcomes {
        eprintln!("{:.2} {:.2} {} -> {:?} (want {:?})", o.recall, o.precision, o.prompt, o.retrieved, o.relevant);
    }
    eprintln!("recall@5 {:.3} precision@5 {:.3} empty {}", report.recall_at_5, report.precision_at_5, report.empty);
    assert_eq!(report.errors, 0);
    assert!(report.recall_at_5 >= MIN_RECALL_AT_5, "recall@5 fell to {:.3}", report.recall_at_5);
}
