//! The sync server's own endpoints beyond Claude Code's API: device sign-in (OAuth 2.0 device
//! authorization grant, RFC 8628, with rotating refresh tokens) and the lead API behind the
//! Mneme app's Team screen. `mneme-team-server` serves these; the app and tests call them.

use serde::{Deserialize, Serialize};

/// The `client_id` Mneme's app signs in as; the server allows it unless configured otherwise.
pub const CLIENT_ID: &str = "mneme";

/// `POST /oauth/device/code` (form: `client_id`, `scope`).
pub const DEVICE_CODE_PATH: &str = "/oauth/device/code";
/// `POST /oauth/token` (form: `grant_type`, and `device_code` + `client_id` or `refresh_token`).
pub const TOKEN_PATH: &str = "/oauth/token";
/// The page where a person enters the user code and signs in.
pub const DEVICE_PAGE_PATH: &str = "/device";
/// `grant_type` for polling with a device code.
pub const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// `grant_type` for exchanging a refresh token.
pub const REFRESH_TOKEN_GRANT: &str = "refresh_token";

/// `GET /api/mneme/me`.
pub const ME_PATH: &str = "/api/mneme/me";
/// `GET …?repo=&key=`: a key's versions, newest first.
pub const HISTORY_PATH: &str = "/api/mneme/team_memory/history";
/// `GET …?repo=`: every key's newest version (tombstones included), without contents.
pub const LATEST_PATH: &str = "/api/mneme/team_memory/latest";
/// `POST …?repo=` with [`RollbackRequest`] (lead only).
pub const ROLLBACK_PATH: &str = "/api/mneme/team_memory/rollback";
/// `DELETE …?repo=&key=` (lead only): leaves a tombstone clients honour.
pub const ENTRY_PATH: &str = "/api/mneme/team_memory/entry";
/// `POST …?repo=` with [`PurgeRequest`] (lead only): removes a key for everyone and erases
/// every earlier version of it from history (a leaked secret).
pub const PURGE_PATH: &str = "/api/mneme/team_memory/purge";
/// `GET …?repo=` (lead only): the sign-ins of everyone granted the repository.
pub const SIGN_INS_PATH: &str = "/api/mneme/team_memory/sign_ins";
/// `GET`: 200 `ok` while the server and its database answer.
pub const HEALTH_PATH: &str = "/healthz";

/// RFC 8628 §3.2 device authorization response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCodeResponse {
    pub device_code: String,
    /// Shown to the person, e.g. `WDJB-MJHT`.
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: String,
    /// Seconds until the codes expire.
    pub expires_in: u64,
    /// Minimum seconds between token polls.
    pub interval: u64,
}

/// RFC 6749 §5.1 token response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenResponse {
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: String,
    /// Seconds the access token lives.
    pub expires_in: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// RFC 6749 §5.2 / RFC 8628 §3.5 error (status 400): `authorization_pending`, `slow_down`,
/// `access_denied`, `expired_token`, `invalid_grant`, `invalid_request`, `unsupported_grant_type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthError {
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_description: Option<String>,
}

/// A user's role in one repository.
///
/// Read leniently: a role a newer server adds is [`RepoRole::Newer`] rather than making the
/// whole `me` answer unreadable, and a client grants it no more than a member's rights
/// ([`RepoRole::acting_as`]), since what the new role allows is unknown here. The server is
/// what enforces roles, and it reads no role from a request: it never meets `Newer`, and its
/// strict reading of write requests (`StrictPut`, rollback, purge) stays as it is, because
/// failing a request it would not fully honour is a security property, not a version concern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RepoRole {
    Member,
    Lead,
    /// A role this build does not know, sent by a newer server. Never sent by this build's
    /// server (serializing it fails).
    #[serde(other, skip_serializing)]
    Newer,
}

impl RepoRole {
    /// The role a client acts on: a [`Newer`](RepoRole::Newer) one as a member, the least
    /// privilege (the lead actions stay hidden; the server would refuse them anyway if the role
    /// does not allow them).
    pub fn acting_as(self) -> RepoRole {
        match self {
            RepoRole::Newer => RepoRole::Member,
            known => known,
        }
    }
}

