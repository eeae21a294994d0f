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
use std::sync::Arc;
use mneme_testsupport::special_files::{mkfifo, within};

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

/// A FIFO under the name of a session-notes override (`<config>/session-memory/config/
/// template.md` or `prompt.md`): reading it waited for ever, which stopped every session-notes
/// update. It is unreadable, so the default is used, as for any unreadable override.
#[test]
fn a_fifo_as_a_session_notes_override_falls_back_to_the_default() {
    let (t, _) = data_dir();
    let home = fs::canonicalize(t.path()).unwrap().join("home");
    let config = home.join(".claude");
    let env = mneme_store::Environment::with_home(&home).set_var("CLAUDE_CONFIG_DIR", config.to_str().unwrap());
    let dir = mneme_extract::session_memory::config_dir(&env);
    mkfifo(&dir.join("template.md"));
    mkfifo(&dir.join("prompt.md"));
    let e = env.clone();
    let template = within("the notes template", move || mneme_extract::session_memory::load_template(&e));
    assert_eq!(template, mneme_extract::session_memory::DEFAULT_TEMPLATE);
    let e = env.clone();
    let prompt = within("the notes prompt", move || mneme_extract::session_memory::load_prompt(&e));
    assert_eq!(prompt, mneme_extract::session_memory::default_update_prompt());
    // A plain override is still read as it is.
    fs::remove_file(dir.join("template.md")).unwrap();
    fs::write(dir.join("template.md"), "# Mine\n").unwrap();
    assert_eq!(mneme_extract::session_memory::load_template(&env), "# Mine\n");
}

