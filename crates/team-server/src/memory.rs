//! Team memory semantics, independent of HTTP: reads, upserting writes with preconditions,
//! soft deletes, the entry cap, history and rollback.
//!
//! Every write reads the repository row under its write lock in the database, with the
//! current state of only the keys it names, decides (checking the caller's `If-Match` against
//! the row's checksum), and commits in the same transaction, so a write is acknowledged only
//! after its own commit and never overwrites a commit it did not see. Nothing a write does
//! depends on the size of the repository: the row carries the checksum (a chain, see
//! [`crate::checksum`]) and the number of live keys. The commit also checks that the version
//! is still the one read; should it ever have moved, the write starts over from a fresh read.

use crate::checksum::{entry_checksum, next_repo_checksum};
use crate::store::{Change, Commit, CommitOutcome, Repo, Snapshot, Store, StoreError, WriteView};
use crate::store::EntryState;
use mneme_core::Clock;
use mneme_team_proto::keys::case_fold;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

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
    pub fn matches_strong(&self, checksum: &str, exists: bool) -> bool {
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
    /// A delete that also erases every earlier version from history (a leaked secret). It
    /// always commits, even for a key already removed, so clients see a fresh tombstone.
    Purge { key: String },
}

impl Op {
    pub fn key(&self) -> &str {
        match self {
            Op::Upsert { key, .. } | Op::Delete { key } | Op::Purge { key } => key,
        }
    }
}

