//! Node's POSIX `path` functions and Claude Code's path helpers (`expandPath`,
//! `pathInWorkingPath`, `safeResolvePath`), on strings.
//!
//! Paths are kept as strings because Claude Code prints them verbatim (`Contents of <path>`)
//! and compares them as strings: Rust's `Path` would silently drop trailing slashes and `.`
//! segments, which Node keeps in `normalize`/`join`.

use std::fs;
use std::path::Path;
use unicode_normalization::UnicodeNormalization;

/// `path.posix.normalize`, shared with the store's path rules.
pub use mneme_store::paths::node_normalize as normalize;

/// `path.posix.resolve(base, p)` for an absolute `base`.
pub fn resolve(base: &str, p: &str) -> String {
    let joined = if p.starts_with('/') { p.to_string() } else { format!("{base}/{p}") };
    // Normalizing keeps a trailing slash; `resolve` drops it (except for the root itself).
    let n = normalize(&joined);
    match n.strip_suffix('/') {
        Some(stripped) if !stripped.is_empty() => stripped.to_string(),
        _ => n,
    }
}

/// `path.posix.join(a, b)`.
pub fn join(a: &str, b: &str) -> String {
    let joined = match (a.is_empty(), b.is_empty()) {
        (true, true) => return ".".into(),
        (true, false) => b.to_string(),
        (false, true) => a.to_string(),
        (false, false) => format!("{a}/{b}"),
    };
    normalize(&joined)
}

/// `path.posix.dirname`, byte for byte (`/a//b` → `/a/`).
pub fn dirname(path: &str) -> String {
    let b = path.as_bytes();
    if b.is_empty() {
        return ".".into();
    }
    let has_root = b[0] == b'/';
    let mut end: Option<usize> = None;
    let mut matched_slash = true;
    for i in (1..b.len()).rev() {
        if b[i] == b'/' {
            if !matched_slash {
                end = Some(i);
                break;
            }
        } else {
            matched_slash = false;
        }
    }
    match end {
        None => (if has_root { "/" } else { "." }).into(),
        Some(1) if has_root => "//".into(),
        Some(e) => path[..e].to_string(),
    }
}

/// `path.posix.relative(from, to)` for absolute paths.
pub fn relative(from: &str, to: &str) -> String {
    let from = resolve("/", from);
    let to = resolve("/", to);
    if from == to {
        return String::new();
    }
    let f: Vec<&str> = from.split('/').filter(|s| !s.is_empty()).collect();
    let t: Vec<&str> = to.split('/').filter(|s| !s.is_empty()).collect();
    let common = f.iter().zip(t.iter()).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = std::iter::repeat_n("..", f.len() - common).collect();
    parts.extend(&t[common..]);
    parts.join("/")
}

/// Whether `p` is the filesystem root (`path.parse(p).root === p`).
pub fn is_root(p: &str) -> bool {
    p == "/"
}

/// Claude Code's `expandPath(path, baseDir)`: trim, `~`/`~/` against `home`, absolute paths
/// normalized, relative ones resolved against `base`; always NFC.
pub fn expand_path(path: &str, base: &str, home: &str) -> String {
    let trimmed = mneme_core::text::js_trim(path);
    let out = if trimmed.is_empty() {
        normalize(base)
    } else if trimmed == "~" {
        home.to_string()
    } else if let Some(rest) = trimmed.strip_prefix("~/") {
        join(home, rest)
    } else if trimmed.starts_with('/') {
        normalize(trimmed)
    } else {
        resolve(base, trimmed)
    };
    // The quick check answers "yes" for ASCII and most text without building anything.
    if unicode_normalization::is_nfc_quick(out.chars()) == unicode_normalization::IsNormalized::Yes {
        return out;
    }
    out.nfc().collect()
}

/// `containsPathTraversal`: a `..` segment.
fn contains_path_traversal(p: &str) -> bool {
    p.split(['/', '\\']).any(|s| s == "..")
}

