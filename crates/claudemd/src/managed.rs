//! Managed files a session cannot trust as its organization's policy.
//!
//! From 2.1.304, a Cowork session (`CLAUDE_CODE_ENTRYPOINT` `remote_cowork` or
//! `remote_cowork_trigger`) asks of each managed file it loads whether its own account could have
//! written it; when it could, the file is sent with another label, its path in JSON quotes and
//! its text cleaned like MEMORY.md's with every line behind `> `
//! (`Profile::unverified_managed_files`, docs/claude-code-versions.md rows 87 and 88). Read
//! in the 2.1.337 bundle and run on it as root and as `nobody`, with the managed folder owned by
//! root or by the session's account.
//!
//! The judgement, as the release makes it on Linux and macOS: root always could; a file outside
//! the managed folder (brought in by an `@include`) always could; otherwise the file could be
//! written when it, or any folder on its way down from `/` (links followed, each target's way
//! too), is owned by the process's real or effective uid, writable by others, writable by a
//! group the process is in, or answers `access(W_OK)` with anything but `EACCES`, `EPERM` or
//! `EROFS`. A link whose target climbs out with `..` after a name, a file that cannot be looked
//! at, or more than 40 links, count as "could" too. On Windows the release judges no owner
//! (only the folder rule), and so does Mneme there.
//!
//! The release keeps only the yes or no; [`why_session_could_write`] also names the step that
//! said yes ([`CouldWrite`]), so the Context screen and `mneme` can tell the user who could have
//! changed the file instead of calling it the organization's policy.
//!
//! The release judges once per session, at its start, and keeps the answer: an owner or mode
//! changed while a session runs changes nothing it sends, not even for a conditional rule it
//! attaches after a later Read (observed on 2.1.316, 2.1.332 and 2.1.337 as `nobody`,
//! `crates/cli/tests/cowork_session.rs`). Mneme judges at each load, which is what a new session
//! sends; the screens say so.

use mneme_store::git::normalize;
use serde::Serialize;
use std::path::{Component, Path, PathBuf};

/// How many links the way to a file may pass before the release gives up (and judges it
/// writable).
const MAX_LINKS: usize = 40;

/// Why the session's own account could have written a managed file: which step of the
/// release's judgement (see the module's overview) answered "could". The release only keeps the
/// yes or no; the step is kept so a person can be told who could have changed the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum CouldWrite {
    /// The session runs as root (real or effective uid 0), which may write anything.
    Root,
    /// The file lies outside the managed folder: an `@include` brought it in.
    OutsideManagedFolder,
    /// The file itself (its link followed) is the account's, writable by others or by a group
    /// the account holds, or `access(W_OK)` does not refuse it.
    File,
    /// A folder on the way down from `/` to the file is one the account could write (judged as
    /// the file is), so the file could have been put there or replaced.
    Folder { path: PathBuf },
    /// The release could not finish its look (the file or a folder could not be looked at, a
    /// link could not be read, climbs out with `..`, or more than 40 links), and counts that as
    /// "could".
    NotChecked,
}

impl CouldWrite {
    /// Who could have changed the file, in a sentence for a person who does not use a terminal
    /// (Mneme's words; the release says nothing of the kind).
    pub fn describe(&self) -> String {
        match self {
            CouldWrite::Root => "Claude Code runs as root here, and root can change every file on this machine.".into(),
            CouldWrite::OutsideManagedFolder => "It lies outside the managed folder (an @include brought it in), \
                so Claude Code cannot tell who put it there."
                .into(),
            CouldWrite::File => "Your account can change this file.".into(),
            CouldWrite::Folder { path } => format!(
                "Your account can change the folder {} on the way to this file, so it could have put the file there \
                 or replaced it.",
                path.display()
            ),
            CouldWrite::NotChecked => "Claude Code could not check who can change it (a folder or link on the way \
                could not be looked at or followed), so it assumes your account could."
                .into(),
        }
    }
}

/// Whether the session's own account could have written the managed file `path`, as releases
/// with `Profile::unverified_managed_files` judge it (see the module's overview). `managed_dir`
/// is the managed-policy folder.
pub fn written_by_session_possible(path: &Path, managed_dir: &Path) -> bool {
    why_session_could_write(path, managed_dir).is_some()
}

