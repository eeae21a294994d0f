//! No committed file shares a run of 200 or more characters with the installed Claude Code
//! binary, except the reviewed interop strings in `testdata/claude-code-interop.json` (each
//! with the reason it must be exact). Mneme is MIT-licensed; Claude Code is proprietary. Mneme
//! may reproduce its facts (paths, limits, header strings, formats), not its prose or code;
//! where a test or the app needs Claude Code's own text, it cuts it from the installed binary
//! at run time.
//!
//! Needs `MNEME_CLAUDE_BIN` (see `scripts/claude-code.sh`); skipped without it unless
//! `MNEME_REQUIRE_CLAUDE=1`.

use mneme_testsupport::claude_code;
use mneme_testsupport::copycheck::{shared_runs, Source};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// One reviewed exception: a shared run is allowed when it lies in a file under `path` and
/// contains `contains` (normalized: whitespace collapsed to single spaces).
#[derive(serde::Deserialize)]
struct Allowed {
    path: String,
    contains: String,
    reason: String,
}

const ALLOW_LIST: &str = "testdata/claude-code-interop.json";

#[test]
fn no_committed_file_shares_200_characters_with_claude_code() {
    let Some(bin) = claude_code::pinned() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let started = Instant::now();

    let allowed: Vec<Allowed> =
        serde_json::from_slice(&std::fs::read(root.join(ALLOW_LIST)).expect("read the allow-list"))
            .unwrap_or_else(|e| panic!("{ALLOW_LIST} is not a JSON list of {{path, contains, reason}}: {e}"));
    for a in &allowed {
        assert!(a.reason.trim().len() >= 20, "{ALLOW_LIST}: the entry for {:?} needs a real reason", a.contains);
    }

    // Every committed file (and every new one not yet committed, so the check bites before the
    // commit), except binary files and the allow-list itself.
    let out = Command::new("git")
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .current_dir(&root)
        .output()
        .expect("run git ls-files");
    assert!(out.status.success(), "git ls-files failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut sources = Vec::new();
    for name in out.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        if name == ALLOW_LIST {
            continue;
        }
        let Ok(raw) = std::fs::read(root.join(&name)) else { continue }; // deleted in the work tree
        if raw.contains(&0) {
            continue; // images, fonts: not text
        }
        sources.push(Source::new(name, raw));
    }
    let binary = std::fs::read(&bin).unwrap_or_else(|e| panic!("read {}: {e}", bin.display()));
    let runs = shared_runs(&sources, &binary);
    let elapsed = started.elapsed();
    eprintln!("{} files against {} MB of Claude Code in {:.1} s", sources.len(), binary.len() >> 20, elapsed.as_secs_f64());

    let copied: Vec<_> = runs
        .iter()
        .filter(|r| !allowed.iter().any(|a| r.file.starts_with(&a.path) && r.text.contains(&a.contains)))
        .collect();
    let report: Vec<String> = copied
        .iter()
        .map(|r| format!("{}:{} ({} chars): {}…", r.file, r.line, r.text.len(), r.text.chars().take(120).collect::<String>()))
        .collect();
    assert!(
        copied.is_empty(),
        "{} runs of 200+ characters are Claude Code's own text. Write them in Mneme's words, cut them \
         from the installed binary at run time, or (for an interop string that must be exact) add a \
         reviewed entry to {ALLOW_LIST}:\n{}",
        copied.len(),
        report.join("\n")
    );
}
