//! A project folder that is gone (deleted, renamed, on a drive that is not mounted) is refused
//! in words both shells can show: the desktop app and the browser page have no `--cwd` to pass.

use mneme_api::records::MemoryFolder;
use mneme_api::{ContextRequest, ErrorCode, FixedClock, Mneme};
use mneme_testsupport::TestHome;
use std::sync::Arc;

#[test]
fn a_project_folder_that_is_gone_is_refused_without_command_line_advice() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let mneme = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    std::fs::remove_dir_all(&repo).unwrap();
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    let errors = [
        ("context", mneme.context(&req).err()),
        ("verify", mneme.verify(&req).err()),
        ("dream records", mneme.dream_records(&MemoryFolder::Cwd(repo.clone())).err()),
    ];
    for (what, err) in errors {
        let err = err.unwrap_or_else(|| panic!("{what} answered for a folder that is gone"));
        assert_eq!(err.code, ErrorCode::NotFound, "{what}");
        assert_eq!(
            err.message,
            format!("{} is not a folder now: it may have been deleted, renamed or moved, or be on a drive that is not mounted. Open another project, or bring the folder back.", repo.display()),
            "{what}"
        );
    }
}
