//! What each extraction run did, in Claude Code's words, and the per-project run log; and the
//! per-project review mode.

use crate::data;
use crate::rules::SkipReason;
use mneme_agent::{Changeset, Denial};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// The bullet Claude Code prints before a system line on Linux (`⏺` on macOS).
pub const BULLET: &str = "●";

/// `MEMORY.md`: written by a run but not counted as a memory.
const INDEX_FILE: &str = "MEMORY.md";

/// Claude Code's "Saved N memories" line (`memory_saved`): `● Saved` followed by
/// `N memory`/`N memories` (private) and `N team memory`/`N team memories`, joined by ` · `,
/// then one row per file with its base name. `None` when no memory was written.
pub fn saved_message(memory_paths: &[PathBuf], team_count: usize) -> Option<String> {
    if memory_paths.is_empty() {
        return None;
    }
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let private = memory_paths.len().saturating_sub(team_count);
    let mut parts = Vec::new();
    if private > 0 {
        parts.push(plural(private, "memory", "memories"));
    }
    if team_count > 0 {
        parts.push(plural(team_count, "team memory", "team memories"));
    }
    let mut out = format!("{BULLET} Saved {}", parts.join(" \u{b7} "));
    for p in memory_paths {
        out.push('\n');
        out.push_str(&p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
    }
    Some(out)
}

/// The run's line: Claude Code's "Saved N memories" ([`saved_message`]) when the run removed
/// nothing; a run that removed memories ("forget …") says so and names them, so a run that
/// only removed files never reads as one that saved something. `None` when the run wrote and
/// removed no memory.
pub fn run_message(memory_paths: &[PathBuf], team_count: usize, removed: &[PathBuf]) -> Option<String> {
    let removed: Vec<&PathBuf> = removed.iter().filter(|p| p.file_name().is_none_or(|n| n != INDEX_FILE)).collect();
    if removed.is_empty() {
        return saved_message(memory_paths, team_count);
    }
    let plural = |n: usize| format!("{n} {}", if n == 1 { "memory" } else { "memories" });
    let base = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut out = match saved_message(memory_paths, team_count) {
        Some(saved) => {
            let (head, rows) = saved.split_once('\n').unwrap_or((saved.as_str(), ""));
            format!("{head} \u{b7} removed {}\n{rows}", plural(removed.len()))
        }
        None => format!("{BULLET} Removed {}", plural(removed.len())),
    };
    for p in removed {
        out.push_str(&format!("\nremoved {}", base(p)));
    }
    Some(out)
}

/// Claude Code's split of a run's written paths: the memories (every path whose base name is
/// not `MEMORY.md`, in order, deduplicated) and how many of them are team memories.
pub fn memory_paths(written: &[PathBuf], memory_dir: &Path) -> (Vec<PathBuf>, usize) {
    let mut seen = std::collections::HashSet::new();
    let memories: Vec<PathBuf> = written
        .iter()
        .filter(|p| p.file_name().is_none_or(|n| n != INDEX_FILE))
        .filter(|p| seen.insert((*p).clone()))
        .cloned()
        .collect();
    let team = memory_dir.join("team");
    let team_count = memories.iter().filter(|p| p.starts_with(&team)).count();
    (memories, team_count)
}

/// What set a run off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Trigger {
    /// The end of a query loop in a watched session.
    TurnEnd,
    /// The one trailing run for turns that ended while the previous run was going.
    Trailing,
    /// Asked for (`mneme extract`, the app).
    Requested,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum RunOutcome {
    /// Memories were written to the memory folder (automatic mode).
    Saved,
    /// Changes wait in the inbox (review mode); nothing was written.
    Staged { inbox_id: String },
    /// The run found nothing worth saving.
    NothingToSave,
    /// Not run, by Claude Code's rules (the cursor moved for a direct write or no prose).
    Skipped { reason: SkipReason },
    /// Not run: extraction is off for this project, or auto memory is off.
    Disabled { why: String },
    /// The run failed; the cursor stayed, so these messages are offered again.
    Failed { error: String },
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub id: String,
    /// When it started: milliseconds since the epoch and ISO 8601.
    pub started_ms: u64,
    pub started_at: String,
    /// What the run is about; its fields sit beside the others in the log's JSON.
    #[serde(flatten)]
    pub about: RunAbout,
    pub outcome: RunOutcome,
    /// Files the run wrote (Claude Code's `writtenPaths`).
    pub written_paths: Vec<PathBuf>,
    /// The memories among them (not `MEMORY.md`).
    pub memory_paths: Vec<PathBuf>,
    pub team_count: usize,
    /// `● Saved 2 memories` and the files, as Claude Code shows it.
    pub message: Option<String>,
    /// Every change, before and after, so a run can be reviewed and undone.
    pub changeset: Option<Changeset>,
    /// The agent's turns and refused tool calls (model runs).
    pub turns: u32,
    pub denials: Vec<Denial>,
    /// The offline extractor's decision per statement.
    pub decisions: Vec<crate::offline::Decision>,
    /// Messages after the cursor that were not read: the transcript holds more since then than
    /// one run holds. Absent when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<LeftOut>,
}

/// What a run is about, known before it does anything ([`RunRecord::nothing_done`]): part of
/// every [`RunRecord`], once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAbout {
    pub memory_dir: PathBuf,
    pub project_root: PathBuf,
    pub session_id: Option<String>,
    pub transcript: PathBuf,
    pub trigger: Trigger,
    /// `offline`, or the provider kind (`anthropic`, `openai`, `claude-cli`).
    pub engine: String,
    pub model: Option<String>,
    /// Claude Code's `newMessageCount`.
    pub new_message_count: usize,
}