/// Who may do what in one write: a member may add and change entries, only a lead may take
/// them away from everyone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    Member,
    Lead,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("The repository changed since the checksum in If-Match. Pull, then push again.")]
    PreconditionFailed,
    #[error("This push would leave {received} entries; the limit for this repository is {max}. Remove or consolidate memory files.")]
    TooManyEntries { max: u64, received: u64 },
    #[error(
        "This push would take the repository's stored memory (every version ever pushed) to {would} bytes; its limit is {max} bytes. Ask a lead to purge entries that are no longer needed, or the server's admin to drop old versions (`mneme-server admin prune-history`) or raise the limit (`mneme-server admin set-max-bytes`)."
    )]
    StorageFull { max: u64, would: u64 },
    #[error(
        "This push would make the repository's current memory {would} bytes, which every teammate's pull carries whole; its limit is {max} bytes. Remove or shorten entries (a lead can remove them for everyone), or ask the server's admin to raise the limit (`mneme-server admin set-max-live-bytes`)."
    )]
    ContentFull { max: u64, would: u64 },
    #[error("The repository is too busy to take this write now; try again.")]
    Contended,
    #[error("Only a lead can remove {key:?} for everyone. Restore the file (the next pull brings it back) or ask a lead to remove it.")]
    LeadRequired { key: String },
    #[error("A lead removed {key:?} for everyone, and only a lead can bring it back. Save the text under another name, or ask a lead to restore it.")]
    RemovedByLead { key: String },
    #[error("There is no entry {key:?} to purge.")]
    NoSuchEntry { key: String },
    #[error("{}", collision_message(key, other, *how))]
    KeyCollision { key: String, other: String, how: Collision },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn collision_message(key: &str, other: &str, how: Collision) -> String {
    let why = match how {
        Collision::Case => format!(
            "{key:?} differs from {other:?} only in letter case, and on a case-insensitive disk (macOS, Windows) the two are one file, so teammates' pulls would write one over the other"
        ),
        Collision::FileAbove => format!("{key:?} would need a folder where {other:?} is a file"),
        Collision::FilesBelow => format!("{key:?} would be a file where {other:?} needs a folder"),
    };
    format!("{why}. Nothing in this request was written: rename the file, or ask a lead to remove {other:?}, and push again.")
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
/// The most writes one group commit takes.
const MAX_BATCH: usize = 128;
/// The most keys one group commit names (a write naming more goes alone): one transaction
/// holds the lock for every key it names, and on SQLite other repositories' writes wait for it.
const MAX_GROUP_OPS: usize = mneme_team_proto::wire::MAX_PUT_ENTRIES;

/// How many of the queued writes, naming `ops` keys each in queue order, the next group takes:
/// at least one, at most [`MAX_BATCH`], and no more keys than [`MAX_GROUP_OPS`] together.
fn group_len(ops: impl Iterator<Item = usize>) -> usize {
    let (mut n, mut total) = (0, 0usize);
    for count in ops.take(MAX_BATCH) {
        total = total.saturating_add(count);
        if n > 0 && total > MAX_GROUP_OPS {
            break;
        }
        n += 1;
    }
    n
}

/// One write waiting for its repository's next group commit.
struct Pending {
    author: Option<i64>,
    permission: Permission,
    precondition: Option<EntityTags>,
    ops: Vec<Op>,
    reply: oneshot::Sender<Result<Written, WriteError>>,
}

/// Writes waiting per repository; a repository has an entry while a task is committing its
/// writes, and that task takes whatever queued meanwhile as its next group.
type Queues = Mutex<HashMap<i64, Vec<Pending>>>;

#[derive(Clone)]
pub struct Memory {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub default_max_entries: u64,
    pub default_max_bytes: u64,
    pub default_max_live_bytes: u64,
    queues: Arc<Queues>,
}

impl Memory {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, default_max_entries: u64, default_max_bytes: u64) -> Memory {
        let default_max_live_bytes = crate::config::DEFAULT_MAX_LIVE_BYTES;
        Memory { store, clock, default_max_entries, default_max_bytes, default_max_live_bytes, queues: Arc::default() }
    }

    pub fn now_ms(&self) -> i64 {
        i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX)
    }

    pub fn max_entries(&self, repo: &Repo) -> u64 {
        repo.max_entries.and_then(|m| u64::try_from(m).ok()).unwrap_or(self.default_max_entries)
    }

    pub fn max_bytes(&self, repo: &Repo) -> u64 {
        repo.max_bytes.and_then(|m| u64::try_from(m).ok()).unwrap_or(self.default_max_bytes)
    }

    pub fn max_live_bytes(&self, repo: &Repo) -> u64 {
        repo.max_live_bytes.and_then(|m| u64::try_from(m).ok()).unwrap_or(self.default_max_live_bytes)
    }

    pub async fn snapshot(&self, repo: &Repo, with_content: bool) -> Result<Option<Snapshot>, StoreError> {
        self.store.snapshot(repo.id, with_content).await
    }

    /// Applies `ops` atomically if `precondition` (an `If-Match`) holds and `permission`
    /// allows every change they would make.
    ///
    /// Writes to one repository are serialized anyway (its row lock), so they are committed
    /// in groups: while one transaction commits, the writes that arrive queue, and the next
    /// transaction decides them one after another, each on the state the previous one left,
    /// each with its own version, and commits them together. Every write still sees exactly
    /// the commits before it and is acknowledged only after its own commit; the group shares
    /// the lock, the round trips and the fsync.
    pub async fn write(
        &self,
        repo: &Repo,
        author: Option<i64>,
        permission: Permission,
        precondition: Option<&EntityTags>,
        ops: &[Op],
    ) -> Result<Written, WriteError> {
        let (reply, answer) = oneshot::channel();
        let pending = Pending { author, permission, precondition: precondition.cloned(), ops: ops.to_vec(), reply };
        let lead = {
            let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
            match queues.get_mut(&repo.id) {
                Some(queue) => {
                    queue.push(pending);
                    false
                }
                None => {
                    queues.insert(repo.id, vec![pending]);
                    true
                }
            }
        };
        if lead {
            // Its own task, so that a caller who hangs up does not strand the writes queued
            // behind it.
            let (memory, repo) = (self.clone(), repo.clone());
            tokio::spawn(async move { memory.drain(repo).await });
        }
        answer.await.unwrap_or(Err(WriteError::Contended))
    }

    /// Commits `repo`'s queued writes, group by group, until none are left.
    async fn drain(&self, repo: Repo) {
        loop {
            let group: Vec<Pending> = {
                let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
                let Some(queue) = queues.get_mut(&repo.id) else { return };
                if queue.is_empty() {
                    queues.remove(&repo.id);
                    return;
                }
                let n = group_len(queue.iter().map(|p| p.ops.len()));
                queue.drain(..n).collect()
            };
            self.commit_group(&repo, group).await;
        }
    }

    async fn commit_group(&self, repo: &Repo, group: Vec<Pending>) {
        let keys: Vec<&str> = group.iter().flat_map(|p| p.ops.iter().map(Op::key)).collect();
        for _ in 0..MAX_ATTEMPTS {
            let mut results: Vec<Option<Result<Written, WriteError>>> = group.iter().map(|_| None).collect();
            let mut decide = |view: &WriteView| {
                let mut current = view.repo.clone();
                let mut state: HashMap<String, EntryState> = view.entries.iter().map(|e| (e.key.clone(), e.clone())).collect();
                let mut folds = Folds::default();
                for key in view.entries.iter().filter(|e| !e.deleted).map(|e| &e.key).chain(&view.neighbors) {
                    folds.insert(key);
                }
                let mut commits = Vec::new();
                for (pending, result) in group.iter().zip(results.iter_mut()) {
                    let mine = WriteView {
                        repo: current.clone(),
                        entries: pending.ops.iter().filter_map(|op| state.get(op.key()).cloned()).collect(),
                        neighbors: Vec::new(),
                    };
                    let (outcome, commit) = self.decide(&mine, pending, &folds);
                    *result = Some(outcome);
                    let Some(commit) = commit else { continue };
                    for c in &commit.changes {
                        if c.deleted {
                            folds.remove(&c.key);
                        } else {
                            folds.insert(&c.key);
                        }
                    }
                    for c in &commit.changes {
                        state.insert(
                            c.key.clone(),
                            EntryState {
                                key: c.key.clone(),
                                checksum: c.checksum.clone(),
                                content: String::new(),
                                deleted: c.deleted,
                                changed_ms: commit.now_ms,
                                bytes: if c.deleted { 0 } else { c.content.len() as i64 },
                            },
                        );
                    }
                    current.version = commit.version;
                    current.checksum = commit.checksum.clone();
                    current.last_modified_ms = commit.now_ms;
                    current.live_entries = commit.live_entries;
                    current.history_bytes = commit.history_bytes;
                    current.live_bytes = commit.live_bytes;
                    commits.push(commit);
                }
                commits
            };
            let outcome = self.store.write(repo.id, &keys, &mut decide).await;
            match outcome {
                Ok(Some(CommitOutcome::VersionMoved)) => continue,
                Ok(Some(CommitOutcome::Committed | CommitOutcome::Declined)) => {
                    for (pending, result) in group.into_iter().zip(results) {
                        let _ = pending.reply.send(result.unwrap_or(Err(WriteError::Contended)));
                    }
                    return;
                }
                Ok(None) => {
                    for pending in group {
                        let _ = pending.reply.send(Err(StoreError::Database(sqlx::Error::RowNotFound).into()));
                    }
                    return;
                }
                Err(e) if group.len() > 1 && refused_by_database(&e) => {
                    // The database refused a statement of the group's transaction, so none of
                    // it landed, and the cause may be one write's alone (something one
                    // backend cannot store). Each write is decided and committed again on its
                    // own, in order, so that one bad write fails only itself.
                    for pending in group {
                        Box::pin(self.commit_group(repo, vec![pending])).await;
                    }
                    return;
                }
                Err(e) => {
                    // One failure answers the whole group (the transaction was theirs
                    // together): the database is unreachable or timed out, and trying each
                    // write again alone would only make each wait as long once more.
                    let message = e.to_string();
                    for pending in group {
                        let err = StoreError::Database(sqlx::Error::Protocol(message.clone()));
                        let _ = pending.reply.send(Err(err.into()));
                    }
                    return;
                }
            }
        }
        for pending in group {
            let _ = pending.reply.send(Err(WriteError::Contended));
        }
    }

    /// One write decided on `view`: its answer, and the commit to make when it changes
    /// something.
    fn decide(&self, view: &WriteView, pending: &Pending, folds: &Folds) -> (Result<Written, WriteError>, Option<Commit>) {
        let current = &view.repo;
        if let Some(tags) = &pending.precondition {
            if !tags.matches_strong(&current.checksum, current.version > 0) {
                return (Err(WriteError::PreconditionFailed), None);
            }
        }
        // Never earlier than the last change, so lastModified only moves forward.
        let now = self.now_ms().max(current.last_modified_ms);
        let plan = match plan(view, &pending.ops, pending.permission, folds) {
            Ok(plan) => plan,
            Err(e) => return (Err(e), None),
        };
        if plan.changes.is_empty() {
            let unchanged = Written {
                version: current.version,
                checksum: current.checksum.clone(),
                last_modified_ms: current.last_modified_ms,
                changed: false,
            };
            return (Ok(unchanged), None);
        }
        let max = self.max_entries(current);
        let live_before = u64::try_from(current.live_entries).unwrap_or(0);
        // The cap stops growth; a repository already over a lowered cap can still be
        // edited and shrunk.
        if plan.live_after > max && plan.live_after > live_before {
            return (Err(WriteError::TooManyEntries { max, received: plan.live_after }), None);
        }
        // Every version pushed stays in history, so the storage cap counts what this write
        // adds to it; removals and purges (a lead's) always go through, and a purge is how a
        // full repository gets room again.
        let history_before = u64::try_from(current.history_bytes).unwrap_or(0);
        let added: u64 = plan.changes.iter().filter(|c| !c.deleted).map(|c| c.content.len() as u64).sum();
        let history_after = history_before.saturating_add(added);
        let max_bytes = self.max_bytes(current);
        if added > 0 && history_after > max_bytes {
            return (Err(WriteError::StorageFull { max: max_bytes, would: history_after }), None);
        }
        // What every full pull carries; like the entry cap, it stops growth only.
        let live_bytes_before = u64::try_from(current.live_bytes).unwrap_or(0);
        let max_live_bytes = self.max_live_bytes(current);
        if plan.live_bytes_after > max_live_bytes && plan.live_bytes_after > live_bytes_before {
            return (Err(WriteError::ContentFull { max: max_live_bytes, would: plan.live_bytes_after }), None);
        }
        let version = current.version + 1;
        let checksum = next_repo_checksum(
            &current.checksum,
            plan.changes.iter().filter(|c| !c.deleted).map(|c| (c.key.as_str(), c.checksum.as_str())),
            plan.changes.iter().filter(|c| c.deleted).map(|c| (c.key.as_str(), now)),
        );
        let written = Written { version, checksum: checksum.clone(), last_modified_ms: now, changed: true };
        let commit = Commit {
            expected_version: current.version,
            version,
            checksum,
            now_ms: now,
            author: pending.author,
            live_entries: i64::try_from(plan.live_after).unwrap_or(i64::MAX),
            history_bytes: i64::try_from(history_after).unwrap_or(i64::MAX),
            live_bytes: i64::try_from(plan.live_bytes_after).unwrap_or(i64::MAX),
            changes: plan.changes,
        };
        (Ok(written), Some(commit))
    }
}

