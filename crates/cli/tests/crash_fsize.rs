//! The real `mneme` binary killed in the middle of a write: each command runs under a file-size
//! limit (`prlimit --fsize`, RLIMIT_FSIZE) just below the size of what it writes, so the kernel
//! stops it with SIGXFSZ exactly at that write — a real crash, not a mock. Afterwards every
//! file it was writing is byte for byte what it was before, the temporary file it left is never
//! shown as a memory, and the next normal run succeeds (and cleans up after the killed one).
//! A plain in-place write would leave the first N bytes of the new text instead.
//! `crash_edit.rs` kills edits at random points with SIGKILL; this file kills them at a chosen
//! write, so each case is checked on every run.
#![cfg(target_os = "linux")]

mod common;

use mneme_testsupport::TestHome;
use serde_json::Value;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn cmd(h: &TestHome, repo: &Path, limit: Option<u64>, args: &[&str]) -> Command {
    let bin = env!("CARGO_BIN_EXE_mneme");
    // `prlimit` (util-linux) sets the limit and execs the command: the limit is the binary's own
    // from its first instruction, and the workspace forbids the unsafe `pre_exec` that would do
    // the same from here.
    let mut c = match limit {
        Some(n) => {
            let mut c = mneme_testsupport::command_in(prlimit(), h);
            c.arg(format!("--fsize={n}:{n}")).arg(bin);
            c
        }
        None => mneme_testsupport::command_in(bin, h),
    };
    c.env("MNEME_KEYRING_SERVICE", "mneme-crash-fsize-test").current_dir(repo).args(args).arg("--managed-dir").arg(h.root.join("managed"));
    c
}

fn prlimit() -> &'static str {
    for p in ["/usr/bin/prlimit", "/bin/prlimit", "/usr/sbin/prlimit"] {
        if Path::new(p).is_file() {
            return p;
        }
    }
    panic!("these tests need util-linux's `prlimit` (apt-get install util-linux) to run mneme under a file-size limit");
}

fn ok(h: &TestHome, repo: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    common::succeeded(mneme_testsupport::output_with_stdin(cmd(h, repo, None, args), stdin), args)
}

