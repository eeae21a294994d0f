//! The dream history on a disk mounted read-only: approving, rejecting and undoing a dream,
//! and setting the mode, are refused naming what could not be saved (the dream's record, the
//! mode file), not `records.lock`, the lock file each takes first, which is a detail to the
//! person reading it. Needs root for the tmpfs; says it did not run otherwise. And a mode file
//! this account may not read is not written over (as `nobody` when run as root).

mod common;

use common::*;
use mneme_dream::{DreamError, DreamMode, DreamRecord, DreamStatus, Dreams, FileChange, Trigger};
use mneme_testsupport::tmpfs::Tmpfs;
use std::path::Path;

fn saved(dreams: &Dreams, mem: &Path, id: &str, status: DreamStatus, changes: Vec<FileChange>) {
    let history = dreams.history(mem);
    history.reserve_id(id.parse().unwrap()).unwrap();
    let gate = dreams.status(&dreams.target_for_memory_dir(mem), &mneme_dream::Enablement::On, &mneme_dream::CachedFlags::default());
    let mut rec = DreamRecord::started(id.into(), mem, NOW as i64 * 1000, Trigger::Manual, ("offline".into(), None), gate);
    rec.status = status;
    rec.changeset.changes = changes;
    history.save(&rec).unwrap();
}

#[test]
fn a_read_only_disk_refuses_a_dream_s_records_naming_the_record_not_the_lock() {
    if !mneme_testsupport::accounts::root_or_skip("a dream history on a read-only tmpfs") {
        return;
    }
    let w = World::new();
    let Some(drive) = Tmpfs::mount(&w.home.root.join("drive"), "4m") else { panic!("root, but no tmpfs could be mounted") };
    let data = drive.path().join("mneme");
    let dreams = Dreams::new(w.home.env.clone().set_var("MNEME_DATA_DIR", data.to_string_lossy().to_string()), w.clock.clone());
    w.write("a.md", "a1\n");
    let edit = FileChange { path: w.mem.join("a.md"), before: Some("a0\n".into()), after: Some("a1\n".into()), reason: "a.md: edited".into(), extra: Default::default() };
    saved(&dreams, &w.mem, "1", DreamStatus::Pending, vec![edit.clone()]);
    saved(&dreams, &w.mem, "2", DreamStatus::Applied, vec![edit]);
    dreams.set_mode(&w.mem, DreamMode::Review).unwrap();
    let history = dreams.history(&w.mem);
    assert!(history.dir().join("records.lock").is_file(), "the premise: the lock file is there");
    drive.read_only();
    let before = tree(drive.path());

    let record = |id: &str| history.dir().join(format!("{id}.json"));
    let refused = |what: &str, r: Result<DreamRecord, DreamError>, names: &Path| {
        let e = r.map(|_| ()).expect_err(what);
        let said = e.to_string();
        eprintln!("{what}: {said}");
        assert!(matches!(&e, DreamError::Io { source, .. } if source.kind() == std::io::ErrorKind::ReadOnlyFilesystem), "{what}: {e:?}");
        assert!(said.starts_with(&format!("could not save {}: ", names.display())), "{what} names what could not be saved: {said}");
        assert!(!said.contains("records.lock"), "{what}: {said}");
        assert_eq!(tree(drive.path()), before, "{what} changed nothing");
    };
    refused("rejecting", dreams.reject(&w.mem, "1"), &record("1"));
    refused("approving", dreams.approve(&w.mem, "1"), &record("1"));
    refused("undoing", dreams.undo(&w.mem, Some("2"), false), &record("2"));
    // Which dream `--last` means is read under the lock: the history is what could not be saved.
    refused("undoing the last dream", dreams.undo(&w.mem, None, false), history.dir());
    refused("setting the mode", dreams.set_mode(&w.mem, DreamMode::Automatic).map(|_| dreams.show(&w.mem, "1").unwrap()), &history.dir().join("settings.json"));
    assert_eq!(w.read("a.md"), "a1\n", "the memory folder is untouched");
}

/// Set in the child [`a_mode_file_this_account_may_not_read_is_not_written_over`] starts as
/// `nobody`.
const CHILD: &str = "MNEME_TEST_DREAM_MODE_UNREADABLE_CHILD";

/// Setting the mode over a mode file this account may not read refuses, saying so, and leaves
/// the file as it was: it may hold other folders' modes (readable again once its permissions
/// are mended), and only a damaged file is replaced. It was written over with this folder's
/// mode alone, losing the others'.
#[test]
fn a_mode_file_this_account_may_not_read_is_not_written_over() {
    use std::os::unix::fs::PermissionsExt;
    if std::env::var_os(CHILD).is_none() && mneme_testsupport::accounts::is_root() {
        // Root reads any file whatever its mode: run this test again as `nobody`.
        let h = mneme_testsupport::TestHome::new();
        let me = mneme_testsupport::accounts::binary_for_nobody(&h, std::env::current_exe().unwrap().to_str().unwrap());
        let mut cmd = std::process::Command::new(me);
        cmd.args(["--exact", "a_mode_file_this_account_may_not_read_is_not_written_over", "--test-threads=1"]).env(CHILD, "1").current_dir("/");
        let out = mneme_testsupport::accounts::as_nobody(&mut cmd).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && said.contains("1 passed"), "as nobody: {said}");
        return;
    }
    let w = World::new();
    w.dreams.set_mode(&w.mem, DreamMode::Review).unwrap();
    let file = w.dreams.history(&w.mem).mode_file();
    let others = "{\n  \"modes\": {\n    \"/elsewhere/memory\": \"review\"\n  }\n}\n";
    std::fs::write(&file, others).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o200)).unwrap();
    assert!(std::fs::read(&file).is_err(), "file modes do not bind this user");
    let e = w.dreams.set_mode(&w.mem, DreamMode::Automatic).expect_err("an unreadable mode file is not written over");
    assert!(matches!(&e, DreamError::Io { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied), "{e:?}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), others, "the other folders' modes are kept");
}
