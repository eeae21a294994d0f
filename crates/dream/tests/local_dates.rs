//! Relative dates made absolute against the day each file was written as the local clock
//! showed it then: the offset in force at the file's own time (across a daylight-saving change
//! it is not today's), and no rewrite at all for a file dated after now.

mod common;

use common::*;
use mneme_core::clock::SetClock;
use mneme_dream::{DreamRecord, Dreams, Engine};
use std::sync::Arc;

/// New York's rules as a POSIX zone string, which `date` reads without a tz database.
const NEW_YORK: &str = "EST5EDT,M3.2.0,M11.1.0";
/// 2026-11-10T12:00:00Z: winter time in New York (UTC−5).
const WINTER_NOW: u64 = 1_794_312_000;
/// 2026-10-31T04:30:00Z: 00:30 on Saturday 31 October in New York, still summer time (UTC−4).
const JUST_AFTER_MIDNIGHT_IN_SUMMER: i64 = 1_793_421_000;

fn dream_in(w: &World, tz: Option<&str>, offset: i32, now: u64) -> DreamRecord {
    let env = match tz {
        Some(tz) => w.home.env.clone().set_var("TZ", tz),
        None => w.home.env.clone(),
    };
    let dreams = Dreams::new(env, Arc::new(SetClock::at_unix_secs(now))).with_utc_offset(offset);
    block_on(dreams.run(&dreams.target_for_memory_dir(&w.mem), &w.opts(Engine::Offline, true))).unwrap()
}

fn written_at(w: &World, rel: &str, text: &str, secs: i64) {
    w.write(rel, text);
    filetime::set_file_mtime(w.mem.join(rel), filetime::FileTime::from_unix_time(secs, 0)).unwrap();
}

/// Written at 00:30 summer time on 31 October, read in November's winter time: "yesterday" is
/// 30 October. With November's offset for every file, the write moved to 23:30 on the 30th and
/// "yesterday" became the 29th.
#[test]
fn a_file_written_near_midnight_in_summer_time_keeps_its_own_day() {
    let w = World::new();
    written_at(&w, "deploy.md", &topic("Deploy", "deploy freeze", "project", "Froze deploys yesterday."), JUST_AFTER_MIDNIGHT_IN_SUMMER);
    w.write("MEMORY.md", "- [Deploy](deploy.md) — deploy freeze\n");
    let rec = dream_in(&w, Some(NEW_YORK), -5 * 3600, WINTER_NOW);
    assert!(w.read("deploy.md").contains("Froze deploys on 2026-10-30."), "{}\n{:#?}", w.read("deploy.md"), rec.changeset.changes);
}

/// A zone that does not agree with the offset the engine was given for now is not the caller's
/// zone (a fixed offset chosen on purpose): that one offset stands for every file, as before.
#[test]
fn a_zone_that_disagrees_with_the_given_offset_is_not_used() {
    let w = World::new();
    written_at(&w, "deploy.md", &topic("Deploy", "deploy freeze", "project", "Froze deploys yesterday."), JUST_AFTER_MIDNIGHT_IN_SUMMER);
    w.write("MEMORY.md", "- [Deploy](deploy.md) — deploy freeze\n");
    dream_in(&w, Some(NEW_YORK), -6 * 3600, WINTER_NOW);
    // 22:30 on the 30th at UTC−6.
    assert!(w.read("deploy.md").contains("Froze deploys on 2026-10-29."), "{}", w.read("deploy.md"));
}

/// A file dated after now (written while the clock ran ahead, or copied from another machine)
/// has no "yesterday" the dream can name: rewriting it made a date still to come. Left as it is,
/// with a note; a file dated in the past beside it is rewritten as usual.
#[test]
fn a_file_dated_in_the_future_keeps_its_relative_dates() {
    let w = World::new();
    let ahead = topic("Ahead", "written ahead", "project", "Shipped the release yesterday.");
    written_at(&w, "ahead.md", &ahead, NOW as i64 + 2 * 86_400);
    let created = "---\nname: Planned\ndescription: planned\ntype: project\ncreated: 2026-05-09\n---\n\nAgreed on it yesterday.\n";
    w.write("planned.md", created);
    w.write("past.md", &topic("Past", "written before", "project", "Froze deploys yesterday."));
    w.write("MEMORY.md", "- [Ahead](ahead.md) — written ahead\n- [Planned](planned.md) — planned\n- [Past](past.md) — written before\n");
    let rec = dream_in(&w, None, 0, NOW);
    assert_eq!(w.read("ahead.md"), ahead);
    assert_eq!(w.read("planned.md"), created);
    assert!(w.read("past.md").contains("Froze deploys on 2026-05-05."), "{}", w.read("past.md"));
    let note = rec.notes.iter().find(|n| n.starts_with("Relative dates were left as they are in ahead.md, planned.md: the file is dated after now")).unwrap_or_else(|| panic!("{:#?}", rec.notes));
    assert!(note.contains("Correct the clock or the file's date"), "{note}");
}
