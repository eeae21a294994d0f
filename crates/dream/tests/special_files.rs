//! `mneme log show` on a day whose log is a FIFO or a folder: the message says once what is
//! there, not "is not a regular file (not a plain file (a folder, pipe, …))".

use mneme_core::clock::FixedClock;
use mneme_dream::Dreams;
use mneme_testsupport::TestHome;
use std::fs;
use std::sync::{mpsc, Arc};
use std::time::Duration;

#[test]
fn a_daily_log_that_is_not_a_file_says_what_it_is_once() {
    let home = TestHome::new();
    let mem = home.root.join("mem");
    let day = time::Date::from_calendar_date(2026, time::Month::May, 6).unwrap();
    let log = mem.join("logs/2026/05/2026-05-06.md");
    fs::create_dir_all(log.parent().unwrap()).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&log).status().unwrap().success());
    let dreams = Dreams::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_778_000_000)));
    let (tx, rx) = mpsc::channel();
    let (d, m) = (dreams.clone(), mem.clone());
    std::thread::spawn(move || {
        let _ = tx.send(d.read_log(&m, Some(day)).map_err(|e| e.to_string()));
    });
    let err = rx.recv_timeout(Duration::from_secs(25)).expect("reading a FIFO as the log never returned").unwrap_err();
    assert!(err.contains("2026-05-06.md is not a regular file: it is a named pipe (FIFO)"), "{err}");
    assert!(!err.contains("not a plain file") && !err.contains("(a folder"), "said twice: {err}");

    fs::remove_file(&log).unwrap();
    fs::create_dir(&log).unwrap();
    let err = dreams.read_log(&mem, Some(day)).unwrap_err().to_string();
    assert!(err.contains("is not a regular file: it is a folder.") && !err.contains("not a plain file"), "{err}");
}
