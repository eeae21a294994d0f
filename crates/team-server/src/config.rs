//! How a server is started: the database, the public address, the limits.

pub use crate::limits::{SignInLimits, Window};
use mneme_core::{Clock, SystemClock};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// Where the data lives: `sqlite:PATH` (embedded, the default) or `postgres://…`
/// (`postgresql://…` too) for several replicas behind a load balancer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a database URL. Use sqlite:/path/to/file.db or postgres://user:password@host:port/database.")]
pub struct BadDatabaseUrl(pub String);

impl FromStr for DatabaseUrl {
    type Err = BadDatabaseUrl;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(DatabaseUrl::Postgres(s.to_string()));
        }
        // `sqlite://PATH` and `sqlite:PATH` both name a file path.
        let path = s.strip_prefix("sqlite://").or_else(|| s.strip_prefix("sqlite:"));
        match path {
            Some(p) if !p.is_empty() => Ok(DatabaseUrl::Sqlite(PathBuf::from(p))),
            _ => Err(BadDatabaseUrl(s.to_string())),
        }
    }
}

impl DatabaseUrl {
    /// The URL with any password replaced, for logs and error messages.
    pub fn redacted(&self) -> String {
        match self {
            DatabaseUrl::Sqlite(p) => format!("sqlite:{}", p.display()),
            DatabaseUrl::Postgres(u) => redact_postgres(u),
        }
    }
}

/// A PostgreSQL URL with its password hidden, wherever it is given: after the user (the last
/// `@` ends it, so a password holding `@` is hidden whole) or as a query parameter
/// (`?password=`, `sslpassword=`). A URL that does not parse is not shown at all.
fn redact_postgres(u: &str) -> String {
    let Ok(mut url) = url::Url::parse(u) else {
        return "postgres://(address hidden: it does not parse as a URL)".into();
    };
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    }
    if url.query().is_some() {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| {
                let secret = k.to_ascii_lowercase().contains("password");
                (k.into_owned(), if secret { "***".into() } else { v.into_owned() })
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    url.to_string()
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Requests one access token may make: `burst` at once, refilled at one per `period / burst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub burst: u32,
    pub period: Duration,
}

/// Everything [`crate::spawn`] needs. Build with [`ServerConfig::new`] and adjust fields.
#[derive(Clone)]
pub struct ServerConfig {
    pub database: DatabaseUrl,
    /// The address people reach the server at (for the device sign-in page link), e.g.
    /// `https://memory.example.com`. `None` = `http://<bound address>`.
    pub public_url: Option<String>,
    /// The entry cap for repositories without their own (`set-max-entries`).
    pub max_entries: u64,
    /// The storage cap for repositories without their own (`set-max-bytes`): UTF-8 bytes of
    /// every version in a repository's history.
    pub max_repo_bytes: u64,
    /// The live-content cap for repositories without their own (`set-max-live-bytes`): UTF-8
    /// bytes of the current entries, which every full pull carries.
    pub max_live_bytes: u64,
    /// The largest entry accepted, in UTF-8 bytes (Claude Code's `MAX_FILE_SIZE_BYTES`).
    pub max_entry_bytes: u64,
    /// The largest PUT body accepted. Claude Code batches under 200,000 bytes but sends a single
    /// oversized entry alone, and JSON escaping can grow a 250,000-byte entry several times.
    pub max_body_bytes: u64,
    /// Per-token request limit on the API; `None` = unlimited.
    pub rate_limit: Option<RateLimit>,
    pub access_token_ttl: Duration,
    pub refresh_token_ttl: Duration,
    /// How long a device code waits for approval.
    pub device_code_ttl: Duration,
    /// The minimum seconds between token polls (RFC 8628 `interval`).
    pub device_poll_interval: Duration,
    /// How long one sign-in lasts however often its refresh token is used: after this the
    /// person signs in again (and a stolen refresh token stops working).
    pub sign_in_lifetime: Duration,
    /// The `client_id`s a device sign-in may name; any other is refused.
    pub client_ids: Vec<String>,
    /// Attempt limits and the password-hashing cap.
    pub sign_in_limits: SignInLimits,
    /// How long a connection may take to send a request's headers before it is dropped.
    pub header_read_timeout: Duration,
    /// How long a request may take to send its whole body (a byte every few seconds would
    /// otherwise hold the connection for ever); answered 408.
    pub body_read_timeout: Duration,
    /// How many request bodies the server holds in memory at once (they are read before the
    /// token is checked); more wait a moment, then get 503.
    pub max_bodies_in_memory: usize,
    /// How many full pulls (every entry with its content) the server builds at once. Each
    /// holds the repository's live content about three times over while it is read and
    /// turned into JSON; more wait a moment, then get 503.
    pub max_full_pulls: usize,
    /// How long a shutdown waits for open connections to finish their requests before it
    /// closes them: a client that stops reading its answer would otherwise hold it for ever.
    pub shutdown_grace: Duration,
    pub clock: Arc<dyn Clock>,
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("database", &self.database.redacted())
            .field("public_url", &self.public_url)
            .field("max_entries", &self.max_entries)
            .field("max_repo_bytes", &self.max_repo_bytes)
            .field("max_live_bytes", &self.max_live_bytes)
            .field("max_entry_bytes", &self.max_entry_bytes)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("rate_limit", &self.rate_limit)
            .field("access_token_ttl", &self.access_token_ttl)
            .field("refresh_token_ttl", &self.refresh_token_ttl)
            .field("device_code_ttl", &self.device_code_ttl)
            .field("device_poll_interval", &self.device_poll_interval)
            .field("sign_in_lifetime", &self.sign_in_lifetime)
            .field("client_ids", &self.client_ids)
            .field("sign_in_limits", &self.sign_in_limits)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("max_bodies_in_memory", &self.max_bodies_in_memory)
            .field("max_full_pulls", &self.max_full_pulls)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish_non_exhaustive()
    }
}

