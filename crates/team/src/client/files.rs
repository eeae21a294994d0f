//! The team folder on disk as the sync client sees it: Claude Code 2.1.197's push-side read
//! (`every .md/.txt file not starting with '.'`, oversized files and files with secrets left
//! out), its fail-closed check that neither the memory folder nor `team/` was swapped for a
//! symbolic link, and hashing.

use super::state::SkippedSecret;
use super::SyncError;
use crate::wire::MAX_FILE_SIZE_BYTES;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// `hashContent`: `sha256:` and the hex SHA-256 of the UTF-8 text.
pub fn hash_content(s: &str) -> String {
    format!("sha256:{:x}", Sha256::digest(s.as_bytes()))
}

/// Orders keys as JavaScript's default `sort()` does: by UTF-16 code units (which differs
/// from byte order once characters beyond U+FFFF meet U+E000–U+FFFF).
pub fn js_sort(keys: &mut [String]) {
    keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
}

/// Only these names sync (2.1.197): not starting with `.`, ending in `.md` or `.txt`.
pub use mneme_team_proto::keys::syncs_name;

/// What a push read from the team folder.
#[derive(Debug, Default)]
pub struct LocalFiles {
    /// Key → content, for every file that may be sent.
    pub entries: BTreeMap<String, String>,
    /// Every syncable name on disk, sent or not.
    pub disk_keys: BTreeSet<String>,
    /// Left out because the scanner found a secret (first rule per file).
    pub skipped_secrets: Vec<SkippedSecret>,
    /// Left out because they are over 250,000 bytes.
    pub oversized: Vec<String>,
    /// Left out because their key breaks Mneme's strict key policy ([`crate::keys::check_strict_key`]).
    pub refused_keys: Vec<super::SkippedKey>,
    /// False when part of the folder could not be listed (permission denied).
    pub trusted: bool,
}

/// Reads every syncable regular file under `team_dir`, recursively. Symbolic links are not
/// regular files and are skipped, as Node's `Dirent.isFile()` skips them.
pub fn read_local(team_dir: &Path) -> Result<LocalFiles, SyncError> {
    let mut out = LocalFiles { trusted: true, ..Default::default() };
    walk(team_dir, team_dir, &mut out)?;
    Ok(out)
}

fn walk(root: &Path, dir: &Path, out: &mut LocalFiles) -> Result<(), SyncError> {
    let listing = match fs::read_dir(dir) {
        Ok(l) => l,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        // A folder that cannot be listed (no permission; a path too long for the system, which
        // a teammate's deep key can plant) is left out, and its absence deletes nothing.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(rustix::io::Errno::NAMETOOLONG.raw_os_error()) => {
            out.trusted = false;
            return Ok(());
        }
        Err(e) => return Err(SyncError::Io { action: "list", path: dir.to_path_buf(), source: e }),
    };
    for item in listing {
        let item = item.map_err(|e| SyncError::Io { action: "list", path: dir.to_path_buf(), source: e })?;
        let Ok(kind) = item.file_type() else { continue };
        let path = item.path();
        if kind.is_dir() {
            walk(root, &path, out)?;
            continue;
        }
        let name = item.file_name().to_string_lossy().into_owned();
        if !kind.is_file() || !syncs_name(&name) {
            continue;
        }
        let Some(key) = key_of(root, &path) else { continue };
        out.disk_keys.insert(key.clone());
        if let Err(why) = crate::keys::check_strict_key(&key) {
            out.refused_keys.push(super::SkippedKey { key, reason: why.to_string() });
            continue;
        }
        // The server scans names as it scans text; a name it refuses would fail its batch.
        if let Some(hit) = mneme_secrets::scan_pushed(&key).into_iter().next() {
            let reason = format!("its name looks like a {} and the team server refuses it; rename the file", hit.label);
            out.refused_keys.push(super::SkippedKey { key, reason });
            continue;
        }
        // Read errors leave the file out silently, as Claude Code's `catch {}` does. The size
        // is asked of the open file (a FIFO swapped in after the listing is refused rather than
        // waited on), and a file that grew past the cap since it was listed is caught too.
        let bytes = match mneme_store::open::read_plain_capped(&path, MAX_FILE_SIZE_BYTES) {
            Ok((bytes, _)) => bytes,
            Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
                out.oversized.push(key);
                continue;
            }
            Err(_) => continue,
        };
        // The write policy's own decision (`held_back_on_push`: scanned as bytes, since a UTF-16
        // file's tokens have a NUL after each letter, then the server's verdict, which also
        // refuses what only looks like a token: a file it refuses would fail its whole batch),
        // and the Markdown pass, for a file written by hand (`**API key**: …`).
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let hit = mneme_secrets::held_back_on_push(&bytes).into_iter().next().or_else(|| mneme_secrets::scan_team(&text).into_iter().next());
        if let Some(hit) = hit {
            out.skipped_secrets.push(SkippedSecret { path: key, rule_id: hit.rule_id.to_string(), label: hit.label.to_string() });
            continue;
        }
        // A NUL (a UTF-16 or binary file) cannot be stored by a PostgreSQL team server, which
        // refuses it and with it the whole batch.
        if bytes.contains(&0) {
            let reason = "it holds a NUL character (a UTF-16 or binary file), which the team server refuses; save it as UTF-8 text".to_string();
            out.refused_keys.push(super::SkippedKey { key, reason });
            continue;
        }
        out.entries.insert(key, text);
    }
    Ok(())
}

