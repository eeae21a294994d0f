//! The settings schema's value rules Mneme holds each release to
//! (`mneme_store::settings::schema`, `crates/store/data/settings-schema.json`) are what that
//! release's binary holds, as `crates/store/data/extract-settings-schema.mjs` reads them, for
//! every release the environment names (the pinned one and the matrix).
//!
//! Needs the releases (`MNEME_CLAUDE_BIN`, `MNEME_CLAUDE_BINS`, see `scripts/claude-code.sh`)
//! and Node; skipped without them unless `MNEME_REQUIRE_CLAUDE=1`.

use mneme_store::settings::schema::{self, Rule};
use mneme_testsupport::claude_code;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

#[derive(Deserialize)]
struct Extracted {
    keys: BTreeMap<String, Rule>,
    unchecked: Vec<String>,
}

fn extract(binary: &Path) -> Extracted {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/data/extract-settings-schema.mjs");
    let out = Command::new("node")
        .arg(&script)
        .arg(binary)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "extract-settings-schema.mjs failed on {}:\n{}",
        binary.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the extractor prints its JSON")
}

#[test]
fn each_release_is_held_to_its_own_settings_rules() {
    let bins = claude_code::all();
    if bins.is_empty() {
        claude_code::skip("MNEME_CLAUDE_BIN(S) name no Claude Code release; run: export MNEME_CLAUDE_BINS=\"$(scripts/claude-code.sh --matrix)\"");
        return;
    }
    for (v, binary) in bins {
        let read = extract(&binary);
        assert!(
            read.keys.contains_key("autoMemoryEnabled"),
            "{v}: the extractor found no autoMemoryEnabled"
        );
        for (key, rule) in &read.keys {
            // Mended before the check by some releases: never held against a file.
            if schema::REPAIRED_BEFORE_THE_CHECK.contains(&key.as_str()) {
                assert_eq!(schema::rule(key, v), None, "{v}: {key}");
                continue;
            }
            assert_eq!(
                schema::rule(key, v),
                Some(rule),
                "Claude Code {v} holds \"{key}\" to another rule than data/settings-schema.json says; run scripts/settings-schema.sh"
            );
        }
        // A key the release does not check, Mneme does not check for it either.
        for key in &read.unchecked {
            assert_eq!(
                schema::rule(key, v),
                None,
                "{v}: \"{key}\" is checked, but the release's schema for it was not read"
            );
        }
    }
}
