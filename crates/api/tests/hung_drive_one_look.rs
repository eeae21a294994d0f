//! `mneme_store::drive` remembers a drive that does not answer by its mount point, not by the
//! folder asked about: ten projects on one hung share cost one patience and one blocked
//! thread, and a folder on a healthy drive is still looked at. Made real as root: an exFAT
//! image mounted through FUSE (`mneme_testsupport::exfat`) whose daemon is stopped, and always
//! continued before the drive is unmounted. As any other user the test says so and passes
//! without checking (CI runs it as root). Alone in its test binary: it counts the process's
//! threads blocked in a look.

#![cfg(target_os = "linux")]

use mneme_store::drive;
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::{wait, TestHome};
use std::path::PathBuf;
use std::time::Duration;

/// A bound no look comes near while the fix holds: reaching it is the failure. The drive's
/// watchdog continues it after [`NEVER`], later than the test gives up waiting. Longer than
/// `hung_drive::GIVE_UP`: ten looks that each waited their 3 s must still answer, so that the
/// count of blocked threads, not a timeout, says what went wrong.
const NEVER: Duration = Duration::from_secs(120);
const GIVE_UP: Duration = Duration::from_secs(60);

/// The threads of this process running a look (`mneme-drive-look`, cut to the kernel's 15
/// bytes of a thread's name).
fn looks_under_way() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == "mneme-drive-loo"))
        .count()
}

/// `drive::answers` for each of `folders`, on a thread of its own waited for at most [`GIVE_UP`].
fn answers(folders: Vec<PathBuf>) -> Vec<bool> {
    wait::on_a_thread(GIVE_UP, move || folders.iter().map(|f| drive::answers(f)).collect::<Vec<_>>())
        .expect("the looks did not answer within 60 s: each waited on the hung drive")
}

#[test]
fn folders_on_one_hung_drive_cost_one_look_and_other_drives_answer() {
    let t = TestHome::new();
    let Some(share) = Exfat::mount(&t.root.join("drives/share")) else { return };
    let projects: Vec<PathBuf> = (0..10).map(|i| share.path().join(format!("project-{i}"))).collect();
    for p in &projects {
        std::fs::create_dir_all(p).unwrap();
    }
    // A folder on the home's drive by its name, on the share in fact.
    let linked = t.root.join("linked");
    std::os::unix::fs::symlink(share.path(), &linked).unwrap();
    let healthy = t.root.join("code/alpha");
    std::fs::create_dir_all(&healthy).unwrap();

    let hung = share.hang(NEVER);
    assert_eq!(answers(projects.clone()), vec![false; 10], "a folder on the stopped drive answered");
    assert_eq!(looks_under_way(), 1, "each folder on the hung drive blocked a thread of its own");
    // The folder reached through the link blocks its own look, which does not get the home's
    // drive, named in its path, refused.
    assert_eq!(answers(vec![linked.join("project-0"), healthy.clone(), t.root.clone()]), vec![false, true, true]);
    assert!(!hung.rescued(), "a look hung with the drive");

    drop(hung);
    // The blocked look returns as the drive answers; until it has, the drive is not asked (so
    // each poll answers at once).
    wait::until_within(GIVE_UP, "the drive looked at again and answering once its daemon continued", || drive::answers(&projects[3]));
    drop(share);
}
