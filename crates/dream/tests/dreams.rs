//! Dreams end to end on real files: review, approve, reject, undo (byte for byte), conflicts,
//! the lock against other dreamers, rollback after a failure, the scheduler tick.

mod common;

use common::*;
use mneme_dream::{DreamMode, DreamStatus, Engine, Enablement, LOCK_FILE};
use mneme_model::{Cancel, ModelError, Provider, ProviderKind, Request, Response};
use std::fs;
use std::process::{Child, Command};

fn duplicated_world() -> World {
    let w = World::new();
    w.dreams.set_mode(&w.mem, DreamMode::Review).unwrap();
    w.write("tabs_old.md", &topic("Prefers tabs", "Use tabs for indentation", "feedback", "Always indent with tabs.\n**Why:** team style."));
    w.write("tabs_new.md", &topic("Tabs preference", "Use tabs for indentation in code", "feedback", "Always indent with tabs, never spaces.\n**Why:** team style."));
    filetime::set_file_mtime(w.mem.join("tabs_old.md"), filetime::FileTime::from_unix_time(NOW as i64 - 90_000, 0)).unwrap();
    w.write("deploy.md", &topic("Deploy", "deploy freeze", "project", "Froze deploys yesterday."));
    w.write("MEMORY.md", "- [Old](tabs_old.md) — tabs\n- [New](tabs_new.md) — tabs\n- [Gone](gone.md) — x\n");
    w
}

#[test]
fn review_mode_holds_the_dream_until_approved_and_undo_restores_every_byte() {
    let w = duplicated_world();
    let before = w.snapshot();
    let rec = w.offline(false).unwrap();
    assert_eq!(rec.status, DreamStatus::Pending, "review mode");
    assert_eq!(w.snapshot(), before, "nothing written while pending");
    assert_eq!(rec.provider, "offline");
    let (added, changed, removed) = rec.counts();
    // gone.md is written back from its index line, the only copy of that memory.
    assert_eq!((added, changed, removed), (1, 3, 1), "{:#?}", rec.changeset.changes);
    assert!(rec.moved.iter().all(|m| !m.lost()), "{:#?}", rec.moved);
    let merged_line = rec.moved.iter().find(|m| m.text == "- [Old](tabs_old.md) — tabs").unwrap();
    assert_eq!(merged_line.found_in, ["tabs_new.md"]);
    assert!(rec.changeset.changes.iter().all(|c| !c.reason.is_empty()));
    // The record is on disk in Mneme's data folder, not in the memory folder.
    let listed = w.dreams.list(&w.mem).unwrap().0;
    assert_eq!(listed.len(), 1);
    assert!(w.dreams.history(&w.mem).dir().starts_with(w.home.env.data_dir()));

    let applied = w.dreams.approve(&w.mem, &rec.id).unwrap();
    assert_eq!(applied.status, DreamStatus::Applied);
    assert!(!w.mem.join("tabs_old.md").exists());
    assert_eq!(applied.trashed.len(), 1, "the merged-away file went to the trash");
    assert!(w.read("tabs_new.md").contains("Always indent with tabs.\n"));
    assert!(w.read("deploy.md").contains("Froze deploys on 2026-05-05."));
    assert_eq!(w.read("MEMORY.md"), "- [New](tabs_new.md) — tabs\n- [Gone](gone.md) — x\n- [Deploy](deploy.md) — deploy freeze\n");
    assert!(w.read("gone.md").starts_with("---\nname: Gone\ndescription: x\n---\n\nx\n"));
    assert_eq!(w.dreams.approve(&w.mem, &rec.id).unwrap_err().code(), "wrong-status");

    let undone = w.dreams.undo(&w.mem, None, false).unwrap();
    assert_eq!(undone.id, rec.id);
    assert_eq!(undone.status, DreamStatus::Undone);
    assert_eq!(w.snapshot(), before, "byte-identical after undo");
    assert_eq!(w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap_err().code(), "wrong-status");
    assert_eq!(w.dreams.undo(&w.mem, None, false).unwrap_err().to_string(), "there is no dream to undo for this memory folder");
}

#[test]
fn a_thousand_copies_of_one_memory_merge_into_one() {
    // Every pair of copies is a near-duplicate. Clustering them needs each copy measured once,
    // not every pair kept: a folder of 3,000 copies took a dream 19 s and 715 MB that way.
    let w = World::new();
    w.dreams.set_mode(&w.mem, DreamMode::Review).unwrap();
    let body = "Always run the full suite before pushing to main.\n**Why:** staging deploys whatever lands there.";
    for i in 0..1000 {
        w.write(&format!("copy_{i:04}.md"), &topic(&format!("Test before pushing {i}"), "Run the tests before pushing", "feedback", body));
    }
    let rec = w.offline(false).unwrap();
    let removed: Vec<_> = rec.changeset.changes.iter().filter(|c| c.after.is_none()).collect();
    assert_eq!(removed.len(), 999, "every copy but one removed");
    // Same age: the first by name survives, unchanged (the others add no distinct line).
    assert!(removed.iter().all(|c| !c.path.ends_with("copy_0000.md")));
    assert!(removed.iter().all(|c| c.reason.contains("copy_0000.md")), "{}", removed[0].reason);
    assert!(rec.changeset.changes.iter().all(|c| !c.path.ends_with("copy_0000.md") || c.after.is_some()));
}

