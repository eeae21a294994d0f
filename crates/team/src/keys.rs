//! Team memory keys: which relative paths from the server may become files under the team
//! folder, checked exactly as Claude Code's `teamMemPaths.ts` checks them, and a write that
//! keeps that promise even if the folder changes between the check and the write.
//!
//! The chain for a key (`validateTeamMemKey`), each failure a [`PathTraversalError`] with
//! Claude Code's message:
//! 1. [`sanitize_path_key`] (from `mneme-team-proto`, with the strict policy): a NUL byte; `%`-escapes that decode to `..` or `/`
//!    (`decodeURIComponent`, malformed escapes kept as they are); NFKC forms that introduce
//!    `..`, `/`, `\` or NUL (full-width `．．／`); a backslash; a leading `/`.
//! 2. `join(teamDir, key)` resolved lexically must start with `<teamDir>/`.
//! 3. [`realpath_deepest_existing`] of that path must be inside the real team folder
//!    ([`is_real_path_within_team_dir`]): symbolic links may not lead out, dangling links
//!    and loops are refused, and anything that cannot be checked fails closed.
//!
//! Paths follow Node's POSIX `path` module (`/` separators, `..` resolved lexically before any
//! link is followed), as Claude Code does on Linux and macOS. The team folder string is
//! NFC-normalised with a trailing `/` (`getTeamMemPath`), and the prefix checks compare
//! strings, as in JavaScript; the trailing `/` is what stops a `team-evil` sibling.
//!
//! Mneme adds a strict canonical policy on top ([`check_strict_key`]) for every file it writes
//! from team memory and every key a team server stores: non-canonical spellings, control and
//! invisible characters, over-long names and names Windows cannot create are refused, never
//! normalised. `mneme team check-key --claude-code` still gives Claude Code's verdict alone.
//!
//! [`write_team_file`] re-checks at write time: it walks from the team folder down with
//! `openat(O_NOFOLLOW | O_DIRECTORY)` one component at a time and creates the file relative to
//! the last folder's descriptor (temporary file with the replaced file's permission bits,
//! fsync, rename), so a folder swapped for a symbolic link after validation makes the write
//! fail instead of landing outside.

// The key rules themselves (no file system) live in `mneme-team-proto`, shared with the server;
// they are re-exported here so every key check is found under one path.
pub use mneme_team_proto::keys::*;
use std::io;
use std::path::{Path, PathBuf};

