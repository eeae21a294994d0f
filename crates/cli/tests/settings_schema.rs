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

/// [`extract`] for every binary, in their order, three at a time.
fn extract_all(bins: &[(mneme_core::versions::ClaudeVersion, std::path::PathBuf)]) -> Vec<Extracted> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..3.min(bins.len()) {
            s.spawn(|| {
                loop {
                    let at = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((_, binary)) = bins.get(at) else { break };
                    let read = extract(binary);
                    done.lock().unwrap().push((at, read));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap();
    assert_eq!(done.len(), bins.len(), "every release was read");
    done.sort_by_key(|(at, _)| *at);
    done.into_iter().map(|(_, r)| r).collect()
}

#[test]
fn each_release_is_held_to_its_own_settings_rules() {
    let bins = claude_code::all();
    if bins.is_empty() {
        claude_code::skip("MNEME_CLAUDE_BIN(S) name no Claude Code release; run: export MNEME_CLAUDE_BINS=\"$(scripts/claude-code.sh --matrix)\"");
        return;
    }
    // Each extraction is a Node process reading a 240 MB binary for a few seconds; they run side
    // by side (three at a time, about 800 MB each) and are checked in release order after.
    let read = extract_all(&bins);
    for ((v, _), read) in bins.into_iter().zip(read) {
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
