//! Whether Claude Code dreams over a folder's sessions, given the organizations they ran under.
//!
//! Once its other gates pass and it holds the lock, Claude Code searches the launch folder's
//! transcript folder (every file whose name holds `.jsonl`, in sub-folders such as a session's
//! `subagents` too, hidden ones included) for lines with either mark below, and gives the lock
//! back without dreaming when they show sessions of another organization:
//!
//! - from 2.1.331, `"type":"hybrid-organization"` records (their `organizationUuid`): more
//!   than one organization, or one that is not the session's, skips the dream
//!   (`other_hybrid_organization`; 2.1.330 has no such records);
//! - from 2.1.337, also `"type":"session-owner"` records carrying `"restricted"` (an account
//!   of an organization that keeps conversations for a limited time, `ldr`): unless the session
//!   runs under that same owner, the dream is skipped (`other_retention_organization`); with
//!   such an owner, any hybrid-organization record skips it too. The server flag
//!   `tengu_mellow_petal` (on unless cached `false`) turns this second check on.
//!
//! A search that fails skips the dream as well (`hybrid_organization_check_failed`): the
//! release runs ripgrep over the folder with a 60-second limit, and any error ripgrep reports
//! (it exits 2: a file listed and gone before it is opened, a folder it cannot list) or a run
//! past the limit counts as a failed search. [`SEARCH_LIMIT`] is that limit here.
//!
//! A front end that asks often (the Dreams screen's status at each look) keeps what each
//! transcript held in a [`SearchCache`], so an unchanged folder is listed and `stat`ed but not
//! read again.
//!
//! Mneme looks from outside any session: the session's organization and account are the
//! sign-in Claude Code keeps in its global config (`oauthAccount`), and an owner without an
//! organization is taken as another sign-in's (Mneme cannot see whether the session's own
//! account carries the same restriction).

use mneme_core::versions::Profile;
use mneme_store::Environment;
use serde_json::Value;
use memchr::memmem;
use mneme_store::memdir::FileState;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// The text a hybrid-organization record's line holds (searched for as it is).
pub const HYBRID_MARK: &str = r#""type":"hybrid-organization""#;
/// The text a restricted owner's line holds (2.1.337).
pub const RESTRICTED_MARK: &str = r#""restricted""#;
/// The restrictions 2.1.337 knows an owner by: `ldr`, an organization that keeps conversations
/// for a limited time. Others in the record are ignored.
pub const KNOWN_RESTRICTIONS: &[&str] = &["ldr"];

/// Why Claude Code would give the lock back without dreaming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrganizationSkip {
    /// The folder could not be searched (`hybrid_organization_check_failed`): `path` (a file or
    /// folder in it, or the folder itself for a search past the limit) and why.
    SearchFailed { path: PathBuf, error: String, cause: SearchFailure },
    /// Hybrid-organization records of another organization, or of several
    /// (`other_hybrid_organization`).
    OtherHybridOrganization { found: Found },
    /// A restricted owner's session that is not the signed-in one's
    /// (`other_retention_organization`).
    OtherRetentionOrganization { owner: Owner },
}

/// What made a search fail, for what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchFailure {
    /// The system refused to let Mneme read it (so permissions are the fix).
    Refused,
    /// A file or folder listed went away before it was read (a session deleted or moved
    /// meanwhile); ripgrep reports that too, and Claude Code's search fails with it.
    Gone,
    /// The search ran past [`SEARCH_LIMIT`] (a very large folder, or a slow drive).
    TooSlow,
    /// Anything else: a drive that fails, a file that cannot be read.
    Other,
}

/// The organization the hybrid-organization records name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    One(String),
    Several,
}

/// A restricted owner named by a `session-owner` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub account_uuid: String,
    pub organization_uuid: Option<String>,
}

impl OrganizationSkip {
    /// The reason Claude Code logs (`[autoDream] skip — <reason>`).
    pub fn code(&self) -> &'static str {
        match self {
            OrganizationSkip::SearchFailed { .. } => "hybrid_organization_check_failed",
            OrganizationSkip::OtherHybridOrganization { .. } => "other_hybrid_organization",
            OrganizationSkip::OtherRetentionOrganization { .. } => "other_retention_organization",
        }
    }

    /// One sentence for people, with what to do.
    pub fn explanation(&self) -> String {
        let code = self.code();
        match self {
            // Permissions are the fix only when the system refused: a drive that fails or a
            // file that went away mid-search needs something else.
            OrganizationSkip::SearchFailed { path, error, cause } => format!(
                "the sessions could not be searched for the organizations they ran under ({}: {error}), and Claude Code does not dream over them then ({code}); {}, and Mneme tries again at the next check",
                path.display(),
                match cause {
                    SearchFailure::Refused => "let your account read it (its permissions)",
                    SearchFailure::Gone => "it went away while the search ran (a session deleted or moved meanwhile), which fails Claude Code's search too; nothing needs doing",
                    SearchFailure::TooSlow => "Claude Code gives its search 60 seconds too; a folder this large, or a drive this slow, keeps it from dreaming here (move old sessions out of the folder, or check the drive's speed)",
                    SearchFailure::Other => "check that the drive holding it answers and the file can be read",
                }
            ),
            OrganizationSkip::OtherHybridOrganization { found: Found::One(org) } => format!(
                "sessions in this folder ran under organization {org}, not the one Claude Code is signed in to, and Claude Code does not dream over them ({code}); sign in to that organization to dream here"
            ),
            OrganizationSkip::OtherHybridOrganization { found: Found::Several } => format!(
                "sessions in this folder ran under more than one organization, and Claude Code does not dream over them ({code})"
            ),
            OrganizationSkip::OtherRetentionOrganization { owner } => {
                let whose = owner.organization_uuid.as_deref().map_or_else(|| format!("account {}", owner.account_uuid), |o| format!("organization {o}"));
                format!(
                    "a session in this folder ran for {whose}, which keeps conversations for a limited time, and Claude Code 2.1.337 or later does not dream over it from another sign-in ({code}); sign in to that {} to dream here",
                    if owner.organization_uuid.is_some() { "organization" } else { "account" }
                )
            }
        }
    }
}

