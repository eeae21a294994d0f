//! `mneme projects` while a project's drive stops answering, made real as root: an exFAT image
//! mounted through FUSE (`mneme_testsupport::exfat`) whose daemon is stopped, and always
//! continued before the drive is unmounted. As any other user the test says so and passes
//! without checking (CI runs it as root).

#![cfg(target_os = "linux")]

use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::{write_file, TestHome};
use std::path::Path;
use std::time::Duration;

/// A bound the command never comes near while the fix holds (a drive's look gives up after
/// 3 s): reaching it is the failure (a hang). The drive's watchdog continues it later.
const GIVE_UP: Duration = Duration::from_secs(30);
const NEVER: Duration = Duration::from_secs(90);

fn session(home: &TestHome, project: &Path, sid: &str) {
    let line = serde_json::json!({"type": "user", "cwd": project, "sessionId": sid});
    write_file(&mneme_store::paths::transcript_dir(&home.env, project).join(format!("{sid}.jsonl")), &format!("{line}\n"));
}

/// `mneme projects <args>`, given [`GIVE_UP`] to finish: killed and failed past it.
fn projects(home: &TestHome, args: &[&str]) -> String {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), home);
    let child = cmd.arg("projects").args(args).current_dir(&home.root).spawn().expect("mneme starts");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(GIVE_UP) else {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        panic!("`mneme projects` did not finish within 30 s: it hung with the drive");
    };
    let out = out.expect("mneme runs");
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
    let healthy = home.root.join("alpha");
    std::fs::create_dir_all(&healthy).unwrap();
    session(&home, &healthy, "6c2d0f2f-3044-4e8b-8b62-1d2e3f4a5b6c");

    let hung = drive.hang(NEVER);
    assert!(!mneme_store::drive::answers(&on_stick), "the stopped drive still answers");
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
    let Some(drive) = Exfat::mount(&home.root.join("drives/config")) else { return };
    let config = drive.path().join(".claude");
    home.env = home.env.clone().set_var("CLAUDE_CONFIG_DIR", config.to_str().unwrap());
    let project = home.root.join("alpha");
    std::fs::create_dir_all(&project).unwrap();
    session(&home, &project, "6c2d0f2f-3044-4e8b-8b62-1d2e3f4a5b6c");
    assert!(projects(&home, &[]).contains(&project.display().to_string()));

    let hung = drive.hang(NEVER);
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), &home);
    let child = cmd.arg("projects").current_dir(&home.root).spawn().expect("mneme starts");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(GIVE_UP) else {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        panic!("`mneme projects` did not finish within 30 s: it hung with the drive");
    };
    let out = out.expect("mneme runs");
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