#[test]
fn copies_merged_into_one_add_each_distinct_line_once() {
    let w = World::new();
    w.dreams.set_mode(&w.mem, DreamMode::Review).unwrap();
    let body = "Always run the full suite before pushing to main.\n**Why:** staging deploys whatever lands there.\nIt takes four minutes.";
    w.write("a.md", &topic("Tests first", "Run the tests before pushing", "feedback", body));
    w.write("b.md", &topic("Tests first b", "Run the tests before pushing", "feedback", &format!("{body}\nAsk in #infra if it is red.")));
    w.write("c.md", &topic("Tests first c", "Run the tests before pushing", "feedback", &format!("{body}\nAsk   in #INFRA if it is red.\nSkip it for docs-only changes.")));
    let rec = w.offline(false).unwrap();
    let a = rec.changeset.changes.iter().find(|c| c.path.ends_with("a.md")).expect("the survivor changed");
    // b's line once (c's copy of it differs only in spacing and case), then c's own line.
    assert_eq!(
        a.after.as_deref().unwrap(),
        format!("---\nname: Tests first\ndescription: Run the tests before pushing\ntype: feedback\n---\n\n{body}\n\nAsk in #infra if it is red.\n\nSkip it for docs-only changes.\n")
    );
}

#[test]
fn rejecting_writes_nothing_and_automatic_mode_applies_at_once() {
    let w = duplicated_world();
    let before = w.snapshot();
    let rec = w.offline(false).unwrap();
    let rejected = w.dreams.reject(&w.mem, &rec.id).unwrap();
    assert_eq!(rejected.status, DreamStatus::Rejected);
    assert_eq!(w.snapshot(), before);
    assert_eq!(w.dreams.approve(&w.mem, &rec.id).unwrap_err().to_string(), format!("dream {} is rejected, so it cannot be approved", rec.id));

    w.dreams.set_mode(&w.mem, DreamMode::Automatic).unwrap();
    // The lock was stamped by the first dream and our PID is alive: wait out the hour.
    w.clock.advance(3600);
    let rec = w.offline(false).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied);
    assert_ne!(w.snapshot(), before);
}

#[test]
fn a_dream_cut_short_while_writing_is_undone_from_its_record() {
    let w = duplicated_world();
    let before = w.snapshot();
    let mut rec = w.offline(false).unwrap();
    // What a process killed halfway through applying leaves behind: the record, saved as
    // applying before the first write, and only some of the files written.
    let first = rec.changeset.changes.iter().find(|c| c.before.is_some() && c.after.is_some()).unwrap().clone();
    fs::write(&first.path, first.after.as_deref().unwrap()).unwrap();
    assert_ne!(w.snapshot(), before);
    rec.status = DreamStatus::Applying;
    w.dreams.history(&w.mem).save(&rec).unwrap();
    assert_eq!(w.dreams.list(&w.mem).unwrap().0[0].status, DreamStatus::Applying);
    // Undo finds it with no id, puts back what was written and leaves the rest alone.
    let undone = w.dreams.undo(&w.mem, None, false).unwrap();
    assert_eq!((undone.id, undone.status), (rec.id, DreamStatus::Undone));
    assert_eq!(w.snapshot(), before, "byte-identical after undoing half a dream");
}

#[test]
fn approve_and_undo_refuse_when_files_changed_since_and_force_keeps_the_newer_text() {
    let w = duplicated_world();
    let rec = w.offline(false).unwrap();
    // Claude Code edits a file the dream wants to change.
    fs::write(w.mem.join("deploy.md"), "edited by Claude Code").unwrap();
    let err = w.dreams.approve(&w.mem, &rec.id).unwrap_err();
    assert_eq!(err.code(), "conflict");
    assert!(err.to_string().contains("deploy.md changed since dream"), "{err}");
    assert_eq!(w.dreams.show(&w.mem, &rec.id).unwrap().status, DreamStatus::Pending, "still pending");
    assert_eq!(w.read("deploy.md"), "edited by Claude Code", "nothing written");
    assert!(w.mem.join("tabs_old.md").exists());

    // A fresh dream over the new state, applied, then edited again before the undo.
    w.clock.advance(3600);
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied);
    let after_dream = w.snapshot();
    fs::write(w.mem.join("tabs_new.md"), "rewritten later").unwrap();
    let err = w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap_err();
    assert_eq!(err.code(), "conflict");
    assert!(err.to_string().starts_with(&format!("tabs_new.md changed since dream {} was applied; nothing was undone.", rec.id)), "{err}");
    assert_eq!(w.read("tabs_new.md"), "rewritten later");
    let forced = w.dreams.undo(&w.mem, Some(&rec.id), true).unwrap();
    assert_eq!(forced.status, DreamStatus::Undone);
    let kept = forced.undo.unwrap();
    let replaced = kept.changes.iter().find(|c| c.path.ends_with("tabs_new.md")).unwrap();
    assert_eq!(replaced.before.as_deref(), Some("rewritten later"), "the replaced text is kept in the record");
    assert!(!w.snapshot().is_empty());
    assert_ne!(w.snapshot(), after_dream);
}

