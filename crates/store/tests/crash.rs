//! Writers killed at random points never leave a torn file: every file is either its old or
//! its new text, and the temporary files the killed writers leave are removed by the next
//! write into the folder. The writers are this test binary run again as child processes
//! (`crash_writer`), so the kill is a real SIGKILL of a process mid-write.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const CHILD_ENV: &str = "MNEME_CRASH_WRITER_DIR";
/// Two versions of each file, 200 KB each, so a write spans many blocks.
const SIZE: usize = 200 * 1024;
const FILES: usize = 3;

fn version(file: usize, v: u8) -> Vec<u8> {
    let mut text = format!("file {file} version {v}\n").into_bytes();
    text.resize(SIZE, b'a' + v);
    text
}

/// The child: rewrites every file, alternating versions, until it is killed.
#[test]
fn crash_writer() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let dir = Path::new(&dir);
    for round in 0u64.. {
        for f in 0..FILES {
            let v = ((round + f as u64) % 2) as u8;
            mneme_store::atomic::write_atomic(&dir.join(format!("f{f}.md")), &version(f, v)).unwrap();
        }
    }
}

/// A cheap pseudo-random number: the test needs spread, not quality.
fn jitter(seed: u64) -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    (nanos ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33
}

#[test]
fn killed_writers_leave_every_file_old_or_new_and_their_temp_files_are_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    for f in 0..FILES {
        std::fs::write(dir.path().join(format!("f{f}.md")), version(f, 0)).unwrap();
    }
    let me = std::env::current_exe().unwrap();
    let runs = 40;
    let mut saw_temp = 0;
    for run in 0..runs {
        let mut child = Command::new(&me)
            .args(["--exact", "crash_writer", "--test-threads=1", "--nocapture"])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // 0–50 ms in: before the first write, mid-write, between rename and fsync.
        std::thread::sleep(Duration::from_millis(jitter(run) % 50));
        child.kill().unwrap();
        child.wait().unwrap();
        for f in 0..FILES {
            let text = std::fs::read(dir.path().join(format!("f{f}.md"))).unwrap();
            assert!(text == version(f, 0) || text == version(f, 1), "run {run}: f{f}.md is torn ({} bytes)", text.len());
        }
        saw_temp += temp_files(dir.path()).len();
    }
    // The next write into the folder removes what the killed writers left.
    mneme_store::atomic::write_atomic(&dir.path().join("f0.md"), &version(0, 1)).unwrap();
    assert_eq!(temp_files(dir.path()), Vec::<String>::new(), "stale temporary files stay (saw {saw_temp} during the runs)");
}

fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".mneme-") && n.ends_with(".tmp"))
        .collect()
}

const FSIZE_CHILD_ENV: &str = "MNEME_FSIZE_COPY_DIR";
/// The file-size limit that stops the copy of a [`SIZE`] file halfway.
const LIMIT: u64 = 100 * 1024;

/// The child: puts a copy of a 200 KB file in the trash under a 100 KB file-size limit, so the
/// kernel kills it (SIGXFSZ) in the middle of writing the copy.
#[cfg(target_os = "linux")]
#[test]
fn fsize_limited_trash_copy() {
    let Some(dir) = std::env::var_os(FSIZE_CHILD_ENV) else { return };
    let dir = Path::new(&dir);
    use rustix::process::{setrlimit, Resource, Rlimit};
    setrlimit(Resource::Fsize, Rlimit { current: Some(LIMIT), maximum: Some(LIMIT) }).unwrap();
    let memdir = mneme_store::memdir::Memdir::new(dir.join("memory"), dir.join("trash"), std::sync::Arc::new(mneme_core::clock::SystemClock));
    let _ = memdir.trash_copy("team/notes.md");
}

/// A copy into the trash (what a team pull keeps of a local version it replaces) killed
/// halfway leaves no half copy that looks like a trash entry: the trash lists nothing, damaged
/// or not, and holds no partial file; the original is untouched.
#[cfg(target_os = "linux")]
#[test]
fn a_trash_copy_killed_halfway_leaves_no_torn_copy() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let team = dir.path().join("memory/team");
    std::fs::create_dir_all(&team).unwrap();
    let original = version(0, 1);
    assert!(original.len() as u64 > LIMIT);
    std::fs::write(team.join("notes.md"), &original).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "fsize_limited_trash_copy", "--test-threads=1", "--nocapture"])
        .env(FSIZE_CHILD_ENV, dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(out.signal(), Some(rustix::process::Signal::XFSZ.as_raw()), "the copy was stopped by the limit: {out:?}");
    assert_eq!(std::fs::read(team.join("notes.md")).unwrap(), original);
    let memdir = mneme_store::memdir::Memdir::new(dir.path().join("memory"), dir.path().join("trash"), std::sync::Arc::new(mneme_core::clock::SystemClock));
    let listing = memdir.list_trash().unwrap();
    assert!(listing.entries.is_empty() && listing.damaged.is_empty(), "{listing:?}");
    let mut left = Vec::new();
    for e in std::fs::read_dir(dir.path().join("trash")).unwrap().flatten() {
        left.extend(std::fs::read_dir(e.path()).into_iter().flatten().flatten().map(|f| f.path()));
        left.push(e.path());
    }
    assert_eq!(left, Vec::<std::path::PathBuf>::new(), "what the killed copy left is cleared by the next listing");
}

const FSIZE_CLAUDE_MD_ENV: &str = "MNEME_FSIZE_CLAUDE_MD";

/// The child: replaces a 200 KB CLAUDE.md with another 200 KB under a 100 KB file-size limit.
#[cfg(target_os = "linux")]
#[test]
fn fsize_limited_claude_md_edit() {
    let Some(file) = std::env::var_os(FSIZE_CLAUDE_MD_ENV) else { return };
    let file = Path::new(&file);
    use rustix::process::{setrlimit, Resource, Rlimit};
    let expected = mneme_store::textfile::revision(file).unwrap();
    setrlimit(Resource::Fsize, Rlimit { current: Some(LIMIT), maximum: Some(LIMIT) }).unwrap();
    let _ = mneme_store::textfile::write_checked(file, &version(0, 1), &expected);
}

/// A CLAUDE.md edit (the screens' file editor) killed halfway leaves the old file whole, and
/// the temporary file it left in the repository goes as soon as the file is opened again, not
/// only with the next save.
#[cfg(target_os = "linux")]
#[test]
fn a_claude_md_edit_killed_halfway_leaves_the_old_file() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("CLAUDE.md");
    std::fs::write(&file, version(0, 0)).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "fsize_limited_claude_md_edit", "--test-threads=1", "--nocapture"])
        .env(FSIZE_CLAUDE_MD_ENV, &file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(out.signal(), Some(rustix::process::Signal::XFSZ.as_raw()), "the edit was stopped by the limit: {out:?}");
    assert!(std::fs::read(&file).unwrap() == version(0, 0), "CLAUDE.md is torn");
    assert_eq!(temp_files(dir.path()).len(), 1, "the kill hit the edit's write");
    assert!(mneme_store::textfile::read(&file).unwrap().unwrap().0 == version(0, 0));
    assert_eq!(temp_files(dir.path()), Vec::<String>::new(), "opening the file cleared the killed edit's temporary file");
    let expected = mneme_store::textfile::revision(&file).unwrap();
    mneme_store::textfile::write_checked(&file, &version(0, 1), &expected).unwrap();
    assert!(std::fs::read(&file).unwrap() == version(0, 1));
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}