/// `path` relative to `root` with `/` separators.
fn key_of(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    Some(parts.join("/"))
}

/// Claude Code's canonical-location check before any sync: the team folder, resolved, must be
/// `realpath(parent of the memory folder)/<memory folder name>/team`. A memory folder or
/// `team/` that is itself a symbolic link fails closed; a team folder that does not exist yet
/// passes.
pub fn check_canonical(memory_dir: &Path) -> Result<(), SyncError> {
    let team = memory_dir.join(mneme_store::memdir::TEAM_DIR);
    let escape = |detail: String| SyncError::Escapes { path: team.clone(), detail };
    let actual = match fs::canonicalize(&team) {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(ENOTDIR) => return Ok(()),
        Err(e) => return Err(escape(e.to_string())),
    };
    let (Some(parent), Some(name)) = (memory_dir.parent(), memory_dir.file_name()) else {
        return Err(escape("the memory folder has no parent".into()));
    };
    let expected: PathBuf = match fs::canonicalize(parent) {
        Ok(p) => p.join(name).join(mneme_store::memdir::TEAM_DIR),
        Err(e) => return Err(escape(e.to_string())),
    };
    if actual == expected {
        Ok(())
    } else {
        Err(escape(format!("it resolves to {}", actual.display())))
    }
}

