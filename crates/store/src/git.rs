//! Git roots as Claude Code finds them (`src/utils/git.ts`): the nearest folder holding a
//! `.git` file or directory, and the canonical root that all worktrees of one repository
//! share, guarded by the worktree back-link checks so a hostile `.git` file cannot point
//! memory at another repository.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

/// `findGitRoot`: walk up from `start` to the first folder where `.git` exists (directory or
/// file). The filesystem root is checked last.
pub fn find_git_root(start: &Path) -> Option<PathBuf> {
    let mut walked = Vec::new();
    let mut dir = Some(start);
    let found = loop {
        let Some(d) = dir else { break None };
        if let Some(known) = memo_get(d) {
            break known;
        }
        walked.push(d);
        if let Ok(meta) = fs::metadata(d.join(".git")) {
            if meta.is_dir() {
                // An ordinary checkout: its canonical root is itself, no need to read `.git`.
                memo_update(|m| m.canonical.insert(d.as_os_str().to_owned(), d.to_path_buf()));
            }
            break Some(d.to_path_buf());
        }
        dir = d.parent();
    };
    // Every folder walked shares the answer: a later question from any of them costs nothing.
    for d in walked {
        memo_put(d, &found);
    }
    found
}

thread_local! {
    /// Git roots found while [`with_memo`] runs, by the folder asked about.
    static ROOTS: std::cell::RefCell<Option<Memo>> = const { std::cell::RefCell::new(None) };
}

#[derive(Default)]
struct Memo {
    /// [`find_git_root`]'s answer by the folder asked about. Keyed by the path's bytes: hashing
    /// a `Path` parses its components, which for a walk up 30 levels was most of the memo's cost
    /// (a path spelt differently, `a//b` for `a/b`, only misses the memo and asks the disk).
    roots: std::collections::HashMap<OsString, Option<PathBuf>>,
    /// [`resolve_canonical_root`]'s answer by git root (known without a read when the walk
    /// found `.git` to be a directory).
    canonical: std::collections::HashMap<OsString, PathBuf>,
}

/// Runs `f` with git roots remembered. Resolving one folder's context asks for the git root
/// of the same folder several times (settings, the auto-memory folder, the loader, the
/// canonical root), and each answer walks up the folder chain with one `stat` per level; a
/// 30-level chain cost 150 of them. Within `f` the first answer is reused. The memo lives only
/// for `f`, so a long-running app sees a `.git` created later.
pub fn with_memo<R>(f: impl FnOnce() -> R) -> R {
    mneme_core::scoped::with_scoped(&ROOTS, f)
}

fn memo_get(dir: &Path) -> Option<Option<PathBuf>> {
    ROOTS.with(|m| m.borrow().as_ref().and_then(|m| m.roots.get(dir.as_os_str()).cloned()))
}

fn memo_put(dir: &Path, root: &Option<PathBuf>) {
    memo_update(|m| m.roots.insert(dir.as_os_str().to_owned(), root.clone()));
}

/// Changes the memo while [`with_memo`] runs; outside it, nothing.
fn memo_update<R>(f: impl FnOnce(&mut Memo) -> R) {
    ROOTS.with(|m| {
        if let Some(m) = m.borrow_mut().as_mut() {
            f(m);
        }
    });
}

/// `resolveCanonicalRoot`: for a worktree, the main checkout (or the bare repository itself);
/// otherwise `git_root` unchanged. Any failure or failed check returns `git_root`.
pub fn resolve_canonical_root(git_root: &Path) -> PathBuf {
    if let Some(known) = ROOTS.with(|m| m.borrow().as_ref().and_then(|m| m.canonical.get(git_root.as_os_str()).cloned())) {
        return known;
    }
    let canonical = canonical_from_worktree(git_root).unwrap_or_else(|| git_root.to_path_buf());
    memo_update(|m| m.canonical.insert(git_root.as_os_str().to_owned(), canonical.clone()));
    canonical
}

fn canonical_from_worktree(git_root: &Path) -> Option<PathBuf> {
    // A directory `.git` is not a plain file: an ordinary checkout.
    let text = crate::open::read_plain_to_string(&git_root.join(".git")).ok()?;
    let pointer = text.trim().strip_prefix("gitdir:")?.trim().to_string();
    let worktree_git_dir = normalize(&git_root.join(pointer));
    let common = crate::open::read_plain_to_string(&worktree_git_dir.join("commondir")).ok()?;
    let common_dir = normalize(&worktree_git_dir.join(common.trim()));
    // Check 1: the worktree's git dir must sit in <common>/worktrees/.
    if normalize(worktree_git_dir.parent()?) != common_dir.join("worktrees") {
        return None;
    }
    // Check 2: the worktree's back-link must point at this checkout's `.git`.
    let back = crate::open::read_plain_to_string(&worktree_git_dir.join("gitdir")).ok()?;
    let back_real = fs::canonicalize(back.trim()).ok()?;
    if back_real != fs::canonicalize(git_root).ok()?.join(".git") {
        return None;
    }
    if common_dir.file_name().is_some_and(|n| n == ".git") {
        common_dir.parent().map(Path::to_path_buf)
    } else {
        // A worktree of a bare repository: the repository folder itself.
        Some(common_dir)
    }
}

