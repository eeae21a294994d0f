//! `mneme memories health` on the folder a rename leaves when it stops between moving the file
//! and pointing its index line at the new name (what `crash_rename.rs` does to the real command,
//! built here directly): the text and the JSON name the one problem once, as the rename, and
//! `memories list` does not call the moved memory unindexed. A rename note the folder does not
//! bear out (naming a file outside the memory folder) hides neither the line to the missing file
//! nor the memory with no line.

mod common;

use mneme_testsupport::{topic, TestHome};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

const INDEX: &str = "- [First](z1.md) — one\n- [Alpha, by hand](a.md) — a hook of my own\n- [Last](z2.md) — two\n";

fn ok(h: &TestHome, cwd: &Path, args: &[&str]) -> String {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.current_dir(cwd).arg("--managed-dir").arg(h.root.join("managed")).args(args);
    common::succeeded(mneme_testsupport::output_with_stdin(cmd, Some(b"")), args)
}

/// `a.md` moved to `alpha-first.md`, line 2 still naming `a.md`, and a rename note saying
/// `a.md` went to `renamed_to`.
fn stopped_rename(renamed_to: &str) -> (TestHome, PathBuf, PathBuf) {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let mem = h.memdir_for(&repo);
    fs::create_dir_all(&mem).unwrap();
    fs::write(mem.join("z1.md"), topic("Zed one", "one", "user", "z1")).unwrap();
    fs::write(mem.join("z2.md"), topic("Zed two", "two", "user", "z2")).unwrap();
    fs::write(mem.join("alpha-first.md"), topic("Alpha", "the first letter", "user", "Alpha's body.")).unwrap();
    fs::write(mem.join("MEMORY.md"), INDEX).unwrap();
    let note = json!({"relPath": "a.md", "oldName": "Alpha", "oldDescription": "the first letter", "renamedTo": renamed_to});
    fs::write(mem.join(".mneme-index-sync-4242-0.json"), note.to_string()).unwrap();
    (h, repo, mem)
}

#[test]
fn a_stopped_rename_is_one_finding_in_text_and_json() {
    let (h, repo, mem) = stopped_rename("alpha-first.md");
    let text = ok(&h, &repo, &["memories", "health"]);
    let findings: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(
        findings,
        ["  a rename did not finish: MEMORY.md line 2 still points at a.md, but the memory is now called alpha-first.md (`mneme memories health --fix` points the line at alpha-first.md, keeping the rest of the line)"],
        "{text}"
    );

    let v: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"])).unwrap();
    assert_eq!(
        v["staleIndexLines"],
        json!([{"indexRelPath": "MEMORY.md", "line": 2, "relPath": "alpha-first.md", "text": "- [Alpha, by hand](a.md) — a hook of my own", "field": "path", "indexShows": "a.md", "fileHas": "alpha-first.md"}]),
        "{v}"
    );
    assert_eq!((&v["index"]["missingTargets"], &v["unindexed"], &v["unindexedCount"]), (&json!([]), &json!([]), &json!(0)), "{v}");

    let list: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "list", "--json"])).unwrap();
    let moved = list.as_array().unwrap().iter().find(|m| m["relPath"] == "alpha-first.md").expect("the moved memory is listed");
    assert_eq!(moved["indexed"], true, "{moved}");
    assert!(!ok(&h, &repo, &["memories", "list"]).contains("not in MEMORY.md"));

    ok(&h, &repo, &["memories", "health", "--fix"]);
    assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), INDEX.replace("(a.md)", "(alpha-first.md)"));
    let text = ok(&h, &repo, &["memories", "health"]);
    assert_eq!(text.lines().filter(|l| l.starts_with("  ")).count(), 0, "{text}");
}

#[test]
fn a_note_naming_a_file_outside_the_memory_folder_hides_nothing() {
    let (h, repo, mem) = stopped_rename("../outside.md");
    fs::write(mem.parent().unwrap().join("outside.md"), topic("Outside", "not in the folder", "user", "x")).unwrap();
    let text = ok(&h, &repo, &["memories", "health"]);
    let findings: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(findings, ["  points at a missing file: line 2 → a.md", "  no index line: alpha-first.md"], "{text}");
    let v: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"])).unwrap();
    assert_eq!(v["staleIndexLines"], json!([]), "{v}");
    assert_eq!(v["index"]["missingTargets"][0]["relPath"], "a.md", "{v}");
    assert_eq!(v["unindexed"], json!(["alpha-first.md"]), "{v}");
    // The fix drops the line and indexes the memory anew; no line points out of the folder.
    ok(&h, &repo, &["memories", "health", "--fix"]);
    let index = fs::read_to_string(mem.join("MEMORY.md")).unwrap();
    assert!(!index.contains("outside") && index.contains("(alpha-first.md)") && !index.contains("(a.md)"), "{index}");
}