/// What [`write_team_file`] can fail with.
#[derive(Debug, thiserror::Error)]
pub enum TeamFileError {
    /// The key was refused before anything was written.
    #[error(transparent)]
    Key(#[from] PathTraversalError),
    /// A folder on the way is a symbolic link or not a folder (checked again at write time).
    #[error("{path} is a symbolic link or not a folder, so Mneme will not write through it (it could lead outside the team memory folder). Replace it with a real folder and sync again.")]
    NotAFolder {
        /// The offending path.
        path: PathBuf,
    },
    /// An operating-system error.
    #[error("Could not {action} {path}: {source}. Check that the team memory folder exists and that you may write there, then try again.")]
    Io {
        /// What Mneme was doing.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}
/// The name Node gives an error code (`err.code`).
fn error_code(e: &io::Error) -> String {
    #[cfg(unix)]
    {
        use rustix::io::Errno;
        if let Some(raw) = e.raw_os_error() {
            let errno = Errno::from_raw_os_error(raw);
            let known = [
                (Errno::ACCESS, "EACCES"),
                (Errno::PERM, "EPERM"),
                (Errno::NOENT, "ENOENT"),
                (Errno::NOTDIR, "ENOTDIR"),
                (Errno::LOOP, "ELOOP"),
                (Errno::NAMETOOLONG, "ENAMETOOLONG"),
                (Errno::IO, "EIO"),
                (Errno::INVAL, "EINVAL"),
                (Errno::MFILE, "EMFILE"),
                (Errno::NFILE, "ENFILE"),
                (Errno::NOMEM, "ENOMEM"),
                (Errno::BUSY, "EBUSY"),
                (Errno::STALE, "ESTALE"),
                (Errno::TIMEDOUT, "ETIMEDOUT"),
                (Errno::XDEV, "EXDEV"),
                (Errno::FAULT, "EFAULT"),
                (Errno::OVERFLOW, "EOVERFLOW"),
                (Errno::NODEV, "ENODEV"),
                (Errno::NXIO, "ENXIO"),
                (Errno::ROFS, "EROFS"),
                (Errno::AGAIN, "EAGAIN"),
            ];
            if let Some((_, name)) = known.iter().find(|(k, _)| *k == errno) {
                return (*name).to_string();
            }
        }
    }
    match e.kind() {
        io::ErrorKind::NotFound => "ENOENT".into(),
        io::ErrorKind::PermissionDenied => "EACCES".into(),
        _ => "UNKNOWN".into(),
    }
}

fn is_code(e: &io::Error, code: &str) -> bool {
    error_code(e) == code
}

/// `realpathDeepestExisting`: `realpath` of the longest existing prefix of `path` (an
/// absolute, normalised path), with the missing tail joined back on. A dangling link or a
/// loop on the way is refused; `ENOTDIR`/`ENAMETOOLONG` keep walking up; any other error fails
/// closed. If nothing resolves before `/`, the input comes back unchanged.
pub fn realpath_deepest_existing(path: &Path) -> Result<PathBuf, PathTraversalError> {
    let input = path.to_string_lossy().into_owned();
    let mut tail: Vec<String> = Vec::new();
    let mut current = input.clone();
    loop {
        let parent = dirname(&current).to_string();
        if parent == current {
            break;
        }
        match std::fs::canonicalize(&current) {
            Ok(real) => {
                let mut out = real;
                for seg in tail.iter().rev() {
                    out.push(seg);
                }
                return Ok(out);
            }
            Err(e) if is_code(&e, "ENOENT") => {
                if std::fs::symlink_metadata(&current).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(PathTraversalError::DanglingSymlink(current));
                }
            }
            Err(e) if is_code(&e, "ELOOP") => return Err(PathTraversalError::SymlinkLoop(current)),
            Err(e) if is_code(&e, "ENOTDIR") || is_code(&e, "ENAMETOOLONG") => {}
            Err(e) => return Err(PathTraversalError::CannotVerify { code: error_code(&e), path: current }),
        }
        // `n.slice(r.length + sep.length)`: the last segment (JavaScript's slice is off by one
        // at the root, but the loop ends there before the tail is used).
        tail.push(current.get(parent.len() + 1..).unwrap_or_default().to_string());
        current = parent;
    }
    Ok(PathBuf::from(input))
}

/// `isRealPathWithinTeamDir`: whether a resolved path is the real team folder or inside it.
/// A team folder that does not exist yet passes (nothing can escape through it); any other
/// failure to resolve it fails.
pub fn is_real_path_within_team_dir(team_dir: &Path, real: &Path) -> bool {
    let prefix = team_dir_prefix(team_dir);
    let bare = prefix.trim_end_matches(['/', '\\']);
    let real_team = match std::fs::canonicalize(bare) {
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(e) => return is_code(&e, "ENOENT") || is_code(&e, "ENOTDIR"),
    };
    let real = real.to_string_lossy();
    real == real_team || real.starts_with(&format!("{real_team}/"))
}

/// `validateTeamMemKey`: the whole chain for a server key; returns the resolved path
/// (`<team>/<key>`, lexically normalised, links not followed).
pub fn validate_team_mem_key(team_dir: &Path, key: &str) -> Result<PathBuf, PathTraversalError> {
    sanitize_path_key(key)?;
    let prefix = team_dir_prefix(team_dir);
    let resolved = resolve(&format!("{prefix}{key}"), "/");
    if !resolved.starts_with(&prefix) {
        return Err(PathTraversalError::KeyEscapes(key.into()));
    }
    let real = realpath_deepest_existing(Path::new(&resolved))?;
    if !is_real_path_within_team_dir(team_dir, &real) {
        return Err(PathTraversalError::KeyEscapesViaSymlink(key.into()));
    }
    Ok(PathBuf::from(resolved))
}

/// `validateTeamMemWritePath` (Claude Code 2.1.88's check for a model write into the team
/// folder; 2.1.197 validates through keys instead). A relative `file_path` resolves against
/// `cwd`, as `path.resolve` does against the process's folder.
pub fn validate_team_mem_write_path(team_dir: &Path, file_path: &str, cwd: &Path) -> Result<PathBuf, PathTraversalError> {
    if file_path.contains('\0') {
        return Err(PathTraversalError::NullByteInPath(file_path.into()));
    }
    let resolved = resolve(file_path, &cwd.to_string_lossy());
    if !resolved.starts_with(&team_dir_prefix(team_dir)) {
        return Err(PathTraversalError::PathEscapes(file_path.into()));
    }
    let real = realpath_deepest_existing(Path::new(&resolved))?;
    if !is_real_path_within_team_dir(team_dir, &real) {
        return Err(PathTraversalError::PathEscapesViaSymlink(file_path.into()));
    }
    Ok(PathBuf::from(resolved))
}

/// Validates `key` and writes `bytes` to it atomically, creating folders as needed. See the
/// module docs for why this cannot be redirected outside the team folder after validation.
/// Returns the written path.
pub fn write_team_file(team_dir: &Path, key: &str, bytes: &[u8]) -> Result<PathBuf, TeamFileError> {
    write_checked(team_dir, key, bytes, || {})
}

/// [`write_team_file`] with a hook between validation and the write, where tests swap folders.
fn write_checked(
    team_dir: &Path,
    key: &str,
    bytes: &[u8],
    between: impl FnOnce(),
) -> Result<PathBuf, TeamFileError> {
    let resolved = validate_team_mem_key(team_dir, key)?;
    between();
    let prefix = team_dir_prefix(team_dir);
    let resolved_str = resolved.to_string_lossy().into_owned();
    // Validation guarantees the prefix; an empty remainder (the team folder itself) would
    // already have been refused as escaping.
    let rel = resolved_str.strip_prefix(&prefix).unwrap_or_default();
    let parts: Vec<&str> = rel.split('/').collect();
    let Some((name, dirs)) = parts.split_last() else {
        return Err(PathTraversalError::KeyEscapes(key.into()).into());
    };
    let root = PathBuf::from(prefix.trim_end_matches('/'));
    std::fs::create_dir_all(&root)
        .map_err(|source| TeamFileError::Io { action: "create the team folder", path: root.clone(), source })?;
    sys::write_below(&root, dirs, name, bytes)?;
    Ok(resolved)
}

#[cfg(unix)]
mod sys {
    use super::TeamFileError;
    use rustix::fd::OwnedFd;
    use rustix::fs::{fsync, mkdirat, openat, renameat, statat, unlinkat, AtFlags, FileType, Mode, OFlags, CWD};
    use mneme_store::atomic::TempName;
    use rustix::fd::AsRawFd;
    use rustix::io::Errno;
    use std::path::{Path, PathBuf};

    fn io(action: &'static str, path: &Path, e: Errno) -> TeamFileError {
        TeamFileError::Io { action, path: path.to_path_buf(), source: e.into() }
    }

    /// Opens `name` under `dir` as a folder without following a link, creating it if absent.
    fn open_dir(dir: &OwnedFd, name: &str, shown: &Path) -> Result<OwnedFd, TeamFileError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let refused = |e: Errno| match e {
            Errno::LOOP | Errno::NOTDIR => TeamFileError::NotAFolder { path: shown.to_path_buf() },
            e => io("open the folder", shown, e),
        };
        match openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => Ok(fd),
            Err(Errno::NOENT) => {
                match mkdirat(dir, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(io("create the folder", shown, e)),
                }
                openat(dir, name, flags, Mode::empty()).map_err(refused)
            }
            Err(e) => Err(refused(e)),
        }
    }