/// Large enough that no real team meets it unless an admin lowers it.
pub const DEFAULT_MAX_ENTRIES: u64 = 100_000;
/// 1 GiB of history per repository: a team's memory is kilobytes to a few megabytes, so only
/// a runaway or hostile client meets it, and one repository cannot fill the server's disk.
pub const DEFAULT_MAX_REPO_BYTES: u64 = 1 << 30;
/// 64 MiB of current entries per repository: hundreds of the largest entries, far more than a
/// team's memory holds, and what one full pull can be asked to carry (the storage cap alone
/// would let a repository's pull reach 1 GiB, built in memory for each teammate).
pub const DEFAULT_MAX_LIVE_BYTES: u64 = 64 << 20;
/// 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 4 * 1024 * 1024;

/// 64 bodies of up to 4 MiB: at most 256 MiB held for requests being read or handled.
pub const DEFAULT_MAX_BODIES_IN_MEMORY: usize = 64;

/// Full pulls built at once. A pull that finds its copy current is a 304 (or `view=hashes`)
/// and is not counted, so this only paces teammates fetching changed memory together.
pub const DEFAULT_MAX_FULL_PULLS: usize = 8;

impl ServerConfig {
    pub fn new(database: DatabaseUrl) -> ServerConfig {
        ServerConfig {
            database,
            public_url: None,
            max_entries: DEFAULT_MAX_ENTRIES,
            max_repo_bytes: DEFAULT_MAX_REPO_BYTES,
            max_live_bytes: DEFAULT_MAX_LIVE_BYTES,
            max_entry_bytes: mneme_team_proto::wire::MAX_FILE_SIZE_BYTES,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            rate_limit: None,
            access_token_ttl: Duration::from_secs(3600),
            refresh_token_ttl: Duration::from_secs(30 * 24 * 3600),
            device_code_ttl: Duration::from_secs(15 * 60),
            device_poll_interval: Duration::from_secs(5),
            sign_in_lifetime: Duration::from_secs(90 * 24 * 3600),
            client_ids: vec![mneme_team_proto::server_wire::CLIENT_ID.to_string()],
            sign_in_limits: SignInLimits::default(),
            header_read_timeout: Duration::from_secs(10),
            // 4 MiB in 30 s is about 1 Mbit/s: slower than any client that means it.
            body_read_timeout: Duration::from_secs(30),
            max_bodies_in_memory: DEFAULT_MAX_BODIES_IN_MEMORY,
            max_full_pulls: DEFAULT_MAX_FULL_PULLS,
            // As long as a body may take to arrive: a request in flight gets its time.
            shutdown_grace: Duration::from_secs(30),
            clock: Arc::new(SystemClock),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_redacts_database_urls() {
        assert_eq!("sqlite:/tmp/a.db".parse::<DatabaseUrl>().unwrap(), DatabaseUrl::Sqlite("/tmp/a.db".into()));
        assert_eq!("sqlite:///tmp/a.db".parse::<DatabaseUrl>().unwrap(), DatabaseUrl::Sqlite("/tmp/a.db".into()));
        assert_eq!("sqlite:rel.db".parse::<DatabaseUrl>().unwrap(), DatabaseUrl::Sqlite("rel.db".into()));
        let pg: DatabaseUrl = "postgres://mneme:secret@127.0.0.1:5433/db".parse().unwrap();
        assert_eq!(pg.redacted(), "postgres://mneme:***@127.0.0.1:5433/db");
        // A password holding `@`, or given as a parameter, is hidden whole.
        let pg: DatabaseUrl = "postgres://u:p@ss@db.internal/x?sslmode=require&password=s3cret".parse().unwrap();
        let shown = pg.redacted();
        assert!(!shown.contains("ss@") && !shown.contains("s3cret"), "{shown}");
        assert_eq!(shown, "postgres://u:***@db.internal/x?sslmode=require&password=***");
        assert!("mysql://x".parse::<DatabaseUrl>().is_err());
        assert!("sqlite:".parse::<DatabaseUrl>().is_err());
    }
}