/// The database answered and refused a statement (a constraint, a value it cannot store),
/// as opposed to not answering at all.
fn refused_by_database(e: &StoreError) -> bool {
    matches!(e, StoreError::Database(sqlx::Error::Database(_)))
}

struct Plan {
    changes: Vec<Change>,
    live_after: u64,
    /// Bytes of live content afterwards.
    live_bytes_after: u64,
}

/// A named key's state while a write is planned: its checksum, whether it is a tombstone, and
/// the bytes of its content.
struct KeyState {
    checksum: String,
    deleted: bool,
    bytes: u64,
}

/// How a key a write would create collides with a live one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collision {
    /// They differ only in letter case: one file on macOS and Windows.
    Case,
    /// The live key is a file where the new key needs a folder.
    FileAbove,
    /// The live key is under the new key, which is therefore a folder.
    FilesBelow,
}

/// Live keys by their case folding ([`case_fold`]): what a key a write creates must not
/// collide with on a teammate's disk.
#[derive(Default)]
struct Folds(BTreeMap<String, BTreeSet<String>>);

impl Folds {
    fn insert(&mut self, key: &str) {
        self.0.entry(case_fold(key)).or_default().insert(key.to_string());
    }

    fn remove(&mut self, key: &str) {
        let fold = case_fold(key);
        if let Some(keys) = self.0.get_mut(&fold) {
            keys.remove(key);
            if keys.is_empty() {
                self.0.remove(&fold);
            }
        }
    }

