//! The record of every background run: one JSON object per line in `<data dir>/runs.jsonl`.
//! Append-only so a crash mid-run leaves every earlier record intact; a torn line (power loss
//! during the append, cut inside a character or not) is skipped when reading, never an error,
//! and costs only itself. Once it passes [`MAX_BYTES`] it is cut back to its newest
//! [`KEEP_BYTES`] (months of runs), and the newest records are read from its end, so neither
//! the file nor a look at the recent runs grows with the years a scheduler runs.

use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The size past which the log is cut back to [`KEEP_BYTES`]. A run's record is a few hundred
/// bytes, and a busy machine records a few hundred runs a day.
pub const MAX_BYTES: u64 = 4 << 20;
/// What a cut keeps: the newest records, whole lines only.
pub const KEEP_BYTES: u64 = 2 << 20;
/// The most of the file's end [`RunLog::recent`] reads: the log is cut back at
/// [`MAX_BYTES`], so records further back than this are not Mneme's.
const MAX_READ_BYTES: u64 = 4 * MAX_BYTES;
/// How much of the file's end [`RunLog::recent`] reads at a time.
const CHUNK: u64 = 64 << 10;

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

/// The job of a recorded run. The log is shared by every build on the machine (the app, `mneme
/// daemon`, a CLI of another build), so a run of a job a newer Mneme added is listed under the
/// name the log gives it instead of being left out; the line itself is never rewritten.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RunJob {
    Known(JobKind),
    /// A job this build does not run, by its name in the log.
    Newer(String),
}

impl RunJob {
    /// The job's name for people; one this build does not know says whose it is.
    pub fn label(&self) -> std::borrow::Cow<'static, str> {
        match self {
            RunJob::Known(kind) => kind.label().into(),
            RunJob::Newer(name) => format!("{name} (a job of a newer Mneme)").into(),
        }
    }

    /// The job when this build runs it.
    pub fn known(&self) -> Option<JobKind> {
        match self {
            RunJob::Known(kind) => Some(*kind),
            RunJob::Newer(_) => None,
        }
    }
}

impl From<JobKind> for RunJob {
    fn from(kind: JobKind) -> Self {
        RunJob::Known(kind)
    }
}

