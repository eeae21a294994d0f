//! `mneme memories rm` and `mneme memories restore` killed at random points (SIGKILL), in turn:
//! a delete writes its trash record, moves the file into the trash and removes its index line;
//! a restore marks its entry, puts the line back and moves the file home. Whatever the kill
//! interrupts, the memory is whole in the memory folder or in the trash (never lost, never
//! torn), the next run finishes what was cut short (the trash listing a delete, the restore a
//! restore), an index line left pointing into the trash is reported by `memories health` and
//! dropped by `--fix` without costing the restore its line, and a restored memory's line is
//! back where it was. No temporary file outlives the next run.
#![cfg(target_os = "linux")]

mod killing;

use killing::{cmd, ok, kill_at_random, span_of, temps_under, Ended};
use mneme_testsupport::{topic, TestHome};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

/// Runs stop once this many kills left a state between two writes (and `MIN_RUNS` ran).
const WANT_BETWEEN: usize = 4;
const MIN_RUNS: usize = 40;
const MAX_RUNS: usize = 400;

const INDEX: &str = "- [First](z1.md) — one\n- [Alpha, by hand](a.md) — a hook of my own\n- [Last](z2.md) — two\n";
const WITHOUT_A: &str = "- [First](z1.md) — one\n- [Last](z2.md) — two\n";

/// The trash entry folders holding a record, and the copies of `a.md` anywhere in the trash.
fn trash_state(data: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let files = mneme_testsupport::files_under(&data.join("trash"));
    let records = files.iter().filter(|p| p.ends_with("record.json")).map(|p| p.parent().unwrap().to_path_buf()).collect();
    let copies = files.into_iter().filter(|p| p.ends_with("a.md")).collect();
    (records, copies)
}

