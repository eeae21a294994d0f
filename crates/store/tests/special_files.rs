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

/// A FIFO or a folder as Claude Code's settings.json when Mneme changes a setting: the read
/// waited for ever, and a folder gave a bare "Is a directory (os error 21)".
#[test]
fn a_settings_edit_over_a_fifo_or_folder_says_what_is_there() {
    for kind in ["fifo", "folder"] {
        let f = Folder::new();
        let config = f.root.join("home/.claude");
        fs::create_dir_all(&config).unwrap();
        let env = Environment::with_home(f.root.join("home")).set_var("CLAUDE_CONFIG_DIR", config.to_str().unwrap());
        let settings = config.join("settings.json");
        let want = if kind == "fifo" {
            mkfifo(&settings);
            "it is a named pipe (FIFO), not a plain file"
        } else {
            fs::create_dir(&settings).unwrap();
            "it is a folder, not a plain file"
        };
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