impl PartialEq<JobKind> for RunJob {
    fn eq(&self, other: &JobKind) -> bool {
        self.known() == Some(*other)
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
    /// An outcome a newer Mneme recorded (the log is shared by every build on the machine),
    /// by its `status` in the log: the run is listed with it rather than left out. Its other
    /// fields are not read; the line itself is never rewritten.
    #[serde(untagged)]
    Newer { status: NewerStatus },
}

impl Outcome {
    /// The name of an outcome this build does not know, as the log gives it.
    pub fn newer(&self) -> Option<&str> {
        match self {
            Outcome::Newer { status } => Some(&status.0),
            _ => None,
        }
    }
}

/// The `status` of an outcome a newer Mneme recorded: any name but those this build reads, so
/// a line of a known outcome with a field missing (a torn or hand-edited line) is still left
/// out rather than listed as a newer Mneme's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct NewerStatus(String);

impl NewerStatus {
    /// The statuses [`Outcome`]'s own variants are written with.
    const KNOWN: [&str; 4] = ["done", "skipped", "failed", "cancelled"];

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for NewerStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        if NewerStatus::KNOWN.contains(&name.as_str()) {
            return Err(serde::de::Error::custom(format!("a '{name}' outcome with its fields missing")));
        }
        Ok(NewerStatus(name))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub id: String,
    pub job: RunJob,
    /// What the run was for: a memory folder, a transcript, a repository.
    pub target: String,
    pub started_ms: u64,
    pub finished_ms: u64,
    pub outcome: Outcome,
}

#[derive(Debug, thiserror::Error)]
pub enum RunLogError {
    #[error("{}", write_text(path, source))]
    Write { path: PathBuf, source: std::io::Error },
    #[error("could not read the run history {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
}

/// [`RunLogError::Write`] for people: the disk's refusal (full, read-only, another account's)
/// says which and what to do, where the system's bare words ("No space left on device") say
/// neither; anything else names the system's error and the folder to check.
fn write_text(path: &Path, source: &std::io::Error) -> String {
    match mneme_store::atomic::Refusal::of(source) {
        Some(r) => format!("could not record the run in {}: {}", path.display(), r.says(path)),
        None => format!("could not record the run in {}: {source}; check that Mneme's data folder is writable", path.display()),
    }
}

impl RunLogError {
    /// The disk's refusal behind a failed write, if that is what it was.
    pub fn refused(&self) -> Option<mneme_store::atomic::Refusal> {
        match self {
            RunLogError::Write { source, .. } => mneme_store::atomic::Refusal::of(source),
            RunLogError::Read { .. } => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunLog {
    path: PathBuf,
    max_bytes: u64,
    keep_bytes: u64,
    /// This process's appends and cuts, one at a time: a cut replaces the file, and a record
    /// appended to the file it replaced meanwhile would be lost. Only the one scheduler of the
    /// machine appends, so no other process writes here.
    writing: Arc<Mutex<()>>,
}

impl RunLog {
    pub fn in_data_dir(data_dir: &Path) -> RunLog {
        RunLog { path: data_dir.join("runs.jsonl"), max_bytes: MAX_BYTES, keep_bytes: KEEP_BYTES, writing: Arc::default() }
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
        let _writing = self.writing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let existed = std::fs::symlink_metadata(&self.path).is_ok();
        let mut f = OpenOptions::new().create(true).append(true).read(true).open(&self.path).map_err(err)?;
        // Opening for reading and writing never waits on a FIFO, but appending to one fills the
        // pipe and then blocks the scheduler for ever: only a plain file is written to.
        let was = plain(&f).map_err(err)?.len();
        // A torn last line (a crash mid-append) would swallow this record: start on a fresh line.
        if ends_without_newline(&mut f).map_err(err)? {
            line.insert(0, '\n');
        }
        // One write call per record: O_APPEND keeps appenders from interleaving.
        if let Err(e) = f.write_all(line.as_bytes()) {
            // A disk that filled part-way through leaves the log as it was rather than a torn
            // line (cutting back needs no space), and an empty log this append made goes.
            let _ = f.set_len(was);
            if !existed && was == 0 {
                let _ = std::fs::remove_file(&self.path);
            }
            return Err(err(e));
        }
        if f.metadata().map_err(err)?.len() > self.max_bytes {
            // The record is written either way; a cut that fails is tried again at the next one.
            let _ = self.cut(&mut f);
        }
        Ok(())
    }

    /// Replaces the log with its newest `keep_bytes`, from the first whole line there.
    fn cut(&self, f: &mut std::fs::File) -> std::io::Result<()> {
        // Only the part kept is read (and the byte before it, to know whether it starts a
        // line), however large the file has become.
        let len = f.metadata()?.len();
        let from = len.saturating_sub(self.keep_bytes);
        let read_from = from.saturating_sub(1);
        let mut tail = Vec::new();
        f.seek(SeekFrom::Start(read_from))?;
        f.take(len - read_from).read_to_end(&mut tail)?;
        let start = match from {
            0 => 0,
            _ => tail.iter().position(|&b| b == b'\n').map_or(tail.len(), |i| i + 1),
        };
        mneme_store::atomic::write_atomic(&self.path, &tail[start..])
    }

    /// The newest `limit` records, newest first, optionally for one job kind.
    /// Read from the end of the file back, a chunk at a time, until `limit` are found.
    pub fn recent(&self, limit: usize, job: Option<JobKind>) -> Result<Vec<RunRecord>, RunLogError> {
        let err = |source| RunLogError::Read { path: self.path.clone(), source };
        // Opened without waiting on a FIFO, and read only as a plain file: the Runs screen and
        // `mneme runs` would otherwise hang on one.
        let mut f = match mneme_store::open::open_no_wait(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(err(source)),
        };
        let mut pos = plain(&f).map_err(err)?.len();
        // Never more than [`MAX_READ_BYTES`] from the end, however large the file says it is.
        let floor = pos.saturating_sub(MAX_READ_BYTES);
        let mut out = Vec::new();
        // The start of a line whose beginning is in a chunk not read yet.
        let mut rest: Vec<u8> = Vec::new();
        while pos > floor && out.len() < limit {
            let n = CHUNK.min(pos - floor);
            pos -= n;
            let mut buf = vec![0u8; n as usize];
            f.seek(SeekFrom::Start(pos)).and_then(|_| f.read_exact(&mut buf)).map_err(err)?;
            buf.extend_from_slice(&rest);
            // Whole lines only: before the first newline may be the end of an earlier line.
            let first = match pos {
                0 => 0,
                _ => match buf.iter().position(|&b| b == b'\n') {
                    Some(i) => i + 1,
                    None => {
                        rest = buf;
                        continue;
                    }
                },
            };
            // Bytes, line by line: a line cut inside a character is not UTF-8, and reading the
            // file as text lines would stop there and hide every record after it.
            let found = buf[first..]
                .split(|&b| b == b'\n')
                .rev()
                .filter_map(|l| serde_json::from_slice::<RunRecord>(l).ok())
                .filter(|r| job.is_none_or(|j| r.job == j));
            out.extend(found.take(limit - out.len()));
            buf.truncate(first.saturating_sub(1));
            rest = buf;
        }
        Ok(out)
    }
}

/// The metadata of `f` when it is a plain file; otherwise an error saying what it is and what
/// to do (the run history is Mneme's own file, so anything else was put there).
fn plain(f: &std::fs::File) -> std::io::Result<std::fs::Metadata> {
    let meta = f.metadata()?;
    if meta.is_file() {
        return Ok(meta);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("it is {}, not a plain file; move it aside or delete it", mneme_store::open::kind_of(&meta)),
    ))
}

fn ends_without_newline(f: &mut std::fs::File) -> std::io::Result<bool> {
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
        RunRecord { id: id.into(), job: job.into(), target: "/m".into(), started_ms: 1, finished_ms: 2, outcome: Outcome::Done { summary: "ok".into() } }
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

    /// A run of a job a newer Mneme added (the log is shared by every build on the machine) was
    /// left out of listings: it is listed under the name the log gives it, a listing of one
    /// job this build knows leaves it out, and its line stays in the file as it was written.
    #[test]
    fn a_run_of_a_job_a_newer_mneme_added_is_listed_under_its_name_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::in_data_dir(dir.path());
        log.append(&rec("a", JobKind::Dream)).unwrap();
        let newer = r#"{"id":"b","job":"weekly-digest","target":"/m","startedMs":1,"finishedMs":2,"outcome":{"status":"done","summary":"Sent"},"digest":{"to":3}}"#;
        let mut f = OpenOptions::new().append(true).open(log.path()).unwrap();
        f.write_all(format!("{newer}\n").as_bytes()).unwrap();
        drop(f);
        log.append(&rec("c", JobKind::TeamSync)).unwrap();

        let all = log.recent(10, None).unwrap();
        assert_eq!(all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec!["c", "b", "a"]);
        assert_eq!(all[1].job, RunJob::Newer("weekly-digest".into()));
        assert_eq!(all[1].outcome, Outcome::Done { summary: "Sent".into() });
        let label = all[1].job.label();
        assert!(label.contains("weekly-digest") && label.contains("newer Mneme"), "{label}");
        assert_eq!(all[0].job.label(), "team sync");
        assert_eq!(serde_json::to_value(&all[1].job).unwrap(), "weekly-digest", "written as the log names it");
        let dreams = log.recent(10, Some(JobKind::Dream)).unwrap();
        assert_eq!(dreams.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec!["a"]);
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().nth(1), Some(newer));
    }

