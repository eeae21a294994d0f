//! Where extraction keeps its own state in Mneme's data folder (never in a memory folder, where
//! Claude Code would read every `.md` as a memory):
//!
//! ```text
//! <data>/extract/modes.json                                  review mode per memory folder
//! <data>/extract/projects/<sanitized memory dir>/runs.jsonl  one record per run, append-only
//! <data>/extract/projects/<sanitized memory dir>/sessions/<session>.json   cursor per session
//! <data>/extract/inbox/<id>.json                             one file per inbox item
//! <data>/trash/<sanitized memory dir>/                       the memory folder's trash (as the api uses)
//! ```

use mneme_core::sanitize::sanitize_path;
use serde::{de::DeserializeOwned, Serialize};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) fn extract_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("extract")
}

pub(crate) fn project_dir(data_dir: &Path, memory_dir: &Path) -> PathBuf {
    extract_dir(data_dir).join("projects").join(sanitize_path(&memory_dir.to_string_lossy()))
}

pub(crate) fn inbox_dir(data_dir: &Path) -> PathBuf {
    extract_dir(data_dir).join("inbox")
}

/// The memory folder's trash, where the api's deletes go too.
pub fn trash_dir(data_dir: &Path, memory_dir: &Path) -> PathBuf {
    data_dir.join("trash").join(sanitize_path(&memory_dir.to_string_lossy()))
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes `value` as pretty JSON to `path` atomically (temporary file, fsync, rename).
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    mneme_store::atomic::write_atomic(path, &json_bytes(value)?)
}

/// Whether the disk under `dir` takes `len` more bytes now: a temporary file of that size is
/// written there (fsynced) and removed. For a step that writes elsewhere first and then here,
/// so a disk that would refuse this part (full, read-only, another account's) refuses before
/// anything is written; a disk that fills in between still refuses the write itself. Folders
/// it had to make for that go again when the disk refuses.
pub(crate) fn probe_room(dir: &Path, len: usize) -> io::Result<()> {
    let made: Vec<PathBuf> = dir.ancestors().take_while(|p| fs::symlink_metadata(p).is_err()).map(Path::to_path_buf).collect();
    let probed = fs::create_dir_all(dir)
        .and_then(|()| mneme_store::atomic::write_temp(dir, &vec![b'\n'; len], None))
        .and_then(|(tmp, _)| fs::remove_file(tmp));
    if probed.is_err() {
        made.iter().for_each(|p| drop(fs::remove_dir(p)));
    }
    probed
}

/// `value` as [`write_json`] writes it: pretty JSON ending in a newline.
pub(crate) fn json_bytes<T: Serialize>(value: &T) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The most of one JSON state file (`modes.json`, a session cursor, an inbox item with its
/// changeset) that is read: far above what any holds, far below what would exhaust memory.
pub(crate) const MAX_JSON_BYTES: u64 = 64 << 20;

/// The most of a run log read whole: the log is rotated at [`crate::record::MAX_LOG_BYTES`],
/// so a bigger one is not Mneme's.
pub(crate) const MAX_JSONL_BYTES: u64 = 4 * crate::record::MAX_LOG_BYTES;

/// Reads JSON; a missing file is `None`. Only a plain file is read, opened without waiting
/// (a FIFO in its place would block for ever) and up to [`MAX_JSON_BYTES`]; anything else is
/// refused with an error naming the file, what is there and what to do (see
/// [`mneme_store::open::read_own_file`]).
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> io::Result<Option<T>> {
    match mneme_store::open::read_own_file(path, MAX_JSON_BYTES)? {
        Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        None => Ok(None),
    }
}

/// Opens a log to read from the end, as [`mneme_store::open::read_own_file`] would read it:
/// without waiting on a FIFO, a plain file only. `None` when missing.
fn open_log(path: &Path) -> io::Result<Option<fs::File>> {
    let f = match mneme_store::open::open_no_wait(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(mneme_store::open::own_file_not_plain(path, mneme_store::open::kind_of(&meta)));
    }
    Ok(Some(f))
}

/// Appends one JSON line. A torn last line left by a crash is ended first, so it costs only
/// itself ([`read_jsonl`] skips it).
pub(crate) fn append_jsonl<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    let existed = fs::symlink_metadata(path).is_ok();
    // Without waiting (a FIFO opened for reading and writing does not wait, but say what it
    // is rather than write into it).
    let mut f = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(mneme_store::open::own_file_not_plain(path, mneme_store::open::kind_of(&meta)));
    }
    if meta.len() > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::End(-1))?;
        f.read_exact(&mut last)?;
        if last[0] != b'\n' {
            line.insert(0, b'\n');
        }
    }
    if let Err(e) = f.write_all(&line) {
        // A disk that filled part-way through leaves the log as it was rather than a torn line
        // (cutting back needs no space), and an empty log this append made goes.
        let _ = f.set_len(meta.len());
        if !existed && meta.len() == 0 {
            let _ = fs::remove_file(path);
        }
        return Err(e);
    }
    f.sync_data()
}

/// Every parseable line; unreadable lines (a crash mid-append) are skipped.
pub(crate) fn read_jsonl<T: DeserializeOwned>(path: &Path) -> io::Result<Vec<T>> {
    // Bytes, line by line: a line cut inside a character must not make the whole file
    // unreadable, as a whole-file UTF-8 decode would.
    let Some(bytes) = mneme_store::open::read_own_file(path, MAX_JSONL_BYTES)? else { return Ok(Vec::new()) };
    Ok(bytes.split(|&b| b == b'\n').filter_map(|l| serde_json::from_slice(l).ok()).collect())
}

