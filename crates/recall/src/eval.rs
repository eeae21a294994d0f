//! Measuring recall against labelled prompts (`testdata/recall-eval/labels.json`): each prompt
//! is a fresh conversation in one real memory folder, and the memories it should surface.
//!
//! Prompts come in three kinds ([`Kind`]): `direct` ones may share words with the memory they
//! need, `paraphrase` ones were written to avoid the memory's own words, and `none` ones have no
//! relevant memory at all, so the right answer is to surface nothing.
//!
//! recall@5 is the share of a prompt's relevant memories among the (at most five) surfaced,
//! precision@5 the share of surfaced memories that are relevant (zero when nothing is
//! surfaced); both are averaged over the prompts that have relevant memories. For the `none`
//! prompts the figure is the share answered with nothing ("silent").

use crate::offline::Tuning;
use crate::{recall, RecallContext, RecallSession};
use mneme_core::Clock;
use mneme_model::{Cancel, Provider, ProviderKind};
use mneme_store::Environment;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The labelled set.
#[derive(Debug, Clone, Deserialize)]
pub struct Labels {
    pub prompts: Vec<LabelledPrompt>,
}

/// What a prompt tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// May share words with the memories it needs.
    #[default]
    Direct,
    /// Says what a memory says in other words.
    Paraphrase,
    /// No memory is relevant.
    None,
}

/// One prompt and the memory files (relative to `folder`) that should come back for it.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledPrompt {
    /// The memory folder, relative to the repository root.
    pub folder: String,
    pub prompt: String,
    pub relevant: Vec<String>,
    #[serde(default)]
    pub kind: Kind,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("could not read the labels at {path}: {source}; run from the repository root or pass --labels")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the labels at {path} are not valid: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("the labels at {path} are not consistent: {what}")]
    Inconsistent { path: PathBuf, what: String },
}

/// Reads a labels file, checking that `none` prompts, and only they, list no relevant memory.
pub fn load_labels(path: &Path) -> Result<Labels, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read { path: path.to_path_buf(), source })?;
    let labels: Labels = serde_json::from_str(&text).map_err(|source| EvalError::Parse { path: path.to_path_buf(), source })?;
    for p in &labels.prompts {
        if (p.kind == Kind::None) != p.relevant.is_empty() {
            let what = format!("\"{}\" is kind {:?} with {} relevant memories; a prompt lists none exactly when its kind is \"none\"", p.prompt, p.kind, p.relevant.len());
            return Err(EvalError::Inconsistent { path: path.to_path_buf(), what });
        }
    }
    Ok(labels)
}

/// What one prompt brought back.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub folder: String,
    pub prompt: String,
    pub kind: Kind,
    pub relevant: Vec<String>,
    pub retrieved: Vec<String>,
    /// Why each was surfaced, in the same order.
    pub reasons: Vec<String>,
    /// For a prompt with relevant memories; `None` for a `none` prompt.
    pub recall: Option<f64>,
    pub precision: Option<f64>,
    /// Why the offline ranker surfaced nothing, when it held back.
    pub abstained: Option<String>,
    /// How sure the offline ranker was of the best memory it weighed (what
    /// `scripts/recall-fit-confidence.py` fits on).
    pub confidence: Option<crate::offline::Confidence>,
    pub error: Option<String>,
}

impl Outcome {
    /// Whether the prompt got the right answer in full: every relevant memory, or nothing for
    /// a `none` prompt.
    pub fn is_right(&self) -> bool {
        match self.recall {
            Some(r) => r >= 1.0,
            None => self.retrieved.is_empty(),
        }
    }
}

/// The figures over a group of outcomes (a provider's whole run, one folder, one kind).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub prompts: usize,
    /// Prompts with relevant memories (the ones recall and precision are averaged over).
    pub answerable: usize,
    pub recall_at_5: f64,
    pub precision_at_5: f64,
    /// Prompts with no relevant memory.
    pub no_memory: usize,
    /// Of those, the ones answered with nothing.
    pub silent: usize,
}

