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

/// A lock stamped ahead of the clock, whose PID runs (a folder copied from a machine whose
/// clock was ahead, and a PID that happens to be alive here), refuses a dream by hand as any
/// held lock does, and says why: "taken 0 min ago" described a lock three hours in the future.
#[test]
fn a_held_lock_stamped_in_the_future_says_so() {
    let w = World::new();
    w.write("a.md", &topic("A", "a", "user", "A."));
    // Another live process (this one's own PID is never held against its own dreams).
    struct Alive(std::process::Child);
    impl Drop for Alive {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let other = Alive(std::process::Command::new("sleep").arg("600").spawn().unwrap());
    let pid = other.0.id();
    let lock = w.mem.join(mneme_dream::LOCK_FILE);
    std::fs::write(&lock, pid.to_string()).unwrap();
    filetime::set_file_mtime(&lock, filetime::FileTime::from_unix_time(NOW as i64 + 3 * 3600, 0)).unwrap();
    let err = w.offline(true).unwrap_err();
    assert_eq!(err.code(), "locked");
    assert!(
        err.to_string().contains(&format!("(PID {pid}, stamped 3.0 h in the future, by a clock that was ahead or on another machine; a lock counts as held until an hour after its stamp)")),
        "{err}"
    );
    filetime::set_file_mtime(&lock, filetime::FileTime::from_unix_time(NOW as i64 + 20 * 60, 0)).unwrap();
    assert!(w.offline(true).unwrap_err().to_string().contains("stamped 20 min in the future"));
    // A few seconds ahead is another clock's jitter: taken just now.
    filetime::set_file_mtime(&lock, filetime::FileTime::from_unix_time(NOW as i64 + 5, 0)).unwrap();
    assert!(w.offline(true).unwrap_err().to_string().contains("taken 0 min ago"));
}