/// The last `limit` parseable lines, newest first, read from the end a chunk at a time: a
/// log of thousands of runs is not read whole to show the newest few. Unreadable lines are
/// skipped, as [`read_jsonl`] skips them.
pub(crate) fn read_jsonl_tail<T: DeserializeOwned>(path: &Path, limit: usize) -> io::Result<Vec<T>> {
    read_jsonl_tail_by(path, limit, 64 * 1024)
}

fn read_jsonl_tail_by<T: DeserializeOwned>(path: &Path, limit: usize, chunk: u64) -> io::Result<Vec<T>> {
    use std::io::{Read, Seek, SeekFrom};
    let Some(mut f) = open_log(path)? else { return Ok(Vec::new()) };
    let mut end = f.metadata()?.len();
    let mut out = Vec::new();
    // The start of the line the previous (later) chunk began inside.
    let mut carry: Vec<u8> = Vec::new();
    while end > 0 && out.len() < limit {
        let start = end.saturating_sub(chunk);
        let mut buf = vec![0u8; (end - start) as usize];
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(&mut buf)?;
        buf.extend_from_slice(&carry);
        let mut lines: Vec<&[u8]> = buf.split(|&b| b == b'\n').collect();
        // Unless the file starts here, the first piece may be the end of an earlier line.
        let first = if start > 0 { lines.remove(0).to_vec() } else { Vec::new() };
        for line in lines.iter().rev() {
            if out.len() >= limit {
                break;
            }
            if let Ok(v) = serde_json::from_slice(line) {
                out.push(v);
            }
        }
        carry = first;
        end = start;
    }
    Ok(out)
}

/// A fresh id: the time, then 8 random hex digits, so ids sort by creation.
pub(crate) fn new_id(now_ms: u128) -> String {
    let mut r = [0u8; 4];
    // Without randomness the sequence number still keeps ids unique within this process.
    if getrandom::fill(&mut r).is_err() {
        r = (SEQ.fetch_add(1, Ordering::Relaxed) as u32).to_be_bytes();
    }
    format!("{now_ms:013}-{:02x}{:02x}{:02x}{:02x}", r[0], r[1], r[2], r[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_and_torn_lines_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b.json");
        write_json(&p, &vec![1, 2]).unwrap();
        assert_eq!(read_json::<Vec<u32>>(&p).unwrap(), Some(vec![1, 2]));
        assert_eq!(read_json::<Vec<u32>>(&d.path().join("none.json")).unwrap(), None);
        let l = d.path().join("runs.jsonl");
        append_jsonl(&l, &1).unwrap();
        fs::OpenOptions::new().append(true).open(&l).unwrap().write_all(b"{torn").unwrap();
        append_jsonl(&l, &2).unwrap();
        assert_eq!(read_jsonl::<u32>(&l).unwrap(), vec![1, 2]);
        // Cut inside a character (the disk filled mid-append): only that line is lost.
        fs::OpenOptions::new().append(true).open(&l).unwrap().write_all(b"\"caf\xC3").unwrap();
        append_jsonl(&l, &3).unwrap();
        assert_eq!(read_jsonl::<u32>(&l).unwrap(), vec![1, 2, 3]);
        // From the end, newest first, in chunks smaller than a line or cutting one.
        for chunk in [1, 2, 3, 5, 64] {
            let newest: Vec<u32> = read_jsonl_tail_by(&l, 2, chunk).unwrap();
            assert_eq!(newest, vec![3, 2], "chunk {chunk}");
            assert_eq!(read_jsonl_tail_by::<u32>(&l, 10, chunk).unwrap(), vec![3, 2, 1], "chunk {chunk}");
        }
        let long = d.path().join("long.jsonl");
        let lines: Vec<String> = (0..50).map(|i| "x".repeat(i * 37)).collect();
        for line in &lines {
            append_jsonl(&long, line).unwrap();
        }
        let mut expected = lines.clone();
        expected.reverse();
        assert_eq!(read_jsonl_tail_by::<String>(&long, 50, 100).unwrap(), expected);
        assert_eq!(read_jsonl_tail::<u32>(&d.path().join("none.jsonl"), 3).unwrap(), Vec::<u32>::new());
        let a = new_id(5);
        assert!(a.starts_with("0000000000005-") && a.len() == 22 && a != new_id(5));
    }

    /// An append a full disk refuses (a small tmpfs filled to the brim; root only) leaves the
    /// log as it was: no torn line from a write cut part-way, no empty log where there was none.
    #[test]
    #[cfg(target_os = "linux")]
    fn an_append_a_full_disk_refuses_leaves_the_log_as_it_was() {
        if !mneme_testsupport::accounts::root_or_skip("mounting a tmpfs") {
            return;
        }
        let t = mneme_testsupport::TestHome::new();
        let drive = mneme_testsupport::tmpfs::Tmpfs::mount(&t.root.join("drive"), "64k").expect("mounting a tmpfs as root");
        // A log one byte short of its page: the line's first byte fits, the rest needs a new one.
        let log = drive.path().join("runs.jsonl");
        let text = format!("{}\n", "7".repeat(4094));
        fs::write(&log, &text).unwrap();
        drive.fill();
        let e = append_jsonl(&log, &"a line longer than the one byte left".to_string()).unwrap_err();
        assert_eq!(mneme_store::atomic::Refusal::of(&e), Some(mneme_store::atomic::Refusal::DiskFull), "{e}");
        assert_eq!(fs::read_to_string(&log).unwrap(), text);
        let fresh = drive.path().join("fresh.jsonl");
        append_jsonl(&fresh, &1).unwrap_err();
        assert!(!fresh.exists(), "an empty log is left");
    }
}