#[test]
fn a_dream_that_creates_the_index_is_undone_completely() {
    let w = World::new();
    assert_eq!(w.dreams.mode(&w.mem).unwrap(), DreamMode::Automatic, "the default, as in Claude Code");
    w.write("a.md", &topic("Alpha", "first", "user", "Alpha fact."));
    let before = w.snapshot();
    let rec = w.offline(false).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied);
    assert_eq!(w.read("MEMORY.md"), "- [Alpha](a.md) — first\n");
    assert_eq!(rec.changeset.changes[0].before, None);
    w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
    assert_eq!(w.snapshot(), before, "the created index is gone again (to the trash)");
}

#[test]
fn a_live_dreamer_blocks_and_a_dead_ones_lock_is_reclaimed() {
    let w = duplicated_world();
    // Claude Code (any live process) holds the lock, written in its format.
    let mut other = Command::new("sleep").arg("60").spawn().unwrap();
    let lock = w.mem.join(LOCK_FILE);
    fs::write(&lock, other.id().to_string()).unwrap();
    filetime::set_file_mtime(&lock, filetime::FileTime::from_unix_time(NOW as i64 - 120, 0)).unwrap();
    let err = w.offline(true).unwrap_err();
    assert_eq!(err.code(), "locked");
    assert_eq!(
        err.to_string(),
        format!(
            "another dream holds the lock {} (PID {}, taken 2 min ago); wait for it to finish, or remove the file if that process is not a dream",
            lock.display(),
            other.id()
        )
    );
    assert_eq!(fs::read_to_string(&lock).unwrap(), other.id().to_string(), "lock untouched");
    assert!(w.dreams.list(&w.mem).unwrap().0.is_empty(), "a blocked dream is not a dream");
    let status = w.dreams.status(&w.target(), &Enablement::On, &mneme_dream::CachedFlags::default());
    assert!(status.lock.held && status.lock.holder_alive);

    // The holder dies (a crash): its lock is reclaimed at once.
    other.kill().unwrap();
    other.wait().unwrap();
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied);
    assert_eq!(fs::read_to_string(&lock).unwrap(), std::process::id().to_string(), "our PID, Claude Code's format");
    let lock_mtime = filetime::FileTime::from_last_modification_time(&fs::metadata(&lock).unwrap());
    assert_eq!(lock_mtime.unix_seconds(), NOW as i64, "mtime = consolidated at (the injected clock)");
    let prior = rec.lock.unwrap().prior_mtime_ns;
    assert_eq!(prior, i128::from(NOW as i64 - 120) * 1_000_000_000);
    // Mneme's own finished dream blocks another process's dreamer in the same way, but not
    // the next dream of this process: none of its dreams is running.
    let another = mneme_dream::lock::ConsolidationLock::new(&w.mem).with_pid(std::process::id() + 1);
    assert!(matches!(another.try_acquire(&*w.clock).unwrap(), Err(mneme_dream::lock::NotAcquired::Held(_))));
    assert!(w.offline(true).is_ok());
}

/// A provider whose every call fails, for the rollback path.
struct Failing;

impl Provider for Failing {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }
    fn model(&self) -> &str {
        "failing-model"
    }
    fn complete<'a>(
        &'a self,
        _request: &'a Request,
        _cancel: &'a Cancel,
    ) -> futures_util::future::BoxFuture<'a, Result<Response, ModelError>> {
        Box::pin(async { Err(ModelError::Network("127.0.0.1:9".into())) })
    }
}

#[test]
fn a_failed_dream_rolls_the_lock_back_and_is_recorded() {
    let w = duplicated_world();
    let lock = w.mem.join(LOCK_FILE);
    fs::write(&lock, "").unwrap();
    filetime::set_file_mtime(&lock, filetime::FileTime::from_unix_time(1_700_000_000, 0)).unwrap();
    let before = w.snapshot();
    let failing = Failing;
    let opts = mneme_dream::RunOptions {
        trigger: mneme_dream::Trigger::Manual,
        engine: Engine::Model(&failing),
        apply_now: true,
        enabled: Enablement::On,
        flags: mneme_dream::CachedFlags::default(),
        cancel: Cancel::new(),
    };
    let err = block_on(w.dreams.run(&w.target(), &opts)).unwrap_err();
    assert_eq!(err.code(), "agent");
    assert!(err.to_string().contains("could not reach 127.0.0.1:9"), "{err}");
    assert_eq!(fs::read_to_string(&lock).unwrap(), "", "rolled back: body emptied");
    let mtime = filetime::FileTime::from_last_modification_time(&fs::metadata(&lock).unwrap());
    assert_eq!(mtime.unix_seconds(), 1_700_000_000, "rolled back: old mtime restored");
    assert_eq!(w.snapshot(), before);
    let (records, _) = w.dreams.list(&w.mem).unwrap();
    assert_eq!(records[0].status, DreamStatus::Failed);
    assert_eq!(records[0].provider, "anthropic");
    assert_eq!(records[0].model.as_deref(), Some("failing-model"));

    // Without a lock before, the rollback removes it.
    fs::remove_file(&lock).unwrap();
    let cancelled = Cancel::new();
    cancelled.cancel();
    let opts = mneme_dream::RunOptions { cancel: cancelled, ..opts };
    let err = block_on(w.dreams.run(&w.target(), &opts)).unwrap_err();
    assert!(matches!(err.code(), "cancelled" | "agent"), "{err}");
    assert!(!lock.exists());
}