impl RunRecord {
    /// A run started at `started_ms` (ms since the epoch) that has written, decided and
    /// refused nothing yet: a fresh id, `about`, and `outcome`. A run that did something sets
    /// those fields on it; one that ended before (off, skipped, failed) is recorded as it is.
    pub fn nothing_done(started_ms: u128, about: RunAbout, outcome: RunOutcome) -> RunRecord {
        RunRecord {
            id: data::new_id(started_ms),
            started_ms: started_ms as u64,
            started_at: mneme_core::text::iso8601_millis(started_ms as i128),
            about,
            outcome,
            written_paths: Vec::new(),
            memory_paths: Vec::new(),
            team_count: 0,
            message: None,
            changeset: None,
            turns: 0,
            denials: Vec::new(),
            decisions: Vec::new(),
            left_out: None,
        }
    }
}

/// The oldest messages since the last extraction that a run did not read, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOut {
    /// User and assistant messages of the main thread, after the cursor, let go unread.
    pub messages: usize,
    /// The most of a transcript's entries a run holds, in bytes
    /// ([`crate::transcript::HELD_LIMIT_BYTES`]).
    pub limit_bytes: u64,
}

impl LeftOut {
    /// `None` when no message was left out.
    pub fn of(messages: usize, limit_bytes: usize) -> Option<LeftOut> {
        (messages > 0).then_some(LeftOut { messages, limit_bytes: limit_bytes as u64 })
    }
}

impl LeftOut {
    /// The same for a session-notes update, which reads the whole conversation rather than
    /// what came after the extraction cursor.
    pub fn notes_sentence(&self) -> String {
        let n = self.messages;
        format!(
            "{n} older {} not read: a notes update holds only the newest {} of a transcript's entries, and this conversation is longer than that, so the notes are written from its newer part",
            if n == 1 { "message was" } else { "messages were" },
            mneme_store::open::size_words(self.limit_bytes)
        )
    }
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.messages;
        write!(
            f,
            "{n} older {} not read: a run holds only the newest {} of a transcript's entries, and this session has more than that after where extraction last stopped (or since it began)",
            if n == 1 { "message was" } else { "messages were" },
            mneme_store::open::size_words(self.limit_bytes)
        )
    }
}

