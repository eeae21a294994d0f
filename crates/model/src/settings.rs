//! Which provider Mneme uses, saved as `providers.json` in Mneme's data folder. Keys are never
//! in that file: they live in the OS keyring, one entry per endpoint (`anthropic-api-key` for
//! api.anthropic.com, `anthropic-api-key:<base url>` for any other, `openai-api-key:<base url>`),
//! so changing the base URL never sends a stored key to a server it was not given for; with
//! `ANTHROPIC_API_KEY` from the environment as the fallback Claude Code users already have.

use crate::anthropic::{AnthropicProvider, ANTHROPIC_DEFAULT_BASE_URL};
use crate::claude_cli::{find_claude, ClaudeCliProvider};
use crate::http::{is_local, is_this_machine};
use crate::offline::OfflineProvider;
use crate::openai::{OpenAiProvider, OPENAI_DEFAULT_BASE_URL};
use crate::retry::{HttpOptions, RetryPolicy};
use crate::{ModelError, Provider, ProviderKind};
use mneme_keychain::{Keychain, KeychainError};
use mneme_store::Environment;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub const PROVIDERS_FILE: &str = "providers.json";
pub const ANTHROPIC_KEY_ACCOUNT: &str = "anthropic-api-key";
/// The model the newest Claude Code releases' side queries use on the first-party API (their
/// model catalog maps `sonnet` to this from 2.1.284; `ANTHROPIC_DEFAULT_SONNET_MODEL` overrides
/// it): Mneme's own runs default to it. `mneme_core::versions` keeps each release's (recall
/// follows the user's release), and a test keeps the two equal for the newest.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-5-5";
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;

/// The keyring account of an Anthropic endpoint's key: `anthropic-api-key` for the public API
/// (the name keys were always stored under), `anthropic-api-key:<base url>` for any other, so
/// a key given for one endpoint is never sent to another.
pub fn anthropic_key_account(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base == ANTHROPIC_DEFAULT_BASE_URL {
        ANTHROPIC_KEY_ACCOUNT.to_string()
    } else {
        format!("{ANTHROPIC_KEY_ACCOUNT}:{base}")
    }
}