/// Runs `args` under a `limit`-byte file-size limit and checks the kernel stopped it at a write.
fn killed(h: &TestHome, repo: &Path, limit: u64, args: &[&str], stdin: Option<&[u8]>) {
    let out: Output = mneme_testsupport::output_with_stdin(cmd(h, repo, Some(limit), args), stdin);
    assert_eq!(
        out.status.signal(),
        Some(rustix::process::Signal::XFSZ.as_raw()),
        "mneme {args:?} under a {limit}-byte limit should die writing past it ({:?}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Mneme's temporary files in `dir` (`mneme_store::atomic`'s names).
fn temps(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(mneme_store::atomic::TEMP_PREFIX) && n.ends_with(mneme_store::atomic::TEMP_SUFFIX))
        .collect()
}

fn topic(name: &str, fill: u8, len: usize) -> Vec<u8> {
    let mut t = format!("---\nname: {name}\ndescription: {name} described\nmetadata:\n  type: user\n---\n\n").into_bytes();
    t.resize(len - 1, fill);
    t.push(b'\n');
    t
}

/// The memories `memories list --json` shows, by path.
fn listed(h: &TestHome, repo: &Path) -> Vec<String> {
    let list: Value = serde_json::from_str(&ok(h, repo, &["memories", "list", "--json"], None)).unwrap();
    let mut paths: Vec<String> = list.as_array().unwrap().iter().map(|m| m["relPath"].as_str().unwrap().to_string()).collect();
    paths.sort();
    paths
}

fn revision(h: &TestHome, repo: &Path, rel: &str) -> String {
    let shown: Value = serde_json::from_str(&ok(h, repo, &["memories", "show", rel, "--json"], None)).unwrap();
    shown["revision"].as_str().unwrap().to_string()
}

/// A repository whose memory holds `a.md` (60 KB) and its index line.
fn project() -> (TestHome, PathBuf, PathBuf) {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    ok(&h, &repo, &["memories", "new", "--name", "Alpha", "--description", "alpha", "--type", "user", "--file", "a.md"], Some(&[b'a'; 60_000]));
    let mem = h.memdir_for(&repo);
    (h, repo, mem)
}

/// Pads the index with 600 lines of notes (43 KB), so rewriting it is the large write.
fn pad_index(mem: &Path) -> Vec<u8> {
    let mut index = fs::read(mem.join("MEMORY.md")).unwrap();
    for i in 0..600 {
        index.extend_from_slice(format!("- note {i}: {}\n", "z".repeat(60)).as_bytes());
    }
    fs::write(mem.join("MEMORY.md"), &index).unwrap();
    index
}

#[test]
fn memories_saved_edited_or_created_by_a_killed_writer_are_old_or_absent_never_torn() {
    let (h, repo, mem) = project();
    let (file, index) = (mem.join("a.md"), mem.join("MEMORY.md"));
    let (old, old_index) = (fs::read(&file).unwrap(), fs::read(&index).unwrap());

    // `memories save` of 40 KB over the 60 KB file, stopped at 30 KB.
    let new = topic("Alpha", b'b', 40_000);
    let rev = revision(&h, &repo, "a.md");
    killed(&h, &repo, 30_000, &["memories", "save", "a.md", "--revision", &rev], Some(&new));
    assert!(fs::read(&file).unwrap() == old, "a.md is torn: {} bytes", fs::metadata(&file).unwrap().len());
    assert_eq!(temps(&mem).len(), 1, "the kill hit the write into the memory folder");
    assert_eq!(listed(&h, &repo), ["a.md"], "the temporary file is no memory");
    let manifest = ok(&h, &repo, &["memories", "manifest"], None);
    assert!(!manifest.contains(mneme_store::atomic::TEMP_PREFIX), "{manifest}");
    let context = ok(&h, &repo, &["context"], None);
    assert!(!context.contains(mneme_store::atomic::TEMP_PREFIX), "{context}");
    ok(&h, &repo, &["memories", "save", "a.md", "--revision", &rev], Some(&new));
    assert_eq!(fs::read(&file).unwrap(), new);
    assert_eq!(temps(&mem), Vec::<String>::new(), "the next write removes what the killed one left");

    // `memories edit` with a 40 KB body: the file and its index line stay as they were.
    let (before, before_index) = (fs::read(&file).unwrap(), fs::read(&index).unwrap());
    let args = ["memories", "edit", "a.md", "--name", "Alpha two", "--description", "edited", "--body-stdin"];
    killed(&h, &repo, 30_000, &args, Some(&[b'c'; 40_000]));
    assert!(fs::read(&file).unwrap() == before, "a.md is torn");
    assert_eq!(fs::read(&index).unwrap(), before_index);
    assert_eq!(listed(&h, &repo), ["a.md"]);
    ok(&h, &repo, &args, Some(&[b'c'; 40_000]));
    assert!(String::from_utf8(fs::read(&file).unwrap()).unwrap().contains("name: Alpha two"));
    assert!(fs::read_to_string(&index).unwrap().contains("[Alpha two](a.md) — edited"));

    // `memories new` of 40 KB: no file, no index line, nothing listed.
    let index_now = fs::read(&index).unwrap();
    let args = ["memories", "new", "--name", "Beta", "--description", "beta", "--type", "user", "--file", "b.md"];
    killed(&h, &repo, 30_000, &args, Some(&[b'd'; 40_000]));
    assert!(!mem.join("b.md").exists(), "a half-written b.md");
    assert_eq!(fs::read(&index).unwrap(), index_now);
    assert_eq!(listed(&h, &repo), ["a.md"]);
    ok(&h, &repo, &args, Some(&[b'd'; 40_000]));
    assert_eq!(listed(&h, &repo), ["a.md", "b.md"]);
    assert_eq!(temps(&mem), Vec::<String>::new());
    assert_ne!(old_index, fs::read(&index).unwrap());
}

#[test]
fn settings_json_changed_by_a_killed_writer_is_the_old_file() {
    let (h, repo, _mem) = project();
    let settings = h.config_home().join("settings.json");
    // 40 KB of settings (an `env` block of padding), so the rewrite is the large write.
    let pad: serde_json::Map<String, Value> = (0..400).map(|i| (format!("PAD_{i}"), Value::from("p".repeat(80)))).collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({"model": "opus", "env": pad})).unwrap() + "\n";
    fs::write(&settings, &text).unwrap();
    killed(&h, &repo, 30_000, &["settings", "auto-memory", "off"], None);
    assert!(fs::read_to_string(&settings).unwrap() == text, "settings.json is torn: Claude Code would ignore all of it");
    assert_eq!(temps(&h.config_home()).len(), 1, "the kill hit the write of settings.json");
    ok(&h, &repo, &["settings", "auto-memory", "off"], None);
    let now: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(now["autoMemoryEnabled"], false);
    assert_eq!(now["env"]["PAD_399"], "p".repeat(80));
    assert_eq!(temps(&h.config_home()), Vec::<String>::new());
}

