//! The dream history's retention (`mneme_dream::history::retention`): recording a dream prunes
//! the records past it, under the history's record lock, and nothing else.

mod common;

use common::*;
use mneme_dream::history::retention::{KEEP_DAYS, KEEP_NEWEST};
use mneme_dream::{DreamRecord, DreamStatus, FileChange};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;
const HOUR_MS: i64 = 60 * 60 * 1000;
const NOW_MS: i64 = NOW as i64 * 1000;

/// A record of `w`'s folder like one a dream left: `template` (a real dream's record) under
/// another id, run at `created_at_ms`, in `status`, changing a file when `changed`.
fn old(w: &World, template: &DreamRecord, created_at_ms: i64, status: DreamStatus, changed: bool) -> DreamRecord {
    old_of(w, &w.mem, template, created_at_ms, status, changed)
}

/// [`old`], of the memory folder `mem`.
fn old_of(w: &World, mem: &Path, template: &DreamRecord, created_at_ms: i64, status: DreamStatus, changed: bool) -> DreamRecord {
    let mut r = template.clone();
    r.id = created_at_ms.to_string();
    r.created_at_ms = created_at_ms;
    r.status = status;
    r.memory_dir = mem.to_path_buf();
    r.changeset.root = mem.to_path_buf();
    r.changeset.changes = if changed {
        vec![FileChange { path: mem.join("a.md"), before: Some("a0\n".into()), after: Some("a1\n".into()), reason: "a.md: edited".into(), extra: Default::default() }]
    } else {
        Vec::new()
    };
    r.applied_at_ms = matches!(status, DreamStatus::Applied | DreamStatus::Undone).then_some(created_at_ms);
    r.rejected_at_ms = (status == DreamStatus::Rejected).then_some(created_at_ms);
    r.undone_at_ms = (status == DreamStatus::Undone).then_some(created_at_ms);
    w.dreams.history(mem).save(&r).unwrap();
    r
}

/// A real record to copy, its own file removed so that only the records a test makes count.
fn template(w: &World) -> DreamRecord {
    let t = w.offline(true).unwrap();
    fs::remove_file(w.dreams.history(&w.mem).dir().join(format!("{}.json", t.id))).unwrap();
    t
}

/// A memory folder beside `w`'s whose path sanitizes to the same key (`_repo`, `-repo`), so
/// the two share one history folder.
fn twin(w: &World) -> std::path::PathBuf {
    let other = w.mem.parent().unwrap().parent().unwrap().join("_repo/memory");
    fs::create_dir_all(&other).unwrap();
    other
}

fn ids(w: &World, memory_dir: &Path) -> BTreeSet<String> {
    w.dreams.list(memory_dir).unwrap().0.into_iter().map(|r| r.id).collect()
}

