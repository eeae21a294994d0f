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

/// A bundle made up for the extractor: files separated by NUL bytes, as a release's binary
/// holds them, the last one holding a settings schema in the shape of 2.1.316 on (each key a
/// thunk, the feature modules' keys spread in at the end). `extra_in_schema_file` is put into
/// that file, `other_file` into the one before it.
fn made_up_bundle(extra_in_schema_file: &str, other_file: &str) -> String {
    let modules = r#"var Qu=["voice","view","off","gated"];var co={voice:{buildGate:()=>!0,shape:()=>({voiceEnabled:M().optional()})},view:{buildGate:()=>!0,shape:()=>({defaultView:B(["chat","transcript"]).optional()})},off:{buildGate:()=>!1,shape:()=>({offKey:M()})},gated:{buildGate:()=>X("flag"),shape:()=>({gatedKey:M().optional()})}};function bwn(){return Qu.filter((e)=>co[e].buildGate())}function bi(e){let o={};for(let s of e)o={...o,...co[s].shape()};return o}"#;
    let schema = r#"function Qi(e){return{$schema:()=>n().optional(),autoMemoryEnabled:()=>M().optional(),cleanupPeriodDays:()=>T().int().positive().optional(),claudeMdExcludes:()=>P(n()).optional(),theme:()=>B(["dark","light"]).optional(),voiceEnabled:()=>n().optional(),...!1,...{inlineKey:()=>M().optional()},...r.FLAG&&{maybeKey:()=>M().optional()},policy:()=>u({a:M(),...!1,...{b:n()}}).optional(),...An(bi(e),(l)=>()=>l)}}var Ye=f(()=>Qi(bwn()));"#;
    format!("// @bun\n{other_file}\0// @bun\n{modules}{extra_in_schema_file}{schema}\0")
}

fn extract_text(bundle: &str) -> Extracted {
    let dir = tempfile::tempdir().expect("a temp folder");
    let file = dir.path().join("bundle.js");
    std::fs::write(&file, bundle).expect("the made-up bundle is written");
    extract(&file)
}

fn rule_of(value: serde_json::Value) -> Rule {
    serde_json::from_value(value).expect("a rule in the extractor's notation")
}

#[test]
fn the_extractor_follows_spreads_into_the_settings_schema_only_where_it_can_tell_their_keys() {
    if Command::new("node").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        claude_code::skip("node is not on PATH; the extractor is a Node script");
        return;
    }
    let boolean = rule_of(serde_json::json!({"type": "boolean"}));
    // The one definition of each name in the schema's file is followed, whatever other files
    // define under the same minified names; in that file, a definition that cannot be the
    // function called (a class field holding a `new` object, as in 2.1.190) is no rival.
    for (in_schema_file, other_file) in [("", ""), ("", "function bi(e){return e}var co=5;"), ("class K{bi=new Map;get(){return this.bi}}", "")] {
        let read = extract_text(&made_up_bundle(in_schema_file, other_file));
        // A module's key replaces the schema's own entry of that name before it.
        assert_eq!(read.keys.get("voiceEnabled"), Some(&boolean), "{in_schema_file}{other_file}");
        assert_eq!(read.keys.get("defaultView"), Some(&rule_of(serde_json::json!({"type": "enum", "values": ["chat", "transcript"]}))));
        // An inline object literal spread is its keys; inside an object too, and `...!1` is nothing.
        assert_eq!(read.keys.get("inlineKey"), Some(&boolean));
        assert_eq!(
            read.keys.get("policy"),
            Some(&rule_of(serde_json::json!({"type": "object", "fields": {"a": {"type": "boolean"}, "b": {"type": "string"}}, "required": ["a", "b"]})))
        );
        // A module whose gate is decided at run time, and a key spread in under a condition,
        // may or may not be in the schema: unchecked. A module built off is not there at all.
        for maybe in ["gatedKey", "maybeKey"] {
            assert!(read.unchecked.contains(&maybe.to_string()) && !read.keys.contains_key(maybe), "{maybe}");
        }
        assert!(!read.keys.contains_key("offKey") && !read.unchecked.contains(&"offKey".to_string()));
    }
    // A name defined twice in the schema's own file (the merge function, the module registry,
    // the list of modules) could be either definition, so what the spread brings is not known
    // and every key before it could be replaced: the release is not read at all (its keys stay
    // unchecked), and the extractor says which spread it could not follow.
    for twice in ["function bi(e){return e}", "var q=(co)=>{co=load()};", "function g(){Qu=[\"voice\"]}"] {
        let dir = tempfile::tempdir().expect("a temp folder");
        let file = dir.path().join("bundle.js");
        std::fs::write(&file, made_up_bundle(twice, "")).expect("the made-up bundle is written");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/data/extract-settings-schema.mjs");
        let out = Command::new("node").arg(&script).arg(&file).output().expect("node runs");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{twice}: read anyway");
        assert!(said.contains("spreads in ...An(bi(e),(l)=>()=>l), which this script cannot follow"), "{twice}: {said}");
    }
}
