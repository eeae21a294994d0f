//! What the tests of a drive that stops answering (a network share whose server went away, a
//! FUSE daemon that hangs) share: the drive is a real exFAT one ([`crate::exfat::Exfat`], as
//! root; the tests pass without checking as any other user) whose daemon is stopped, and every
//! call that might wait on it is made so that a hang fails the test instead of hanging it.
//!
//! Two bounds: [`GIVE_UP`], past which a call or a command is taken to hang with the drive (a
//! drive's look gives up after 3 s while the fixes hold, so nothing comes near it), and
//! [`NEVER`], after which the drive's watchdog continues its daemon anyway, later than any test
//! gives up, so `Hung::rescued` says whether something waited for the drive.

use crate::exfat::{Exfat, Hung};
use crate::{write_file, TestHome};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a call that must not wait on the drive is given: reaching it is the failure.
pub const GIVE_UP: Duration = Duration::from_secs(30);
/// When the drive's watchdog continues it anyway: later than [`GIVE_UP`].
pub const NEVER: Duration = Duration::from_secs(90);

/// Stops `drive` (its watchdog continuing it after `bound`) and checks that a look at
/// `seen_from`, a folder on it, no longer answers: a `statfs` always reaches the drive (a
/// `stat` may be answered from the kernel's cache for a moment), so once this gives up nothing
/// under the mount answers.
#[track_caller]
pub fn stop(drive: &Exfat, seen_from: &Path, bound: Duration) -> Hung {
    let hung = drive.hang(bound);
    assert!(!mneme_store::drive::answers(seen_from), "the stopped drive still answers at {}", seen_from.display());
    hung
}

/// Runs `f` on a thread of its own and answers what it returns, failing the test when it has
/// not within [`GIVE_UP`]: `what` hung with the drive.
#[track_caller]
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    crate::wait::on_a_thread(GIVE_UP, f).unwrap_or_else(|| panic!("{what} did not answer within {GIVE_UP:?}: it waited on the hung drive"))
}

/// Runs `cmd` to its end and answers its output, killing it and failing the test when it has
/// not ended within [`GIVE_UP`]: `what` hung with the drive.
#[track_caller]
pub fn command_within(what: &str, cmd: &mut std::process::Command) -> std::process::Output {
    crate::wait::command_within(GIVE_UP, cmd).unwrap_or_else(|| panic!("{what} did not finish within {GIVE_UP:?}: it hung with the drive"))
}

/// A session of `project` as Claude Code records it: a transcript named `sid` in the project's
/// folder under the config home, whose first line names the project's folder (`cwd`), which is
/// how the project list finds a project it has no other record of.
pub fn record_session(home: &TestHome, project: &Path, sid: &str) {
    let line = serde_json::json!({"type": "user", "cwd": project, "sessionId": sid, "message": {"role": "user", "content": "hi"}});
    write_file(&mneme_store::paths::transcript_dir(&home.env, project).join(format!("{sid}.jsonl")), &format!("{line}\n"));
}

/// A project folder at `rel` under `home`'s root (made) with one session of Claude Code's
/// recorded in it as [`record_session`] records it.
pub fn recorded_project(home: &TestHome, rel: &str, sid: &str) -> PathBuf {
    let project = home.root.join(rel);
    std::fs::create_dir_all(&project).expect("make the project folder");
    record_session(home, &project, sid);
    project
}

/// An exFAT drive mounted at `<root>/drives/config` holding `home`'s Claude Code configuration
/// folder ([`config_folder_on`]), and that folder; `None` as [`Exfat::mount`] answers it (not
/// root: the test passes without checking).
pub fn config_on_a_drive(home: &mut TestHome) -> Option<(Exfat, PathBuf)> {
    let drive = Exfat::mount(&home.root.join("drives/config"))?;
    let config = config_folder_on(home, &drive);
    Some((drive, config))
}

/// Moves `home`'s Claude Code configuration folder (`CLAUDE_CONFIG_DIR`: every project's
/// transcripts and memory) onto `drive`, as `<drive>/.claude`, and answers it. Commands built
/// with [`crate::command_in`] afterwards see it too.
pub fn config_folder_on(home: &mut TestHome, drive: &Exfat) -> PathBuf {
    let config = drive.path().join(".claude");
    home.env = home.env.clone().set_var("CLAUDE_CONFIG_DIR", config.to_string_lossy().to_string());
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded session names its folder as Claude Code writes it, whatever the name.
    #[test]
    fn a_recorded_session_names_its_folder_in_json() {
        let home = TestHome::new();
        let project = home.root.join("odd \"name\"\\with\ttab");
        record_session(&home, &project, "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b");
        let file = mneme_store::paths::transcript_dir(&home.env, &project).join("5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b.jsonl");
        let line: serde_json::Value = serde_json::from_str(std::fs::read_to_string(file).unwrap().trim_end()).unwrap();
        assert_eq!(line["cwd"], project.to_string_lossy().as_ref());
        assert_eq!(line["sessionId"], "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b");
        assert_eq!(line["message"]["role"], "user");
    }
}
