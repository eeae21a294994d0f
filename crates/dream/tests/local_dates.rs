//! Local dates in a dream, each with the offset in force at its own instant, as Claude Code's
//! runtime dates each instant: relative dates made absolute against the day each file was
//! written as the local clock showed it then (across a daylight-saving change it is not
//! today's), daily-log bullets read from the time of day the last dream ran at, a daily log
//! written after a change by an engine that started before it, and no rewrite at all for a
//! file dated after now. The zone is a POSIX rule string (no tz database needed) or, where
//! the tz database is installed (Debian: tzdata), Europe/Berlin itself.

mod common;

use common::*;
use mneme_core::clock::SetClock;
use mneme_dream::{DreamRecord, Dreams, Engine};
use mneme_store::local_time::LocalZone;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// New York's rules as a POSIX zone string, which needs no tz database.
const NEW_YORK: &str = "EST5EDT,M3.2.0,M11.1.0";
/// 2026-11-10T12:00:00Z: winter time in New York (UTC−5).
const WINTER_NOW: u64 = 1_794_312_000;
/// 2026-10-31T04:30:00Z: 00:30 on Saturday 31 October in New York, still summer time (UTC−4).
const JUST_AFTER_MIDNIGHT_IN_SUMMER: i64 = 1_793_421_000;

fn dream_in(w: &World, zone: LocalZone, now: u64) -> DreamRecord {
    let dreams = Dreams::new(w.home.env.clone(), Arc::new(SetClock::at_unix_secs(now))).with_local_zone(zone);
    block_on(dreams.run(&dreams.target_for_memory_dir(&w.mem), &w.opts(Engine::Offline, true))).unwrap()
}

/// Europe/Berlin from the tz database.
fn berlin() -> LocalZone {
    LocalZone::named("Europe/Berlin").expect("Europe/Berlin from the tz database (Debian: apt-get install tzdata)")
}

