//! Extraction's own files in Mneme's data folder (`extract/modes.json`, the run log, inbox
//! items) replaced by a FIFO or a folder: a plain read of a FIFO waits for ever, which froze
//! the app's inbox screen and `mneme serve`'s background extraction. Each call runs on a
//! thread and must return within a generous limit, so a hang fails instead of never ending.

use mneme_core::clock::FixedClock;
use mneme_extract::record;
use mneme_extract::Inbox;
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(25)) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not return within 25 s: it is waiting on the FIFO"),
    }
}

fn mkfifo(p: &Path) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let status = std::process::Command::new("mkfifo").arg(p).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", p.display());
}

fn data_dir() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let data = fs::canonicalize(t.path()).unwrap().join("data");
    fs::create_dir_all(&data).unwrap();
    (t, data)
}

/// `<data>/extract/modes.json` as a FIFO: reading a project's review mode waited for ever.
#[test]
fn a_fifo_as_the_review_modes_file_is_refused_at_once() {
    let (_t, data) = data_dir();
    let modes = data.join("extract/modes.json");
    mkfifo(&modes);
    let d = data.clone();
    let err = within("the review mode", move || record::mode(&d, Path::new("/m"))).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("modes.json is a named pipe (FIFO)") && text.contains("move it aside or delete it"), "{text}");
    let d = data.clone();
    let err = within("setting the review mode", move || record::set_mode(&d, Path::new("/m"), record::ReviewMode::Review)).unwrap_err();
    assert!(err.to_string().contains("named pipe"), "{err}");
    assert!(fs::symlink_metadata(&modes).unwrap().file_type().is_fifo(), "left in place");

    // A folder says so too, instead of "Is a directory".
    fs::remove_file(&modes).unwrap();
    fs::create_dir(&modes).unwrap();
    let text = record::mode(&data, Path::new("/m")).unwrap_err().to_string();
    assert!(text.contains("modes.json is a folder, not a plain file"), "{text}");
}

/// The run log as a FIFO: the app's run history read it from the end, or whole, for ever.
#[test]
fn a_fifo_as_the_run_log_is_refused_at_once() {
    let (_t, data) = data_dir();
    let memory_dir = PathBuf::from("/some/memory");
    // Where the run log of that memory folder lives: the one file under `projects/`.
    let project = data.join("extract/projects").join(mneme_core::sanitize::sanitize_path("/some/memory"));
    mkfifo(&project.join("runs.jsonl"));
    let (d, m) = (data.clone(), memory_dir.clone());
    let err = within("the newest runs", move || mneme_extract::recent_runs(&d, &m, 5)).unwrap_err();
    assert!(err.to_string().contains("runs.jsonl is a named pipe (FIFO)"), "{err}");
    let (d, m) = (data.clone(), memory_dir.clone());
    let err = within("every run", move || record::runs(&d, &m)).unwrap_err();
    assert!(err.to_string().contains("runs.jsonl is a named pipe (FIFO)"), "{err}");
}

/// An inbox item file as a FIFO: listing the inbox read every item file, and waited for ever.
#[test]
fn a_fifo_among_inbox_items_does_not_hold_the_inbox() {
    let (_t, data) = data_dir();
    mkfifo(&data.join("extract/inbox/0000000000001-deadbeef.json"));
    let d = data.clone();
    let items = within("the inbox list", move || Inbox::new(d, Arc::new(FixedClock::at_unix_secs(1_700_000_000))).list(None, true));
    assert!(items.unwrap().is_empty());
    let d = data.clone();
    let err = within("one inbox item", move || {
        Inbox::new(d, Arc::new(FixedClock::at_unix_secs(1_700_000_000))).get("0000000000001-deadbeef")
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("named pipe"), "{text}");
}