#[test]
fn a_trashed_or_restored_memory_killed_mid_write_is_found_again() {
    let (h, repo, mem) = project();
    let (file, index) = (mem.join("a.md"), mem.join("MEMORY.md"));
    let old = fs::read(&file).unwrap();
    let old_index = pad_index(&mem);

    // `memories rm` stopped at the trash record (written before the file moves): the memory is
    // in the folder or restorable, never stuck in a trash entry without its record.
    killed(&h, &repo, 100, &["memories", "rm", "a.md"], None);
    assert_eq!(fs::read(&index).unwrap(), old_index);
    if file.exists() {
        assert_eq!(fs::read(&file).unwrap(), old);
    } else {
        let trash = ok(&h, &repo, &["memories", "restore"], None);
        let id = trash.lines().next().and_then(|l| l.split_whitespace().next()).unwrap_or_else(|| panic!("a.md is gone and not in the trash: {trash}"));
        ok(&h, &repo, &["memories", "restore", id], None);
    }
    assert_eq!(fs::read(&file).unwrap(), old);
    let trash = ok(&h, &repo, &["memories", "restore"], None);
    assert!(trash.starts_with("The trash is empty.") && !trash.contains("damaged"), "{trash}");
    assert_eq!(listed(&h, &repo), ["a.md"]);

    // Stopped at the index rewrite: the index is whole, the memory restorable with its line.
    killed(&h, &repo, 30_000, &["memories", "rm", "a.md"], None);
    assert_eq!(fs::read(&index).unwrap(), old_index);
    let trash = ok(&h, &repo, &["memories", "restore"], None);
    let id = trash.split_whitespace().next().unwrap().to_string();
    assert!(trash.starts_with(&format!("{id}  a.md")), "{trash}");
    ok(&h, &repo, &["memories", "restore", &id], None);
    assert_eq!((fs::read(&file).unwrap(), fs::read(&index).unwrap()), (old.clone(), old_index.clone()));

    // `memories restore` stopped at the index rewrite: the next restore finishes it, line and all.
    ok(&h, &repo, &["memories", "rm", "a.md"], None);
    let trashed_index = fs::read(&index).unwrap();
    let trash = ok(&h, &repo, &["memories", "restore"], None);
    let id = trash.split_whitespace().next().unwrap().to_string();
    killed(&h, &repo, 30_000, &["memories", "restore", &id], None);
    assert_eq!(fs::read(&index).unwrap(), trashed_index);
    ok(&h, &repo, &["memories", "restore", &id], None);
    assert_eq!((fs::read(&file).unwrap(), fs::read(&index).unwrap()), (old, old_index));
    assert_eq!(ok(&h, &repo, &["memories", "restore"], None).lines().next(), Some("The trash is empty."));
    let health: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"], None)).unwrap();
    assert_eq!(health["unindexed"], serde_json::json!([]), "{health}");
    assert_eq!(temps(&mem), Vec::<String>::new());
}

