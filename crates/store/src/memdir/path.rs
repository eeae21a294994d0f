//! Which relative paths may name a memory, and whether a path really stays inside the memory
//! folder once symbolic links are followed.
//!
//! Validation is lexical first (no decoding, no normalization: a name is taken literally, so
//! `%2e%2e` is just an odd file name), then physical: the deepest existing ancestor is
//! resolved with `realpath` and must lie under the resolved memory folder, as Claude Code's
//! `realpathDeepestExisting` check does for team keys.

use super::{Memdir, MemdirError, INDEX_FILE};
use mneme_core::portable::{check_windows_name, device_stem, is_windows_device, is_windows_reserved_char, WindowsNameError};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The longest file-name component most file systems accept, in bytes.
pub(crate) const MAX_COMPONENT_BYTES: usize = 255;

/// The longest slug [`slugify`] produces, so derived file names stay readable and far below
/// the file-system limit even for 250-character memory names.
pub const MAX_SLUG_LEN: usize = 100;

/// Checks that `rel` can name a topic file: relative, `/`-separated, no `.`/`..`/empty
/// segments, no backslash, NUL or control characters, no segment over 255 bytes, ending in
/// `.md` and not named `MEMORY.md` (that name is the index at any depth, and Claude Code's
/// scan skips it).
pub fn validate_topic_path(rel: &str) -> Result<(), MemdirError> {
    let refuse = |reason: &str| Err(MemdirError::InvalidPath { path: rel.to_string(), reason: reason.to_string() });
    if rel.trim().is_empty() {
        return refuse("the path is empty; give a file name such as feedback_testing.md");
    }
    if rel.contains('\0') {
        return refuse("it contains a NUL byte");
    }
    if rel.contains('\\') {
        return refuse("it contains a backslash; separate folders with '/'");
    }
    if rel.starts_with('/') || Path::new(rel).is_absolute() || has_drive_prefix(rel) {
        return refuse("it is absolute; give a path relative to the memory folder");
    }
    if rel.chars().any(char::is_control) {
        return refuse("it contains a control character such as a line break");
    }
    for part in rel.split('/') {
        match part {
            "" => return refuse("it has an empty folder name ('//' or a trailing '/')"),
            "." | ".." => return refuse("it contains '.' or '..'; paths must stay inside the memory folder"),
            p if p.len() > MAX_COMPONENT_BYTES => {
                return Err(MemdirError::InvalidPath {
                    path: rel.to_string(),
                    reason: format!(
                        "the name \"{}…\" is {} bytes long; file systems allow {MAX_COMPONENT_BYTES}",
                        p.chars().take(20).collect::<String>(),
                        p.len()
                    ),
                })
            }
            _ => {}
        }
    }
    let base = rel.rsplit('/').next().unwrap_or(rel);
    if !base.ends_with(".md") {
        return refuse("memory files must end in .md (Claude Code ignores other files)");
    }
    if base == ".md" {
        return refuse("the file needs a name before .md");
    }
    if base == INDEX_FILE {
        return refuse("MEMORY.md is the index, not a memory; edit it as the index instead");
    }
    Ok(())
}