/// `GET /api/mneme/me`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeResponse {
    pub user: String,
    pub repos: Vec<RepoAccess>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoAccess {
    /// `owner/name`.
    pub repo: String,
    pub team: String,
    pub role: RepoRole,
    /// 0 while the repository has no data.
    pub version: u64,
    pub max_entries: u64,
    /// UTF-8 bytes of the repository's history, every version kept (Mneme's server; absent
    /// from older ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_bytes: Option<u64>,
    /// The storage cap on `stored_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

/// `GET /api/mneme/team_memory/history`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResponse {
    pub repo: String,
    pub key: String,
    /// Newest first; at most the page asked for (`limit`, 100 by default).
    pub versions: Vec<EntryVersion>,
    /// When older versions exist: the version to pass as `before` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_before: Option<u64>,
}

/// The versions one history request returns when it does not say (`limit`).
pub const HISTORY_PAGE: u64 = 100;

/// The most one history request returns: each version carries its whole content (up to
/// 250,000 bytes), so an unbounded list could make the server hold gigabytes per request.
pub const MAX_HISTORY_PAGE: u64 = 500;

/// One change to one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryVersion {
    /// The repository version this change created; pass it to rollback.
    pub version: u64,
    /// `sha256:<hex>` of `content`.
    pub checksum: String,
    /// The user who made the change; `None` for changes made by the admin command line.
    pub author: Option<String>,
    /// ISO 8601 with milliseconds.
    pub time: String,
    /// A deletion; `content` is what was removed.
    pub deleted: bool,
    pub content: String,
}

/// `GET /api/mneme/team_memory/latest`: the newest change of every key in one answer, so a
/// listing does not need one history request per key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LatestResponse {
    pub repo: String,
    /// Sorted by key in byte order; removed keys are included with `deleted` set.
    pub entries: Vec<LatestEntry>,
}

/// One key's newest change: [`EntryVersion`] without the content, plus how many versions
/// the key has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LatestEntry {
    pub key: String,
    /// The repository version the change created.
    pub version: u64,
    /// `sha256:<hex>` of the content (for a deletion, of what was removed).
    pub checksum: String,
    /// The user who made the change; `None` for changes made by the admin command line.
    pub author: Option<String>,
    /// ISO 8601 with milliseconds.
    pub time: String,
    /// The newest change removed the key.
    pub deleted: bool,
    /// How many versions the key's history holds.
    pub versions: u64,
}

/// `POST /api/mneme/team_memory/rollback` body: make `key` what it was at `version` (a new
/// version is written; history is never rewritten).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RollbackRequest {
    pub key: String,
    pub version: u64,
}

/// `POST /api/mneme/team_memory/purge` body. Unlike rollback and removal this rewrites
/// history: afterwards the key's history holds only the purge itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgeRequest {
    pub key: String,
}

/// `GET /api/mneme/team_memory/sign_ins`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInsResponse {
    pub repo: String,
    /// Newest first.
    pub sign_ins: Vec<SignIn>,
}

/// One sign-in (a device sign-in, or a token an admin minted) and the tokens it led to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignIn {
    pub user: String,
    /// The `client_id` the device sign-in named; `admin-token` for `mneme-server admin token`.
    pub client_id: String,
    /// ISO 8601 with milliseconds.
    pub created: String,
    /// The last token refresh (or the sign-in itself).
    pub last_used: String,
    /// When its newest token expires.
    pub expires: String,
    /// When it was revoked (signed out elsewhere, a replayed refresh token, or an admin).
    pub revoked: Option<String>,
}

/// The body of the `?view=hashes` answer as this server sends it: Claude Code's
/// [`crate::wire::TeamMemoryHashes`] plus the tombstones, which 2.1.197's client also reads
/// from the probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HashesWithTombstones {
    #[serde(flatten)]
    pub hashes: crate::wire::TeamMemoryHashes,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_entries: Option<std::collections::BTreeMap<String, i64>>,
}