    /// A key here, other than those `skip` names, that `key` would collide with, and how.
    fn collision(&self, key: &str, skip: impl Fn(&str) -> bool) -> Option<(String, Collision)> {
        let first = |keys: Option<&BTreeSet<String>>| keys.and_then(|ks| ks.iter().find(|k| !skip(k)).cloned());
        let fold = case_fold(key);
        if let Some(other) = first(self.0.get(&fold)) {
            return Some((other, Collision::Case));
        }
        for (i, _) in key.match_indices('/') {
            if let Some(other) = first(self.0.get(&case_fold(&key[..i]))) {
                return Some((other, Collision::FileAbove));
            }
        }
        // Every folding that starts with `fold/` sorts from `fold/` up to `fold0` ('0' follows '/').
        self.0.range(format!("{fold}/")..format!("{fold}0")).find_map(|(_, keys)| first(Some(keys))).map(|other| (other, Collision::FilesBelow))
    }
}

/// The changes `ops` make to the keys in `view`, and the number of live keys and bytes of
/// live content afterwards; refused when `permission` does not cover a change, or when a key
/// it creates would collide on a teammate's disk with a key live after it (`folds`: the live
/// keys near the write's, before it).
fn plan(view: &WriteView, ops: &[Op], permission: Permission, folds: &Folds) -> Result<Plan, WriteError> {
    let mut state: BTreeMap<&str, KeyState> = view
        .entries
        .iter()
        .map(|e| {
            let bytes = u64::try_from(e.bytes).unwrap_or(0);
            (e.key.as_str(), KeyState { checksum: e.checksum.clone(), deleted: e.deleted, bytes })
        })
        .collect();
    let mut live = u64::try_from(view.repo.live_entries).unwrap_or(0);
    let mut live_bytes = u64::try_from(view.repo.live_bytes).unwrap_or(0);
    // One change per key: the last op on a key wins.
    let mut changes: BTreeMap<&str, Change> = BTreeMap::new();
    // Keys this write makes live that were not (new, or brought back).
    let mut created: BTreeSet<&str> = BTreeSet::new();
    for op in ops {
        match op {
            Op::Upsert { key, content } => {
                let checksum = entry_checksum(content);
                let current = state.get(key.as_str());
                // Bringing back what a lead removed is a lead's decision too: a member's write
                // would otherwise undo the removal for everyone. (Honest clients never send a
                // removed key; `push.rs` leaves tombstoned keys out.)
                if current.is_some_and(|s| s.deleted) && permission != Permission::Lead {
                    return Err(WriteError::RemovedByLead { key: key.clone() });
                }
                if current.is_some_and(|s| !s.deleted && s.checksum == checksum) {
                    continue;
                }
                match current {
                    Some(s) if !s.deleted => live_bytes = live_bytes.saturating_sub(s.bytes),
                    _ => {
                        live += 1;
                        created.insert(key);
                    }
                }
                live_bytes = live_bytes.saturating_add(content.len() as u64);
                changes.insert(
                    key,
                    Change { key: key.clone(), content: content.clone(), checksum: checksum.clone(), deleted: false, purge: false },
                );
                state.insert(key, KeyState { checksum, deleted: false, bytes: content.len() as u64 });
            }
            Op::Delete { key } => {
                let Some(KeyState { checksum, deleted: false, bytes }) = state.get(key.as_str()) else { continue };
                let (checksum, bytes) = (checksum.clone(), *bytes);
                // Only a change that takes effect needs the lead role: a member's client may
                // name a key a lead already removed.
                if permission != Permission::Lead {
                    return Err(WriteError::LeadRequired { key: key.clone() });
                }
                // The store keeps a stored key's removed content itself; a key created earlier
                // in this same write has only the content it was given here.
                let content = changes.remove(key.as_str()).map(|c| c.content).unwrap_or_default();
                changes.insert(key, Change { key: key.clone(), content, checksum: checksum.clone(), deleted: true, purge: false });
                state.insert(key, KeyState { checksum, deleted: true, bytes });
                live -= 1;
                live_bytes = live_bytes.saturating_sub(bytes);
            }
            Op::Purge { key } => {
                if permission != Permission::Lead {
                    return Err(WriteError::LeadRequired { key: key.clone() });
                }
                let Some(current) = state.get(key.as_str()) else {
                    return Err(WriteError::NoSuchEntry { key: key.clone() });
                };
                if !current.deleted {
                    live -= 1;
                    live_bytes = live_bytes.saturating_sub(current.bytes);
                }
                // The tombstone's checksum is that of empty content: the erased content's
                // hash would let anyone with history access test guesses of the secret.
                let checksum = entry_checksum("");
                changes.insert(
                    key,
                    Change { key: key.clone(), content: String::new(), checksum: checksum.clone(), deleted: true, purge: true },
                );
                state.insert(key, KeyState { checksum, deleted: true, bytes: 0 });
            }
        }
    }
    // Judged on the state the whole write leaves, so that a rename by case in one request
    // (the new spelling written, the old one removed) goes through.
    let removed: HashSet<&str> = changes.values().filter(|c| c.deleted).map(|c| c.key.as_str()).collect();
    let mut made = Folds::default();
    for key in created.iter().filter(|k| !removed.contains(*k)) {
        made.insert(key);
    }
    for key in created.iter().filter(|k| !removed.contains(*k)) {
        let found = folds
            .collision(key, |k| k == *key || removed.contains(k))
            .or_else(|| made.collision(key, |k| k == *key));
        if let Some((other, how)) = found {
            return Err(WriteError::KeyCollision { key: key.to_string(), other, how });
        }
    }
    Ok(Plan { changes: changes.into_values().collect(), live_after: live, live_bytes_after: live_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_takes_at_most_max_batch_writes_and_max_group_ops_keys() {
        assert_eq!(group_len(std::iter::empty()), 0);
        assert_eq!(group_len([1; 500].into_iter()), MAX_BATCH);
        // A write naming more than a group may still goes, alone.
        assert_eq!(group_len([MAX_GROUP_OPS + 5, 1].into_iter()), 1);
        assert_eq!(group_len([MAX_GROUP_OPS - 1, 1, 1].into_iter()), 2);
        assert_eq!(group_len([10_000, 10_000, 10_000].into_iter()), 2);
    }
}