/// Checks that `rel` may name a memory that does not exist yet (a create, or the new name of
/// a rename): [`validate_topic_path`], and a name Claude Code reads as a memory. Refused:
/// - a name or folder starting with `.` (`.draft.md`, `.notes/a.md`): Claude Code's memory
///   scan leaves those out from 2.1.217 on ([`super::left_out_by_scan`]), so the memory would
///   never reach recall or extraction;
/// - `memory.md` in any letter case other than the index's own: on macOS and Windows it is
///   the same file as `MEMORY.md`, the index, and on Linux it turns into a second index when
///   the folder is copied to one of those;
/// - a file or folder name Windows cannot create ([`mneme_core::portable`], the rule team keys
///   follow too): `<>:"|?*`, a name ending in a dot or a space, a device name (`con.md`,
///   `aux.notes.md`, `LPT1/`). A memory folder is often synced between machines or checked
///   into git, and Claude Code runs on Windows too, where such a memory could not be checked
///   out; the message names a portable spelling ([`portable_component`]).
///
/// Existing files with such names are still read, edited, deleted and restored: only a new
/// name is held to this.
pub fn validate_new_topic_path(rel: &str) -> Result<(), MemdirError> {
    validate_topic_path(rel)?;
    let Some(problem) = new_name_problem(rel) else { return Ok(()) };
    // A component breaks a rule: say which, why, and the whole path mended when that passes.
    let component = |part: &str, why: String, otherwise: &str| {
        let what = if rel.rsplit('/').next() == Some(part) { "the file name" } else { "the folder name" };
        let mended = rel.split('/').map(|p| portable_component(p.trim_start_matches('.'))).collect::<Vec<_>>().join("/");
        let instead = if validate_topic_path(&mended).is_ok() && new_name_problem(&mended).is_none() {
            format!("name it {mended} instead")
        } else {
            otherwise.to_string()
        };
        format!("{what} \"{part}\" {why}; {instead}")
    };
    let reason = match problem {
        NewNameProblem::Hidden(part) => component(
            part,
            "starts with '.', and Claude Code's memory scan leaves out names starting with '.', so it would never see this memory".into(),
            "give it a name that does not start with '.'",
        ),
        NewNameProblem::IndexInOtherLetters(base) => format!(
            "\"{base}\" is the index's name, MEMORY.md, in other letters; on macOS and Windows both are the same file, so this memory would replace the index. Give it another name, such as memory-notes.md"
        ),
        NewNameProblem::NotOnWindows(part, why) => component(
            part,
            format!("cannot be created on Windows ({why}), and a memory folder is often synced to other machines or checked into git"),
            "give it a name without <>:\"|?*, not ending in a dot or a space, and not a device name such as CON or AUX",
        ),
    };
    Err(MemdirError::InvalidPath { path: rel.to_string(), reason })
}

/// The first rule for new names (see [`validate_new_topic_path`]) that a topic path breaks.
enum NewNameProblem<'a> {
    /// A file or folder name starting with `.`.
    Hidden(&'a str),
    /// `memory.md` in letters other than the index's own.
    IndexInOtherLetters(&'a str),
    /// A name Windows cannot create.
    NotOnWindows(&'a str, WindowsNameError),
}

/// Checks the rules for new names, in order, on a path [`validate_topic_path`] accepts; also
/// asked of a suggested name, which is why it builds no message.
fn new_name_problem(rel: &str) -> Option<NewNameProblem<'_>> {
    if let Some(part) = rel.split('/').find(|p| p.starts_with('.')) {
        return Some(NewNameProblem::Hidden(part));
    }
    let base = rel.rsplit('/').next().unwrap_or(rel);
    if base.eq_ignore_ascii_case(INDEX_FILE) {
        return Some(NewNameProblem::IndexInOtherLetters(base));
    }
    rel.split('/').find_map(|p| check_windows_name(p).err().map(|why| NewNameProblem::NotOnWindows(p, why)))
}

/// `name` (one path component) as Windows can create it, for the message refusing it: a run of
/// reserved characters between two word characters becomes one `-` (`a:b` → `a-b`) and goes
/// where a space, dot or dash already separates (`notes: old` → `notes old`, `why?.md` →
/// `why.md`), trailing dots and spaces go, and a device name gets `-memory` after its stem
/// (`con.md` → `con-memory.md`, `LPT1` → `LPT1-memory`), the same suffix [`slugify`] gives a
/// title that slugs to a device name.
pub(crate) fn portable_component(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + DEVICE_SUFFIX.len());
    let mut chars = name.chars().peekable();
    let joins = |c: Option<char>| c.is_some_and(|c| !matches!(c, ' ' | '.' | '-'));
    while let Some(c) = chars.next() {
        if !is_windows_reserved_char(c) {
            out.push(c);
            continue;
        }
        while chars.next_if(|&c| is_windows_reserved_char(c)).is_some() {}
        if joins(out.chars().last()) && joins(chars.peek().copied()) {
            out.push('-');
        }
    }
    let kept = out.trim_end_matches(['.', ' ']).len();
    out.truncate(kept);
    if is_windows_device(&out) {
        let stem = device_stem(&out);
        let rest = &out[out.find('.').unwrap_or(out.len())..];
        out = format!("{stem}{DEVICE_SUFFIX}{rest}");
    }
    out
}

