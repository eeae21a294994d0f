//! The model provider Mneme asks (recall's side query, extraction, dream): which one, its
//! model, endpoint and timeout (`providers.json` in Mneme's data folder), its API key (the OS
//! keyring, write-only from here: front ends only ever learn whether a key is set), and a
//! connection test that sends one tiny completion and names what went wrong.

use crate::{ApiError, ErrorCode, Mneme};
use mneme_keychain::{Keychain, KeychainError};
use mneme_model::{
    anthropic_environment_key, build_provider_with_retry, find_claude, Cancel, Message, ModelError, ProviderKind, ProviderSettings, ProviderSettingsError,
    Request, RetryPolicy, DEFAULT_ANTHROPIC_MODEL,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which kind of provider, as front ends name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "kebab-case")]
pub enum ProviderChoice {
    /// No model: keyword recall, explicit-statement extraction, rule-based dream.
    Offline,
    /// The user's own `claude` binary with its own login.
    ClaudeCli,
    /// The Anthropic Messages API with a key from the OS keyring.
    Anthropic,
    /// Any OpenAI-compatible chat completions endpoint (local models included).
    Openai,
}

impl ProviderChoice {
    /// Parses `offline`, `claude-cli`, `anthropic` or `openai`.
    pub fn parse(name: &str) -> Result<ProviderChoice, ApiError> {
        serde_json::from_value(serde_json::Value::String(name.trim().to_string())).map_err(|_| {
            ApiError::invalid(format!("'{name}' is not a provider. Use one of: offline, claude-cli, anthropic, openai."))
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderChoice::Offline => "offline",
            ProviderChoice::ClaudeCli => "claude-cli",
            ProviderChoice::Anthropic => "anthropic",
            ProviderChoice::Openai => "openai",
        }
    }
}

impl From<ProviderKind> for ProviderChoice {
    fn from(k: ProviderKind) -> Self {
        match k {
            ProviderKind::Offline => ProviderChoice::Offline,
            ProviderKind::ClaudeCli => ProviderChoice::ClaudeCli,
            ProviderKind::Anthropic => ProviderChoice::Anthropic,
            ProviderKind::Openai => ProviderChoice::Openai,
        }
    }
}

impl From<ProviderChoice> for ProviderKind {
    fn from(k: ProviderChoice) -> Self {
        match k {
            ProviderChoice::Offline => ProviderKind::Offline,
            ProviderChoice::ClaudeCli => ProviderKind::ClaudeCli,
            ProviderChoice::Anthropic => ProviderKind::Anthropic,
            ProviderChoice::Openai => ProviderKind::Openai,
        }
    }
}

/// Where the provider's API key stands. The key itself never leaves the keyring through here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum KeyState {
    /// This provider takes no key (offline; the Claude Code CLI uses its own login).
    NotNeeded,
    /// A key is in the OS keyring.
    Set,
    /// No key anywhere.
    NotSet,
    /// No key in the keyring, but `ANTHROPIC_API_KEY` is set and will be used.
    FromEnvironment,
    /// The keyring could not be reached or refused access; see the message.
    Unavailable,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct KeyStatus {
    pub state: KeyState,
    /// The keyring entry's account (`anthropic-api-key`, `openai-api-key:<base url>`).
    pub account: Option<String>,
    /// What to do, when the state needs a sentence (the keyring's advice, the variable used).
    pub message: Option<String>,
}

/// The provider settings as front ends show them.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct ProviderView {
    pub kind: ProviderChoice,
    /// The model named in the settings; `None` means [`Self::default_model`].
    pub model: Option<String>,
    /// What is used when no model is named (`None`: Claude Code's own choice for the CLI; an
    /// OpenAI-compatible endpoint needs one named).
    pub default_model: Option<String>,
    /// The Anthropic API's default, whatever kind is saved: Claude Code's Sonnet
    /// (`ANTHROPIC_DEFAULT_SONNET_MODEL` overrides it).
    pub anthropic_default_model: String,
    /// The endpoint named in the settings; `None` means the kind's default.
    pub base_url: Option<String>,
    /// The endpoint requests go to (defaults filled in); `None` for the CLI and offline.
    pub effective_base_url: Option<String>,
    pub timeout_secs: u64,
    /// The `claude` binary named in the settings; `None` means [`Self::detected_claude_binary`].
    pub claude_binary: Option<PathBuf>,
    /// `claude` as found on the `PATH`.
    pub detected_claude_binary: Option<PathBuf>,
    /// The saved provider's API key.
    pub key: KeyStatus,
    /// `providers.json` in Mneme's data folder.
    pub settings_path: PathBuf,
    /// The OS keyring service the keys are stored under.
    pub keyring_service: String,
    /// Providers that can answer right now (offline always), for choosing one per query.
    pub usable: Vec<ProviderChoice>,
}