/// `findCanonicalGitRoot`: the canonical root of the repository holding `start`, if any.
pub fn find_canonical_git_root(start: &Path) -> Option<PathBuf> {
    find_git_root(start).map(|r| resolve_canonical_root(&r))
}

/// Lexical normalization like Node's `path.resolve` on an absolute path: `.` and `..`
/// segments are folded without touching the disk.
pub fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Node's `pathInWorkingPath` for absolute, normalized paths: `p` equals `dir` or lies below it.
pub fn path_is_within(p: &Path, dir: &Path) -> bool {
    p.starts_with(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn the_memo_answers_within_its_scope_and_forgets_after() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let deep = root.join("a/b/c");
        fs::create_dir_all(&deep).unwrap();
        fs::create_dir(root.join(".git")).unwrap();
        with_memo(|| {
            assert_eq!(find_git_root(&deep), Some(root.clone()));
            // A nearer `.git` made now is not seen by this scope: every folder walked, and
            // the ones in between, already have their answer.
            fs::create_dir(root.join("a/.git")).unwrap();
            assert_eq!(find_git_root(&deep), Some(root.clone()));
            assert_eq!(find_git_root(&root.join("a/b")), Some(root.clone()));
        });
        // Outside the scope the disk is asked again.
        assert_eq!(find_git_root(&deep), Some(root.join("a")));
    }

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.email=t@e", "-c", "user.name=t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs")
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn worktrees_resolve_to_the_main_checkout() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let repo = root.join("repo");
        fs::create_dir_all(repo.join("sub")).unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
        git(&repo, &["worktree", "add", "-q", "-b", "s", root.join("wt").to_str().unwrap()]);
        git(&repo, &["worktree", "add", "-q", "-b", "n", repo.join(".claude/worktrees/n").to_str().unwrap()]);
        assert_eq!(find_git_root(&repo.join("sub")), Some(repo.clone()));
        assert_eq!(find_canonical_git_root(&repo.join("sub")), Some(repo.clone()));
        assert_eq!(find_canonical_git_root(&root.join("wt")), Some(repo.clone()));
        assert_eq!(find_git_root(&repo.join(".claude/worktrees/n")), Some(repo.join(".claude/worktrees/n")));
        assert_eq!(find_canonical_git_root(&repo.join(".claude/worktrees/n")), Some(repo.clone()));
        // The same answers with the memo on, which takes a `.git` directory's checkout as its
        // own canonical root without reading `.git`; a worktree's `.git` file is still read.
        with_memo(|| {
            assert_eq!(find_canonical_git_root(&repo.join("sub")), Some(repo.clone()));
            assert_eq!(find_canonical_git_root(&root.join("wt")), Some(repo.clone()));
            assert_eq!(find_canonical_git_root(&repo.join(".claude/worktrees/n")), Some(repo.clone()));
        });
    }

    #[test]
    fn forged_gitdir_file_is_not_trusted() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let victim = root.join("victim");
        fs::create_dir_all(&victim).unwrap();
        git(&victim, &["init", "-q"]);
        git(&victim, &["commit", "-q", "--allow-empty", "-m", "x"]);
        git(&victim, &["worktree", "add", "-q", "-b", "w", root.join("realwt").to_str().unwrap()]);
        // An attacker's checkout claims to be that worktree: the back-link points elsewhere.
        let evil = root.join("evil");
        fs::create_dir_all(&evil).unwrap();
        fs::write(evil.join(".git"), format!("gitdir: {}/.git/worktrees/realwt\n", victim.display())).unwrap();
        assert_eq!(find_canonical_git_root(&evil), Some(evil.clone()));
        // A `.git` file with no gitdir prefix, or a missing commondir, falls back too.
        let odd = root.join("odd");
        fs::create_dir_all(&odd).unwrap();
        fs::write(odd.join(".git"), "nonsense").unwrap();
        assert_eq!(find_canonical_git_root(&odd), Some(odd.clone()));
        fs::write(odd.join(".git"), "gitdir: /nowhere\n").unwrap();
        assert_eq!(find_canonical_git_root(&odd), Some(odd.clone()));
    }

    #[test]
    fn bare_repository_worktree_resolves_to_the_bare_dir() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let src = root.join("src");
        fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q"]);
        git(&src, &["commit", "-q", "--allow-empty", "-m", "x"]);
        git(&root, &["clone", "-q", "--bare", "src", "bare.git"]);
        git(&root.join("bare.git"), &["worktree", "add", "-q", "-b", "w", root.join("wtb").to_str().unwrap()]);
        assert_eq!(find_canonical_git_root(&root.join("wtb")), Some(root.join("bare.git")));
    }

    #[test]
    fn no_repository() {
        let t = tempfile::tempdir().unwrap();
        let p = fs::canonicalize(t.path()).unwrap();
        // /tmp itself is not a repository on a sane machine; guard anyway.
        if find_git_root(&p).is_none() {
            assert_eq!(find_canonical_git_root(&p), None);
        }
    }
}
