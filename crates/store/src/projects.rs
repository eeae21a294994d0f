//! Project discovery: every folder under `<config>/projects/` (and under
//! `<memory base>/projects/` when `CLAUDE_CODE_REMOTE_MEMORY_DIR` moves memory elsewhere),
//! with the real project folder recovered, its memory and transcripts counted, and whether
//! the project still exists.
//!
//! Folder names are lossy (`/a/b` and `/a-b` both become `-a-b`), so the real folder is
//! recovered from evidence and always checked by sanitizing it again:
//! 1. the `"cwd"` fields in the folder's newest transcripts (first 64 KiB of each, as Claude
//!    Code's own lite readers do);
//! 2. the keys of `projects` in the global config (`~/.claude.json`);
//! 3. the canonical git roots and parent folders of every transcript `cwd` found anywhere,
//!    which recovers memory-only folders (memory is keyed by the git root, transcripts by the
//!    launch folder).
//!
//! Project folders may be on a drive that stopped answering (a network share whose server went
//! away, a hung USB stick), where any look blocks until it answers, possibly for ever. So every
//! look at a project folder goes through [`crate::drive::look_at_each`], one look per drive for
//! all the projects on it, and a folder whose drive does not answer is counted as present and
//! said to be not answering ([`ProjectInfo::drive_not_answering`]), never as orphaned: someone
//! could delete an orphan's memory.
//!
//! Claude Code's own folders (`CLAUDE_CONFIG_DIR` with its `projects/` and `.claude.json`, and
//! the remote memory base) may be on such a drive too: they are read through the same bounded
//! looks (one per drive, a patience per answer), and one whose drive does not answer fails the
//! whole discovery with [`OwnFolderNotAnswering`], since without it there is nothing to list.
//! Before, they were read on the caller's thread, and a config folder on a hung share froze the
//! Projects screen, `mneme projects` and the scheduler's start until the drive answered.

use crate::drive;
use crate::env::Environment;
use crate::git;
use crate::paths::{is_session_id, node_normalize, read_global_config, AUTO_MEM_DIRNAME, ENTRYPOINT_NAME};
use crate::settings::read_head;
use mneme_core::sanitize::{long_name_prefix, sanitize_path};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// `LITE_READ_BUF_SIZE`: how much of a transcript's head Claude Code's lite readers look at.
pub const TRANSCRIPT_HEAD_BYTES: u64 = 64 * 1024;
/// How many of a folder's newest transcripts are read to recover the project path.
pub const TRANSCRIPTS_SAMPLED: usize = 3;
/// Deepest folder level counted inside a memory folder; guards against symlink loops and
/// pathological trees.
const MAX_MEMORY_DEPTH: usize = 32;

/// How the real project folder was recovered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum PathEvidence {
    /// A `"cwd"` in one of this folder's transcripts.
    Transcript,
    /// A key of `projects` in the global config.
    GlobalConfig,
    /// The git root or a parent folder of a `"cwd"` seen in another folder's transcripts.
    RelatedTranscript,
    /// No record names it, but an existing folder on disk sanitizes to this name.
    FilesystemSearch,
}

/// Folders visited at most when searching the disk for a project folder: the search follows
/// only names whose sanitized form is a prefix of the target, so it stays small, but a
/// pathological tree must not stall discovery.
const MAX_SEARCH_DIRS: usize = 20_000;

/// Finds an existing folder whose sanitized path is exactly `name`, by walking down from `/`
/// and descending only into children whose sanitized path is a prefix of `name` followed by
/// `-`. The sanitizer is lossy, so this is the last resort after the records Claude Code
/// keeps (transcripts, the global config); long hashed names are not searched. A folder on a
/// drive that does not answer is not entered ([`Drives`]); the search then says
/// [`Search::NotAnswering`] unless it found the folder elsewhere.
fn search_filesystem(name: &str, drives: &mut Drives) -> Search {
    if name.len() > mneme_core::sanitize::MAX_SANITIZED_LENGTH || !name.starts_with('-') {
        return Search::Missing;
    }
    let mut budget = MAX_SEARCH_DIRS;
    let mut blocked = false;
    let mut stack = vec![PathBuf::from("/")];
    while let Some(dir) = stack.pop() {
        if !drives.answers(&dir) {
            blocked = true;
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut children = Vec::new();
        for e in entries.flatten() {
            // Only real folders: following symlinks could loop and would find an alias, not
            // the folder Claude Code recorded (it realpaths the cwd).
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let child = e.path();
            let s = sanitize_path(&child.to_string_lossy());
            if s == name {
                return Search::Found(child);
            }
            if name.starts_with(&s) && name.as_bytes().get(s.len()) == Some(&b'-') {
                children.push(child);
            }
        }
        for c in children {
            let Some(left) = budget.checked_sub(1) else { return if blocked { Search::NotAnswering } else { Search::Missing } };
            budget = left;
            stack.push(c);
        }
    }
    if blocked { Search::NotAnswering } else { Search::Missing }
}

/// What [`search_filesystem`] found.
#[derive(Debug, PartialEq, Eq)]
enum Search {
    Found(PathBuf),
    Missing,
    /// Not found where it could look, and some folder it would have entered is on a drive that
    /// did not answer: the folder may well be there.
    NotAnswering,
}

/// Which drives answer, asked once per drive during one discovery (`statfs` through
/// [`drive::answers`], at most its patience each) so the disk search never enters a hung one.
struct Drives {
    mounts: Vec<PathBuf>,
    asked: HashMap<PathBuf, bool>,
}

impl Drives {
    fn new() -> Drives {
        Drives { mounts: drive::mount_points(), asked: HashMap::new() }
    }

    fn answers(&mut self, dir: &Path) -> bool {
        let mount = drive::holding_mount(&self.mounts, dir);
        *self.asked.entry(mount).or_insert_with_key(|m| drive::answers(m))
    }
}

/// What a look at a candidate project folder found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Folder,
    Missing,
    /// Its drive did not answer in time.
    NotAnswering,
}