/// New provider settings. Empty strings count as "not set" (the kind's default).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct ProviderSettingsInput {
    pub kind: ProviderChoice,
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub model: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub base_url: Option<String>,
    /// Seconds to wait for one answer (1 to 3600); absent keeps Claude Code's 600.
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub timeout_secs: Option<u64>,
    /// The `claude` binary; absent = the one on the PATH.
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub claude_binary: Option<String>,
}

/// How a provider failed, for front ends to word and style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum ProviderFailure {
    BadKey,
    Network,
    RateLimited,
    ModelNotFound,
    Timeout,
    Cancelled,
    Api,
    BadResponse,
    NotConfigured,
}

impl ProviderFailure {
    pub(crate) fn of(e: &ModelError) -> ProviderFailure {
        match e {
            ModelError::BadKey(_) => ProviderFailure::BadKey,
            ModelError::Network(_) => ProviderFailure::Network,
            ModelError::RateLimited(_) => ProviderFailure::RateLimited,
            ModelError::ModelNotFound(_) => ProviderFailure::ModelNotFound,
            ModelError::Timeout(_) => ProviderFailure::Timeout,
            ModelError::Cancelled => ProviderFailure::Cancelled,
            ModelError::Api(_) => ProviderFailure::Api,
            ModelError::BadResponse(_) => ProviderFailure::BadResponse,
            ModelError::NotConfigured(_) => ProviderFailure::NotConfigured,
        }
    }
}

/// The outcome of [`Mneme::test_provider`].
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct ProviderTest {
    pub ok: bool,
    pub kind: ProviderChoice,
    /// The model asked (none when the provider could not be built).
    pub model: Option<String>,
    /// What happened, in a sentence that says what to do when it failed.
    pub message: String,
    pub failure: Option<ProviderFailure>,
    /// The model's answer, when there was one.
    pub reply: Option<String>,
    pub elapsed_ms: u64,
}

/// The longest a connection test waits for one answer, whatever the saved timeout says.
const TEST_TIMEOUT_SECS: u64 = 60;
const TEST_PROMPT: &str = "Reply with the single word: ok";

impl From<ProviderSettingsError> for ApiError {
    fn from(e: ProviderSettingsError) -> Self {
        if let ProviderSettingsError::Write { path, source } = &e {
            if let Some(refused) = ApiError::refused(source, "save", path) {
                return refused;
            }
        }
        let code = match e {
            ProviderSettingsError::Malformed { .. } => ErrorCode::Malformed,
            ProviderSettingsError::Read { ref source, .. } | ProviderSettingsError::Write { ref source, .. } => ErrorCode::for_io(source),
        };
        ApiError::new(code, e.to_string())
    }
}

impl From<KeychainError> for ApiError {
    fn from(e: KeychainError) -> Self {
        let code = match e {
            KeychainError::Unavailable(_) | KeychainError::Denied(_) => ErrorCode::Unavailable,
            KeychainError::Other(_) => ErrorCode::Io,
        };
        ApiError::new(code, e.to_string())
    }
}

