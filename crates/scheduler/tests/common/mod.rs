//! What the scheduler's test files share: a project whose dream gates are all open, and the
//! wait for a loop's finished run. Each test file compiles this module on its own, so a file
//! that uses only part of it would warn about the rest.
#![allow(dead_code)]

use mneme_scheduler::{Event, JobKind, RunRecord};
use mneme_testsupport::TestHome;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::broadcast;

/// A git repository `name` with a memory folder (an index and the topic it lists) and five
/// sessions since it last dreamed (never), so every gate but the setting is open: the caller
/// turns auto dream on in the settings it means to test. Answers the project and its memory
/// folder; the sessions' names end in `…4a50` to `…4a54`.
pub fn ready_to_dream(home: &TestHome, name: &str) -> (PathBuf, PathBuf) {
    let project = home.git_repo(name);
    let memory = home.memdir_for(&project);
    std::fs::create_dir_all(&memory).unwrap();
    std::fs::write(memory.join("MEMORY.md"), "- [Build](build.md) — how to build\n").unwrap();
    std::fs::write(memory.join("build.md"), "---\nname: build\ndescription: how to build\ntype: project\n---\nRun make.\n").unwrap();
    let transcripts = mneme_store::paths::transcript_dir(&home.env, &project);
    std::fs::create_dir_all(&transcripts).unwrap();
    for i in 0..5 {
        std::fs::write(transcripts.join(format!("5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5{i}.jsonl")), "{}\n").unwrap();
    }
    (project, memory)
}

/// Adds an index line of `memory` that points at no file: a dream then has work to do, and so
/// keeps the lock it took (one with nothing to do gives it back), which a test can look at.
pub fn give_the_dream_work(memory: &Path) {
    use std::io::Write;
    let mut index = std::fs::OpenOptions::new().append(true).open(memory.join("MEMORY.md")).unwrap();
    writeln!(index, "- [Gone](gone.md) — points at nothing").unwrap();
}

/// The first finished run of `job`, waiting up to 30 s (a guard against hanging, not a timing
/// assertion).
pub async fn finished(rx: &mut broadcast::Receiver<Event>, job: JobKind) -> RunRecord {
    let wait = async {
        loop {
            match rx.recv().await {
                Ok(Event::Finished { record }) if record.job == job => return record,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event channel closed: {e}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait).await.expect("no run finished within 30 s")
}
