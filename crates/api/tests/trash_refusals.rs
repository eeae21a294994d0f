//! Deleting from the trash for good when the disk says no: one entry or the whole trash is
//! refused with the disk's code and words, the answer says what was deleted and what is still
//! in the trash ("Nothing was deleted" when nothing was), and no entry is left half deleted.
//! A read-only drive needs root to mount; a trash folder or entry this account may not change
//! needs an account file modes bind, so as root that test runs itself again as `nobody`.

#![cfg(target_os = "linux")]

mod common;

use common::{Before, Refusal};
use mneme_api::{ContextRequest, ErrorCode, FixedClock, Mneme};
use mneme_testsupport::{accounts, topic, write_file, TestHome};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Three memories in the trash of a project, with Mneme's data folder at `data`.
struct Trash {
    api: Mneme,
    req: ContextRequest,
    memdir: PathBuf,
    /// The project's trash folder (entries are its sub-folders).
    folder: PathBuf,
    ids: Vec<String>,
}

fn trash_of_three(t: &TestHome, data: &Path) -> Trash {
    let project = t.root.join("code/app");
    fs::create_dir_all(&project).unwrap();
    let memdir = t.memdir_for(&project);
    for name in ["alpha", "beta", "gamma"] {
        write_file(&memdir.join(format!("{name}.md")), &topic(name, &format!("about {name}"), "project", "body"));
    }
    let env = t.env.clone().set_var("MNEME_DATA_DIR", data.to_string_lossy().to_string());
    let api = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_764_400_000)));
    let req = ContextRequest { cwd: project, ..Default::default() };
    let ids: Vec<String> = ["alpha", "beta", "gamma"].iter().map(|n| api.delete_memory(&req, n).unwrap().id).collect();
    let folder = fs::read_dir(data.join("trash")).unwrap().next().unwrap().unwrap().path();
    Trash { api, req, memdir, folder, ids }
}

fn listed(t: &Trash) -> Vec<String> {
    let mut ids: Vec<String> = t.api.trash(&t.req).unwrap().entries.into_iter().map(|e| e.id).collect();
    ids.sort();
    ids
}

#[test]
fn a_read_only_trash_is_not_purged_or_emptied_and_says_nothing_was_deleted() {
    let Some((t, drive)) = common::home_with_drive("256k") else { return };
    let trash = trash_of_three(&t, &drive.path().join("mneme-data"));
    Refusal::ReadOnly.make(&drive);
    let before = Before::take(&[drive.path(), &trash.memdir]);

    let e = trash.api.purge_trash(&trash.req, &trash.ids[1]).unwrap_err();
    Refusal::ReadOnly.assert_answers("purging", &e, drive.path());
    assert!(e.message.ends_with(&format!("Nothing was deleted: trash entry \"{}\" is still in the trash.", trash.ids[1])), "{e}");
    before.assert_unchanged("purging");

    let e = trash.api.empty_trash(&trash.req).unwrap_err();
    Refusal::ReadOnly.assert_answers("emptying the trash", &e, drive.path());
    assert!(e.message.ends_with("Nothing was deleted: all 3 entries are still in the trash."), "{e}");
    before.assert_unchanged("emptying the trash");
    assert_eq!(listed(&trash), trash.ids);
    drop(trash);
    drop(drive);
}

/// Set in the child [`a_trash_this_account_may_not_change_keeps_each_entry_whole`] starts as
/// `nobody`.
const CHILD: &str = "MNEME_TEST_TRASH_REFUSALS_CHILD";

fn set_mode(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// A trash folder this account may not change keeps every entry whole (its folder could not be
/// removed, so nothing in it may go either); an entry folder of its own that it may not change
/// is kept whole while the others are deleted, and the answer names which went and which stay.
#[test]
fn a_trash_this_account_may_not_change_keeps_each_entry_whole() {
    if std::env::var_os(CHILD).is_none() && accounts::is_root() {
        // Root changes any folder whatever its mode: run this test again as `nobody`.
        let h = TestHome::new();
        let me = accounts::binary_for_nobody(&h, std::env::current_exe().unwrap().to_str().unwrap());
        let mut cmd = std::process::Command::new(me);
        cmd.args(["--exact", "a_trash_this_account_may_not_change_keeps_each_entry_whole", "--test-threads=1"]).env(CHILD, "1").current_dir("/");
        let out = accounts::as_nobody(&mut cmd).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && said.contains("1 passed"), "as nobody: {said}");
        return;
    }
    let t = TestHome::new();
    let trash = trash_of_three(&t, &t.root.join("mneme-data"));
    let entry = |i: usize| trash.folder.join(&trash.ids[i]);

    // The trash folder itself: nothing may be renamed or removed in it.
    set_mode(&trash.folder, 0o555);
    assert!(fs::create_dir(trash.folder.join("probe")).is_err(), "file modes do not bind this user");
    let before = Before::take(&[&trash.folder, &trash.memdir]);
    let e = trash.api.purge_trash(&trash.req, &trash.ids[0]).unwrap_err();
    assert_eq!(e.code, ErrorCode::PermissionDenied, "{e}");
    assert!(e.message.contains("this account may not change"), "{e}");
    assert!(e.message.ends_with(&format!("Nothing was deleted: trash entry \"{}\" is still in the trash.", trash.ids[0])), "{e}");
    before.assert_unchanged("purging from a trash folder this account may not change");
    let e = trash.api.empty_trash(&trash.req).unwrap_err();
    assert_eq!(e.code, ErrorCode::PermissionDenied, "{e}");
    assert!(e.message.ends_with("Nothing was deleted: all 3 entries are still in the trash."), "{e}");
    before.assert_unchanged("emptying a trash folder this account may not change");
    set_mode(&trash.folder, 0o755);

    // One entry's own folder: it stays whole, the two others go.
    set_mode(&entry(1), 0o555);
    let kept = Before::take(&[&entry(1)]);
    let e = trash.api.empty_trash(&trash.req).unwrap_err();
    assert_eq!(e.code, ErrorCode::PermissionDenied, "{e}");
    assert!(e.message.ends_with(&format!("2 trash entries were deleted for good. Trash entry \"{}\" is still in the trash.", trash.ids[1])), "{e}");
    kept.assert_unchanged("emptying the trash around an entry this account may not change");
    assert_eq!(listed(&trash), [trash.ids[1].clone()]);
    let names: Vec<String> = fs::read_dir(&trash.folder).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, [trash.ids[1].clone()], "nothing else is left in the trash folder");
    // Its memory can still be restored, with its index line.
    set_mode(&entry(1), 0o755);
    trash.api.restore_memory(&trash.req, &trash.ids[1]).unwrap();
    assert!(trash.memdir.join("beta.md").is_file());
}
