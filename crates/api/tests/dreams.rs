//! Auto dream through the api, on real files in a hermetic home: the gates as the Dreams screen
//! shows them, an offline dream held for review, its changeset, approve, undo byte for byte,
//! the refusal when files changed since (and the forced undo), reject, daily logs and the
//! background run log.

use mneme_api::{DreamOrganizationChecks, 
    ContextRequest, DreamFileAction, DreamGate, DreamModeName, DreamOffReason, DreamState, DreamTrigger, ErrorCode,
    FixedClock, JobName, Mneme, RunOutcome,
};
use mneme_testsupport::{set_mtime, topic, write_file, TestHome};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// 2026-05-06T12:00:00Z.
const NOW: i64 = 1_778_068_800;

struct World {
    t: TestHome,
    repo: PathBuf,
    mem: PathBuf,
}

impl World {
    /// A project whose memory holds two near-duplicate feedback memories, a project memory
    /// with a relative date, and an index with a line pointing at nothing.
    fn new() -> World {
        let t = TestHome::new();
        let repo = t.git_repo("repo");
        let mem = t.memdir_for(&repo);
        let w = World { t, repo, mem };
        w.write("tabs_old.md", &topic("Prefers tabs", "Use tabs for indentation", "feedback", "Always indent with tabs.\n**Why:** team style."));
        w.write(
            "tabs_new.md",
            &topic("Tabs preference", "Use tabs for indentation in code", "feedback", "Always indent with tabs, never spaces.\n**Why:** team style."),
        );
        set_mtime(&w.mem.join("tabs_old.md"), NOW - 90_000);
        w.write("deploy.md", &topic("Deploy", "deploy freeze", "project", "Froze deploys yesterday."));
        w.write("MEMORY.md", "- [Old](tabs_old.md) — tabs\n- [New](tabs_new.md) — tabs\n- [Gone](gone.md) — x\n");
        w
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.mem.join(rel);
        write_file(&p, text);
        set_mtime(&p, NOW - 3600);
    }

    fn mneme(&self) -> Mneme {
        Mneme::new(self.t.env.clone(), Arc::new(FixedClock::at_unix_secs(NOW as u64)))
    }

    fn at(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), ..Default::default() }
    }

    fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        walk(&self.mem, &self.mem, &mut out);
        out
    }

    /// A Claude Code session of this project (a UUID-named transcript).
    fn session(&self, n: u32) {
        let dir = self.t.config_home().join("projects").join(mneme_core::sanitize::sanitize_path(&self.repo.to_string_lossy()));
        let file = dir.join(format!("{n:08x}-1111-4111-8111-111111111111.jsonl"));
        write_file(&file, "{}\n");
        set_mtime(&file, NOW - 3600);
    }
}

/// Every file of the memory folder but the lock, whose mtime is the dream's own record.
fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(root, &p, out);
        } else if p.file_name().is_some_and(|n| n != ".consolidate-lock") {
            out.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned(), fs::read(&p).unwrap());
        }
    }
}

