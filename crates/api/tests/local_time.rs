//! Local time per instant: a facade left running across a daylight-saving change (the desktop
//! app, `mneme serve`) dates as the system does after it, as Claude Code's runtime does, not
//! with the offset it had at start.

use mneme_api::{ContextRequest, LocalZone, Mneme};
use mneme_core::clock::SetClock;
use mneme_testsupport::TestHome;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// 2026-03-28T22:30:00Z: 23:30 in Berlin (+01:00), the evening before summer time starts.
const BEFORE: u64 = 1_774_737_000;
/// 2026-03-29T22:30:00Z: 00:30 on the 30th in Berlin (+02:00); +01:00 would make it 23:30 on the 29th.
const AFTER: u64 = 1_774_823_400;

/// What the system's own `date` says of `secs` in Europe/Berlin (`TZ` set for that child only).
fn system_says(secs: u64, format: &str) -> String {
    let out = Command::new("date")
        .env("TZ", "Europe/Berlin")
        .args(["-d", &format!("@{secs}"), format])
        .output()
        .expect("run date");
    assert!(out.status.success(), "date failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Today, the offset, and a daily log written at each instant, with the clock moved across the
/// change while one facade lives: each follows the zone's offset at that instant.
fn dates_across_the_change(zone: LocalZone) {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let mem = t.memdir_for(&repo);
    let clock = Arc::new(SetClock::at_unix_secs(BEFORE));
    let m = Mneme::new(t.env.clone(), clock.clone()).with_local_zone(zone);
    let at = ContextRequest { cwd: repo.clone(), ..Default::default() };
    for (secs, offset, day, time) in [(BEFORE, 3600, "2026-03-28", "23:30"), (AFTER, 7200, "2026-03-30", "00:30")] {
        clock.set(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!((system_says(secs, "+%F"), system_says(secs, "+%H:%M")), (day.to_string(), time.to_string()), "the system's own answer");
        assert_eq!(m.utc_offset(), offset, "at {secs}");
        assert_eq!(m.today(), day, "at {secs}");
        let log = m.append_daily_log(&at, "noted").unwrap();
        let rel = format!("logs/2026/03/{day}.md");
        assert_eq!((log.date.as_str(), log.rel_path.as_str()), (day, rel.as_str()));
        assert_eq!(std::fs::read_to_string(mem.join(&rel)).unwrap(), format!("- {time} noted\n"));
    }
}

/// The zone injected by name (the tz database's Europe/Berlin).
#[test]
fn a_named_zone_dates_each_instant_with_its_own_offset() {
    let zone = LocalZone::named("Europe/Berlin").expect("Europe/Berlin from the tz database (Debian: apt-get install tzdata)");
    dates_across_the_change(zone);
}

#[test]
fn an_unknown_zone_name_is_refused_with_what_to_do() {
    let e = LocalZone::named("Mars/Olympus_Mons").unwrap_err().to_string();
    assert!(e.contains("'Mars/Olympus_Mons' is not a time zone") && e.contains("Europe/Berlin"), "{e}");
}

/// The system's zone, as front ends use it, honours `TZ` as every program does. `TZ` is set
/// only for a child run of this test (this process's environment is never changed while its
/// threads run).
#[test]
fn the_system_zone_follows_tz_across_the_change() {
    const CHILD: &str = "MNEME_TEST_LOCAL_TIME_CHILD";
    if std::env::var_os(CHILD).is_some() {
        dates_across_the_change(LocalZone::system());
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "the_system_zone_follows_tz_across_the_change", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("TZ", "Europe/Berlin")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the child run failed:\n{said}");
    assert!(said.contains("1 passed"), "the child ran no test:\n{said}");
}
