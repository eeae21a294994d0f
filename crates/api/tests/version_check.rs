//! The once-per-release check: a new Claude Code release triggers one run of the user's own
//! binary on the project used last; the same release does not run it again; the answer is kept.
//! A stand-in `claude` on PATH reports the release and fails when run for real, so the check's
//! bookkeeping is tested without the network or a real binary (`verify` itself is tested
//! against the real releases in crates/cli/tests/verify.rs).

use mneme_api::{FixedClock, Mneme};
use mneme_testsupport::TestHome;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

fn fake_claude(bin_dir: &Path, version: &str, runs_log: &Path) {
    std::fs::create_dir_all(bin_dir).unwrap();
    let p = bin_dir.join("claude");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version} (Claude Code)'; exit 0; fi\necho run >> '{}'\necho 'no network here' >&2\nexit 3\n",
            runs_log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn runs_once_per_release_on_the_project_used_last() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    // Claude Code's own record of the project: a transcript in its projects folder.
    let key = mneme_core::sanitize::sanitize_path(&repo.to_string_lossy());
    h.write(
        h.config_home().join("projects").join(&key).join("s.jsonl"),
        &format!("{{\"type\":\"user\",\"cwd\":{:?},\"sessionId\":\"s\"}}\n", repo.to_string_lossy()),
    );
    let bin = h.root.join("bin");
    let runs = h.root.join("runs.log");
    let mneme = |version: &str| {
        fake_claude(&bin, version, &runs);
        let env = h.env.clone().set_var("PATH", bin.to_string_lossy().to_string());
        Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_764_590_000)))
    };
    let runs_so_far = || std::fs::read_to_string(&runs).map(|s| s.lines().count()).unwrap_or(0);

    let first = mneme("2.1.340").version_check().unwrap();
    assert!(first.ran_now);
    assert_eq!(first.version.as_deref(), Some("2.1.340"));
    assert_eq!(first.project.as_deref(), Some(repo.as_path()));
    assert_eq!(first.status.as_deref(), Some("failed"), "{first:?}");
    assert_eq!(runs_so_far(), 1);

    let again = mneme("2.1.340").version_check().unwrap();
    assert!(!again.ran_now, "same release: the kept answer, no second run");
    assert_eq!(again.status, first.status);
    assert_eq!(runs_so_far(), 1);

    let updated = mneme("2.1.341").version_check().unwrap();
    assert!(updated.ran_now, "Claude Code updated itself: check again");
    assert_eq!(runs_so_far(), 2);
}
