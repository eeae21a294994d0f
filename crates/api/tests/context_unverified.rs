//! "What Claude sees" for a Cowork session: from 2.1.304 Claude Code sends a managed file the
//! session's own account could have written as unverified instead of as the organization's
//! policy (docs/claude-code-versions.md, rows 87 and 88). The per-file list must say so, and
//! why, so the screen does not present such a file as policy; other sessions and older releases
//! keep the managed label, and the list reports nothing.

use mneme_api::{ContextRequest, ContextView, CouldWrite, FixedClock, Mneme};
use mneme_core::versions::ClaudeVersion;
use mneme_core::Layer;
use mneme_testsupport::{accounts, TestHome};
use std::path::Path;
use std::sync::Arc;

fn view(home: &TestHome, entrypoint: Option<&str>, release: ClaudeVersion, repo: &Path) -> ContextView {
    let env = match entrypoint {
        Some(e) => home.env.clone().set_var("CLAUDE_CODE_ENTRYPOINT", e),
        None => home.env.clone(),
    };
    let m = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_764_400_000)));
    m.context(&ContextRequest { cwd: repo.to_path_buf(), claude_version: Some(release), ..Default::default() }).unwrap()
}

#[test]
fn a_managed_file_the_cowork_session_could_have_written_is_reported_unverified_with_its_reason() {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    let managed = home.write("managed/CLAUDE.md", "Never push to main.\n");
    home.write("home/.claude/CLAUDE.md", "Use tabs.\n");
    // The test's own account made the file (root could change it anyway): in a Cowork session
    // of 2.1.337, the session's account could have written it.
    let expected = if accounts::is_root() { CouldWrite::Root } else { CouldWrite::File };

    for entrypoint in ["remote_cowork", "remote_cowork_trigger"] {
        for release in [ClaudeVersion::new(2, 1, 337), ClaudeVersion::new(2, 1, 304)] {
            let v = view(&home, Some(entrypoint), release, &repo);
            let file = v.files.iter().find(|f| f.path == managed).expect("the managed CLAUDE.md loads");
            let unverified = file.unverified.as_ref().unwrap_or_else(|| panic!("{entrypoint}, {release}: {:?}", v.files));
            assert_eq!(unverified.because, expected, "{entrypoint}, {release}");
            assert_eq!(unverified.reason, expected.describe());
            assert!(v.block.contains(Layer::MANAGED_UNVERIFIED_DESCRIPTION), "the block agrees: {}", v.block);
            let user = v.files.iter().find(|f| f.layer == Layer::User).expect("the user CLAUDE.md loads");
            assert!(user.unverified.is_none(), "only managed files are judged");

            // The page and `mneme context --json` read it as camelCase JSON.
            let json = serde_json::to_value(&v).unwrap();
            let listed = json["files"].as_array().unwrap().iter().find(|f| f["layer"] == "Managed").unwrap();
            assert_eq!(listed["unverified"]["reason"], expected.describe().as_str(), "{json}");
            assert!(listed["unverified"]["because"]["kind"].is_string(), "{json}");
        }
    }

    // Not a Cowork session, or a release before 2.1.304: the organization's file, nothing reported.
    for (entrypoint, release) in [
        (None, ClaudeVersion::new(2, 1, 337)),
        (Some("cli"), ClaudeVersion::new(2, 1, 337)),
        (Some("remote"), ClaudeVersion::new(2, 1, 337)),
        (Some("remote_cowork"), ClaudeVersion::new(2, 1, 303)),
    ] {
        let v = view(&home, entrypoint, release, &repo);
        let file = v.files.iter().find(|f| f.path == managed).expect("the managed CLAUDE.md loads");
        assert!(file.unverified.is_none(), "{entrypoint:?}, {release}: {file:?}");
        assert!(!v.block.contains(Layer::MANAGED_UNVERIFIED_DESCRIPTION), "{entrypoint:?}, {release}");
        let json = serde_json::to_value(&v).unwrap();
        assert!(json["files"][0]["unverified"].is_null(), "{json}");
    }
}