impl Figures {
    fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Figures {
        let mut f = Figures::default();
        for o in outcomes {
            f.prompts += 1;
            match (o.recall, o.precision) {
                (Some(r), Some(p)) => {
                    f.answerable += 1;
                    f.recall_at_5 += r;
                    f.precision_at_5 += p;
                }
                _ => {
                    f.no_memory += 1;
                    f.silent += usize::from(o.retrieved.is_empty());
                }
            }
        }
        if f.answerable > 0 {
            f.recall_at_5 /= f.answerable as f64;
            f.precision_at_5 /= f.answerable as f64;
        }
        f
    }

    /// The share of no-memory prompts answered with nothing (1 when there are none).
    pub fn silent_share(&self) -> f64 {
        if self.no_memory == 0 { 1.0 } else { self.silent as f64 / self.no_memory as f64 }
    }
}

/// The figures for one provider.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub provider: ProviderKind,
    pub model: Option<String>,
    pub all: Figures,
    /// The paraphrase prompts alone.
    pub paraphrase: Figures,
    /// Per memory folder, in folder order.
    pub folders: BTreeMap<String, Figures>,
    /// Prompts for which nothing was surfaced.
    pub empty: usize,
    /// Prompts whose selection failed (a model error).
    pub errors: usize,
    pub outcomes: Vec<Outcome>,
}

/// Runs every labelled prompt through [`recall`] with `provider` (offline when `None`).
pub async fn evaluate(
    labels: &Labels,
    repo_root: &Path,
    provider: Option<&dyn Provider>,
    env: &Environment,
    clock: Arc<dyn Clock>,
) -> Report {
    evaluate_tuned(labels, repo_root, provider, env, clock, Tuning::default()).await
}

/// [`evaluate`] with the offline ranker's knobs set (for sweeps).
pub async fn evaluate_tuned(
    labels: &Labels,
    repo_root: &Path,
    provider: Option<&dyn Provider>,
    env: &Environment,
    clock: Arc<dyn Clock>,
    tuning: Tuning,
) -> Report {
    let mut outcomes = Vec::with_capacity(labels.prompts.len());
    let mut kind = ProviderKind::Offline;
    let mut model = None;
    for p in &labels.prompts {
        let mut session = RecallSession::new();
        session.set_offline_tuning(tuning);
        let cancel = Cancel::new();
        let mut ctx = RecallContext { env, clock: clock.clone(), cancel: &cancel, transcript: &[], session: &mut session };
        let result = recall(&p.prompt, &repo_root.join(&p.folder), provider, &mut ctx).await;
        kind = result.provider;
        model = result.model.clone();
        let retrieved: Vec<String> = result.selected.iter().map(|m| m.rel_path.clone()).collect();
        let hits = retrieved.iter().filter(|r| p.relevant.contains(r)).count() as f64;
        let answerable = !p.relevant.is_empty();
        outcomes.push(Outcome {
            folder: p.folder.clone(),
            prompt: p.prompt.clone(),
            kind: p.kind,
            relevant: p.relevant.clone(),
            recall: answerable.then(|| hits / p.relevant.len() as f64),
            precision: answerable.then(|| if retrieved.is_empty() { 0.0 } else { hits / retrieved.len() as f64 }),
            reasons: result.selected.iter().map(|m| m.reason.clone()).collect(),
            retrieved,
            abstained: result.abstained.map(|a| a.to_string()),
            confidence: result.confidence,
            error: result.error,
        });
    }
    let mut folders: BTreeMap<String, Vec<&Outcome>> = BTreeMap::new();
    for o in &outcomes {
        folders.entry(o.folder.clone()).or_default().push(o);
    }
    Report {
        provider: kind,
        model,
        all: Figures::of(&outcomes),
        paraphrase: Figures::of(outcomes.iter().filter(|o| o.kind == Kind::Paraphrase)),
        folders: folders.into_iter().map(|(f, os)| (f, Figures::of(os))).collect(),
        empty: outcomes.iter().filter(|o| o.retrieved.is_empty()).count(),
        errors: outcomes.iter().filter(|o| o.error.is_some()).count(),
        outcomes,
    }
}
