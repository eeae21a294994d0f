//! A trash entry a newer Mneme put in the trash (its record in a format this build would
//! misread) is refused with a code of its own and a sentence saying to update Mneme, not as a
//! request that was malformed; the entry stays as it is.

use mneme_api::{ContextRequest, ErrorCode, FixedClock, Mneme};
use mneme_testsupport::{topic, write_file, TestHome};
use std::sync::Arc;

#[test]
fn a_newer_mneme_s_trash_entry_is_its_own_kind_and_says_to_update() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let memdir = t.memdir_for(&repo);
    write_file(&memdir.join("MEMORY.md"), "- [Tabs](tabs.md) — the team uses tabs\n");
    write_file(&memdir.join("tabs.md"), &topic("Tabs", "the team uses tabs", "feedback", "Tabs, not spaces."));
    let mneme = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    let trashed = mneme.delete_memory(&req, "tabs.md").unwrap();
    // What a newer Mneme's record looks like to this build: a format number above its own.
    let record = mneme_testsupport::files_under(&t.root.join("mneme-data"))
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "record.json") && p.parent().is_some_and(|d| d.ends_with(&trashed.id)))
        .expect("the entry's record");
    let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    json["version"] = serde_json::json!(1_000);
    let written = serde_json::to_vec(&json).unwrap();
    std::fs::write(&record, &written).unwrap();

    let e = mneme.restore_memory(&req, &trashed.id).unwrap_err();
    assert_eq!(e.code, ErrorCode::TrashEntryNewer, "{e}");
    assert!(e.message.contains(&format!("Trash entry \"{}\" was put in the trash by a newer Mneme: update Mneme to restore it.", trashed.id)), "{e}");
    assert!(!memdir.join("tabs.md").exists(), "not put back");
    assert_eq!(std::fs::read(&record).unwrap(), written, "left as it was");
}
