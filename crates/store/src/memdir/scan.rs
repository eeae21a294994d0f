//! Finding and reading topic files the way Claude Code's `scanMemoryFiles` does
//! (`src/memdir/memoryScan.ts`): a recursive `readdir` of the memory folder keeping every
//! `*.md` whose base name is not `MEMORY.md` (so `team/`, `logs/` and any subfolder count).
//!
//! Two depths of reading:
//! - [`Memdir::scan_headers`] reads only the first [`FRONTMATTER_MAX_LINES`] lines, as
//!   Claude Code's `readFileInRange(path, 0, 30)` does (BOM stripped, CRLF and lone CR turned
//!   into LF). A frontmatter block that closes after line 30 therefore yields no description
//!   or type, exactly as in Claude Code.
//! - [`Memdir::scan`] reads whole files, for `[[links]]` and the full frontmatter.
//!
//! Per-file failures never abort a scan; they are reported as [`Problem`]s. Where Claude Code
//! would silently drop a file, Mneme still drops it from the list but says why.
//!
//! Differences from Claude Code, on purpose: symbolic links to folders are not followed (a
//! link loop would otherwise never end), symbolic links whose target lies outside the memory
//! folder are not read (a memory folder must not become a way to read other files), and
//! pipes or devices named `*.md` are not opened (reading one could block forever).

use super::error::io_err;
use super::path::describe_type;
use super::{Memdir, MemdirError, Scope, INDEX_FILE};
use mneme_core::frontmatter::{self, Generation};
use mneme_core::versions::FrontmatterReader;
use mneme_core::MemoryType;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use yaml_serde::Value;

/// `FRONTMATTER_MAX_LINES` in `src/memdir/memoryScan.ts`: how many lines the manifest scan
/// reads from each file.
pub const FRONTMATTER_MAX_LINES: usize = 30;

/// Larger files are read only as far as their header; their links are not extracted. Claude
/// Code switches to a streaming reader at the same size.
const MAX_FULL_READ_BYTES: u64 = 10 * 1024 * 1024;

/// Bytes read per step when looking for the first 30 lines; most frontmatter fits in one.
const HEAD_CHUNK: usize = 8 * 1024;

/// The most of a file read looking for its first lines: a file of one huge line (no line
/// feed in gigabytes) would otherwise be read to its end. Nothing Claude Code reads from a
/// header gets near this; the manifest's own cap is [`HEAD_BYTE_CAP`].
const HEAD_READ_MAX_BYTES: usize = MAX_FULL_READ_BYTES as usize;

/// The largest file [`read_bytes`] reads whole (a memory opened, saved or checked, an
/// index). Claude Code's Read tool refuses a whole-file read past 256 KB and loads 25,000
/// units of an index, so a memory it uses is far smaller; a file past this is refused with
/// what to do, rather than read into memory whatever its size.
pub const MAX_READ_BYTES: u64 = 64 << 20;

/// Below this many files a scan runs on the calling thread; thread start-up would cost more
/// than it saves.
const PARALLEL_THRESHOLD: usize = 256;

/// A topic file as Mneme shows it, from a whole-file read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicFile {
    /// Path relative to the memory folder, with `/` separators.
    pub rel_path: String,
    /// Absolute path.
    pub abs_path: PathBuf,
    /// Modification time in milliseconds since the epoch (truncated, as `new Date(mtimeMs)`).
    pub mtime_ms: i64,
    /// Modification time in nanoseconds, which orders files finer than milliseconds the way
    /// Claude Code's fractional `mtimeMs` does.
    pub mtime_ns: i64,
    /// Size in bytes.
    pub size: u64,
    /// `name:` from the frontmatter.
    pub name: Option<String>,
    /// `description:` as Claude Code reads it (a falsy value is none).
    pub description: Option<String>,
    /// The type, from either generation.
    pub memory_type: Option<MemoryType>,
    /// Which frontmatter generation the file uses.
    pub generation: Generation,
    /// Frontmatter keys Mneme does not interpret, in file order.
    pub unknown_keys: Vec<String>,
    /// `[[name]]` links in the body, in order of first appearance.
    pub links: Vec<String>,
    /// Set when the frontmatter YAML does not parse (Claude Code then treats it as empty).
    pub frontmatter_error: Option<FrontmatterProblem>,
    /// Private, or team (`team/…`).
    pub scope: Scope,
}

impl TopicFile {
    /// The file name without folders and without `.md`: what a `[[link]]` may name besides
    /// the `name:` field.
    pub fn stem(&self) -> &str {
        stem_of(&self.rel_path)
    }

    /// The `name:` field, else the file stem.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or_else(|| self.stem())
    }
}

/// The base name of `rel` without `.md`.
pub(crate) fn stem_of(rel: &str) -> &str {
    let base = rel.rsplit('/').next().unwrap_or(rel);
    base.strip_suffix(".md").unwrap_or(base)
}

/// Why a frontmatter block did not parse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontmatterProblem {
    /// 1-based line in the file, when the YAML parser said where.
    pub line: Option<usize>,
    /// The parser's message.
    pub message: String,
}

/// A topic file as Claude Code's manifest sees it, from the first 30 lines only.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicHeader {
    /// Path relative to the memory folder, with `/` separators (Claude Code's `filename`).
    pub rel_path: String,
    /// Absolute path.
    pub abs_path: PathBuf,
    /// Modification time in milliseconds since the epoch.
    pub mtime_ms: i64,
    /// Modification time in nanoseconds (the sort key).
    pub mtime_ns: i64,
    /// `name:` if it appears within the first 30 lines.
    pub name: Option<String>,
    /// `description:` if it appears within the first 30 lines.
    pub description: Option<String>,
    /// The type if it appears within the first 30 lines.
    pub memory_type: Option<MemoryType>,
    /// The type as releases before 2.1.139 read it (a top-level `type` only), for their
    /// manifest ([`super::format_manifest_as`]).
    #[serde(skip)]
    pub top_level_type: Option<MemoryType>,
    /// Private, or team.
    pub scope: Scope,
    /// Listed as a symbolic link (to a file inside the folder; others are problems).
    #[serde(skip)]
    pub symlink: bool,
    /// `description:` when the YAML made it text (not a number, list, …), as written.
    #[serde(skip)]
    pub text_description: Option<String>,
    /// How some releases read this file's head differently, when they do (rare: a head over
    /// 64 KiB, a UTF-16 file); [`TopicHeader::as_read_by`] picks the release's reading.
    #[serde(skip)]
    pub other_readings: Option<Box<OtherReadings>>,
}

/// What the frontmatter of a file's first 30 lines gives a header.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeaderFields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub memory_type: Option<MemoryType>,
    pub top_level_type: Option<MemoryType>,
    pub text_description: Option<String>,
}

impl HeaderFields {
    fn of(text: &str) -> HeaderFields {
        HeaderFields::read(text, FrontmatterReader::NEWEST)
    }

    fn read(text: &str, reader: FrontmatterReader) -> HeaderFields {
        let parsed = frontmatter::parse_with(text, reader);
        let Some(fm) = parsed.frontmatter.as_ref() else { return HeaderFields::default() };
        HeaderFields {
            name: fm.name(),
            description: fm.description(),
            memory_type: fm.memory_type(),
            top_level_type: fm.top_level_type(),
            text_description: match fm.get("description") {
                Some(Value::String(s)) => Some(s.clone()),
                _ => None,
            },
        }
    }
}

/// A file's head as the releases that read it differently see it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OtherReadings {
    /// From 2.1.208 the head keeps whole lines only while they fit in 64 KiB
    /// ([`HEAD_BYTE_CAP`]); set when that cuts something.
    pub capped: Option<HeaderFields>,
    /// From 2.1.299 a file that starts with the UTF-16LE byte-order mark is decoded as
    /// UTF-16 (and capped the same way); set for such a file.
    pub utf16: Option<HeaderFields>,
    /// How the releases with other YAML readers ([`FrontmatterReader`]: Node's strict parser to
    /// 2.1.112, Bun 1.3's with each of its retries to 2.1.179) read the block, for each that
    /// reads it differently from the newest.
    pub by_reader: Vec<(FrontmatterReader, HeaderFields)>,
}

/// What releases from 2.1.208 keep of a file's first 30 lines: whole lines, joined, while
/// they fit in this many UTF-8 bytes.
pub const HEAD_BYTE_CAP: usize = 65_536;

/// A UTF-16 file is read up to this many bytes for its head.
const UTF16_READ_MAX: u64 = 4 << 20;

impl TopicHeader {
    /// The header as `release` reads the file (see [`OtherReadings`]).
    pub fn as_read_by(mut self, release: &mneme_core::versions::Profile) -> TopicHeader {
        let Some(other) = self.other_readings.take() else { return self };
        let reader = release.frontmatter_reader;
        let fields = if let Some((_, f)) = other.by_reader.into_iter().find(|(r, _)| *r == reader) {
            Some(f)
        } else if release.memory_heads_decode_utf16 && other.utf16.is_some() {
            other.utf16
        } else if release.memory_head_byte_cap {
            other.capped
        } else {
            None
        };
        if let Some(f) = fields {
            self.name = f.name;
            self.description = f.description;
            self.memory_type = f.memory_type;
            self.top_level_type = f.top_level_type;
            self.text_description = f.text_description;
        }
        self
    }
}

