//! Team memory semantics, independent of HTTP: reads, upserting writes with preconditions,
//! soft deletes, the entry cap, history and rollback.
//!
//! Every write reads the repository under its write lock in the database, decides (checking
//! the caller's `If-Match` against that state), and commits in the same transaction, so a
//! write is acknowledged only after its own commit and never overwrites a commit it did not
//! see. The commit also checks that the version is still the one read; should it ever have
//! moved, the write starts over from a fresh read.

use crate::checksum::{entry_checksum, repo_checksum};
use crate::store::{Change, Commit, CommitOutcome, EntryState, Repo, Snapshot, Store, StoreError};
use mneme_core::Clock;
use std::collections::BTreeMap;
use std::sync::Arc;

/// An `If-Match` / `If-None-Match` header: `*` or a list of entity tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntityTags {
    Any,
    /// Tags without quotes; weak tags keep their `W/` prefix.
    List(Vec<String>),
}

impl EntityTags {
    pub fn parse(header: &str) -> EntityTags {
        if header.trim() == "*" {
            return EntityTags::Any;
        }
        let tags = header
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| match t.strip_prefix("W/") {
                Some(weak) => format!("W/{}", weak.trim_matches('"')),
                None => t.trim_matches('"').to_string(),
            })
            .collect();
        EntityTags::List(tags)
    }

    /// `If-Match` uses the strong comparison (RFC 9110 §13.1.1): weak tags never match.
    fn matches_strong(&self, checksum: &str, exists: bool) -> bool {
        match self {
            EntityTags::Any => exists,
            EntityTags::List(tags) => exists && tags.iter().any(|t| t == checksum),
        }
    }

    /// `If-None-Match` uses the weak comparison (RFC 9110 §13.1.2).
    pub fn matches_weak(&self, checksum: &str) -> bool {
        match self {
            EntityTags::Any => true,
            EntityTags::List(tags) => tags.iter().any(|t| t.strip_prefix("W/").unwrap_or(t) == checksum),
        }
    }
}

/// One requested change to a key.
#[derive(Debug, Clone)]
pub enum Op {
    Upsert { key: String, content: String },
    /// A soft delete: the key becomes a tombstone clients honour. Deleting a key that is not
    /// live changes nothing.
    Delete { key: String },
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("The repository changed since the checksum in If-Match. Pull, then push again.")]
    PreconditionFailed,
    #[error("This push would leave {received} entries; the limit for this repository is {max}. Remove or consolidate memory files.")]
    TooManyEntries { max: u64, received: u64 },
    #[error("The repository is too busy to take this write now; try again.")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a successful write leaves behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub version: i64,
    pub checksum: String,
    pub last_modified_ms: i64,
    /// False when every op was already in effect (nothing was committed).
    pub changed: bool,
}

/// Bounds the start-overs after a moved version (each one means another writer made progress).
const MAX_ATTEMPTS: usize = 64;

#[derive(Clone)]
pub struct Memory {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub default_max_entries: u64,
}