/// What the system's own `date` says of `secs` in Europe/Berlin, so each constant below is
/// checked against the tz database rather than trusted.
fn berlin_says(secs: u64) -> String {
    let out = std::process::Command::new("date").env("TZ", "Europe/Berlin").args(["-d", &format!("@{secs}"), "+%F %H:%M %z"]).output().expect("run date");
    assert!(out.status.success(), "date failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
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
    let rec = dream_in(&w, LocalZone::from_tz(Some(NEW_YORK)), WINTER_NOW);
    assert!(w.read("deploy.md").contains("Froze deploys on 2026-10-30."), "{}\n{:#?}", w.read("deploy.md"), rec.changeset.changes);
}

/// A fixed offset chosen on purpose stands for every file, whatever `TZ` the environment names.
#[test]
fn a_fixed_offset_stands_for_every_file() {
    let mut w = World::new();
    w.home.env = w.home.env.clone().set_var("TZ", NEW_YORK);
    written_at(&w, "deploy.md", &topic("Deploy", "deploy freeze", "project", "Froze deploys yesterday."), JUST_AFTER_MIDNIGHT_IN_SUMMER);
    w.write("MEMORY.md", "- [Deploy](deploy.md) — deploy freeze\n");
    dream_in(&w, LocalZone::Fixed(-6 * 3600), WINTER_NOW);
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
    let rec = dream_in(&w, LocalZone::Fixed(0), NOW);
    assert_eq!(w.read("ahead.md"), ahead);
    assert_eq!(w.read("planned.md"), created);
    assert!(w.read("past.md").contains("Froze deploys on 2026-05-05."), "{}", w.read("past.md"));
    let note = rec.notes.iter().find(|n| n.starts_with("Relative dates were left as they are in ahead.md, planned.md: the file is dated after now")).unwrap_or_else(|| panic!("{:#?}", rec.notes));
    assert!(note.contains("Correct the clock or the file's date"), "{note}");
}

/// 2026-10-24T22:30:00Z: 00:30 on Sunday 25 October in Berlin, summer time (UTC+2), hours
/// before the clocks go back.
const BERLIN_SUNDAY_00_30_SUMMER: u64 = 1_792_881_000;
/// 2026-11-10T12:00:00Z: winter time in Berlin (UTC+1).
const BERLIN_WINTER_NOW: u64 = 1_794_312_000;

/// The same as in New York, with the tz database's own Europe/Berlin: written at 00:30 summer
/// time on 25 October, "yesterday" is the 24th; with November's offset the write was 23:30 on
/// the 24th and "yesterday" the 23rd.
#[test]
fn a_file_written_before_the_clocks_went_back_keeps_its_own_day_in_berlin() {
    assert_eq!(berlin_says(BERLIN_SUNDAY_00_30_SUMMER), "2026-10-25 00:30 +0200");
    assert_eq!(berlin_says(BERLIN_WINTER_NOW), "2026-11-10 13:00 +0100");
    let w = World::new();
    written_at(&w, "deploy.md", &topic("Deploy", "deploy freeze", "project", "Froze deploys yesterday."), BERLIN_SUNDAY_00_30_SUMMER as i64);
    w.write("MEMORY.md", "- [Deploy](deploy.md) — deploy freeze\n");
    dream_in(&w, berlin(), BERLIN_WINTER_NOW);
    assert!(w.read("deploy.md").contains("Froze deploys on 2026-10-24."), "{}", w.read("deploy.md"));
}

/// A daily log's bullets carry the time the clock showed as they were written, and a dream
/// reads those written since the last one, from the time of day the clock showed when it ran.
/// The last dream ran at 23:00 summer time on 24 October; this one runs in winter time, after
/// the clocks went back. With the winter offset the last dream's time read 22:00, and the
/// bullet written at 22:30, before it, was distilled a second time.
#[test]
fn log_bullets_since_the_last_dream_are_cut_at_its_time_on_the_clock_then() {
    const LAST_DREAM: u64 = 1_792_875_600; // 2026-10-24T21:00:00Z
    const LOG_WRITTEN: u64 = 1_792_878_300; // 2026-10-24T21:45:00Z
    const NOW_WINTER: u64 = 1_793_016_000; // 2026-10-26T12:00:00Z
    assert_eq!(berlin_says(LAST_DREAM), "2026-10-24 23:00 +0200");
    assert_eq!(berlin_says(LOG_WRITTEN), "2026-10-24 23:45 +0200");
    assert_eq!(berlin_says(NOW_WINTER), "2026-10-26 13:00 +0100");
    let w = World::new();
    w.write("MEMORY.md", "");
    written_at(&w, "logs/2026/10/2026-10-24.md", "- 22:30 Always run the linter before pushing\n- 23:30 Never deploy on Fridays\n", LOG_WRITTEN as i64);
    // The last dream's lock, as it left it: its mtime is when it ran, its holder long gone.
    let lock = w.write(mneme_dream::LOCK_FILE, "999999999");
    filetime::set_file_mtime(&lock, filetime::FileTime::from_unix_time(LAST_DREAM as i64, 0)).unwrap();
    let rec = dream_in(&w, berlin(), NOW_WINTER);
    let written: Vec<String> = rec.changeset.changes.iter().filter_map(|c| c.after.clone()).collect();
    assert!(written.iter().any(|t| t.contains("Never deploy on Fridays")), "the bullet after the last dream: {:#?}", rec.changeset.changes);
    assert!(!written.iter().any(|t| t.contains("linter")), "the bullet before it was distilled then: {:#?}", rec.changeset.changes);
    assert_eq!(rec.stats.as_ref().map(|s| s.distilled), Some(1));
}

/// One engine left running across the spring change (the scheduler's, a facade's) writes each
/// daily-log bullet on the day and at the time the clock shows as it is written, and reads
/// today's log as the clock's today: an offset taken when it started put the bullet written at
/// 00:30 summer time in the day before's log, at 23:30.
#[test]
fn daily_logs_follow_the_clock_across_a_change_while_the_engine_runs() {
    const BEFORE: u64 = 1_774_737_000; // 2026-03-28T22:30:00Z
    const AFTER: u64 = 1_774_823_400; // 2026-03-29T22:30:00Z
    assert_eq!(berlin_says(BEFORE), "2026-03-28 23:30 +0100");
    assert_eq!(berlin_says(AFTER), "2026-03-30 00:30 +0200");
    let w = World::new();
    let clock = Arc::new(SetClock::at_unix_secs(BEFORE));
    let dreams = Dreams::new(w.home.env.clone(), clock.clone()).with_local_zone(berlin());
    for (secs, day, time) in [(BEFORE, "2026-03-28", "23:30"), (AFTER, "2026-03-30", "00:30")] {
        clock.set(UNIX_EPOCH + Duration::from_secs(secs));
        let log = dreams.log(&w.mem, "noted").unwrap();
        assert_eq!((log.date.as_str(), log.line.as_str()), (day, format!("- {time} noted").as_str()));
        let (path, text) = dreams.read_log(&w.mem, None).unwrap();
        assert_eq!(path, w.mem.join(format!("logs/2026/03/{day}.md")));
        assert_eq!(text.as_deref(), Some(format!("- {time} noted\n").as_str()));
    }
}

/// A model dream is told today's date as the user's clock shows it as the dream starts (Claude
/// Code's dream has it from its session's context): at 22:30 UTC on 29 March it is already the
/// 30th in Berlin, in summer time. Before, a model dream was given no date at all.
#[tokio::test]
async fn a_model_dream_is_told_the_local_date_as_it_starts() {
    const AFTER: u64 = 1_774_823_400; // 2026-03-29T22:30:00Z
    assert_eq!(berlin_says(AFTER), "2026-03-30 00:30 +0200");
    let mut w = World::new();
    w.write("MEMORY.md", "");
    w.dreams = Dreams::new(w.home.env.clone(), Arc::new(SetClock::at_unix_secs(AFTER))).with_local_zone(berlin());
    let stub = mneme_stub_model::StubModel::start().await;
    stub.push(mneme_stub_model::Turn::text("Nothing to do."));
    let provider = mneme_model::AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap();
    let opts = mneme_dream::RunOptions {
        trigger: mneme_dream::Trigger::Manual,
        engine: Engine::Model(&provider),
        apply_now: true,
        enabled: mneme_dream::Enablement::On,
        flags: mneme_dream::CachedFlags::default(),
        cancel: mneme_model::Cancel::new(),
    };
    w.dreams.run(&w.target(), &opts).await.unwrap();
    let body = stub.model_requests()[0].body.to_string();
    assert!(body.contains("Today's date on the user's clock: 2026-03-30."), "{body}");
}