/// Whole lines of `text` (joined with `\n`) while they fit in `cap` bytes; `None` when all do.
fn capped_lines(text: &str, cap: usize) -> Option<String> {
    let mut used = 0usize;
    for (i, line) in text.split('\n').enumerate() {
        let next = used + usize::from(i > 0) + line.len();
        if next > cap {
            // `used` bytes are the lines before this one, with their joins.
            return Some(text[..used].to_string());
        }
        used = next;
    }
    None
}

/// The first 30 lines of a UTF-16LE file (its byte-order mark first), as the releases that
/// decode it take them: decoded, the mark dropped, split on `\n`, one `\r` dropped from each
/// line's end, whole lines kept within [`HEAD_BYTE_CAP`].
fn utf16_head(bytes: &[u8]) -> String {
    let units: Vec<u16> = bytes.chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect();
    let text = String::from_utf16_lossy(&units);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let lines: Vec<&str> =
        text.split('\n').take(FRONTMATTER_MAX_LINES).map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let joined = lines.join("\n");
    capped_lines(&joined, HEAD_BYTE_CAP).unwrap_or(joined)
}

/// What kind of trouble a [`Problem`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum ProblemKind {
    /// The file could not be opened or read (permissions, a link loop, …).
    Unreadable,
    /// A folder could not be listed; memories inside it are missing from the scan.
    UnreadableFolder,
    /// The frontmatter YAML does not parse; Claude Code treats it as empty.
    MalformedFrontmatter,
    /// The frontmatter closes after line 30, so Claude Code's recall sees no description or type.
    FrontmatterPastLine30,
    /// The file is not valid UTF-8; invalid bytes read as U+FFFD.
    NotUtf8,
    /// A symbolic link leads outside the memory folder; Mneme does not read it.
    SymlinkOutside,
    /// A symbolic link to a folder; Mneme does not descend into it.
    SymlinkNotFollowed,
    /// A `*.md` that is a pipe, socket or device; never opened.
    NotARegularFile,
    /// A name that is not valid UTF-8; skipped.
    NonUtf8Name,
    /// Larger than 10 MiB; only its header was read.
    TooLarge,
    /// The index could not be read.
    IndexUnreadable,
}

/// One per-file problem met during a scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// Path relative to the memory folder.
    pub rel_path: String,
    /// What kind of problem.
    pub kind: ProblemKind,
    /// A sentence for the user. Any command to run is in it too, in backticks, so the command
    /// line can print the message alone.
    pub message: String,
    /// The command the message suggests (the `iconv` that converts a file to UTF-8), with
    /// `FILE` standing for the file, and the message as whole sentences before and after it: a
    /// screen shows the command apart, with this file put in, to copy, instead of picking it
    /// out of the prose. `None` when the fix is not a command.
    pub command: Option<crate::text_form::CommandFix>,
}

impl Problem {
    pub(crate) fn new(rel_path: impl Into<String>, kind: ProblemKind, message: impl Into<String>) -> Self {
        Problem { rel_path: rel_path.into(), kind, message: message.into(), command: None }
    }

    /// The problem of a file at `rel_path` whose `bytes` are not UTF-8: what Mneme does with it,
    /// which byte, the likely encoding, and the command that converts it.
    pub fn not_utf8(rel_path: impl Into<String>, bytes: &[u8]) -> Self {
        const OPENING: &str = "This file is not valid UTF-8, so Mneme shows the bytes it cannot read as U+FFFD and will not save over it (that would replace them for good)";
        let problem = crate::text_form::NotUtf8::of(bytes);
        let why = problem.map_or_else(String::new, |p| format!(": {p}"));
        Problem {
            rel_path: rel_path.into(),
            kind: ProblemKind::NotUtf8,
            message: format!("{OPENING}{why}."),
            command: problem.and_then(|p| p.fix(&format!("{OPENING}: "), "open it again")),
        }
    }
}

/// The result of [`Memdir::scan`]: readable topic files sorted by path, plus problems.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scan {
    /// Topic files, sorted by `rel_path`.
    pub files: Vec<TopicFile>,
    /// Files and folders that could not be read fully.
    pub problems: Vec<Problem>,
}

/// The result of [`Memdir::scan_headers`]: headers in walk order (breadth first, directory
/// order within a folder, like Node's recursive `readdir`), so that a stable sort by mtime
/// breaks ties the way Claude Code's does.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeaderScan {
    /// Headers in walk order.
    pub headers: Vec<TopicHeader>,
    /// Files and folders that could not be read.
    pub problems: Vec<Problem>,
}

/// At most this many folder handles stay open during a scan; candidates in further folders
/// are opened by their full path instead, so a memory folder with thousands of subfolders
/// cannot exhaust the process's file descriptors.
#[cfg(unix)]
const MAX_DIR_FDS: usize = 64;

/// Candidates handed to a reading thread at a time.
const BATCH: usize = 64;

/// A folder that holds candidates: its path (as the walk reached it), and on Unix an open
/// handle, so each file is opened with `openat` on its base name rather than by a full path
/// the kernel would have to walk again component by component.
struct DirHandle {
    path: PathBuf,
    #[cfg(unix)]
    fd: Option<rustix::fd::OwnedFd>,
}

impl DirHandle {
    #[cfg(unix)]
    fn open(path: PathBuf, opened: &mut usize) -> DirHandle {
        use rustix::fs::{Mode, OFlags};
        let fd = if *opened < MAX_DIR_FDS {
            rustix::fs::open(&path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()
        } else {
            None
        };
        *opened += usize::from(fd.is_some());
        DirHandle { path, fd }
    }

    #[cfg(not(unix))]
    fn open(path: PathBuf, _opened: &mut usize) -> DirHandle {
        DirHandle { path }
    }
}

/// A `*.md` found by the walk.
struct Candidate {
    rel: String,
    /// Where the base name starts in `rel`.
    name_at: usize,
    dir: Arc<DirHandle>,
    /// Listed as a symbolic link: containment must be checked before reading.
    symlink: bool,
}

impl Candidate {
    fn name(&self) -> &str {
        &self.rel[self.name_at..]
    }

    /// The absolute path, exactly as `DirEntry::path` would have given it.
    fn abs(&self) -> PathBuf {
        self.dir.path.join(self.name())
    }
}

impl Memdir {
    /// Every topic file, read in full. A missing memory folder is an empty scan.
    pub fn scan(&self) -> Result<Scan, MemdirError> {
        let reader = self.release.frontmatter_reader;
        let read = |root: &Path, c: Candidate, buf: &mut Vec<u8>| read_topic(root, c, buf, reader);
        let Some((mut batches, mut problems)) = self.read_candidates(read)? else { return Ok(Scan::default()) };
        for (_, file_problems) in batches.iter_mut().flatten() {
            problems.append(file_problems);
        }
        let mut files = Vec::with_capacity(batches.iter().map(Vec::len).sum());
        for batch in batches {
            files.extend(batch.into_iter().filter_map(|(f, _)| f));
        }
        sort_by_rel_path(&mut files);
        Ok(Scan { files, problems })
    }

    /// Every topic file, read in full as [`Memdir::scan`] reads it, handed to `f` on the
    /// thread that read it; `f`'s answers in walk order (not sorted), `None`s left out, then
    /// the scan's problems. For callers that reduce or format each file anyway (the memory
    /// list): that work then runs on every core beside the reading, and no sorted copy of the
    /// whole folder is built first. A missing memory folder is an empty scan.
    pub fn scan_map<R: Send>(
        &self,
        f: impl Fn(TopicFile) -> Option<R> + Sync,
    ) -> Result<(Vec<R>, Vec<Problem>), MemdirError> {
        let reader = self.release.frontmatter_reader;
        let read = |root: &Path, c: Candidate, buf: &mut Vec<u8>| {
            let (file, problems) = read_topic(root, c, buf, reader);
            (file.and_then(&f), problems)
        };
        let Some((batches, problems)) = self.read_candidates(read)? else { return Ok((Vec::new(), Vec::new())) };
        Ok(gather(batches, problems))
    }

    /// Every topic file's header from its first 30 lines, in walk order: what Claude Code's
    /// manifest is built from. A missing memory folder is an empty scan.
    pub fn scan_headers(&self) -> Result<HeaderScan, MemdirError> {
        let Some((batches, mut problems)) = self.read_candidates(read_header)? else { return Ok(HeaderScan::default()) };
        let mut headers = Vec::with_capacity(batches.iter().map(Vec::len).sum());
        for r in batches.into_iter().flatten() {
            match r {
                Ok(h) => headers.push(h),
                Err(p) => problems.push(p),
            }
        }
        Ok(HeaderScan { headers, problems })
    }

