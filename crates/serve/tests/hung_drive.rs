//! A project on a drive that stops answering (a network share whose server went away, a FUSE
//! daemon that hangs): every system call under it blocks until the drive answers again. Made
//! real here as root: an exFAT image mounted through FUSE (`mneme_testsupport::exfat`) whose
//! daemon is stopped with SIGSTOP, and continued (always, even when the test panics) before the
//! drive is unmounted (`mneme_testsupport::hung_drive`).

mod common;

use common::Server;
use mneme_serve::ServeOptions;
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::wait;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// A bound no answer comes near while the fix holds: reaching it is the failure (a hang).
const NEVER: Duration = Duration::from_secs(60);

/// Threads of this process blocked looking at a drive (`mneme_live::drive`).
fn blocked_looks() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "mneme-drive-look"))
        .count()
}

/// The body of `method` when it answers 200; `None` while it answers 503 (the drive not
/// answering yet), anything else failing the test.
async fn answered(s: &Server, method: &str, body: Value) -> Option<Value> {
    let (status, body) = s.call(method, body).await;
    if status != 200 {
        assert_eq!(status, 503, "{body}");
    }
    (status == 200).then_some(body)
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
    let hung = drive.hang(NEVER);

    // Answers from the kernel's caches may come for a moment; then the drive is not answering.
    let mut day = 2;
    let refused: Value = wait::value_async("the stick's project refused on the stopped drive", || {
        day += 1;
        let (s, hung, request) = (&s, &hung, on(&stick, day - 1));
        async move {
            let (status, body) = s.call("context", request).await;
            assert!(!hung.rescued(), "the server hung with the drive");
            (status != 200).then(|| {
                assert_eq!(status, 503, "{body}");
                body
            })
        }
    })
    .await;
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
    wait::until_async("the change elsewhere in the view", || {
        let (s, hung, request) = (&s, &hung, on(&repo, 20));
        async move {
            assert!(!hung.rescued(), "the watcher stopped with the drive");
            s.ok("context", request).await.to_string().contains("Use spaces.")
        }
    })
    .await;
    assert!(!hung.rescued(), "the server hung with the drive");

    // Asking again and again blocks no more threads on the drive.
    let before = blocked_looks();
    for d in 0..20 {
        let (status, _) = s.call("context", on(&stick, 21 + d % 5)).await;
        assert_eq!(status, 503);
    }
    assert!(blocked_looks() <= before, "{} threads blocked on the drive, {before} before", blocked_looks());
    assert!(!hung.rescued(), "the server hung with the drive");

    // The drive answers again: so does its project.
    drop(hung);
    let back = wait::value_async("the stick's project answered once the drive answers", || answered(&s, "context", on(&stick, 2))).await;
    assert!(back.to_string().contains("Stick rules."), "{back}");
    s.stop().await;
    drop(drive);
}

/// A project whose folder answers while its memory folder, named by `autoMemoryDirectory`, is on
/// a drive that hangs: the request is answered 503 `unavailable` naming the memory folder (its
/// drive is asked before the operation and again when the server's patience runs out, which
/// here comes first), later requests for that project are answered at once without blocking
/// another thread, other projects answer meanwhile, and the project answers again once the
/// drive does. Before, the request never answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_drive_that_hangs_during_a_request_is_answered_after_the_patience() {
    let (home, repo) = common::fixture();
    let Some(drive) = Exfat::mount(&home.root.join("drives/memories")) else { return };
    let memdir = drive.path().join("memory");
    home.write(memdir.join("MEMORY.md"), "- [Tabs](tabs.md) — indentation\n");
    home.write(memdir.join("tabs.md"), "---\nname: tabs\ndescription: indentation\ntype: feedback\n---\nUse tabs.\n");
    home.write(repo.join(".claude/settings.local.json"), &format!("{{\"autoMemoryDirectory\": {:?}}}", memdir.display().to_string()));
    let other = home.git_repo("other");
    std::fs::create_dir_all(home.memdir_for(&other)).unwrap();
    let patience = Duration::from_secs(2);
    let opts = ServeOptions { start_dir: Some(repo.clone()), operation_patience: Some(patience), ..ServeOptions::default() };
    let s = Server::start_options(home, repo.clone(), opts).await;
    let at = |p: &Path| json!({ "cwd": p });
    let listed = s.ok("memories", at(&repo)).await;
    assert!(listed.to_string().contains("tabs.md"), "{listed}");
    let hung = drive.hang(NEVER);

    // The project's own folder answers; its memory folder's drive does not (a moment of
    // answers from the kernel's caches aside).
    let (took, refused) = wait::value_async("the project refused once its memory folder's drive stopped", || {
        let (s, hung, request) = (&s, &hung, at(&repo));
        async move {
            let started = Instant::now();
            let (status, body) = s.call("memories", request).await;
            assert!(!hung.rescued(), "the request hung with the drive");
            (status != 200).then(|| {
                assert_eq!(status, 503, "{body}");
                (started.elapsed(), body)
            })
        }
    })
    .await;
    assert_eq!(refused["code"], "unavailable");
    let message = refused["message"].as_str().unwrap();
    // The check of the memory folder's drive takes its 3 s, longer than this server's patience.
    assert!(message.starts_with(&format!("The drive holding {} stopped answering during this request", memdir.display())), "{message}");
    assert!(message.contains("after 2 seconds"), "{message}");
    assert!(took >= patience, "answered after {took:?}, before the patience ran out");

    // While it hangs, the project is answered at once, and no more threads block.
    let threads = std::fs::read_dir("/proc/self/task").unwrap().count();
    for _ in 0..5 {
        let (status, body) = s.call("memories", at(&repo)).await;
        assert_eq!(status, 503, "{body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("The drive holding {} is not answering", memdir.display())), "{message}");
    }
    assert!(std::fs::read_dir("/proc/self/task").unwrap().count() <= threads + 2, "threads piled up behind the hung drive");
    // Other projects answer meanwhile.
    assert_eq!(s.call("memories", at(&other)).await.0, 200);
    assert_eq!(s.call("home", json!({})).await.0, 200);
    assert!(!hung.rescued(), "the server hung with the drive");

    // The drive answers again: the blocked request ends, and the project answers.
    drop(hung);
    let back = wait::value_async("the project answered once the drive answers", || answered(&s, "memories", at(&repo))).await;
    assert!(back.to_string().contains("tabs.md"), "{back}");
    s.stop().await;
    drop(drive);
}