/// What a device name gets after its stem so Windows can create it (`con` → `con-memory`).
const DEVICE_SUFFIX: &str = "-memory";

/// `C:foo` style prefixes, refused on every platform so a path means the same everywhere.
fn has_drive_prefix(rel: &str) -> bool {
    let b = rel.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// A file name stem from a memory name: lowercase ASCII letters, digits, `_` and `-`, every
/// other run of characters collapsed to one `-`, at most [`MAX_SLUG_LEN`] long; `untitled`
/// when nothing usable remains (an all-emoji name, say), and `-memory` after a stem Windows
/// reserves as a device name (`Con` → `con-memory`, `COM¹` → `com¹-memory`), since a new
/// memory must be a name Windows can create ([`validate_new_topic_path`]).
pub fn slugify(name: &str) -> String {
    // Composed first: a name typed on macOS may arrive decomposed, and team keys must be NFC.
    use unicode_normalization::UnicodeNormalization;
    slug(&name.nfc().collect::<String>(), char::is_alphanumeric)
}

/// [`slugify`] keeping ASCII letters and digits only, for ids that must be plain ASCII (the
/// trash's entry folders).
pub fn slugify_ascii(name: &str) -> String {
    slug(name, |c| c.is_ascii_alphanumeric())
}

/// Letters and digits (lower-cased, any script: `стиль кода` stays readable rather than
/// collapsing to the same fallback as every other non-Latin name) and `_`, with one `-` for
/// each run of anything else, at most [`MAX_SLUG_LEN`] bytes.
fn slug(name: &str, keep: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(name.len().min(MAX_SLUG_LEN));
    let mut pending_dash = false;
    'chars: for c in name.chars() {
        if keep(c) || c == '_' {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            for lower in c.to_lowercase() {
                if out.len() + lower.len_utf8() > MAX_SLUG_LEN {
                    break 'chars;
                }
                out.push(lower);
            }
        } else {
            pending_dash = true;
        }
        if out.len() >= MAX_SLUG_LEN {
            break;
        }
    }
    let trimmed = out.trim_end_matches('-');
    // Not `memory`: `memory.md` is the index on macOS and Windows (see
    // [`validate_new_topic_path`]).
    if trimmed.is_empty() {
        "untitled".to_string()
    } else if is_windows_device(trimmed) {
        // A slug holds no dot, reserved character or trailing space, so only a device name
        // can make it a name Windows refuses; device names are short, so this stays under
        // MAX_SLUG_LEN.
        format!("{trimmed}{DEVICE_SUFFIX}")
    } else {
        trimmed.to_string()
    }
}

/// A trash id is a single plain file-name component Mneme generated; anything else could
/// walk out of the trash folder.
pub(crate) fn validate_trash_id(id: &str) -> Result<(), MemdirError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_COMPONENT_BYTES
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(MemdirError::InvalidInput {
            field: "trash id",
            reason: format!(
                "no trash entry has the id \"{id}\": a trash id is one name of letters, digits, '-', '_' and '.' (such as 1764422207123-prefers-tabs), never a path"
            ),
        })
    }
}

/// Lexical `a/b/../c` folding of a `/`-separated relative path; `None` when `..` climbs
/// above the start.
pub(crate) fn normalize_rel(parts: impl IntoIterator<Item = impl AsRef<str>>) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        match p.as_ref() {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            s => out.push(s.to_string()),
        }
    }
    Some(out.join("/"))
}

