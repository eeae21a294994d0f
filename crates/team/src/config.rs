//! Which team server to talk to: `TEAM_MEMORY_SYNC_URL`, as Claude Code reads it, else the
//! server the user signed in to, kept in Mneme's data dir (`team.json`). The token is never
//! stored here: it lives in the OS keyring (see [`crate::auth`]).

use mneme_store::Environment;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::PathBuf;

/// The variable Claude Code reads for the team-memory server's base URL.
pub const SYNC_URL_VAR: &str = "TEAM_MEMORY_SYNC_URL";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("\"{0}\" is not a server address; give an http:// or https:// URL such as https://team.example.com")]
    BadUrl(String),
    #[error("\"{0}\" is plain http:// to another machine, which would send your sign-in token and team memory unencrypted; use https:// (plain http:// is only for 127.0.0.1 or localhost)")]
    Insecure(String),
    #[error("Could not {action} Mneme's team settings {}: {source}", .path.display())]
    Io { action: &'static str, path: PathBuf, #[source] source: std::io::Error },
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TeamSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server_url: Option<String>,
    /// Settings a newer Mneme keeps here that this one does not know: written back as they
    /// were when this one saves the server (`mneme_core::own_files`).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    extra: mneme_core::own_files::Unknown,
}

/// The saved settings as they stand, or none when there are none Mneme can read (those are
/// replaced by the next save, as before).
fn saved_settings(env: &Environment) -> TeamSettings {
    mneme_store::open::read_plain(&settings_path(env)).ok().and_then(|(bytes, _)| serde_json::from_slice(&bytes).ok()).unwrap_or_default()
}

/// `<data dir>/team.json`.
pub fn settings_path(env: &Environment) -> PathBuf {
    env.data_dir().join("team.json")
}

/// The server to sync with: the environment variable when set and not empty, else the saved
/// setting.
pub fn server_url(env: &Environment) -> Option<String> {
    match env.var(SYNC_URL_VAR).map(str::trim).filter(|v| !v.is_empty()) {
        Some(v) => Some(v.to_string()),
        None => saved_server_url(env),
    }
}

/// Where the server URL comes from, for status displays: `env:TEAM_MEMORY_SYNC_URL`,
/// `setting`, or `None`.
pub fn server_url_source(env: &Environment) -> Option<&'static str> {
    if env.var(SYNC_URL_VAR).is_some_and(|v| !v.trim().is_empty()) {
        Some("env:TEAM_MEMORY_SYNC_URL")
    } else if saved_server_url(env).is_some() {
        Some("setting")
    } else {
        None
    }
}

/// The saved setting alone.
pub fn saved_server_url(env: &Environment) -> Option<String> {
    saved_settings(env).server_url
}

/// Checks and normalizes a server URL: http or https, a host, no query or fragment; the
/// trailing slash is dropped.
pub fn normalize_server_url(raw: &str) -> Result<String, ConfigError> {
    let bad = || ConfigError::BadUrl(raw.to_string());
    let u = url::Url::parse(raw.trim()).map_err(|_| bad())?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() || u.query().is_some() || u.fragment().is_some() {
        return Err(bad());
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(bad());
    }
    if !secure_enough(&u) {
        return Err(ConfigError::Insecure(raw.trim().to_string()));
    }
    Ok(u.as_str().trim_end_matches('/').to_string())
}

/// Whether a request to `url` may be sent: https anywhere, plain http only to this machine
/// (127.0.0.0/8, ::1 or `localhost`), where nobody on the network can read the bearer token.
/// Checked on every request too, since `TEAM_MEMORY_SYNC_URL` never passes through
/// [`normalize_server_url`].
pub fn transport_allowed(url: &str) -> Result<(), ConfigError> {
    let u = url::Url::parse(url).map_err(|_| ConfigError::BadUrl(url.to_string()))?;
    if secure_enough(&u) {
        Ok(())
    } else {
        Err(ConfigError::Insecure(format!("{}://{}", u.scheme(), u.host_str().unwrap_or(""))))
    }
}

