//! Storage behind one trait, so the HTTP layer never sees SQL.
//!
//! [`SqlStore`] implements it for SQLite (embedded, WAL, the default) and PostgreSQL (several
//! server replicas behind a load balancer). Both keep the same tables. Every write to team
//! memory goes through [`Store::write`]: inside one database transaction the repository row
//! is locked (PostgreSQL `SELECT … FOR UPDATE`; SQLite's single write lock), the current
//! state is read, the caller decides, and the resulting [`Commit`] lands only if the
//! repository is still at the version that was read (`UPDATE repos … WHERE version =
//! expected`). Concurrency control therefore lives in the database, and replicas need no
//! shared memory.

mod sql;

pub use sql::{SqlStore, SCHEMA_VERSION};

use async_trait::async_trait;

/// What a grant lets a user do in one repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Pull, push and read history.
    Member,
    /// A member who may also remove entries and roll them back.
    Lead,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Lead => "lead",
        }
    }

    fn parse(s: &str) -> Role {
        // Only the two values this crate writes exist; anything else is read as the weaker role.
        if s == "lead" {
            Role::Lead
        } else {
            Role::Member
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} already exists.")]
    AlreadyExists(String),
    #[error("The database failed: {0}. Check that the database is reachable and its disk is not full.")]
    Database(#[from] sqlx::Error),
    #[error(
        "The database's schema is version {found}, newer than this mneme-server knows (version {supported}): a newer mneme-server migrated it. Run that newer mneme-server, or restore the backup made before the upgrade to run this one."
    )]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("Could not open the database {url}: {source}. Check the --db URL and that the file's folder exists and is writable (or the PostgreSQL server accepts the credentials).")]
    Connect {
        url: String,
        #[source]
        source: sqlx::Error,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct User {
    pub id: i64,
    pub name: String,
    pub password_hash: String,
    /// Set by `admin disable-user`: the user can neither sign in nor use a token.
    pub disabled_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Repo {
    pub id: i64,
    pub team: String,
    /// `owner/name` as it was granted; lookups ignore case, as GitHub does.
    pub slug: String,
    /// 0 until the first write: such a repository answers 404 ("no data yet").
    pub version: i64,
    pub checksum: String,
    pub last_modified_ms: i64,
    /// Overrides the server-wide cap when set.
    pub max_entries: Option<i64>,
    /// How many keys are live (not tombstones): kept in the row so that a write checks the
    /// entry cap without counting the repository.
    pub live_entries: i64,
    /// Overrides the server-wide storage cap when set.
    pub max_bytes: Option<i64>,
    /// UTF-8 bytes of content in this repository's history (every version ever written,
    /// removed ones included): kept in the row for the storage cap. The current entries hold
    /// at most as much again, so the disk a repository takes is bounded by about twice this.
    pub history_bytes: i64,
    /// UTF-8 bytes of the live entries' content: what a full pull carries. Kept in the row for
    /// the live-content cap, as `live_entries` is for the entry cap.
    pub live_bytes: i64,
    /// Overrides the server-wide live-content cap when set.
    pub max_live_bytes: Option<i64>,
}

/// The result of [`Store::access`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub user_id: i64,
    /// `None` when no repository has that name.
    pub repo: Option<Repo>,
    /// `None` when the user has no grant for it.
    pub role: Option<Role>,
}

/// One key's current state.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct EntryState {
    #[sqlx(rename = "entry_key")]
    pub key: String,
    pub checksum: String,
    /// Empty unless the snapshot was taken with content (queries without it leave the column out).
    #[sqlx(default)]
    pub content: String,
    #[sqlx(try_from = "IntFlag")]
    pub deleted: bool,
    /// When the key last changed (for a tombstone: when it was deleted), epoch ms.
    pub changed_ms: i64,
    /// UTF-8 bytes of the content; read for a write's keys only (0 elsewhere).
    #[sqlx(default)]
    pub bytes: i64,
}

/// What a write decides on: the repository row (read under its write lock) and the current
/// state of only the keys the write names, so that its cost does not grow with the repository.
#[derive(Debug, Clone)]
pub struct WriteView {
    pub repo: Repo,
    /// The named keys that exist (live or tombstoned), sorted by key; content is not read.
    pub entries: Vec<EntryState>,
    /// Live keys, named or not, that a named key not live now would collide with once case
    /// is folded away ([`mneme_team_proto::keys::case_fold`]): the same folding, a folder
    /// above it, or a key under it. Sorted.
    pub neighbors: Vec<String>,
}

