//! The two checksums of the protocol.
//!
//! - An entry's checksum is Claude Code's `hashContent`: `sha256:` + the lower-case hex SHA-256
//!   of the content's UTF-8 bytes (the key is not hashed).
//! - A repository's checksum (the body's `checksum` and the quoted `ETag`) is a hash chain over
//!   its commits. An empty repository has [`empty_repo_checksum`]: `sha256:` + the hex SHA-256
//!   of `{"entryChecksums":{},"deletedEntries":{}}`. Each commit's checksum is
//!   [`next_repo_checksum`]: `sha256:` + the hex SHA-256 of the compact JSON
//!   `{"previous":"<checksum before>","entryChecksums":{…},"deletedEntries":{…}}` listing only
//!   the keys the commit changed (written keys by their entry checksum, removed keys by their
//!   deletion time), keys in UTF-8 byte order, no whitespace. A write therefore hashes only
//!   what it changes, never the whole repository, and the checksum still names one state:
//!   equal checksums mean the same chain of changes from empty, hence the same entries and
//!   tombstones, which is what an `If-Match` relies on. (Unlike a hash of the whole state, two
//!   histories that happen to end in equal contents get different checksums; a client holding
//!   the other one just pulls or probes once more.) Claude Code treats the value as opaque.

use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

pub fn entry_checksum(content: &str) -> String {
    format!("sha256:{:x}", Sha256::digest(content.as_bytes()))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Canonical<'a> {
    entry_checksums: BTreeMap<&'a str, &'a str>,
    deleted_entries: BTreeMap<&'a str, i64>,
}

/// `live`: key → entry checksum; `deleted`: key → deletion time (epoch ms).
pub fn repo_checksum<'a>(
    live: impl IntoIterator<Item = (&'a str, &'a str)>,
    deleted: impl IntoIterator<Item = (&'a str, i64)>,
) -> String {
    let canonical =
        Canonical { entry_checksums: live.into_iter().collect(), deleted_entries: deleted.into_iter().collect() };
    // Serializing string and integer maps cannot fail.
    let json = serde_json::to_vec(&canonical).unwrap_or_default();
    format!("sha256:{:x}", Sha256::digest(&json))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Link<'a> {
    previous: &'a str,
    entry_checksums: BTreeMap<&'a str, &'a str>,
    deleted_entries: BTreeMap<&'a str, i64>,
}

/// The checksum after a commit that, starting from `previous`, wrote `written` (key → entry
/// checksum) and removed `removed` (key → deletion time, epoch ms).
pub fn next_repo_checksum<'a>(
    previous: &'a str,
    written: impl IntoIterator<Item = (&'a str, &'a str)>,
    removed: impl IntoIterator<Item = (&'a str, i64)>,
) -> String {
    let link = Link {
        previous,
        entry_checksums: written.into_iter().collect(),
        deleted_entries: removed.into_iter().collect(),
    };
    // Serializing string and integer maps cannot fail.
    let json = serde_json::to_vec(&link).unwrap_or_default();
    format!("sha256:{:x}", Sha256::digest(&json))
}

/// The checksum of a repository with no entries and no tombstones.
pub fn empty_repo_checksum() -> String {
    repo_checksum([], [])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_checksum_is_claude_codes_hash_content() {
        // sha256("hello") as Node's createHash('sha256').update('hello','utf8').digest('hex').
        assert_eq!(
            entry_checksum("hello"),
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
    }

    #[test]
    fn each_commit_chains_onto_the_previous_checksum() {
        let empty = empty_repo_checksum();
        let a = entry_checksum("a");
        let next = next_repo_checksum(&empty, [("z.md", a.as_str()), ("a.md", a.as_str())], [("gone.md", 5)]);
        let json = format!(
            r#"{{"previous":"{empty}","entryChecksums":{{"a.md":"{a}","z.md":"{a}"}},"deletedEntries":{{"gone.md":5}}}}"#
        );
        assert_eq!(next, format!("sha256:{:x}", Sha256::digest(json.as_bytes())));
        // The same change on another state, or another change on this one, gives another checksum.
        assert_ne!(next, next_repo_checksum(&next, [("z.md", a.as_str()), ("a.md", a.as_str())], [("gone.md", 5)]));
        assert_ne!(next, next_repo_checksum(&empty, [("z.md", a.as_str()), ("a.md", a.as_str())], [("gone.md", 6)]));
    }

    #[test]
    fn repo_checksum_is_sha256_of_the_canonical_json_in_byte_order() {
        let a = entry_checksum("a");
        let b = entry_checksum("b");
        let got = repo_checksum([("z.md", b.as_str()), ("a.md", a.as_str())], [("gone.md", 5)]);
        let json = format!(r#"{{"entryChecksums":{{"a.md":"{a}","z.md":"{b}"}},"deletedEntries":{{"gone.md":5}}}}"#);
        assert_eq!(got, format!("sha256:{:x}", Sha256::digest(json.as_bytes())));
        // Order of input does not matter; content does.
        assert_eq!(got, repo_checksum([("a.md", a.as_str()), ("z.md", b.as_str())], [("gone.md", 5)]));
        assert_ne!(got, repo_checksum([("a.md", a.as_str()), ("z.md", b.as_str())], [("gone.md", 6)]));
        assert_eq!(
            empty_repo_checksum(),
            format!("sha256:{:x}", Sha256::digest(br#"{"entryChecksums":{},"deletedEntries":{}}"#))
        );
    }
}