/// The sign-in Claude Code keeps in the global config the session reads (`oauthAccount`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignIn {
    pub account_uuid: Option<String>,
    pub organization_uuid: Option<String>,
}

impl SignIn {
    pub fn read(env: &Environment) -> SignIn {
        let config = mneme_store::paths::read_global_config(env).ok().flatten();
        let account = config.as_ref().and_then(|c| c.get("oauthAccount"));
        let field = |k: &str| account.and_then(|a| a.get(k)).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        SignIn { account_uuid: field("accountUuid"), organization_uuid: field("organizationUuid") }
    }
}

/// How long a search may run before it counts as failed: Claude Code's own limit on its
/// ripgrep run (60 s, `AbortSignal.timeout`). A folder of many gigabytes on a slow drive (a
/// network share at a few MB/s) runs past it there too.
pub const SEARCH_LIMIT: Duration = Duration::from_secs(60);

/// How one search runs: what earlier searches kept, and a time limit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Search<'a> {
    /// Reuse and keep what each transcript held while it is unchanged.
    pub cache: Option<&'a SearchCache>,
    /// Stop and fail (`SearchFailure::TooSlow`) once this much time has gone.
    pub limit: Option<Duration>,
}

/// Every line holding one of the marks the release searches for, in the files it searches.
fn marked_lines(transcript_dir: &Path, marks: &[&str], search: Search) -> Result<Vec<String>, OrganizationSkip> {
    let finders: Vec<memmem::Finder> = marks.iter().map(|m| memmem::Finder::new(m.as_bytes())).collect();
    let deadline = search.limit.map(|l| Instant::now() + l);
    let kept = search.cache.map(|c| (c, c.begin(marks)));
    let mut out = Vec::new();
    let mut folders = vec![transcript_dir.to_path_buf()];
    let too_slow = || OrganizationSkip::SearchFailed {
        path: transcript_dir.to_path_buf(),
        error: format!("the search did not finish within {} seconds", search.limit.unwrap_or_default().as_secs()),
        cause: SearchFailure::TooSlow,
    };
    while let Some(dir) = folders.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            // A transcript folder that is not there holds no sessions to dream over.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir == transcript_dir => return Ok(out),
            Err(e) => return Err(search_failed(dir, &e)),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // Not following links, as ripgrep does not.
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file() && entry.file_name().to_string_lossy().contains(".jsonl") {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(too_slow());
                }
                let found = match kept {
                    Some((cache, (marks, generation))) => cache.lines_of(&path, marks, generation, |file, lines| marked_lines_within(file, &finders, LONGEST_LINE, deadline, lines)),
                    None => {
                        #[cfg(test)]
                        let opened = tests::before_open(&path).and_then(|()| std::fs::File::open(&path));
                        #[cfg(not(test))]
                        let opened = std::fs::File::open(&path);
                        opened.and_then(|file| marked_lines_within(file, &finders, LONGEST_LINE, deadline, &mut out).map(|()| Vec::new()))
                    }
                };
                match found {
                    Ok(lines) => out.extend(lines),
                    // Only once the limit has passed: a network drive's own time-out (ETIMEDOUT)
                    // is an I/O error of that file, said as such.
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut && deadline.is_some_and(|d| Instant::now() >= d) => {
                        return Err(too_slow())
                    }
                    Err(e) => return Err(search_failed(path, &e)),
                }
            }
        }
    }
    if let Some((cache, (_, generation))) = kept {
        cache.forget_unseen(transcript_dir, generation);
    }
    Ok(out)
}

/// The search could not read `path`.
fn search_failed(path: PathBuf, e: &std::io::Error) -> OrganizationSkip {
    let cause = match e.kind() {
        std::io::ErrorKind::PermissionDenied => SearchFailure::Refused,
        std::io::ErrorKind::NotFound => SearchFailure::Gone,
        _ => SearchFailure::Other,
    };
    OrganizationSkip::SearchFailed { path, error: e.to_string(), cause }
}

/// What earlier searches found in each transcript (its marked lines), kept while the file is as
/// it was then, so a front end that shows the organization gate at every look reads only the
/// transcripts that changed: Claude Code appends to the session's transcript at every turn,
/// and leaves the others alone. A transcript is taken as unchanged while `stat` says the same
/// file, size, modification and change time ([`FileState`]; nothing sets the change time back),
/// and one changed within [`SETTLE`] of its read is not kept, since its file system may stamp a
/// second write within the same clock tick with the same times (git's "racily clean" files).
/// Bounded by [`KEPT_FILES`] and [`KEPT_BYTES`]: past them, files the last search did not see
/// go first, then nothing more is kept (such a folder is read as it would be without a cache).
#[derive(Debug)]
pub struct SearchCache {
    kept: Mutex<Kept>,
    settle: Duration,
    max_files: usize,
    max_bytes: usize,
    /// Transcripts read (not taken from the cache) by searches through it.
    read: std::sync::atomic::AtomicU64,
}

