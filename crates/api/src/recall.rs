//! The recall bench: which memories Claude Code would put in front of the model for a prompt
//! typed in a project, in order, with why, and the exact text it would inject. The selection
//! is Claude Code's side query through a model provider, or Mneme's offline ranker.

use crate::claude_code::RenderedFor;
use crate::providers::ProviderChoice;
use crate::{ApiError, ContextRequest, Mneme};
use mneme_model::{build_provider_with_retry, ModelError, Provider, ProviderKind, ProviderSettings, RetryPolicy};
use mneme_core::versions::Profile;
use mneme_recall::{recall, selector_model, RecallContext, RecallSession, Truncation};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

/// Retries of a recall someone is waiting for (the Recall screen, `mneme recall`). The
/// background runs' ten, with backoff up to 32 s, would keep the screen spinning minutes on an
/// endpoint that refuses connections.
const RECALL_RETRIES: u32 = 2;
/// The longest one recall attempt waits, whatever the saved timeout (up to an hour) says: a
/// selector answer is a few names.
const RECALL_TIMEOUT_SECS: u64 = 120;

/// One recall question.
#[derive(Debug, Clone, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct RecallQuery {
    /// The prompt, as typed into Claude Code.
    pub prompt: String,
    /// Who chooses; absent = the provider in the settings.
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub provider: Option<ProviderChoice>,
}

/// One memory recall would surface.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct RecalledMemory {
    /// Relative to the memory folder (what the manifest lists).
    pub rel_path: String,
    pub path: PathBuf,
    /// `name:` from the frontmatter, else the file stem.
    pub name: String,
    /// `selected by <model> (1 of 3)`, or the words the offline ranker matched.
    pub reason: String,
    /// The offline ranker's score; none for a model's choice.
    pub score: Option<f32>,
    /// `Memory: <path>:`, after the staleness warning for a memory more than a day old.
    pub header: String,
    /// The content as surfaced: at most 200 lines and 4,096 bytes, with the truncation note.
    pub content: String,
    /// `"lines"` or `"bytes"` when the content was cut at Claude Code's read caps.
    pub truncated: Option<String>,
    pub modified_ms: i64,
    /// The `<system-reminder>` message Claude Code would add for it, byte for byte.
    pub injected: String,
}

/// The answer of [`Mneme::recall`].
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct RecallView {
    /// The memory folder searched.
    pub memory_dir: PathBuf,
    /// Whether Claude Code has auto memory on here; when off it recalls nothing at all.
    pub auto_memory_enabled: bool,
    pub auto_memory_reason: String,
    /// Who chose.
    pub provider: ProviderChoice,
    /// The model asked, for a model provider.
    pub model: Option<String>,
    /// In the order Claude Code would surface them.
    pub selected: Vec<RecalledMemory>,
    /// Why recall did not run or had nothing to ask about, in a sentence.
    pub skipped: Option<String>,
    /// Why the selection is empty when a provider failed (Claude Code swallows it; Mneme shows it).
    pub error: Option<String>,
    /// Why the offline ranker chose nothing: what the closest memory lacked, in a sentence.
    pub abstained: Option<String>,
    /// For the offline ranker's answers, its estimate (0 to 1) that the first memory is
    /// relevant (`mneme_recall::offline::Confidence`).
    pub confidence: Option<f32>,
    /// What reaches the API when the memories follow a tool result (the usual case), placed
    /// as `api_delivery` says.
    pub api_text: Option<String>,
    /// `systemMessage` (2.1.154 on: one `role: "system"` message of the unwrapped reminders
    /// joined with `\n`) or `toolResult` (older releases: the reminders appended to the tool
    /// result after a blank line).
    pub api_delivery: String,
    /// The Claude Code release whose recall was followed, and how sure that is.
    pub claude_code: RenderedFor,
}

impl Mneme {
    /// Runs recall for `query.prompt` as the first turn of a new conversation in the folder,
    /// against the memory folder Claude Code would use there. Nothing is written.
    pub fn recall(&self, req: &ContextRequest, query: &RecallQuery) -> Result<RecallView, ApiError> {
        let r = self.resolve(req)?;
        let saved = ProviderSettings::load(&self.env)?;
        let choice = query.provider.unwrap_or(saved.kind.into());
        let (claude_code, release) = self.rendered_for(req.claude_version);
        let mut view = RecallView {
            memory_dir: r.memdir.clone(),
            auto_memory_enabled: r.auto_memory.enabled,
            auto_memory_reason: r.auto_memory.reason.clone(),
            provider: choice,
            model: None,
            selected: Vec::new(),
            skipped: None,
            error: None,
            abstained: None,
            confidence: None,
            api_text: None,
            api_delivery: String::new(),
            claude_code,
        };
        let provider = match self.recall_provider(&saved, choice, &release) {
            Ok(p) => p,
            Err(e) => {
                view.error = Some(e.to_string());
                return Ok(view);
            }
        };
        let cancel = mneme_model::Cancel::new();
        let mut session = RecallSession::for_release(release);
        let mut ctx =
            RecallContext { env: &self.env, clock: self.clock.clone(), cancel: &cancel, transcript: &[], session: &mut session };
        let result = crate::block_on(recall(&query.prompt, &r.memdir, provider.as_deref(), &mut ctx))?;
        let injected = result.reminders();
        view.api_text = result.api_text();
        view.api_delivery = result.delivery.as_str().to_string();
        view.model = result.model.clone();
        view.skipped = result.skipped.map(|s| s.to_string());
        view.error = result.error.clone();
        view.abstained = result.abstained.as_ref().map(|a| a.to_string());
        view.confidence = result.first_confidence();
        view.selected = result
            .selected
            .into_iter()
            .zip(injected)
            .map(|(m, injected)| RecalledMemory {
                rel_path: m.rel_path,
                path: m.path,
                name: m.name,
                reason: m.reason,
                score: m.score,
                header: m.header,
                content: m.content,
                truncated: m.truncated.map(|t| match t {
                    Truncation::ByteLimit => "bytes".to_string(),
                    Truncation::LineLimit => "lines".to_string(),
                }),
                modified_ms: m.mtime_ms,
                injected,
            })
            .collect();
        Ok(view)
    }

    /// The provider for `choice`: `None` for the offline ranker. Anthropic and the Claude Code
    /// CLI get Claude Code's selector model when none is named.
    pub(crate) fn recall_provider(
        &self,
        saved: &ProviderSettings,
        choice: ProviderChoice,
        release: &Profile,
    ) -> Result<Option<Arc<dyn Provider>>, ModelError> {
        let mut settings = Mneme::settings_for(saved, choice);
        let kind = settings.kind;
        match kind {
            ProviderKind::Offline => return Ok(None),
            ProviderKind::Anthropic | ProviderKind::ClaudeCli if settings.model.as_deref().is_none_or(|m| m.trim().is_empty()) => {
                settings.model = Some(selector_model(&self.env, release));
            }
            _ => {}
        }
        settings.timeout_secs = settings.timeout_secs.min(RECALL_TIMEOUT_SECS);
        let retry = RetryPolicy { max_retries: RECALL_RETRIES, ..RetryPolicy::default() };
        build_provider_with_retry(&settings, &self.env, &self.keychain(), retry).map(Some)
    }
}