/// [`written_by_session_possible`], with the step of the judgement that answered "could":
/// `None` when the account could not have written the file.
pub fn why_session_could_write(path: &Path, managed_dir: &Path) -> Option<CouldWrite> {
    if !lexically_inside(path, managed_dir) {
        return Some(CouldWrite::OutsideManagedFolder);
    }
    owner_allows(path)
}

/// `path` lies below `dir`, compared as spelled (`path.relative`: no links resolved). The
/// folder itself is not inside.
fn lexically_inside(path: &Path, dir: &Path) -> bool {
    let path = normalize(path);
    let dir = normalize(dir);
    path != dir && path.starts_with(&dir)
}

#[cfg(unix)]
fn owner_allows(path: &Path) -> Option<CouldWrite> {
    let me = Account::current();
    if me.is_root() {
        return Some(CouldWrite::Root);
    }
    // The file itself, its link followed.
    match std::fs::metadata(path) {
        Ok(m) if me.may_write(&m) => return Some(CouldWrite::File),
        Ok(_) => {}
        Err(_) => return Some(CouldWrite::NotChecked),
    }
    match access_to_write(path) {
        Access::Allowed => return Some(CouldWrite::File),
        Access::Unknown => return Some(CouldWrite::NotChecked),
        Access::Refused => {}
    }
    way_is_writable(&normalize(path), &me)
}

/// On Windows the release asks nothing about owners (no `geteuid`), so only a file outside the
/// managed folder is unverified there.
#[cfg(not(unix))]
fn owner_allows(_path: &Path) -> Option<CouldWrite> {
    None
}

/// The process's account: its real and effective uid and every group it holds.
#[cfg(unix)]
struct Account {
    uids: Vec<u32>,
    groups: Vec<u32>,
}

#[cfg(unix)]
impl Account {
    fn current() -> Self {
        use rustix::process::{getegid, geteuid, getgid, getgroups, getuid};
        let (euid, uid) = (geteuid().as_raw(), getuid().as_raw());
        let uids = if euid == uid { vec![euid] } else { vec![euid, uid] };
        let mut groups: Vec<u32> = getgroups().unwrap_or_default().into_iter().map(|g| g.as_raw()).collect();
        groups.push(getegid().as_raw());
        groups.push(getgid().as_raw());
        Account { uids, groups }
    }

    fn is_root(&self) -> bool {
        self.uids.contains(&0)
    }

    /// Owned by the account, writable by others, or writable by a group it holds.
    fn may_write(&self, m: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.uids.contains(&m.uid()) || m.mode() & 0o002 != 0 || (m.mode() & 0o020 != 0 && self.groups.contains(&m.gid()))
    }
}

/// What `access(W_OK)` says of a path. The release counts anything but a refusal as "could":
/// a success, and a failure other than `EACCES`, `EPERM` or `EROFS`.
#[cfg(unix)]
enum Access {
    Allowed,
    Refused,
    /// It failed for a reason that says neither (the release treats it as allowed).
    Unknown,
}

#[cfg(unix)]
fn access_to_write(path: &Path) -> Access {
    use rustix::io::Errno;
    match rustix::fs::access(path, rustix::fs::Access::WRITE_OK) {
        Ok(()) => Access::Allowed,
        Err(Errno::ACCESS | Errno::PERM | Errno::ROFS) => Access::Refused,
        Err(_) => Access::Unknown,
    }
}

/// Every folder from `/` down to `path`'s own folder, each link on the way followed (and the
/// walk begun again on its target): the first of them the account could write, if any.
#[cfg(unix)]
fn way_is_writable(path: &Path, me: &Account) -> Option<CouldWrite> {
    let mut current = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        let names: Vec<_> = current.components().filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            _ => None,
        }).collect();
        let mut folder = PathBuf::from("/");
        let mut next = None;
        for (i, name) in names.iter().enumerate() {
            match std::fs::metadata(&folder) {
                Ok(m) if me.may_write(&m) => return Some(CouldWrite::Folder { path: folder }),
                Ok(_) => match access_to_write(&folder) {
                    Access::Refused => {}
                    Access::Allowed => return Some(CouldWrite::Folder { path: folder }),
                    Access::Unknown => return Some(CouldWrite::NotChecked),
                },
                Err(_) => return Some(CouldWrite::NotChecked),
            }
            let step = folder.join(name);
            match std::fs::symlink_metadata(&step) {
                Ok(m) if m.file_type().is_symlink() => {
                    let Ok(target) = std::fs::read_link(&step) else { return Some(CouldWrite::NotChecked) };
                    if climbs_out(&target) {
                        return Some(CouldWrite::NotChecked);
                    }
                    let mut resolved = folder.join(&target);
                    for rest in &names[i + 1..] {
                        resolved.push(rest);
                    }
                    next = Some(normalize(&resolved));
                    break;
                }
                Ok(_) => folder = step,
                Err(_) => return Some(CouldWrite::NotChecked),
            }
        }
        match next {
            None => return None,
            Some(p) => current = p,
        }
    }
    Some(CouldWrite::NotChecked)
}