/// The run log of one memory folder, newest last: the older log, then the current one.
pub fn runs(data_dir: &Path, memory_dir: &Path) -> io::Result<Vec<RunRecord>> {
    let path = runs_path(data_dir, memory_dir);
    let mut all: Vec<RunRecord> = data::read_jsonl(&older_log(&path))?;
    all.extend(data::read_jsonl::<RunRecord>(&path)?);
    Ok(all)
}

pub(crate) fn runs_path(data_dir: &Path, memory_dir: &Path) -> PathBuf {
    data::project_dir(data_dir, memory_dir).join("runs.jsonl")
}

/// Where the log goes once it passes [`MAX_LOG_BYTES`] (`runs.1.jsonl`, replacing the one
/// before): at most two logs' worth of runs are kept.
fn older_log(path: &Path) -> PathBuf {
    path.with_file_name("runs.1.jsonl")
}

/// How large the run log grows before it is rotated. A run with its changeset is tens of
/// kilobytes: some hundreds of runs each side, where 10,000 runs once made a 337 MB log.
pub const MAX_LOG_BYTES: u64 = 16 * 1024 * 1024;

/// The newest `limit` runs of one memory folder, newest first, read from the end of the log.
pub fn recent_runs(data_dir: &Path, memory_dir: &Path, limit: usize) -> io::Result<Vec<RunRecord>> {
    let path = runs_path(data_dir, memory_dir);
    let mut newest: Vec<RunRecord> = data::read_jsonl_tail(&path, limit)?;
    if newest.len() < limit {
        newest.extend(data::read_jsonl_tail::<RunRecord>(&older_log(&path), limit - newest.len())?);
    }
    Ok(newest)
}

pub(crate) fn append_run(data_dir: &Path, record: &RunRecord) -> io::Result<()> {
    append_run_capped(data_dir, record, MAX_LOG_BYTES)
}

/// Appends, first moving a log past `cap` bytes aside. The move is one rename: a process
/// appending to the log it opened before writes into the older log, and nothing is lost.
fn append_run_capped(data_dir: &Path, record: &RunRecord, cap: u64) -> io::Result<()> {
    let path = runs_path(data_dir, &record.about.memory_dir);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() >= cap) {
        std::fs::rename(&path, older_log(&path))?;
    }
    data::append_jsonl(&path, record)
}

/// What happens to what extraction finds, per project.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewMode {
    /// Written to the memory folder at once, as Claude Code does.
    #[default]
    Automatic,
    /// Staged in the inbox; nothing is written until the user keeps it.
    Review,
    /// Extraction does not run.
    Off,
}

impl ReviewMode {
    pub fn parse(s: &str) -> Option<ReviewMode> {
        match s {
            "automatic" => Some(ReviewMode::Automatic),
            "review" => Some(ReviewMode::Review),
            "off" => Some(ReviewMode::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReviewMode::Automatic => "automatic",
            ReviewMode::Review => "review",
            ReviewMode::Off => "off",
        }
    }
}

const MODES_FILE: &str = "modes.json";

pub(crate) fn modes_path(data_dir: &Path) -> PathBuf {
    data::extract_dir(data_dir).join(MODES_FILE)
}

/// Whether `path` is the review-modes file (which a damaged-file message explains differently).
pub(crate) fn is_modes_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == MODES_FILE) && path.parent().and_then(Path::file_name).is_some_and(|n| n == "extract")
}

/// The modes file as written: each project's mode kept as its JSON value, so one a newer Mneme
/// added (a mode this build lacks) is answered as that project's error and written back as it
/// was, instead of making every project's mode unreadable and every change fail.
type ModesFile = BTreeMap<String, serde_json::Value>;