/// `memories rm` killed between writing its trash record and moving the file (no file-size
/// limit stops a rename, so the state is made from a real delete: its file and index line put
/// back, its record left as written). The trash listing finishes the delete instead of listing
/// an entry beside a memory still in place, and the restore brings back the memory and its line.
#[test]
fn a_delete_cut_short_before_its_move_is_finished_by_the_trash_listing() {
    let (h, repo, mem) = project();
    let (file, index) = (mem.join("a.md"), mem.join("MEMORY.md"));
    let (old, old_index) = (fs::read(&file).unwrap(), fs::read(&index).unwrap());
    ok(&h, &repo, &["memories", "rm", "a.md"], None);
    let stored: Vec<PathBuf> = mneme_testsupport::files_under(&h.root.join("mneme-data")).into_iter().filter(|p| p.ends_with("a.md")).collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    fs::rename(&stored[0], &file).unwrap();
    fs::write(&index, &old_index).unwrap();
    assert_eq!(listed(&h, &repo), ["a.md"], "the memory is in place, as a kill before the move leaves it");

    let trash = ok(&h, &repo, &["memories", "restore"], None);
    let id = trash.split_whitespace().next().unwrap().to_string();
    assert!(trash.starts_with(&format!("{id}  a.md")) && !trash.contains("damaged"), "{trash}");
    assert!(!file.exists() && stored[0].exists(), "the listing finished the delete");
    assert!(!String::from_utf8(fs::read(&index).unwrap()).unwrap().contains("a.md"), "and removed the index line");
    ok(&h, &repo, &["memories", "restore", &id], None);
    assert_eq!((fs::read(&file).unwrap(), fs::read(&index).unwrap()), (old, old_index));
    assert_eq!(ok(&h, &repo, &["memories", "restore"], None).lines().next(), Some("The trash is empty."));
}

/// `memories rm` killed once the index line is gone, at the record's second write (which once
/// added the removed lines): the restore must bring the line back with the file. The limit
/// lets a record without lines through and stops one with them; the index, left empty, is
/// written under it.
#[test]
fn a_delete_killed_after_the_index_edit_restores_the_line_too() {
    let (h, repo, mem) = project();
    let (file, index) = (mem.join("a.md"), mem.join("MEMORY.md"));
    let (old, old_index) = (fs::read(&file).unwrap(), fs::read(&index).unwrap());
    assert_eq!(String::from_utf8_lossy(&old_index).lines().count(), 1, "only a.md's line");
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let without_lines = mneme_store::memdir::TrashEntry {
        version: 1,
        id: format!("{now_ms}-a"),
        original_rel_path: "a.md".into(),
        memdir_root: mem.clone(),
        deleted_at_ms: now_ms,
        index_lines: Vec::new(),
        size: old.len() as u64,
    };
    let limit = serde_json::to_vec_pretty(&without_lines).unwrap().len() as u64 + 20;
    killed(&h, &repo, limit, &["memories", "rm", "a.md"], None);
    if !file.exists() {
        let trash = ok(&h, &repo, &["memories", "restore"], None);
        let id = trash.split_whitespace().next().unwrap().to_string();
        ok(&h, &repo, &["memories", "restore", &id], None);
    }
    assert_eq!(fs::read(&file).unwrap(), old);
    assert_eq!(String::from_utf8(fs::read(&index).unwrap()).unwrap(), String::from_utf8(old_index).unwrap(), "the index line came back with the memory");
    assert_eq!(ok(&h, &repo, &["memories", "restore"], None).lines().next(), Some("The trash is empty."));
}