/// `rel` (relative to the memory folder) as a link target from an index in `dir`
/// ("" or "team").
pub(crate) fn relative_to_dir(rel: &str, dir: &str) -> String {
    if dir.is_empty() {
        return rel.to_string();
    }
    match rel.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) {
        Some(inner) => inner.to_string(),
        None => format!("../{rel}"),
    }
}

impl Memdir {
    /// The memory folder with symbolic links resolved. `NotFound` passes through so callers
    /// can treat a missing folder as "no memories yet".
    pub(crate) fn real_root(&self) -> Result<PathBuf, MemdirError> {
        match crate::paths::realpath(&self.root) {
            Ok(p) if p.is_dir() => Ok(p),
            Ok(_) => Err(MemdirError::RootNotADirectory { root: self.root.clone() }),
            Err(e) => Err(MemdirError::Io { action: "open the memory folder", path: self.root.clone(), source: e }),
        }
    }

    /// Creates the memory folder if needed (Claude Code does the same before writing).
    pub(crate) fn ensure_root(&self) -> Result<PathBuf, MemdirError> {
        match fs::symlink_metadata(&self.root) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(&self.root).map_err(super::error::io_err("create the memory folder", &self.root))?;
            }
            _ => {}
        }
        self.real_root()
    }

    /// Checks that `abs` (the memory folder joined with the validated `rel`) stays inside the
    /// real memory folder: the deepest part of it that exists is resolved through symbolic
    /// links and must lie under `real_root`. A dangling link on the way is refused, since
    /// writing through it would create a file wherever it points.
    pub(crate) fn check_contained(&self, real_root: &Path, rel: &str, abs: &Path) -> Result<(), MemdirError> {
        let outside = |detail: String| MemdirError::OutsideMemdir { path: rel.to_string(), root: self.root.clone(), detail };
        let mut probe: &Path = abs;
        loop {
            match fs::canonicalize(probe) {
                Ok(real) => {
                    return if real.starts_with(real_root) {
                        Ok(())
                    } else {
                        Err(outside(format!("{} resolves to {}", probe.display(), real.display())))
                    };
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if fs::symlink_metadata(probe).is_ok_and(|m| m.file_type().is_symlink()) {
                        return Err(outside(format!("{} is a symbolic link to something that does not exist", probe.display())));
                    }
                    match probe.parent() {
                        Some(parent) if parent.starts_with(&self.root) => probe = parent,
                        _ => return Ok(()),
                    }
                }
                Err(e) if e.raw_os_error() == Some(ELOOP) => {
                    return Err(outside(format!("{} is a symbolic link loop", probe.display())));
                }
                Err(e) => {
                    return Err(MemdirError::Io { action: "check where this path leads", path: probe.to_path_buf(), source: e })
                }
            }
        }
    }

    /// Validates `rel` as a topic path and returns its absolute path once containment holds.
    ///
    /// A path that names nothing yet is one about to be made (a create, the new name of a
    /// rename: reading or editing it would only find it missing), so it must also be a name
    /// Claude Code reads as a memory ([`validate_new_topic_path`]); an existing file of any
    /// valid name is read and edited as it is. A restore puts back a name that existed, and
    /// uses [`Self::topic_abs_any_name`].
    pub(crate) fn topic_abs(&self, real_root: &Path, rel: &str) -> Result<PathBuf, MemdirError> {
        let abs = self.topic_abs_any_name(real_root, rel)?;
        if matches!(fs::symlink_metadata(&abs), Err(e) if e.kind() == io::ErrorKind::NotFound) {
            validate_new_topic_path(rel)?;
        }
        Ok(abs)
    }

    /// [`Self::topic_abs`] without the rules for new names.
    pub(crate) fn topic_abs_any_name(&self, real_root: &Path, rel: &str) -> Result<PathBuf, MemdirError> {
        validate_topic_path(rel)?;
        let abs = self.abs(rel);
        self.check_contained(real_root, rel, &abs)?;
        Ok(abs)
    }

    /// The absolute path of a scope's index, once containment holds (`team/` may be a link).
    pub(crate) fn index_abs(&self, real_root: &Path, rel: &str) -> Result<PathBuf, MemdirError> {
        let abs = self.abs(rel);
        self.check_contained(real_root, rel, &abs)?;
        Ok(abs)
    }

    /// Requires `abs` to be a regular file (not a link, folder or pipe) before an edit.
    pub(crate) fn require_regular(&self, rel: &str, abs: &Path) -> Result<fs::Metadata, MemdirError> {
        match fs::symlink_metadata(abs) {
            Ok(m) if m.file_type().is_file() => Ok(m),
            Ok(m) => Err(MemdirError::NotARegularFile { path: rel.to_string(), detail: describe_type(&m) }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(MemdirError::NotFound { path: rel.to_string() }),
            Err(e) => Err(MemdirError::Io { action: "inspect", path: abs.to_path_buf(), source: e }),
        }
    }
}

