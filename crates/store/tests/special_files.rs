//! Files Mneme reads that a person or another program replaced with something else: a FIFO
//! (which a plain read waits on for ever), a folder. Each call runs on a thread and must come
//! back within a generous limit, so a hang is a failure rather than a test that never ends.
//! Also the names a new memory may take: Claude Code must be able to see it.

use mneme_core::clock::FixedClock;
use mneme_store::memdir::{Memdir, MemdirError, NewMemory, Scope};
use mneme_store::Environment;
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Runs `f` on a thread; its result, or a failure after 25 s (a read waiting on a FIFO).
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
    let status = std::process::Command::new("mkfifo").arg(p).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", p.display());
}

struct Folder {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Folder {
    fn new() -> Folder {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(root.join("mem")).unwrap();
        Folder { _tmp: tmp, root }
    }
    fn mem(&self) -> PathBuf {
        self.root.join("mem")
    }
    fn memdir(&self) -> Memdir {
        Memdir::new(self.mem(), self.root.join("trash"), Arc::new(FixedClock::at_unix_secs(1_700_000_000)))
    }
    fn write(&self, rel: &str, text: &str) {
        let p = self.mem().join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
}

fn new_memory(name: &str, file: Option<&str>) -> NewMemory {
    NewMemory {
        name: name.into(),
        description: "d".into(),
        memory_type: None,
        body: "body\n".into(),
        file_name: file.map(str::to_string),
        scope: Scope::Private,
    }
}

/// A FIFO as a trash entry's record.json: `restore` (and `purge --all`, through the trash
/// list) read it and waited for ever. Now the entry is damaged, saying what is there.
#[test]
fn a_fifo_as_a_trash_record_is_refused_at_once() {
    let f = Folder::new();
    f.write("a.md", "---\nname: a\n---\nA\n");
    let entry = f.memdir().delete("a.md").unwrap();
    let record = f.root.join("trash").join(&entry.id).join("record.json");
    fs::remove_file(&record).unwrap();
    mkfifo(&record);

    let m = f.memdir();
    let id = entry.id.clone();
    let err = within("restore", move || m.restore(&id)).unwrap_err();
    assert_eq!(err.code(), "trash-entry-damaged", "{err}");
    let text = err.to_string();
    assert!(text.contains("record.json is a named pipe (FIFO)") && text.contains("move it aside or delete it"), "{text}");

    let m = f.memdir();
    let listing = within("the trash list", move || m.list_trash()).unwrap();
    assert!(listing.entries.is_empty());
    assert_eq!(listing.damaged.len(), 1);
    assert!(listing.damaged[0].message.contains("named pipe"), "{:?}", listing.damaged[0]);

    // Emptying the trash passes it by; purging it by id removes it.
    let m = f.memdir();
    within("empty the trash", move || m.empty_trash()).unwrap();
    let m = f.memdir();
    let id = entry.id.clone();
    within("purge", move || m.purge_trash(&id)).unwrap();
    assert!(!record.parent().unwrap().exists());
}

/// A home whose Claude Code settings.json is a FIFO (`kind` "fifo") or a folder ("folder"),
/// with the words an error about it must hold.
struct SettingsReplaced {
    _folder: Folder,
    env: Environment,
    settings: PathBuf,
    want: &'static str,
}

fn settings_replaced_by(kind: &str) -> SettingsReplaced {
    let f = Folder::new();
    let config = f.root.join("home/.claude");
    fs::create_dir_all(&config).unwrap();
    let env = Environment::with_home(f.root.join("home")).set_var("CLAUDE_CONFIG_DIR", config.to_str().unwrap());
    let settings = config.join("settings.json");
    let want = match kind {
        "fifo" => {
            mkfifo(&settings);
            "it is a named pipe (FIFO), not a plain file"
        }
        _ => {
            fs::create_dir(&settings).unwrap();
            "it is a folder, not a plain file"
        }
    };
    SettingsReplaced { _folder: f, env, settings, want }
}

/// A FIFO or a folder as Claude Code's settings.json when Mneme changes a setting: the read
/// waited for ever, and a folder gave a bare "Is a directory (os error 21)".
#[test]
fn a_settings_edit_over_a_fifo_or_folder_says_what_is_there() {
    for kind in ["fifo", "folder"] {
        let SettingsReplaced { _folder, env, settings, want } = settings_replaced_by(kind);
        for remove in [false, true] {
            let env = env.clone();
            let err = within("the settings edit", move || {
                if remove {
                    mneme_store::settings::remove_user_setting(&env, "autoDreamEnabled")
                } else {
                    mneme_store::settings::write_user_setting(&env, "autoDreamEnabled", serde_json::Value::Bool(true))
                }
                .map_err(|e| e.to_string())
            })
            .unwrap_err();
            let text = err;
            assert!(text.contains("settings.json") && text.contains(want) && text.contains("move it aside"), "{kind}: {text}");
            assert!(!text.contains("os error 21"), "{text}");
        }
        let meta = fs::symlink_metadata(&settings).unwrap();
        assert!(if kind == "fifo" { meta.file_type().is_fifo() } else { meta.is_dir() }, "left in place");
    }
}

/// A name starting with '.' and `memory.md` in any case were created; Claude Code's scan
/// leaves the first out, and the second is the index on macOS and Windows.
#[test]
fn a_new_memory_takes_a_name_claude_code_sees() {
    let f = Folder::new();
    let m = f.memdir();
    for file in [".hidden.md", ".notes/a.md", "memory.md", "Memory.md", "notes/memory.md"] {
        let err = m.create(&new_memory("x", Some(file))).unwrap_err();
        assert!(matches!(err, MemdirError::InvalidPath { .. }), "{file}: {err}");
        assert!(!f.mem().join(file).exists(), "{file}");
    }
    let err = m.create(&new_memory("x", Some(".hidden.md"))).unwrap_err().to_string();
    assert!(err.contains("starts with '.'") && err.contains("name it hidden.md instead"), "{err}");
    let err = m.create(&new_memory("x", Some("memory.md"))).unwrap_err().to_string();
    assert!(err.contains("same file") && err.contains("MEMORY.md"), "{err}");
    // A name with no letters or digits no longer becomes memory.md.
    assert_eq!(m.create(&new_memory("😀", None)).unwrap().rel_path, "untitled.md");

    m.create(&new_memory("plain", Some("plain.md"))).unwrap();
    for to in [".plain.md", "memory.md", "MeMoRy.md", ".old/plain.md"] {
        let err = m.rename("plain.md", to).unwrap_err();
        assert!(matches!(err, MemdirError::InvalidPath { .. }), "{to}: {err}");
        assert!(m.check_rename("plain.md", to).is_err(), "{to}");
    }
    assert!(f.mem().join("plain.md").is_file());
}

/// Files that already have such names are still read, edited, renamed away, deleted and
/// restored: only a new name is held to the rule.
#[test]
fn existing_files_with_such_names_still_work() {
    let f = Folder::new();
    f.write(".hidden.md", "---\nname: hidden\ndescription: d\n---\nold\n");
    f.write("memory.md", "---\nname: lower\ndescription: d\n---\nold\n");
    let m = f.memdir();
    for rel in [".hidden.md", "memory.md"] {
        let read = m.read(rel).unwrap();
        let new_text = read.content.replace("old", "new");
        m.update(rel, &new_text, &read.revision).unwrap();
        assert!(fs::read_to_string(f.mem().join(rel)).unwrap().contains("new"));
        let entry = m.delete(rel).unwrap();
        assert!(!f.mem().join(rel).exists());
        m.restore(&entry.id).unwrap();
        assert!(f.mem().join(rel).is_file(), "{rel} restored");
    }
    let renamed = m.rename(".hidden.md", "hidden.md").unwrap();
    assert_eq!(renamed.new_rel_path, "hidden.md");
}

/// The errors about the trash speak to every caller: what is wrong, not "reload the list".
#[test]
fn trash_id_errors_say_what_is_wrong() {
    let f = Folder::new();
    let m = f.memdir();
    for id in ["123-nope", "../../etc/passwd"] {
        let err = m.restore(id).unwrap_err().to_string();
        assert!(err.to_lowercase().contains("no trash entry has the id"), "{err}");
        assert!(!err.to_lowercase().contains("reload"), "{err}");
    }
}

/// A FIFO named like a memory: the reason given says what it is.
#[test]
fn a_fifo_topic_file_is_named_for_what_it_is() {
    let f = Folder::new();
    mkfifo(&f.mem().join("fifo.md"));
    let m = f.memdir();
    let err = within("read", move || m.read("fifo.md")).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("fifo.md") && text.contains("named pipe"), "{text}");
    let m = f.memdir();
    let err = within("delete", move || m.delete("fifo.md")).unwrap_err().to_string();
    assert!(err.contains("it is a named pipe (FIFO)") && err.contains("move it aside or delete it"), "{err}");
}

/// A FIFO left under the name of a pending index-sync note (`.mneme-index-sync-*.json`):
/// repairing the index read every note with a plain read and waited on it for ever. Now it is
/// an unreadable note, removed like any other.
#[test]
fn a_fifo_as_a_pending_index_note_does_not_hold_the_repair() {
    let f = Folder::new();
    f.write("a.md", "---\nname: a\ndescription: d\n---\nA\n");
    let note = f.mem().join(".mneme-index-sync-1-1.json");
    mkfifo(&note);
    let m = f.memdir();
    let fixes = within("the index repair", move || m.repair_stale_index_lines()).unwrap();
    assert!(fixes.is_empty(), "{fixes:?}");
    assert!(fs::symlink_metadata(&note).is_err(), "the unreadable note was removed");
}

/// Merging a folder that holds a FIFO named like a memory: it is left where it is, and the
/// reason says what it is rather than only "not a plain file".
#[test]
fn a_merge_names_a_fifo_it_leaves_behind() {
    let f = Folder::new();
    let src_root = f.root.join("other");
    fs::create_dir_all(&src_root).unwrap();
    fs::write(src_root.join("a.md"), "---\nname: a\ndescription: d\n---\nA\n").unwrap();
    mkfifo(&src_root.join("pipe.md"));
    let src = Memdir::new(src_root.clone(), f.root.join("trash2"), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    let m = f.memdir();
    let out = within("the merge", move || m.merge_from(&src, true)).unwrap();
    assert_eq!(out.moved.len(), 1, "{out:?}");
    let skipped: Vec<_> = out.skipped.iter().filter(|s| s.rel_path == "pipe.md").collect();
    assert_eq!(skipped.len(), 1, "{out:?}");
    assert!(skipped[0].reason.contains("it is a named pipe (FIFO), not a plain file"), "{:?}", skipped[0]);
    assert!(fs::symlink_metadata(src_root.join("pipe.md")).unwrap().file_type().is_fifo(), "left in place");
}

/// A memory past the size the store reads whole is not read whole by a merge either (it read
/// any size into memory to compare it): it is left behind with the reason.
#[test]
fn a_merge_does_not_read_a_huge_file_whole() {
    let f = Folder::new();
    f.write("big.md", "---\nname: big\n---\nhere\n");
    let src_root = f.root.join("other");
    fs::create_dir_all(&src_root).unwrap();
    let big = fs::File::create(src_root.join("big.md")).unwrap();
    big.set_len((64 << 20) + 1).unwrap();
    drop(big);
    let src = Memdir::new(src_root.clone(), f.root.join("trash2"), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    let out = f.memdir().merge_from(&src, true).unwrap();
    assert!(out.moved.is_empty() && out.renamed.is_empty(), "{out:?}");
    assert_eq!(out.skipped.len(), 1, "{out:?}");
    assert!(out.skipped[0].reason.contains("larger than 64 MiB"), "{:?}", out.skipped[0]);
    assert!(src_root.join("big.md").is_file(), "left in place");
}

/// A FIFO or socket named like a memory: the scan's problem says which of them it is.
#[test]
fn a_scan_names_a_fifo_or_socket_for_what_it_is() {
    let f = Folder::new();
    mkfifo(&f.mem().join("fifo.md"));
    let _socket = std::os::unix::net::UnixListener::bind(f.mem().join("sock.md")).unwrap();
    let m = f.memdir();
    let scan = within("the scan", move || m.scan()).unwrap();
    let message = |rel: &str| {
        scan.problems.iter().find(|p| p.rel_path == rel).map(|p| p.message.clone()).unwrap_or_else(|| panic!("{rel}: {:?}", scan.problems))
    };
    let fifo = message("fifo.md");
    assert!(fifo.contains("This is a named pipe (FIFO), not a plain file") && fifo.contains("Move it aside or delete it"), "{fifo}");
    let sock = message("sock.md");
    assert!(sock.contains("This is a socket, not a plain file"), "{sock}");
}

/// Claude Code's settings.json as a FIFO or a folder, when settings are loaded and when one is
/// changed: the error says what is there and what to do, and does not end by asking to check
/// permissions, which would not mend it. A file that cannot be read for lack of permission
/// still says to check them.
#[test]
fn a_settings_read_error_asks_about_permissions_only_when_they_are_the_cause() {
    use mneme_store::settings::{SettingSource, SettingsFile};
    for kind in ["fifo", "folder"] {
        let SettingsReplaced { _folder, env, settings, want } = settings_replaced_by(kind);
        let (e, p) = (env.clone(), settings.clone());
        let loaded = within("the settings load", move || {
            SettingsFile::load(&e, SettingSource::User, &p, true).error.map(|e| e.to_string())
        });
        let text = loaded.expect("an error");
        assert!(text.contains("settings.json") && text.contains(want) && text.contains("move it aside or delete it"), "{kind}: {text}");
        assert!(!text.contains("readable"), "{kind}: {text}");
        let e = env.clone();
        let text = within("the settings edit", move || {
            mneme_store::settings::write_user_setting(&e, "autoDreamEnabled", serde_json::Value::Bool(true)).map_err(|e| e.to_string())
        })
        .unwrap_err();
        assert!(text.contains(want) && !text.contains("readable"), "{kind}: {text}");
    }

    let err = mneme_store::settings::SettingsError::Read {
        path: "/x/settings.json".into(),
        shown: "/x/settings.json".into(),
        source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    };
    assert!(err.to_string().contains("Check that the file and its folder are readable."), "{err}");
}