fn session(w: &World, n: u32) {
    let dir = w.target().transcript_dir;
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(format!("{n:08x}-1111-4111-8111-111111111111.jsonl")), "{}\n").unwrap();
}

#[test]
fn the_scheduler_dreams_only_when_every_gate_opens() {
    let w = duplicated_world();
    let t = w.target();
    let tick = |e: &Enablement| block_on(w.dreams.tick(&t, e, &mneme_dream::CachedFlags::default(), Engine::Offline, &Cancel::new())).unwrap();
    assert!(tick(&Enablement::AutoDreamOff { source: None }).is_none());
    for n in 0..4 {
        session(&w, n);
    }
    assert!(tick(&Enablement::On).is_none(), "4 sessions are not enough");
    session(&w, 4);
    assert!(tick(&Enablement::On).is_none(), "scanned under 10 minutes ago");
    w.clock.advance(600);
    let rec = tick(&Enablement::On).expect("every gate open");
    assert_eq!(rec.trigger, mneme_dream::Trigger::Auto);
    assert_eq!(rec.sessions.len(), 5);
    assert_eq!(rec.status, DreamStatus::Pending, "review mode");
    assert_eq!(rec.gate.sessions_since, 5);
    // The lock's new mtime closes the time gate for 24 hours.
    w.clock.advance(3600);
    assert!(tick(&Enablement::On).is_none());
    w.dreams.set_mode(&w.mem, DreamMode::Off).unwrap();
    w.clock.advance(48 * 3600);
    session(&w, 9);
    assert!(tick(&Enablement::On).is_none(), "mode off: no automatic dreams");
}

#[test]
fn daily_logs_append_and_feed_the_next_dream() {
    let w = World::new();
    w.write("MEMORY.md", "");
    let a = w.dreams.log(&w.mem, "Always run cargo fmt before committing").unwrap();
    assert_eq!(a.line, "- 12:00 Always run cargo fmt before committing");
    w.dreams.log(&w.mem, "fixed the flaky test").unwrap();
    let (path, text) = w.dreams.read_log(&w.mem, None).unwrap();
    assert_eq!(path, w.mem.join("logs/2026/05/2026-05-06.md"));
    let log = text.unwrap();
    assert_eq!(log, "- 12:00 Always run cargo fmt before committing\n- 12:00 fixed the flaky test\n");
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.stats.as_ref().unwrap().distilled, 1);
    assert!(w.read("MEMORY.md").contains("Always run cargo fmt before committing"));
    assert_eq!(fs::read_to_string(&path).unwrap(), log, "the log itself is untouched");
}

#[test]
fn a_running_holder_keeps_a_fresh_lock_and_a_killed_one_leaves_it_reclaimable() {
    // A real process holding the lock the way a crashing dreamer would: PID written, then
    // killed with SIGKILL before it could roll back.
    let w = World::new();
    w.write("a.md", &topic("A", "a", "user", "A."));
    let mut holder: Child = Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s' $$ > '{}'; exec sleep 60", w.mem.join(LOCK_FILE).display()))
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while fs::read_to_string(w.mem.join(LOCK_FILE)).map(|s| s.is_empty()).unwrap_or(true) {
        assert!(std::time::Instant::now() < deadline, "the other process never wrote its PID into {LOCK_FILE} within 60 s");
        std::thread::yield_now();
    }
    // The file's mtime is the real time of the write; the clock must agree for "fresh".
    let real_now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let w = World { clock: TestClock::at(real_now), ..w };
    let w = World { dreams: mneme_dream::Dreams::new(w.home.env.clone(), w.clock.clone()), ..w };
    assert_eq!(w.offline(true).unwrap_err().code(), "locked");
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(w.offline(true).unwrap().status, DreamStatus::Applied);
}

/// Index lines whose file could never exist (a decoded line break, a name over 255 bytes, a
/// path under a file) are kept and flagged, not planned as writes that would fail this dream
/// and every one after it.
#[test]
fn index_lines_no_file_could_answer_are_flagged_and_the_dream_still_applies() {
    let w = World::new();
    w.write("a.md", &topic("A", "a file", "project", "Body."));
    let long = format!("{}.md", "n".repeat(300));
    let index = format!("- [A](a.md) — a file\n- [Broken](x%0Ay.md) — line break\n- [Long]({long}) — too long\n- [Under](a.md/b.md) — under a file\n");
    w.write("MEMORY.md", &index);
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.status, mneme_dream::DreamStatus::Applied, "{rec:#?}");
    assert!(rec.changeset.changes.iter().all(|c| c.after.is_none() || !c.path.to_string_lossy().contains("y.md")), "{:#?}", rec.changeset.changes);
    let notes = rec.notes.join("\n");
    for flagged in ["x\ny.md", "a.md/b.md", &long[..20]] {
        assert!(notes.contains(flagged), "{flagged:?} not flagged in {notes}");
    }
    assert_eq!(w.read("MEMORY.md"), index, "the lines stay");
}