    /// A run whose outcome a newer Mneme added was left out of every listing: it is listed
    /// with that outcome's name (a line of a known outcome missing its fields still is not),
    /// and its line stays in the file as it was written.
    #[test]
    fn a_run_with_an_outcome_a_newer_mneme_added_is_listed_under_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::in_data_dir(dir.path());
        log.append(&rec("a", JobKind::Dream)).unwrap();
        let newer = r#"{"id":"b","job":"dream","target":"/m","startedMs":1,"finishedMs":2,"outcome":{"status":"deferred","until":5}}"#;
        let broken = r#"{"id":"c","job":"dream","target":"/m","startedMs":1,"finishedMs":2,"outcome":{"status":"done"}}"#;
        let mut f = OpenOptions::new().append(true).open(log.path()).unwrap();
        f.write_all(format!("{newer}\n{broken}\n").as_bytes()).unwrap();
        drop(f);

        let all = log.recent(10, None).unwrap();
        assert_eq!(all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec!["b", "a"]);
        assert_eq!(all[0].outcome.newer(), Some("deferred"));
        assert_eq!(all[1].outcome.newer(), None);
        assert_eq!(serde_json::to_value(&all[0].outcome).unwrap(), serde_json::json!({"status": "deferred"}));
        assert_eq!(log.recent(10, Some(JobKind::Dream)).unwrap().len(), 2);
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().nth(1), Some(newer));
        // The names a newer status may not take are exactly those of this build's outcomes.
        let own = [Outcome::Done { summary: String::new() }, Outcome::Skipped { reason: String::new() }, Outcome::Failed { error: String::new() }, Outcome::Cancelled];
        let names: Vec<String> = own.iter().map(|o| serde_json::to_value(o).unwrap()["status"].as_str().unwrap().to_string()).collect();
        assert_eq!(names, NewerStatus::KNOWN);
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

