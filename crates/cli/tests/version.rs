//! `mneme --version` names the workspace version and the commit the binary was built from
//! (stamped by build.rs), so a bug report or an installed package names its exact build.

use std::process::Command;

#[test]
fn version_names_the_release_and_a_real_commit() {
    let out = Command::new(env!("CARGO_BIN_EXE_mneme")).arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let rest = text.trim().strip_prefix(&format!("mneme {} (commit ", env!("CARGO_PKG_VERSION"))).unwrap_or_else(|| panic!("{text}"));
    let commit = rest.strip_suffix(')').unwrap_or_else(|| panic!("{text}"));
    if let Ok(forced) = std::env::var("MNEME_COMMIT") {
        assert_eq!(commit, forced.trim());
        return;
    }
    assert!(commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()), "{text}");
    // A commit of this repository (HEAD may have moved on since the build; the stamp must still
    // name a real commit, not a made-up one).
    let known = Command::new("git").args(["cat-file", "-e", &format!("{commit}^{{commit}}")]).current_dir(env!("CARGO_MANIFEST_DIR")).status().unwrap();
    assert!(known.success(), "{commit} is not a commit of this repository");
}