/// A repository and its keys read in one consistent snapshot.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub repo: Repo,
    /// Live entries and tombstones, sorted by key.
    pub entries: Vec<EntryState>,
}

/// One key's new state in a commit.
#[derive(Debug, Clone)]
pub struct Change {
    pub key: String,
    pub content: String,
    pub checksum: String,
    pub deleted: bool,
    /// Erase every earlier version of the key from history and its content from the
    /// tombstone (a lead's purge of a leaked secret); implies `deleted`.
    pub purge: bool,
}

/// A write to one repository that lands only if nobody wrote since `expected_version`.
#[derive(Debug, Clone)]
pub struct Commit {
    pub expected_version: i64,
    pub version: i64,
    pub checksum: String,
    pub now_ms: i64,
    pub author: Option<i64>,
    /// Live keys after the commit.
    pub live_entries: i64,
    /// The repository's history bytes after the commit's new versions; a removal's or a
    /// purge's change to them is counted by the store, which knows the content they touch.
    pub history_bytes: i64,
    /// Bytes of live content after the commit.
    pub live_bytes: i64,
    pub changes: Vec<Change>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOutcome {
    Committed,
    /// The decision was to write nothing.
    Declined,
    /// Someone else committed first; re-read and decide again. The row lock makes this
    /// unreachable in practice; the version check stays as the guarantee.
    VersionMoved,
}

/// Looks at the current state of the named keys (without content) and returns the commits to
/// make, in order (each `expected_version` the previous one's `version`), or none to write
/// nothing. Several commits land in one transaction: a group commit.
pub type Decide<'a> = dyn FnMut(&WriteView) -> Vec<Commit> + Send + 'a;

/// What a history prune removed (or, on a dry run, would remove).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pruned {
    /// History rows (versions of keys) removed.
    pub versions: i64,
    /// UTF-8 bytes of content they held: what the storage cap gets back.
    pub bytes: i64,
}

/// One version of one key, for audit and rollback.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct HistoryRow {
    /// The repository version this change created.
    pub version: i64,
    pub checksum: String,
    pub author: Option<String>,
    pub at_ms: i64,
    #[sqlx(try_from = "IntFlag")]
    pub deleted: bool,
    /// For a deletion, the content that was removed.
    pub content: String,
}

/// A key's newest version, without content: one row of [`Store::latest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatestRow {
    pub key: String,
    /// The repository version the key's newest change created.
    pub version: i64,
    pub checksum: String,
    pub author: Option<String>,
    pub at_ms: i64,
    /// The newest change removed the key (a tombstone).
    pub deleted: bool,
    /// How many versions of the key history keeps.
    pub versions: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Access,
    Refresh,
}

impl TokenKind {
    fn as_str(self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
        }
    }
}

/// The `kind` column as stored: anything but `refresh` is read as the weaker access token.
impl From<String> for TokenKind {
    fn from(s: String) -> TokenKind {
        if s == "refresh" {
            TokenKind::Refresh
        } else {
            TokenKind::Access
        }
    }
}

/// A token as stored: only its SHA-256 is kept, never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenRow {
    pub hash: String,
    #[sqlx(try_from = "String")]
    pub kind: TokenKind,
    pub user_id: i64,
    /// Every token issued from one sign-in shares a family, so a replayed refresh token can
    /// revoke the whole chain.
    pub family: String,
    pub created_ms: i64,
    pub expires_ms: i64,
    pub revoked_ms: Option<i64>,
}

/// What presenting a refresh token did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshUse {
    /// It was live and is now spent; issue its successors.
    Spent { user_id: i64, family: String },
    /// It had been spent already: somebody replayed it.
    Replayed { family: String },
    /// Unknown, expired or revoked.
    Invalid,
}