/// A pending dream that removes a copy because the survivor holds its text is refused when,
/// by the time it is approved, the survivor (which the dream does not write) no longer does.
#[test]
fn approving_a_dream_whose_survivor_changed_since_is_refused() {
    let w = World::new();
    w.dreams.set_mode(&w.mem, DreamMode::Review).unwrap();
    let body = "Never deploy on Fridays.\n**Why:** nobody is around on the weekend.";
    w.write("old.md", &topic("No Friday deploys", "Never deploy on Fridays", "feedback", body));
    filetime::set_file_mtime(w.mem.join("old.md"), filetime::FileTime::from_unix_time(NOW as i64 - 90_000, 0)).unwrap();
    w.write("new.md", &topic("No Friday deploys", "Never deploy on Fridays", "feedback", body));
    w.write("MEMORY.md", "- [No Friday deploys](old.md) — Never deploy on Fridays\n- [No Friday deploys](new.md) — Never deploy on Fridays\n");
    let rec = w.offline(false).unwrap();
    assert_eq!(rec.status, DreamStatus::Pending);
    assert!(!rec.changeset.changes.iter().any(|c| c.path.ends_with("new.md")), "the survivor is not written: {:#?}", rec.changeset.changes);
    // Claude Code rewrites the survivor before the person approves.
    w.write("new.md", &topic("No Friday deploys", "Never deploy on Fridays", "feedback", "Deploys are fine any day now."));
    let err = w.dreams.approve(&w.mem, &rec.id).unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    assert!(err.to_string().contains("new.md"), "{err}");
    assert!(w.mem.join("old.md").exists(), "nothing applied");
    assert_eq!(w.dreams.show(&w.mem, &rec.id).unwrap().status, DreamStatus::Pending);
}

#[test]
fn a_dream_is_measured_against_the_thresholds_of_the_session_s_config_directory() {
    // The session's Claude Code keeps its global config in another directory than this
    // process's (CLAUDE_CONFIG_DIR set for the project), with its own cached server flag.
    let w = World::new();
    w.write("MEMORY.md", "- [A](a.md) - a\n");
    w.write("a.md", "---\nname: A\ndescription: a\ntype: user\n---\nA.\n");
    let session_config = w.home.root.join("session-config");
    fs::create_dir_all(&session_config).unwrap();
    fs::write(
        session_config.join(".claude.json"),
        r#"{"cachedGrowthBookFeatures": {"tengu_onyx_plover": {"enabled": true, "minHours": 3, "minSessions": 7}}}"#,
    )
    .unwrap();
    let session_env = w.home.env.clone().set_var("CLAUDE_CONFIG_DIR", session_config.to_string_lossy());
    let flags = mneme_dream::CachedFlags::read(&session_env);
    assert_ne!(flags, mneme_dream::CachedFlags::read(&w.home.env), "the two directories hold different flags");
    let opts = mneme_dream::RunOptions { flags, ..w.opts(Engine::Offline, false) };
    let record = block_on(w.dreams.run(&w.target(), &opts)).unwrap();
    assert_eq!((record.gate.min_hours, record.gate.min_sessions), (3.0, 7));
    // The process's own directory has no flag: the defaults.
    let record = block_on(w.dreams.run(&w.target(), &w.opts(Engine::Offline, false))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((record.gate.min_hours, record.gate.min_sessions), (24.0, 5));
}

/// Runs `a` and `b` on two threads released together, and answers both results.
fn at_once<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    let start = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        let ha = s.spawn(|| {
            start.wait();
            a()
        });
        let hb = s.spawn(|| {
            start.wait();
            b()
        });
        (ha.join().unwrap(), hb.join().unwrap())
    })
}

/// A double-clicked Approve (or the app and the CLI at once): one applies the dream, the other
/// finds it applied. Without the history lock both read it as pending, and whichever saved
/// last decided what the record said, an applied dream shown as pending (with no undo) among
/// the outcomes.
#[test]
fn approving_one_dream_twice_at_once_applies_it_once_and_it_stays_undoable() {
    for round in 0..4 {
        let w = duplicated_world();
        let before = w.snapshot();
        let rec = w.offline(false).unwrap();
        let (a, b) = at_once(|| w.dreams.approve(&w.mem, &rec.id), || w.dreams.approve(&w.mem, &rec.id));
        let codes: Vec<&str> = [&a, &b].iter().map(|r| r.as_ref().map_or_else(|e| e.code(), |_| "ok")).collect();
        assert_eq!(codes.iter().filter(|c| **c == "ok").count(), 1, "round {round}: {a:?} / {b:?}");
        assert!(codes.contains(&"wrong-status"), "round {round}: the second finds it applied: {a:?} / {b:?}");
        let stored = w.dreams.show(&w.mem, &rec.id).unwrap();
        assert_eq!(stored.status, DreamStatus::Applied, "round {round}");
        assert_eq!(stored.trashed.len(), 1, "round {round}");
        assert!(!w.mem.join("tabs_old.md").exists());
        w.dreams.undo(&w.mem, None, false).unwrap();
        assert_eq!(w.snapshot(), before, "round {round}: undone byte for byte");
    }
}

