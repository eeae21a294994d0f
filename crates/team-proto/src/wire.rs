//! The team-memory HTTP API exactly as Claude Code's client speaks it
//! (`GET`/`PUT <base>/api/claude_code/team_memory?repo=owner%2Fname`, reference §8.2).
//! Field names are Claude Code's; the soft-delete fields are the later additions.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The path every request goes to, before `?repo=`.
pub const TEAM_MEMORY_PATH: &str = "/api/claude_code/team_memory";
/// `anthropic-beta` header value sent on every request.
pub const ANTHROPIC_BETA: &str = "oauth-2025-04-20";
/// Client timeout per request (`TEAM_MEMORY_SYNC_TIMEOUT_MS`).
pub const SYNC_TIMEOUT_MS: u64 = 30_000;
/// Files larger than this (by stat size) are skipped on push; remote entries larger than this are not written.
pub const MAX_FILE_SIZE_BYTES: u64 = 250_000;
/// The delta is split into sequential PUT batches under this size.
pub const MAX_PUT_BODY_BYTES: usize = 200_000;
/// Pull attempts after the first (`MAX_RETRIES`).
pub const MAX_RETRIES: u32 = 3;
/// Re-tries after a 412 (`MAX_CONFLICT_RETRIES`).
pub const MAX_CONFLICT_RETRIES: u32 = 2;
/// Watcher debounce after the last change.
pub const DEBOUNCE_MS: u64 = 2_000;
/// The structured 413's error code.
pub const TOO_MANY_ENTRIES: &str = "team_memory_too_many_entries";
/// Mneme's server only: the 413 `error_code` when a push would take a repository's history past
/// its storage cap. Claude Code knows no such code and treats it as any other refused push.
pub const STORAGE_FULL: &str = "team_memory_storage_full";
/// Mneme's server only: the 413 `error_code` when a push would take a repository's current
/// content (what every full pull carries) past its live-content cap.
pub const CONTENT_FULL: &str = "team_memory_content_full";
/// Mneme's server only: the 400 `error_code` when a new key would be one file with a live key
/// on a teammate's disk (a case twin, or a file where another key needs a folder).
pub const KEY_COLLISION: &str = "team_memory_key_collision";
/// Mneme's server only: the 400 `error_code` for content it cannot store (a NUL character).
pub const INVALID_CONTENT: &str = "team_memory_invalid_content";

/// `GET` 200 body (`TeamMemoryDataSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamMemoryData {
    pub organization_id: String,
    pub repo: String,
    pub version: u64,
    /// ISO 8601 with milliseconds, e.g. `2026-11-29T15:42:13.000Z`.
    pub last_modified: String,
    /// `sha256:<hex>` over the whole repository's content (also the ETag, quoted).
    pub checksum: String,
    pub content: TeamMemoryContent,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamMemoryContent {
    pub entries: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_checksums: Option<BTreeMap<String, String>>,
    /// Tombstones: key → deletion time in epoch milliseconds. Clients unlink these and never re-upload them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_entries: Option<BTreeMap<String, i64>>,
}

/// `GET …&view=hashes` 200 body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamMemoryHashes {
    pub version: u64,
    pub checksum: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_checksums: Option<BTreeMap<String, String>>,
}

/// `PUT` body: upsert — keys not sent are preserved server-side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PutBody {
    pub entries: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub soft_delete_keys: Vec<String>,
}

/// `PUT` 200 body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PutResponse {
    pub checksum: String,
    pub last_modified: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// The structured 413 body: `{error:{details:{error_code, max_entries, received_entries}}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorObject,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<ErrorDetails>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetails {
    pub error_code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_entries: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_entries: Option<u64>,
}

/// The byte size Claude Code's `batchDeltaByBytes` counts for a PUT body: `{"entries":{}}` plus,
/// per entry, `len(JSON(key)) + len(JSON(value)) + 2` (the colon and comma), in UTF-8 bytes.
pub fn entry_put_bytes(key: &str, value: &str) -> usize {
    json_len(key) + json_len(value) + 2
}

/// `len('{"entries":{}}')`.
pub const EMPTY_PUT_BYTES: usize = 14;

/// The fewest bytes [`entry_put_bytes`] gives an entry: a one-character key (`"a"`, 3 bytes)
/// with empty content (`""`, 2), plus the colon and comma.
pub const MIN_ENTRY_PUT_BYTES: usize = 7;

/// The most entries one `PUT` from Claude Code (or Mneme's client, which batches the same way)
/// can carry: a batch stays within [`MAX_PUT_BODY_BYTES`] as counted unless it is one oversized
/// entry alone, and every entry counts at least [`MIN_ENTRY_PUT_BYTES`]. 28,569. Mneme's
/// server refuses a `PUT` with more (413 [`TOO_MANY_KEYS`]): each one is read and written under
/// the repository's lock, and a 4 MiB body could otherwise name some 300,000.
pub const MAX_PUT_ENTRIES: usize = (MAX_PUT_BODY_BYTES - EMPTY_PUT_BYTES) / MIN_ENTRY_PUT_BYTES;
// As many of the smallest entries as the cap fit in one batch; one more does not.
const _: () = assert!(EMPTY_PUT_BYTES + MAX_PUT_ENTRIES * MIN_ENTRY_PUT_BYTES <= MAX_PUT_BODY_BYTES);
const _: () = assert!(EMPTY_PUT_BYTES + (MAX_PUT_ENTRIES + 1) * MIN_ENTRY_PUT_BYTES > MAX_PUT_BODY_BYTES);

/// Mneme's server only: the 413 `error_code` when a `PUT` names more keys than any client's
/// batch holds ([`MAX_PUT_ENTRIES`] entries, or more removals than the repository can hold).
pub const TOO_MANY_KEYS: &str = "team_memory_too_many_keys";

fn json_len(s: &str) -> usize {
    serde_json::to_string(s).map(|j| j.len()).unwrap_or(s.len() + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_put_entry_cap_is_what_a_full_batch_of_the_smallest_entries_holds() {
        assert_eq!(entry_put_bytes("a", ""), MIN_ENTRY_PUT_BYTES);
        assert_eq!(MAX_PUT_ENTRIES, 28_569);
        // No entry counts less: a key has at least one character, content at least its quotes.
        for (key, value) in [("a", ""), ("\u{e9}", ""), ("ab", ""), ("a", "b"), ("\u{0}", "")] {
            assert!(entry_put_bytes(key, value) >= MIN_ENTRY_PUT_BYTES, "{key:?}");
        }
    }
}