/// One project's entry in `modes.json` that this build cannot read.
#[derive(Debug, thiserror::Error)]
#[error("the review mode of {} in {} cannot be read: {reason}. Update Mneme, or set this project's mode again (`mneme inbox mode automatic|review|off`, or the Inbox) to replace it; the other projects' modes are not affected", memory_dir.display(), path.display())]
pub struct UnreadableMode {
    pub memory_dir: PathBuf,
    pub path: PathBuf,
    /// Serde's words, naming a newer Mneme when the value is a mode this build lacks.
    pub reason: String,
}

/// The review mode of the project whose memory folder is `memory_dir` (default automatic).
/// A mode this build cannot read is an error for this project only ([`UnreadableMode`], as an
/// `io::Error` of kind `Other` so it is not reported as a damaged file).
pub fn mode(data_dir: &Path, memory_dir: &Path) -> io::Result<ReviewMode> {
    let path = modes_path(data_dir);
    let modes: ModesFile = data::read_json(&path)?.unwrap_or_default();
    let Some(value) = modes.get(&*memory_dir.to_string_lossy()) else { return Ok(ReviewMode::default()) };
    ReviewMode::deserialize(value).map_err(|e| {
        io::Error::other(UnreadableMode { memory_dir: memory_dir.to_path_buf(), path, reason: mneme_core::own_files::parse_failure(&e) })
    })
}

