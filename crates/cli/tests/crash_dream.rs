//! `mneme dream run` and `mneme dream undo` killed at random points (SIGKILL). The offline dream
//! merges two near-duplicate memories: it writes one, moves the other to Mneme's trash and edits
//! the index, after saving its record with every file's earlier text (`applying`). Whatever a
//! kill interrupts, every memory file is whole (its text before the dream or after it), a
//! dream that wrote anything has a record `dream undo` works from, an undo cut short is
//! finished by the next one, and after the undo the memory folder is byte for byte what it was
//! before the dream — also once the trash has been listed, which finishes deletes cut short
//! (one the dream started must not come back to take a memory the undo kept). The next dream
//! takes the killed one's lock. No temporary file outlives the next run.
#![cfg(target_os = "linux")]

mod common;
mod killing;

use killing::{cmd, ok, files_of, kill_at_random, span_of, temps_under, Ended};
use mneme_testsupport::TestHome;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Runs stop once this many kills landed inside a dream's or an undo's writes (and `MIN_RUNS`
/// ran).
const WANT_BETWEEN: usize = 3;
const MIN_RUNS: usize = 25;
const MAX_RUNS: usize = 250;

/// The memory folder's files as Claude Code sees them (no dot files: the lock, temporary files).
fn memories(mem: &Path) -> BTreeMap<String, Vec<u8>> {
    files_of(mem, |rel| rel.split('/').any(|part| part.starts_with('.')))
}

/// The dreams in the history: (id, status).
fn history(h: &TestHome, repo: &Path) -> Vec<(String, String)> {
    let listed: Value = serde_json::from_str(&ok(h, repo, &["dream", "history", "--json"])).unwrap();
    listed.as_array().unwrap().iter().map(|r| (r["id"].as_str().unwrap().to_string(), r["status"].as_str().unwrap().to_string())).collect()
}

#[test]
fn killed_dreams_and_undos_leave_whole_files_and_an_undo_that_puts_the_folder_back() {
    let (h, repo, mem) = common::tabs_project("- [Other](other.md) — kept as it is\n");
    std::fs::write(mem.join("other.md"), mneme_testsupport::topic("Other", "unrelated", "user", "Nothing to merge here.")).unwrap();
    let before = memories(&mem);
    let run = ["dream", "run", "--offline", "--yes", "--json"];

    // One whole dream and its undo, timed, and what the folder holds after a dream.
    let mut id = String::new();
    let dream_us = span_of(|| {
        let rec: Value = serde_json::from_str(&ok(&h, &repo, &run)).unwrap();
        assert_eq!(rec["status"], "applied", "{rec}");
        id = rec["id"].as_str().unwrap().to_string();
    });
    let after = memories(&mem);
    assert_ne!(after, before, "the dream changed the folder");
    let undo_us = span_of(|| drop(ok(&h, &repo, &["dream", "undo", &id])));
    assert_eq!(memories(&mem), before);

    let whole = |label: &str, run: usize| {
        for (rel, bytes) in memories(&mem) {
            assert!(before.get(&rel) == Some(&bytes) || after.get(&rel) == Some(&bytes), "run {run}, {label}: {rel} is neither before nor after the dream");
        }
    };
    let (mut between, mut killed, mut runs) = (0, 0, 0);
    for run_no in 0..MAX_RUNS {
        runs += 1;
        let seen: Vec<String> = history(&h, &repo).into_iter().map(|(id, _)| id).collect();
        killed += usize::from(kill_at_random(cmd(&h, &repo, &run), 2 * run_no as u64, dream_us, None) == Ended::Killed);
        whole("after the killed dream", run_no);
        let now = memories(&mem);
        let new: Vec<(String, String)> = history(&h, &repo).into_iter().filter(|(id, _)| !seen.contains(id)).collect();
        assert!(new.len() <= 1, "run {run_no}: {new:?}");
        let Some((id, status)) = new.into_iter().next() else {
            assert_eq!(now, before, "run {run_no}: the folder changed, and no dream in the history says so");
            continue;
        };
        if status == "applying" || (now != before && now != after) {
            between += 1;
        }
        match status.as_str() {
            "applied" | "applying" => {
                // The undo, killed too, then run to its end.
                let undo = ["dream", "undo", id.as_str()];
                killed += usize::from(kill_at_random(cmd(&h, &repo, &undo), 2 * run_no as u64 + 1, undo_us, None) == Ended::Killed);
                whole("after the killed undo", run_no);
                let mid_undo = memories(&mem);
                if mid_undo != before && mid_undo != after && mid_undo != now {
                    between += 1;
                }
                if history(&h, &repo).iter().any(|(i, s)| i == &id && s != "undone") {
                    let undone: Value = serde_json::from_str(&ok(&h, &repo, &["dream", "undo", &id, "--json"])).unwrap();
                    assert_eq!(undone["status"], "undone", "run {run_no}: {undone}");
                }
            }
            // Killed before it wrote anything: recorded as not applied, the folder as it was.
            _ => assert_eq!(now, before, "run {run_no}: a {status} dream changed the folder"),
        }
        // The trash listing finishes deletes cut short: none may take a memory the undo kept.
        let trash = ok(&h, &repo, &["memories", "restore", "--json"]);
        assert_eq!(memories(&mem), before, "run {run_no}: the folder after the undo and a trash listing ({trash})");
        let health: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"])).unwrap();
        assert_eq!(temps_under(&mem), Vec::<String>::new(), "run {run_no}: temporary files outlive the health run");
        assert_eq!((&health["index"]["missingTargets"], &health["unindexed"]), (&serde_json::json!([]), &serde_json::json!([])), "run {run_no}: {health}");

        if between >= WANT_BETWEEN && runs >= MIN_RUNS {
            break;
        }
    }
    // The next dream runs (the killed ones' locks are taken over) and undoes.
    let rec: Value = serde_json::from_str(&ok(&h, &repo, &run)).unwrap();
    assert_eq!(rec["status"], "applied", "{rec}");
    assert_eq!(memories(&mem), after);
    ok(&h, &repo, &["dream", "undo", rec["id"].as_str().unwrap()]);
    assert_eq!(memories(&mem), before);
    eprintln!("{runs} dreams and undos, {killed} killed, {between} inside the writes");
    assert!(between > 0, "none of {runs} kills landed inside a dream's or an undo's writes: the test proved nothing (a dream took {dream_us} µs, an undo {undo_us} µs)");
}

/// A dream killed between its removal's trash record and the move (no kill is reliably that
/// precise, so the state is made from a whole dream: the removed memory put back beside its
/// record, as the kill leaves it). The undo finds that memory as it was and leaves it; the
/// trash listing after it must not then finish the dream's delete and take the memory away.
#[test]
fn a_dream_killed_before_its_removal_moved_keeps_the_memory_after_the_undo() {
    let (h, repo, mem) = common::tabs_project("");
    let before = memories(&mem);
    let rec: Value = serde_json::from_str(&ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"])).unwrap();
    assert_eq!(rec["status"], "applied", "{rec}");
    let removed: Vec<&String> = before.keys().filter(|rel| !mem.join(rel).exists()).collect();
    assert_eq!(removed.len(), 1, "the dream moved one memory to the trash: {removed:?}");
    let stored: Vec<_> = mneme_testsupport::files_under(&h.root.join("mneme-data/trash")).into_iter().filter(|p| p.ends_with(removed[0])).collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    std::fs::rename(&stored[0], mem.join(removed[0])).unwrap();

    let undone: Value = serde_json::from_str(&ok(&h, &repo, &["dream", "undo", rec["id"].as_str().unwrap(), "--json"])).unwrap();
    assert_eq!(undone["status"], "undone", "{undone}");
    assert_eq!(memories(&mem), before, "the undo put the folder back");
    let trash = ok(&h, &repo, &["memories", "restore", "--json"]);
    assert_eq!(memories(&mem), before, "a trash listing after the undo took a memory away: {trash}");
    let trash: Value = serde_json::from_str(&trash).unwrap();
    assert_eq!(trash["entries"], serde_json::json!([]), "the undo brought the memory back from the entry its dream made: {trash}");
}
