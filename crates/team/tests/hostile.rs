//! Hostile git remote URLs (`parseGitRemote`), as a cloned repository's `.git/config` can hold
//! them: the repository identity is a host, owner and name without separators or traversal,
//! or nothing.

use mneme_team::repo::{github_slug, is_github_host, parse_git_remote};
use mneme_testsupport::hostile::{config, mutated_text, text};
use proptest::prelude::*;

fn remotes() -> Vec<Vec<u8>> {
    [
        "git@github.com:owner/name.git",
        "https://github.com/owner/name.git",
        "ssh://git@example.com:2222/owner/name",
        "https://user:pass@gitlab.example.org/group/project",
        "git://host.example/a/b.git",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn check(url: &str) -> Result<(), TestCaseError> {
    if let Some(r) = parse_git_remote(url) {
        for part in [&r.owner, &r.name] {
            prop_assert!(!part.is_empty() && !part.contains('/') && part != "." && part != "..", "{url:?} → {r:?}");
        }
        prop_assert!(!r.host.is_empty());
        // Claude Code's `git@([^:]+):` takes anything up to the colon as the host, slashes and
        // `@` included (`git@./x@github.com:o/n`); such a host must never count as github.com,
        // or a crafted remote would read and write another repository's team memory.
        if r.host.contains(['/', '@', '\\']) {
            prop_assert!(!is_github_host(&r.host), "{url:?} → {r:?}");
        }
    }
    if let Some(slug) = github_slug(url) {
        let parts: Vec<&str> = slug.split('/').collect();
        prop_assert!(parts.len() == 2 && parts.iter().all(|p| !p.is_empty() && *p != "." && *p != ".."), "{url:?} → {slug:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn damaged_remotes(url in mutated_text(remotes())) {
        check(&url)?;
    }

    #[test]
    fn arbitrary_remotes(url in text(), owner in text(), name in text()) {
        check(&url)?;
        check(&format!("git@github.com:{owner}/{name}"))?;
        check(&format!("https://github.com/{owner}/{name}.git"))?;
    }
}

/// Hosts with separators that random runs found: kept as plain cases so they are always tried.
#[test]
fn remotes_found_by_earlier_runs() {
    for url in ["git@./self.md@github.com:owner/name.git", "git@a/b.github.com:owner/name.git", "git@x@github.com:owner/name"] {
        check(url).unwrap();
    }
}

/// A repository whose `.git/config` is a FIFO (an unpacked archive can hold one): finding the
/// remote gives up on it at once instead of waiting for a writer.
#[test]
fn a_git_config_that_is_a_fifo_is_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let git = tmp.path().join(".git");
    std::fs::create_dir_all(&git).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(git.join("config")).status().unwrap().success());
    let cwd = tmp.path().to_path_buf();
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(mneme_team::repo::remote_url(&cwd)).unwrap());
    assert_eq!(wait.recv_timeout(std::time::Duration::from_secs(60)).expect("waited on the FIFO"), None);
}