    pub(super) fn write_below(root: &Path, dirs: &[&str], name: &str, bytes: &[u8]) -> Result<(), TeamFileError> {
        // The team folder itself may be a link (Claude Code resolves it too); below it, no
        // component is followed.
        let mut shown = root.to_path_buf();
        let mut dir = openat(CWD, root, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| io("open the team folder", root, e))?;
        for d in dirs {
            shown.push(d);
            dir = open_dir(&dir, d, &shown)?;
        }
        let target: PathBuf = shown.join(name);
        // A writer killed mid-write (a crash, a full disk's SIGXFSZ) leaves its partial copy
        // here under the temporary name; the store's rule removes those of writers that are
        // gone, as every other write of Mneme's does. It is handed the folder this descriptor
        // opened (`/proc/self/fd`), not the path, which may name another folder by now.
        let opened = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        mneme_store::atomic::remove_stale_temps(if opened.is_dir() { &opened } else { &shown });
        // The file being replaced keeps its permission bits (and owner, where this process may
        // set it), as every write through `mneme_store::atomic` does: a team file set to 0600
        // must not come back readable by others after a pull. Looked up in the folder this
        // descriptor holds, without following a link (a link's own bits mean nothing).
        let replaced = statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).ok().filter(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile);
        // The name is held as this process's until it is dropped at the end of this function
        // (after the rename or the unlink), so no clean-up on another thread takes the file
        // for a leftover meanwhile.
        let (tmp, file) = loop {
            let tmp = TempName::reserve();
            let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match openat(&dir, tmp.as_str(), flags, Mode::from_raw_mode(0o666)) {
                Ok(file) => break (tmp, std::fs::File::from(file)),
                // Left by a killed writer that had this pid, put there since the clean-up
                // above: take the next number.
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(io("create a temporary file beside", &target, e)),
            }
        };
        let written = (|| {
            // Permissions before content, so the new text is never readable more widely than
            // the old, not even through the temporary copy; set-id bits are not kept.
            if let Some(st) = &replaced {
                mneme_store::atomic::match_mode_and_owner(&file, st.st_mode, st.st_uid, st.st_gid).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
            }
            let mut rest = bytes;
            while !rest.is_empty() {
                let n = rustix::io::write(&file, rest)?;
                rest = &rest[n..];
            }
            fsync(&file)
        })();
        drop(file);
        let published = written.and_then(|()| renameat(&dir, tmp.as_str(), &dir, name));
        if let Err(e) = published {
            let _ = unlinkat(&dir, tmp.as_str(), AtFlags::empty());
            return Err(io("write", &target, e));
        }
        // The rename is durable once the folder is.
        let _ = fsync(&dir);
        Ok(())
    }
}