#[test]
fn an_offline_dream_in_review_mode_waits_then_approve_applies_and_undo_restores_every_byte() {
    let w = World::new();
    let m = w.mneme();
    let before = w.snapshot();
    let status = m.set_dream_mode(&w.at(), DreamModeName::Review).unwrap();
    assert_eq!(status.mode, DreamModeName::Review);
    assert_eq!(status.memory_dir, w.mem);

    let dream = m.run_dream(&w.at(), None).unwrap();
    assert_eq!(dream.item.state, DreamState::Pending, "review mode holds it");
    assert_eq!((dream.item.trigger, dream.item.provider.as_str()), (DreamTrigger::Manual, "offline"));
    assert_eq!(w.snapshot(), before, "nothing is written while it waits");
    // gone.md is written back from its index line (the only copy of that memory).
    assert_eq!((dream.item.added, dream.item.changed, dream.item.removed, dream.item.lost), (1, 3, 1, 0));
    // What moved where, line by line: the merged file's lines went into the survivor.
    assert!(dream.moved.iter().all(|m| !m.lost), "{:#?}", dream.moved);
    let line = dream.moved.iter().find(|m| m.from == "tabs_old.md" && m.text == "Always indent with tabs.").expect("moved line");
    assert!(line.file_removed);
    assert_eq!(line.found_in, ["tabs_new.md"]);
    let old = dream.moved.iter().find(|m| m.text == "- [Old](tabs_old.md) — tabs").unwrap();
    assert!(old.duplicate.as_deref().unwrap().contains("merged into tabs_new.md"), "{old:?}");
    // The changeset as the screen lists it: memories first, the index last, each with its
    // text before and after and a reason without the file name in front.
    let rels: Vec<&str> = dream.files.iter().map(|f| f.rel_path.as_str()).collect();
    assert_eq!(rels.last(), Some(&"MEMORY.md"), "{rels:?}");
    assert!(dream.files.last().unwrap().is_index);
    let merged = dream.files.iter().find(|f| f.action == DreamFileAction::Merged).expect("a merged file");
    assert_eq!((merged.rel_path.as_str(), merged.merged_into.as_deref()), ("tabs_old.md", Some("tabs_new.md")));
    assert!(merged.after.is_none() && merged.before.as_deref().unwrap().contains("Always indent with tabs."));
    assert!(merged.reason.starts_with("duplicate of tabs_new.md"), "{}", merged.reason);
    let deploy = dream.files.iter().find(|f| f.rel_path == "deploy.md").unwrap();
    assert_eq!(deploy.action, DreamFileAction::Changed);
    assert!(deploy.after.as_deref().unwrap().contains("Froze deploys on 2026-05-05."), "{:?}", deploy.after);
    assert!(deploy.reason.starts_with("relative dates made absolute"), "{}", deploy.reason);

    let history = m.dream_history(&w.at()).unwrap();
    assert_eq!(history.dreams.len(), 1);
    assert_eq!((history.dreams[0].id.as_str(), history.dreams[0].state), (dream.item.id.as_str(), DreamState::Pending));
    assert_eq!(m.dream_status(&w.at()).unwrap().pending, 1);
    assert_eq!(m.dream(&w.at(), &dream.item.id).unwrap().files.len(), dream.files.len());

    let applied = m.approve_dream(&w.at(), &dream.item.id).unwrap();
    assert_eq!(applied.item.state, DreamState::Applied);
    assert!(applied.item.applied_ms.is_some());
    assert!(!w.mem.join("tabs_old.md").exists());
    assert_eq!(applied.trashed.len(), 1, "the merged-away file is in Mneme's trash");
    assert_eq!(
        fs::read_to_string(w.mem.join("MEMORY.md")).unwrap(),
        "- [New](tabs_new.md) — tabs\n- [Gone](gone.md) — x\n- [Deploy](deploy.md) — deploy freeze\n"
    );
    let again = m.approve_dream(&w.at(), &dream.item.id).unwrap_err();
    assert_eq!(again.code, ErrorCode::Conflict);
    assert!(again.message.starts_with("Dream ") && again.message.contains("is applied, so it cannot be approved"), "{}", again.message);

    let undone = m.undo_dream(&w.at(), Some(&dream.item.id), false).unwrap();
    assert_eq!(undone.item.state, DreamState::Undone);
    assert!(undone.undo_replaced.is_empty(), "nothing had changed since the dream");
    assert_eq!(w.snapshot(), before, "byte-identical after undo");
    assert_eq!(m.undo_dream(&w.at(), None, false).unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(m.dream(&w.at(), "no-such-dream").unwrap_err().code, ErrorCode::NotFound);
}

#[test]
fn undo_is_refused_when_a_file_changed_since_and_forcing_keeps_the_newer_text_in_the_record() {
    let w = World::new();
    let m = w.mneme();
    let dream = m.run_dream(&w.at(), None).unwrap();
    assert_eq!(dream.item.state, DreamState::Applied, "automatic is the default mode");
    let edited = fs::read_to_string(w.mem.join("deploy.md")).unwrap() + "Edited after the dream.\n";
    fs::write(w.mem.join("deploy.md"), &edited).unwrap();

    let refused = m.undo_dream(&w.at(), None, false).unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert!(refused.message.starts_with("deploy.md changed since dream"), "{}", refused.message);
    assert!(refused.message.contains("nothing was undone") && !refused.message.contains("--force"), "{}", refused.message);
    assert_eq!(fs::read_to_string(w.mem.join("deploy.md")).unwrap(), edited, "a refused undo writes nothing");

    let forced = m.undo_dream(&w.at(), None, true).unwrap();
    assert_eq!(forced.item.state, DreamState::Undone);
    assert!(fs::read_to_string(w.mem.join("deploy.md")).unwrap().contains("Froze deploys yesterday."));
    assert_eq!(forced.undo_replaced.len(), 1, "{:?}", forced.undo_replaced.iter().map(|f| &f.rel_path).collect::<Vec<_>>());
    assert_eq!(forced.undo_replaced[0].before.as_deref(), Some(edited.as_str()));
}

/// A forced undo over a file saved since in another encoding keeps its exact bytes in Mneme's
/// trash: the record view says so, with the trash entry and how to put them back, rather than
/// offering the lossy text (U+FFFD for what does not decode) as what the file held; restoring
/// the entry as it says gives the bytes back.
#[test]
fn a_forced_undo_over_a_file_no_longer_utf8_shows_its_bytes_kept_in_the_trash() {
    let w = World::new();
    let m = w.mneme();
    let dream = m.run_dream(&w.at(), None).unwrap();
    assert!(dream.files.iter().any(|f| f.is_index && f.after.is_some()), "the premise: the dream rewrote the index");
    let cp1252: &[u8] = b"- [New](tabs_new.md) \x97 caf\xe9\n";
    fs::write(w.mem.join("MEMORY.md"), cp1252).unwrap();
    let undone = m.undo_dream(&w.at(), None, true).unwrap();
    assert_eq!(undone.item.state, DreamState::Undone);
    let index = undone.undo_replaced.iter().find(|f| f.rel_path == "MEMORY.md").expect("the index is among what the undo replaced");
    let kept = index.kept_bytes.as_ref().expect("its bytes are said to be kept");
    assert_eq!(kept.size, cp1252.len() as u64);
    assert!(
        kept.note.contains(&format!("kept in Mneme's trash as entry {}", kept.trash_id)) && kept.note.contains("Memories → Trash"),
        "{}",
        kept.note
    );
    // The same from the history, as the screen opens it later.
    let shown = m.dream(&w.at(), &undone.item.id).unwrap();
    let again = shown.undo_replaced.iter().find(|f| f.rel_path == "MEMORY.md").unwrap();
    assert_eq!(again.kept_bytes.as_ref().map(|k| k.trash_id.as_str()), Some(kept.trash_id.as_str()));
    // A file that was text has nothing kept apart: its text is what it held.
    assert!(shown.undo_replaced.iter().filter(|f| f.rel_path != "MEMORY.md").all(|f| f.kept_bytes.is_none()));
    // What the note says to do puts the exact bytes back.
    fs::remove_file(w.mem.join("MEMORY.md")).unwrap();
    m.restore_memory(&w.at(), &kept.trash_id).unwrap();
    assert_eq!(fs::read(w.mem.join("MEMORY.md")).unwrap(), cp1252);
}

#[test]
fn rejecting_writes_nothing_and_a_bad_mode_or_id_says_what_to_do() {
    let w = World::new();
    let m = w.mneme();
    m.set_dream_mode(&w.at(), DreamModeName::Off).unwrap();
    let before = w.snapshot();
    let dream = m.run_dream(&w.at(), None).unwrap();
    assert_eq!(dream.item.state, DreamState::Pending, "a dream started by hand in mode off is held for review");
    let rejected = m.reject_dream(&w.at(), &dream.item.id).unwrap();
    assert_eq!(rejected.item.state, DreamState::Rejected);
    assert!(rejected.rejected_ms.is_some());
    assert_eq!(w.snapshot(), before);
    assert_eq!(m.reject_dream(&w.at(), &dream.item.id).unwrap_err().code, ErrorCode::Conflict);
    let bad = DreamModeName::parse("sometimes").unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidInput);
    assert!(bad.message.contains("automatic, review or off"), "{}", bad.message);
    let missing = m.dream_status(&ContextRequest { cwd: w.t.root.join("nowhere"), ..Default::default() }).unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
}

