//! Measuring recall against labelled prompts (`testdata/recall-eval/labels.json`): each prompt
//! is a fresh conversation in one real memory folder, and the memories it should surface.
//!
//! recall@5 is the share of a prompt's relevant memories among the (at most five) surfaced,
//! precision@5 the share of surfaced memories that are relevant (zero when nothing is
//! surfaced); both are averaged over prompts.

use crate::{recall, RecallContext, RecallSession};
use mneme_core::Clock;
use mneme_model::{Cancel, Provider, ProviderKind};
use mneme_store::Environment;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The labelled set.
#[derive(Debug, Clone, Deserialize)]
pub struct Labels {
    pub prompts: Vec<LabelledPrompt>,
}

/// One prompt and the memory files (relative to `folder`) that should come back for it.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledPrompt {
    /// The memory folder, relative to the repository root.
    pub folder: String,
    pub prompt: String,
    pub relevant: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("could not read the labels at {path}: {source}; run from the repository root or pass --labels")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the labels at {path} are not valid: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
}

/// Reads a labels file.
pub fn load_labels(path: &Path) -> Result<Labels, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read { path: path.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|source| EvalError::Parse { path: path.to_path_buf(), source })
}

/// What one prompt brought back.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub folder: String,
    pub prompt: String,
    pub relevant: Vec<String>,
    pub retrieved: Vec<String>,
    pub recall: f64,
    pub precision: f64,
    pub error: Option<String>,
}

/// The figures for one provider.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub provider: ProviderKind,
    pub model: Option<String>,
    pub prompts: usize,
    pub recall_at_5: f64,
    pub precision_at_5: f64,
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
    let mut outcomes = Vec::with_capacity(labels.prompts.len());
    let mut kind = ProviderKind::Offline;
    let mut model = None;
    for p in &labels.prompts {
        let mut session = RecallSession::new();
        let cancel = Cancel::new();
        let mut ctx = RecallContext { env, clock: clock.clone(), cancel: &cancel, transcript: &[], session: &mut session };
        let result = recall(&p.prompt, &repo_root.join(&p.folder), provider, &mut ctx).await;
        kind = result.provider;
        model = result.model.clone();
        let retrieved: Vec<String> = result.selected.iter().map(|m| m.rel_path.clone()).collect();
        let hits = retrieved.iter().filter(|r| p.relevant.contains(r)).count() as f64;
        outcomes.push(Outcome {
            folder: p.folder.clone(),
            prompt: p.prompt.clone(),
            relevant: p.relevant.clone(),
            recall: if p.relevant.is_empty() { 1.0 } else { hits / p.relevant.len() as f64 },
            precision: if retrieved.is_empty() { 0.0 } else { hits / retrieved.len() as f64 },
            retrieved,
            error: result.error,
        });
    }
    let n = outcomes.len().max(1) as f64;
    Report {
        provider: kind,
        model,
        prompts: outcomes.len(),
        recall_at_5: outcomes.iter().map(|o| o.recall).sum::<f64>() / n,
        precision_at_5: outcomes.iter().map(|o| o.precision).sum::<f64>() / n,
        empty: outcomes.iter().filter(|o| o.retrieved.is_empty()).count(),
        errors: outcomes.iter().filter(|o| o.error.is_some()).count(),
        outcomes,
    }
}