/// Approve racing reject, and two undos at once: exactly one of each pair acts, and the record
/// always says what the folder holds.
#[test]
fn approve_racing_reject_and_two_undos_at_once_leave_a_record_that_matches_the_folder() {
    for round in 0..4 {
        let w = duplicated_world();
        let before = w.snapshot();
        let rec = w.offline(false).unwrap();
        let (approved, rejected) = at_once(|| w.dreams.approve(&w.mem, &rec.id), || w.dreams.reject(&w.mem, &rec.id));
        assert!(approved.is_ok() != rejected.is_ok(), "round {round}: exactly one acts: {approved:?} / {rejected:?}");
        let stored = w.dreams.show(&w.mem, &rec.id).unwrap();
        if let Err(e) = &approved {
            assert_eq!(e.code(), "wrong-status");
            assert_eq!(stored.status, DreamStatus::Rejected, "round {round}");
        } else {
            assert_eq!(rejected.unwrap_err().code(), "wrong-status");
            assert_eq!(stored.status, DreamStatus::Applied, "round {round}");
            assert_ne!(w.snapshot(), before);
            let (x, y) = at_once(|| w.dreams.undo(&w.mem, Some(&rec.id), false), || w.dreams.undo(&w.mem, None, false));
            assert!(x.is_ok() != y.is_ok(), "round {round}: exactly one undoes: {x:?} / {y:?}");
            let loser = x.err().or(y.err()).unwrap();
            assert!(matches!(loser.code(), "wrong-status" | "not-found"), "round {round}: {loser}");
            assert_eq!(w.dreams.show(&w.mem, &rec.id).unwrap().status, DreamStatus::Undone);
        }
        assert_eq!(w.snapshot(), before, "round {round}");
    }
}

/// A mode file that cannot be read may have said review or off: a dream is held for review
/// (not applied as if the mode were automatic), and the error names the mode file.
#[test]
fn a_damaged_or_unknown_mode_holds_the_dream_for_review_and_names_the_mode_file() {
    for (i, content) in ["{\"dreamMode\": \"revi", "{\"dreamMode\": \"weekly\"}", "{\"dreamMode\": 1}", "[]"].into_iter().enumerate() {
        let w = duplicated_world();
        let before = w.snapshot();
        let file = w.dreams.history(&w.mem).dir().join("settings.json");
        fs::write(&file, content).unwrap();
        let err = w.dreams.mode(&w.mem).unwrap_err();
        assert_eq!(err.code(), "damaged", "{content}");
        let text = err.to_string();
        assert!(text.starts_with(&format!("the dream mode file {} is damaged (", file.display())), "{text}");
        assert!(!text.contains("record"), "{text}");
        let rec = w.offline(false).unwrap();
        assert_eq!(rec.status, DreamStatus::Pending, "{content}: held, not applied");
        assert_eq!(w.snapshot(), before, "{content}");
        assert!(rec.notes[0].starts_with("Held for review: the dream mode file"), "{:?}", rec.notes);
        // Choosing the mode again mends it.
        w.dreams.set_mode(&w.mem, DreamMode::Automatic).unwrap();
        assert_eq!(w.dreams.mode(&w.mem).unwrap(), DreamMode::Automatic, "case {i}");
    }
}

/// Two memory folders whose paths differ only in a character the history key sanitizes
/// (`my_app` and `my-app`) share one history folder. Neither lists, shows, approves or undoes
/// the other's dreams: approving from the wrong one wrote the other folder's changes.
#[test]
fn folders_sharing_a_history_folder_never_act_on_each_others_dreams() {
    let w = World::new();
    let a = w.home.root.join("src/my_app/memory");
    let b = w.home.root.join("src/my-app/memory");
    assert_eq!(w.dreams.history(&a).dir(), w.dreams.history(&b).dir(), "the premise: one history folder");
    for dir in [&a, &b] {
        fs::create_dir_all(dir).unwrap();
        fs::write(dir.join("a.md"), topic("Alpha", "first", "user", "Alpha fact.")).unwrap();
    }
    w.dreams.set_mode(&a, DreamMode::Review).unwrap();
    assert_eq!(w.dreams.mode(&b).unwrap(), DreamMode::Automatic, "a's mode is not b's");
    let rec = block_on(w.dreams.run(&w.dreams.target_for_memory_dir(&a), &w.opts(Engine::Offline, false))).unwrap();
    assert_eq!(rec.status, DreamStatus::Pending);
    let (a_before, b_before) = (tree(&a), tree(&b));

    assert!(w.dreams.list(&b).unwrap().0.is_empty() && w.dreams.list(&b).unwrap().1.is_empty(), "b lists nothing of a's");
    assert_eq!(w.dreams.list(&a).unwrap().0.len(), 1);
    for err in [w.dreams.show(&b, &rec.id).unwrap_err(), w.dreams.approve(&b, &rec.id).unwrap_err(), w.dreams.reject(&b, &rec.id).unwrap_err()] {
        assert_eq!(err.code(), "not-found");
        assert!(err.to_string().contains(&a.display().to_string()), "names the folder it belongs to: {err}");
    }
    assert_eq!((tree(&a), tree(&b)), (a_before.clone(), b_before.clone()), "nothing written to either");
    assert_eq!(w.dreams.show(&a, &rec.id).unwrap().status, DreamStatus::Pending, "still a's to review");

    w.dreams.approve(&a, &rec.id).unwrap();
    assert_eq!(w.dreams.undo(&b, None, false).unwrap_err().code(), "not-found", "b has nothing to undo");
    assert_eq!(w.dreams.undo(&b, Some(&rec.id), false).unwrap_err().code(), "not-found");
    assert_eq!(tree(&b), b_before);
    w.dreams.undo(&a, None, false).unwrap();
    assert_eq!(tree(&a), a_before);
}

