//! The project list while a project's drive stops answering (a network share whose server went
//! away, a FUSE daemon that hangs), made real as root: an exFAT image mounted through FUSE
//! (`mneme_testsupport::exfat`) whose daemon is stopped, and always continued before the drive
//! is unmounted (`mneme_testsupport::hung_drive`). As any other user the test says so and passes
//! without checking (CI runs it as root).

#![cfg(target_os = "linux")]

use mneme_api::{ApiError, ErrorCode, FixedClock, Mneme, ProjectInfo};
use mneme_core::sanitize::sanitize_path;
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::hung_drive::{self, config_on_a_drive, record_session as session, recorded_project, NEVER};
use mneme_testsupport::{wait, write_file, TestHome};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The project list, asked on a thread of its own so that a list that hangs with the drive
/// fails the test instead of hanging it.
fn projects(mneme: &Mneme) -> Vec<ProjectInfo> {
    listed(mneme).expect("the project list")
}

/// The project list or its error, asked as [`projects`] asks.
fn listed(mneme: &Mneme) -> Result<Vec<ProjectInfo>, ApiError> {
    let mneme = mneme.clone();
    hung_drive::within("the project list", move || mneme.projects())
}

fn by_folder<'a>(list: &'a [ProjectInfo], folder: &Path) -> &'a ProjectInfo {
    let name = sanitize_path(&folder.to_string_lossy());
    list.iter().find(|p| p.folder_name == name).unwrap_or_else(|| panic!("{name} is not listed: {list:#?}"))
}

/// While a project's drive does not answer, the list comes (each drive is given 3 s) with that
/// project present and said to be on a drive not answering, never orphaned (a user could
/// delete an orphan's memory), and the other projects as they are; once the drive answers,
/// the mark is gone. Before, the list waited for the drive, possibly for ever.
#[test]
fn a_project_on_a_hung_drive_is_listed_as_not_answering_and_the_others_as_they_are() {
    let home = TestHome::new();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let on_stick = drive.path().join("proj");
    std::fs::create_dir_all(&on_stick).unwrap();
    session(&home, &on_stick, "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b");
    // Memory only, named by no record: found by searching the disk, which enters the drive.
    let unrecorded = drive.path().join("notes");
    std::fs::create_dir_all(&unrecorded).unwrap();
    write_file(&home.memdir_for(&unrecorded).join("MEMORY.md"), "- [Build](build.md) — how to build\n");
    let healthy = recorded_project(&home, "alpha", "6c2d0f2f-3044-4e8b-8b62-1d2e3f4a5b6c");
    let gone = home.root.join("gone");
    session(&home, &gone, "7d3e1a3a-4155-4f9c-9c73-2e3f4a5b6c7d");
    let mneme = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));

    let before = projects(&mneme);
    assert!(before.iter().all(|p| !p.drive_not_answering), "{before:#?}");
    assert!(by_folder(&before, &on_stick).project_exists && by_folder(&before, &unrecorded).project_exists);

    let hung = hung_drive::stop(&drive, &on_stick, NEVER);
    let list = projects(&mneme);
    assert!(!hung.rescued(), "the project list hung with the drive");
    assert_eq!(list.len(), 4, "{list:#?}");
    let p = by_folder(&list, &on_stick);
    assert!(p.drive_not_answering && !p.orphaned && !p.project_exists, "{p:#?}");
    assert_eq!(p.project_path.as_deref(), Some(on_stick.as_path()), "its recorded folder is still named");
    let u = by_folder(&list, &unrecorded);
    assert!(u.drive_not_answering && !u.orphaned && !u.project_exists, "{u:#?}");
    assert!(u.has_memory_index, "its memory, on a drive that answers, is counted");
    let h = by_folder(&list, &healthy);
    assert!(h.project_exists && !h.orphaned && !h.drive_not_answering, "{h:#?}");
    let g = by_folder(&list, &gone);
    assert!(g.orphaned && !g.project_exists && !g.drive_not_answering, "{g:#?}");
    // Asked again while it lasts: the drive's stuck look is not waited for a second time.
    let again = projects(&mneme);
    assert!(by_folder(&again, &on_stick).drive_not_answering);

    // The drive answers again: the look stuck on it returns, and a later list is as before.
    drop(hung);
    // A failure shows the last list, with the projects still marked.
    let back = wait::result("a list with no project marked once the drive answered", || {
        let list = projects(&mneme);
        if list.iter().all(|p| !p.drive_not_answering) {
            Ok(list)
        } else {
            Err(list)
        }
    });
    let p = by_folder(&back, &on_stick);
    assert!(p.project_exists && !p.orphaned, "{p:#?}");
    let u = by_folder(&back, &unrecorded);
    assert_eq!((u.project_path.as_deref(), u.project_exists), (Some(unrecorded.as_path()), true), "{u:#?}");
    drop(drive);
}


/// Claude Code's own folder (`CLAUDE_CONFIG_DIR`, where every project's transcripts and memory
/// live) on a drive that stops answering: the list gives up after the drive's patience with an
/// `unavailable` error naming that folder and what to do, instead of waiting for the drive, and
/// lists again once it answers. Before, discovery read that folder on the caller's thread and
/// the Projects screen, `mneme projects` and the scheduler's start waited for the drive.
#[test]
fn a_config_folder_on_a_hung_drive_fails_the_list_saying_so_instead_of_hanging() {
    let mut home = TestHome::new();
    let Some((drive, config)) = config_on_a_drive(&mut home) else { return };
    let project = recorded_project(&home, "alpha", "6c2d0f2f-3044-4e8b-8b62-1d2e3f4a5b6c");
    write_file(&home.memdir_for(&project).join("MEMORY.md"), "- [Build](build.md) — how to build\n");
    let mneme = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    let before = projects(&mneme);
    assert!(by_folder(&before, &project).project_exists && by_folder(&before, &project).has_memory_index, "{before:#?}");

    let hung = drive.hang(NEVER);
    let started = Instant::now();
    let e = listed(&mneme).expect_err("listed while Claude Code's folder does not answer");
    assert!(!hung.rescued(), "the project list hung with the drive");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    assert_eq!(e.code, ErrorCode::Unavailable, "{e:?}");
    let projects_dir = config.join("projects");
    assert!(
        e.message.starts_with(&format!("The drive holding Claude Code's configuration folder (CLAUDE_CONFIG_DIR) {} is not answering", projects_dir.display())),
        "{}",
        e.message
    );
    assert!(e.message.contains("Check the drive or its connection"), "{}", e.message);
    // Asked again while it lasts: answered at once, the look stuck on the drive not waited for
    // a second time.
    let again = Instant::now();
    assert_eq!(listed(&mneme).unwrap_err().code, ErrorCode::Unavailable);
    assert!(again.elapsed() < Duration::from_secs(2), "asked again, it took {:?}", again.elapsed());

    drop(hung);
    // A failure shows the error the list last failed with.
    let back = wait::result("a list once the drive answered", || listed(&mneme));
    assert!(by_folder(&back, &project).project_exists, "{back:#?}");
    drop(drive);
}