impl Default for SearchCache {
    fn default() -> Self {
        SearchCache::bounded(SETTLE, KEPT_FILES, KEPT_BYTES)
    }
}

/// A transcript changed within this long of its read is read again next time: FAT and exFAT
/// drives stamp modification times in 2-second steps, others in a clock tick.
pub const SETTLE: Duration = Duration::from_secs(2);
/// The most transcripts kept: a few hundred bytes each (path and state) when they hold no mark.
pub const KEPT_FILES: usize = 100_000;
/// The most bytes of paths and marked lines kept.
pub const KEPT_BYTES: usize = 32 << 20;

#[derive(Debug, Default)]
struct Kept {
    files: HashMap<PathBuf, KeptFile>,
    bytes: usize,
    /// Counts searches, so each entry says which search saw it last.
    generation: u64,
}

#[derive(Debug)]
struct KeptFile {
    state: FileState,
    /// The marks it was searched for (a release searches for one or two).
    marks: u64,
    lines: Arc<[String]>,
    seen: u64,
}

impl KeptFile {
    fn bytes(path: &Path, lines: &[String]) -> usize {
        path.as_os_str().len() + lines.iter().map(|l| l.len() + 24).sum::<usize>() + 128
    }
}

impl SearchCache {
    /// A cache keeping at most `max_files` transcripts and `max_bytes`, and only files changed
    /// more than `settle` before their read (the defaults: [`SETTLE`], [`KEPT_FILES`],
    /// [`KEPT_BYTES`]).
    pub fn bounded(settle: Duration, max_files: usize, max_bytes: usize) -> SearchCache {
        SearchCache { kept: Mutex::default(), settle, max_files, max_bytes, read: Default::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many transcripts searches through it have read rather than taken from it.
    pub fn files_read(&self) -> u64 {
        self.read.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The bytes of paths and marked lines it holds (counted as [`KEPT_BYTES`] counts them).
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// How many transcripts it keeps.
    pub fn len(&self) -> usize {
        self.lock().files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts a search for `marks`: their fingerprint and the search's generation.
    fn begin(&self, marks: &[&str]) -> (u64, u64) {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        marks.hash(&mut h);
        let mut kept = self.lock();
        kept.generation += 1;
        (h.finish(), kept.generation)
    }

    /// The marked lines of the transcript at `path`, kept or read by `read` (which pushes them
    /// onto the list it is given).
    fn lines_of(
        &self,
        path: &Path,
        marks: u64,
        generation: u64,
        read: impl FnOnce(&std::fs::File, &mut Vec<String>) -> std::io::Result<()>,
    ) -> std::io::Result<Vec<String>> {
        let started = SystemTime::now();
        // As the search lists it: a link is not followed. A file listed and gone since fails
        // here as it would when opened.
        let before = state_of(&std::fs::symlink_metadata(path)?);
        if let Some(state) = before {
            let mut kept = self.lock();
            if let Some(k) = kept.files.get_mut(path).filter(|k| k.state == state && k.marks == marks) {
                k.seen = generation;
                return Ok(k.lines.to_vec());
            }
        }
        #[cfg(test)]
        tests::before_open(path)?;
        let file = std::fs::File::open(path)?;
        self.read.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut lines = Vec::new();
        read(&file, &mut lines)?;
        // Kept only when the file opened is the one `stat`ed (not one renamed into its place
        // meanwhile) and its last change is settled.
        let opened = state_of(&file.metadata()?);
        let settled = |s: &FileState| {
            let at = started.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().saturating_sub(self.settle);
            i128::from(s.changed_ns.max(s.mtime_ns)) < at.as_nanos() as i128
        };
        if let Some(state) = before.filter(|b| opened.as_ref() == Some(b) && settled(b)) {
            self.keep(path, KeptFile { state, marks, lines: lines.clone().into(), seen: generation });
        }
        Ok(lines)
    }

    fn keep(&self, path: &Path, file: KeptFile) {
        let size = KeptFile::bytes(path, &file.lines);
        let mut kept = self.lock();
        if let Some(old) = kept.files.remove(path) {
            kept.bytes -= KeptFile::bytes(path, &old.lines);
        }
        if kept.files.len() >= self.max_files || kept.bytes + size > self.max_bytes {
            // Files the running searches have not seen first: another folder's, or gone.
            let current = file.seen;
            let mut freed = 0;
            kept.files.retain(|p, k| {
                let stays = k.seen >= current;
                if !stays {
                    freed += KeptFile::bytes(p, &k.lines);
                }
                stays
            });
            kept.bytes -= freed;
            if kept.files.len() >= self.max_files || kept.bytes + size > self.max_bytes {
                return;
            }
        }
        kept.bytes += size;
        kept.files.insert(path.to_path_buf(), file);
    }

    /// Drops the transcripts under `folder` that the search `generation` did not see: removed
    /// or renamed since an earlier one.
    fn forget_unseen(&self, folder: &Path, generation: u64) {
        let mut kept = self.lock();
        let mut freed = 0;
        kept.files.retain(|p, k| {
            let stays = k.seen >= generation || !p.starts_with(folder);
            if !stays {
                freed += KeptFile::bytes(p, &k.lines);
            }
            stays
        });
        kept.bytes -= freed;
    }
}

/// What tells a transcript's content apart without reading it; `None` where the system does not
/// give it (then nothing is kept).
#[cfg(unix)]
fn state_of(meta: &std::fs::Metadata) -> Option<FileState> {
    use std::os::unix::fs::MetadataExt;
    let ns = |s: i64, n: i64| i64::try_from(i128::from(s) * 1_000_000_000 + i128::from(n)).ok();
    Some(FileState { dev: meta.dev(), ino: meta.ino(), size: meta.size(), mtime_ns: ns(meta.mtime(), meta.mtime_nsec())?, changed_ns: ns(meta.ctime(), meta.ctime_nsec())? })
}

#[cfg(not(unix))]
fn state_of(_meta: &std::fs::Metadata) -> Option<FileState> {
    None
}

/// The lines of one transcript that hold a mark, in file order, each once. Transcripts run to
/// tens of megabytes a session and the Dreams screen's status searches them all on each look,
/// so the bytes are searched a megabyte at a time for the marks themselves (SIMD `memmem`) and
/// only a line holding one is cut out and decoded; a line split across two reads is kept until
/// its end arrives, unless it runs past [`LONGEST_LINE`].
#[cfg(test)]
fn marked_lines_of(file: impl Read, finders: &[memmem::Finder], out: &mut Vec<String>) -> std::io::Result<()> {
    marked_lines_within(file, finders, LONGEST_LINE, None, out)
}

/// The longest line the search reads. The records it looks for are a few hundred bytes, which
/// Claude Code writes on a line of their own; a transcript line can be far longer (a tool's
/// whole output), and one whose end never comes (a damaged file, or one filled on purpose)
/// would otherwise be held whole, a gigabyte for a gigabyte's line, on every look of the Dreams
/// screen. A longer line cannot be one of those records and is passed over, its bytes let go as
/// they are read.
const LONGEST_LINE: usize = 16 << 20;

/// [`marked_lines_of`], passing over lines longer than `longest` bytes; a `TimedOut` error once
/// `deadline` has passed (checked at each read: one file may take the whole limit).
fn marked_lines_within(
    mut file: impl Read,
    finders: &[memmem::Finder],
    longest: usize,
    deadline: Option<Instant>,
    out: &mut Vec<String>,
) -> std::io::Result<()> {
    const CHUNK: usize = 1 << 20;
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    // Inside a line longer than `longest`: its bytes are dropped until its end.
    let mut passing_over = false;
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        let held = buf.len();
        buf.resize(held + CHUNK, 0);
        let n = match file.read(&mut buf[held..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                buf.truncate(held);
                continue;
            }
            Err(e) => return Err(e),
        };
        buf.truncate(held + n);
        if n == 0 {
            // The last line, without a newline after it.
            if !passing_over {
                push_marked(&buf, finders, longest, out);
            }
            return Ok(());
        }
        // Whole lines only; the rest waits for its end. Only the new bytes can hold a newline.
        let mut new_from = held;
        if passing_over {
            // Nothing is held while passing over: every byte is new.
            match memchr::memchr(b'\n', &buf) {
                Some(end) => {
                    buf.drain(..=end);
                    passing_over = false;
                    new_from = 0;
                }
                None => {
                    buf.clear();
                    continue;
                }
            }
        }
        if let Some(last) = memchr::memrchr(b'\n', &buf[new_from..]).map(|i| new_from + i) {
            push_marked(&buf[..=last], finders, longest, out);
            buf.drain(..=last);
        }
        if buf.len() > longest {
            buf.clear();
            passing_over = true;
        }
    }
}

/// Pushes the lines of `text` (whole lines) that hold any of the marks and are at most
/// `longest` bytes, in order, each once.
fn push_marked(text: &[u8], finders: &[memmem::Finder], longest: usize, out: &mut Vec<String>) {
    let mut starts: Vec<usize> = finders
        .iter()
        .flat_map(|f| f.find_iter(text))
        .map(|at| memchr::memrchr(b'\n', &text[..at]).map_or(0, |nl| nl + 1))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    for start in starts {
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
        if end - start <= longest {
            out.push(String::from_utf8_lossy(&text[start..end]).into_owned());
        }
    }
}

/// The organization a hybrid-organization line names, lowercased.
fn hybrid_organization(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    (v.get("type")? == "hybrid-organization").then_some(())?;
    v.get("organizationUuid")?.as_str().filter(|s| !s.is_empty()).map(str::to_lowercase)
}

/// The restricted owner a `session-owner` line names (an account, and a restriction the
/// release knows).
fn restricted_owner(line: &str) -> Option<Owner> {
    let v: Value = serde_json::from_str(line).ok()?;
    (v.get("type")? == "session-owner").then_some(())?;
    let account_uuid = v.get("accountUuid")?.as_str().filter(|s| !s.is_empty())?.to_string();
    let restricted = v.get("restricted")?.as_array()?;
    restricted.iter().any(|r| r.as_str().is_some_and(|r| KNOWN_RESTRICTIONS.contains(&r))).then_some(())?;
    let organization_uuid = v.get("organizationUuid").and_then(Value::as_str).map(str::to_string);
    Some(Owner { account_uuid, organization_uuid })
}

/// Why the release `profile` describes would not dream over the sessions in `transcript_dir`
/// for a session signed in as `sign_in`, with `retention_checks` (the flag
/// `tengu_mellow_petal`) as the session sees it; `None` when it would.
pub fn skip(transcript_dir: &Path, profile: &Profile, sign_in: &SignIn, retention_checks: bool) -> Option<OrganizationSkip> {
    skip_searching(transcript_dir, profile, sign_in, retention_checks, Search::default())
}

/// [`skip`], the search run as `search` says (a cache, a time limit).
pub fn skip_searching(transcript_dir: &Path, profile: &Profile, sign_in: &SignIn, retention_checks: bool, search: Search) -> Option<OrganizationSkip> {
    if !profile.dream_skips_other_hybrid_organization {
        return None;
    }
    let marks: &[&str] = if profile.dream_skips_other_retention_owner { &[HYBRID_MARK, RESTRICTED_MARK] } else { &[HYBRID_MARK] };
    let lines = match marked_lines(transcript_dir, marks, search) {
        Ok(l) => l,
        Err(e) => return Some(e),
    };
    let mut found: Option<Found> = None;
    for org in lines.iter().filter(|l| l.contains(HYBRID_MARK)).filter_map(|l| hybrid_organization(l)) {
        found = match found {
            None => Some(Found::One(org)),
            Some(Found::One(known)) if known == org => Some(Found::One(known)),
            _ => Some(Found::Several),
        };
    }
    let signed_in_org = sign_in.organization_uuid.as_deref().map(str::to_lowercase);
    match &found {
        Some(Found::One(org)) if signed_in_org.as_deref() == Some(org.as_str()) => {}
        None => {}
        Some(f) => return Some(OrganizationSkip::OtherHybridOrganization { found: f.clone() }),
    }
    if !profile.dream_skips_other_retention_owner || !retention_checks {
        return None;
    }
    lines.iter().filter_map(|l| restricted_owner(l)).find_map(|owner| {
        // Beside any hybrid-organization record, a restricted owner is always another's.
        let same = found.is_none()
            && match &owner.organization_uuid {
                Some(org) => signed_in_org.as_deref() == Some(org.to_lowercase().as_str()),
                None => false,
            };
        (!same).then_some(OrganizationSkip::OtherRetentionOrganization { owner })
    })
}

/// What a release looks for before it dreams, given the server flag: a screen that says "no
/// session ran under another organization" must not say it where nothing was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// The release has no such look (before 2.1.331).
    None,
    /// Hybrid-organization records only (2.1.331 on, or 2.1.337 with `tengu_mellow_petal` off).
    Organizations,
    /// Those and restricted session owners (2.1.337 with `tengu_mellow_petal` on).
    OrganizationsAndOwners,
}

/// What [`skip`] looks for under `profile` with `retention_checks` (`tengu_mellow_petal`).
pub fn checks(profile: &Profile, retention_checks: bool) -> Checks {
    match (profile.dream_skips_other_hybrid_organization, profile.dream_skips_other_retention_owner && retention_checks) {
        (false, _) => Checks::None,
        (true, false) => Checks::Organizations,
        (true, true) => Checks::OrganizationsAndOwners,
    }
}

impl crate::DreamSite {
    /// Why the release `profile` describes would not dream over this site's sessions for the
    /// organizations they ran under; `None` when it would. The sign-in and
    /// `tengu_mellow_petal` are the session's own (its global config, which settings' `env`
    /// blocks can move), as are the flags the site's other gates read. The scheduler's last look
    /// before it dreams and the status every front end shows both ask here, so the Dreams
    /// screen says the very reason the scheduler skips a folder for. It reads every transcript
    /// of the folder: the scheduler keeps the answer for the scan throttle's 10 minutes, a
    /// status asked for by hand reads it afresh (a sign-in changed a moment ago counts).
    pub fn organization_skip(&self, profile: &Profile) -> Option<OrganizationSkip> {
        self.organization_skip_searching(profile, Search::default())
    }

    /// [`organization_skip`](Self::organization_skip), the search run as `search` says: a front
    /// end that asks at every look keeps a [`SearchCache`] (the sign-in is read afresh each
    /// time, only the transcripts' marked lines are kept), the scheduler a time limit.
    pub fn organization_skip_searching(&self, profile: &Profile, search: Search) -> Option<OrganizationSkip> {
        skip_searching(&self.target.transcript_dir, profile, &SignIn::read(&self.env), self.flags.retention_checks(), search)
    }

    /// What [`organization_skip`](Self::organization_skip) looks for here, with the same flags.
    pub fn organization_checks(&self, profile: &Profile) -> Checks {
        checks(profile, self.flags.retention_checks())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::versions::{behaviours, ClaudeVersion};
    use serde_json::json;

    const ORG: &str = "5b7c9f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
    const OTHER: &str = "0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b";

    fn v(s: &str) -> Profile {
        behaviours(s.parse::<ClaudeVersion>().unwrap())
    }

    fn signed_in(org: &str) -> SignIn {
        SignIn { account_uuid: Some("acc-1".into()), organization_uuid: Some(org.to_uppercase()) }
    }

    fn folder(lines: &[(&str, serde_json::Value)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (file, line) in lines {
            let p = d.path().join(file);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let mut text = std::fs::read_to_string(&p).unwrap_or_default();
            text.push_str(&format!("{line}\n"));
            std::fs::write(&p, text).unwrap();
        }
        d
    }

    fn hybrid(org: &str) -> serde_json::Value {
        json!({"type": "hybrid-organization", "organizationUuid": org})
    }

    fn owner(org: Option<&str>, restricted: serde_json::Value) -> serde_json::Value {
        let mut o = json!({"type": "session-owner", "sessionId": "s", "accountUuid": "acc-9", "restricted": restricted});
        if let Some(org) = org {
            o["organizationUuid"] = json!(org);
        }
        o
    }

    /// Hybrid-organization records from 2.1.331: none, or only the signed-in organization's
    /// (in any case), lets the dream run; another's, or two organizations, skips it. 2.1.330
    /// has no such check. A sub-agent's transcript is searched too.
    #[test]
    fn hybrid_organization_records_of_another_organization_skip_the_dream_from_2_1_331() {
        let (new, old) = (v("2.1.331"), v("2.1.330"));
        let none = folder(&[("a.jsonl", json!({"type": "user"}))]);
        assert_eq!(skip(none.path(), &new, &signed_in(ORG), true), None);
        let mine = folder(&[("a.jsonl", hybrid(ORG)), ("b.jsonl", hybrid(&ORG.to_uppercase()))]);
        assert_eq!(skip(mine.path(), &new, &signed_in(ORG), true), None);
        let theirs = folder(&[("s/subagents/agent-a.jsonl", hybrid(OTHER))]);
        let got = skip(theirs.path(), &new, &signed_in(ORG), true).unwrap();
        assert_eq!(got, OrganizationSkip::OtherHybridOrganization { found: Found::One(OTHER.into()) });
        assert!(got.explanation().contains(OTHER) && got.explanation().contains("other_hybrid_organization"));
        assert_eq!(skip(theirs.path(), &old, &signed_in(ORG), true), None);
        assert!(skip(theirs.path(), &new, &SignIn::default(), true).is_some(), "no sign-in is not that organization's");
        let both = folder(&[("a.jsonl", hybrid(ORG)), ("b.jsonl.bak", hybrid(OTHER))]);
        assert_eq!(skip(both.path(), &new, &signed_in(ORG), true), Some(OrganizationSkip::OtherHybridOrganization { found: Found::Several }));
        // Only files whose name holds `.jsonl` are searched.
        let elsewhere = folder(&[("notes.txt", hybrid(OTHER))]);
        assert_eq!(skip(elsewhere.path(), &new, &signed_in(ORG), true), None);
        assert_eq!(skip(Path::new("/nonexistent/transcripts"), &new, &signed_in(ORG), true), None);
    }

    /// Restricted owners from 2.1.337: another organization's (or an owner without one) skips
    /// the dream, the signed-in organization's does not, unless a hybrid-organization record is
    /// there too; an unknown restriction is no restriction; the flag off, or 2.1.332, ignores
    /// them.
    #[test]
    fn a_restricted_owner_of_another_organization_skips_the_dream_from_2_1_337() {
        let (new, old) = (v("2.1.337"), v("2.1.332"));
        let theirs = folder(&[("a.jsonl", owner(Some(OTHER), json!(["ldr"])))]);
        let got = skip(theirs.path(), &new, &signed_in(ORG), true).unwrap();
        assert_eq!(got.code(), "other_retention_organization");
        assert!(got.explanation().contains(OTHER) && got.explanation().contains("limited time"), "{}", got.explanation());
        assert_eq!(skip(theirs.path(), &old, &signed_in(ORG), true), None);
        assert_eq!(skip(theirs.path(), &new, &signed_in(ORG), false), None, "tengu_mellow_petal off");
        let mine = folder(&[("a.jsonl", owner(Some(&ORG.to_uppercase()), json!(["ldr"])))]);
        assert_eq!(skip(mine.path(), &new, &signed_in(ORG), true), None);
        let no_org = folder(&[("a.jsonl", owner(None, json!(["ldr"])))]);
        assert_eq!(skip(no_org.path(), &new, &signed_in(ORG), true).map(|s| s.code()), Some("other_retention_organization"));
        let unknown = folder(&[("a.jsonl", owner(Some(OTHER), json!(["xyz"])))]);
        assert_eq!(skip(unknown.path(), &new, &signed_in(ORG), true), None);
        let beside = folder(&[("a.jsonl", hybrid(ORG)), ("b.jsonl", owner(Some(ORG), json!(["ldr"])))]);
        assert_eq!(skip(beside.path(), &new, &signed_in(ORG), true).map(|s| s.code()), Some("other_retention_organization"));
    }

    /// A reader that hands out `step` bytes at a time, so marks and lines fall across reads.
    struct Trickle<'a> {
        rest: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(self.rest.len()).min(buf.len());
            buf[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_failed_search_names_permissions_only_when_the_system_refused() {
        let refused = search_failed(PathBuf::from("/t/a.jsonl"), &std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(refused.explanation().contains("its permissions"), "{}", refused.explanation());
        let failing = search_failed(PathBuf::from("/t/a.jsonl"), &std::io::Error::from_raw_os_error(5));
        let said = failing.explanation();
        assert!(said.contains("/t/a.jsonl") && said.contains("drive holding it answers") && !said.contains("permission"), "{said}");
    }

    #[test]
    fn a_line_longer_than_the_longest_is_passed_over_without_being_held() {
        const LONGEST: usize = 40;
        let long = format!("{{\"type\":\"hybrid-organization\",\"organizationUuid\":\"{ORG}\",\"pad\":\"{}\"}}", "x".repeat(3 * LONGEST));
        let short = |n: u32| format!("{{\"n\":{n},\"k\":\"restricted\"}}");
        assert!(short(1).len() <= LONGEST);
        let finders: Vec<memmem::Finder> = [HYBRID_MARK, RESTRICTED_MARK].iter().map(|m| memmem::Finder::new(m.as_bytes())).collect();
        // Long lines in the middle, and last with no newline after it.
        let text = format!("{}\n{long}\n{}\n{long}\n{}\n{long}", short(1), short(2), short(3));
        for step in [1, 2, 3, 7, 64, text.len()] {
            let mut out = Vec::new();
            marked_lines_within(Trickle { rest: text.as_bytes(), step }, &finders, LONGEST, None, &mut out).unwrap();
            assert_eq!(out, vec![short(1), short(2), short(3)], "reads of {step} bytes");
        }
    }

    /// Run by the search on this thread before it opens each transcript it listed; an error it
    /// returns is the open's.
    type OpenHook = Box<dyn FnMut(&Path) -> std::io::Result<()>>;

    thread_local! {
        static BEFORE_OPEN: std::cell::RefCell<Option<OpenHook>> = std::cell::RefCell::new(None);
    }

    pub(super) fn before_open(path: &Path) -> std::io::Result<()> {
        BEFORE_OPEN.with(|h| match h.borrow_mut().as_mut() {
            Some(h) => h(path),
            None => Ok(()),
        })
    }

    fn on_open(hook: impl FnMut(&Path) -> std::io::Result<()> + 'static) {
        BEFORE_OPEN.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
    }

    /// A transcript listed and removed before it is read fails the search, as the release's
    /// ripgrep run fails (it reports the file and exits 2, `hybrid_organization_check_failed`,
    /// seen with 2.1.337's own ripgrep); the reason says it went away, not that the drive or
    /// permissions need looking at. With or without a cache.
    #[test]
    fn a_transcript_removed_between_listing_and_reading_fails_the_search_saying_it_went_away() {
        let new = v("2.1.337");
        for cache in [None, Some(SearchCache::default())] {
            let d = folder(&[("a.jsonl", hybrid(ORG)), ("b.jsonl", json!({"type": "user"}))]);
            let gone = d.path().join("b.jsonl");
            let removed = gone.clone();
            on_open(move |p| {
                if p == removed {
                    std::fs::remove_file(p).unwrap();
                }
                Ok(())
            });
            let got = skip_searching(d.path(), &new, &signed_in(ORG), true, Search { cache: cache.as_ref(), limit: None });
            on_open(|_| Ok(()));
            let Some(OrganizationSkip::SearchFailed { path, cause, .. }) = &got else { panic!("{got:?}") };
            assert_eq!((path, *cause), (&gone, SearchFailure::Gone));
            let said = got.unwrap().explanation();
            assert!(said.contains("went away") && !said.contains("permission") && !said.contains("drive"), "{said}");
        }
    }

    /// A transcript whose read fails with the drive's own time-out (ETIMEDOUT, a network share)
    /// within the limit is that file's I/O error, named with the system's words, not a search
    /// past a limit ("within 0 seconds" with no limit at all).
    #[test]
    fn a_drive_time_out_within_the_limit_is_the_files_error_not_a_slow_search() {
        for cache in [None, Some(SearchCache::default())] {
            for limit in [None, Some(SEARCH_LIMIT)] {
                let d = folder(&[("a.jsonl", hybrid(ORG))]);
                let a = d.path().join("a.jsonl");
                on_open(|_| Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "connection timed out")));
                let got = skip_searching(d.path(), &v("2.1.337"), &signed_in(ORG), true, Search { cache: cache.as_ref(), limit });
                on_open(|_| Ok(()));
                let Some(OrganizationSkip::SearchFailed { path, cause, error }) = &got else { panic!("{got:?}") };
                assert_eq!((path, *cause), (&a, SearchFailure::Other), "{error}");
                assert_eq!(error, "connection timed out");
            }
        }
    }

    /// A search past its limit fails, naming the folder and the limit.
    #[test]
    fn a_search_past_its_limit_fails_as_too_slow() {
        let d = folder(&[("a.jsonl", json!({"type": "user"}))]);
        let got = skip_searching(d.path(), &v("2.1.331"), &signed_in(ORG), true, Search { cache: None, limit: Some(Duration::ZERO) });
        let Some(OrganizationSkip::SearchFailed { path, cause, .. }) = &got else { panic!("{got:?}") };
        assert_eq!((path.as_path(), *cause), (d.path(), SearchFailure::TooSlow));
        assert!(got.unwrap().explanation().contains("60 seconds"));
        assert_eq!(skip_searching(d.path(), &v("2.1.331"), &signed_in(ORG), true, Search { cache: None, limit: Some(SEARCH_LIMIT) }), None);
    }

    fn cached(d: &Path, cache: &SearchCache) -> Option<OrganizationSkip> {
        skip_searching(d, &v("2.1.337"), &signed_in(ORG), true, Search { cache: Some(cache), limit: None })
    }

    /// An unchanged folder is answered from the cache without reading a transcript; a transcript
    /// appended to, added, replaced or removed is read (or forgotten), so the answer follows.
    #[test]
    fn the_cache_answers_an_unchanged_folder_and_reads_what_changed() {
        let cache = SearchCache::bounded(Duration::ZERO, KEPT_FILES, KEPT_BYTES);
        let d = folder(&[("a.jsonl", hybrid(ORG)), ("s/subagents/b.jsonl", json!({"type": "user"}))]);
        assert_eq!(cached(d.path(), &cache), None);
        assert_eq!((cache.files_read(), cache.len()), (2, 2));
        assert_eq!(cached(d.path(), &cache), None);
        assert_eq!(cache.files_read(), 2, "nothing read again");

        // Appended to: read again, and the answer changes.
        let b = d.path().join("s/subagents/b.jsonl");
        let mut text = std::fs::read_to_string(&b).unwrap();
        text.push_str(&format!("{}\n", hybrid(OTHER)));
        std::fs::write(&b, &text).unwrap();
        assert_eq!(cached(d.path(), &cache), Some(OrganizationSkip::OtherHybridOrganization { found: Found::Several }));
        assert_eq!(cache.files_read(), 3);

        // Replaced by a file of the same size (renamed into place): another file, read again.
        let same_size = text.replace(OTHER, ORG);
        assert_eq!(same_size.len(), text.len());
        std::fs::write(d.path().join("new.tmp"), &same_size).unwrap();
        std::fs::rename(d.path().join("new.tmp"), &b).unwrap();
        assert_eq!(cached(d.path(), &cache), None);
        assert_eq!(cache.files_read(), 4);

        // Added, then removed: read once, then forgotten.
        std::fs::write(d.path().join("c.jsonl"), format!("{}\n", hybrid(OTHER))).unwrap();
        assert!(cached(d.path(), &cache).is_some());
        assert_eq!((cache.files_read(), cache.len()), (5, 3));
        std::fs::remove_file(d.path().join("c.jsonl")).unwrap();
        assert_eq!(cached(d.path(), &cache), None);
        assert_eq!((cache.files_read(), cache.len()), (5, 2));

        // Another release searches for other marks: read afresh.
        assert_eq!(skip_searching(d.path(), &v("2.1.331"), &signed_in(ORG), true, Search { cache: Some(&cache), limit: None }), None);
        assert_eq!(cache.files_read(), 7);
    }

    /// A transcript changed within the settling time of its read is not kept (its file system
    /// may stamp a second write in the same tick with the same times): read at every search.
    #[test]
    fn a_transcript_changed_a_moment_before_its_read_is_not_kept() {
        let cache = SearchCache::default();
        let d = folder(&[("a.jsonl", hybrid(ORG))]);
        assert_eq!(cached(d.path(), &cache), None);
        assert_eq!(cached(d.path(), &cache), None);
        assert_eq!((cache.files_read(), cache.len()), (2, 0));
    }

    /// Past its bounds the cache first lets go of files no running search saw (another
    /// folder's), then keeps nothing more: never more than its bounds.
    #[test]
    fn the_cache_stays_within_its_bounds() {
        let cache = SearchCache::bounded(Duration::ZERO, 3, KEPT_BYTES);
        let one = folder(&[("a.jsonl", hybrid(ORG)), ("b.jsonl", hybrid(ORG))]);
        let two = folder(&[("a.jsonl", hybrid(ORG)), ("b.jsonl", hybrid(ORG)), ("c.jsonl", hybrid(ORG)), ("d.jsonl", hybrid(ORG))]);
        cached(one.path(), &cache);
        assert_eq!(cache.len(), 2);
        cached(two.path(), &cache);
        assert_eq!(cache.len(), 3, "the other folder's files went first, then nothing more");
        assert!(cache.lock().files.keys().all(|p| p.starts_with(two.path())));
        let by_bytes = SearchCache::bounded(Duration::ZERO, KEPT_FILES, 600);
        cached(two.path(), &by_bytes);
        assert!(by_bytes.bytes() <= 600 && by_bytes.len() < 4, "{} bytes, {} files", by_bytes.bytes(), by_bytes.len());
        // What was not kept is still searched: the answer is the same.
        let theirs = folder(&[("a.jsonl", hybrid(OTHER)), ("b.jsonl", hybrid(ORG)), ("c.jsonl", hybrid(ORG)), ("d.jsonl", hybrid(ORG))]);
        assert!(cached(theirs.path(), &cache).is_some() && cached(theirs.path(), &cache).is_some());
    }

    #[test]
    fn what_is_checked_follows_the_release_and_the_flag() {
        assert_eq!(checks(&v("2.1.330"), true), Checks::None);
        assert_eq!(checks(&v("2.1.331"), true), Checks::Organizations);
        assert_eq!(checks(&v("2.1.337"), false), Checks::Organizations);
        assert_eq!(checks(&v("2.1.337"), true), Checks::OrganizationsAndOwners);
    }

    #[test]
    fn marked_lines_are_found_whole_however_the_reads_fall() {
        let text = format!(
            "{{\"type\":\"user\"}}\n{{\"type\":\"hybrid-organization\",\"organizationUuid\":\"{ORG}\"}}\r\n\
             {{\"type\":\"session-owner\",\"restricted\":[\"ldr\"],\"note\":\"\"type\":\"hybrid-organization\"\"}}\n\
             plain\n\"restricted\" at the end, no newline"
        );
        let finders: Vec<memmem::Finder> = [HYBRID_MARK, RESTRICTED_MARK].iter().map(|m| memmem::Finder::new(m.as_bytes())).collect();
        let lines: Vec<&str> = text.split('\n').collect();
        let want = vec![lines[1].to_string(), lines[2].to_string(), lines[4].to_string()];
        for step in [1, 2, 3, 7, 64, text.len()] {
            let mut out = Vec::new();
            marked_lines_of(Trickle { rest: text.as_bytes(), step }, &finders, &mut out).unwrap();
            assert_eq!(out, want, "reads of {step} bytes");
        }
        // A line holding both marks is one line, once.
        let mut out = Vec::new();
        marked_lines_of(Trickle { rest: lines[2].as_bytes(), step: 5 }, &finders, &mut out).unwrap();
        assert_eq!(out, vec![lines[2].to_string()]);
    }
}