/// A record whose changes point at another folder than the one it names (changed by hand, or
/// planted) is refused as damaged, never applied there.
#[test]
fn a_record_whose_changes_lie_outside_its_folder_is_refused() {
    let w = duplicated_world();
    let rec = w.offline(false).unwrap();
    let elsewhere = w.home.root.join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let history = w.dreams.history(&w.mem);
    let path = history.dir().join(format!("{}.json", rec.id));
    let text = fs::read_to_string(&path).unwrap();
    let mem = serde_json::to_string(&w.mem).unwrap();
    let other = serde_json::to_string(&elsewhere).unwrap();
    let mem = &mem[1..mem.len() - 1];
    let other = &other[1..other.len() - 1];
    // Every path but the folder the record names moved elsewhere.
    let mut moved: serde_json::Value = serde_json::from_str(&text.replace(mem, other)).unwrap();
    moved["memoryDir"] = serde_json::Value::String(w.mem.to_string_lossy().into_owned());
    fs::write(&path, serde_json::to_vec(&moved).unwrap()).unwrap();
    let err = w.dreams.approve(&w.mem, &rec.id).unwrap_err();
    assert_eq!(err.code(), "damaged", "{err}");
    assert!(err.to_string().contains(&elsewhere.display().to_string()), "{err}");
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing written there");
    let (listed, damaged) = w.dreams.list(&w.mem).unwrap();
    assert!(listed.is_empty() && damaged.len() == 1, "reported, not listed");
}

/// A previous consolidation dated past the year 9999 (a lock mtime a file system kept as
/// given) has no calendar date: the offline dream still plans, instead of panicking into a
/// failed dream whose rollback put the same date back, so that every later dream failed too.
#[test]
fn a_previous_consolidation_past_the_year_9999_does_not_stop_the_offline_dream() {
    let w = World::new();
    w.write("MEMORY.md", "");
    w.dreams.log(&w.mem, "Always run cargo fmt before committing").unwrap();
    let memdir = w.dreams.memdir(&w.mem);
    let far = std::time::UNIX_EPOCH + std::time::Duration::from_secs(253_402_300_800 + 400 * 86_400);
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(NOW);
    for offset in [0, 3600, -3600] {
        let zone = mneme_store::local_time::LocalZone::Fixed(offset);
        let plan = mneme_dream::offline::consolidate(&memdir, mneme_dream::OfflineOptions { zone, since: Some(far), now }).unwrap();
        assert_eq!(plan.stats.distilled, 0, "nothing in the log is newer than that");
    }
}

fn mode_and_mtime(p: &std::path::Path) -> (u32, i64) {
    use std::os::unix::fs::PermissionsExt;
    let m = fs::metadata(p).unwrap();
    (m.permissions().mode() & 0o7777, filetime::FileTime::from_last_modification_time(&m).unix_seconds())
}

/// A file the dream moved to the trash comes back from there on undo: the same file, with
/// its permissions and date, and its trash entry used up. It was written anew with default
/// permissions, and the entry stayed in the trash as if the memory were still deleted.
#[cfg(unix)]
#[test]
fn undo_takes_a_removed_file_back_from_the_trash_with_its_permissions_and_date() {
    use std::os::unix::fs::PermissionsExt;
    let w = duplicated_world();
    fs::set_permissions(w.mem.join("tabs_old.md"), fs::Permissions::from_mode(0o640)).unwrap();
    let kept = mode_and_mtime(&w.mem.join("tabs_old.md"));
    let before = w.snapshot();
    let rec = w.offline(false).unwrap();
    let applied = w.dreams.approve(&w.mem, &rec.id).unwrap();
    let trash_id = applied.trashed[0].trash_id.clone();
    let memdir = w.dreams.memdir(&w.mem);
    assert!(memdir.list_trash().unwrap().entries.iter().any(|e| e.id == trash_id));
    w.dreams.undo(&w.mem, None, false).unwrap();
    assert_eq!(w.snapshot(), before);
    assert_eq!(mode_and_mtime(&w.mem.join("tabs_old.md")), kept, "the same file, not a new one");
    assert!(!memdir.list_trash().unwrap().entries.iter().any(|e| e.id == trash_id), "its trash entry is used up");

    // With the entry gone from the trash meanwhile, the record's text still brings it back.
    w.clock.advance(3600);
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied);
    memdir.purge_trash(&rec.trashed[0].trash_id).unwrap();
    w.dreams.undo(&w.mem, None, false).unwrap();
    assert_eq!(w.snapshot(), before);
}