    /// Every topic file's path and `stat`, in walk order, none opened, and the walk's problems:
    /// what the manifest orders a folder by before it reads the newest files' heads. A missing
    /// memory folder is an empty listing. With `openable_only`, a plain file this process may
    /// not open for reading has no state, as a file the scan would not list: the scan reports
    /// it as a problem and lists it as no memory, so a count made from states agrees with it.
    pub(crate) fn scan_states(&self, openable_only: bool) -> Result<(Vec<Stated>, Vec<Problem>), MemdirError> {
        let stat = |_: &Path, c: Candidate, _: &mut Vec<u8>| {
            let state = if openable_only { stat_openable(&c) } else { stat_candidate(&c) };
            let abs = c.abs();
            Stated { rel: c.rel, abs, symlink: c.symlink, state }
        };
        let Some((batches, problems)) = self.read_candidates(stat)? else { return Ok((Vec::new(), Vec::new())) };
        Ok((batches.into_iter().flatten().collect(), problems))
    }

    /// [`Memdir::scan_map`] for a caller that keeps what it made of each file: a plain file
    /// whose `stat` gives a state `reuse` answers for is not opened (its answer is used), and
    /// every file read is handed to `f` with its state as opened (`None` for a symbolic link,
    /// which is read every time: its target may change with nothing here changing). The set
    /// of files and their order are [`Memdir::scan_map`]'s; problems are those of the files
    /// read.
    pub fn scan_map_reusing<R: Send>(
        &self,
        reuse: impl Fn(&str, &FileState) -> Option<R> + Sync,
        f: impl Fn(TopicFile, Option<FileState>) -> Option<R> + Sync,
    ) -> Result<(Vec<R>, Vec<Problem>), MemdirError> {
        let reader = self.release.frontmatter_reader;
        let read = |root: &Path, c: Candidate, buf: &mut Vec<u8>| {
            if !c.symlink {
                if let Some(r) = stat_candidate(&c).and_then(|st| reuse(&c.rel, &st)) {
                    return (Some(r), Vec::new());
                }
            }
            let symlink = c.symlink;
            let (file, problems) = read_topic_stated(root, c, buf, reader);
            (file.and_then(|(t, st)| f(t, (!symlink).then_some(st))), problems)
        };
        let Some((batches, problems)) = self.read_candidates(read)? else { return Ok((Vec::new(), Vec::new())) };
        Ok(gather(batches, problems))
    }