/// The keyring account of an OpenAI-compatible endpoint's key: one per endpoint, so a local
/// server and a hosted one keep separate keys.
pub fn openai_key_account(base_url: &str) -> String {
    format!("openai-api-key:{}", base_url.trim_end_matches('/'))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderSettings {
    pub kind: ProviderKind,
    /// `None`: the kind's default (Claude Code's choice for the CLI, `claude-sonnet-5` for
    /// Anthropic); OpenAI-compatible endpoints need one named.
    pub model: Option<String>,
    /// `None`: `https://api.anthropic.com` or `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    pub timeout_secs: u64,
    /// `None`: `claude` on the `PATH`.
    pub claude_binary: Option<PathBuf>,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings { kind: ProviderKind::Offline, model: None, base_url: None, timeout_secs: DEFAULT_TIMEOUT_SECS, claude_binary: None }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderSettingsError {
    /// The file could not be read: its permissions, or something other than a plain file in
    /// its place (a folder, a FIFO, …), or a file far larger than provider settings are; the
    /// message says which.
    #[error("{}", read_error_text(path, source))]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not valid provider settings ({}); fix it, or delete it to start again in offline mode", mneme_core::own_files::parse_failure(source))]
    Malformed { path: PathBuf, source: serde_json::Error },
    #[error("could not save {path} ({source}); check that Mneme's data folder is writable")]
    Write { path: PathBuf, source: std::io::Error },
}

/// [`ProviderSettingsError::Read`] for people. A FIFO, a folder or a file past
/// [`MAX_PROVIDERS_FILE_BYTES`] is refused with what is there and what to do; permissions are
/// named only when the file could not be opened.
fn read_error_text(path: &Path, source: &std::io::Error) -> String {
    match source.kind() {
        std::io::ErrorKind::InvalidInput | std::io::ErrorKind::FileTooLarge => {
            format!("{source} (these are Mneme's model provider settings; without them Mneme starts again with the offline provider)")
        }
        _ => format!("could not read {} ({source}); check the file's permissions", path.display()),
    }
}

/// The fields of [`ProviderSettings`] in `providers.json`; any other is a newer Mneme's, kept
/// when this one saves.
const KNOWN_FIELDS: &[&str] = &["kind", "model", "base_url", "timeout_secs", "claude_binary"];

/// The most of `providers.json` that is read: the settings are a few short fields.
pub const MAX_PROVIDERS_FILE_BYTES: u64 = 1 << 20;

impl ProviderSettings {
    pub fn path(env: &Environment) -> PathBuf {
        env.data_dir().join(PROVIDERS_FILE)
    }

    /// The saved settings, or the defaults (offline) when none were saved. A malformed file is
    /// an error and is left as it is. Only a plain file of at most [`MAX_PROVIDERS_FILE_BYTES`]
    /// is read, opened without waiting: every command that may ask a model, the app and
    /// `mneme serve` read this file, and a FIFO in its place held them for ever.
    pub fn load(env: &Environment) -> Result<ProviderSettings, ProviderSettingsError> {
        let path = ProviderSettings::path(env);
        match mneme_store::open::read_own_file(&path, MAX_PROVIDERS_FILE_BYTES) {
            Ok(Some(bytes)) => serde_json::from_slice(&bytes).map_err(|source| ProviderSettingsError::Malformed { path, source }),
            Ok(None) => Ok(ProviderSettings::default()),
            Err(source) => Err(ProviderSettingsError::Read { path, source }),
        }
    }

    /// Saves atomically, as every file of Mneme's is written (`mneme_store::atomic`): a crash
    /// leaves the old settings, and the temporary file it leaves is removed by the next save.
    pub fn save(&self, env: &Environment) -> Result<(), ProviderSettingsError> {
        let path = ProviderSettings::path(env);
        let write_error = |source| ProviderSettingsError::Write { path: path.clone(), source };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(write_error)?;
        let serde_json::Value::Object(mut fields) = serde_json::to_value(self).map_err(|e| write_error(std::io::Error::other(e)))? else {
            return Err(write_error(std::io::Error::other("provider settings did not encode as a JSON object")));
        };
        // Settings a newer Mneme keeps here (both may run on one machine) stay as they were.
        if let Ok(Some(bytes)) = mneme_store::open::read_own_file(&path, MAX_PROVIDERS_FILE_BYTES) {
            if let Ok(old) = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&bytes) {
                mneme_core::own_files::carry_unknown(&old, &mut fields, KNOWN_FIELDS);
            }
        }
        let mut text = serde_json::to_string_pretty(&fields).map_err(|e| write_error(std::io::Error::other(e)))?;
        text.push('\n');
        mneme_store::atomic::write_atomic(&path, text.as_bytes()).map_err(write_error)
    }

    /// The base URL requests go to, defaults filled in (`None` for the CLI and offline).
    pub fn effective_base_url(&self) -> Option<String> {
        let given = self.base_url.as_deref().map(str::trim).filter(|u| !u.is_empty()).map(|u| u.trim_end_matches('/').to_string());
        match self.kind {
            ProviderKind::Anthropic => Some(given.unwrap_or_else(|| ANTHROPIC_DEFAULT_BASE_URL.to_string())),
            ProviderKind::Openai => Some(given.unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.to_string())),
            ProviderKind::ClaudeCli | ProviderKind::Offline => None,
        }
    }

    /// The keyring account holding this provider's key, if it takes one.
    pub fn key_account(&self) -> Option<String> {
        match self.kind {
            ProviderKind::Anthropic => self.effective_base_url().map(|u| anthropic_key_account(&u)),
            ProviderKind::Openai => self.effective_base_url().map(|u| openai_key_account(&u)),
            ProviderKind::ClaudeCli | ProviderKind::Offline => None,
        }
    }

    /// Stores (or with `None`, removes) this provider's key in the keyring.
    pub fn set_api_key(&self, keychain: &Keychain, key: Option<&str>) -> Result<(), KeychainError> {
        let Some(account) = self.key_account() else { return Ok(()) };
        match key.map(str::trim).filter(|k| !k.is_empty()) {
            Some(k) => keychain.set(&account, k),
            None => keychain.delete(&account),
        }
    }

    fn model_name(&self) -> Option<String> {
        self.model.as_deref().map(str::trim).filter(|m| !m.is_empty()).map(str::to_string)
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.max(1))
    }
}

/// The largest certificate bundle read from `NODE_EXTRA_CA_CERTS` (a system bundle is ~200 KB).
const MAX_CA_BUNDLE_BYTES: u64 = 16 << 20;