/// ELOOP on Linux and the BSDs/macOS differ (40 vs 62); both mean "symbolic link loop".
#[cfg(target_os = "linux")]
const ELOOP: i32 = 40;
#[cfg(not(target_os = "linux"))]
const ELOOP: i32 = 62;

/// Human wording for a file type, for error messages: "it is a folder", "it is a named pipe
/// (FIFO)", …
pub(crate) fn describe_type(m: &fs::Metadata) -> String {
    format!("it is {}", crate::open::kind_of(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asks `validate` about `rel`: `Ok`, or refused with a reason containing the `Err` text.
    fn check(validate: fn(&str) -> Result<(), MemdirError>, rel: &str, expect: Result<(), &str>) {
        match (validate(rel), expect) {
            (Ok(()), Ok(())) => {}
            (Err(MemdirError::InvalidPath { reason, .. }), Err(want)) => {
                assert!(reason.contains(want), "{rel:?}: reason {reason:?} lacks {want:?}")
            }
            (got, want) => panic!("{rel:?}: got {got:?}, want {want:?}"),
        }
    }

    fn check_path(rel: &str, expect: Result<(), &str>) {
        check(validate_topic_path, rel, expect)
    }

    #[test]
    fn topic_paths() {
        check_path("feedback_testing.md", Ok(()));
        check_path("team/notes/a b.md", Ok(()));
        check_path("émoji 😀 name.md", Ok(()));
        check_path(".hidden.md", Ok(()));
        check_path("%2e%2e/x.md", Ok(())); // literal folder name, never decoded
        check_path("", Err("empty"));
        check_path("../x.md", Err("'..'"));
        check_path("a/../../x.md", Err("'..'"));
        check_path("./x.md", Err("'..'"));
        check_path("/etc/x.md", Err("absolute"));
        check_path("C:x.md", Err("absolute"));
        check_path("a\\b.md", Err("backslash"));
        check_path("a//b.md", Err("empty folder"));
        check_path("a\0.md", Err("NUL"));
        check_path("a\nb.md", Err("control"));
        check_path("x.txt", Err("end in .md"));
        check_path(".md", Err("name before"));
        check_path("MEMORY.md", Err("index"));
        check_path("team/MEMORY.md", Err("index"));
        check_path(&format!("{}.md", "a".repeat(252)), Ok(()));
        check_path(&format!("{}.md", "a".repeat(253)), Err("256 bytes"));
    }

    fn check_new(rel: &str, expect: Result<(), &str>) {
        check(validate_new_topic_path, rel, expect)
    }

    #[test]
    fn new_topic_paths_are_names_claude_code_scans() {
        check_new("feedback_testing.md", Ok(()));
        check_new("team/notes/a.b.md", Ok(()));
        check_new("memory-notes.md", Ok(()));
        check_new("memoryx.md", Ok(()));
        check_new(".hidden.md", Err("name it hidden.md instead"));
        // The name suggested passes every rule, the Windows one included.
        check_new(".con.md", Err("starts with '.', and Claude Code's memory scan leaves out names starting with '.', so it would never see this memory; name it con-memory.md instead"));
        check_new(".notes/a.md", Err("the folder name \".notes\" starts with '.'"));
        check_new("team/.x.md", Err("leaves out names starting with '.'"));
        check_new("...md", Err("does not start with '.'"));
        for index in ["memory.md", "Memory.md", "MEMORy.md", "team/memory.md", "a/mEmOrY.md"] {
            check_new(index, Err("the same file"));
        }
        // The rules of every topic path still apply first.
        check_new("MEMORY.md", Err("is the index"));
        check_new("../x.md", Err("'..'"));
        check_path(".hidden.md", Ok(()));
        check_path("memory.md", Ok(()));
    }

    #[test]
    fn new_names_windows_cannot_create_are_refused_with_a_portable_name() {
        for (rel, instead) in [
            ("con.md", "con-memory.md"),
            ("CON.md", "CON-memory.md"),
            ("Aux.notes.md", "Aux-memory.notes.md"),
            ("nul.md", "nul-memory.md"),
            ("prn.md", "prn-memory.md"),
            ("com1.md", "com1-memory.md"),
            ("COM0.md", "COM0-memory.md"),
            ("lpt9.md", "lpt9-memory.md"),
            ("lpt¹.md", "lpt¹-memory.md"),
            ("com³.md", "com³-memory.md"),
            ("con .md", "con-memory.md"),
            ("nul/a.md", "nul-memory/a.md"),
            ("notes./a.md", "notes/a.md"),
            ("notes /a.md", "notes/a.md"),
            ("notes:old.md", "notes-old.md"),
            ("what?.md", "what.md"),
            ("?draft.md", "draft.md"),
            ("notes: old.md", "notes old.md"),
            ("x<>y.md", "x-y.md"),
            ("say \"hi\".md", "say hi.md"),
            ("a|b*c.md", "a-b-c.md"),
        ] {
            check_new(rel, Err("cannot be created on Windows"));
            check_new(rel, Err(&format!("; name it {instead} instead")));
            check_new(instead, Ok(()));
            // Only new names: an existing file of that name is still a topic path.
            check_path(rel, Ok(()));
        }
        check_new("con.md", Err("the file name \"con.md\" cannot be created on Windows (\"con.md\" is a reserved device name)"));
        check_new("nul/a.md", Err("the folder name \"nul\""));
        check_new("notes./a.md", Err("(the name \"notes.\" ends with a dot or a space, which Windows drops)"));
        check_new("notes:old.md", Err("(the character ':' is reserved)"));
        // Nothing portable is left to suggest.
        check_new("  /a.md", Err("give it a name without <>:\"|?*"));
        check_new("?.md", Err("give it a name without <>:\"|?*"));
        // Backslashes and control characters keep the older, more specific refusals.
        check_new("a\\b.md", Err("backslash"));
        check_new("a\tb.md", Err("control"));
        // Close to a device name, but not one.
        for ok in ["console.md", "con-memory.md", "com10.md", "auxiliary/a.md", "lpt.md"] {
            check_new(ok, Ok(()));
        }
    }

    /// A memory already named `aux.md` (made on Linux, or before this rule) keeps working: read,
    /// saved, edited, renamed to a portable name, deleted and restored. Only new names are held
    /// to the Windows rule: a create or a rename to such a name is refused, and a name given
    /// without a file name never slugs to one.
    #[test]
    fn existing_device_names_keep_working_and_new_ones_are_refused() {
        use super::super::testutil::TestDir;
        use super::super::{FieldEdits, NewMemory, Scope};
        let t = TestDir::new();
        t.write("MEMORY.md", "- [Aux](aux.md) — the aux notes\n");
        t.write("aux.md", "---\nname: Aux\ndescription: the aux notes\n---\nBody.\n");
        let m = t.memdir();
        let file = m.read("aux.md").unwrap();
        assert!(file.content.contains("Body."));
        let saved = m.update("aux.md", &file.content.replace("Body.", "Body, edited."), &file.revision).unwrap();
        let edits = FieldEdits { description: Some("the aux notes, edited".into()), ..FieldEdits::default() };
        m.update_fields("aux.md", &edits, &saved.revision).unwrap();
        assert_eq!(t.read("MEMORY.md"), "- [Aux](aux.md) — the aux notes, edited\n");

        let new = |name: &str, file: Option<&str>| NewMemory {
            name: name.into(),
            description: "d".into(),
            memory_type: None,
            body: "b".into(),
            file_name: file.map(str::to_string),
            scope: Scope::Private,
        };
        let err = m.create(&new("Console", Some("con.md"))).unwrap_err().to_string();
        assert!(err.contains("\"con.md\" is a reserved device name") && err.contains("name it con-memory.md instead"), "{err}");
        assert!(!t.exists("con.md"));
        assert_eq!(m.create(&new("Con", None)).unwrap().rel_path, "con-memory.md");
        let err = m.rename("aux.md", "LPT1.md").unwrap_err().to_string();
        assert!(err.contains("name it LPT1-memory.md instead"), "{err}");
        assert!(m.check_rename("aux.md", "notes/nul/aux.md").is_err());
        assert!(t.exists("aux.md"), "a refused rename leaves the file where it was");

        let entry = m.delete("aux.md").unwrap();
        assert!(!t.exists("aux.md"));
        m.restore(&entry.id).unwrap();
        assert!(m.read("aux.md").unwrap().content.contains("Body, edited."));
        m.rename("aux.md", "aux-notes.md").unwrap();
        assert!(t.exists("aux-notes.md"));
    }

    fn check_slug(name: &str, expect: &str) {
        assert_eq!(slugify(name), expect, "{name:?}");
    }

    #[test]
    fn slugs() {
        check_slug("Prefers tabs", "prefers-tabs");
        check_slug("  Use `cargo nextest`: always!  ", "use-cargo-nextest-always");
        check_slug("user_role", "user_role");
        check_slug("Café — notes", "café-notes");
        check_slug("предпочтения пользователя", "предпочтения-пользователя");
        check_slug("コーディング規約", "コーディング規約");
        check_slug("Über Straße", "über-straße");
        assert_eq!(slugify_ascii("Café — notes"), "caf-notes");
        // Cut at a character, never inside one.
        let long = slugify(&"é".repeat(80));
        assert!(long.len() <= MAX_SLUG_LEN && long.chars().all(|c| c == 'é'), "{long}");
        check_slug("😀😀", "untitled");
        check_slug("a--b", "a-b");
        check_slug(&"x".repeat(250), &"x".repeat(MAX_SLUG_LEN));
        check_slug(&format!("{}-y", "x".repeat(MAX_SLUG_LEN - 1)), &"x".repeat(MAX_SLUG_LEN - 1));
    }

    #[test]
    fn slugs_are_never_device_names() {
        check_slug("Con", "con-memory");
        check_slug("AUX", "aux-memory");
        check_slug("nul!", "nul-memory");
        check_slug("COM1", "com1-memory");
        check_slug("LPT¹", "lpt¹-memory");
        check_slug("con.notes", "con-notes");
        check_slug("Conference", "conference");
        for name in ["con", "Prn", "aux", "NUL", "com0", "lpt9", "COM²", "CONIN$", "conout$"] {
            let file = format!("{}.md", slugify(name));
            assert!(validate_new_topic_path(&file).is_ok(), "{name} → {file}");
        }
    }

    #[test]
    fn relative_targets() {
        assert_eq!(relative_to_dir("a.md", ""), "a.md");
        assert_eq!(relative_to_dir("team/a.md", "team"), "a.md");
        assert_eq!(relative_to_dir("a.md", "team"), "../a.md");
        assert_eq!(normalize_rel(["team", "..", "a.md"]).as_deref(), Some("a.md"));
        assert_eq!(normalize_rel(["", "..", "a.md"]), None);
    }

    #[test]
    fn trash_ids() {
        assert!(validate_trash_id("1764422207123-prefers-tabs").is_ok());
        for bad in ["", "../x", "a/b", ".hidden", "a b"] {
            assert!(validate_trash_id(bad).is_err(), "{bad}");
        }
    }
}