    /// Walks the folder and maps `f` over every candidate, returning the results in walk order
    /// (in batches, which spares copying them all into one vector) and the walk's own
    /// problems. `None` when the folder does not exist.
    ///
    /// Small folders are read on the calling thread. Past [`PARALLEL_THRESHOLD`] candidates,
    /// reading threads start while the walk goes on: the walk feeds them batches, then reads
    /// too once it is done, so listing a large folder overlaps with reading it.
    fn read_candidates<R: Send>(
        &self,
        f: impl Fn(&Path, Candidate, &mut Vec<u8>) -> R + Sync,
    ) -> Result<Option<Scanned<R>>, MemdirError> {
        let real_root = match self.real_root() {
            Ok(r) => r,
            Err(MemdirError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut walker = Walker::start(&self.root)?;
        let mut first = Vec::new();
        let more = walker.fill(&mut first, PARALLEL_THRESHOLD);
        // Asked only for a folder big enough to share out: the answer costs a dozen system
        // calls (the cgroup's CPU quota files), more than reading a small folder.
        let threads = if more { std::thread::available_parallelism().map_or(1, |n| n.get()).min(8) } else { 1 };
        if threads <= 1 {
            walker.fill(&mut first, usize::MAX);
            let mut buf = Vec::new();
            let out = first.into_iter().map(|c| f(&real_root, c, &mut buf)).collect();
            return Ok(Some((vec![out], walker.problems)));
        }
        let (f, real_root) = (&f, real_root.as_path());
        let (tx, rx) = mpsc::channel::<(usize, Vec<Candidate>)>();
        let rx = Mutex::new(rx);
        let out = std::thread::scope(|s| {
            let rx = &rx;
            let work = || {
                let mut buf = Vec::with_capacity(HEAD_CHUNK);
                let mut done: Vec<(usize, Vec<R>)> = Vec::new();
                loop {
                    let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
                    let Ok((start, batch)) = next else { break };
                    done.push((start, batch.into_iter().map(|c| f(real_root, c, &mut buf)).collect()));
                }
                done
            };
            let handles: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
            let mut sent = 0;
            let mut send = |batch: Vec<Candidate>| {
                let n = batch.len();
                // The receiver outlives every send, so this cannot fail.
                let _ = tx.send((sent, batch));
                sent += n;
            };
            let mut first = first.into_iter();
            loop {
                let batch: Vec<Candidate> = first.by_ref().take(BATCH).collect();
                if batch.is_empty() {
                    break;
                }
                send(batch);
            }
            loop {
                let mut batch = Vec::with_capacity(BATCH);
                let more = walker.fill(&mut batch, BATCH);
                if !batch.is_empty() {
                    send(batch);
                }
                if !more {
                    break;
                }
            }
            drop(tx);
            let mut parts = work();
            for h in handles {
                match h.join() {
                    Ok(mut part) => parts.append(&mut part),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            parts.sort_unstable_by_key(|p| p.0);
            parts.into_iter().map(|(_, part)| part).collect()
        });
        Ok(Some((out, walker.problems)))
    }
}

/// Sorts by `rel_path`, sorting indices and then moving each file once: a `TopicFile` is a
/// few hundred bytes, too big to shuffle around on every step of a sort.
fn sort_by_rel_path(files: &mut [TopicFile]) {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_unstable_by(|&a, &b| files[a].rel_path.cmp(&files[b].rel_path));
    // Apply the permutation in place, one cycle at a time: position `i` takes the file from
    // `order[i]`.
    for start in 0..order.len() {
        let mut i = start;
        while order[i] != start {
            let j = order[i];
            files.swap(i, j);
            order[i] = i;
            i = j;
        }
        order[i] = i;
    }
}

/// Per-candidate results in walk order, batch by batch, and the walk's problems.
type Scanned<R> = (Vec<Vec<R>>, Vec<Problem>);

/// The folder being listed.
struct Listing {
    entries: fs::ReadDir,
    path: PathBuf,
    prefix: String,
    /// Made when the folder's first candidate turns up.
    handle: Option<Arc<DirHandle>>,
}

impl Listing {
    fn handle(&mut self, opened: &mut usize) -> Arc<DirHandle> {
        self.handle.get_or_insert_with(|| Arc::new(DirHandle::open(self.path.clone(), opened))).clone()
    }
}

/// A breadth-first listing of `*.md` candidates (Node's recursive `readdir` order), which
/// can stop after some candidates and carry on later.
struct Walker {
    queue: VecDeque<(PathBuf, String)>,
    current: Option<Listing>,
    problems: Vec<Problem>,
    dir_fds: usize,
}

impl Walker {
    /// Starts listing the memory folder; failing to list it at all is an error.
    fn start(root: &Path) -> Result<Walker, MemdirError> {
        let entries = fs::read_dir(root).map_err(|e| MemdirError::Io {
            action: "list the memory folder",
            path: root.to_path_buf(),
            source: e,
        })?;
        Ok(Walker {
            queue: VecDeque::new(),
            current: Some(Listing { entries, path: root.to_path_buf(), prefix: String::new(), handle: None }),
            problems: Vec::new(),
            dir_fds: 0,
        })
    }

    /// Appends up to `max` candidates to `out`; `false` once the walk is over.
    fn fill(&mut self, out: &mut Vec<Candidate>, max: usize) -> bool {
        let target = out.len().saturating_add(max);
        loop {
            if out.len() >= target {
                return true;
            }
            let Some(cur) = self.current.as_mut() else {
                let Some((dir, prefix)) = self.queue.pop_front() else { return false };
                match fs::read_dir(&dir) {
                    Ok(entries) => self.current = Some(Listing { entries, path: dir, prefix, handle: None }),
                    Err(e) => self.problems.push(Problem::new(
                        prefix,
                        ProblemKind::UnreadableFolder,
                        format!("Could not list this folder ({e}); memories inside it are not shown."),
                    )),
                }
                continue;
            };
            let entry = match cur.entries.next() {
                None => {
                    self.current = None;
                    continue;
                }
                Some(Ok(e)) => e,
                Some(Err(e)) => {
                    self.problems.push(Problem::new(
                        cur.prefix.clone(),
                        ProblemKind::UnreadableFolder,
                        format!("Could not finish listing this folder ({e})."),
                    ));
                    self.current = None;
                    continue;
                }
            };
            let os_name = entry.file_name();
            let Some(name) = os_name.to_str() else {
                self.problems.push(Problem::new(
                    join_rel(&cur.prefix, &crate::text_form::escaped_name(&os_name)),
                    ProblemKind::NonUtf8Name,
                    "This name is not UTF-8 (the \\xNN bytes were written by a system using another encoding, such as Latin-1), so neither Claude Code nor Mneme reads it. Rename it to a UTF-8 name.",
                ));
                continue;
            };
            let rel = join_rel(&cur.prefix, name);
            let Ok(ft) = entry.file_type() else {
                self.problems.push(Problem::new(rel, ProblemKind::Unreadable, "Could not tell what kind of file this is."));
                continue;
            };
            let is_md = name.ends_with(".md") && name != INDEX_FILE;
            let name_at = rel.len() - name.len();
            if ft.is_dir() {
                self.queue.push_back((entry.path(), rel));
            } else if ft.is_symlink() {
                if is_md {
                    out.push(Candidate { rel, name_at, dir: cur.handle(&mut self.dir_fds), symlink: true });
                } else if fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
                    self.problems.push(Problem::new(
                        rel,
                        ProblemKind::SymlinkNotFollowed,
                        "This is a symbolic link to a folder; Mneme does not look inside it, so memories there are not shown.",
                    ));
                }
            } else if is_md {
                if ft.is_file() {
                    out.push(Candidate { rel, name_at, dir: cur.handle(&mut self.dir_fds), symlink: false });
                } else {
                    // What is there, in words, from an `lstat` that still sees what was listed
                    // (something swapped in since is not described as what it replaced).
                    let what = fs::symlink_metadata(entry.path())
                        .ok()
                        .filter(|m| m.file_type() == ft)
                        .map_or("a pipe, socket or device", |m| crate::open::kind_of(&m));
                    self.problems.push(Problem::new(
                        rel,
                        ProblemKind::NotARegularFile,
                        format!(
                            "This is {what}, not a plain file, though it is named like a memory; Mneme does not open it. Move it aside or delete it."
                        ),
                    ));
                }
            }
        }
    }
}

fn join_rel(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        let mut s = String::with_capacity(prefix.len() + 1 + name.len());
        s.push_str(prefix);
        s.push('/');
        s.push_str(name);
        s
    }
}

/// What a scan needs from `fstat`.
struct FileStat {
    size: u64,
    mtime_ns: i64,
    /// 0 a plain file, 1 a folder, 2 anything else.
    kind: u8,
    /// The rest of [`FileState`]: the file's identity and its last change of any kind.
    dev: u64,
    ino: u64,
    changed_ns: i64,
}

impl FileStat {
    fn state(&self) -> FileState {
        FileState { dev: self.dev, ino: self.ino, size: self.size, mtime_ns: self.mtime_ns, changed_ns: self.changed_ns }
    }
}

/// What `stat` says of a memory file, enough to tell that it changed without reading it: a
/// write changes its size or modification time, a write that puts either back (`touch -d`,
/// `cp -p`, `rsync -t`) still moves its change time (`ctime`, which nothing can set), and a
/// file renamed into its place is another inode. A cache of what was read from a file may
/// reuse it while all of this is equal, once the change time is old enough that a second
/// write within the same clock tick is ruled out ([`FileState::changed_ns`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileState {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    /// The change time (`ctime`) in nanoseconds since the epoch, on Unix; elsewhere the
    /// modification time. File systems stamp it from a coarse clock (a few milliseconds), so
    /// two writes within one tick can share it: only a state whose change time lies clearly in
    /// the past says the file is as it was read.
    pub changed_ns: i64,
}

/// A `*.md` the walk found, stat'ed but not opened: what ordering a folder by modification
/// time needs, without reading it.
#[derive(Debug, Clone)]
pub(crate) struct Stated {
    pub rel: String,
    pub abs: PathBuf,
    /// Listed as a symbolic link.
    pub symlink: bool,
    /// A plain file's state (links followed); `None` when `stat` failed or it is not a plain
    /// file (the scan would not list it: it leaves such a file out too).
    pub state: Option<FileState>,
}

/// Folds seconds and nanoseconds into nanoseconds, clamped as [`file_stat`] clamps.
#[cfg(unix)]
fn fold_ns(secs: i64, nanos: i64) -> i64 {
    let ns = i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    i64::try_from(ns.clamp(-i128::from(i64::MAX), i128::from(i64::MAX))).unwrap_or(0)
}

/// `stat` of a candidate without opening it: a plain one relative to its folder's handle and
/// not followed (as the scan opens it), a link followed (as Claude Code reads it).
#[cfg(unix)]
fn stat_candidate(c: &Candidate) -> Option<FileState> {
    stat_candidate_raw(c).map(|(state, _)| state)
}

/// [`stat_candidate`], `None` too when the file's mode (or an ACL) refuses this process a read.
/// A file this process owns whose mode gives its owner a read is readable by the `stat` alone
/// (an ACL cannot take from the owner what the mode gives it), so the usual memory folder —
/// the user's own files — costs no call beyond the `stat`; any other file asks `access`.
#[cfg(unix)]
fn stat_openable(c: &Candidate) -> Option<FileState> {
    let (state, st) = stat_candidate_raw(c)?;
    let owner_reads = st.st_uid == rustix::process::geteuid().as_raw() && st.st_mode & 0o400 != 0;
    (owner_reads || !read_refused(c)).then_some(state)
}

#[cfg(not(unix))]
fn stat_openable(c: &Candidate) -> Option<FileState> {
    stat_candidate(c)
}

/// [`stat_candidate`] with the `stat` it was made from.
#[cfg(unix)]
fn stat_candidate_raw(c: &Candidate) -> Option<(FileState, rustix::fs::Stat)> {
    use rustix::fs::{AtFlags, FileType};
    let st = if c.symlink {
        rustix::fs::stat(c.abs()).ok()?
    } else {
        match &c.dir.fd {
            Some(dir) => rustix::fs::statat(dir, c.name(), AtFlags::SYMLINK_NOFOLLOW).ok()?,
            None => rustix::fs::lstat(c.abs()).ok()?,
        }
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return None;
    }
    #[allow(clippy::unnecessary_cast)]
    let state = FileState {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        size: u64::try_from(st.st_size).unwrap_or(0),
        mtime_ns: fold_ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
        changed_ns: fold_ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
    };
    Some((state, st))
}

/// Whether the file's mode (or an ACL) refuses this process a read, as `open` would, told
/// by `access` (the effective ids, as `open` checks them), which opens nothing. Any other
/// answer (the call failing for another reason) is left to the read itself.
#[cfg(unix)]
fn read_refused(c: &Candidate) -> bool {
    use rustix::fs::{Access, AtFlags};
    let answer = match &c.dir.fd {
        Some(dir) => rustix::fs::accessat(dir, c.name(), Access::READ_OK, AtFlags::EACCESS),
        None => rustix::fs::accessat(rustix::fs::CWD, c.abs(), Access::READ_OK, AtFlags::EACCESS),
    };
    matches!(answer, Err(e) if e == rustix::io::Errno::ACCESS || e == rustix::io::Errno::PERM)
}

#[cfg(not(unix))]
fn stat_candidate(c: &Candidate) -> Option<FileState> {
    let abs = c.abs();
    let meta = if c.symlink { fs::metadata(&abs) } else { fs::symlink_metadata(&abs) }.ok()?;
    if !meta.is_file() {
        return None;
    }
    let mtime_ns = super::revision::mtime_ns(&meta);
    Some(FileState { dev: 0, ino: 0, size: meta.len(), mtime_ns, changed_ns: mtime_ns })
}

/// `fstat` through rustix: a plain `fstat` is cheaper than the `statx` asking for the birth
/// time that `File::metadata` makes. The modification time is folded into nanoseconds the
/// way [`super::revision::mtime_ns`] folds a `SystemTime`.
#[cfg(unix)]
fn file_stat(file: &File) -> io::Result<FileStat> {
    use rustix::fs::FileType;
    let st = rustix::fs::fstat(file)?;
    #[allow(clippy::unnecessary_cast)]
    let (mtime_ns, changed_ns) =
        (fold_ns(st.st_mtime as i64, st.st_mtime_nsec as i64), fold_ns(st.st_ctime as i64, st.st_ctime_nsec as i64));
    let kind = match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => 0,
        FileType::Directory => 1,
        _ => 2,
    };
    #[allow(clippy::unnecessary_cast)]
    Ok(FileStat { size: u64::try_from(st.st_size).unwrap_or(0), mtime_ns, kind, dev: st.st_dev as u64, ino: st.st_ino as u64, changed_ns })
}

#[cfg(not(unix))]
fn file_stat(file: &File) -> io::Result<FileStat> {
    let meta = file.metadata()?;
    let kind = if meta.is_file() {
        0
    } else if meta.is_dir() {
        1
    } else {
        2
    };
    let mtime_ns = super::revision::mtime_ns(&meta);
    Ok(FileStat { size: meta.len(), mtime_ns, kind, dev: 0, ino: 0, changed_ns: mtime_ns })
}

/// Opens a plain (not symbolic link) candidate relative to its folder's handle. `O_NOFOLLOW`:
/// the walk saw a plain file, and a link swapped in since must not be followed.
#[cfg(unix)]
fn open_plain(c: &Candidate, abs: &Path) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    // NONBLOCK: a FIFO planted under a memory's name must not wait for a writer.
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK;
    let fd = match &c.dir.fd {
        Some(dir) => rustix::fs::openat(dir, c.name(), flags, Mode::empty())?,
        None => rustix::fs::open(abs, flags, Mode::empty())?,
    };
    Ok(File::from(fd))
}