/// ENOTDIR (20 on Linux, macOS and the BSDs): a path component is a file, so the folder is absent.
const ENOTDIR: i32 = 20;

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder nested past the system's path limit (a deep key a teammate or a server
    /// planted) is left out of the listing, which is then not trusted for deletions, instead
    /// of failing every push.
    #[test]
    fn a_folder_past_the_path_limit_is_left_out_not_fatal() {
        use rustix::fs::{mkdirat, openat, Mode, OFlags};
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path().join("team");
        fs::create_dir_all(&team).unwrap();
        fs::write(team.join("ok.md"), "text").unwrap();
        // Created one level at a time, relative to the last: no absolute path is ever formed.
        let mut dir = openat(rustix::fs::CWD, &team, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
        let name = "d".repeat(200);
        for _ in 0..25 {
            mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
            dir = openat(&dir, name.as_str(), OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
        }
        let local = read_local(&team).unwrap();
        assert!(local.entries.contains_key("ok.md"));
        assert!(!local.trusted, "part of the folder was not listed");
    }

    /// A push leaves out files whose names break the strict key policy, saying why, and
    /// still counts them as present (so they are not taken for deletions).
    #[test]
    fn push_leaves_out_keys_the_strict_policy_refuses() {
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path();
        fs::create_dir_all(team.join("notes")).unwrap();
        for name in ["ok.md", "notes/fine.md", "con.md", "a\u{202e}dm.txt", "line\nbreak.md", "trailing.md "] {
            fs::write(team.join(name), "text").unwrap();
        }
        let local = read_local(team).unwrap();
        assert_eq!(local.entries.keys().collect::<Vec<_>>(), ["notes/fine.md", "ok.md"]);
        let mut refused: Vec<&str> = local.refused_keys.iter().map(|k| k.key.as_str()).collect();
        refused.sort();
        assert_eq!(refused, ["a\u{202e}dm.txt", "con.md", "line\nbreak.md"]);
        assert!(local.refused_keys.iter().all(|k| k.reason.contains("rename")), "{:?}", local.refused_keys);
        assert!(local.disk_keys.contains("con.md"));
    }

    /// What the team server would refuse, and with it the whole batch, is left out and said:
    /// a name that looks like a token, a file holding a NUL (UTF-16 text without a token).
    #[test]
    fn files_the_server_would_refuse_are_left_out_with_why() {
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path();
        fs::write(team.join("ok.md"), "text").unwrap();
        fs::write(team.join("ghp_R7xk2Lm9Qw3Vb8Nz4Tc6Yh1Ja5Pd0Gs2Fu7E.md"), "text").unwrap();
        let utf16: Vec<u8> = "Deploy from main.".encode_utf16().flat_map(u16::to_le_bytes).collect();
        fs::write(team.join("windows.md"), utf16).unwrap();
        let local = read_local(team).unwrap();
        assert_eq!(local.entries.keys().collect::<Vec<_>>(), ["ok.md"]);
        let mut refused: Vec<(&str, &str)> = local.refused_keys.iter().map(|k| (k.key.as_str(), k.reason.as_str())).collect();
        refused.sort();
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused[0].1.contains("GitHub PAT") && refused[0].1.contains("rename"), "{refused:?}");
        assert!(refused[1].0 == "windows.md" && refused[1].1.contains("NUL") && refused[1].1.contains("UTF-8"), "{refused:?}");
        assert!(local.disk_keys.contains("windows.md"), "still counted as present");
    }

    /// A secret written in Markdown by hand (bold key name, CRLF) is held back like a plain
    /// one: the write policy would refuse it, so a push does too.
    #[test]
    fn a_secret_spelled_in_markdown_is_held_back() {
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path();
        fs::write(team.join("ok.md"), "- **Owner**: the platform team\n").unwrap();
        fs::write(team.join("keys.md"), "# Keys\r\n\r\n- **API key**: Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0\r\n").unwrap();
        let local = read_local(team).unwrap();
        assert_eq!(local.entries.keys().collect::<Vec<_>>(), ["ok.md"]);
        assert_eq!(local.skipped_secrets.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(), ["keys.md"]);
    }

    /// A file over the wire's size cap is reported as oversized, not pushed; one at the cap is
    /// pushed; a FIFO under a syncable name is left out without waiting for a writer.
    #[test]
    fn the_push_walk_keeps_to_the_size_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let team = tmp.path();
        let cap = MAX_FILE_SIZE_BYTES as usize;
        fs::write(team.join("at-cap.md"), "a".repeat(cap)).unwrap();
        fs::write(team.join("over.md"), "a".repeat(cap + 1)).unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, team.join("pipe.md"), rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let local = read_local(team).unwrap();
        assert_eq!(local.entries.keys().collect::<Vec<_>>(), ["at-cap.md"]);
        assert_eq!(local.oversized, ["over.md"]);
    }

    #[test]
    fn hashes_and_order_match_javascript() {
        assert_eq!(hash_content(""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        let mut keys = vec!["\u{FF5E}.md".to_string(), "\u{1F600}.md".to_string(), "b.md".to_string(), "B.md".to_string()];
        js_sort(&mut keys);
        // U+1F600 is a surrogate pair (0xD83D …), which sorts before U+FF5E in UTF-16.
        assert_eq!(keys, ["B.md", "b.md", "\u{1F600}.md", "\u{FF5E}.md"]);
    }

    #[test]
    fn names_that_sync() {
        for ok in ["a.md", "notes.txt", "MEMORY.md", "a.b.md"] {
            assert!(syncs_name(ok), "{ok}");
        }
        for no in [".hidden.md", "a.json", "a.MD", "a.md.bak", ".md"] {
            assert!(!syncs_name(no), "{no}");
        }
    }
}