/// One project folder as Claude Code left it on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct ProjectInfo {
    /// The sanitized folder name, e.g. `-home-alice-code-app`.
    pub folder_name: String,
    /// The folder: `<config>/projects/<name>` when it exists, else the one under the memory base.
    pub folder: PathBuf,
    /// The real project folder, when it could be recovered.
    pub project_path: Option<PathBuf>,
    /// How [`Self::project_path`] was recovered.
    pub evidence: Option<PathEvidence>,
    /// Whether the recovered project folder was looked at and exists; false also while its
    /// drive is not answering (see [`Self::drive_not_answering`]), so nothing looks there.
    pub project_exists: bool,
    /// A folder whose project no longer exists or could not be recovered; never one whose
    /// drive is not answering.
    pub orphaned: bool,
    /// The drive holding the project folder did not answer in time (a network share or USB
    /// drive that hangs): the folder is counted as present but was not looked at, and is
    /// looked at again at the next discovery.
    pub drive_not_answering: bool,
    /// The auto-memory folder, when `memory/` exists.
    pub memory_dir: Option<PathBuf>,
    /// Whether `memory/MEMORY.md` exists.
    pub has_memory_index: bool,
    /// `*.md` files at any depth in the memory folder, except those named `MEMORY.md`.
    pub topic_count: usize,
    /// Session transcripts (`<uuid>.jsonl`) in the folder.
    pub transcript_count: usize,
    /// Newest modification time of the memory files and transcripts, in milliseconds since
    /// the Unix epoch; `None` when there are none.
    pub last_modified_ms: Option<i64>,
}

/// Where a folder name was found.
#[derive(Default)]
struct Found {
    config: Option<PathBuf>,
    memory: Option<PathBuf>,
}

/// What a folder's own transcripts say.
struct TranscriptScan {
    count: usize,
    newest_ms: Option<i64>,
    cwds: Vec<String>,
}

/// One of Claude Code's own folders, which discovery reads before any project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnFolder {
    /// `<config>/projects` (`CLAUDE_CONFIG_DIR`, else `~/.claude`): transcripts and memory.
    Projects,
    /// `<memory base>/projects` when `CLAUDE_CODE_REMOTE_MEMORY_DIR` moves memory elsewhere.
    RemoteMemory,
    /// The global config (`.claude.json`), whose `projects` keys name project folders.
    GlobalConfig,
}

/// Discovery could not read one of Claude Code's own folders: its drive gave no answer within
/// `drive::PATIENCE` (a network share whose server went away, a USB stick or FUSE mount that
/// hangs). Nothing is listed: every project is found there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.says())]
pub struct OwnFolderNotAnswering {
    /// The folder (or, for the global config, the file) that was being read.
    pub path: PathBuf,
    pub which: OwnFolder,
}

impl OwnFolderNotAnswering {
    fn says(&self) -> String {
        let what = match self.which {
            OwnFolder::Projects => "Claude Code's configuration folder (CLAUDE_CONFIG_DIR)",
            OwnFolder::RemoteMemory => "Claude Code's memory folder (CLAUDE_CODE_REMOTE_MEMORY_DIR)",
            OwnFolder::GlobalConfig => "Claude Code's global config",
        };
        format!(
            "The drive holding {what} {} is not answering (a network share whose server went away, or a USB stick or mounted folder that hangs), so Claude Code's projects cannot be listed.",
            self.path.display()
        )
    }
}