/// An inbox item file that is a FIFO is listed among the damaged items, saying what it is and
/// what to do, and its error does not ask to check that the data folder is writable (which
/// would not mend it).
#[test]
fn a_fifo_inbox_item_is_listed_as_damaged_for_what_it_is() {
    let (_t, data) = data_dir();
    let item = data.join("extract/inbox/0000000000001-deadbeef.json");
    mkfifo(&item);
    let d = data.clone();
    let damaged = within("the damaged items", move || Inbox::new(d, Arc::new(FixedClock::at_unix_secs(1_700_000_000))).damaged()).unwrap();
    let texts: Vec<String> = damaged.iter().map(ToString::to_string).collect();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(texts[0].contains("0000000000001-deadbeef.json is a named pipe (FIFO)") && texts[0].contains("move it aside or delete it"), "{texts:?}");
    let d = data.clone();
    let err = within("one inbox item", move || Inbox::new(d, Arc::new(FixedClock::at_unix_secs(1_700_000_000))).get("0000000000001-deadbeef"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("named pipe (FIFO)") && !err.contains("writable"), "{err}");
    assert!(fs::symlink_metadata(&item).unwrap().file_type().is_fifo(), "left in place");
}

/// Extraction's state errors (and the inbox's) name the data folder's permissions only when
/// they are the cause: a refusal that already says what is there is passed on as it is.
#[test]
fn state_errors_ask_for_a_writable_folder_only_for_permission_errors() {
    let (_t, data) = data_dir();
    let state = data.join("extract/projects/p/sessions/s.json");
    mkfifo(&state);
    let refusal = mneme_store::open::read_own_file(&state, 1 << 20).unwrap_err();
    let fifo = mneme_extract::ExtractError::State { action: "read", path: state.clone(), source: refusal }.to_string();
    assert!(fifo.contains("s.json is a named pipe (FIFO)") && fifo.contains("move it aside or delete it"), "{fifo}");
    assert!(!fifo.contains("writable"), "{fifo}");
    let denied = mneme_extract::ExtractError::State {
        action: "write",
        path: state.clone(),
        source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    }
    .to_string();
    // A write this account may not make says so with the way out (the disk's refusal's words).
    assert!(denied.contains("could not write") && denied.contains("this account may not change") && denied.contains("Ask its owner for write access"), "{denied}");
    let other = mneme_extract::InboxError::Io { action: "write", path: state.clone(), source: std::io::Error::from(std::io::ErrorKind::StorageFull) }
        .to_string();
    assert!(other.contains("could not write") && !other.contains("writable"), "{other}");
    let denied = mneme_extract::InboxError::Io { action: "write", path: state, source: std::io::Error::from(std::io::ErrorKind::PermissionDenied) }
        .to_string();
    assert!(denied.contains("this account may not change") && !denied.contains("os error"), "{denied}");
    // A read refused keeps the words that send the person to the folder's permissions.
    let read = mneme_extract::InboxError::Io { action: "read", path: data.join("x.json"), source: std::io::Error::from(std::io::ErrorKind::PermissionDenied) }
        .to_string();
    assert!(read.contains("Check that Mneme's data folder is writable."), "{read}");
}

/// A memory folder whose `MEMORY.md` is a FIFO: the offline extractor read the index with a
/// plain read and waited for ever (a background extraction stopped with it). It now goes on as
/// with an index it cannot read.
#[test]
fn a_fifo_as_the_memory_index_does_not_stop_the_offline_extractor() {
    let t = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(t.path()).unwrap();
    let memory = root.join("memory");
    fs::create_dir_all(&memory).unwrap();
    mkfifo(&memory.join("MEMORY.md"));
    let memdir = mneme_store::memdir::Memdir::new(memory.clone(), root.join("trash"), Arc::new(FixedClock::at_unix_secs(1_800_000_000)));
    let message = match mneme_extract::transcript::parse_entry(serde_json::json!({"type": "user", "uuid": "u",
        "message": {"role": "user", "content": "Remember that I prefer tabs over spaces."}}))
    {
        mneme_extract::transcript::Entry::Conversation(c) => *c,
        other => panic!("{other:?}"),
    };
    let out = within("the offline extractor", move || mneme_extract::offline::extract(&[message], &memdir, &[]).map(|o| o.changeset.changes.len()));
    assert!(out.is_ok(), "{out:?}");
    assert!(fs::symlink_metadata(memory.join("MEMORY.md")).unwrap().file_type().is_fifo(), "left in place");
}

/// A memory file of an inbox item replaced by a FIFO before the user keeps the item: keeping
/// read it with a plain read to compare it, and waited for ever. It is now refused at once and
/// left in place.
#[test]
fn a_fifo_in_the_memory_folder_does_not_stop_keeping_an_item() {
    let (t, data) = data_dir();
    let memory = data.parent().unwrap().join("memory");
    fs::create_dir_all(&memory).unwrap();
    let inbox = Inbox::new(&data, Arc::new(FixedClock::at_unix_secs(1_800_000_000)));
    let change = |name: &str, after: &str| mneme_agent::FileChange { path: memory.join(name), before: None, after: Some(after.into()), reason: "t".into(), extra: Default::default() };
    let item = inbox
        .stage(mneme_extract::inbox::NewItem {
            project_root: t.path().to_path_buf(),
            memory_dir: memory.clone(),
            session_id: None,
            transcript: None,
            source: "extract_memories".into(),
            changeset: mneme_agent::Changeset { root: memory.clone(), changes: vec![change("tabs.md", "Tabs.\n"), change("MEMORY.md", "- [Tabs](tabs.md) — tabs\n")], extra: Default::default() },
        })
        .unwrap();
    mkfifo(&memory.join("MEMORY.md"));
    mkfifo(&memory.join("tabs.md"));
    let id = item.id.clone();
    let kept = within("keeping the item", move || inbox.keep(&id).map(|i| i.status));
    let text = kept.unwrap_err().to_string();
    assert!(text.contains("tabs.md") && text.contains("named pipe (FIFO)") && text.contains("move it aside or delete it"), "{text}");
    for name in ["MEMORY.md", "tabs.md"] {
        assert!(fs::symlink_metadata(memory.join(name)).unwrap().file_type().is_fifo(), "{name} left in place");
    }
}

/// A session's state or notes the disk refuses (full, read-only) say which and what to do, not
/// the system's bare words: the cursor and session-memory state in Mneme's data folder, the
/// notes file in Claude Code's.
#[test]
fn session_state_and_notes_refused_by_the_disk_say_what_to_do() {
    let (_t, data) = data_dir();
    let state = data.join("extract/projects/p/sessions/s.session-memory.json");
    let full = mneme_extract::ExtractError::State { action: "write", path: state.clone(), source: std::io::Error::from_raw_os_error(28) }.to_string();
    assert!(full.contains("is full. Free some space on it, then try again") && full.contains(&state.display().to_string()) && !full.contains("os error"), "{full}");
    let notes = data.join("session-memory/summary.md");
    let read_only = mneme_extract::session_memory::SessionMemoryError::Setup { path: notes.clone(), source: std::io::Error::from_raw_os_error(30) }.to_string();
    assert!(read_only.contains("is mounted read-only. Remount it read-write") && read_only.contains(&notes.display().to_string()) && !read_only.contains("os error"), "{read_only}");
}
