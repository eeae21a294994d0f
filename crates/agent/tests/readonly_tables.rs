//! The read-only Bash tables Mneme's agents judge commands by for a release
//! (`Profile::bash_read_only`, `data/readonly/<release>.json`) are exactly those in that
//! release's binary, as `data/extract-readonly.mjs` reads them, for every release the
//! environment names (the pinned one and the matrix).
//!
//! Needs the releases (`MNEME_CLAUDE_BIN`, `MNEME_CLAUDE_BINS`, see `scripts/claude-code.sh`)
//! and Node; skipped without them unless `MNEME_REQUIRE_CLAUDE=1`.

use mneme_core::versions::{self, ClaudeVersion};
use mneme_testsupport::claude_code;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The first release the extractor reads (2.1.100 has no glob-safe list yet); older ones are
/// judged by 2.1.113's tables, unverified.
const FIRST_EXTRACTED: ClaudeVersion = ClaudeVersion::new(2, 1, 113);

fn extract(binary: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/extract-readonly.mjs");
    let out = Command::new("node").arg(&script).arg(binary).output().expect("node runs");
    assert!(out.status.success(), "extract-readonly.mjs failed on {}:\n{}", binary.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the extractor prints JSON")
}

#[test]
fn each_release_is_judged_by_its_own_tables() {
    let mut bins = claude_code::all();
    bins.retain(|(v, _)| *v >= FIRST_EXTRACTED);
    if bins.is_empty() {
        claude_code::skip("MNEME_CLAUDE_BIN(S) name no Claude Code release; run: export MNEME_CLAUDE_BINS=\"$(scripts/claude-code.sh --matrix)\"");
        return;
    }
    for (v, binary) in bins {
        let which = versions::behaviours(v).bash_read_only;
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("data/readonly/{}.json", which.0));
        let ours: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(
            ours == extract(&binary),
            "Claude Code {v}'s read-only tables differ from {} (Profile::bash_read_only for {v}); \
             take them with data/extract-readonly.mjs and add a Change::BashReadOnly",
            file.display()
        );
    }
}
