//! The record of every background run: one JSON object per line in `<data dir>/runs.jsonl`.
//! Append-only so a crash mid-run leaves every earlier record intact; a torn line (power loss
//! during the append, cut inside a character or not) is skipped when reading, never an error,
//! and costs only itself.

use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobKind {
    Extraction,
    Dream,
    TeamSync,
    /// The installed Claude Code checked against Mneme's view after it changed.
    ClaudeCodeCheck,
}

impl JobKind {
    pub fn label(self) -> &'static str {
        match self {
            JobKind::Extraction => "extraction",
            JobKind::Dream => "dream",
            JobKind::TeamSync => "team sync",
            JobKind::ClaudeCodeCheck => "Claude Code check",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// The job did its work; `summary` is what a person reads ("Saved 2 memories").
    Done { summary: String },
    /// A gate said no; nothing was attempted.
    Skipped { reason: String },
    Failed { error: String },
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub id: String,
    pub job: JobKind,
    /// What the run was for: a memory folder, a transcript, a repository.
    pub target: String,
    pub started_ms: u64,
    pub finished_ms: u64,
    pub outcome: Outcome,
}

#[derive(Debug, thiserror::Error)]
pub enum RunLogError {
    #[error("could not record the run in {path}: {source}; check that Mneme's data folder is writable")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("could not read the run history {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
}

#[derive(Debug, Clone)]
pub struct RunLog {
    path: PathBuf,
}

impl RunLog {
    pub fn in_data_dir(data_dir: &Path) -> RunLog {
        RunLog { path: data_dir.join("runs.jsonl") }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append(&self, record: &RunRecord) -> Result<(), RunLogError> {
        let err = |source| RunLogError::Write { path: self.path.clone(), source };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let mut line = serde_json::to_string(record).map_err(|e| err(std::io::Error::other(e)))?;
        line.push('\n');
        let mut f = OpenOptions::new().create(true).append(true).read(true).open(&self.path).map_err(err)?;
        // A torn last line (a crash mid-append) would swallow this record: start on a fresh line.
        if ends_without_newline(&mut f).map_err(err)? {
            line.insert(0, '\n');
        }
        // One write call per record: O_APPEND keeps concurrent appenders (app + daemon) from interleaving.
        f.write_all(line.as_bytes()).map_err(err)
    }

    /// The newest `limit` records, newest first, optionally for one job kind.
    pub fn recent(&self, limit: usize, job: Option<JobKind>) -> Result<Vec<RunRecord>, RunLogError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(RunLogError::Read { path: self.path.clone(), source }),
        };
        // Bytes, line by line: a line cut inside a character is not UTF-8, and reading the file
        // as text lines would stop there and hide every record written after it.
        let mut out: Vec<RunRecord> = bytes
            .split(|&b| b == b'\n')
            .filter_map(|l| serde_json::from_slice::<RunRecord>(l).ok())
            .filter(|r| job.is_none_or(|j| r.job == j))
            .collect();
        out.reverse();
        out.truncate(limit);
        Ok(out)
    }
}

fn ends_without_newline(f: &mut std::fs::File) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    if f.metadata()?.len() == 0 {
        return Ok(false);
    }
    f.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// A fresh run id: time-ordered, unique across processes.
pub fn new_run_id(now_ms: u64) -> String {
    let mut rand = [0u8; 4];
    // A failed random source only weakens uniqueness between two runs in the same millisecond.
    let _ = getrandom::fill(&mut rand);
    format!("{now_ms:013}-{:08x}", u32::from_be_bytes(rand))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, job: JobKind) -> RunRecord {
        RunRecord { id: id.into(), job, target: "/m".into(), started_ms: 1, finished_ms: 2, outcome: Outcome::Done { summary: "ok".into() } }
    }

    #[test]
    fn appends_and_reads_newest_first_skipping_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::in_data_dir(dir.path());
        assert!(log.recent(10, None).unwrap().is_empty());
        log.append(&rec("a", JobKind::Dream)).unwrap();
        log.append(&rec("b", JobKind::Extraction)).unwrap();
        let mut f = OpenOptions::new().append(true).open(log.path()).unwrap();
        f.write_all(b"{\"id\":\"torn").unwrap();
        drop(f);
        log.append(&rec("c", JobKind::Dream)).unwrap();
        let all = log.recent(10, None).unwrap();
        assert_eq!(all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec!["c", "b", "a"]);
        let dreams = log.recent(1, Some(JobKind::Dream)).unwrap();
        assert_eq!(dreams.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec!["c"]);
    }

    /// A record torn inside a character (the disk filled mid-append) is not UTF-8: it is
    /// skipped, and every record after it is still read.
    #[test]
    fn a_line_torn_inside_a_character_hides_nothing_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::in_data_dir(dir.path());
        log.append(&rec("a", JobKind::Dream)).unwrap();
        let mut f = OpenOptions::new().append(true).open(log.path()).unwrap();
        f.write_all(b"{\"id\":\"caf\xC3").unwrap();
        drop(f);
        log.append(&rec("b", JobKind::Extraction)).unwrap();
        log.append(&rec("c", JobKind::Dream)).unwrap();
        let all = log.recent(10, None).unwrap();
        assert_eq!(all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec!["c", "b", "a"]);
    }

    #[test]
    fn run_ids_sort_by_time() {
        assert!(new_run_id(5) < new_run_id(10));
        assert_ne!(new_run_id(5), new_run_id(5));
    }
}
