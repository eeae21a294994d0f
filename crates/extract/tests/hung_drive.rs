//! Opening a session whose project is on a drive that stops answering (a network share whose
//! server went away, a FUSE daemon that hangs), made real as root: an exFAT image mounted through
//! FUSE (`mneme_testsupport::exfat`) whose daemon is stopped, and always continued before the
//! drive is unmounted (`mneme_testsupport::hung_drive`). As any other user the test says so and
//! passes without checking (CI runs it as root).

#![cfg(target_os = "linux")]

use mneme_core::FixedClock;
use mneme_extract::{ExtractError, Extractor};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::hung_drive::{self, NEVER};
use mneme_testsupport::{wait, TestHome};
use serde_json::json;
use std::sync::Arc;

/// The project root `x` opens `transcript` in, asked on a thread of its own so an open that
/// hangs with the drive fails the test instead of hanging it (a drive's look gives up after
/// 3 s while the fix holds).
fn open_root(x: &Arc<Extractor>, transcript: &std::path::Path) -> Result<std::path::PathBuf, ExtractError> {
    let (x, t) = (x.clone(), transcript.to_path_buf());
    hung_drive::within("the open", move || x.open_session(&t).map(|s| s.project().root.clone()))
}

/// The first open of a session (what the scheduler's extraction loop does when a transcript
/// changes) whose project folder is on a drive that does not answer fails at once, saying so,
/// instead of reading the project's settings and blocking the loop every session shares; once
/// the drive answers, it opens.
#[test]
fn a_session_whose_project_is_on_a_hung_drive_is_not_opened_and_says_why() {
    let home = TestHome::new();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let project = drive.path().join("proj");
    home.write(project.join(".claude/settings.json"), "{}\n");
    let transcript = mneme_store::paths::transcript_dir(&home.env, &project).join("0a23833b-7439-4af7-b274-46564fd6c262.jsonl");
    let line = json!({"type": "user", "cwd": project, "sessionId": "0a23833b-7439-4af7-b274-46564fd6c262", "uuid": "00000000-0000-4000-8000-000000000001", "parentUuid": null, "message": {"role": "user", "content": "Remember that I prefer tabs."}});
    home.write(&transcript, &format!("{line}\n"));
    let x = Arc::new(Extractor::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_772_445_600))));
    let open = |x: &Arc<Extractor>| open_root(x, &transcript);
    assert_eq!(open(&x).unwrap(), project);
    let hung = drive.hang(NEVER);

    // The kernel may answer from its caches for a moment; then the drive is not answering.
    let refused = wait::value("the open refused on the stopped drive", || open(&x).err());
    assert!(matches!(refused, ExtractError::DriveNotAnswering { ref path } if *path == project), "{refused:?}");
    let message = refused.to_string();
    assert!(message.contains(&format!("the drive holding {} is not answering", project.display())), "{message}");
    assert!(!hung.rescued(), "the open hung with the drive");

    drop(hung);
    let back = wait::value("the session opened once the drive answers", || match open(&x) {
        Ok(root) => Some(root),
        Err(ExtractError::DriveNotAnswering { .. }) => None,
        Err(e) => panic!("{e}"),
    });
    assert_eq!(back, project);
    drop(drive);
}

/// A session that ran in a link to its project (its `cwd` names the link, Claude Code's folder
/// the real path) is matched to its project by the link's real path: on a hung drive that look
/// is not taken, and the open says which drive does not answer instead of blocking.
#[test]
fn a_session_through_a_link_into_a_hung_drive_is_not_opened_and_says_why() {
    let home = TestHome::new();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let project = drive.path().join("proj");
    home.write(project.join(".claude/settings.json"), "{}\n");
    let link = home.root.join("link-to-proj");
    std::os::unix::fs::symlink(&project, &link).unwrap();
    let sid = "0a23833b-7439-4af7-b274-46564fd6c263";
    let transcript = mneme_store::paths::transcript_dir(&home.env, &project).join(format!("{sid}.jsonl"));
    let line = json!({"type": "user", "cwd": link, "sessionId": sid, "uuid": "00000000-0000-4000-8000-000000000001", "parentUuid": null, "message": {"role": "user", "content": "Remember that I prefer tabs."}});
    home.write(&transcript, &format!("{line}\n"));
    let x = Arc::new(Extractor::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_772_445_600))));
    let open = |x: &Arc<Extractor>| open_root(x, &transcript);
    assert_eq!(open(&x).unwrap(), project, "the link's session is the project's");
    let hung = drive.hang(NEVER);
    // Asked until the drive is seen not answering (a look takes its patience), by which time
    // the kernel's cached names on it have expired: finding the link's real path would block.
    wait::until("the stopped drive seen not answering", || !mneme_store::drive::answers(&project));
    let refused = wait::value("the open refused on the stopped drive", || open(&x).err());
    assert!(matches!(refused, ExtractError::DriveNotAnswering { ref path } if *path == link), "{refused:?}");
    assert!(!hung.rescued(), "the open hung with the drive");
    drop(hung);
    drop(drive);
}
