//! "What Claude sees" for a project with a folder whose name is not UTF-8: the view still
//! encodes (the page gets it), with such a CLAUDE.md left out of the nested listing.

use mneme_api::{ContextRequest, FixedClock, Mneme};
use mneme_testsupport::TestHome;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

#[test]
fn a_nested_claude_md_in_a_folder_named_in_no_utf8_leaves_the_view_encodable() {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
    home.write(repo.join("docs/CLAUDE.md"), "Docs.\n");
    let odd = repo.join(std::ffi::OsStr::from_bytes(b"sub\xff"));
    std::fs::create_dir_all(&odd).unwrap();
    std::fs::write(odd.join("CLAUDE.md"), "NESTED\n").unwrap();
    let m = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_400_000)));
    let v = m.context(&ContextRequest { cwd: repo.clone(), ..Default::default() }).unwrap();
    let json = serde_json::to_value(&v).expect("the view encodes");
    assert!(v.block.contains("Use tabs."));
    assert_eq!(v.nested_candidates, vec![repo.join("docs/CLAUDE.md")]);
    assert_eq!(json["nestedCandidates"].as_array().map(Vec::len), Some(1), "{json}");
}