/// Claude Code's `pathInWorkingPath(path, workingPath)` on absolute paths: macOS `/private`
/// aliases folded, compared lower-cased (on every platform), inside or equal.
pub fn path_in_working_path(path: &str, working: &str, home: &str) -> bool {
    fn fold(p: &str) -> String {
        let p = if let Some(rest) = p.strip_prefix("/private/var/") {
            format!("/var/{rest}")
        } else if p == "/private/tmp" || p.starts_with("/private/tmp/") {
            format!("/tmp{}", &p["/private/tmp".len()..])
        } else {
            p.to_string()
        };
        p.to_lowercase()
    }
    let a = fold(&expand_path(path, "/", home));
    let b = fold(&expand_path(working, "/", home));
    // Both are normalized absolute paths, so `a` inside `b` is a prefix ending at a `/`, and
    // `relative` would answer with the rest: no `..` in it, no leading `/`. Anything else
    // takes the general comparison below.
    if a.strip_prefix(b.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('/') || b.ends_with('/')) {
        return true;
    }
    let rel = relative(&b, &a);
    if rel.is_empty() {
        return true;
    }
    !contains_path_traversal(&rel) && !rel.starts_with('/')
}

/// Claude Code's `safeResolvePath`: the realpath and whether it differs from the input.
/// UNC-looking paths and special files are returned unresolved; any error too.
pub fn safe_resolve_path(path: &str) -> (String, bool) {
    resolve_if_present(path).unwrap_or_else(|| (path.to_string(), false))
}

/// [`safe_resolve_path`], or `None` when nothing is at `path` (where `safeResolvePath` answers
/// with the path itself): a caller about to list a folder that is not there can stop here
/// instead of failing to open it too.
pub fn resolve_if_present(path: &str) -> Option<(String, bool)> {
    if path.starts_with("//") || path.starts_with("\\\\") {
        return Some((path.to_string(), false));
    }
    if under_missing(path) {
        return None;
    }
    // A folder this load already resolved (listed as a folder by its parent, or on the way
    // to the working folder) needs no `lstat` again.
    if let Some(Some(real)) = DIR_REALPATHS.with(|c| c.borrow().as_ref().and_then(|c| c.realpaths.get(path).cloned())) {
        let is_symlink = real != path;
        return Some((real, is_symlink));
    }
    // One `lstat` answers both questions: is it a special file, and is it a link.
    let meta = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        m => m.ok(),
    };
    if meta.as_ref().is_some_and(|m| is_special(m.file_type())) {
        return Some((path.to_string(), false));
    }
    Some(match realpath(path, meta.as_ref()) {
        Some(real) => {
            let is_symlink = real != path;
            (real, is_symlink)
        }
        None => (path.to_string(), false),
    })
}

fn is_special(ft: fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    ft.is_fifo() || ft.is_socket() || ft.is_char_device() || ft.is_block_device()
}

/// A candidate file opened once, for [`open_resolved`].
pub struct Opened {
    pub file: fs::File,
    pub head: Head,
}

/// What the first read of an opened candidate told.
pub enum Head {
    /// The whole file: a positioned read came back short of [`HEAD_BYTES`], which for a
    /// regular file means its end was reached.
    Whole(Vec<u8>),
    /// A folder (the read failed with `EISDIR`).
    Dir,
    /// The read did not settle it (empty, at least [`HEAD_BYTES`], not seekable, an error):
    /// the file's `fstat`, to be read by size as before.
    Stat(fs::Metadata),
}

/// How much the first read of a candidate asks for. Instruction files are almost always far
/// smaller, so one `pread` reads them whole; a larger one costs one `fstat` more.
pub const HEAD_BYTES: usize = 64 * 1024;

thread_local! {
    /// The first read's buffer, reused so 2,000 small rules do not each zero 64 KiB.
    static HEAD_BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; HEAD_BYTES]);
}

