//! The provider-neutral conversation shapes. They follow the Anthropic Messages API's content
//! blocks because that is what Claude Code speaks; the OpenAI provider translates at its edge.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// No model: recall ranks with BM25, extraction takes explicit statements, dream does the
    /// deterministic consolidation. The default.
    Offline,
    /// The user's own `claude` binary in headless mode (`claude -p`), with its own login.
    ClaudeCli,
    /// The Anthropic Messages API with a key from the OS keyring.
    Anthropic,
    /// Any OpenAI-compatible `/v1/chat/completions` endpoint (local models included).
    Openai,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text { text: String },
    ToolUse { id: String, name: String, input: Value },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Message {
        Message { role: Role::User, content: vec![Block::Text { text: text.into() }] }
    }
}

/// A tool the model may call, described by a JSON schema for its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDef>,
    pub max_tokens: u32,
    /// Structured output: the answer's first text block must be JSON matching this schema.
    /// On the wire: Anthropic `output_config: {format: {type: "json_schema", schema}}` with the
    /// `structured-outputs-2025-12-15` beta (what Claude Code 2.1.197's side queries send; the
    /// older `output_format` is the deprecated spelling of the same thing), OpenAI
    /// `response_format: {type: "json_schema", json_schema: {name, schema, strict}}`, the Claude
    /// Code CLI `--json-schema`.
    pub json_schema: Option<Value>,
    /// Anthropic `thinking: {"type": "disabled"}`: Claude Code 2.1.216 to 2.1.283 send it with
    /// the recall selector's side query. Other providers have nothing to turn off.
    pub thinking_disabled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    Other,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub content: Vec<Block>,
    pub stop_reason: StopReason,
    pub usage: Usage,
}

impl Response {
    /// The first text block, which is where structured output lands.
    pub fn first_text(&self) -> Option<&str> {
        self.content.iter().find_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
    }
}

/// What a headless agent (Claude Code CLI) is asked to do, and what it may touch.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadlessTask {
    pub prompt: String,
    pub system: Option<String>,
    pub cwd: PathBuf,
    /// Tools that may be used, in Claude Code's permission-rule syntax (e.g. `Read`, `Edit(/abs/dir/**)`).
    pub allowed_tools: Vec<String>,
    pub disallowed_tools: Vec<String>,
    pub max_turns: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HeadlessOutcome {
    /// The final result text.
    pub result: String,
    /// Absolute paths the agent wrote or edited, in first-touch order.
    pub written_paths: Vec<PathBuf>,
    pub turns: u32,
}

/// A cancellation flag shared between the caller and a running request.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<CancelState>);

#[derive(Debug, Default)]
struct CancelState {
    flag: AtomicBool,
    // Wakes `cancelled()` waiters so a request in flight stops at once instead of at its next poll.
    wake: tokio::sync::Notify,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }
    pub fn cancel(&self) {
        self.0.flag.store(true, Ordering::SeqCst);
        self.0.wake.notify_waiters();
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.flag.load(Ordering::SeqCst)
    }
    /// Resolves once [`Cancel::cancel`] has been called (at once if it already was).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.wake.notified();
            tokio::pin!(notified);
            // Register before checking the flag, so a cancel between the check and the await is not lost.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// Every way a model call fails, each with a message that says what to do.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ModelError {
    #[error("the API key was refused ({0}); check the key in Settings → Model provider")]
    BadKey(String),
    #[error("could not reach {0}; check the network connection or the endpoint URL")]
    Network(String),
    #[error("the provider is rate limiting requests ({0}); wait and try again")]
    RateLimited(String),
    #[error("model `{0}` was not found; pick another model in Settings → Model provider")]
    ModelNotFound(String),
    #[error("the request timed out after {0} s; try again or raise the timeout")]
    Timeout(u64),
    #[error("cancelled")]
    Cancelled,
    #[error("the provider returned an error: {0}")]
    Api(String),
    #[error("the provider's answer could not be understood: {0}")]
    BadResponse(String),
    #[error("{0}")]
    NotConfigured(String),
}

impl ModelError {
    /// The same failure with `note` added to its details, so its kind (and the advice its
    /// message ends with) stays what it was.
    pub(crate) fn noting(self, note: &str) -> ModelError {
        match self {
            ModelError::BadKey(d) => ModelError::BadKey(format!("{d}; {note}")),
            ModelError::Network(d) => ModelError::Network(format!("{d}; {note}")),
            ModelError::RateLimited(d) => ModelError::RateLimited(format!("{d}; {note}")),
            ModelError::ModelNotFound(d) => ModelError::ModelNotFound(format!("{d}; {note}")),
            ModelError::Api(d) => ModelError::Api(format!("{d}; {note}")),
            ModelError::BadResponse(d) => ModelError::BadResponse(format!("{d}; {note}")),
            ModelError::NotConfigured(d) => ModelError::NotConfigured(format!("{d}; {note}")),
            e @ (ModelError::Timeout(_) | ModelError::Cancelled) => e,
        }
    }
}