/// The certificate authorities `NODE_EXTRA_CA_CERTS` names (a PEM file), trusted beside the
/// built-in ones, as Claude Code trusts them: how a company's own authority, or a TLS-inspecting
/// proxy's, is made known. A file that cannot be used is an error naming it, not a silent
/// fallback that would fail later as an untrusted certificate.
fn extra_roots(env: &Environment) -> Result<Vec<reqwest::Certificate>, ModelError> {
    let Some(path) = env.var("NODE_EXTRA_CA_CERTS").map(str::trim).filter(|p| !p.is_empty()) else { return Ok(Vec::new()) };
    let unusable = |why: String| {
        ModelError::NotConfigured(format!(
            "NODE_EXTRA_CA_CERTS names {path}, which {why}; point it at a PEM file of certificates, or unset it"
        ))
    };
    let (bytes, _) = mneme_store::open::read_plain_capped(std::path::Path::new(path), MAX_CA_BUNDLE_BYTES)
        .map_err(|e| unusable(format!("could not be read ({e})")))?;
    let roots = reqwest::Certificate::from_pem_bundle(&bytes).map_err(|e| unusable(format!("is not a PEM certificate bundle ({e})")))?;
    if roots.is_empty() {
        return Err(unusable("holds no certificates".into()));
    }
    Ok(roots)
}

/// Whether `ANTHROPIC_API_KEY` may be sent to `base_url`: the environment's key belongs to the
/// API the environment names (the default, or `ANTHROPIC_BASE_URL` beside it), or to a server on
/// this machine. An address typed in the form and tested before its own key is stored must not
/// receive it.
fn environment_key_fits(base_url: &str, env: &Environment) -> bool {
    let base_url = base_url.trim_end_matches('/');
    base_url == ANTHROPIC_DEFAULT_BASE_URL
        || env.var("ANTHROPIC_BASE_URL").is_some_and(|u| u.trim().trim_end_matches('/') == base_url)
        || url::Url::parse(base_url).is_ok_and(|u| is_this_machine(&u))
}

/// The `ANTHROPIC_API_KEY` an Anthropic provider at `base_url` falls back to when the keyring
/// holds none for it.
pub fn anthropic_environment_key(base_url: &str, env: &Environment) -> Option<String> {
    env.var("ANTHROPIC_API_KEY")
        .map(str::trim)
        .filter(|k| !k.is_empty() && environment_key_fits(base_url, env))
        .map(str::to_string)
}

/// The provider the settings describe, ready to share.
pub fn build_provider(settings: &ProviderSettings, env: &Environment, keychain: &Keychain) -> Result<Arc<dyn Provider>, ModelError> {
    build_provider_with_retry(settings, env, keychain, RetryPolicy::default())
}

/// [`build_provider`] with another retry policy for the HTTP providers. A connection test
/// wants none: with Claude Code's ten retries a rate limit or an unreachable host would keep
/// the user waiting minutes for an answer that is already known.
pub fn build_provider_with_retry(
    settings: &ProviderSettings,
    env: &Environment,
    keychain: &Keychain,
    retry: RetryPolicy,
) -> Result<Arc<dyn Provider>, ModelError> {
    let options = HttpOptions { timeout: settings.timeout(), retry, ..HttpOptions::default() };
    let roots = || extra_roots(env);
    match settings.kind {
        ProviderKind::Offline => Ok(Arc::new(OfflineProvider)),
        ProviderKind::Anthropic => {
            let base_url = settings.effective_base_url().unwrap_or_else(|| ANTHROPIC_DEFAULT_BASE_URL.to_string());
            let env_key_fits = environment_key_fits(&base_url, env);
            let from_env = anthropic_environment_key(&base_url, env);
            let key = match keychain.get(&anthropic_key_account(&base_url)) {
                Ok(Some(key)) => key,
                Ok(None) => from_env.ok_or_else(|| {
                    ModelError::NotConfigured(if env_key_fits {
                        "no Anthropic API key: add one in Settings → Model provider (it is kept in the OS keyring) or set ANTHROPIC_API_KEY".into()
                    } else {
                        format!("no API key for {base_url}: add its key in Settings → Model provider (ANTHROPIC_API_KEY is only sent to {ANTHROPIC_DEFAULT_BASE_URL} or the ANTHROPIC_BASE_URL set beside it)")
                    })
                })?,
                Err(e) => from_env.ok_or_else(|| {
                    ModelError::NotConfigured(if env_key_fits {
                        format!("no Anthropic API key could be read: {e}; or set ANTHROPIC_API_KEY")
                    } else {
                        format!("no API key for {base_url} could be read: {e} (ANTHROPIC_API_KEY is only sent to {ANTHROPIC_DEFAULT_BASE_URL} or the ANTHROPIC_BASE_URL set beside it)")
                    })
                })?,
            };
            // Claude Code's getDefaultSonnetModel: the env override, else its catalog's Sonnet.
            let model = settings.model_name().unwrap_or_else(|| {
                env.var("ANTHROPIC_DEFAULT_SONNET_MODEL")
                    .filter(|m| !m.trim().is_empty())
                    .map_or_else(|| DEFAULT_ANTHROPIC_MODEL.to_string(), str::to_string)
            });
            Ok(Arc::new(AnthropicProvider::new(model, key, Some(&base_url))?.trusting(&roots()?)?.with_options(options)))
        }
        ProviderKind::Openai => {
            let base_url = settings.effective_base_url().unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.to_string());
            let model = settings.model_name().ok_or_else(|| {
                ModelError::NotConfigured(format!("no model chosen for {base_url}: name one in Settings → Model provider"))
            })?;
            let key = match keychain.get(&openai_key_account(&base_url)) {
                Ok(key) => key,
                // No keyring at all means no key could have been stored here: a local server
                // that needs none still works. A hosted endpoint needs its key, and sending the
                // request without it would only be refused as a bad key, blaming the wrong thing.
                // A locked or refusing keyring may be hiding a key, so say so.
                Err(KeychainError::Unavailable(_)) if url::Url::parse(&base_url).is_ok_and(|u| is_local(&u)) => None,
                Err(e) => return Err(ModelError::NotConfigured(format!("the API key for {base_url} could not be read: {e}"))),
            };
            Ok(Arc::new(OpenAiProvider::new(model, key, Some(&base_url))?.trusting(&roots()?)?.with_options(options)))
        }
        ProviderKind::ClaudeCli => {
            let binary = match &settings.claude_binary {
                Some(path) => path.clone(),
                None => find_claude(env).ok_or_else(|| {
                    ModelError::NotConfigured(
                        "Claude Code (`claude`) is not on the PATH: install it (`npm install -g @anthropic-ai/claude-code`) or set its path in Settings → Model provider".into(),
                    )
                })?,
            };
            Ok(Arc::new(ClaudeCliProvider::new(binary, env).with_model(settings.model_name()).with_timeout(settings.timeout())))
        }
    }
}