/// The first read of an opened candidate, without an `fstat` when it can be spared. A
/// positioned read (`pread`) is what makes a short answer trustworthy: it fails with `ESPIPE`
/// on a FIFO, socket or terminal (whose reads may come back short before their end), so a
/// short, non-empty answer comes from a seekable file, and Linux returns less than asked from
/// a regular file only at its end. An empty answer may be `/dev/null` or a FIFO's, a full one
/// may be `/dev/zero`'s: those, and every error but `EISDIR`, take the `fstat`.
fn first_read(file: &fs::File) -> Option<Head> {
    use std::os::unix::fs::FileExt;
    let got = HEAD_BUF.with(|b| {
        let mut b = b.borrow_mut();
        loop {
            match file.read_at(&mut b[..], 0) {
                Ok(n) if n > 0 && n < HEAD_BYTES => return Ok(Some(b[..n].to_vec())),
                Ok(_) => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    });
    match got {
        Ok(Some(bytes)) => Some(Head::Whole(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => Some(Head::Dir),
        _ => file.metadata().ok().map(Head::Stat),
    }
}

/// What [`open_resolved`] found.
// Not boxed: a probe lives for one file of the loader's hot loop, and a box would be an
// allocation per file read to save stack bytes nobody keeps.
#[allow(clippy::large_enum_variant)]
pub enum Probe {
    /// `safeResolvePath`'s answer and, when the file could be opened without following a
    /// link, the open file and its metadata (so reading it costs one `read` more).
    Resolved { real: String, is_symlink: bool, opened: Option<Opened> },
    /// Nothing there (or a folder on the way is missing): resolves to itself, reads as missing.
    Missing,
}

/// `safeResolvePath` for a file that is about to be read, in as few system calls as the
/// answer allows: one `open` that refuses to follow a final symlink and one `pread` on it
/// ([`first_read`], with an `fstat` only when that does not settle it) tell whether it exists,
/// whether it is a link, a special file or a folder, and usually read it whole; the
/// folder's realpath comes from the per-load cache. Only a link (or an error other than "not
/// there") takes the general `lstat` + `realpath` route. The answer is the same as
/// [`safe_resolve_path`]'s.
pub fn open_resolved(path: &str) -> Probe {
    use rustix::fs::OFlags;
    use std::os::unix::fs::OpenOptionsExt;
    let general = || {
        let (real, is_symlink) = safe_resolve_path(path);
        Probe::Resolved { real, is_symlink, opened: None }
    };
    let active = DIR_REALPATHS.with(|c| c.borrow().is_some());
    let split = path.rfind('/').filter(|&i| i > 0 && i + 1 < path.len());
    let (Some(i), true) = (split, active) else { return general() };
    let (dir, name) = (&path[..i], &path[i + 1..]);
    if name == "." || name == ".." || path.starts_with("//") {
        return general();
    }
    if under_missing(path) {
        return Probe::Missing;
    }
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused as special below).
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            return Probe::Missing
        }
        // ELOOP: the last component is a link; anything else keeps its general handling.
        Err(_) => return general(),
    };
    let Some(head) = first_read(&file) else { return general() };
    if matches!(&head, Head::Stat(meta) if is_special(meta.file_type())) {
        return Probe::Resolved { real: path.to_string(), is_symlink: false, opened: Some(Opened { file, head }) };
    }
    let Some(dir_real) = dir_realpath(dir) else {
        return Probe::Resolved { real: path.to_string(), is_symlink: false, opened: Some(Opened { file, head }) };
    };
    let real = if dir_real == "/" { format!("/{name}") } else { format!("{dir_real}/{name}") };
    let is_symlink = real != path;
    Probe::Resolved { real, is_symlink, opened: Some(Opened { file, head }) }
}

thread_local! {
    /// What one load learnt about folders (see [`with_realpath_cache`]).
    static DIR_REALPATHS: std::cell::RefCell<Option<LoadCache>> = const { std::cell::RefCell::new(None) };
}

#[derive(Default)]
struct LoadCache {
    /// Realpaths of folders seen.
    realpaths: std::collections::HashMap<String, Option<String>>,
    /// Folders found missing by [`folder_present`] and files by [`file_present`]: nothing at
    /// or below them is looked for again.
    missing: Vec<String>,
}

/// Whether `dir` exists, remembered for the rest of the load: when it does not, every later
/// look for a file below it (`.claude/CLAUDE.md`, `.claude/rules`, `.claude/AGENTS.md`) is
/// answered "not there" without a system call. Most folders on the way from `/` to a project
/// have no `.claude`, so one `lstat` replaces three failed lookups per folder. Outside a load
/// (no cache active) it only answers.
pub fn folder_present(dir: &str) -> bool {
    // Present, or unknown (no permission…): the ordinary lookups decide.
    lstat_remembered(dir).is_some()
}

/// Whether a file, or a link to one, is at `path`. When nothing at all is there, that is
/// remembered for the rest of the load like a missing folder, so the read that would follow
/// (the AGENTS.md check looks for each folder's CLAUDE.md files before the load reads them)
/// costs no second lookup. A dangling link is not remembered: its read takes the link route.
pub fn file_present(path: &str) -> bool {
    match lstat_remembered(path) {
        Some(Ok(meta)) if meta.file_type().is_symlink() => fs::metadata(path).is_ok_and(|m| m.is_file()),
        Some(Ok(meta)) => meta.is_file(),
        _ => false,
    }
}

/// `lstat` of `path` during a load: `None` when nothing is there, which the load remembers
/// (and answers from, with no system call, for `path` and everything below it); otherwise
/// what `lstat` said. Outside a load it only asks.
fn lstat_remembered(path: &str) -> Option<std::io::Result<fs::Metadata>> {
    if under_missing(path) {
        return None;
    }
    match fs::symlink_metadata(path) {
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            DIR_REALPATHS.with(|c| {
                if let Some(c) = c.borrow_mut().as_mut() {
                    c.missing.push(path.to_string());
                }
            });
            None
        }
        other => Some(other),
    }
}