#[cfg(not(unix))]
fn open_plain(_c: &Candidate, abs: &Path) -> io::Result<File> {
    File::open(abs)
}

/// Opens a candidate, refusing links that leave the memory folder or lead to folders.
fn open_candidate(real_root: &Path, c: &Candidate, abs: &Path) -> Result<(File, FileStat), Problem> {
    let unreadable = |e: io::Error| Problem::new(&c.rel, ProblemKind::Unreadable, format!("Could not read this file ({e})."));
    let file = if c.symlink {
        let real = fs::canonicalize(abs).map_err(|e| {
            Problem::new(&c.rel, ProblemKind::Unreadable, format!("This symbolic link cannot be followed ({e})."))
        })?;
        if !real.starts_with(real_root) {
            return Err(Problem::new(
                &c.rel,
                ProblemKind::SymlinkOutside,
                format!(
                    "This symbolic link leads outside the memory folder (to {}); Mneme does not read it.",
                    real.display()
                ),
            ));
        }
        crate::open::open_no_wait(abs).map_err(unreadable)?
    } else {
        open_plain(c, abs).map_err(unreadable)?
    };
    let st = file_stat(&file).map_err(unreadable)?;
    if st.kind != 0 {
        // The words of `describe_type`, without its leading "it is ".
        let what = if st.kind == 1 { "a folder" } else { "a device, pipe or socket" };
        return Err(Problem::new(
            &c.rel,
            if st.kind == 1 { ProblemKind::SymlinkNotFollowed } else { ProblemKind::NotARegularFile },
            format!("This is not a plain file ({what}); Mneme skips it."),
        ));
    }
    Ok((file, st))
}

/// Reads until at least `max_lines` line feeds are in `buf`, the file ends or
/// [`HEAD_READ_MAX_BYTES`] are in; returns how many bytes of `buf` hold the file's start. The buffer keeps its length between files, so
/// a scan of thousands of files neither reallocates nor re-zeroes it. Like
/// [`read_known_size`], it takes the file to end at the size `fstat` gave (`len`), which
/// spares the read that would only see the end; a size of 0 reads to the end regardless.
fn read_head(file: &mut File, max_lines: usize, len: u64, buf: &mut Vec<u8>) -> io::Result<usize> {
    read_head_upto(file, max_lines, len, buf, HEAD_READ_MAX_BYTES)
}

fn read_head_upto(file: &mut File, max_lines: usize, len: u64, buf: &mut Vec<u8>, max_bytes: usize) -> io::Result<usize> {
    if buf.len() < HEAD_CHUNK {
        buf.resize(HEAD_CHUNK, 0);
    }
    let mut filled = 0;
    let mut newlines = 0;
    loop {
        if filled >= max_bytes {
            return Ok(max_bytes);
        }
        if filled == buf.len() {
            buf.resize((buf.len() * 2).min(max_bytes.max(HEAD_CHUNK)), 0);
        }
        let room = buf.len().min(max_bytes) - filled;
        let n = match file.read(&mut buf[filled..filled + room]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(filled);
        }
        newlines += buf[filled..filled + n].iter().filter(|&&b| b == b'\n').count();
        filled += n;
        if newlines >= max_lines || filled as u64 == len {
            return Ok(filled);
        }
    }
}

/// Claude Code's `readFileInRange(path, 0, max_lines)` content: BOM stripped, the first
/// `max_lines` lines (split on `\n`) with one `\r` dropped from each line's end, joined with
/// `\n` (no trailing newline). A lone CR (a classic Mac line end) is no line break there: a
/// file written with them is one line, so its frontmatter is not seen (captured from 2.1.100,
/// 2.1.197 and 2.1.332 with `scripts/manifest-sweep.sh`).
pub(crate) fn first_lines(bytes: &[u8], max_lines: usize) -> (Cow<'_, str>, bool) {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // Cut after `max_lines` line breaks on the raw bytes, before decoding, so a multi-byte
    // character split by the read boundary further on cannot fail the decode; the break
    // itself goes (lines are joined, not terminated).
    let cut = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(max_lines.saturating_sub(1)).map_or(bytes.len(), |(i, _)| i);
    let head = &bytes[..cut];
    let (text, lossy) = match std::str::from_utf8(head) {
        Ok(s) => (Cow::Borrowed(s), false),
        Err(_) => (Cow::Owned(String::from_utf8_lossy(head).into_owned()), true),
    };
    if text.contains('\r') {
        let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        (Cow::Owned(lines.join("\n")), lossy)
    } else {
        (text, lossy)
    }
}

fn read_header(real_root: &Path, c: Candidate, buf: &mut Vec<u8>) -> Result<TopicHeader, Problem> {
    let abs = c.abs();
    let (file, st) = open_candidate(real_root, &c, &abs)?;
    header_from(c.rel, abs, file, &st, c.symlink, buf)
}

/// The header of the plain file at `abs`, wherever it is and however it was reached (links
/// followed): what Claude Code's manifest reads of a file its own listing found
/// ([`super::listing`]), which may lie outside the folder. `None` when it is not a plain file
/// or cannot be read: Claude Code leaves such an entry out.
pub(crate) fn header_at(rel: String, abs: PathBuf, symlink: bool, buf: &mut Vec<u8>) -> Option<TopicHeader> {
    let file = crate::open::open_no_wait(&abs).ok()?;
    let st = file_stat(&file).ok()?;
    if st.kind != 0 {
        return None;
    }
    header_from(rel, abs, file, &st, symlink, buf).ok()
}

/// [`header_at`] for a file the walk listed as a plain file: opened without following a link
/// swapped in since, as the scan opens it.
pub(crate) fn header_of_plain(rel: String, abs: PathBuf, buf: &mut Vec<u8>) -> Option<TopicHeader> {
    let file = crate::open::open_no_wait_no_follow(&abs).ok()?;
    let st = file_stat(&file).ok()?;
    if st.kind != 0 {
        return None;
    }
    header_from(rel, abs, file, &st, false, buf).ok()
}

fn header_from(
    rel: String,
    abs: PathBuf,
    mut file: File,
    st: &FileStat,
    symlink: bool,
    buf: &mut Vec<u8>,
) -> Result<TopicHeader, Problem> {
    let unreadable = |e: io::Error| Problem::new(&rel, ProblemKind::Unreadable, format!("Could not read this file ({e})."));
    let mut n = read_head(&mut file, FRONTMATTER_MAX_LINES, st.size, buf).map_err(unreadable)?;
    let utf16 = buf[..n].starts_with(&[0xFF, 0xFE]);
    if utf16 {
        // Its line breaks are two bytes: read on, up to a bound, for 30 of them.
        let mut rest = Vec::new();
        (&mut file).take(UTF16_READ_MAX.saturating_sub(n as u64)).read_to_end(&mut rest).map_err(unreadable)?;
        buf.truncate(n);
        buf.extend_from_slice(&rest);
        n = buf.len();
    }
    drop(file);
    let (text, _) = first_lines(&buf[..n], FRONTMATTER_MAX_LINES);
    let f = HeaderFields::of(&text);
    let mut other = OtherReadings::default();
    if let Some(kept) = capped_lines(&text, HEAD_BYTE_CAP) {
        other.capped = Some(HeaderFields::of(&kept));
    }
    if utf16 {
        other.utf16 = Some(HeaderFields::of(&utf16_head(&buf[..n])));
    }
    // Only a block beyond plain `key: value` lines can read differently; most memories' are not.
    if frontmatter::block_bounds(&text).is_some_and(|(yaml, _)| !frontmatter::is_plain_block(&text[yaml])) {
        for reader in FrontmatterReader::ALL.into_iter().filter(|r| *r != FrontmatterReader::NEWEST) {
            let theirs = HeaderFields::read(&text, reader);
            if theirs != f {
                other.by_reader.push((reader, theirs));
            }
        }
    }
    let ns = st.mtime_ns;
    let scope = Scope::of(&rel);
    Ok(TopicHeader {
        rel_path: rel,
        abs_path: abs,
        mtime_ns: ns,
        mtime_ms: ns_to_ms(ns),
        name: f.name,
        description: f.description,
        memory_type: f.memory_type,
        top_level_type: f.top_level_type,
        scope,
        symlink,
        text_description: f.text_description,
        other_readings: (other != OtherReadings::default()).then(|| Box::new(other)),
    })
}

/// `new Date(mtimeMs)` truncates toward zero; so does integer division.
pub(crate) fn ns_to_ms(ns: i64) -> i64 {
    ns / 1_000_000
}