/// A link target that climbs back out after naming a folder (`a/../../x`), or that is nothing
/// but `..`s: the release does not follow it and judges the way writable. Its segments as the
/// release splits them (no root, no `.`), so `/../x` climbs nowhere.
fn climbs_out(target: &Path) -> bool {
    let parts: Vec<Component> = target.components().filter(|c| matches!(c, Component::Normal(_) | Component::ParentDir)).collect();
    let Some(up) = parts.iter().rposition(|c| matches!(c, Component::ParentDir)) else { return false };
    parts.iter().position(|c| !matches!(c, Component::ParentDir)).is_none_or(|name| up > name)
}

/// A path as the release names an unverified file: its tags neutralized as in MEMORY.md,
/// written as a JSON string, and every character a reader cannot see (the MEMORY.md cleaning's
/// class, and U+2028 and U+2029) escaped as `\uXXXX`, one per UTF-16 unit.
pub fn quoted_path(path: &str, tags: mneme_core::versions::MemoryIndexTags) -> String {
    let neutral = crate::neutralize_tags(path, tags);
    let mut json = String::with_capacity(neutral.len() + 2);
    json.push('"');
    for c in neutral.chars() {
        match c {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            '\u{8}' => json.push_str("\\b"),
            '\u{c}' => json.push_str("\\f"),
            '\n' => json.push_str("\\n"),
            '\r' => json.push_str("\\r"),
            '\t' => json.push_str("\\t"),
            c if (c as u32) < 0x20 => json.push_str(&format!("\\u{:04x}", c as u32)),
            c => json.push(c),
        }
    }
    json.push('"');
    let mut out = String::with_capacity(json.len());
    let mut buf = [0u8; 4];
    for c in json.chars() {
        let unseen = c == '\u{2028}' || c == '\u{2029}' || mneme_core::text::UNSEEN_CHARACTERS.is_match(c.encode_utf8(&mut buf));
        if unseen {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// An unverified managed file's text: cleaned as MEMORY.md's is, then every line behind `> `
/// (a line's own `> `s are kept, unlike MEMORY.md's quoting).
pub fn quoted_text(content: &str, tags: mneme_core::versions::MemoryIndexTags) -> String {
    let cleaned = crate::cleaned_memory_index(content, tags);
    let mut out = String::with_capacity(cleaned.len() + cleaned.len() / 16 + 2);
    for (i, line) in cleaned.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("> ");
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_that_climb_out_are_not_followed() {
        for (target, climbs) in [
            ("real/../real", true),
            ("../..", true),
            ("..", true),
            ("/x/..", true),
            ("../real", false),
            ("/../x", false),
            ("./a/./b", false),
            ("/etc/claude-code", false),
        ] {
            assert_eq!(climbs_out(Path::new(target)), climbs, "{target}");
        }
    }

    #[test]
    fn inside_is_lexical_and_excludes_the_folder_itself() {
        let dir = Path::new("/etc/claude-code");
        assert!(lexically_inside(Path::new("/etc/claude-code/CLAUDE.md"), dir));
        assert!(lexically_inside(Path::new("/etc/claude-code/.claude/rules/a.md"), dir));
        assert!(!lexically_inside(Path::new("/etc/claude-code/../x.md"), dir));
        assert!(!lexically_inside(Path::new("/etc/claude-codex/CLAUDE.md"), dir));
        assert!(!lexically_inside(dir, dir));
    }
}
