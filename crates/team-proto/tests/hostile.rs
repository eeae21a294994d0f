//! Hostile team-memory keys and messages, as a teammate's client or a hostile server can send
//! them: traversal, NUL, percent-encoding, Unicode tricks, damaged JSON bodies. The key rules
//! answer yes or no with a reason, and accepted keys stay inside the team folder; the wire
//! types parse or fail with an error.

// mneme-testsupport does not link this crate, but its generators sit in a file that depends
// on proptest alone; include it as core and store do.
#[allow(dead_code)]
#[path = "../../testsupport/src/hostile.rs"]
mod hostile;

use hostile::{config, deep, mutated_text, text};
use mneme_team_proto::keys::{check_strict_key, normalize, sanitize_path_key};
use mneme_team_proto::wire::{PutBody, TeamMemoryData};
use proptest::prelude::*;

fn keys() -> impl Strategy<Value = String> {
    prop_oneof![
        text(),
        "[a-z./%\\\\_-]{0,40}",
        proptest::sample::select(vec![
            "../x.md", "a/../../x.md", "%2e%2e/x.md", "a%2Fb.md", "a\0b.md", "/etc/passwd", "C:\\x.md", "a/./b.md",
            "\u{FF0E}\u{FF0E}/x.md", "a\u{202E}dm.txt", "", ".", "..", "a//b.md", "%", "%zz", "%c0%ae%c0%ae/x.md",
        ])
        .prop_map(str::to_string),
    ]
}

fn bodies() -> Vec<Vec<u8>> {
    vec![
        br#"{"entries": {"a.md": "x", "b/c.md": "y"}}"#.to_vec(),
        br#"{"organizationId": "o", "repo": "r", "version": 3, "lastModified": "2026-01-01T00:00:00Z", "checksum": "sha256:00", "content": {"entries": {"a.md": "x"}, "entryChecksums": {"a.md": "sha256:00"}}}"#.to_vec(),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn key_rules(key in keys()) {
        // Claude Code's checks leave `..` to the later resolve against the team folder.
        match sanitize_path_key(&key) {
            Ok(k) => prop_assert!(!k.contains('\0')),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        // Mneme's strict policy accepts only canonical relative keys.
        match check_strict_key(&key) {
            Ok(()) => {
                prop_assert!(sanitize_path_key(&key).is_ok());
                prop_assert_eq!(normalize(&key), key.clone());
                prop_assert!(!key.starts_with('/') && !key.split('/').any(|seg| seg.is_empty() || seg == "." || seg == ".."));
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn wire_bodies(body in mutated_text(bodies())) {
        let _ = serde_json::from_str::<PutBody>(&body);
        let _ = serde_json::from_str::<TeamMemoryData>(&body);
    }

    #[test]
    fn deeply_nested_wire_bodies(body in deep()) {
        let _ = serde_json::from_str::<PutBody>(&body);
        let _ = serde_json::from_str::<TeamMemoryData>(&format!("{{\"content\": {body}"));
    }
}