#[test]
fn the_status_walks_the_gates_in_claude_codes_order() {
    let w = World::new();
    let m = w.mneme();
    let s = m.dream_status(&w.at()).unwrap();
    assert!(!s.enabled);
    assert_eq!(s.off_reason, Some(DreamOffReason::AutoDreamOff));
    assert_eq!(s.blocked_by, Some(DreamGate::Enabled));
    assert!(s.enabled_explanation.contains("autoDreamEnabled is not set"), "{}", s.enabled_explanation);
    assert_eq!((s.min_hours, s.min_sessions), (24.0, 5));
    assert_eq!((s.last_consolidated_ms, s.hours_since), (None, None), "never consolidated");
    assert!(!s.lock.exists);
    assert_eq!(s.mode, DreamModeName::Automatic);

    m.set_auto_dream(true).unwrap();
    let s = m.dream_status(&w.at()).unwrap();
    assert!(s.enabled && s.off_reason.is_none());
    assert_eq!((s.blocked_by, s.sessions_since), (Some(DreamGate::Sessions), 0));
    assert!(s.blocked_explanation.contains("0 of 5 sessions"), "{}", s.blocked_explanation);
    for n in 0..5 {
        w.session(n);
    }
    let s = m.dream_status(&w.at()).unwrap();
    assert_eq!((s.blocked_by, s.sessions_since, s.session_ids.len()), (None, 5, 5));
    assert_eq!(s.next_eligible_ms, NOW * 1000);

    // A dead dreamer's lock from two days ago: free, and the time gate reads its mtime.
    let lock = w.mem.join(".consolidate-lock");
    fs::write(&lock, "999999999").unwrap();
    set_mtime(&lock, NOW - 2 * 86_400);
    let s = m.dream_status(&w.at()).unwrap();
    assert_eq!((s.lock.exists, s.lock.holder_pid, s.lock.holder_alive, s.lock.held), (true, Some(999_999_999), false, false));
    assert_eq!(s.last_consolidated_ms, Some((NOW - 2 * 86_400) * 1000));
    assert_eq!(s.hours_since, Some(48.0));
    assert_eq!((s.sessions_since, s.blocked_by), (5, None), "all five sessions were touched since");

    // This process dreams: the lock now holds its PID and the time gate closes for 24 hours.
    let dream = m.run_dream(&w.at(), None).unwrap();
    let s = m.dream_status(&w.at()).unwrap();
    assert_eq!(s.last_consolidated_ms, Some(NOW * 1000));
    assert_eq!((s.lock.holder_pid, s.lock.holder_alive, s.lock.held), (Some(i64::from(std::process::id())), true, true));
    assert!(s.lock.holder_is_this_process);
    assert_eq!((s.blocked_by, s.sessions_since), (Some(DreamGate::Time), 0));
    assert_eq!(s.next_eligible_ms, (NOW + 24 * 3600) * 1000);
    assert_eq!(m.dream_history(&w.at()).unwrap().dreams[0].id, dream.item.id);
    // The lock keeps this app's PID for the hour, but no dream of this app runs now: a second
    // dream asked for by hand runs (it used to be refused for an hour, even after an undo).
    let again = m.run_dream(&w.at(), None).unwrap();
    assert_ne!(again.item.id, dream.item.id);
    // Finished dreams leave no marker behind (the lock file keeps the PID; the marker is what
    // says a dream of this app is running).
    assert!(!mneme_dream::lock::ConsolidationLock::new(&w.mem).running_here());
}

