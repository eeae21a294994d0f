//! `mneme log show` on a day whose log is a FIFO or a folder: the message says once what is
//! there, not "is not a regular file (not a plain file (a folder, pipe, …))".

use mneme_core::clock::FixedClock;
use mneme_dream::Dreams;
use mneme_testsupport::TestHome;
use std::fs;
use std::sync::{mpsc, Arc};
use std::time::Duration;
use mneme_testsupport::special_files::{mkfifo, within};

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

/// A dream record or the review-mode file replaced by a FIFO: `mneme dream show`, the pending
/// count and the mode come back at once, each saying what is there; choosing the mode again
/// mends the mode file, as the message says.
#[test]
fn a_dream_record_or_mode_file_that_is_a_fifo_is_refused_at_once() {
    let home = TestHome::new();
    let mem = home.root.join("mem");
    fs::create_dir_all(&mem).unwrap();
    let dreams = Dreams::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_778_000_000)));
    let dir = dreams.history(&mem).dir().to_path_buf();
    fs::create_dir_all(&dir).unwrap();
    // A link with a plain name to a FIFO: the listing sees a non-empty entry and reads it.
    let fifo = home.root.join("pipe");
    mkfifo(&fifo);
    std::os::unix::fs::symlink(&fifo, dir.join("1778000000000.json")).unwrap();

    let (d, m) = (dreams.clone(), mem.clone());
    let err = within("reading a FIFO as a dream record", move || d.show(&m, "1778000000000").map(|_| ()).map_err(|e| (e.code(), e.to_string())))
        .unwrap_err();
    assert_eq!(err.0, "damaged", "{}", err.1);
    assert!(err.1.contains("1778000000000.json is damaged (it is a named pipe (FIFO), not a plain file); move it aside"), "{}", err.1);
    let (d, m) = (dreams.clone(), mem.clone());
    assert_eq!(within("counting pending dreams past a FIFO", move || d.pending_count(&m).unwrap()), 0);
    let (d, m) = (dreams.clone(), mem.clone());
    let (records, damaged) = within("listing dreams past a FIFO", move || {
        let (r, d) = d.list(&m).unwrap();
        (r.len(), d.iter().map(|e| e.to_string()).collect::<Vec<_>>())
    });
    assert_eq!(records, 0);
    assert!(damaged.len() == 1 && damaged[0].contains("named pipe (FIFO)"), "{damaged:?}");

    mkfifo(&dir.join("settings.json"));
    let (d, m) = (dreams.clone(), mem.clone());
    let err = within("reading a FIFO as the mode file", move || d.mode(&m).map_err(|e| (e.code(), e.to_string()))).unwrap_err();
    assert_eq!(err.0, "damaged", "{}", err.1);
    assert!(err.1.contains("settings.json is damaged (it is a named pipe (FIFO), not a plain file); choose the mode again"), "{}", err.1);
    let (d, m) = (dreams.clone(), mem.clone());
    within("choosing the mode over a FIFO", move || d.set_mode(&m, mneme_dream::DreamMode::Review)).unwrap();
    assert_eq!(dreams.mode(&mem).unwrap(), mneme_dream::DreamMode::Review);

    // A folder under the mode file's name says so too.
    fs::remove_file(dir.join("settings.json")).unwrap();
    fs::create_dir(dir.join("settings.json")).unwrap();
    let err = dreams.mode(&mem).unwrap_err().to_string();
    assert!(err.contains("settings.json is damaged (it is a folder, not a plain file)"), "{err}");
}
