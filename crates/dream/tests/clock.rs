//! Dreams when the clock is wrong: stepped back after a dream (NTP correcting a clock that ran
//! ahead, a clock set by hand), so the newest dream carries an earlier time than the one before.

mod common;

use common::*;
use mneme_core::clock::SetClock;
use mneme_dream::{DreamStatus, Dreams, Engine};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// The dream recorded last is the newest in the history and what `undo --last` undoes, even
/// when the clock was stepped back in between: ordered by time, the earlier dream (stamped
/// while the clock ran a day ahead) stayed "newest", and `undo --last` undid it instead,
/// leaving the dream just made in place, until the clock caught up a day later.
#[test]
fn the_dream_recorded_last_is_the_one_undone_after_the_clock_was_stepped_back() {
    let w = World::new();
    let clock = Arc::new(SetClock::at_unix_secs(NOW + 86_400));
    let dreams = Dreams::new(w.home.env.clone(), clock.clone());
    let dream = |dreams: &Dreams| block_on(dreams.run(&dreams.target_for_memory_dir(&w.mem), &w.opts(Engine::Offline, true))).unwrap();
    w.write("a.md", &topic("A", "a", "user", "A."));
    w.write("MEMORY.md", "- [A](a.md) — a\n- [Gone](gone.md) — x\n");
    let first = dream(&dreams);
    assert_eq!(first.status, DreamStatus::Applied);
    assert!(w.mem.join("gone.md").exists(), "the premise: the first dream wrote the missing memory back");

    // The clock is put right: a day earlier than it read at the first dream.
    clock.set(UNIX_EPOCH + Duration::from_secs(NOW));
    w.write("MEMORY.md", &format!("{}- [Lost](lost.md) — y\n", w.read("MEMORY.md")));
    let second = dream(&dreams);
    assert_eq!(second.status, DreamStatus::Applied);
    assert!(w.mem.join("lost.md").exists(), "the premise: the second dream changed files too");
    assert!(second.created_at_ms < first.created_at_ms, "the record keeps what the clock said");

    let (listed, _) = dreams.list(&w.mem).unwrap();
    assert_eq!(listed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), [second.id.as_str(), first.id.as_str()], "newest first is the order they were recorded in");
    let undone = dreams.undo(&w.mem, None, false).unwrap();
    assert_eq!(undone.id, second.id);
    assert!(!w.mem.join("lost.md").exists() && w.mem.join("gone.md").exists(), "the second dream undone, the first one's work kept");
    assert_eq!(dreams.undo(&w.mem, None, false).unwrap().id, first.id, "then the first");
}