/// `projects merge` killed writing the record it leaves next to the merged-from folder in the
/// trash: the files and the index line have landed, the folder is whole in the trash, and the
/// record is absent or whole JSON, never a cut-off half.
#[test]
fn a_merge_killed_writing_its_record_leaves_no_torn_record() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let orphan = h.config_home().join("projects").join("-nowhere-gone");
    fs::create_dir_all(orphan.join("memory")).unwrap();
    fs::write(orphan.join("memory/b.md"), mneme_testsupport::topic("Bee", "bee", "user", "body")).unwrap();
    fs::write(orphan.join("memory/MEMORY.md"), "- [Bee](b.md) — bee\n").unwrap();
    let (orphan_s, repo_s) = (orphan.to_string_lossy().into_owned(), repo.to_string_lossy().into_owned());
    // The record names both folders and what moved (about 700 bytes); every other write of the
    // merge is a few dozen.
    killed(&h, &repo, 300, &["projects", "merge", "--into", &repo_s, &orphan_s], None);
    let mem = h.memdir_for(&repo);
    assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), "- [Bee](b.md) — bee\n");
    assert!(mem.join("b.md").is_file() && !orphan.join("memory").exists());
    let entries: Vec<PathBuf> = fs::read_dir(h.root.join("mneme-data/trash/merged")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(fs::read_to_string(entries[0].join("memory/MEMORY.md")).unwrap(), "- [Bee](b.md) — bee\n");
    assert!(!temps(&entries[0]).is_empty(), "the kill hit the record's write");
    if let Ok(record) = fs::read(entries[0].join("merge.json")) {
        serde_json::from_slice::<Value>(&record).unwrap_or_else(|e| panic!("merge.json is torn ({e}): {}", String::from_utf8_lossy(&record)));
    }
    assert_eq!(listed(&h, &repo), ["b.md"]);
}

