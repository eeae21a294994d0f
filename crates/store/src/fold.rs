//! Names a disk folds together. On a case-insensitive file system (exFAT and FAT on a USB stick
//! or an SD card, APFS and HFS+ as macOS formats them, NTFS) `tabs.md` and `Tabs.md` are one
//! file, listed under the spelling it was created with. Device and inode numbers cannot tell two
//! spellings of one file from two files: exfat-fuse numbers a file per name looked up, so the
//! two spellings show two inode numbers. The folder's listing tells: a name that opens but is
//! not listed is the disk's folding of a listed one.

use std::ffi::OsString;
use std::fs;
use std::path::Path;

/// How names compare on a folding disk: letter case only (exFAT's up-case table is Unicode's
/// simple case mapping; lower-casing both sides agrees with it on every letter that has a case).
pub(crate) fn folded(name: &str) -> String {
    name.to_lowercase()
}

/// Whether `a` and `b`, two spellings in one folder that differ only in letter case, are one
/// entry there on this disk: both open, and the folder does not list both names. On a disk that
/// tells case apart two such names that both open are two files, each listed under its own name.
/// Names that differ otherwise (or are equal, or in two folders) answer false without touching
/// the disk.
pub fn same_entry(a: &Path, b: &Path) -> bool {
    let (Some(na), Some(nb)) = (a.file_name().and_then(|n| n.to_str()), b.file_name().and_then(|n| n.to_str())) else { return false };
    if na == nb || folded(na) != folded(nb) || a.parent() != b.parent() {
        return false;
    }
    if fs::symlink_metadata(a).is_err() || fs::symlink_metadata(b).is_err() {
        return false;
    }
    let Ok(listing) = fs::read_dir(a.parent().unwrap_or(Path::new("."))) else { return false };
    let listed = listing.flatten().map(|e| e.file_name()).filter(|n| n.as_os_str() == na || n.as_os_str() == nb).count();
    listed < 2
}

/// The folder's own spelling of `path`'s name, when `path` opens only because the disk folds
/// letter case (`TABS.md` opening the listed `tabs.md`); `None` when the name is listed as it is
/// spelled, or nothing is there.
pub fn listed_spelling(path: &Path) -> Option<OsString> {
    let name = path.file_name()?.to_str()?;
    fs::symlink_metadata(path).ok()?;
    // One look before listing the folder (thousands of memories, on every lookup): where the
    // name spelled in another case opens nothing, the disk tells case apart here and the name
    // is the one listed.
    let other = if folded(name) != name { folded(name) } else { name.to_uppercase() };
    if other == name || fs::symlink_metadata(path.with_file_name(&other)).is_err() {
        return None;
    }
    let mut fold_equal = None;
    for entry in fs::read_dir(path.parent().unwrap_or(Path::new("."))).ok()?.flatten() {
        let listed = entry.file_name();
        if listed.as_os_str() == name {
            return None;
        }
        if listed.to_str().is_some_and(|l| folded(l) == folded(name)) {
            fold_equal = Some(listed);
        }
    }
    fold_equal
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a disk that tells case apart (the build's own temporary folder), two spellings that
    /// both exist are two files; one that does not exist is nothing. The folding disk itself is
    /// `crates/api/tests/exfat.rs`.
    #[test]
    fn on_a_case_sensitive_disk_two_spellings_are_two_files() {
        let dir = tempfile::tempdir().unwrap();
        let (lower, upper) = (dir.path().join("tabs.md"), dir.path().join("Tabs.md"));
        fs::write(&lower, "a").unwrap();
        assert!(!same_entry(&lower, &upper), "Tabs.md does not exist here");
        assert_eq!(listed_spelling(&lower), None, "listed as spelled");
        assert_eq!(listed_spelling(&upper), None, "nothing there");
        fs::write(&upper, "b").unwrap();
        assert!(!same_entry(&lower, &upper), "both listed: two files");
        assert!(!same_entry(&lower, &lower), "the same spelling is not another spelling");
        assert!(!same_entry(&lower, &dir.path().join("other.md")), "names that differ in more than case");
    }
}