/// The env var naming the OS keyring service Mneme's secrets live under.
pub const KEYRING_SERVICE_VAR: &str = mneme_keychain::SERVICE_VAR;

/// The keyring Mneme's secrets live in: service `mneme`, or `MNEME_KEYRING_SERVICE`.
pub fn keychain_for(env: &Environment) -> Keychain {
    Keychain::for_service_var(env.var(KEYRING_SERVICE_VAR))
}

/// A provider name as the CLI and settings spell it (`offline`, `claude-cli`, `anthropic`, `openai`).
pub fn parse_kind(name: &str) -> Result<ProviderKind, ModelError> {
    serde_json::from_value::<ProviderKind>(serde_json::Value::String(name.trim().to_string())).map_err(|_| {
        ModelError::NotConfigured(format!("'{name}' is not a provider. Use one of: offline, claude-cli, anthropic, openai."))
    })
}

/// The provider the user chose in Settings → Model provider, or the kind `name` names instead;
/// `None` means offline (no model: recall ranks, extraction takes explicit statements, dream
/// consolidates deterministically).
pub fn configured_provider(env: &Environment, name: Option<&str>) -> Result<Option<Arc<dyn Provider>>, ModelError> {
    provider_with_keychain(env, name, &keychain_for(env))
}

/// [`configured_provider`] for runs nobody is waiting at (the scheduler's extraction and
/// dreams): its key is read from the keyring with [`mneme_keychain::BACKGROUND_TIME_LIMIT`], so
/// a locked keyring whose unlock prompt nobody answers fails the run saying to unlock it (the
/// scheduler tries again later) instead of holding the run, and the scheduler, for ever.
pub fn configured_provider_in_background(env: &Environment) -> Result<Option<Arc<dyn Provider>>, ModelError> {
    provider_with_keychain(env, None, &keychain_for(env).with_time_limit(mneme_keychain::BACKGROUND_TIME_LIMIT))
}

fn provider_with_keychain(env: &Environment, name: Option<&str>, keychain: &Keychain) -> Result<Option<Arc<dyn Provider>>, ModelError> {
    let mut settings = ProviderSettings::load(env).map_err(|e| ModelError::NotConfigured(e.to_string()))?;
    if let Some(name) = name {
        settings.kind = parse_kind(name)?;
    }
    if settings.kind == ProviderKind::Offline {
        return Ok(None);
    }
    build_provider(&settings, env, keychain).map(Some)
}