/// Lists every project folder Claude Code created, newest change first (folders with no
/// files last, then by name). Claude Code's own folders are read through bounded looks
/// ([`drive::look_at_each`], [`drive::look`]), so a drive holding them that does not answer
/// ends the discovery with an error after its patience instead of holding the caller.
pub fn discover_projects(env: &Environment) -> Result<Vec<ProjectInfo>, OwnFolderNotAnswering> {
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    let config_projects = env.projects_dir();
    let memory_projects = env.memory_base().join("projects");
    let remote = memory_projects != config_projects;
    let not_answering = |path: &Path, which| OwnFolderNotAnswering { path: path.to_path_buf(), which };
    let roots: Vec<(PathBuf, OwnFolder)> = std::iter::once((config_projects.clone(), OwnFolder::Projects))
        .chain(remote.then(|| (memory_projects.clone(), OwnFolder::RemoteMemory)))
        .collect();
    let listings = drive::look_at_each(&roots.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(), list_folders);
    for ((root, which), listing) in roots.iter().zip(listings) {
        let listing = listing.ok_or_else(|| not_answering(root, *which))?;
        for (name, path) in listing {
            let slot = found.entry(name).or_default();
            if *which == OwnFolder::Projects {
                slot.config = Some(path);
            } else if slot.memory.is_none() {
                slot.memory = Some(path);
            }
        }
    }

    // Each folder's transcripts, then each memory folder, looked at a drive at a time (a drive
    // that answered the listing may stop answering in the middle).
    let with_transcripts: Vec<PathBuf> = found.values().filter_map(|f| f.config.clone()).collect();
    let mut transcripts = drive::look_at_each(&with_transcripts, scan_transcripts).into_iter();
    let mut scans: BTreeMap<&String, TranscriptScan> = BTreeMap::new();
    for (name, f) in &found {
        let scan = match f.config {
            Some(_) => transcripts.next().flatten().ok_or_else(|| not_answering(&config_projects, OwnFolder::Projects))?,
            None => TranscriptScan { count: 0, newest_ms: None, cwds: Vec::new() },
        };
        scans.insert(name, scan);
    }
    // With a remote memory base the memory lives there; otherwise beside the transcripts.
    let memory_dirs: Vec<(&String, PathBuf)> = found
        .iter()
        .filter_map(|(name, f)| if remote { f.memory.as_ref() } else { f.config.as_ref() }.map(|p| (name, p.join(AUTO_MEM_DIRNAME))))
        .collect();
    let (memory_root, memory_which) = if remote { (&memory_projects, OwnFolder::RemoteMemory) } else { (&config_projects, OwnFolder::Projects) };
    let mut memories: HashMap<&String, (PathBuf, MemoryScan, bool)> = HashMap::new();
    let looked = drive::look_at_each(&memory_dirs.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>(), scan_memory_dir);
    for ((name, dir), seen) in memory_dirs.into_iter().zip(looked) {
        if let Some((scan, has_index)) = seen.ok_or_else(|| not_answering(memory_root, memory_which))? {
            memories.insert(name, (dir, scan, has_index));
        }
    }
    let global_config = env.global_config_path();
    let config_keys = {
        let env = env.clone();
        drive::look(&global_config, move |_| global_config_project_keys(&env)).ok_or_else(|| not_answering(&global_config, OwnFolder::GlobalConfig))?
    };
    let related = related_candidates(scans.values().flat_map(|s| s.cwds.iter()));
    // Every folder any name could be recovered to, looked at once, a drive at a time.
    let candidates: Vec<PathBuf> = {
        let every = scans.values().flat_map(|s| s.cwds.iter()).chain(&config_keys).chain(&related);
        let names_one = |c: &String| {
            found.contains_key(&sanitize_path(c)) || long_name_prefix(c).is_some_and(|p| found.keys().any(|n| n.starts_with(&p)))
        };
        let mut named: Vec<&String> = every.filter(|c| names_one(c)).collect();
        named.sort();
        named.dedup();
        named.into_iter().map(PathBuf::from).collect()
    };
    let seen: HashMap<PathBuf, Seen> = candidates
        .iter()
        .cloned()
        .zip(drive::look_at_each(&candidates, |p| p.is_dir()))
        .map(|(p, is_dir)| (p, is_dir.map_or(Seen::NotAnswering, |d| if d { Seen::Folder } else { Seen::Missing })))
        .collect();
    let mut drives = Drives::new();

    let mut out: Vec<ProjectInfo> = found
        .iter()
        .map(|(name, f)| {
            let scan = &scans[name];
            let folder = f.config.clone().or_else(|| f.memory.clone()).unwrap_or_default();
            let (memory_dir, memory, has_memory_index) = match memories.remove(name) {
                Some((dir, scan, has_index)) => (Some(dir), scan, has_index),
                None => (None, MemoryScan::default(), false),
            };

            let (project_path, evidence, state) = recover_path(name, &scan.cwds, &config_keys, &related, &seen, &mut drives);
            let project_exists = state == Seen::Folder;
            let drive_not_answering = state == Seen::NotAnswering;
            ProjectInfo {
                folder_name: name.clone(),
                folder,
                project_path,
                evidence,
                project_exists,
                orphaned: !project_exists && !drive_not_answering,
                drive_not_answering,
                has_memory_index,
                memory_dir,
                topic_count: memory.topics,
                transcript_count: scan.count,
                last_modified_ms: max_opt(memory.newest_ms, scan.newest_ms),
            }
        })
        .collect();
    out.sort_by(|a, b| b.last_modified_ms.cmp(&a.last_modified_ms).then_with(|| a.folder_name.cmp(&b.folder_name)));
    Ok(out)
}