/// A dream that removes a memory without writing the index has the trash take the memory's
/// index line with it; undo puts the line back too, byte for byte.
#[test]
fn undo_of_a_removal_that_took_an_index_line_puts_the_line_back() {
    let w = duplicated_world();
    let before = w.snapshot();
    let mut rec = w.offline(false).unwrap();
    let path = w.mem.join("tabs_new.md");
    rec.changeset.changes = vec![mneme_dream::FileChange {
        path: path.clone(),
        before: Some(w.read("tabs_new.md")),
        after: None,
        reason: "tabs_new.md: removed".into(),
        extra: Default::default(),
    }];
    rec.moved.clear();
    w.dreams.history(&w.mem).save(&rec).unwrap();
    w.dreams.approve(&w.mem, &rec.id).unwrap();
    assert!(!path.exists());
    assert!(!w.read("MEMORY.md").contains("tabs_new.md"), "the trash took the line with the file");
    w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
    assert_eq!(w.snapshot(), before, "file and index line back");
}

/// The daily log is read as the folder's own files are: a link out of the memory folder (a
/// cloned repository's `logs/…` pointing at a file of the user's) is refused, a FIFO does not
/// hang the read, and a file past the cap is refused instead of read whole.
#[cfg(unix)]
#[test]
fn the_daily_log_is_read_inside_the_folder_and_up_to_a_cap() {
    let w = World::new();
    let today = w.mem.join("logs/2026/05/2026-05-06.md");
    fs::create_dir_all(today.parent().unwrap()).unwrap();
    let secret = w.home.root.join("secret.txt");
    fs::write(&secret, "a private key\n").unwrap();
    std::os::unix::fs::symlink(&secret, &today).unwrap();
    let err = w.dreams.read_log(&w.mem, None).unwrap_err();
    assert_eq!(err.code(), "outside-memdir", "{err}");
    assert!(!err.to_string().contains("a private key"));

    // A link that stays inside the folder is followed, as the folder's reads follow it.
    fs::remove_file(&today).unwrap();
    w.write("notes.md", "- 09:00 inside\n");
    std::os::unix::fs::symlink(w.mem.join("notes.md"), &today).unwrap();
    assert_eq!(w.dreams.read_log(&w.mem, None).unwrap().1.as_deref(), Some("- 09:00 inside\n"));

    fs::remove_file(&today).unwrap();
    assert!(Command::new("mkfifo").arg(&today).status().unwrap().success());
    let (tx, rx) = std::sync::mpsc::channel();
    let (dreams, mem) = (w.dreams.clone(), w.mem.clone());
    std::thread::spawn(move || {
        let _ = tx.send(dreams.read_log(&mem, None).map_err(|e| e.code()));
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("reading a FIFO as the log never returned");
    assert_eq!(got.unwrap_err(), "not-a-regular-file");

    fs::remove_file(&today).unwrap();
    let f = fs::File::create(&today).unwrap();
    f.set_len(mneme_dream::LOG_READ_CAP + 1).unwrap();
    let err = w.dreams.read_log(&w.mem, None).unwrap_err();
    assert!(err.to_string().contains("open it in an editor"), "{err}");
    f.set_len(mneme_dream::LOG_READ_CAP).unwrap();
    assert_eq!(w.dreams.read_log(&w.mem, None).unwrap().1.map(|t| t.len() as u64), Some(mneme_dream::LOG_READ_CAP));
}

/// Two dreams planned from the same folder make the same changes. Once the first is applied,
/// approving the second finds its files changed (to exactly its own result): that is a
/// conflict with nothing written, not a dream written in part.
#[test]
fn approving_a_second_dream_planned_alike_is_a_conflict_not_a_partial_write() {
    let w = duplicated_world();
    let first = w.offline(false).unwrap();
    let second = w.offline(false).unwrap();
    assert_eq!(first.changeset.changes, second.changeset.changes, "the premise: the same plan");
    w.dreams.approve(&w.mem, &first.id).unwrap();
    let after_first = w.snapshot();
    let err = w.dreams.approve(&w.mem, &second.id).unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    assert_eq!(w.dreams.show(&w.mem, &second.id).unwrap().status, DreamStatus::Pending);
    assert_eq!(w.snapshot(), after_first);
    assert_eq!(w.dreams.undo(&w.mem, None, false).unwrap().id, first.id, "only the first is undoable");
}

/// The pending count the Dreams screen shows reads each record only as far as its folder and
/// status: it agrees with the full list, leaves out another folder's dreams that share the
/// history folder, and skips what cannot be read.
#[test]
fn the_pending_count_agrees_with_the_list_and_counts_only_this_folder() {
    let w = duplicated_world();
    assert_eq!(w.dreams.pending_count(&w.mem).unwrap(), 0);
    let first = w.offline(false).unwrap();
    w.offline(false).unwrap();
    let history = w.dreams.history(&w.mem);
    // Another folder's pending dream in the same history folder, and a damaged file.
    let mut foreign = first.clone();
    foreign.id = "1".into();
    foreign.memory_dir = w.home.root.join("elsewhere/memory");
    history.save(&foreign).unwrap();
    fs::write(history.dir().join("2.json"), "{\"status\": \"pending\"").unwrap();
    assert_eq!(w.dreams.pending_count(&w.mem).unwrap(), 2);
    w.dreams.reject(&w.mem, &first.id).unwrap();
    assert_eq!(w.dreams.pending_count(&w.mem).unwrap(), 1);
    let listed = w.dreams.list(&w.mem).unwrap().0;
    assert_eq!(listed.iter().filter(|r| r.status == DreamStatus::Pending).count(), 1);
}
