//! `mneme projects` while a project's drive stops answering, made real as root: an exFAT image
//! mounted through FUSE (`mneme_testsupport::exfat`) whose daemon is stopped, and always
//! continued before the drive is unmounted (`mneme_testsupport::hung_drive`). As any other user
//! the test says so and passes without checking (CI runs it as root).

#![cfg(target_os = "linux")]

use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::hung_drive::{self, config_on_a_drive, record_session as session, recorded_project, NEVER};
use mneme_testsupport::TestHome;
use std::path::Path;
use std::process::Output;

/// `mneme projects <args>`, killed and failed when it does not finish within
/// `hung_drive::GIVE_UP` (a drive's look gives up after 3 s while the fix holds).
fn run_projects(home: &TestHome, args: &[&str]) -> Output {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), home);
    hung_drive::command_within("`mneme projects`", cmd.arg("projects").args(args).current_dir(&home.root))
}

/// What `mneme projects <args>` prints, as [`run_projects`] runs it; it must succeed.
fn projects(home: &TestHome, args: &[&str]) -> String {
    let out = run_projects(home, args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The list says which project's drive is not answering, in words and in `--json`, and calls
/// no such project orphaned.
#[test]
fn mneme_projects_says_which_drive_is_not_answering() {
    let home = TestHome::new();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let on_stick = drive.path().join("proj");
    std::fs::create_dir_all(&on_stick).unwrap();
    session(&home, &on_stick, "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b");
    let healthy = recorded_project(&home, "alpha", "6c2d0f2f-3044-4e8b-8b62-1d2e3f4a5b6c");

    let hung = hung_drive::stop(&drive, &on_stick, NEVER);
    let text = projects(&home, &[]);
    let stanza = |p: &Path| {
        let at = text.find(&format!("{}\n", p.display())).unwrap_or_else(|| panic!("{} is not listed:\n{text}", p.display()));
        text[at..].lines().take(2).collect::<Vec<_>>().join("\n")
    };
    assert!(stanza(&on_stick).contains("DRIVE NOT ANSWERING"), "{text}");
    assert!(!text.contains("ORPHANED"), "{text}");
    assert!(!stanza(&healthy).contains("DRIVE NOT ANSWERING"), "{text}");

    let v: serde_json::Value = serde_json::from_str(&projects(&home, &["--json"])).unwrap();
    let of = |p: &Path| v.as_array().unwrap().iter().find(|x| x["projectPath"] == p.to_string_lossy().as_ref()).cloned().unwrap();
    let s = of(&on_stick);
    assert_eq!((s["driveNotAnswering"].as_bool(), s["orphaned"].as_bool()), (Some(true), Some(false)), "{s}");
    assert_eq!(of(&healthy)["driveNotAnswering"], false);
    assert!(!hung.rescued(), "`mneme projects` hung with the drive");
    drop(hung);
    drop(drive);
}

/// Claude Code's own folder (`CLAUDE_CONFIG_DIR`) on a drive that does not answer: `mneme
/// projects` ends after the drive's patience with an error naming that folder, instead of
/// waiting for the drive (before, for ever).
#[test]
fn mneme_projects_says_the_config_folder_is_not_answering_instead_of_hanging() {
    let mut home = TestHome::new();
    let Some((drive, config)) = config_on_a_drive(&mut home) else { return };
    let project = recorded_project(&home, "alpha", "6c2d0f2f-3044-4e8b-8b62-1d2e3f4a5b6c");
    assert!(projects(&home, &[]).contains(&project.display().to_string()));

    let hung = drive.hang(NEVER);
    let out = run_projects(&home, &[]);
    assert!(!hung.rescued(), "`mneme projects` hung with the drive");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("The drive holding Claude Code's configuration folder (CLAUDE_CONFIG_DIR) {} is not answering", config.join("projects").display())),
        "{stderr}"
    );
    drop(hung);
    drop(drive);
}