fn secure_enough(u: &url::Url) -> bool {
    match u.scheme() {
        "https" => true,
        "http" => match u.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            None => false,
        },
        _ => false,
    }
}

/// Saves the server URL (normalized) as Mneme's setting and returns it.
pub fn save_server_url(env: &Environment, raw: &str) -> Result<String, ConfigError> {
    let url = normalize_server_url(raw)?;
    write_settings(env, &TeamSettings { server_url: Some(url.clone()), ..saved_settings(env) })?;
    Ok(url)
}

/// Forgets the saved server URL.
pub fn clear_server_url(env: &Environment) -> Result<(), ConfigError> {
    write_settings(env, &TeamSettings { server_url: None, ..saved_settings(env) })
}

fn write_settings(env: &Environment, s: &TeamSettings) -> Result<(), ConfigError> {
    let path = settings_path(env);
    let err = |action| move |source| ConfigError::Io { action, path: settings_path(env), source };
    let dir = path.parent().map(PathBuf::from).unwrap_or_default();
    fs::create_dir_all(&dir).map_err(err("create the folder for"))?;
    // A settings value that cannot be encoded is an error, never an empty file.
    let json = serde_json::to_vec_pretty(s).map_err(|e| err("encode")(std::io::Error::other(e)))?;
    mneme_store::atomic::write_atomic(&path, &json).map_err(err("write"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_wins_over_the_setting() {
        let t = tempfile::tempdir().unwrap();
        let env = Environment::with_home(t.path());
        assert_eq!(server_url(&env), None);
        assert_eq!(save_server_url(&env, " https://team.example.com/ ").unwrap(), "https://team.example.com");
        assert_eq!(server_url(&env).as_deref(), Some("https://team.example.com"));
        assert_eq!(server_url_source(&env), Some("setting"));
        let env = env.set_var(SYNC_URL_VAR, "http://127.0.0.1:9");
        assert_eq!(server_url(&env).as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(server_url_source(&env), Some("env:TEAM_MEMORY_SYNC_URL"));
        clear_server_url(&env).unwrap();
        assert_eq!(saved_server_url(&env), None);
    }

    #[test]
    fn a_newer_mneme_s_team_settings_survive_a_save_here() {
        let t = tempfile::tempdir().unwrap();
        let env = Environment::with_home(t.path());
        fs::create_dir_all(settings_path(&env).parent().unwrap()).unwrap();
        fs::write(settings_path(&env), r#"{"serverUrl": "https://old.example.com", "pushDelaySecs": 10}"#).unwrap();
        save_server_url(&env, "https://team.example.com").unwrap();
        clear_server_url(&env).unwrap();
        let kept: serde_json::Value = serde_json::from_slice(&fs::read(settings_path(&env)).unwrap()).unwrap();
        assert_eq!(kept, serde_json::json!({"pushDelaySecs": 10}));
    }

    #[test]
    fn plain_http_is_refused_except_on_loopback() {
        for ok in ["http://127.0.0.1:8787", "http://127.1.2.3", "http://[::1]:9/", "http://localhost:8787", "https://team.example.com"] {
            assert!(normalize_server_url(ok).is_ok(), "{ok}");
            assert!(transport_allowed(ok).is_ok(), "{ok}");
        }
        for bad in ["http://team.example.com", "http://10.0.0.5:8787", "http://[2001:db8::1]/", "http://localhost.example.com"] {
            let err = normalize_server_url(bad).unwrap_err();
            assert!(matches!(err, ConfigError::Insecure(_)), "{bad}: {err}");
            assert!(err.to_string().contains("https://"), "{err}");
            assert!(transport_allowed(&format!("{bad}/api/claude_code/team_memory?repo=a%2Fb")).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_plain_http_urls() {
        assert_eq!(normalize_server_url("http://127.0.0.1:8080/base/").unwrap(), "http://127.0.0.1:8080/base");
        for bad in ["ftp://x", "team.example.com", "https://u:p@x.com", "https://x.com/?a=1", "https://x.com/#f", ""] {
            assert!(normalize_server_url(bad).is_err(), "{bad}");
        }
    }
}