#[test]
fn recording_a_dream_prunes_old_records_and_keeps_the_newest_pending_and_undoable() {
    assert_eq!((KEEP_DAYS, KEEP_NEWEST), (30, 20), "the numbers this test is laid out for");
    let w = World::new();
    let t = template(&w);
    let day = |d: i64| NOW_MS - d * DAY_MS;
    let mut kept = BTreeSet::new();
    let mut pruned = BTreeSet::new();
    // Five recent dreams: kept by age.
    for d in 1..=5 {
        kept.insert(old(&w, &t, day(d), DreamStatus::Rejected, true).id);
    }
    // Twenty rejected 40 days ago: with the new dream and the five recent ones, the newest
    // fourteen of them are among the newest twenty and stay; the other six go.
    for i in 0..20 {
        let id = old(&w, &t, day(40) - i * HOUR_MS, DreamStatus::Rejected, true).id;
        if i < 14 { kept.insert(id) } else { pruned.insert(id) };
    }
    // Run 41 days ago but rejected two days ago: as fresh as its last event.
    let mut late = old(&w, &t, day(41), DreamStatus::Rejected, true);
    late.rejected_at_ms = Some(day(2));
    w.dreams.history(&w.mem).save(&late).unwrap();
    kept.insert(late.id);
    // What `undo --last` would undo, however old, and never what only a person can settle.
    kept.insert(old(&w, &t, day(45), DreamStatus::Applied, true).id);
    pruned.insert(old(&w, &t, day(46), DreamStatus::Applied, true).id);
    kept.insert(old(&w, &t, day(50), DreamStatus::Pending, true).id);
    kept.insert(old(&w, &t, day(55), DreamStatus::Applying, true).id);
    pruned.insert(old(&w, &t, day(60), DreamStatus::Failed, false).id);
    pruned.insert(old(&w, &t, day(61), DreamStatus::Undone, true).id);
    // An applied dream that changed nothing is not what undo works on.
    pruned.insert(old(&w, &t, day(44), DreamStatus::Applied, false).id);
    assert_eq!(ids(&w, &w.mem), &kept | &pruned, "the premise");

    let new = w.offline(true).unwrap();
    assert_eq!(new.status, DreamStatus::Applied);
    kept.insert(new.id.clone());
    assert_eq!(ids(&w, &w.mem), kept);
    assert!(new.notes.iter().all(|n| !n.contains("pruned")), "{:?}", new.notes);
    // What was kept is whole: undo with no id still finds the old applied dream.
    let undoable = w.dreams.history(&w.mem).list().unwrap().0;
    assert_eq!(mneme_dream::history::last_undoable(&undoable).unwrap().id, day(45).to_string());
}

/// Two memory folders whose paths sanitize alike share one history folder: a dream of one
/// prunes its own records only. A record that cannot be read is left as it is (whose it is,
/// and how old, is unknown) and still reported; so is a reserved id still being written.
#[test]
fn another_folders_records_and_unreadable_ones_are_left_alone() {
    let w = World::new();
    let t = template(&w);
    let other = twin(&w);
    let history = w.dreams.history(&w.mem);
    assert_eq!(history.dir(), w.dreams.history(&other).dir(), "the premise: one history folder");
    let theirs = old_of(&w, &other, &t, NOW_MS - 95 * DAY_MS, DreamStatus::Rejected, false);
    let mine: Vec<String> = (0..KEEP_NEWEST as i64 + 3).map(|i| old(&w, &t, NOW_MS - 90 * DAY_MS - i * HOUR_MS, DreamStatus::Rejected, false).id).collect();
    let damaged = history.dir().join("7.json");
    fs::write(&damaged, "{ cut short").unwrap();
    let reserved = history.dir().join("8.json");
    fs::write(&reserved, "").unwrap();

    let new = w.offline(true).unwrap();
    let mut want: BTreeSet<String> = mine[..KEEP_NEWEST - 1].iter().cloned().collect();
    want.insert(new.id);
    assert_eq!(ids(&w, &w.mem), want, "the newest twenty of this folder, the new dream among them");
    assert_eq!(ids(&w, &other), BTreeSet::from([theirs.id.clone()]), "the other folder's record, older than all, is untouched");
    assert_eq!(fs::read_to_string(&damaged).unwrap(), "{ cut short");
    assert_eq!(fs::read(&reserved).unwrap(), b"");
    let (_, reported) = w.dreams.list(&w.mem).unwrap();
    assert_eq!(reported.iter().map(|e| e.code()).collect::<Vec<_>>(), ["damaged"], "still reported for a person to look at");
    let held = history.lock_records(history.dir()).unwrap();
    let pruned = history.prune(&held, NOW_MS).unwrap();
    assert_eq!((pruned.removed.len(), pruned.failed.len(), pruned.damaged), (0, 0, 1));
}