/// The sub-folders of one of Claude Code's `projects` folders, by name (names that are not
/// UTF-8 are not Claude Code's); none when it is missing.
fn list_folders(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| Some((entry.file_name().into_string().ok()?, entry.path())))
        .filter(|(_, path)| path.is_dir())
        .collect()
}

/// A memory folder's topics, newest change and whether it holds `MEMORY.md`; `None` when
/// there is no such folder.
fn scan_memory_dir(dir: &Path) -> Option<(MemoryScan, bool)> {
    dir.is_dir().then(|| (scan_memory(dir), dir.join(ENTRYPOINT_NAME).is_file()))
}

fn max_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn mtime_ms(t: SystemTime) -> Option<i64> {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).ok(),
        Err(before) => i64::try_from(before.duration().as_millis()).ok().map(|ms| -ms),
    }
}

/// Counts `<uuid>.jsonl` files and reads the `"cwd"` values from the newest few.
fn scan_transcripts(folder: &Path) -> TranscriptScan {
    let mut scan = TranscriptScan { count: 0, newest_ms: None, cwds: Vec::new() };
    let Ok(entries) = fs::read_dir(folder) else { return scan };
    let mut transcripts: Vec<(Option<i64>, PathBuf)> = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(stem) = name.strip_suffix(".jsonl") else { continue };
        if !is_session_id(stem) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let ms = meta.modified().ok().and_then(mtime_ms);
        scan.newest_ms = max_opt(scan.newest_ms, ms);
        transcripts.push((ms, entry.path()));
    }
    scan.count = transcripts.len();
    transcripts.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for (_, path) in transcripts.iter().take(TRANSCRIPTS_SAMPLED) {
        let Ok(head) = read_head(path, TRANSCRIPT_HEAD_BYTES) else { continue };
        for cwd in extract_json_string_fields(&String::from_utf8_lossy(&head), "cwd") {
            if !scan.cwds.contains(&cwd) {
                scan.cwds.push(cwd);
            }
        }
    }
    scan
}

#[derive(Default)]
struct MemoryScan {
    topics: usize,
    newest_ms: Option<i64>,
}

/// Counts topic files and finds the newest `.md` in a memory folder, like `scanMemoryFiles`
/// (recursive, `*.md`, basename not `MEMORY.md`). Symlinks are not followed.
fn scan_memory(dir: &Path) -> MemoryScan {
    let mut scan = MemoryScan::default();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((current, depth)) = stack.pop() {
        let Ok(entries) = fs::read_dir(&current) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if depth < MAX_MEMORY_DEPTH {
                    stack.push((entry.path(), depth + 1));
                }
                continue;
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !kind.is_file() || !name.ends_with(".md") {
                continue;
            }
            if name != ENTRYPOINT_NAME {
                scan.topics += 1;
            }
            let ms = entry.metadata().ok().and_then(|m| m.modified().ok()).and_then(mtime_ms);
            scan.newest_ms = max_opt(scan.newest_ms, ms);
        }
    }
    scan
}

/// Every value of a top-level-looking `"key":"…"` or `"key": "…"` in raw JSONL text, decoded,
/// in order of appearance. Works on a truncated head, like Claude Code's
/// `extractJsonStringField`: a value cut off by the buffer end is skipped.
pub fn extract_json_string_fields(text: &str, key: &str) -> Vec<String> {
    let mut hits: Vec<(usize, String)> = Vec::new();
    for pattern in [format!("\"{key}\":\""), format!("\"{key}\": \"")] {
        let mut from = 0;
        while let Some(found) = text[from..].find(&pattern) {
            let start = from + found + pattern.len();
            let bytes = text.as_bytes();
            let mut i = start;
            let mut end = None;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 2,
                    b'"' => {
                        end = Some(i);
                        break;
                    }
                    _ => i += 1,
                }
            }
            match end {
                Some(e) => {
                    hits.push((start, unescape_json_string(&text[start..e])));
                    from = e + 1;
                }
                None => break,
            }
        }
    }
    hits.sort_by_key(|(pos, _)| *pos);
    hits.into_iter().map(|(_, v)| v).collect()
}