/// Whether `path` lies below (or is) a folder (or file) this load found missing.
fn under_missing(path: &str) -> bool {
    DIR_REALPATHS.with(|c| {
        c.borrow().as_ref().is_some_and(|c| {
            c.missing.iter().any(|m| path.strip_prefix(m.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
        })
    })
}

/// Records that `dir` — a realpath — and every folder above it resolve to themselves, so the
/// load does not `lstat` its way up from each of them. The caller has resolved `dir` (one
/// `realpath` of the working folder), and every ancestor of a realpath is a realpath.
pub fn seed_realpath_chain(dir: &str) {
    DIR_REALPATHS.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            let mut d = dir.to_string();
            while d.starts_with('/') {
                let parent = dirname(&d);
                c.realpaths.insert(d.clone(), Some(d.clone()));
                if parent == d {
                    break;
                }
                d = parent;
            }
        }
    });
}

/// Records a folder that a listing showed to be a folder (not a link) at `real`, the listed
/// parent's realpath plus its name, so resolving or reading below it costs no `lstat`.
pub fn note_listed_folder(path: &str, real: &str) {
    DIR_REALPATHS.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            c.realpaths.insert(path.to_string(), Some(real.to_string()));
        }
    });
}

/// How many opened files a one-shot process may leave for its exit to close.
static KEEP_OPEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// For a process that loads once and exits (the `mneme` CLI): up to `budget` files read by the
/// loader are not closed one by one but left to the process's exit, which closes them all at
/// once — one system call fewer per loaded file. The caller sizes the budget well under its
/// open-files limit. Long-running processes (the app, `mneme serve`) never call this.
pub fn keep_files_open_until_exit(budget: usize) {
    KEEP_OPEN.store(budget, std::sync::atomic::Ordering::Relaxed);
}

/// Closes a file the loader is done with, or leaves it open for the exit while the budget of
/// [`keep_files_open_until_exit`] lasts. Descriptors are opened close-on-exec, so programs the
/// process starts never inherit them.
pub fn release(file: fs::File) {
    use std::sync::atomic::Ordering;
    let kept = KEEP_OPEN.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok();
    if kept {
        // Leaks the descriptor on purpose: the kernel closes it when the process exits.
        let _ = std::os::fd::IntoRawFd::into_raw_fd(file);
    }
}

/// Runs `f` with folder realpaths cached. `realpath` walks every component of a path with
/// `readlink`; a load resolves every candidate file, most of them siblings, so resolving each
/// folder once and checking only the file itself with `lstat` saves most of those calls. The
/// cache lives only for one load, so a long-running app never sees stale links.
pub fn with_realpath_cache<R>(f: impl FnOnce() -> R) -> R {
    mneme_core::scoped::with_scoped(&DIR_REALPATHS, f)
}

fn canonical(p: &str) -> Option<String> {
    fs::canonicalize(p).ok().map(|r| r.to_string_lossy().into_owned())
}

/// A folder's realpath, from the per-load cache (which must be active). A folder that is not
/// itself a link resolves to its parent's realpath plus its name, so a 30-level chain costs one
/// `lstat` per folder rather than `canonicalize`'s `readlink` of every component of every one.
fn dir_realpath(dir: &str) -> Option<String> {
    let cached = DIR_REALPATHS.with(|c| c.borrow().as_ref().and_then(|m| m.realpaths.get(dir).cloned()));
    match cached {
        Some(d) => d,
        None => {
            let split = dir.rfind('/').filter(|&i| i + 1 < dir.len());
            let plain = |name: &str| !name.is_empty() && name != "." && name != "..";
            let d = match split {
                _ if dir == "/" => Some("/".to_string()),
                Some(i) if plain(&dir[i + 1..]) && !dir.contains("//") => {
                    let (parent, name) = (if i == 0 { "/" } else { &dir[..i] }, &dir[i + 1..]);
                    match fs::symlink_metadata(dir) {
                        Ok(m) if m.is_dir() => dir_realpath(parent).map(|p| entry_realpath(&p, name)),
                        // A link (or, oddly, not a folder): let the OS resolve it.
                        Ok(_) => canonical(dir),
                        Err(_) => None,
                    }
                }
                _ => canonical(dir),
            };
            DIR_REALPATHS.with(|c| {
                if let Some(m) = c.borrow_mut().as_mut() {
                    m.realpaths.insert(dir.to_string(), d.clone());
                }
            });
            d
        }
    }
}