/// One sign-in: the device sign-in (or admin-minted token) that started a token family.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SignInRow {
    pub family: String,
    pub user_id: i64,
    /// The user's name (filled in when listing).
    #[sqlx(rename = "user_name")]
    pub user: String,
    /// The `client_id` the device sign-in named, or `admin-token` for `admin token`.
    pub client_id: String,
    pub created_ms: i64,
    /// The last refresh (or the sign-in itself).
    pub last_used_ms: i64,
    /// When the family's newest token expires.
    pub expires_ms: i64,
    pub revoked_ms: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceStatus {
    Pending,
    Approved,
    Denied,
    /// Tokens were issued; the code cannot be used again.
    Used,
}

impl DeviceStatus {
    fn as_str(self) -> &'static str {
        match self {
            DeviceStatus::Pending => "pending",
            DeviceStatus::Approved => "approved",
            DeviceStatus::Denied => "denied",
            DeviceStatus::Used => "used",
        }
    }

}

/// The `status` column as stored; an unknown value is read as still pending (never approved).
impl From<String> for DeviceStatus {
    fn from(s: String) -> DeviceStatus {
        match s.as_str() {
            "approved" => DeviceStatus::Approved,
            "denied" => DeviceStatus::Denied,
            "used" => DeviceStatus::Used,
            _ => DeviceStatus::Pending,
        }
    }
}

/// A 0/1 flag column. The schema keeps flags as integers, which SQLite and PostgreSQL store
/// alike, so rows read it as an integer and turn it into a `bool` here.
#[derive(sqlx::Type)]
#[sqlx(transparent)]
struct IntFlag(i64);

impl From<IntFlag> for bool {
    fn from(f: IntFlag) -> bool {
        f.0 != 0
    }
}

/// A device authorization request (RFC 8628).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DeviceRow {
    pub code_hash: String,
    /// Normalized: upper case, no separator.
    pub user_code: String,
    pub client_id: String,
    pub scope: String,
    pub created_ms: i64,
    pub expires_ms: i64,
    pub interval_s: i64,
    pub last_poll_ms: Option<i64>,
    #[sqlx(try_from = "String")]
    pub status: DeviceStatus,
    pub user_id: Option<i64>,
}

#[async_trait]
pub trait Store: Send + Sync {
    /// A round trip to the database.
    async fn ping(&self) -> Result<(), StoreError>;
    async fn create_team(&self, name: &str, now_ms: i64) -> Result<(), StoreError>;
    async fn team_names(&self) -> Result<Vec<String>, StoreError>;
    async fn create_user(&self, name: &str, password_hash: &str, now_ms: i64) -> Result<i64, StoreError>;
    async fn user_by_name(&self, name: &str) -> Result<Option<User>, StoreError>;
    async fn user_by_id(&self, id: i64) -> Result<Option<User>, StoreError>;

    async fn repo_by_slug(&self, slug: &str) -> Result<Option<Repo>, StoreError>;
    /// Everything one API request needs, in one round trip: the user behind a live access
    /// token (`None` if it is not live) and the repository `slug` with that user's role in it.
    async fn access(&self, token_hash: &str, slug: &str, now_ms: i64) -> Result<Option<Access>, StoreError>;
    /// Registers `slug` under `team` with no data yet (version 0, `empty_checksum`).
    async fn create_repo(&self, team: &str, slug: &str, empty_checksum: &str) -> Result<Repo, StoreError>;
    async fn set_max_entries(&self, repo_id: i64, max: Option<i64>) -> Result<(), StoreError>;
    async fn set_max_bytes(&self, repo_id: i64, max: Option<i64>) -> Result<(), StoreError>;
    async fn set_max_live_bytes(&self, repo_id: i64, max: Option<i64>) -> Result<(), StoreError>;
    async fn set_grant(&self, user_id: i64, repo_id: i64, role: Role) -> Result<(), StoreError>;
    async fn role(&self, user_id: i64, repo_id: i64) -> Result<Option<Role>, StoreError>;
    async fn repos_for_user(&self, user_id: i64) -> Result<Vec<(Repo, Role)>, StoreError>;