/// The prune runs under the record lock, so it sees the history as an undo (or approve, or
/// reject) holding that lock left it. Here an undo of the newest applied dream, as it saves
/// its record, makes an older one the next `undo --last` works on: the dream recorded
/// meanwhile waits for the lock, and then keeps that older one.
#[test]
fn the_prune_waits_for_the_record_lock_and_sees_what_its_holder_left() {
    let w = World::new();
    let t = template(&w);
    let history = w.dreams.history(&w.mem);
    let older = old(&w, &t, NOW_MS - 60 * DAY_MS, DreamStatus::Applied, true);
    let mut newest = old(&w, &t, NOW_MS - 59 * DAY_MS, DreamStatus::Applied, true);
    for i in 0..KEEP_NEWEST as i64 {
        old(&w, &t, NOW_MS - DAY_MS - i * HOUR_MS, DreamStatus::Rejected, false);
    }

    let held = history.lock_records(history.dir()).unwrap();
    let dreaming = std::thread::scope(|s| {
        let dream = s.spawn(|| w.offline(true).unwrap());
        // A sleep on purpose: what is checked is that the dream does not end while the lock is
        // held, which no poll can see sooner; 300 ms is long beside an offline dream.
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!dream.is_finished(), "the dream waits for the record lock");
        newest.status = DreamStatus::Undone;
        newest.undone_at_ms = Some(NOW_MS);
        history.save(&newest).unwrap();
        drop(held);
        dream.join().unwrap()
    });
    assert_eq!(dreaming.status, DreamStatus::Applied);
    let left = ids(&w, &w.mem);
    assert!(left.contains(&older.id), "the dream undo works on next is kept: {left:?}");
    assert!(left.contains(&newest.id), "undone just now, so as fresh as today: {left:?}");
    assert_eq!(left.len(), KEEP_NEWEST + 3, "the recent twenty, the two applied ones and the new dream");
}

/// Two dreams of two folders sharing the history folder, recorded at once, each prune under
/// the one record lock: neither fails, and each folder ends with its newest twenty.
#[test]
fn dreams_of_two_folders_sharing_the_history_prune_side_by_side() {
    let a = World::new();
    let t = template(&a);
    let b_mem = twin(&a);
    let b_dreams = mneme_dream::Dreams::new(a.home.env.clone(), a.clock.clone());
    for i in 0..KEEP_NEWEST as i64 + 5 {
        let at = NOW_MS - 40 * DAY_MS - i * HOUR_MS;
        old(&a, &t, at, DreamStatus::Rejected, false);
        // A minute apart from a's, so that the ids differ in the one folder.
        old_of(&a, &b_mem, &t, at - 60_000, DreamStatus::Rejected, false);
    }
    let b_target = b_dreams.target_for_memory_dir(&b_mem);
    let (ra, rb) = std::thread::scope(|s| {
        let ra = s.spawn(|| a.offline(true).unwrap());
        let rb = s.spawn(|| block_on(b_dreams.run(&b_target, &a.opts(mneme_dream::Engine::Offline, true))).unwrap());
        (ra.join().unwrap(), rb.join().unwrap())
    });
    assert!(ra.notes.iter().chain(&rb.notes).all(|n| !n.contains("pruned")));
    assert_eq!(ids(&a, &a.mem).len(), KEEP_NEWEST);
    assert_eq!(b_dreams.list(&b_mem).unwrap().0.len(), KEEP_NEWEST);
}

/// A dream that fails is recorded too, and prunes as well: a folder whose dreams keep failing
/// (a provider gone, a cancel every time) must not grow without end either.
#[test]
fn a_failed_dream_prunes_too() {
    let w = World::new();
    let t = template(&w);
    let all: Vec<String> = (0..KEEP_NEWEST as i64 + 2).map(|i| old(&w, &t, NOW_MS - 40 * DAY_MS - i * HOUR_MS, DreamStatus::Failed, false).id).collect();
    let cancel = mneme_model::Cancel::new();
    cancel.cancel();
    let opts = mneme_dream::RunOptions { cancel, ..w.opts(mneme_dream::Engine::Offline, true) };
    assert_eq!(block_on(w.dreams.run(&w.target(), &opts)).unwrap_err().code(), "cancelled");
    let (records, _) = w.dreams.list(&w.mem).unwrap();
    assert_eq!(records[0].status, DreamStatus::Failed, "the cancelled dream is recorded");
    let mut want: BTreeSet<String> = all[..KEEP_NEWEST - 1].iter().cloned().collect();
    want.insert(records[0].id.clone());
    assert_eq!(ids(&w, &w.mem), want);
}
