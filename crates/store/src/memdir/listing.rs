//! The memory folder as Claude Code's memory scan lists it, before the scan keeps the `.md`
//! files and sorts them by modification time: which entries, reached how, in what order.
//!
//! Mneme's own scan ([`Memdir::scan`](super::Memdir::scan)) reads only what lies inside the
//! folder and reports a link to a folder, or a link leading out of the folder, as a problem.
//! Claude Code follows both, so the manifest its recall selector sees lists what they lead to;
//! [`super::Memdir::manifest_headers`] uses this listing for that. Found with
//! `scripts/manifest-sweep.sh` on made-up folders of links (docs/claude-code-versions.md, "The
//! memory scan and links"). Two walks, by release:
//!
//! - **Up to 2.1.325** (`readdir(folder, {recursive: true})` in Node, then in Bun): a link to
//!   a folder is walked like a folder and a link to a file listed like a file. A link that leads
//!   back to a folder the walk is inside never ends (the path grows until the system refuses
//!   it), the scan fails, and Claude Code's recall sees no memories at all. Node sorts what it
//!   lists ([`super::manifest::node_listing_order`]); Bun lists a folder's entries in the file
//!   system's order and its sub-folders after them, the sub-folders themselves in the order its
//!   worker threads finish (it varies from run to run; Mneme takes them as they come).
//! - **From 2.1.326**, its own walk: a folder's entries in the file system's order, each
//!   sub-folder walked where it is met (depth first), links set aside. Then the links, sorted
//!   (by UTF-16 code units), each followed once: a file is listed under the link's name; a
//!   folder that was not walked yet (nor the memory folder or one above it) is walked in turn,
//!   its own links going to the next sorted round; anything else is left out.
//!
//! A link that leads nowhere is left out, by both walks. A file reached through a link is
//! listed at the modification time of the file it leads to.

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Entries walked before the listing gives up: a link to `/` or to a huge tree would
/// otherwise keep the scan going for minutes (Claude Code's would too, and list nothing
/// usable; its selector reads only the newest 200).
const MAX_ENTRIES: usize = 200_000;

/// One entry as Claude Code lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    /// Its path relative to the memory folder, through link names (`shared/x.md` for
    /// `shared -> ~/notes`), `/`-separated.
    pub rel: String,
    /// Where to read it (links followed when it is opened).
    pub path: PathBuf,
    /// Reached through a symbolic link (the entry itself or a folder above it).
    pub via_link: bool,
}

/// Why the release's scan lists nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fails {
    /// The link that makes it fail, relative to the memory folder.
    pub link: String,
    /// What goes wrong, in words for the person who has to fix it.
    pub reason: String,
}

/// A folder's identity: device and inode where there are such, the real path elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum DirId {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg_attr(unix, allow(dead_code))]
    Path(PathBuf),
}

fn dir_id(path: &Path) -> io::Result<DirId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(path)?;
        Ok(DirId::Inode(m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        Ok(DirId::Path(fs::canonicalize(path)?))
    }
}

/// What one folder entry is, as the walks tell it (the listing's own type first, `lstat` when
/// it has none).
enum Kind {
    File,
    Dir,
    Link,
    Other,
}