    /// The repository row and every key (with content when `with_content`), read consistently.
    async fn snapshot(&self, repo_id: i64, with_content: bool) -> Result<Option<Snapshot>, StoreError>;
    /// Reads the repository row under its write lock and the current state of `keys` (and
    /// nothing else), asks `decide`, and commits its answer (every commit, in order) in the
    /// same transaction.
    /// `Ok(None)` when the repository does not exist.
    async fn write(&self, repo_id: i64, keys: &[&str], decide: &mut Decide<'_>) -> Result<Option<CommitOutcome>, StoreError>;
    /// One key's current state (without content), `None` when it never existed.
    async fn entry(&self, repo_id: i64, key: &str) -> Result<Option<EntryState>, StoreError>;
    /// Newest first.
    /// A key's versions older than `before`, newest first, at most `limit` of them.
    async fn history(&self, repo_id: i64, key: &str, before: i64, limit: i64) -> Result<Vec<HistoryRow>, StoreError>;
    async fn history_version(&self, repo_id: i64, key: &str, version: i64) -> Result<Option<HistoryRow>, StoreError>;
    /// Every key's newest history row (tombstones included) in one query, sorted by key in
    /// byte order: what the Team screen lists, without one history request per key.
    async fn latest(&self, repo_id: i64) -> Result<Vec<LatestRow>, StoreError>;
    /// Removes each key's history versions beyond its `keep` newest that were written before
    /// `before_ms`, under the repository's write lock, and gives their bytes back to the
    /// storage cap; live entries and tombstones are not touched. With `dry_run` it only
    /// counts. `None` when the repository does not exist.
    async fn prune_history(&self, repo_id: i64, keep: i64, before_ms: i64, dry_run: bool) -> Result<Option<Pruned>, StoreError>;

    async fn insert_token(&self, token: &TokenRow) -> Result<(), StoreError>;
    async fn token(&self, hash: &str) -> Result<Option<TokenRow>, StoreError>;
    /// Atomically spends a live refresh token (only one concurrent caller can win).
    async fn use_refresh(&self, hash: &str, now_ms: i64) -> Result<RefreshUse, StoreError>;
    async fn revoke_family(&self, family: &str, now_ms: i64) -> Result<(), StoreError>;
    /// Revokes every live token of `user_id`; returns how many sign-ins that ended.
    async fn revoke_user_tokens(&self, user_id: i64, now_ms: i64) -> Result<u64, StoreError>;
    async fn insert_sign_in(&self, sign_in: &SignInRow) -> Result<(), StoreError>;
    /// Records a refresh in `family`: its last use and its newest token's expiry.
    async fn touch_sign_in(&self, family: &str, now_ms: i64, expires_ms: i64) -> Result<(), StoreError>;
    async fn sign_in(&self, family: &str) -> Result<Option<SignInRow>, StoreError>;
    /// Sign-ins of one user (`user_id`), or of everyone granted `repo_id`; newest first.
    async fn sign_ins(&self, user_id: Option<i64>, repo_id: Option<i64>) -> Result<Vec<SignInRow>, StoreError>;
    /// Removes a grant; false when there was none.
    async fn delete_grant(&self, user_id: i64, repo_id: i64) -> Result<bool, StoreError>;
    /// Disables (`Some(now)`) or re-enables (`None`) a user.
    async fn set_disabled(&self, user_id: i64, disabled_ms: Option<i64>) -> Result<(), StoreError>;

    async fn insert_device(&self, device: &DeviceRow) -> Result<(), StoreError>;
    /// Device requests still waiting for a decision (pending and unexpired).
    async fn live_devices(&self, now_ms: i64) -> Result<i64, StoreError>;
    async fn device_by_user_code(&self, user_code: &str) -> Result<Option<DeviceRow>, StoreError>;
    async fn device_by_code_hash(&self, code_hash: &str) -> Result<Option<DeviceRow>, StoreError>;
    async fn record_poll(&self, code_hash: &str, now_ms: i64, interval_s: i64) -> Result<(), StoreError>;
    /// Approves (with the user) or denies a pending, unexpired request; false if it was not pending.
    async fn decide_device(&self, user_code: &str, user_id: Option<i64>, now_ms: i64) -> Result<bool, StoreError>;
    /// Marks an approved request used; false if someone else already did (single use).
    async fn take_device(&self, code_hash: &str) -> Result<bool, StoreError>;
    /// Forgets device requests and tokens that expired before `before_ms`.
    async fn purge_expired(&self, before_ms: i64) -> Result<(), StoreError>;
}