/// Sessions that ran under another organization: once every other gate is open, the status
/// says the folder is skipped, naming the organization and what to do, as the scheduler decides
/// (it said so only in the run log); an earlier gate that is shut still blocks first. Signed in
/// to that organization, or for a release before 2.1.331, nothing is skipped.
#[test]
fn the_status_says_when_sessions_of_another_organization_keep_dreams_away() {
    const MINE: &str = "5b7c9f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
    const THEIRS: &str = "0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b";
    let w = World::new();
    let m = w.mneme();
    m.set_auto_dream(true).unwrap();
    let sign_in = |org: &str| {
        let config = w.t.env.global_config_path();
        let mut v: serde_json::Value = fs::read(&config).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_else(|| serde_json::json!({}));
        v["oauthAccount"] = serde_json::json!({"accountUuid": "acc-1", "organizationUuid": org});
        fs::write(&config, v.to_string()).unwrap();
    };
    sign_in(MINE);
    w.session(0);
    let dir = w.t.config_home().join("projects").join(mneme_core::sanitize::sanitize_path(&w.repo.to_string_lossy()));
    let transcript = dir.join("00000000-1111-4111-8111-111111111111.jsonl");
    let line = serde_json::json!({"type": "hybrid-organization", "organizationUuid": THEIRS}).to_string();
    fs::write(&transcript, format!("{{}}\n{line}\n")).unwrap();
    set_mtime(&transcript, NOW - 3600);
    let at = |v: &str| ContextRequest { claude_version: Some(v.parse().unwrap()), ..w.at() };

    // The session gate shuts first: it still blocks, and the organization check is told too.
    let s = m.dream_status(&at("2.1.337")).unwrap();
    assert_eq!(s.blocked_by, Some(DreamGate::Sessions));
    let org = s.organization.as_ref().expect("the organization check");
    assert_eq!((org.code.as_str(), org.organization.as_deref()), ("other_hybrid_organization", Some(THEIRS)));
    assert!(org.explanation.contains("sign in to that organization") && org.explanation.contains("Mneme's background dreams skip"), "{}", org.explanation);

    for n in 1..5 {
        w.session(n);
    }
    let s = m.dream_status(&at("2.1.337")).unwrap();
    assert_eq!(s.blocked_by, Some(DreamGate::Organization), "every other gate is open");
    assert!(s.blocked_explanation.starts_with("Sessions in this folder ran under organization ") && s.blocked_explanation.contains(THEIRS), "{}", s.blocked_explanation);

    let old = m.dream_status(&at("2.1.330")).unwrap();
    assert_eq!((old.blocked_by, old.organization.is_none()), (None, true), "2.1.330 has no such check");
    // Nothing was looked at there, so the status must not read as a folder found clear.
    assert_eq!(old.organization_checks, DreamOrganizationChecks::None);
    assert_eq!(m.dream_status(&at("2.1.331")).unwrap().organization_checks, DreamOrganizationChecks::Organizations);
    sign_in(THEIRS);
    let s = m.dream_status(&at("2.1.337")).unwrap();
    assert_eq!((s.blocked_by, s.organization.is_none()), (None, true), "signed in to that organization");
    assert_eq!(s.organization_checks, DreamOrganizationChecks::OrganizationsAndOwners);
}