impl Memory {
    pub fn now_ms(&self) -> i64 {
        i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX)
    }

    pub fn max_entries(&self, repo: &Repo) -> u64 {
        repo.max_entries.and_then(|m| u64::try_from(m).ok()).unwrap_or(self.default_max_entries)
    }

    pub async fn snapshot(&self, repo: &Repo, with_content: bool) -> Result<Option<Snapshot>, StoreError> {
        self.store.snapshot(repo.id, with_content).await
    }

    /// Applies `ops` atomically if `precondition` (an `If-Match`) holds.
    pub async fn write(
        &self,
        repo: &Repo,
        author: Option<i64>,
        precondition: Option<&EntityTags>,
        ops: &[Op],
    ) -> Result<Written, WriteError> {
        for _ in 0..MAX_ATTEMPTS {
            let mut result: Option<Result<Written, WriteError>> = None;
            let mut decide = |snap: &Snapshot| {
                let current = &snap.repo;
                if let Some(tags) = precondition {
                    if !tags.matches_strong(&current.checksum, current.version > 0) {
                        result = Some(Err(WriteError::PreconditionFailed));
                        return None;
                    }
                }
                // Never earlier than the last change, so lastModified only moves forward.
                let now = self.now_ms().max(current.last_modified_ms);
                let plan = plan(&snap.entries, ops, now);
                if plan.changes.is_empty() {
                    result = Some(Ok(Written {
                        version: current.version,
                        checksum: current.checksum.clone(),
                        last_modified_ms: current.last_modified_ms,
                        changed: false,
                    }));
                    return None;
                }
                let max = self.max_entries(current);
                let live_before = snap.entries.iter().filter(|e| !e.deleted).count() as u64;
                // The cap stops growth; a repository already over a lowered cap can still be
                // edited and shrunk.
                if plan.live_after > max && plan.live_after > live_before {
                    result = Some(Err(WriteError::TooManyEntries { max, received: plan.live_after }));
                    return None;
                }
                let version = current.version + 1;
                result = Some(Ok(Written {
                    version,
                    checksum: plan.checksum.clone(),
                    last_modified_ms: now,
                    changed: true,
                }));
                Some(Commit {
                    expected_version: current.version,
                    version,
                    checksum: plan.checksum,
                    now_ms: now,
                    author,
                    changes: plan.changes,
                })
            };
            let outcome = self.store.write(repo.id, &mut decide).await?;
            match outcome {
                None => return Err(StoreError::Database(sqlx::Error::RowNotFound).into()),
                Some(CommitOutcome::VersionMoved) => continue,
                Some(CommitOutcome::Committed | CommitOutcome::Declined) => {
                    return result.unwrap_or(Err(WriteError::Contended));
                }
            }
        }
        Err(WriteError::Contended)
    }
}

struct Plan {
    changes: Vec<Change>,
    live_after: u64,
    checksum: String,
}

/// The changes `ops` make to `entries` at time `now`, the number of live keys afterwards and
/// the repository checksum afterwards.
fn plan(entries: &[EntryState], ops: &[Op], now: i64) -> Plan {
    // key → (checksum, deleted, changed_ms)
    let mut state: BTreeMap<String, (String, bool, i64)> =
        entries.iter().map(|e| (e.key.clone(), (e.checksum.clone(), e.deleted, e.changed_ms))).collect();
    // One change per key: the last op on a key wins.
    let mut changes: BTreeMap<String, Change> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Upsert { key, content } => {
                let checksum = entry_checksum(content);
                if matches!(state.get(key), Some((c, false, _)) if *c == checksum) {
                    continue;
                }
                changes.insert(
                    key.clone(),
                    Change { key: key.clone(), content: content.clone(), checksum: checksum.clone(), deleted: false },
                );
                state.insert(key.clone(), (checksum, false, now));
            }
            Op::Delete { key } => {
                let Some((checksum, false, _)) = state.get(key).cloned() else { continue };
                // The store keeps a stored key's removed content itself; a key created earlier
                // in this same write has only the content it was given here.
                let content = changes.remove(key).map(|c| c.content).unwrap_or_default();
                changes.insert(key.clone(), Change { key: key.clone(), content, checksum: checksum.clone(), deleted: true });
                state.insert(key.clone(), (checksum, true, now));
            }
        }
    }
    let live_after = state.values().filter(|(_, deleted, _)| !deleted).count() as u64;
    let checksum = repo_checksum(
        state.iter().filter(|(_, (_, d, _))| !d).map(|(k, (c, _, _))| (k.as_str(), c.as_str())),
        state.iter().filter(|(_, (_, d, _))| *d).map(|(k, (_, _, ms))| (k.as_str(), *ms)),
    );
    Plan { changes: changes.into_values().collect(), live_after, checksum }
}