/// `dream run` killed writing the dream's record (the largest write of a dream: every file's
/// text before and after): the memory folder is as it was, the history shows no damaged record,
/// and the next dream takes the dead process's lock and runs.
#[test]
fn a_dream_killed_writing_its_record_changes_nothing_and_the_next_one_runs() {
    let (h, repo, mem) = common::tabs_project("");
    let before = snapshot(&mem, but_the_lock);
    killed(&h, &repo, 1000, &["dream", "run", "--offline", "--yes", "--json"], None);
    assert_eq!(snapshot(&mem, but_the_lock), before, "nothing was applied without its record");
    let histories: Vec<PathBuf> = fs::read_dir(h.root.join("mneme-data/dreams")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(histories.len(), 1);
    assert!(!temps(&histories[0]).is_empty(), "the kill hit the record's write");
    // The id the killed dream reserved: an empty file, which a dream an hour later removes.
    let reserved: Vec<PathBuf> = fs::read_dir(&histories[0])
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && fs::metadata(p).unwrap().len() == 0)
        .collect();
    assert_eq!(reserved.len(), 1, "{reserved:?}");
    let two_hours_ago = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64 - 7200;
    mneme_testsupport::set_mtime(&reserved[0], two_hours_ago);
    let history = ok(&h, &repo, &["dream", "history", "--json"], None);
    assert_eq!(serde_json::from_str::<Value>(&history).unwrap(), serde_json::json!([]), "no damaged or half record: {history}");
    let rec: Value = serde_json::from_str(&ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"], None)).unwrap();
    assert_eq!(rec["status"], "applied");
    assert!(!mem.join("tabs_old.md").exists());
    assert_eq!(temps(&mem), Vec::<String>::new());
    assert!(!reserved[0].exists(), "the dead dream's reservation is removed by the next dream");
    ok(&h, &repo, &["dream", "undo", "--last"], None);
    assert_eq!(snapshot(&mem, but_the_lock), before);
}

/// `settings provider set` killed writing `providers.json`: the saved provider is the old one,
/// and the temporary file the killed save left is gone after the next save.
#[test]
fn providers_json_saved_by_a_killed_writer_is_the_old_file() {
    let (h, repo, _mem) = project();
    let data = h.root.join("mneme-data");
    ok(&h, &repo, &["settings", "provider", "set", "--kind", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m1"], None);
    let saved = fs::read(data.join("providers.json")).unwrap();
    let long = "m".repeat(300);
    killed(&h, &repo, saved.len() as u64 - 1, &["settings", "provider", "set", "--model", &long], None);
    assert_eq!(fs::read(data.join("providers.json")).unwrap(), saved);
    let left = |dir: &Path| -> Vec<String> {
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with('.') && n.ends_with(".tmp")).collect()
    };
    assert_eq!(left(&data).len(), 1, "the kill hit the save");
    ok(&h, &repo, &["settings", "provider", "set", "--model", &long], None);
    let now: Value = serde_json::from_slice(&fs::read(data.join("providers.json")).unwrap()).unwrap();
    assert_eq!((now["kind"].as_str(), now["model"].as_str()), (Some("openai"), Some(long.as_str())));
    assert_eq!(left(&data), Vec::<String>::new(), "the next save removes what the killed one left");
}

/// `dream undo` killed writing the dream's record, after the memory files were put back (each
/// is far smaller than the record, which holds every file's text before and after): the folder
/// is as before the dream, and running the undo again marks the dream undone instead of
/// calling the files it already put back "changed since the dream".
#[test]
fn an_undo_killed_writing_its_record_is_finished_by_the_next_undo() {
    let (h, repo, mem) = common::tabs_project("");
    let before = snapshot(&mem, visible);
    let rec: Value = serde_json::from_str(&ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"], None)).unwrap();
    let id = rec["id"].as_str().unwrap().to_string();
    assert_ne!(snapshot(&mem, visible), before);
    let largest = before.iter().map(|(_, b)| b.len()).max().unwrap() as u64;
    killed(&h, &repo, 1000.max(largest + 1), &["dream", "undo", &id], None);
    assert_eq!(snapshot(&mem, visible), before, "the files were put back before the record's write");
    let undone: Value = serde_json::from_str(&ok(&h, &repo, &["dream", "undo", &id, "--json"], None)).unwrap();
    assert_eq!(undone["status"], "undone");
    assert_eq!(snapshot(&mem, visible), before);
    let history: Value = serde_json::from_str(&ok(&h, &repo, &["dream", "history", "--json"], None)).unwrap();
    assert_eq!(history[0]["status"], "undone", "{history}");
}

/// Mneme's data folder (and so its trash) on another file system than the memory, where a
/// delete copies the file instead of renaming it: `memories rm` killed halfway through that copy
/// leaves the memory in place and no torn copy in the trash that a later restore would put back.
#[test]
fn a_delete_into_a_trash_on_another_disk_killed_mid_copy_leaves_no_torn_copy() {
    let (h, repo, mem) = project();
    let data = data_on_another_disk(&mem);
    let run = |limit: Option<u64>, args: &[&str]| {
        let mut c = cmd(&h, &repo, limit, args);
        c.env("MNEME_DATA_DIR", data.path());
        c.output().unwrap()
    };
    let file = mem.join("a.md");
    let old = fs::read(&file).unwrap();
    let out = run(Some(30_000), &["memories", "rm", "a.md"]);
    assert_eq!(out.status.signal(), Some(rustix::process::Signal::XFSZ.as_raw()), "{out:?}");
    assert_eq!(fs::read(&file).unwrap(), old, "the memory stays until its copy is whole");
    for f in mneme_testsupport::files_under(data.path()) {
        if f.file_name().is_some_and(|n| n == "a.md") {
            assert!(fs::read(&f).unwrap() == old, "a torn copy of a.md in the trash: {} ({} bytes)", f.display(), fs::metadata(&f).unwrap().len());
        }
    }
    // The interrupted entry restores to what is already there; then a real delete and restore.
    let listed = String::from_utf8(run(None, &["memories", "restore"]).stdout).unwrap();
    if let Some(id) = listed.lines().next().filter(|l| l.ends_with("a.md")).and_then(|l| l.split_whitespace().next()) {
        assert!(run(None, &["memories", "restore", id]).status.success());
    }
    assert!(String::from_utf8(run(None, &["memories", "restore"]).stdout).unwrap().starts_with("The trash is empty."));
    assert!(run(None, &["memories", "rm", "a.md"]).status.success());
    assert!(!file.exists());
    let listed = String::from_utf8(run(None, &["memories", "restore"]).stdout).unwrap();
    let id = listed.split_whitespace().next().unwrap().to_string();
    assert!(run(None, &["memories", "restore", &id]).status.success());
    assert_eq!(fs::read(&file).unwrap(), old);
}

/// `projects merge` with Mneme's data folder on another disk, where the merged-from folder is
/// copied into the trash rather than renamed: killed halfway through that copy, the folder is
/// still where it was, whole, and the trash holds no torn copy of any of its files.
#[test]
fn a_merged_folder_copied_to_a_trash_on_another_disk_is_never_torn() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let data = data_on_another_disk(&h.root);
    let run = |limit: Option<u64>, args: &[&str]| {
        let mut c = cmd(&h, &repo, limit, args);
        c.env("MNEME_DATA_DIR", data.path());
        c.output().unwrap()
    };
    let orphan = h.config_home().join("projects").join("-nowhere-gone");
    fs::create_dir_all(orphan.join("memory")).unwrap();
    fs::write(orphan.join("memory/b.md"), mneme_testsupport::topic("Bee", "bee", "user", "body")).unwrap();
    fs::write(orphan.join("memory/MEMORY.md"), "- [Bee](b.md) — bee\n").unwrap();
    // Not a memory, so it stays in the folder that goes to the trash: 60 KB to copy.
    let notes = vec![b'n'; 60_000];
    fs::write(orphan.join("memory/notes.txt"), &notes).unwrap();
    let (orphan_s, repo_s) = (orphan.to_string_lossy().into_owned(), repo.to_string_lossy().into_owned());
    let args = ["projects", "merge", "--into", repo_s.as_str(), orphan_s.as_str()];
    let out = run(Some(30_000), &args);
    assert_eq!(out.status.signal(), Some(rustix::process::Signal::XFSZ.as_raw()), "{out:?}");
    assert_eq!(fs::read(orphan.join("memory/notes.txt")).unwrap(), notes, "the folder stays until its copy is whole");
    for f in mneme_testsupport::files_under(data.path()) {
        if f.file_name().is_some_and(|n| n == "notes.txt") {
            assert!(fs::read(&f).unwrap() == notes, "a torn copy in the trash: {} ({} bytes)", f.display(), fs::metadata(&f).unwrap().len());
        }
    }
    // The next merge finishes: the folder goes to the trash whole.
    assert!(run(None, &args).status.success());
    assert!(!orphan.join("memory").exists());
    let copies: Vec<PathBuf> = mneme_testsupport::files_under(data.path()).into_iter().filter(|f| f.file_name().is_some_and(|n| n == "notes.txt")).collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(fs::read(&copies[0]).unwrap(), notes);
    assert_eq!(fs::read_to_string(h.memdir_for(&repo).join("MEMORY.md")).unwrap(), "- [Bee](b.md) — bee\n");
}

fn but_the_lock(name: &str) -> bool {
    name != ".consolidate-lock"
}

fn visible(name: &str) -> bool {
    !name.starts_with('.')
}

/// A folder's files and their bytes, those whose names `keep` accepts, sorted by name.
fn snapshot(dir: &Path, keep: fn(&str) -> bool) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .filter(|(name, _)| keep(name))
        .map(|(name, path)| (name, fs::read(path).unwrap()))
        .collect();
    files.sort();
    files
}

/// A data folder on another file system than `near` (a rename between them is a copy):
/// `/dev/shm`, a tmpfs on Linux.
fn data_on_another_disk(near: &Path) -> tempfile::TempDir {
    use std::os::unix::fs::MetadataExt;
    let shm = Path::new("/dev/shm");
    assert!(
        shm.is_dir() && fs::metadata(shm).unwrap().dev() != fs::metadata(near).unwrap().dev(),
        "this test needs /dev/shm on a file system of its own (a tmpfs), apart from the temporary folder's"
    );
    tempfile::tempdir_in(shm).unwrap()
}