/// A topic file read in full, its frontmatter as `reader` (the release listed for) reads it.
fn read_topic(real_root: &Path, c: Candidate, buf: &mut Vec<u8>, reader: FrontmatterReader) -> (Option<TopicFile>, Vec<Problem>) {
    let (file, problems) = read_topic_stated(real_root, c, buf, reader);
    (file.map(|(f, _)| f), problems)
}

/// [`read_topic`], with the state of the file as it was opened (taken before the read: a
/// write during the read leaves a later state, so the text is never taken for newer than it is).
fn read_topic_stated(
    real_root: &Path,
    c: Candidate,
    buf: &mut Vec<u8>,
    reader: FrontmatterReader,
) -> (Option<(TopicFile, FileState)>, Vec<Problem>) {
    let mut problems = Vec::new();
    let abs = c.abs();
    let (mut file, st) = match open_candidate(real_root, &c, &abs) {
        Ok(x) => x,
        Err(p) => return (None, vec![p]),
    };
    let read = if st.size > MAX_FULL_READ_BYTES {
        problems.push(Problem::new(
            &c.rel,
            ProblemKind::TooLarge,
            format!("This file is {} bytes; only its header was read, so its links are not shown.", st.size),
        ));
        read_head(&mut file, FRONTMATTER_MAX_LINES, st.size, buf).map(|n| {
            // Drop the partial last line so a character cut by the read does not decode badly.
            let keep = buf[..n].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            buf.truncate(keep);
        })
    } else {
        read_known_size(&mut file, st.size, buf)
    };
    drop(file);
    if let Err(e) = read {
        problems.push(Problem::new(&c.rel, ProblemKind::Unreadable, format!("Could not read this file ({e}).")));
        return (None, problems);
    }
    let topic = topic_from_bytes(c.rel, abs, st.mtime_ns, st.size, buf, &mut problems, reader);
    (Some((topic, st.state())), problems)
}

/// A [`TopicFile`] from a file's bytes, its frontmatter as `reader` reads it, adding to
/// `problems` what a reader should know.
pub(crate) fn build_topic(
    rel: &str,
    abs: &Path,
    meta: &Metadata,
    raw: &[u8],
    problems: &mut Vec<Problem>,
    reader: FrontmatterReader,
) -> TopicFile {
    topic_from_bytes(rel.to_string(), abs.to_path_buf(), super::revision::mtime_ns(meta), meta.len(), raw, problems, reader)
}

fn topic_from_bytes(
    rel: String,
    abs: PathBuf,
    ns: i64,
    size: u64,
    raw: &[u8],
    problems: &mut Vec<Problem>,
    reader: FrontmatterReader,
) -> TopicFile {
    let bytes = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
    let text = match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            problems.push(Problem::not_utf8(&rel, bytes));
            Cow::Owned(String::from_utf8_lossy(bytes).into_owned())
        }
    };
    let parsed = frontmatter::parse_with(&text, reader);
    let fm = parsed.frontmatter.as_ref();
    let frontmatter_error = fm.and_then(|f| f.error.as_ref()).map(|e| {
        problems.push(Problem::new(
            &rel,
            ProblemKind::MalformedFrontmatter,
            format!("{e}. Claude Code reads this file as having no description or type; fix the YAML."),
        ));
        FrontmatterProblem { line: e.line, message: e.message.clone() }
    });
    if let Some(f) = fm {
        // The closing fence is on the line after the last YAML line; recall reads 30 lines.
        let closing_line = text[..f.block_len].trim_end().matches('\n').count() + 1;
        if closing_line > FRONTMATTER_MAX_LINES && f.error.is_none() {
            problems.push(Problem::new(
                &rel,
                ProblemKind::FrontmatterPastLine30,
                format!(
                    "The frontmatter ends on line {closing_line}; Claude Code's recall reads only the first {FRONTMATTER_MAX_LINES} lines, so it sees no description or type. Shorten the frontmatter."
                ),
            ));
        }
    }
    let scope = Scope::of(&rel);
    TopicFile {
        rel_path: rel,
        abs_path: abs,
        mtime_ms: ns_to_ms(ns),
        mtime_ns: ns,
        size,
        name: fm.and_then(|f| f.name()),
        description: fm.and_then(|f| f.description()),
        memory_type: fm.and_then(|f| f.memory_type()),
        generation: fm.map_or(Generation::None, |f| f.generation()),
        unknown_keys: fm.map(|f| f.unknown_keys()).unwrap_or_default(),
        links: frontmatter::links(parsed.body),
        frontmatter_error,
        scope,
    }
}

/// Reads a whole file whose size `fstat` already gave: `File::read_to_end` would ask the
/// kernel for the size and position again and read once more to see the end, three extra
/// system calls per file that add up over ten thousand memories. It stops once the size
/// `fstat` reported has arrived (a file that shrank ends early at end of file; one that grew
/// meanwhile is read as it was when opened).
fn read_known_size(file: &mut File, len: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    buf.resize(len as usize + 1, 0);
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if filled == len as usize {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(())
}

/// Reads a file's bytes and metadata; `None` when it does not exist.
pub(crate) fn read_bytes(abs: &Path) -> Result<Option<(Vec<u8>, Metadata)>, MemdirError> {
    read_opened(abs, crate::open::open_no_wait(abs))
}

/// [`read_bytes`] of the file at `abs` itself, never a link's target: a symbolic link there is
/// [`MemdirError::NotARegularFile`]. For a file a type check has just found plain (a merge's
/// source), which someone may swap for a link before the read.
pub(crate) fn read_bytes_no_follow(abs: &Path) -> Result<Option<(Vec<u8>, Metadata)>, MemdirError> {
    read_opened(abs, crate::open::open_no_wait_no_follow(abs))
}

fn read_opened(abs: &Path, opened: io::Result<fs::File>) -> Result<Option<(Vec<u8>, Metadata)>, MemdirError> {
    let mut file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if crate::open::is_a_link(&e) => {
            return Err(MemdirError::NotARegularFile { path: abs.display().to_string(), detail: "it is a symbolic link".into() })
        }
        Err(e) => return Err(MemdirError::Io { action: "open", path: abs.to_path_buf(), source: e }),
    };
    let meta = file.metadata().map_err(io_err("inspect", abs))?;
    if !meta.is_file() {
        return Err(MemdirError::NotARegularFile {
            path: abs.display().to_string(),
            detail: describe_type(&meta),
        });
    }
    let too_large = || MemdirError::Io {
        action: "read",
        path: abs.to_path_buf(),
        source: io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is larger than {} MiB, which Mneme does not read whole; shorten or split it in an editor", MAX_READ_BYTES >> 20),
        ),
    };
    if meta.len() > MAX_READ_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(crate::open::capacity_for(meta.len()));
    // It may grow after the size was taken: the read stops one byte past the cap either way.
    (&mut file).take(MAX_READ_BYTES + 1).read_to_end(&mut bytes).map_err(io_err("read", abs))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(too_large());
    }
    Ok(Some((bytes, meta)))
}

