//! The offline ranker on the labelled real-world prompts (`testdata/recall-eval`) must not get
//! worse: it answers the prompts that have relevant memories, paraphrases included, and stays
//! silent on those that have none. The floors are the figures measured when the abstention
//! bar was calibrated (docs/recall.md), less a small margin, so a regression fails here.
//!
//! `labels.json` is the development set the ranker was tuned on; `heldout.json` was written
//! later and never tuned on (but its totals were read while tuning); `heldout2.json` was written
//! from the memory files alone, with no look at the ranker, and first run after it was committed:
//! its much lower floors are the honest estimate for prompts nobody has seen (docs/recall.md).
//! `heldout3.json` was written the same way and first run after the confidence model
//! ([`mneme_recall::offline::Confidence`]) was chosen on the other three; the model was then
//! kept unchanged.

use mneme_core::FixedClock;
use mneme_recall::eval::{evaluate, load_labels, Kind, Report};
use mneme_store::Environment;
use std::path::Path;
use std::sync::Arc;

/// The floors for one labelled set: recall@5, precision@5, silent share, paraphrase recall@5.
struct Floors(f64, f64, f64, f64);

async fn check(file: &str, floors: Floors) -> Report {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let labels = load_labels(&root.join("testdata/recall-eval").join(file)).unwrap();
    let home = tempfile::tempdir().unwrap();
    let env = Environment::with_home(home.path());
    let report = evaluate(&labels, &root, None, &env, Arc::new(FixedClock::at_unix_secs(1_800_000_000))).await;
    for o in report.outcomes.iter().filter(|o| !o.is_right()) {
        eprintln!("{:?} {} -> {:?} (want {:?}) {}", o.kind, o.prompt, o.retrieved, o.relevant, o.abstained.as_deref().unwrap_or(""));
    }
    let (all, para) = (&report.all, &report.paraphrase);
    eprintln!(
        "{file}: recall@5 {:.3} precision@5 {:.3} silent {}/{} paraphrase recall@5 {:.3}",
        all.recall_at_5, all.precision_at_5, all.silent, all.no_memory, para.recall_at_5
    );
    assert_eq!(report.errors, 0);
    assert!(report.folders.len() >= 4);
    assert!(all.recall_at_5 >= floors.0, "{file}: recall@5 fell to {:.3}", all.recall_at_5);
    assert!(all.precision_at_5 >= floors.1, "{file}: precision@5 fell to {:.3}", all.precision_at_5);
    assert!(all.silent_share() >= floors.2, "{file}: silent on {} of {} no-memory prompts", all.silent, all.no_memory);
    assert!(para.recall_at_5 >= floors.3, "{file}: paraphrase recall@5 fell to {:.3}", para.recall_at_5);
    report
}

/// Measured 0.862 / 0.676 / 0.852 (23 of 27) / 0.826 with the second look and the 0.6 floor
/// (0.862 / 0.713 with the 0.7 floor, which drops a multi-part prompt's third memory),
/// 0.853 / 0.704 / 0.852 (23 of 27) / 0.826 with WordNet's phrases,
/// 0.840 / 0.691 / 0.852 (23 of 27) / 0.783 with agreement in meaning (GloVe vectors),
/// 0.840 / 0.691 / 0.815 (22 of 27) / 0.783 with WordNet's and the folder's related words only
/// (0.840 / 0.693 with WordNet's alone; 0.827 / 0.720 / 0.852 / 0.739 with neither);
/// 0.816 / 0.648 / 0.963 (26 of 27) / 0.696 with the confidence model (0.862 / 0.676 / 0.852 /
/// 0.826 without it).
#[tokio::test]
async fn offline_recall_answers_paraphrases_and_stays_silent_without_a_relevant_memory() {
    let report = check("labels.json", Floors(0.80, 0.66, 0.92, 0.68)).await;
    let none = report.outcomes.iter().filter(|o| o.kind == Kind::None).count();
    assert!(report.outcomes.len() >= 100 && 4 * none >= report.outcomes.len(), "the set keeps a quarter of no-memory prompts");
}

/// Measured 0.828 / 0.629 / 0.75 (9 of 12) / 0.667 with the second look and the 0.6 floor
/// (0.828 / 0.681 with the 0.7 floor),
/// 0.810 / 0.647 / 0.75 (9 of 12) / 0.667 with WordNet's and the folder's related words,
/// the same with agreement in meaning and with WordNet's phrases (0.776 / 0.612 with WordNet's alone; 0.741 / 0.655 / 0.75 / 0.583 with neither): below the
/// development set, as expected of prompts the bar was not calibrated on; 0.724 / 0.560 / 0.833
/// (10 of 12) / 0.417 with the confidence model, which holds back several of its paraphrases.
#[tokio::test]
async fn offline_recall_on_the_held_out_prompts() {
    let report = check("heldout.json", Floors(0.70, 0.58, 0.80, 0.40)).await;
    let none = report.outcomes.iter().filter(|o| o.kind == Kind::None).count();
    assert!(4 * none >= report.outcomes.len(), "the held-out set keeps a quarter of no-memory prompts");
}

/// Measured 0.688 / 0.451 / 0.50 (8 of 16) / 0.573 at its first run (2026-12-02, the ranker of
/// the two tests above): what a new folder's prompts get. Issue 18's bars are 0.85 / 0.60 / 0.80
/// / 0.75; these floors only keep the ranker from getting worse on prompts it was not shaped by.
/// With the confidence model: 0.672 / 0.443 / 0.875 (14 of 16) / 0.542.
#[tokio::test]
async fn offline_recall_on_prompts_written_without_the_ranker() {
    let report = check("heldout2.json", Floors(0.65, 0.45, 0.85, 0.52)).await;
    let none = report.outcomes.iter().filter(|o| o.kind == Kind::None).count();
    assert!(report.outcomes.len() >= 48 && 3 * none >= report.outcomes.len(), "the set keeps a third of no-memory prompts");
}

/// Measured 0.812 / 0.580 / 0.15 (3 of 20) / 0.625 at its first run with the ranker before the
/// confidence model, then 0.812 / 0.580 / 0.70 (14 of 20) / 0.625 with the model, chosen
/// without this set (2026-12-03).
#[tokio::test]
async fn offline_recall_on_a_third_set_written_without_the_ranker() {
    let report = check("heldout3.json", Floors(0.80, 0.60, 0.70, 0.60)).await;
    let none = report.outcomes.iter().filter(|o| o.kind == Kind::None).count();
    assert!(report.outcomes.len() >= 60 && 3 * none >= report.outcomes.len(), "the set keeps a third of no-memory prompts");
}
