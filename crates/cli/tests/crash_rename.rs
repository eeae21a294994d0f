//! `mneme memories edit --rename` killed at random points (SIGKILL): a rename moves the file,
//! then points its index line at the new name. Whatever the kill interrupts, the memory is
//! whole at its old name or its new one (never both, never neither), and a kill between the
//! move and the index leaves a line `memories health` names (`staleIndexLines`, field `path`)
//! and `--fix` points at the new name in place, keeping its title, hook and position (a line
//! dropped and added again would lose the hook written by hand and land at the end, past the
//! 200-line cap in a long index). `[[links]]` to the old name are reported, not rewritten, as
//! after a rename that finished. No temporary file or note outlives the next run.
#![cfg(target_os = "linux")]

mod killing;

use killing::{cmd, ok, kill_at_random, span_of, temps_under, Ended};
use mneme_testsupport::{topic, TestHome};
use serde_json::{json, Value};
use std::fs;

/// Runs stop once this many kills landed between the move and the index (and `MIN_RUNS` ran).
const WANT_BETWEEN: usize = 3;
const MIN_RUNS: usize = 30;
const MAX_RUNS: usize = 400;

/// The index with the memory's line pointing at `rel`: everything else as the user wrote it.
fn index_for(rel: &str) -> String {
    format!("- [First](z1.md) — one\n- [Alpha, by hand]({rel}) — a hook of my own\n- [Cee](c.md) — links to alpha\n- [Last](z2.md) — two\n")
}

#[test]
fn killed_renames_leave_the_memory_in_one_place_and_an_index_the_fix_retargets() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let mem = h.memdir_for(&repo);
    fs::create_dir_all(&mem).unwrap();
    let alpha = topic("Alpha", "the first letter", "user", &"Alpha's body.\n".repeat(2000));
    fs::write(mem.join("a.md"), &alpha).unwrap();
    fs::write(mem.join("z1.md"), topic("Zed one", "one", "user", "z1")).unwrap();
    fs::write(mem.join("z2.md"), topic("Zed two", "two", "user", "z2")).unwrap();
    fs::write(mem.join("c.md"), topic("Cee", "links to alpha", "user", "See [[a]] for the first letter.")).unwrap();
    fs::write(mem.join("MEMORY.md"), index_for("a.md")).unwrap();

    let other = |rel: &str| if rel == "a.md" { "b.md" } else { "a.md" };
    let mut at = "a.md".to_string();
    let span_us = span_of(|| drop(ok(&h, &repo, &["memories", "edit", &at, "--rename", other(&at)])));
    at = other(&at).to_string();
    assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), index_for(&at));

    let (mut between, mut killed, mut runs) = (0, 0, 0);
    for run in 0..MAX_RUNS {
        runs += 1;
        let to = other(&at).to_string();
        let ended = kill_at_random(cmd(&h, &repo, &["memories", "edit", &at, "--rename", &to]), run as u64, span_us, None);
        killed += usize::from(ended == Ended::Killed);

        // One place, whole: the old name or the new one.
        let (old_there, new_there) = (mem.join(&at).exists(), mem.join(&to).exists());
        assert!(old_there != new_there, "run {run}: {at} there: {old_there}, {to} there: {new_there}");
        let now = if new_there { to.clone() } else { at.clone() };
        assert!(fs::read_to_string(mem.join(&now)).unwrap() == alpha, "run {run}: {now} is not the memory as written");

        let index = fs::read_to_string(mem.join("MEMORY.md")).unwrap();
        let health: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"])).unwrap();
        let stale = health["staleIndexLines"].clone();
        if index == index_for(&now) {
            assert_eq!(stale, json!([]), "run {run}: the index follows the file, yet health reports {stale}");
        } else {
            // Killed between the move and the index: the line still names the old file.
            assert_eq!(index, index_for(&at), "run {run}: the index is neither before nor after the rename");
            assert_eq!(now, to, "run {run}");
            between += 1;
            let lines: Vec<(&str, &str, &str, &str)> = stale
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (s["field"].as_str().unwrap(), s["relPath"].as_str().unwrap(), s["indexShows"].as_str().unwrap(), s["fileHas"].as_str().unwrap()))
                .collect();
            assert_eq!(lines, [("path", to.as_str(), at.as_str(), to.as_str())], "run {run}: health names the line left behind: {health}");
        }
        assert_eq!(temps_under(&mem), Vec::<String>::new(), "run {run}: temporary files outlive the health run");

        let fixed = ok(&h, &repo, &["memories", "health", "--fix"]);
        assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), index_for(&now), "run {run}: the fix keeps the line and its place ({fixed})");
        let leftovers: Vec<String> = fs::read_dir(&mem).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with('.')).collect();
        assert_eq!(leftovers, Vec::<String>::new(), "run {run}: after --fix");
        let again: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"])).unwrap();
        assert_eq!((&again["staleIndexLines"], &again["unindexed"], &again["index"]["missingTargets"]), (&json!([]), &json!([]), &json!([])), "run {run}: {again}");
        // `[[a]]` names the memory only while it is a.md; after a rename it is reported.
        let dangling = if now == "a.md" { json!([]) } else { json!([{"from": "c.md", "link": "a"}]) };
        assert_eq!(again["danglingLinks"], dangling, "run {run}");
        at = now;

        if between >= WANT_BETWEEN && runs >= MIN_RUNS {
            break;
        }
    }
    eprintln!("{runs} renames, {killed} killed, {between} between the move and the index");
    assert!(between > 0, "none of {runs} kills landed between the move and the index: the test proved nothing (a rename took {span_us} µs)");
}