/// Sets the review mode of one project. Automatic, the default, is stored by removing the entry.
/// The other entries are written back as they were, a newer Mneme's modes included; this
/// project's own entry is replaced whatever it held, since the user chose its mode here.
pub fn set_mode(data_dir: &Path, memory_dir: &Path, mode: ReviewMode) -> io::Result<()> {
    let path = modes_path(data_dir);
    let mut modes: ModesFile = data::read_json(&path)?.unwrap_or_default();
    let key = memory_dir.to_string_lossy().into_owned();
    if mode == ReviewMode::Automatic {
        modes.remove(&key);
    } else {
        modes.insert(key, serde_json::Value::from(mode.as_str()));
    }
    data::write_json(&path, &modes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_message_is_claude_codes() {
        let m = Path::new("/m");
        let w = |v: &[&str]| v.iter().map(|s| m.join(s)).collect::<Vec<_>>();
        let (paths, team) = memory_paths(&w(&["user_role.md", "MEMORY.md", "feedback_testing.md", "user_role.md"]), m);
        assert_eq!(team, 0);
        assert_eq!(saved_message(&paths, team).unwrap(), "● Saved 2 memories\nuser_role.md\nfeedback_testing.md");
        let (paths, team) = memory_paths(&w(&["a.md", "team/b.md", "team/MEMORY.md"]), m);
        assert_eq!(saved_message(&paths, team).unwrap(), "● Saved 1 memory · 1 team memory\na.md\nb.md");
        let (paths, team) = memory_paths(&w(&["team/b.md", "team/c.md"]), m);
        assert_eq!(saved_message(&paths, team).unwrap(), "● Saved 2 team memories\nb.md\nc.md");
        assert_eq!(saved_message(&memory_paths(&w(&["MEMORY.md"]), m).0, 0), None);
    }

    #[test]
    fn a_run_that_removed_memories_names_them() {
        let m = Path::new("/m");
        let w = |v: &[&str]| v.iter().map(|s| m.join(s)).collect::<Vec<_>>();
        assert_eq!(run_message(&[], 0, &w(&["feedback_tests.md", "MEMORY.md"])).unwrap(), "● Removed 1 memory\nremoved feedback_tests.md");
        assert_eq!(
            run_message(&w(&["a.md"]), 0, &w(&["b.md", "c.md"])).unwrap(),
            "● Saved 1 memory · removed 2 memories\na.md\nremoved b.md\nremoved c.md"
        );
        assert_eq!(run_message(&w(&["a.md"]), 0, &[]), saved_message(&w(&["a.md"]), 0));
        assert_eq!(run_message(&[], 0, &w(&["MEMORY.md"])), None);
    }

    fn record(id: usize) -> RunRecord {
        serde_json::from_value(serde_json::json!({
            "id": id.to_string(), "startedMs": id, "startedAt": "", "memoryDir": "/m", "projectRoot": "/p", "sessionId": null,
            "transcript": "/t", "trigger": "requested", "engine": "offline", "model": null, "newMessageCount": 1,
            "outcome": {"kind": "nothingToSave"}, "writtenPaths": [], "memoryPaths": [], "teamCount": 0, "message": "x".repeat(500),
            "changeset": null, "turns": 0, "denials": [], "decisions": []
        }))
        .unwrap()
    }

    /// What a run is about is one struct ([`RunAbout`]) inside the record, but the log's lines
    /// keep the layout every earlier build wrote: the same fields, in the same order, at the top.
    #[test]
    fn a_record_is_written_as_earlier_builds_wrote_it() {
        let line = r#"{"id":"1","startedMs":1,"startedAt":"","memoryDir":"/m","projectRoot":"/p","sessionId":"s","transcript":"/t","trigger":"turnEnd","engine":"anthropic","model":"m","newMessageCount":3,"outcome":{"kind":"saved"},"writtenPaths":[],"memoryPaths":[],"teamCount":0,"message":null,"changeset":null,"turns":2,"denials":[],"decisions":[]}"#;
        let r: RunRecord = serde_json::from_str(line).unwrap();
        assert_eq!((r.about.session_id.as_deref(), r.about.trigger, r.about.new_message_count), (Some("s"), Trigger::TurnEnd, 3));
        assert_eq!(serde_json::to_string(&r).unwrap(), line);
    }

    #[test]
    fn the_run_log_is_capped_and_read_from_its_end() {
        let d = tempfile::tempdir().unwrap();
        let m = Path::new("/m");
        for i in 0..100 {
            append_run_capped(d.path(), &record(i), 10_000).unwrap();
        }
        let path = runs_path(d.path(), m);
        // Two logs of about the cap each, whatever the number of runs.
        for p in [path.clone(), older_log(&path)] {
            let len = std::fs::metadata(&p).unwrap().len();
            assert!(len < 10_000 + 2_000, "{} is {len} bytes", p.display());
        }
        let ids = |v: Vec<RunRecord>| v.into_iter().map(|r| r.started_ms).collect::<Vec<_>>();
        assert_eq!(ids(recent_runs(d.path(), m, 3).unwrap()), [99, 98, 97]);
        // Past the current log's start, into the older one.
        let current = data::read_jsonl::<RunRecord>(&path).unwrap().len();
        let many = ids(recent_runs(d.path(), m, current + 2).unwrap());
        assert_eq!(many, (0..current as u64 + 2).map(|i| 99 - i).collect::<Vec<_>>());
        assert_eq!(ids(runs(d.path(), m).unwrap()).last(), Some(&99));
    }

    #[test]
    fn modes_default_to_automatic_and_persist() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (Path::new("/a/memory"), Path::new("/b/memory"));
        assert_eq!(mode(d.path(), a).unwrap(), ReviewMode::Automatic);
        set_mode(d.path(), a, ReviewMode::Review).unwrap();
        set_mode(d.path(), b, ReviewMode::Off).unwrap();
        assert_eq!((mode(d.path(), a).unwrap(), mode(d.path(), b).unwrap()), (ReviewMode::Review, ReviewMode::Off));
        set_mode(d.path(), a, ReviewMode::Automatic).unwrap();
        assert_eq!(mode(d.path(), a).unwrap(), ReviewMode::Automatic);
        assert_eq!(ReviewMode::parse("review"), Some(ReviewMode::Review));
        assert_eq!(ReviewMode::parse("sometimes"), None);
    }
}
