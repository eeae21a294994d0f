//! Model providers behind one trait.
//!
//! Everything that asks a model something — recall's side query, the extraction and session-memory
//! agents, dream — builds a [`Request`] and calls [`Provider::complete`]. The agent loop (tools,
//! permission checks, turn budget) is not here: it lives in `mneme-agent` and drives any provider
//! turn by turn. The Claude Code CLI provider is the exception that runs its own agent loop; it
//! exposes that through [`Provider::headless`].
//!
//! Providers: [`AnthropicProvider`] (the Messages API), [`OpenAiProvider`] (any
//! OpenAI-compatible chat completions endpoint), [`ClaudeCliProvider`] (the user's `claude`
//! binary, one-shot and headless agent) and [`OfflineProvider`]. The HTTP ones share Claude
//! Code's timeout and retry policy ([`HttpOptions`], [`RetryPolicy`]). [`ProviderSettings`]
//! (`providers.json` in Mneme's data folder, keys in the OS keyring) and [`build_provider`]
//! turn the user's choice into an `Arc<dyn Provider>`.

mod anthropic;
mod claude_cli;
mod http;
mod offline;
mod openai;
mod retry;
mod settings;
mod types;

pub use anthropic::{AnthropicProvider, ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_VERSION, STRUCTURED_OUTPUTS_BETA};
pub use claude_cli::{find_claude, ClaudeCliProvider};
pub use offline::{OfflineProvider, OFFLINE_MESSAGE};
pub use openai::{OpenAiProvider, OPENAI_DEFAULT_BASE_URL};
pub use retry::{HttpOptions, RetryPolicy, Sleeper, TokioSleeper};
pub use settings::{
    anthropic_environment_key, anthropic_key_account, build_provider, build_provider_with_retry, openai_key_account, ProviderSettings, ProviderSettingsError, ANTHROPIC_KEY_ACCOUNT, DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_TIMEOUT_SECS, PROVIDERS_FILE, configured_provider, configured_provider_in_background, keychain_for, parse_kind, KEYRING_SERVICE_VAR};
pub use types::*;

use futures_util::future::BoxFuture;

/// One model backend. Implementations must be cheap to share (`Arc<dyn Provider>`).
pub trait Provider: Send + Sync {
    /// Which kind of provider this is (shown to the user as "by which provider").
    fn kind(&self) -> ProviderKind;

    /// The model name requests go to, for display (e.g. `claude-sonnet-5`).
    fn model(&self) -> &str;

    /// One model turn: send the conversation, get the assistant's content back.
    /// Implementations apply their own timeout and retry policy; `cancel` aborts promptly with
    /// [`ModelError::Cancelled`].
    fn complete<'a>(&'a self, request: &'a Request, cancel: &'a Cancel) -> BoxFuture<'a, Result<Response, ModelError>>;

    /// Providers that run a whole agent themselves (the Claude Code CLI) return it here; the agent
    /// crate then hands the task over instead of looping turn by turn.
    fn headless(&self) -> Option<&dyn HeadlessAgent> {
        None
    }
}

/// A provider that runs a complete agent task itself, with its own tools, restricted by the
/// policy it is given (Claude Code's `--allowedTools` / `--disallowedTools` / `--permission-mode`).
pub trait HeadlessAgent: Send + Sync {
    fn run<'a>(&'a self, task: &'a HeadlessTask, cancel: &'a Cancel) -> BoxFuture<'a, Result<HeadlessOutcome, ModelError>>;
}