fn non_empty(s: Option<&str>) -> Option<String> {
    s.map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

impl Mneme {
    /// The OS keyring service Mneme's secrets live under: `mneme`, or `MNEME_KEYRING_SERVICE`
    /// (tests and throwaway runs set it so they never touch a person's own entries).
    pub(crate) fn keychain(&self) -> Keychain {
        mneme_model::keychain_for(&self.env)
    }

    /// The saved provider settings (offline when none were saved), with the key's status.
    pub fn provider_settings(&self) -> Result<ProviderView, ApiError> {
        let settings = ProviderSettings::load(&self.env)?;
        Ok(self.provider_view(&settings))
    }

    /// Checks and saves the provider settings. The API key is kept separately
    /// ([`Self::set_provider_key`]); it is never written to the settings file.
    pub fn set_provider_settings(&self, input: &ProviderSettingsInput) -> Result<ProviderView, ApiError> {
        let settings = self.checked_settings(input)?;
        // A file Mneme cannot read is the user's to fix or delete; it is never silently replaced.
        ProviderSettings::load(&self.env)?;
        settings.save(&self.env)?;
        Ok(self.provider_view(&settings))
    }

    /// Stores (`Some`) or removes (`None`) the saved provider's API key in the OS keyring.
    pub fn set_provider_key(&self, key: Option<&str>) -> Result<ProviderView, ApiError> {
        let settings = ProviderSettings::load(&self.env)?;
        if settings.key_account().is_none() {
            return Err(match settings.kind {
                // Claude Code's own sign-in is a terminal command (`claude auth login`, in every
                // release Mneme supports): the screen shows it on its own line to copy.
                ProviderKind::ClaudeCli => ApiError::invalid(
                    "The Claude Code CLI uses its own sign-in, so it takes no API key here. To sign in, run `claude auth login` in a terminal, then test the provider again.",
                )
                .with_command(Some(crate::error::CommandFix {
                    before: "The Claude Code CLI uses its own sign-in, so it takes no API key here. To sign in, run this in a terminal:".into(),
                    line: "claude auth login".into(),
                    after: "Then test the provider again.".into(),
                })),
                _ => ApiError::invalid("Offline mode asks no model, so it takes no API key. Choose the Anthropic API or an OpenAI-compatible endpoint first."),
            });
        }
        let key = match key {
            Some(k) => {
                let k = k.trim();
                if k.is_empty() {
                    return Err(ApiError::invalid("The API key is empty. Paste the key, or use Clear to remove the stored one."));
                }
                if k.chars().any(char::is_whitespace) {
                    return Err(ApiError::invalid(
                        "The API key contains spaces or line breaks; paste only the key itself.",
                    ));
                }
                // A header carries printable ASCII only: a key with anything else (an arrow key
                // pressed at a hidden prompt, a curly quote from a document) could never be sent.
                if !k.chars().all(|c| c.is_ascii_graphic()) {
                    return Err(ApiError::invalid(
                        "The API key contains characters an API key never has (control keys, accents or typographic quotes); copy the key again from its source and paste only the key.",
                    ));
                }
                Some(k)
            }
            None => None,
        };
        settings.set_api_key(&self.keychain(), key)?;
        Ok(self.provider_view(&settings))
    }

    /// Sends one tiny completion with `input` (saved or not), without retries and with at most
    /// a minute's wait, and says what happened: the answer, or which failure it was.
    pub fn test_provider(&self, input: &ProviderSettingsInput) -> Result<ProviderTest, ApiError> {
        let mut settings = self.checked_settings(input)?;
        settings.timeout_secs = settings.timeout_secs.min(TEST_TIMEOUT_SECS);
        let kind = ProviderChoice::from(settings.kind);
        if settings.kind == ProviderKind::Offline {
            return Ok(ProviderTest {
                ok: true,
                kind,
                model: None,
                message: "Offline mode asks no model, so there is nothing to connect to: recall ranks memories by keywords and extraction keeps explicit statements.".into(),
                failure: None,
                reply: None,
                elapsed_ms: 0,
            });
        }
        let started = self.clock.now_ms();
        let elapsed = |clock: &dyn mneme_core::Clock| u64::try_from(clock.now_ms().saturating_sub(started)).unwrap_or(0);
        let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
        let provider = match build_provider_with_retry(&settings, &self.env, &self.keychain(), retry) {
            Ok(p) => p,
            Err(e) => {
                return Ok(ProviderTest {
                    ok: false,
                    kind,
                    model: None,
                    message: e.to_string(),
                    failure: Some(ProviderFailure::of(&e)),
                    reply: None,
                    elapsed_ms: elapsed(self.clock.as_ref()),
                })
            }
        };
        let model = provider.model().to_string();
        let request = Request {
            system: String::new(),
            messages: vec![Message::user_text(TEST_PROMPT)],
            tools: Vec::new(),
            max_tokens: 16,
            json_schema: None,
            thinking_disabled: false,
        };
        let cancel = Cancel::new();
        let answer = crate::block_on(provider.complete(&request, &cancel))?;
        let elapsed_ms = elapsed(self.clock.as_ref());
        Ok(match answer {
            Ok(response) => {
                let reply = response.first_text().map(|t| t.trim().to_string());
                ProviderTest {
                    ok: true,
                    kind,
                    message: format!("Connected: {model} answered."),
                    model: Some(model),
                    failure: None,
                    reply,
                    elapsed_ms,
                }
            }
            Err(e) => ProviderTest {
                ok: false,
                kind,
                model: Some(model),
                message: e.to_string(),
                failure: Some(ProviderFailure::of(&e)),
                reply: None,
                elapsed_ms,
            },
        })
    }

    /// `input` as settings, refused with the reason when a provider could not use it.
    fn checked_settings(&self, input: &ProviderSettingsInput) -> Result<ProviderSettings, ApiError> {
        let kind = ProviderKind::from(input.kind);
        let model = non_empty(input.model.as_deref());
        let base_url = non_empty(input.base_url.as_deref());
        if let Some(u) = &base_url {
            let parsed = url::Url::parse(u).map_err(|e| {
                ApiError::invalid(format!("\"{u}\" is not a URL ({e}). Write the whole address, e.g. http://127.0.0.1:11434/v1."))
            })?;
            if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
                return Err(ApiError::invalid(format!(
                    "\"{u}\" is not an http:// or https:// address. Write the whole address, e.g. http://127.0.0.1:11434/v1."
                )));
            }
            // A password in the address would be stored, shown and printed in every network
            // error; a query or fragment breaks the request path the provider appends.
            if !parsed.username().is_empty() || parsed.password().is_some() {
                return Err(ApiError::invalid(
                    "The address holds a user name or password; leave it out (Mneme keeps the API key in the system keyring) and write only the server's address.",
                ));
            }
            if parsed.query().is_some() || parsed.fragment().is_some() {
                return Err(ApiError::invalid(format!(
                    "\"{u}\" has a ?query or #fragment; the base URL is the address the API's paths go after, e.g. http://127.0.0.1:11434/v1."
                )));
            }
        }
        if kind == ProviderKind::Openai && model.is_none() {
            return Err(ApiError::invalid(
                "An OpenAI-compatible endpoint needs a model name (e.g. gpt-4o-mini, or llama3.1 on a local server).",
            ));
        }
        let timeout_secs = input.timeout_secs.unwrap_or(mneme_model::DEFAULT_TIMEOUT_SECS);
        if !(1..=3600).contains(&timeout_secs) {
            return Err(ApiError::invalid(format!(
                "A timeout of {timeout_secs} s is out of range; use 1 to 3600 seconds (Claude Code waits 600)."
            )));
        }
        let claude_binary = match non_empty(input.claude_binary.as_deref()) {
            None => None,
            Some(raw) => {
                let path = match raw.strip_prefix("~/") {
                    Some(rest) => self.env.home.join(rest),
                    None => PathBuf::from(&raw),
                };
                if !path.is_absolute() {
                    return Err(ApiError::invalid(format!(
                        "\"{raw}\" is a relative path; give the full path to the claude binary, or leave it empty to use the one on the PATH."
                    )));
                }
                if !path.is_file() {
                    return Err(ApiError::invalid(format!(
                        "There is no file at {}; give the full path to the claude binary, or leave it empty to use the one on the PATH.",
                        path.display()
                    )));
                }
                Some(path)
            }
        };
        Ok(ProviderSettings { kind, model, base_url, timeout_secs, claude_binary })
    }

    /// The settings a model call with `choice` uses: the saved ones when `choice` is the saved
    /// kind, else that kind's defaults, because a saved model and endpoint belong to the saved
    /// kind (an OpenAI model name means nothing to the Anthropic API).
    pub(crate) fn settings_for(saved: &ProviderSettings, choice: ProviderChoice) -> ProviderSettings {
        let kind = ProviderKind::from(choice);
        if kind == saved.kind {
            saved.clone()
        } else {
            ProviderSettings { kind, timeout_secs: saved.timeout_secs, claude_binary: saved.claude_binary.clone(), ..ProviderSettings::default() }
        }
    }

    fn provider_view(&self, settings: &ProviderSettings) -> ProviderView {
        let keychain = self.keychain();
        let detected = find_claude(&self.env);
        let key = self.key_status(settings, &keychain);
        let mut usable = vec![ProviderChoice::Offline];
        if settings.claude_binary.is_some() || detected.is_some() {
            usable.push(ProviderChoice::ClaudeCli);
        }
        let anthropic = ProviderSettings { kind: ProviderKind::Anthropic, ..ProviderSettings::default() };
        let anthropic_key = if settings.kind == ProviderKind::Anthropic { key.state } else { self.key_status(&anthropic, &keychain).state };
        // build_provider falls back to ANTHROPIC_API_KEY whenever the keyring has no key or
        // cannot be read, for the addresses that key belongs to.
        let anthropic_url = if settings.kind == ProviderKind::Anthropic { settings.effective_base_url() } else { anthropic.effective_base_url() };
        let env_key = anthropic_url.is_some_and(|u| anthropic_environment_key(&u, &self.env).is_some());
        if anthropic_key == KeyState::Set || env_key {
            usable.push(ProviderChoice::Anthropic);
        }
        // An endpoint, its model and its key belong together: only the saved one is usable.
        if settings.kind == ProviderKind::Openai {
            usable.push(ProviderChoice::Openai);
        }
        ProviderView {
            kind: settings.kind.into(),
            model: settings.model.clone(),
            default_model: match settings.kind {
                ProviderKind::Anthropic => Some(self.anthropic_default_model()),
                _ => None,
            },
            anthropic_default_model: self.anthropic_default_model(),
            base_url: settings.base_url.clone(),
            effective_base_url: settings.effective_base_url(),
            timeout_secs: settings.timeout_secs,
            claude_binary: settings.claude_binary.clone(),
            detected_claude_binary: detected,
            key,
            settings_path: ProviderSettings::path(&self.env),
            keyring_service: keychain.service().to_string(),
            usable,
        }
    }

    /// The model the Anthropic provider uses when none is named, as `build_provider` picks it.
    fn anthropic_default_model(&self) -> String {
        self.env
            .var("ANTHROPIC_DEFAULT_SONNET_MODEL")
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map_or_else(|| DEFAULT_ANTHROPIC_MODEL.to_string(), str::to_string)
    }

    fn key_status(&self, settings: &ProviderSettings, keychain: &Keychain) -> KeyStatus {
        let Some(account) = settings.key_account() else {
            return KeyStatus { state: KeyState::NotNeeded, account: None, message: None };
        };
        let env_key = settings.kind == ProviderKind::Anthropic
            && settings.effective_base_url().is_some_and(|u| anthropic_environment_key(&u, &self.env).is_some());
        let from_env = || KeyStatus {
            state: KeyState::FromEnvironment,
            account: Some(account.clone()),
            message: Some("No key is stored here, so ANTHROPIC_API_KEY from the environment is used; a key stored here takes precedence.".into()),
        };
        match keychain.get(&account) {
            Ok(Some(_)) => KeyStatus { state: KeyState::Set, account: Some(account), message: None },
            Ok(None) if env_key => from_env(),
            Ok(None) => KeyStatus { state: KeyState::NotSet, account: Some(account), message: None },
            Err(e) => KeyStatus {
                state: KeyState::Unavailable,
                account: Some(account.clone()),
                message: Some(if env_key { format!("{e}. Until then ANTHROPIC_API_KEY from the environment is used.") } else { e.to_string() }),
            },
        }
    }
}