/// `fs.realpathSync`, using the per-load folder cache when one is active. `meta` is the
/// path's own `lstat`, already taken by the caller (`None` when it failed).
fn realpath(path: &str, meta: Option<&fs::Metadata>) -> Option<String> {
    let active = DIR_REALPATHS.with(|c| c.borrow().is_some());
    let split = path.rfind('/').filter(|&i| i > 0 && i + 1 < path.len());
    let (Some(i), true) = (split, active) else { return canonical(path) };
    let (dir, name) = (&path[..i], &path[i + 1..]);
    if name == "." || name == ".." {
        return canonical(path);
    }
    // The file itself must exist and not be a link; then its realpath is its folder's.
    let meta = meta?;
    if meta.file_type().is_symlink() {
        return canonical(path);
    }
    let dir_real = dir_realpath(dir)?;
    Some(if dir_real == "/" { format!("/{name}") } else { format!("{dir_real}/{name}") })
}

/// The realpath of an entry found by listing `dir` (whose realpath is `dir_real`), when the
/// listing says it is not a link: no system call at all.
pub fn entry_realpath(dir_real: &str, name: &str) -> String {
    if dir_real == "/" { format!("/{name}") } else { format!("{dir_real}/{name}") }
}

/// A `Path` as the string Claude Code would hold.
pub fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_path_semantics() {
        for (input, want) in [("/a/b/../c/./d/", "/a/c/d/"), ("/a//b", "/a/b"), ("", "."), ("/..", "/"), ("a/../..", "..")] {
            assert_eq!(normalize(input), want, "normalize {input}");
        }
        for (input, want) in [("/a/b", "/a"), ("/a/b/", "/a"), ("/a", "/"), ("/", "/"), ("/a//b", "/a/"), ("//a", "//"), ("a", ".")] {
            assert_eq!(dirname(input), want, "dirname {input}");
        }
        assert_eq!(resolve("/x/y", "../z/"), "/x/z");
        assert_eq!(resolve("/x", "/abs/./p"), "/abs/p");
        assert_eq!(join("/home/u", "a/b/"), "/home/u/a/b/");
        assert_eq!(relative("/a/b", "/a/b/c/d"), "c/d");
        assert_eq!(relative("/a/b", "/a/x"), "../x");
        assert_eq!(relative("/a", "/a"), "");
    }

    #[test]
    fn expand_path_cases() {
        let h = "/home/u";
        assert_eq!(expand_path("~/x.md", "/base", h), "/home/u/x.md");
        assert_eq!(expand_path("~", "/base", h), "/home/u");
        assert_eq!(expand_path("./a/../b.md", "/base/dir", h), "/base/dir/b.md");
        assert_eq!(expand_path("/abs//x.md", "/base", h), "/abs/x.md");
        assert_eq!(expand_path("  rel.md  ", "/base", h), "/base/rel.md");
        // NFD input comes out NFC.
        assert_eq!(expand_path("cafe\u{301}.md", "/b", h), "/b/caf\u{e9}.md");
    }

    #[test]
    fn working_path_is_case_insensitive_and_segment_aware() {
        let h = "/home/u";
        assert!(path_in_working_path("/tmp/Repo/x.md", "/tmp/repo", h));
        assert!(path_in_working_path("/tmp/repo", "/tmp/repo", h));
        assert!(!path_in_working_path("/tmp/repo2/x", "/tmp/repo", h));
        assert!(!path_in_working_path("/tmp/x", "/tmp/repo", h));
        assert!(path_in_working_path("/private/tmp/repo/a", "/tmp/repo", h));
        assert!(path_in_working_path("/tmp/repo/..foo/a", "/tmp/repo", h));
    }
}
