//! The two checksums of the protocol.
//!
//! - An entry's checksum is Claude Code's `hashContent`: `sha256:` + the lower-case hex SHA-256
//!   of the content's UTF-8 bytes (the key is not hashed).
//! - A repository's checksum (the body's `checksum` and the quoted `ETag`) is `sha256:` + the
//!   hex SHA-256 of this compact JSON, keys in UTF-8 byte order, no whitespace:
//!   `{"entryChecksums":{"<key>":"sha256:…",…},"deletedEntries":{"<key>":<epoch ms>,…}}`.
//!   It covers live entries by their checksums and tombstones by their deletion times, so it
//!   changes whenever a GET body would, and anyone holding a GET body can recompute it.
//!   Equal contents give equal checksums whatever the history, which is what an entity tag
//!   promises: an `If-Match` with it is safe because the state it names is the state on the
//!   server.

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
