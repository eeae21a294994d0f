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
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    mneme_store::atomic::write_atomic(path, &bytes)
}

/// Reads JSON; a missing file is `None`.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> io::Result<Option<T>> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
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
    let mut f = OpenOptions::new().create(true).read(true).append(true).open(path)?;
    if f.metadata()?.len() > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::End(-1))?;
        f.read_exact(&mut last)?;
        if last[0] != b'\n' {
            line.insert(0, b'\n');
        }
    }
    f.write_all(&line)?;
    f.sync_data()
}

/// Every parseable line; unreadable lines (a crash mid-append) are skipped.
pub(crate) fn read_jsonl<T: DeserializeOwned>(path: &Path) -> io::Result<Vec<T>> {
    // Bytes, line by line: a line cut inside a character must not make the whole file
    // unreadable, as a whole-file UTF-8 decode would.
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(bytes.split(|&b| b == b'\n').filter_map(|l| serde_json::from_slice(l).ok()).collect())
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
        let a = new_id(5);
        assert!(a.starts_with("0000000000005-") && a.len() == 22 && a != new_id(5));
    }
}
