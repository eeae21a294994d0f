//! The Dreams screen's status for a project whose folder answers but whose Claude Code
//! configuration folder (`CLAUDE_CONFIG_DIR`: the settings, and the transcripts the dream gates
//! count and search) is on a drive that stops answering, made real as root: an exFAT image
//! mounted through FUSE (`mneme_testsupport::exfat`) whose daemon is stopped, and always
//! continued before the drive is unmounted (`mneme_testsupport::hung_drive`). As any other user
//! the test says so and passes without checking (CI runs it as root).

#![cfg(target_os = "linux")]

use mneme_api::drive_check::{guarded, not_answering, OPERATION_PATIENCE};
use mneme_api::{ContextRequest, ErrorCode, FixedClock, Mneme};
use mneme_testsupport::hung_drive::{self, within, GIVE_UP};
use mneme_testsupport::{wait, TestHome};
use std::path::Path;
use std::sync::Arc;

/// The dream status (and the mode change, which answers with it) fails at once as
/// `unavailable`, naming the transcripts' folder, while the configuration folder's drive does
/// not answer; once the drive answers, the status is answered. Before, the status read the settings and the transcripts there and was answered
/// only when the shells' patience (60 s) ran out.
#[test]
fn the_dream_status_fails_at_once_naming_the_transcripts_folder_when_its_drive_hangs() {
    let mut t = TestHome::new();
    let Some((drive, _config)) = hung_drive::config_on_a_drive(&mut t) else { return };
    let project = hung_drive::recorded_project(&t, "alpha", "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b");
    let projects = t.env.projects_dir();
    let m = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_590_000)));
    let status = |m: &Mneme, name: &'static str, cwd: &Path| {
        let (m, owned, cwd) = (m.clone(), m.clone(), cwd.to_path_buf());
        within("the dream status", move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(guarded(name, &m, Some(cwd.clone()), OPERATION_PATIENCE, move || owned.dream_status(&ContextRequest { cwd, ..Default::default() })))
        })
    };

    let hung = hung_drive::stop(&drive, &projects, hung_drive::NEVER);
    // The check runs on the operation's name before the operation, so each name that reads the
    // transcripts is refused at once; `run_extraction` reads the newest one.
    for name in ["dream_status", "set_dream_mode", "run_extraction"] {
        let e = status(&m, name, &project).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::Unavailable, not_answering(&projects).message.as_str()), "{name}");
    }
    assert!(!hung.rescued(), "the status hung with the drive");

    drop(hung);
    let answered = wait::value_within(GIVE_UP, "the dream status answered once the drive answers", || match status(&m, "dream_status", &project) {
        Err(e) if e.code == ErrorCode::Unavailable => None,
        other => Some(other),
    });
    let gates = answered.unwrap();
    assert_eq!(gates.transcript_dir, mneme_store::paths::transcript_dir(&t.env, &project));
    drop(drive);
}