/// The ids `memories restore --json` lists (the listing finishes a delete cut short first).
fn listed_ids(h: &TestHome, repo: &Path) -> Vec<String> {
    let trash: Value = serde_json::from_str(&ok(h, repo, &["memories", "restore", "--json"])).unwrap();
    assert_eq!(trash["damaged"], json!([]), "no damaged entry: {trash}");
    trash["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["originalRelPath"], "a.md", "{trash}");
            e["id"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn killed_deletes_and_restores_never_lose_the_memory_or_its_index_line() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let mem = h.memdir_for(&repo);
    let data = h.root.join("mneme-data");
    fs::create_dir_all(&mem).unwrap();
    let alpha = topic("Alpha", "the first letter", "user", &"Alpha's body.\n".repeat(15_000));
    fs::write(mem.join("a.md"), &alpha).unwrap();
    fs::write(mem.join("z1.md"), topic("Zed one", "one", "user", "z1")).unwrap();
    fs::write(mem.join("z2.md"), topic("Zed two", "two", "user", "z2")).unwrap();
    fs::write(mem.join("MEMORY.md"), INDEX).unwrap();
    let (file, index) = (mem.join("a.md"), mem.join("MEMORY.md"));

    // One delete and one restore, timed: the kills are spread over the slower of the two.
    let rm_us = span_of(|| drop(ok(&h, &repo, &["memories", "rm", "a.md"])));
    let id = listed_ids(&h, &repo).pop().expect("the entry");
    let restore_us = span_of(|| drop(ok(&h, &repo, &["memories", "restore", &id])));
    let span_us = rm_us.max(restore_us);
    assert_eq!((fs::read_to_string(&file).unwrap(), fs::read_to_string(&index).unwrap()), (alpha.clone(), INDEX.to_string()));

    let (mut between, mut killed, mut runs) = (0, 0, 0);
    for run in 0..MAX_RUNS {
        runs += 1;
        let home = file.exists();
        let args: Vec<String> = if home {
            ["memories", "rm", "a.md"].map(String::from).to_vec()
        } else {
            let ids = listed_ids(&h, &repo);
            assert_eq!(ids.len(), 1, "run {run}: one entry to restore: {ids:?}");
            ["memories", "restore", &ids[0]].map(String::from).to_vec()
        };
        let ended = kill_at_random(cmd(&h, &repo, &args.iter().map(String::as_str).collect::<Vec<_>>()), run as u64, span_us, None);
        killed += usize::from(ended == Ended::Killed);

        // Never lost, never torn: at home or in the trash, whole.
        let (records, copies) = trash_state(&data);
        for c in &copies {
            assert!(fs::read_to_string(c).unwrap() == alpha, "run {run}: a torn copy in the trash: {}", c.display());
        }
        if file.exists() {
            assert!(fs::read_to_string(&file).unwrap() == alpha, "run {run}: a.md is torn");
        } else {
            assert_eq!(copies.len(), 1, "run {run}: a.md is neither home nor in the trash ({records:?})");
        }
        let index_now = fs::read_to_string(&index).unwrap();
        let clean_home = file.exists() && records.is_empty() && index_now == INDEX;
        let clean_trash = !file.exists() && records.len() == 1 && copies.len() == 1 && index_now == WITHOUT_A && !records[0].join("restoring").exists();
        if !clean_home && !clean_trash {
            between += 1;
        }

        // The next run: the listing finishes a delete, a restore run again finishes a restore.
        let ids = listed_ids(&h, &repo);
        if file.exists() && !ids.is_empty() {
            assert_eq!(ids.len(), 1, "run {run}: {ids:?}");
            ok(&h, &repo, &["memories", "restore", &ids[0]]);
            assert!(listed_ids(&h, &repo).is_empty(), "run {run}: the restore finished and its entry went");
        }
        let ids = listed_ids(&h, &repo);
        let index_now = fs::read_to_string(&index).unwrap();
        let health: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"])).unwrap();
        if file.exists() {
            assert!(ids.is_empty(), "run {run}: the memory is home and in the trash: {ids:?}");
            assert_eq!(index_now, INDEX, "run {run}: a memory at home has its line, where it was");
            assert_eq!((&health["index"]["missingTargets"], &health["unindexed"]), (&json!([]), &json!([])), "run {run}: {health}");
        } else {
            assert_eq!(ids.len(), 1, "run {run}: the memory is in the trash, restorable: {ids:?}");
            if index_now == INDEX {
                // A line pointing into the trash: reported, and the fix drops it; the record
                // still holds it for the restore.
                let missing: Vec<&str> = health["index"]["missingTargets"].as_array().unwrap().iter().map(|m| m["relPath"].as_str().unwrap()).collect();
                assert_eq!(missing, ["a.md"], "run {run}: {health}");
                ok(&h, &repo, &["memories", "health", "--fix"]);
            }
            assert_eq!(fs::read_to_string(&index).unwrap(), WITHOUT_A, "run {run}");
        }
        assert_eq!(temps_under(&mem), Vec::<String>::new(), "run {run}: temporary files outlive the health run");
        let again: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"])).unwrap();
        assert_eq!((&again["index"]["missingTargets"], &again["unindexed"]), (&json!([]), &json!([])), "run {run}: {again}");

        if between >= WANT_BETWEEN && runs >= MIN_RUNS {
            break;
        }
    }
    // The last state restored: the memory and its line as they were at the start.
    if !file.exists() {
        let ids = listed_ids(&h, &repo);
        ok(&h, &repo, &["memories", "restore", &ids[0]]);
    }
    assert_eq!((fs::read_to_string(&file).unwrap(), fs::read_to_string(&index).unwrap()), (alpha, INDEX.to_string()));
    assert!(listed_ids(&h, &repo).is_empty());
    assert_eq!(temps_under(&data), Vec::<String>::new(), "the trash's temporary files went with their entries");
    eprintln!("{runs} deletes and restores, {killed} killed, {between} between two writes");
    assert!(between > 0, "none of {runs} kills landed between two writes: the test proved nothing (a run took {span_us} µs)");
}
