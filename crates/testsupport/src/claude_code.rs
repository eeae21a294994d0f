//! Where tests find real Claude Code binaries, read one way for every crate.
//!
//! `MNEME_CLAUDE_BIN` names the pinned release (`scripts/claude-code.sh`), `MNEME_CLAUDE_BINS`
//! the matrix as `V=PATH,V=PATH` (`scripts/claude-code.sh --matrix`). A test without its binary
//! skips with the command that fetches it, unless `MNEME_REQUIRE_CLAUDE=1` (CI) makes the absence
//! a failure.

use mneme_core::versions::{self, ClaudeVersion};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether a missing binary fails the test instead of skipping it (`MNEME_REQUIRE_CLAUDE=1`).
pub fn required() -> bool {
    std::env::var("MNEME_REQUIRE_CLAUDE").is_ok_and(|v| v == "1")
}

/// The pinned binary (`MNEME_CLAUDE_BIN`), or `None` after saying why the caller skips; panics
/// when it is required.
pub fn pinned() -> Option<PathBuf> {
    let found = std::env::var_os("MNEME_CLAUDE_BIN").map(PathBuf::from).filter(|p| p.is_file());
    if found.is_none() {
        skip("MNEME_CLAUDE_BIN does not name the Claude Code binary; run: export MNEME_CLAUDE_BIN=\"$(scripts/claude-code.sh)\"");
    }
    found
}

/// Every existing binary `MNEME_CLAUDE_BINS` names, by release (unparsable pairs are left out).
pub fn listed() -> BTreeMap<ClaudeVersion, PathBuf> {
    parse_bins(&std::env::var("MNEME_CLAUDE_BINS").unwrap_or_default())
}

fn parse_bins(listed: &str) -> BTreeMap<ClaudeVersion, PathBuf> {
    listed
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .filter_map(|(v, p)| Some((v.trim().parse().ok()?, PathBuf::from(p))))
        .filter(|(_, p): &(ClaudeVersion, PathBuf)| p.is_file())
        .collect()
}

/// Every release the environment names a binary for: the matrix's and the pinned one (its
/// release read from `--version`), oldest first.
pub fn all() -> Vec<(ClaudeVersion, PathBuf)> {
    let mut out = listed();
    if let Some(path) = std::env::var_os("MNEME_CLAUDE_BIN").map(PathBuf::from).filter(|p| p.is_file()) {
        if let Some(v) = version_of(&path) {
            out.entry(v).or_insert(path);
        }
    }
    out.into_iter().collect()
}

/// Why the binaries a test needs are not there, with the command that fetches them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing(pub String);

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A binary for each of `releases`, or why not.
pub fn for_releases(releases: &[ClaudeVersion]) -> Result<BTreeMap<ClaudeVersion, PathBuf>, Missing> {
    let bins = listed();
    match releases.iter().find(|v| !bins.contains_key(v)) {
        Some(v) => Err(Missing(format!(
            "no Claude Code {v} binary in MNEME_CLAUDE_BINS; run: export MNEME_CLAUDE_BINS=\"$(scripts/claude-code.sh --matrix)\""
        ))),
        None => Ok(bins),
    }
}

/// A binary for every release of the matrix (`versions::matrix`), or why not.
pub fn matrix() -> Result<BTreeMap<ClaudeVersion, PathBuf>, Missing> {
    for_releases(&versions::matrix())
}

/// The release a binary reports with `--version` (`2.1.197 (Claude Code)`).
pub fn version_of(binary: &Path) -> Option<ClaudeVersion> {
    let out = Command::new(binary).arg("--version").output().ok()?;
    String::from_utf8_lossy(&out.stdout).split_whitespace().next()?.parse().ok()
}

/// Says why a test does not run; under `MNEME_REQUIRE_CLAUDE=1` the absence fails it instead.
pub fn skip(why: &str) {
    assert!(!required(), "MNEME_REQUIRE_CLAUDE=1 but {why}");
    eprintln!("skipped: {why}");
}

/// The binaries found, or `None` after [`skip`] said why not.
pub fn or_skip<T>(found: Result<T, Missing>) -> Option<T> {
    found.map_err(|why| skip(&why.0)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_name_existing_binaries_by_release() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "").unwrap();
        std::fs::write(&b, "").unwrap();
        let listed = format!("2.1.99={},2.1.100={}, x={},2.1.5={}/missing,,", b.display(), a.display(), a.display(), dir.path().display());
        let bins = parse_bins(&listed);
        let releases: Vec<String> = bins.keys().map(ToString::to_string).collect();
        // By release, not by text ("2.1.100" < "2.1.99" as strings); junk and absent files dropped.
        assert_eq!(releases, ["2.1.99", "2.1.100"]);
        assert_eq!(bins.values().collect::<Vec<_>>(), [&b, &a]);
    }
}