    /// Reading from the end finds the newest records across chunks, with lines that straddle
    /// two chunks whole, and reads back to the first record when asked for all.
    #[test]
    fn the_newest_records_are_read_from_the_end_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::in_data_dir(dir.path());
        let n = 3000;
        for i in 0..n {
            log.append(&rec(&format!("{i:05}"), if i % 3 == 0 { JobKind::Dream } else { JobKind::Extraction })).unwrap();
        }
        assert!(std::fs::metadata(log.path()).unwrap().len() > 3 * CHUNK, "spans several chunks");
        let ids = |v: Vec<RunRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(log.recent(3, None).unwrap()), ["02999", "02998", "02997"]);
        assert_eq!(ids(log.recent(2, Some(JobKind::Dream)).unwrap()), ["02997", "02994"]);
        let all = ids(log.recent(usize::MAX, None).unwrap());
        assert_eq!(all.len(), n);
        assert!(all.iter().rev().enumerate().all(|(i, id)| *id == format!("{i:05}")), "every record once, newest first");
    }

    /// Past its size limit the log keeps only its newest whole records.
    #[test]
    fn a_log_past_its_limit_is_cut_back_to_its_newest_records() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog { max_bytes: 20_000, keep_bytes: 10_000, ..RunLog::in_data_dir(dir.path()) };
        for i in 0..1000 {
            log.append(&rec(&format!("{i:05}"), JobKind::Dream)).unwrap();
            assert!(std::fs::metadata(log.path()).unwrap().len() <= 20_000 + 200);
        }
        let kept = log.recent(usize::MAX, None).unwrap();
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert!(text.starts_with("{\"id\":") && text.ends_with("}\n"), "whole lines only");
        assert_eq!(text.lines().count(), kept.len(), "every line a record");
        assert!(kept.len() > 40, "{}", kept.len());
        assert_eq!(kept[0].id, "00999");
        assert!(kept.windows(2).all(|w| w[0].id > w[1].id));
    }

    #[test]
    fn run_ids_sort_by_time() {
        assert!(new_run_id(5) < new_run_id(10));
        assert_ne!(new_run_id(5), new_run_id(5));
    }
}