#[cfg(not(unix))]
mod sys {
    use super::TeamFileError;
    use std::path::Path;

    /// Without `openat`, the write re-checks each folder just before writing; a swap in the
    /// instants between that check and the write is not excluded here.
    pub(super) fn write_below(root: &Path, dirs: &[&str], name: &str, bytes: &[u8]) -> Result<(), TeamFileError> {
        let mut dir = root.to_path_buf();
        for d in dirs {
            dir.push(d);
            match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(TeamFileError::NotAFolder { path: dir }),
                Err(_) => std::fs::create_dir(&dir)
                    .map_err(|source| TeamFileError::Io { action: "create the folder", path: dir.clone(), source })?,
            }
        }
        let target = dir.join(name);
        mneme_store::atomic::write_atomic(&target, bytes)
            .map_err(|source| TeamFileError::Io { action: "write", path: target.clone(), source })
    }
}

/// The strict policy, then Claude Code's verdict against the real team folder
/// ([`validate_team_mem_key`]): what Mneme applies before it writes a pulled file.
pub fn validate_strict_team_mem_key(team_dir: &Path, key: &str) -> Result<PathBuf, StrictKeyError> {
    check_strict_key(key)?;
    Ok(validate_team_mem_key(team_dir, key)?)
}
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A folder swapped for a link to the outside after validation: the write fails and
    /// nothing lands outside.
    #[test]
    fn a_folder_swapped_for_a_link_after_the_check_cannot_redirect_the_write() {
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path().join("memory/team");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(team.join("notes")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let err = write_checked(&team, "notes/deploy.md", b"pwned", || {
            std::fs::remove_dir(team.join("notes")).unwrap();
            symlink(&outside, team.join("notes")).unwrap();
        })
        .unwrap_err();
        assert!(matches!(err, TeamFileError::NotAFolder { .. }), "{err}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        // The link is still there, untouched, and no temporary file was left anywhere.
        assert!(std::fs::symlink_metadata(team.join("notes")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_dir(&team).unwrap().count(), 1);
    }

    /// The file itself swapped for a link after validation: the rename replaces the link, the
    /// link's target is not written.
    #[test]
    fn a_file_swapped_for_a_link_after_the_check_is_replaced_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path().join("team");
        let outside = tmp.path().join("victim.txt");
        std::fs::create_dir_all(&team).unwrap();
        std::fs::write(&outside, "original").unwrap();
        write_checked(&team, "x.md", b"new", || symlink(&outside, team.join("x.md")).unwrap()).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "original");
        let meta = std::fs::symlink_metadata(team.join("x.md")).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(std::fs::read_to_string(team.join("x.md")).unwrap(), "new");
    }

    /// What a writer killed mid-write left (its partial temporary copy) goes with the next
    /// write into that folder, once its writer is gone; so does a leftover under this process's
    /// own pid (a container's pid 1 run after run), which is no file this process holds.
    #[test]
    fn a_killed_writers_temporary_file_is_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path().join("team");
        std::fs::create_dir_all(team.join("notes")).unwrap();
        // Above Linux's highest pid, so no process runs under it.
        let dead = team.join("notes/.mneme-4194399-0.tmp");
        std::fs::write(&dead, "half a runbo").unwrap();
        write_team_file(&team, "notes/runbook.md", b"the runbook").unwrap();
        assert!(!dead.exists(), "the dead writer's partial copy is gone");
        // Numbers this process never reaches, under its own pid: a previous run's.
        let own: Vec<_> = (0..4).map(|n| team.join(format!(".mneme-{}-{}.tmp", std::process::id(), (1u64 << 60) + n))).collect();
        for f in &own {
            std::fs::write(f, "left").unwrap();
        }
        write_team_file(&team, "deploy.md", b"deploy from main").unwrap();
        assert_eq!(std::fs::read_to_string(team.join("deploy.md")).unwrap(), "deploy from main");
        assert_eq!(std::fs::read_to_string(team.join("notes/runbook.md")).unwrap(), "the runbook");
        assert!(own.iter().all(|f| !f.exists()), "a previous run's leftovers under this pid are gone");
    }

    /// A pulled file replacing one the person set to 0600 keeps 0600 (a new file gets the
    /// default mode); a replaced link's own bits are not taken.
    #[test]
    fn a_replaced_file_keeps_its_permission_bits() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path().join("team");
        write_team_file(&team, "notes/private.md", b"mine").unwrap();
        let file = team.join("notes/private.md");
        let fresh = mode(&file);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_team_file(&team, "notes/private.md", b"the team's version").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "the team's version");
        assert_eq!(mode(&file), 0o600, "the person's 0600 is kept");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o4750)).unwrap();
        write_team_file(&team, "notes/private.md", b"again").unwrap();
        assert_eq!(mode(&file), 0o750, "rwx kept, the set-id bit not");
        // A link in the file's place (to that 0750 file) is replaced by a file with the default
        // mode, not its target's.
        write_checked(&team, "linked.md", b"x", || symlink(&file, team.join("linked.md")).unwrap()).unwrap();
        assert_eq!(mode(&team.join("linked.md")), fresh);
        assert_eq!(std::fs::read_dir(team.join("notes")).unwrap().count(), 1, "no temporary file is left");
    }

    /// Deeper: a missing folder created as a link between the check and the write.
    #[test]
    fn a_missing_folder_created_as_a_link_after_the_check_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path().join("team");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&team).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let err = write_checked(&team, "a/b/c.md", b"x", || symlink(&outside, team.join("a")).unwrap()).unwrap_err();
        assert!(matches!(err, TeamFileError::NotAFolder { .. }), "{err}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }
}