fn kind_of(entry: &fs::DirEntry) -> Kind {
    let ft = match entry.file_type() {
        Ok(ft) => ft,
        Err(_) => return Kind::Other,
    };
    if ft.is_symlink() {
        Kind::Link
    } else if ft.is_dir() {
        Kind::Dir
    } else if ft.is_file() {
        Kind::File
    } else {
        Kind::Other
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// The entries of `dir` in the file system's order, names that are not UTF-8 left out (Mneme's
/// scan reports them). A folder that cannot be listed lists nothing (both walks skip it).
fn entries(dir: &Path) -> Vec<(String, fs::DirEntry)> {
    let Ok(read) = fs::read_dir(dir) else { return Vec::new() };
    read.filter_map(Result::ok).filter_map(|e| e.file_name().into_string().ok().map(|n| (n, e))).collect()
}

/// The folder at `root` as the release lists it: `own_walk` for 2.1.326 and later (the
/// profile's `memory_scan_links_last`), the recursive `readdir` before. Every entry is listed,
/// not only `.md` files; the caller filters.
pub(crate) fn list(root: &Path, own_walk: bool) -> Result<Vec<Listed>, Fails> {
    if own_walk {
        own_walk_list(root)
    } else {
        recursive_list(root)
    }
}

fn too_many(link: &str) -> Fails {
    Fails {
        link: link.to_string(),
        reason: format!("the link {link} leads to more than {MAX_ENTRIES} files and folders"),
    }
}

/// `readdir(root, {recursive: true})`: breadth first, links to folders walked as folders.
fn recursive_list(root: &Path) -> Result<Vec<Listed>, Fails> {
    let root_id = dir_id(root).map_err(|e| Fails { link: String::new(), reason: e.to_string() })?;
    // Each folder to walk, with the folders it lies in (to see a link lead back into one) and
    // the link it was first reached through, if any.
    let mut queue: VecDeque<(PathBuf, String, Vec<DirId>, Option<String>)> = VecDeque::new();
    queue.push_back((root.to_path_buf(), String::new(), vec![root_id], None));
    let mut out = Vec::new();
    let mut walked = 0usize;
    while let Some((dir, prefix, chain, through)) = queue.pop_front() {
        for (name, entry) in entries(&dir) {
            walked += 1;
            if walked > MAX_ENTRIES {
                return Err(too_many(through.as_deref().unwrap_or(&prefix)));
            }
            let rel = join(&prefix, &name);
            let path = entry.path();
            match kind_of(&entry) {
                Kind::File => out.push(Listed { rel, path, via_link: through.is_some() }),
                Kind::Dir => {
                    let Ok(id) = dir_id(&path) else { continue };
                    let mut inner = chain.clone();
                    inner.push(id);
                    queue.push_back((path, rel, inner, through.clone()));
                }
                Kind::Link => match fs::metadata(&path) {
                    Ok(m) if m.is_dir() => {
                        let Ok(id) = dir_id(&path) else { continue };
                        if chain.contains(&id) {
                            return Err(Fails {
                                reason: format!(
                                    "the link {rel} leads back to a folder it is inside, so the scan follows it without end and fails"
                                ),
                                link: rel,
                            });
                        }
                        let mut inner = chain.clone();
                        inner.push(id);
                        let through = through.clone().or_else(|| Some(rel.clone()));
                        queue.push_back((path, rel, inner, through));
                    }
                    Ok(m) if m.is_file() => out.push(Listed { rel, path, via_link: true }),
                    _ => {}
                },
                Kind::Other => {}
            }
        }
    }
    Ok(out)
}

/// 2.1.326's own walk: depth first in the file system's order, then the links in sorted rounds.
fn own_walk_list(root: &Path) -> Result<Vec<Listed>, Fails> {
    struct Walk {
        out: Vec<Listed>,
        links: Vec<String>,
        /// Folders walked (or above the memory folder), once links are being followed.
        entered: HashSet<DirId>,
        walked: usize,
    }
    impl Walk {
        /// Walks `dir` (listed as `prefix`). While links are followed every folder is checked
        /// against `entered` first, so none is walked twice.
        fn dir(&mut self, dir: &Path, prefix: &str, via_link: bool, link: &str) -> Result<(), Fails> {
            if via_link {
                let Ok(id) = dir_id(dir) else { return Ok(()) };
                if !self.entered.insert(id) {
                    return Ok(());
                }
            }
            for (name, entry) in entries(dir) {
                self.walked += 1;
                if self.walked > MAX_ENTRIES {
                    return Err(too_many(link));
                }
                let rel = join(prefix, &name);
                let path = entry.path();
                match kind_of(&entry) {
                    Kind::File => self.out.push(Listed { rel, path, via_link }),
                    Kind::Dir => {
                        if !via_link {
                            if let Ok(id) = dir_id(&path) {
                                self.entered.insert(id);
                            }
                        }
                        self.dir(&path, &rel, via_link, link)?;
                    }
                    Kind::Link => self.links.push(rel),
                    Kind::Other => {}
                }
            }
            Ok(())
        }
    }
    let mut w = Walk { out: Vec::new(), links: Vec::new(), entered: HashSet::new(), walked: 0 };
    w.dir(root, "", false, "")?;
    if w.links.is_empty() {
        return Ok(w.out);
    }
    // The memory folder and every folder above it count as walked: a link up is not followed.
    let mut up = root.to_path_buf();
    loop {
        match dir_id(&up) {
            Ok(id) if w.entered.insert(id.clone()) => up.push(".."),
            _ => break,
        }
    }
    while !w.links.is_empty() {
        let mut round = std::mem::take(&mut w.links);
        // JavaScript's default sort: by UTF-16 code units.
        round.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        for rel in round {
            let path = root.join(&rel);
            match fs::metadata(&path) {
                Ok(m) if m.is_file() => w.out.push(Listed { rel, path, via_link: true }),
                Ok(m) if m.is_dir() => w.dir(&path, &rel, true, &rel)?,
                _ => {}
            }
        }
    }
    Ok(w.out)
}

/// The plain files under `root` that hold one name each, depth first in the file system's
/// order, as relative paths: the walk Claude Code writes a missing MEMORY.md from (2.1.285 on,
/// `generated_index`). It follows no link, and leaves out a file with another hard link (it
/// reads each file only as the single-named regular file it listed). A folder that cannot be
/// read lists nothing.
pub(crate) fn single_named_files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for (name, entry) in entries(dir) {
            let rel = join(prefix, &name);
            match kind_of(&entry) {
                Kind::Dir => walk(&entry.path(), &rel, out),
                Kind::File if single_named(&entry) => out.push(rel),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(root, "", &mut out);
    out
}

#[cfg(unix)]
fn single_named(entry: &fs::DirEntry) -> bool {
    use std::os::unix::fs::MetadataExt;
    entry.metadata().is_ok_and(|m| m.nlink() == 1)
}

#[cfg(not(unix))]
fn single_named(_entry: &fs::DirEntry) -> bool {
    true
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Tree(tempfile::TempDir);

    impl Tree {
        fn new() -> Tree {
            Tree(tempfile::tempdir().unwrap())
        }
        fn root(&self) -> PathBuf {
            self.0.path().join("memory")
        }
        fn file(&self, rel: &str) {
            let p = self.0.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "x").unwrap();
        }
        fn link(&self, rel: &str, target: &str) {
            let p = self.0.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            symlink(target, p).unwrap();
        }
        fn rels(&self, own_walk: bool) -> Vec<String> {
            let mut got: Vec<String> = list(&self.root(), own_walk).unwrap().into_iter().map(|l| l.rel).collect();
            if !own_walk {
                // The recursive walk keeps the file system's order, which a test cannot fix.
                got.sort();
            }
            got
        }
    }

    #[test]
    fn links_to_folders_and_out_of_the_folder_are_followed() {
        let t = Tree::new();
        t.file("memory/a.md");
        t.file("memory/sub/c.md");
        t.file("outside/o.md");
        t.link("memory/out", "../outside");
        t.link("memory/again", "sub");
        t.link("memory/outfile.md", "../outside/o.md");
        t.link("memory/nowhere.md", "/nonexistent-mneme-test");
        assert_eq!(
            t.rels(false),
            ["a.md", "again/c.md", "out/o.md", "outfile.md", "sub/c.md"],
            "before 2.1.326 every link to a folder is walked"
        );
        // 2.1.326: plain entries first, then the links in sorted order; `again` leads to a
        // folder already walked.
        let own = t.rels(true);
        let plain: Vec<&String> = own.iter().take(2).collect();
        assert!(plain.contains(&&"a.md".to_string()) && plain.contains(&&"sub/c.md".to_string()), "{own:?}");
        assert_eq!(own[2..], ["out/o.md", "outfile.md"]);
        let listed = list(&t.root(), true).unwrap();
        assert!(listed.iter().all(|l| l.via_link == (l.rel.starts_with("out"))), "{listed:?}");
    }

    #[test]
    fn a_link_back_into_the_folder_fails_the_recursive_scan_only() {
        let t = Tree::new();
        t.file("memory/a.md");
        t.file("memory/sub/b.md");
        t.link("memory/sub/loop", "..");
        let fails = list(&t.root(), false).unwrap_err();
        assert_eq!(fails.link, "sub/loop");
        assert!(fails.reason.contains("leads back"), "{fails:?}");
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        assert_eq!(sorted(t.rels(true)), ["a.md", "sub/b.md"], "the own walk follows no link into a walked folder");
        // A link to a folder above the memory folder is not followed either.
        t.link("memory/up", "../..");
        assert_eq!(sorted(t.rels(true)), ["a.md", "sub/b.md"]);
    }

    #[test]
    fn single_named_files_leave_out_links_and_hard_links() {
        let t = Tree::new();
        t.file("memory/a.md");
        t.file("memory/sub/c.md");
        t.file("memory/shared.md");
        fs::hard_link(t.root().join("shared.md"), t.root().join("also.md")).unwrap();
        t.file("outside/o.md");
        t.link("memory/out", "../outside");
        t.link("memory/alias.md", "a.md");
        let mut got = single_named_files(&t.root());
        got.sort();
        assert_eq!(got, ["a.md", "sub/c.md"]);
    }

    #[test]
    fn links_are_followed_in_sorted_rounds() {
        let t = Tree::new();
        t.file("memory/z.md");
        t.file("x/inner.md");
        t.file("y/deep.md");
        t.link("memory/b-link", "../x");
        t.link("memory/a-link.md", "z.md");
        t.link("x/deeper", "../y");
        // Round one: a-link.md, b-link (walked: inner.md, and b-link/deeper set aside);
        // round two: b-link/deeper.
        assert_eq!(t.rels(true), ["z.md", "a-link.md", "b-link/inner.md", "b-link/deeper/deep.md"]);
    }
}