/// `unescapeJsonString`: decodes JSON escapes (including surrogate pairs); text that does not
/// decode is returned as it was.
fn unescape_json_string(raw: &str) -> String {
    if !raw.contains('\\') {
        return raw.to_string();
    }
    serde_json::from_str::<String>(&format!("\"{raw}\"")).unwrap_or_else(|_| raw.to_string())
}

fn global_config_project_keys(env: &Environment) -> Vec<String> {
    match read_global_config(env) {
        Ok(Some(cfg)) => {
            cfg.get("projects").and_then(|p| p.as_object()).map(|m| m.keys().cloned().collect()).unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// The git roots and parent folders of every transcript `cwd`, nearest first. A `cwd` whose
/// drive does not answer gives its parents only (they are known without a look).
fn related_candidates<'a>(cwds: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut unique: Vec<&String> = Vec::new();
    for cwd in cwds {
        if !unique.contains(&cwd) {
            unique.push(cwd);
        }
    }
    let roots = drive::look_at_each(&unique.iter().map(PathBuf::from).collect::<Vec<_>>(), git::find_canonical_git_root);
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: String| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    for (cwd, root) in unique.into_iter().zip(roots) {
        if let Some(Some(root)) = root {
            push(root.to_string_lossy().into_owned());
        }
        let mut dir = node_normalize(cwd);
        loop {
            let parent = node_normalize(&format!("{dir}/.."));
            if parent == dir || parent == "/" || parent == "." {
                break;
            }
            push(parent.clone());
            dir = parent;
        }
    }
    out
}

/// Whether sanitizing `path` gives `folder` (exactly, or, with `by_prefix`, by the long-name
/// prefix every runtime's name for it starts with).
fn names_folder(folder: &str, path: &str, by_prefix: bool) -> bool {
    sanitize_path(path) == folder || (by_prefix && long_name_prefix(path).is_some_and(|p| folder.starts_with(&p)))
}

/// Picks the real folder for `name`: strongest evidence first, and within the same evidence a
/// folder that exists over one whose drive does not answer over one that does not exist. A
/// folder whose drive does not answer is taken over weaker evidence: it is most likely there.
/// `seen` holds the looks at every candidate.
fn recover_path(
    name: &str,
    own_cwds: &[String],
    config_keys: &[String],
    related: &[String],
    seen: &HashMap<PathBuf, Seen>,
    drives: &mut Drives,
) -> (Option<PathBuf>, Option<PathEvidence>, Seen) {
    let tiers: [(&[String], PathEvidence); 3] = [
        (own_cwds, PathEvidence::Transcript),
        (config_keys, PathEvidence::GlobalConfig),
        (related, PathEvidence::RelatedTranscript),
    ];
    let mut fallback: Option<(PathBuf, PathEvidence)> = None;
    // A name's hash suffix told exactly first: two long paths that share their first 200
    // characters (deep siblings in a monorepo) share the prefix, and only the suffix tells
    // whose folder this is. The prefix alone is for names another runtime hashed differently.
    for by_prefix in [false, true] {
        for (candidates, evidence) in tiers {
            let mut not_answering = None;
            for candidate in candidates.iter().filter(|c| names_folder(name, c, by_prefix)) {
                let path = PathBuf::from(candidate);
                // Every candidate was looked at; one missing from the looks is looked at as
                // not answering rather than on this thread.
                match seen.get(&path).copied().unwrap_or(Seen::NotAnswering) {
                    Seen::Folder => return (Some(path), Some(evidence), Seen::Folder),
                    Seen::NotAnswering => {
                        not_answering.get_or_insert(path);
                    }
                    Seen::Missing => {
                        fallback.get_or_insert((path, evidence));
                    }
                }
            }
            if let Some(path) = not_answering {
                return (Some(path), Some(evidence), Seen::NotAnswering);
            }
        }
        // An exact name whose folder is gone still beats another path that only shares its
        // prefix.
        if fallback.is_some() {
            break;
        }
    }
    match fallback {
        Some((p, e)) => (Some(p), Some(e), Seen::Missing),
        None => match search_filesystem(name, drives) {
            Search::Found(p) => (Some(p), Some(PathEvidence::FilesystemSearch), Seen::Folder),
            Search::Missing => (None, None, Seen::Missing),
            Search::NotAnswering => (None, None, Seen::NotAnswering),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filetime::{set_file_mtime, FileTime};
    use serde_json::json;

    const S1: &str = "11111111-1111-4111-8111-111111111111";
    const S2: &str = "22222222-2222-4222-8222-222222222222";
    const S3: &str = "33333333-3333-4333-8333-333333333333";

    struct World {
        _t: tempfile::TempDir,
        root: PathBuf,
        env: Environment,
    }

    fn world() -> World {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let env = Environment::with_home(root.join("home"))
            .set_var("CLAUDE_CONFIG_DIR", root.join("home/.claude").to_str().unwrap());
        fs::create_dir_all(root.join("home/.claude/projects")).unwrap();
        World { _t: t, root, env }
    }

    impl World {
        fn folder(&self, project: &Path) -> PathBuf {
            self.env.projects_dir().join(sanitize_path(project.to_str().unwrap()))
        }

        fn transcript(&self, project: &Path, session: &str, cwd_json: &str, secs: i64) -> PathBuf {
            let dir = self.folder(project);
            fs::create_dir_all(&dir).unwrap();
            let p = dir.join(format!("{session}.jsonl"));
            let line1 = r#"{"type":"file-history-snapshot","messageId":"x"}"#;
            let line2 = format!(
                r#"{{"parentUuid":null,"isSidechain":false,"cwd":{cwd_json},"sessionId":"{session}","type":"user"}}"#
            );
            fs::write(&p, format!("{line1}\n{line2}\n")).unwrap();
            set_file_mtime(&p, FileTime::from_unix_time(secs, 0)).unwrap();
            p
        }

        fn memory(&self, folder_name: &str, files: &[(&str, i64)]) -> PathBuf {
            let mem = self.env.projects_dir().join(folder_name).join("memory");
            for (rel, secs) in files {
                let p = mem.join(rel);
                fs::create_dir_all(p.parent().unwrap()).unwrap();
                fs::write(&p, "x").unwrap();
                set_file_mtime(&p, FileTime::from_unix_time(*secs, 0)).unwrap();
            }
            fs::create_dir_all(&mem).unwrap();
            mem
        }
    }

    #[test]
    fn extracts_and_unescapes_cwd() {
        let cases: &[(&str, &[&str])] = &[
            (r#"{"cwd":"/a/b"}"#, &["/a/b"]),
            (r#"{"cwd": "/a/b"}"#, &["/a/b"]),
            (r#"{"cwd":"C:\\Users\\x"}"#, &["C:\\Users\\x"]),
            (r#"{"cwd":"/tmp/say \"hi\""}"#, &["/tmp/say \"hi\""]),
            (r#"{"cwd":"/tmp/caf\u00e9/\ud83d\ude00"}"#, &["/tmp/café/😀"]),
            (r#"{"cwd":"/tmp/π 😀"}"#, &["/tmp/π 😀"]),
            (r#"{"cwd":"/a"}{"cwd": "/b"}{"cwd":"/c"}"#, &["/a", "/b", "/c"]),
            (r#"{"oldcwd":"/x"}"#, &[]),
            (r#"{"cwd":"/cut-off"#, &[]),
            (r#"{"cwd":"/bad\q"}"#, &["/bad\\q"]),
            (r#"{"cwd":""}"#, &[""]),
        ];
        for (text, expect) in cases {
            let got = extract_json_string_fields(text, "cwd");
            let got: Vec<&str> = got.iter().map(String::as_str).collect();
            // `"oldcwd":"` still contains `cwd":"` but not `"cwd":"`, so it must not match.
            assert_eq!(got, *expect, "{text}");
        }
    }

    #[test]
    fn discovers_projects_orphans_and_counts() {
        let w = world();
        let live = w.root.join("code/My App.v2 😀");
        fs::create_dir_all(live.join(".git")).unwrap();
        let gone = w.root.join("code/deleted-project");
        let live_json = serde_json::to_string(live.to_str().unwrap()).unwrap();
        // Escaped non-ASCII in the transcript must decode to the real folder.
        let live_escaped = live_json.replace('😀', "\\ud83d\\ude00").replace(' ', "\\u0020");
        w.transcript(&live, S1, &live_escaped, 1_000);
        w.transcript(&live, S2, &live_json, 2_000);
        fs::write(w.folder(&live).join("agent-abc.jsonl"), "{}").unwrap();
        fs::create_dir_all(w.folder(&live).join(S1).join("subagents")).unwrap();
        let live_name = sanitize_path(live.to_str().unwrap());
        w.memory(
            &live_name,
            &[
                ("MEMORY.md", 1_500),
                ("user_role.md", 1_600),
                ("team/notes.md", 1_700),
                ("team/MEMORY.md", 1_800),
                ("logs/2025/01/x.txt", 9_999),
            ],
        );

        w.transcript(&gone, S3, &serde_json::to_string(gone.to_str().unwrap()).unwrap(), 3_000);
        let unknown = w.env.projects_dir().join("-nowhere-at-all");
        fs::create_dir_all(&unknown).unwrap();

        let got = discover_projects(&w.env).unwrap();
        let names: Vec<&str> = got.iter().map(|p| p.folder_name.as_str()).collect();
        assert_eq!(names, [sanitize_path(gone.to_str().unwrap()).as_str(), live_name.as_str(), "-nowhere-at-all"]);

        let g = &got[0];
        assert_eq!((g.project_path.as_deref(), g.evidence), (Some(gone.as_path()), Some(PathEvidence::Transcript)));
        assert!(!g.project_exists && g.orphaned);
        assert_eq!((g.transcript_count, g.memory_dir.as_ref(), g.last_modified_ms), (1, None, Some(3_000_000)));

        let l = &got[1];
        assert_eq!(l.project_path.as_deref(), Some(live.as_path()));
        assert!(l.project_exists && !l.orphaned);
        assert_eq!(l.transcript_count, 2, "agent-*.jsonl is not a session");
        assert_eq!(l.topic_count, 2, "user_role.md and team/notes.md");
        assert!(l.has_memory_index);
        assert_eq!(l.memory_dir.as_deref(), Some(w.folder(&live).join("memory").as_path()));
        assert_eq!(l.last_modified_ms, Some(2_000_000), "memory .md files and transcripts only");

        let u = &got[2];
        assert_eq!((u.project_path.as_ref(), u.evidence, u.orphaned, u.last_modified_ms), (None, None, true, None));

        let v = serde_json::to_value(l).unwrap();
        assert_eq!(v["folderName"], json!(live_name));
        assert_eq!(v["lastModifiedMs"], json!(2_000_000));
        assert_eq!(v["evidence"], json!("transcript"));
    }

    #[test]
    fn recovers_memory_only_folders_from_git_root_and_global_config() {
        let w = world();
        // A session started in repo/sub: transcripts under -…-repo-sub, memory under -…-repo.
        let repo = w.root.join("work/repo");
        let sub = repo.join("sub");
        fs::create_dir_all(&sub).unwrap();
        fs::create_dir_all(repo.join(".git")).unwrap();
        w.transcript(&sub, S1, &serde_json::to_string(sub.to_str().unwrap()).unwrap(), 100);
        w.memory(&sanitize_path(repo.to_str().unwrap()), &[("MEMORY.md", 50)]);
        // A lossy name: `/work/a-b` exists, `/work/a/b` does not; the existing one wins.
        let dashed = w.root.join("work/a-b");
        fs::create_dir_all(&dashed).unwrap();
        let slashed = w.root.join("work/a/b");
        w.memory(&sanitize_path(dashed.to_str().unwrap()), &[]);
        fs::write(
            w.env.global_config_path(),
            json!({"projects": {slashed.to_str().unwrap(): {}, dashed.to_str().unwrap(): {}}}).to_string(),
        )
        .unwrap();

        let got = discover_projects(&w.env).unwrap();
        let by_name = |p: &Path| got.iter().find(|i| i.folder_name == sanitize_path(p.to_str().unwrap())).unwrap();
        let r = by_name(&repo);
        assert_eq!(
            (r.project_path.as_deref(), r.evidence),
            (Some(repo.as_path()), Some(PathEvidence::RelatedTranscript))
        );
        assert!(r.has_memory_index && !r.orphaned);
        let s = by_name(&sub);
        assert_eq!((s.project_path.as_deref(), s.evidence), (Some(sub.as_path()), Some(PathEvidence::Transcript)));
        assert!(s.memory_dir.is_none());
        let d = by_name(&dashed);
        assert_eq!((d.project_path.as_deref(), d.evidence), (Some(dashed.as_path()), Some(PathEvidence::GlobalConfig)));
        assert_eq!(d.topic_count, 0);
        assert_eq!(d.last_modified_ms, None);
    }

    /// Two long paths that share their first 200 characters share a name's prefix; the hash
    /// suffix says whose folder it is, even when that folder's project is gone and the other
    /// one exists.
    #[test]
    fn a_long_name_is_given_to_the_path_its_suffix_names() {
        let w = world();
        let deep = w.root.join(format!("{}/{}", "l".repeat(120), "m".repeat(120)));
        let (a, b) = (deep.join("service-a"), deep.join("service-b"));
        fs::create_dir_all(&a).unwrap();
        let (a_name, b_name) = (sanitize_path(a.to_str().unwrap()), sanitize_path(b.to_str().unwrap()));
        assert_eq!(long_name_prefix(a.to_str().unwrap()), long_name_prefix(b.to_str().unwrap()));
        w.memory(&b_name, &[("MEMORY.md", 50)]);
        fs::write(w.env.global_config_path(), json!({"projects": {a.to_str().unwrap(): {}, b.to_str().unwrap(): {}}}).to_string()).unwrap();
        let got = discover_projects(&w.env).unwrap();
        let folder = got.iter().find(|p| p.folder_name == b_name).unwrap();
        assert_eq!(folder.project_path.as_deref(), Some(b.as_path()));
        assert!(folder.orphaned, "b is gone; a, which exists, is not taken for it");
        assert!(got.iter().all(|p| p.folder_name != a_name));
    }

    #[test]
    fn long_paths_match_by_prefix_and_remote_memory_base_merges() {
        let w = world();
        let long = w.root.join(format!("{}/{}", "l".repeat(120), "m".repeat(120)));
        fs::create_dir_all(&long).unwrap();
        let prefix = long_name_prefix(long.to_str().unwrap()).unwrap();
        // Written by another runtime: same 200-character prefix, different hash suffix.
        let folder = w.env.projects_dir().join(format!("{prefix}otherhash"));
        fs::create_dir_all(&folder).unwrap();
        let t = folder.join(format!("{S1}.jsonl"));
        fs::write(&t, format!("{{\"cwd\":{}}}\n", serde_json::to_string(long.to_str().unwrap()).unwrap())).unwrap();

        // With a remote memory base, memory for the same name lives there.
        let remote = w.root.join("remote");
        let env = w.env.clone().set_var("CLAUDE_CODE_REMOTE_MEMORY_DIR", remote.to_str().unwrap());
        let mem = remote.join("projects").join(format!("{prefix}otherhash")).join("memory");
        fs::create_dir_all(&mem).unwrap();
        fs::write(mem.join("a.md"), "x").unwrap();
        fs::create_dir_all(remote.join("projects/-remote-only")).unwrap();

        let got = discover_projects(&env).unwrap();
        assert_eq!(got.len(), 2);
        let p = got.iter().find(|p| p.folder_name.starts_with(&prefix)).unwrap();
        assert_eq!(p.project_path.as_deref(), Some(long.as_path()));
        assert_eq!(p.folder, folder);
        assert_eq!(p.memory_dir.as_deref(), Some(mem.as_path()));
        assert_eq!((p.topic_count, p.transcript_count), (1, 1));
        let r = got.iter().find(|p| p.folder_name == "-remote-only").unwrap();
        assert_eq!(r.folder, remote.join("projects/-remote-only"));
        assert!(r.orphaned);
    }

    #[test]
    fn only_the_head_of_a_transcript_is_read() {
        let w = world();
        let real = w.root.join("proj");
        fs::create_dir_all(&real).unwrap();
        let dir = w.folder(&real);
        fs::create_dir_all(&dir).unwrap();
        let filler = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(TRANSCRIPT_HEAD_BYTES as usize));
        fs::write(dir.join(format!("{S1}.jsonl")), format!("{filler}{{\"cwd\":\"{}\"}}\n", real.display())).unwrap();
        let got = discover_projects(&w.env).unwrap();
        // The cwd beyond 64 KiB is not read; the folder is still found on disk.
        assert_eq!(got[0].evidence, Some(PathEvidence::FilesystemSearch));
        assert!(!got[0].orphaned);
    }

    /// A candidate whose drive did not answer is taken as the project's folder, marked so, over
    /// weaker evidence and over a missing one, never giving an orphan; within the same
    /// evidence a folder seen to exist still wins.
    #[test]
    fn a_folder_whose_drive_does_not_answer_is_present_not_orphaned() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let seen: HashMap<PathBuf, Seen> =
            [("/a/b", Seen::NotAnswering), ("/a-b", Seen::Folder)].map(|(p, v)| (PathBuf::from(p), v)).into();
        let drives = &mut Drives::new();
        let pick = |own: &[&str], config: &[&str], drives: &mut Drives| recover_path("-a-b", &s(own), &s(config), &[], &seen, drives);
        let hung = (Some(PathBuf::from("/a/b")), Some(PathEvidence::Transcript), Seen::NotAnswering);
        assert_eq!(pick(&["/a/b"], &["/a-b"], drives), hung, "stronger evidence, not answering");
        assert_eq!(pick(&["/a/b", "/a-b"], &[], drives), (Some(PathBuf::from("/a-b")), Some(PathEvidence::Transcript), Seen::Folder));
        // A candidate never looked at counts as not answering, not as missing.
        assert_eq!(pick(&["/a.b"], &[], drives).2, Seen::NotAnswering);
    }

    #[test]
    fn finds_an_unrecorded_folder_on_disk() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let dashed = root.join("my-app.v2").join("sub dir");
        std::fs::create_dir_all(&dashed).unwrap();
        let name = sanitize_path(&dashed.to_string_lossy());
        let drives = &mut Drives::new();
        assert_eq!(search_filesystem(&name, drives), Search::Found(dashed.clone()));
        assert_eq!(search_filesystem(&format!("{name}-gone"), drives), Search::Missing);
        assert_eq!(search_filesystem("not-a-path", drives), Search::Missing);
    }

    #[test]
    fn empty_or_missing_projects_dir() {
        let t = tempfile::tempdir().unwrap();
        let env = Environment::with_home(t.path().join("nohome"));
        assert!(discover_projects(&env).unwrap().is_empty());
    }
}