/// The answers of a walk's batches in walk order, with each file's problems after the walk's own.
fn gather<R>(batches: Vec<Vec<(Option<R>, Vec<Problem>)>>, mut problems: Vec<Problem>) -> (Vec<R>, Vec<Problem>) {
    let mut out = Vec::with_capacity(batches.iter().map(Vec::len).sum());
    for (r, mut file_problems) in batches.into_iter().flatten() {
        problems.append(&mut file_problems);
        out.extend(r);
    }
    (out, problems)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use mneme_core::frontmatter::Generation;

    fn check_lines(input: &[u8], n: usize, expect: &str) {
        assert_eq!(first_lines(input, n).0, expect, "{:?}", String::from_utf8_lossy(input));
    }

    #[test]
    fn a_head_read_stops_at_its_byte_cap_without_a_line_break() {
        let t = TestDir::new();
        t.write("one-line.md", &"x".repeat(100_000));
        t.write("lines.md", &"ab\n".repeat(100));
        let mut buf = Vec::new();
        // A size of 0 (unknown) would otherwise read on to the end.
        let mut f = File::open(t.mem().join("one-line.md")).unwrap();
        assert_eq!(read_head_upto(&mut f, 30, 0, &mut buf, 20_000).unwrap(), 20_000);
        assert!(buf.len() <= 32 * 1024, "the buffer grew to {}", buf.len());
        let mut f = File::open(t.mem().join("one-line.md")).unwrap();
        assert_eq!(read_head_upto(&mut f, 30, 0, &mut buf, 1000).unwrap(), 1000);
        // Line breaks still end it first.
        let mut f = File::open(t.mem().join("lines.md")).unwrap();
        let n = read_head_upto(&mut f, 30, 0, &mut buf, 20_000).unwrap();
        assert_eq!(n, 300);
        assert_eq!(read_head(&mut File::open(t.mem().join("one-line.md")).unwrap(), 30, 0, &mut buf).unwrap(), 100_000);
    }

    #[test]
    fn a_file_past_the_read_cap_is_refused_with_what_to_do() {
        let t = TestDir::new();
        t.write("big.md", "---\nname: big\n---\n");
        // Sparse: no disk space is used for the hole.
        File::options().write(true).open(t.mem().join("big.md")).unwrap().set_len(MAX_READ_BYTES + 1).unwrap();
        let err = t.memdir().read("big.md").unwrap_err();
        assert_eq!(err.code(), "io");
        assert!(err.to_string().contains("larger than 64 MiB, which Mneme does not read whole; shorten or split it"), "{err}");
        File::options().write(true).open(t.mem().join("big.md")).unwrap().set_len(MAX_READ_BYTES).unwrap();
        let (bytes, _) = read_bytes(&t.mem().join("big.md")).unwrap().unwrap();
        assert_eq!(bytes.len() as u64, MAX_READ_BYTES);
    }

    #[test]
    fn first_lines_like_read_file_in_range() {
        check_lines(b"a\nb\nc\n", 2, "a\nb");
        check_lines(b"a\nb\nc\n", 3, "a\nb\nc");
        check_lines(b"a\nb\nc\n", 4, "a\nb\nc\n");
        check_lines(b"a\r\nb\r\nc", 2, "a\nb");
        // A lone CR is no line break (Claude Code's own reading); one before a line's end goes.
        check_lines(b"a\rb\rc", 2, "a\rb\rc");
        check_lines(b"a\rb\r\nc\r", 5, "a\rb\nc");
        check_lines(b"a\r\n", 1, "a");
        check_lines(b"\xEF\xBB\xBF---\ntype: user\n---\n", 30, "---\ntype: user\n---\n");
        check_lines(b"a\n\xC3", 1, "a");
        assert!(first_lines(b"a\xFF\nb", 5).1, "lossy flag");
    }

    #[test]
    fn walk_finds_md_at_any_depth_except_memory_md() {
        let t = TestDir::new();
        t.write("MEMORY.md", "- [a](a.md)\n");
        t.write("a.md", "---\nname: a\n---\n");
        t.write("team/MEMORY.md", "");
        t.write("team/b.md", "x");
        t.write("logs/2026/01/2026-01-02.md", "log");
        t.write("deep/er/c.md", "c");
        t.write("notes.txt", "ignored");
        t.write("upper.MD", "ignored");
        t.write("memory.md", "lowercase counts");
        let scan = t.memdir().scan().unwrap();
        let rels: Vec<_> = scan.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(rels, ["a.md", "deep/er/c.md", "logs/2026/01/2026-01-02.md", "memory.md", "team/b.md"]);
        assert_eq!(scan.files[4].scope, Scope::Team);
        assert!(scan.problems.is_empty(), "{:?}", scan.problems);
        let headers = t.memdir().scan_headers().unwrap();
        assert_eq!(headers.headers.len(), 5);
    }

    #[test]
    fn missing_root_is_empty_and_file_root_is_an_error() {
        let t = TestDir::new();
        let m = Memdir::new(t.path().join("nope"), t.path().join("trash"), clock());
        assert_eq!(m.scan().unwrap(), Scan::default());
        assert_eq!(m.manifest(), "");
        std::fs::write(t.path().join("file"), "x").unwrap();
        let m = Memdir::new(t.path().join("file"), t.path().join("trash"), clock());
        assert_eq!(m.scan().unwrap_err().code(), "root-not-a-directory");
    }

    #[test]
    fn both_generations_unknown_keys_links_and_crlf() {
        let t = TestDir::new();
        t.write("old.md", "---\nname: old\ndescription: legacy\ntype: feedback\noriginSessionId: s1\n---\nSee [[new]] and [[ghost]].\n");
        t.write(
            "new.md",
            "---\r\nname: new\r\ndescription: current\r\nmetadata:\r\n  type: project\r\ncreated: 2026-01-01\r\n---\r\n\r\nBody [[old]]\r\n",
        );
        t.write("plain.md", "no frontmatter at all [[x]]");
        let scan = t.memdir().scan().unwrap();
        let by = |r: &str| scan.files.iter().find(|f| f.rel_path == r).unwrap().clone();
        let old = by("old.md");
        assert_eq!(old.generation, Generation::TopLevelType);
        assert_eq!(old.memory_type, Some(MemoryType::Feedback));
        assert_eq!(old.unknown_keys, ["originSessionId"]);
        assert_eq!(old.links, ["new", "ghost"]);
        let new = by("new.md");
        assert_eq!(new.generation, Generation::Metadata);
        assert_eq!(new.memory_type, Some(MemoryType::Project));
        assert_eq!(new.description.as_deref(), Some("current"));
        assert_eq!(new.unknown_keys, ["created"]);
        assert_eq!(new.links, ["old"]);
        let plain = by("plain.md");
        assert_eq!(plain.generation, Generation::None);
        assert_eq!(plain.display_name(), "plain");
    }

    #[test]
    fn malformed_yaml_is_reported_not_fatal() {
        let t = TestDir::new();
        t.write("bad.md", "---\ndescription: [unclosed\n  - : :\n---\nbody [[a]]");
        t.write("good.md", "---\ndescription: fine\n---\n");
        let scan = t.memdir().scan().unwrap();
        assert_eq!(scan.files.len(), 2);
        let bad = &scan.files[0];
        assert!(bad.frontmatter_error.is_some());
        assert_eq!(bad.description, None);
        assert_eq!(bad.links, ["a"]);
        assert_eq!(scan.problems.len(), 1);
        assert_eq!(scan.problems[0].kind, ProblemKind::MalformedFrontmatter);
        assert_eq!(scan.problems[0].rel_path, "bad.md");
    }

    /// A memory is read, listed and reported on as the release it is listed for reads its
    /// frontmatter: 2.1.160's YAML (Bun 1.3, its retry not yet untabbing) refuses a tab-indented
    /// `metadata:` block after the first key, where the newest reads it.
    #[test]
    fn a_memory_reads_as_the_release_it_is_listed_for_reads_it() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let t = TestDir::new();
        t.write("tabbed.md", "---\ndescription: tabbed\nmetadata:\n\ttype: user\n---\nbody\n");
        let newest = t.memdir().read("tabbed.md").unwrap();
        assert_eq!((newest.topic.description.as_deref(), newest.topic.memory_type), (Some("tabbed"), Some(MemoryType::User)));
        assert!(newest.problems.is_empty());
        let old = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 160)));
        let read = old.read("tabbed.md").unwrap();
        assert_eq!((read.topic.description, read.topic.memory_type), (None, None));
        assert_eq!(read.problems.len(), 1);
        assert_eq!(read.problems[0].kind, ProblemKind::MalformedFrontmatter);
        let scan = old.scan().unwrap();
        assert_eq!(scan.problems.iter().map(|p| p.kind).collect::<Vec<_>>(), [ProblemKind::MalformedFrontmatter]);
    }

    /// File permissions do not bind root, so this runs only where they apply: `scripts/test.sh`
    /// runs every `unprivileged_` test as an unprivileged user (scripts/unprivileged-tests.sh).
    #[test]
    #[ignore = "needs a user file permissions apply to: scripts/unprivileged-tests.sh"]
    fn unprivileged_unreadable_file_is_a_problem() {
        let t = TestDir::new();
        t.write("secret.md", "---\ndescription: x\n---\n");
        t.write("ok.md", "fine");
        let p = t.path().join("mem/secret.md");
        set_mode(&p, 0o000);
        assert!(std::fs::read(&p).is_err(), "file permissions do not apply to this user (root?); run scripts/unprivileged-tests.sh");
        let scan = t.memdir().scan().unwrap();
        let headers = t.memdir().scan_headers().unwrap();
        assert_eq!(scan.files.len(), 1);
        assert_eq!(scan.files[0].rel_path, "ok.md");
        assert_eq!(scan.problems.len(), 1);
        assert_eq!(scan.problems[0].kind, ProblemKind::Unreadable);
        assert_eq!(scan.problems[0].rel_path, "secret.md");
        assert_eq!(headers.headers.len(), 1);
        assert_eq!(headers.problems.len(), 1);
        assert_eq!(headers.problems[0].rel_path, "secret.md");
        set_mode(&p, 0o644);
    }

    /// A topic file whose name is not UTF-8 (Linux allows any bytes) is a problem that shows
    /// its bytes escaped, and the rest of the folder lists; Claude Code's manifest leaves such
    /// a file out too (captured with `scripts/manifest-sweep.sh`).
    #[cfg(unix)]
    #[test]
    fn a_name_that_is_not_utf8_is_reported_with_its_bytes_and_the_rest_lists() {
        use std::os::unix::ffi::OsStrExt;
        let t = TestDir::new();
        t.write("ok.md", "---\ndescription: fine\n---\n");
        std::fs::write(t.mem().join(std::ffi::OsStr::from_bytes(b"caf\xe9.md")), "---\ndescription: latin1 name\n---\n").unwrap();
        std::fs::create_dir_all(t.mem().join(std::ffi::OsStr::from_bytes(b"d\xe9j\xe0"))).unwrap();
        let scan = t.memdir().scan().unwrap();
        assert_eq!(scan.files.iter().map(|f| f.rel_path.as_str()).collect::<Vec<_>>(), ["ok.md"]);
        let mut named: Vec<&str> = scan.problems.iter().filter(|p| p.kind == ProblemKind::NonUtf8Name).map(|p| p.rel_path.as_str()).collect();
        named.sort();
        assert_eq!(named, ["caf\\xE9.md", "d\\xE9j\\xE0"]);
        assert!(scan.problems[0].message.contains("Rename it to a UTF-8 name"), "{:?}", scan.problems[0]);
        assert_eq!(t.memdir().scan_headers().unwrap().headers.len(), 1);
    }

    /// Topic files from other systems, as the real binaries' recall manifest read them
    /// (`scripts/manifest-sweep.sh 2.1.100,2.1.197,2.1.332` over the same files): CRLF and a
    /// byte-order mark are read through, mixed line ends too, and a file written with lone CRs
    /// is one line with no frontmatter, so no description or type.
    #[test]
    fn headers_of_files_written_on_other_systems() {
        let t = TestDir::new();
        t.write("crlf.md", "---\r\nname: crlf name\r\ndescription: crlf description\r\ntype: feedback\r\n---\r\nbody\r\n");
        t.write("bom_crlf.md", "\u{feff}---\r\ndescription: bom crlf description\r\ntype: project\r\n---\r\nbody\r\n");
        t.write("mixed.md", "---\r\nname: mixed\ndescription: mixed description\r\ntype: reference\n---\nbody\n");
        t.write("lone_cr.md", "---\rname: lone\rdescription: lone cr description\rtype: user\r---\rbody\r");
        let headers = t.memdir().scan_headers().unwrap().headers;
        let of = |rel: &str| {
            let h = headers.iter().find(|h| h.rel_path == rel).unwrap_or_else(|| panic!("{rel} listed"));
            (h.description.clone(), h.memory_type)
        };
        assert_eq!(of("crlf.md"), (Some("crlf description".into()), Some(MemoryType::Feedback)));
        assert_eq!(of("bom_crlf.md"), (Some("bom crlf description".into()), Some(MemoryType::Project)));
        assert_eq!(of("mixed.md"), (Some("mixed description".into()), Some(MemoryType::Reference)));
        assert_eq!(of("lone_cr.md"), (None, None));
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_and_escapes_do_not_hang_or_leak() {
        use std::os::unix::fs::symlink;
        let t = TestDir::new();
        t.write("real.md", "---\ndescription: real\n---\n");
        t.write_outside("outside.md", "---\ndescription: secret\n---\n");
        let mem = t.path().join("mem");
        symlink(&mem, mem.join("loop")).unwrap(); // folder loop
        symlink("self.md", mem.join("self.md")).unwrap(); // file loop
        symlink("b.md", mem.join("a.md")).unwrap();
        symlink("a.md", mem.join("b.md")).unwrap();
        symlink(t.path().join("outside.md"), mem.join("escape.md")).unwrap();
        symlink("real.md", mem.join("alias.md")).unwrap(); // inside: read
        symlink("nowhere.md", mem.join("dangling.md")).unwrap();
        // Finishing at all is the assertion: a followed loop would never return.
        let scan = t.memdir().scan().unwrap();
        let rels: Vec<_> = scan.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(rels, ["alias.md", "real.md"]);
        let kinds: std::collections::BTreeMap<_, _> =
            scan.problems.iter().map(|p| (p.rel_path.as_str(), p.kind)).collect();
        assert_eq!(kinds["loop"], ProblemKind::SymlinkNotFollowed);
        assert_eq!(kinds["self.md"], ProblemKind::Unreadable);
        assert_eq!(kinds["a.md"], ProblemKind::Unreadable);
        assert_eq!(kinds["escape.md"], ProblemKind::SymlinkOutside);
        assert_eq!(kinds["dangling.md"], ProblemKind::Unreadable);
        // Claude Code's own scan reads a link out of the folder, so the manifest (what its
        // recall selector is shown) lists it with the description it leads to; Mneme's scan
        // above never reads it. The loops end: 2.1.326 on walks no folder twice, and older
        // releases' scan fails on the folder loop and lists nothing.
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let newest = t.memdir().manifest();
        let listed: Vec<&str> = newest.lines().map(|l| l[2..].split(' ').next().unwrap()).collect();
        assert_eq!(listed.len(), 3, "{newest}");
        assert!(["real.md", "alias.md", "escape.md"].iter().all(|r| listed.contains(r)), "{newest}");
        assert!(newest.contains("escape.md (") && newest.contains("): secret"), "{newest}");
        assert_eq!(t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 300))).manifest(), "");
    }

    #[test]
    fn unicode_emoji_and_spaces_in_names() {
        let t = TestDir::new();
        t.write("café notes 😀.md", "---\nname: café 😀\ndescription: ünïcödé\n---\n");
        let scan = t.memdir().scan().unwrap();
        assert_eq!(scan.files[0].rel_path, "café notes 😀.md");
        assert_eq!(scan.files[0].name.as_deref(), Some("café 😀"));
    }

    #[test]
    fn frontmatter_past_line_30_is_flagged() {
        let t = TestDir::new();
        let long: String = (0..30).map(|i| format!("k{i}: v\n")).collect();
        t.write("long.md", &format!("---\ndescription: late\n{long}---\nbody"));
        let scan = t.memdir().scan().unwrap();
        assert_eq!(scan.files[0].description.as_deref(), Some("late"), "the full read sees it");
        assert_eq!(scan.problems[0].kind, ProblemKind::FrontmatterPastLine30);
        let headers = t.memdir().scan_headers().unwrap();
        assert_eq!(headers.headers[0].description, None, "Claude Code's 30-line read does not");
    }

    #[test]
    fn non_utf8_is_read_lossily_and_reported() {
        let t = TestDir::new();
        t.write_bytes("bin.md", b"---\ndescription: caf\xE9\n---\n");
        let scan = t.memdir().scan().unwrap();
        assert_eq!(scan.files[0].description.as_deref(), Some("caf\u{FFFD}"));
        assert_eq!(scan.problems[0].kind, ProblemKind::NotUtf8);
        // The command that converts it is its own field, with the message around it as whole
        // sentences, and the message still names it for the command line; a file cut short has
        // no command to run.
        let cmd = "iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new";
        let fix = scan.problems[0].command.clone().unwrap();
        assert_eq!(fix.line, cmd);
        assert!(fix.before.starts_with("This file is not valid UTF-8, so Mneme shows") && fix.before.contains(": byte 0xE9 on line 2") && fix.before.ends_with(':'), "{}", fix.before);
        assert!(fix.after.starts_with("Then move FILE.new over FILE and open it again."), "{}", fix.after);
        assert!(scan.problems[0].message.contains(&format!("`{cmd}`")), "{}", scan.problems[0].message);
        let utf16: Vec<u8> = "---\ndescription: x\n---\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        t.write_bytes("bin.md", &[&[0xff, 0xfe][..], &utf16].concat());
        t.write_bytes("cut.md", b"---\ndescription: caf\xC3");
        let scan = t.memdir().scan().unwrap();
        let of = |rel: &str| scan.problems.iter().find(|p| p.rel_path == rel).unwrap().command.clone().map(|c| c.line);
        assert_eq!(of("bin.md").as_deref(), Some("iconv -f UTF-16 -t UTF-8 FILE > FILE.new"));
        assert_eq!(of("cut.md"), None);
    }

    fn check_desc(yaml_value: &str, expect: Option<&str>) {
        let text = format!("---\ndescription: {yaml_value}\n---\n");
        let p = frontmatter::parse(&text);
        assert_eq!(p.frontmatter.as_ref().unwrap().description().as_deref(), expect, "{yaml_value}");
    }

    #[test]
    fn descriptions_follow_javascript_truthiness() {
        check_desc("hello", Some("hello"));
        check_desc("''", None);
        check_desc("~", None);
        check_desc("false", None);
        check_desc("true", Some("true"));
        check_desc("0", None);
        check_desc("42", Some("42"));
        check_desc("1.5", Some("1.5"));
        check_desc("[a, b]", Some("a,b"));
        check_desc("{a: 1}", Some("[object Object]"));
    }

    #[test]
    fn many_files_scan_completely_in_parallel() {
        let t = TestDir::new();
        let n = 2_000;
        for i in 0..n {
            t.write(
                &format!("d{}/f{i}.md", i % 10),
                &format!("---\nname: f{i}\ndescription: file {i}\nmetadata:\n  type: user\n---\n\nbody [[f{}]]\n", i + 1),
            );
        }
        // Speed is measured by the benchmarks (crates/api/benches); this checks that the
        // parallel path loses nothing.
        let scan = t.memdir().scan().unwrap();
        let headers = t.memdir().scan_headers().unwrap();
        assert_eq!(scan.files.len(), n);
        assert_eq!(headers.headers.len(), n);
        assert!(scan.problems.is_empty());
    }
}