#[test]
fn daily_logs_append_one_line_and_list_the_days() {
    let w = World::new();
    let m = w.mneme();
    let today = m.daily_log(&w.at(), None).unwrap();
    assert_eq!((today.date.as_str(), today.rel_path.as_str()), ("2026-05-06", "logs/2026/05/2026-05-06.md"));
    assert!(today.text.is_none() && today.days.is_empty());
    let log = m.append_daily_log(&w.at(), "I prefer squash merges\nfor feature branches").unwrap();
    assert_eq!(log.text.as_deref(), Some("- 12:00 I prefer squash merges for feature branches\n"));
    assert_eq!(log.path, w.mem.join("logs/2026/05/2026-05-06.md"));
    assert_eq!(log.days, vec!["2026-05-06".to_string()]);
    write_file(&w.mem.join("logs/2026/05/2026-05-01.md"), "- 09:00 older\n");
    write_file(&w.mem.join("logs/2026/05/notes.md"), "not a daily log\n");
    let old = m.daily_log(&w.at(), Some("2026-05-01")).unwrap();
    assert_eq!(old.text.as_deref(), Some("- 09:00 older\n"));
    assert_eq!(old.days, vec!["2026-05-06".to_string(), "2026-05-01".to_string()]);
    assert_eq!(m.append_daily_log(&w.at(), "  ").unwrap_err().code, ErrorCode::InvalidInput);
    assert_eq!(m.daily_log(&w.at(), Some("May 1")).unwrap_err().code, ErrorCode::InvalidInput);
}

#[test]
fn background_runs_come_from_the_schedulers_run_log() {
    let w = World::new();
    let m = w.mneme();
    assert!(m.background_runs(10, None).unwrap().is_empty());
    let log = mneme_scheduler::RunLog::in_data_dir(&w.t.env.data_dir());
    let rec = |id: &str, job: mneme_scheduler::RunJob, outcome| mneme_scheduler::RunRecord { id: id.into(), job, target: "/m".into(), started_ms: 1, finished_ms: 2, outcome };
    log.append(&rec("a", mneme_scheduler::JobKind::Dream.into(), mneme_scheduler::Outcome::Done { summary: "Improved 2 memories".into() })).unwrap();
    log.append(&rec("b", mneme_scheduler::JobKind::Extraction.into(), mneme_scheduler::Outcome::Skipped { reason: "no new turn".into() })).unwrap();
    // A run of a job a newer Mneme added (the log is shared by every build on the machine).
    log.append(&rec("c", mneme_scheduler::RunJob::Newer("weekly-digest".into()), mneme_scheduler::Outcome::Done { summary: "Sent".into() })).unwrap();
    let all = m.background_runs(10, None).unwrap();
    assert_eq!(all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec!["c", "b", "a"]);
    assert_eq!((all[0].job, all[0].newer_job.as_deref(), all[0].summary.as_str()), (None, Some("weekly-digest"), "Sent"));
    assert_eq!((all[1].job, all[1].newer_job.as_deref()), (Some(JobName::Extraction), None));
    assert_eq!((all[1].outcome, all[1].summary.as_str()), (RunOutcome::Skipped, "no new turn"));
    let dreams = m.background_runs(10, Some(JobName::Dream)).unwrap();
    assert_eq!(dreams.iter().map(|r| (r.id.as_str(), r.outcome)).collect::<Vec<_>>(), vec![("a", RunOutcome::Done)]);
}
