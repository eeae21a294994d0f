//! A project on a drive that stops answering (a network share whose server went away, a FUSE
//! daemon that hangs): every system call under it blocks until the drive answers again. Made
//! real here as root: an exFAT image mounted through FUSE (`mneme_testsupport::exfat`) whose
//! daemon is stopped with SIGSTOP, and continued (always, even when the test panics) before the
//! drive is unmounted.

mod common;

use common::Server;
use mneme_testsupport::exfat::Exfat;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// The FUSE daemon serving the drive mounted at `at`, stopped while this lives and continued
/// when it goes (a stopped daemon would hang every later test touching the mount, and its
/// unmount). A watchdog continues it after [`NEVER`] too, so a server that hangs with it fails
/// the test instead of hanging it; `rescued` says whether it had to.
struct Stopped {
    pid: i32,
    rescued: Arc<AtomicBool>,
    _done: mpsc::Sender<()>,
}

/// A bound no answer comes near while the fix holds: reaching it is the failure (a hang).
const NEVER: Duration = Duration::from_secs(60);

impl Stopped {
    fn daemon(at: &Path) -> i32 {
        let at = at.to_string_lossy();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
            let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
            let args: Vec<String> = cmd.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            if args.first().is_some_and(|a| a.contains("mount.exfat")) && args.iter().any(|a| a == at.as_ref()) {
                return pid;
            }
        }
        panic!("no mount.exfat-fuse process serves {at}");
    }

    fn stop(drive: &Exfat) -> Stopped {
        let pid = Stopped::daemon(drive.path());
        let rescued = Arc::new(AtomicBool::new(false));
        let (done, wait) = mpsc::channel::<()>();
        let r = rescued.clone();
        std::thread::spawn(move || {
            if wait.recv_timeout(NEVER) == Err(mpsc::RecvTimeoutError::Timeout) {
                r.store(true, Ordering::SeqCst);
                signal(pid, "CONT");
            }
        });
        signal(pid, "STOP");
        Stopped { pid, rescued, _done: done }
    }
}

fn signal(pid: i32, sig: &str) {
    let ok = std::process::Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status().unwrap().success();
    assert!(ok, "kill -{sig} {pid}");
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.pid, "CONT");
    }
}

/// Threads of this process blocked looking at a drive (`mneme_live::drive`).
fn blocked_looks() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "mneme-drive-look"))
        .count()
}

/// While one project's drive hangs, the server keeps answering for every other project and
/// screen, answers for that project at once with what is wrong and what Mneme will do (503
/// `unavailable`), blocks no more threads however often the page asks, and shows the project
/// again once the drive answers. Before, the watcher looked at the hung folder on an async
/// worker while holding the lock every request's views need: the whole server stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_drive_leaves_other_projects_answering_and_its_own_says_so() {
    let (home, repo) = common::fixture();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let stick = drive.path().join("proj");
    home.write(stick.join("CLAUDE.md"), "Stick rules.\n");
    std::fs::create_dir_all(home.memdir_for(&stick)).unwrap();
    let s = Server::start_with(home, repo.clone(), None).await;
    let on = |p: &Path, day: u32| json!({ "cwd": p, "date": format!("2025-11-{day:02}") });
    s.ok("watch", on(&stick, 1)).await;
    s.ok("watch", on(&repo, 1)).await;
    let hung = Stopped::stop(&drive);

    // Answers from the kernel's caches may come for a moment; then the drive is not answering.
    let mut day = 2;
    let refused: Value = loop {
        let (status, body) = s.call("context", on(&stick, day)).await;
        day += 1;
        assert!(!hung.rescued.load(Ordering::SeqCst), "the server hung with the drive");
        if status != 200 {
            assert_eq!(status, 503, "{body}");
            break body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(refused["code"], "unavailable");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains(&format!("The drive holding {} is not answering", stick.display())), "{message}");
    assert!(message.contains("Mneme will try again"), "{message}");

    // Every other project and screen answers meanwhile, the live watcher included.
    assert_eq!(s.call("context", on(&repo, 20)).await.0, 200);
    assert_eq!(s.call("home", json!({})).await.0, 200);
    assert_eq!(s.call("watching", json!({})).await.0, 200);
    s.home.write(repo.join("CLAUDE.md"), "Use spaces.\n");
    // A change elsewhere still reaches the views (the watcher's batches go on).
    while !s.ok("context", on(&repo, 20)).await.to_string().contains("Use spaces.") {
        assert!(!hung.rescued.load(Ordering::SeqCst), "the watcher stopped with the drive");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!hung.rescued.load(Ordering::SeqCst), "the server hung with the drive");

    // Asking again and again blocks no more threads on the drive.
    let before = blocked_looks();
    for d in 0..20 {
        let (status, _) = s.call("context", on(&stick, 21 + d % 5)).await;
        assert_eq!(status, 503);
    }
    assert!(blocked_looks() <= before, "{} threads blocked on the drive, {before} before", blocked_looks());
    assert!(!hung.rescued.load(Ordering::SeqCst), "the server hung with the drive");

    // The drive answers again: so does its project.
    drop(hung);
    let back = loop {
        let (status, body) = s.call("context", on(&stick, 2)).await;
        if status == 200 {
            break body;
        }
        assert_eq!(status, 503, "{body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(back.to_string().contains("Stick rules."), "{back}");
    s.stop().await;
    drop(drive);
}
