//! The context cache the app shells keep (the desktop app, `mneme serve`): "What Claude sees"
//! for a folder that has not changed is answered from memory instead of walking the folder
//! chain, rules, includes and settings again (issue 16). The one-shot CLI never caches.
//!
//! It is only as good as the file watcher behind it, so the rules are strict:
//!
//! - A view is kept with the folders whose change could alter it ([`DependsOn`], derived from
//!   what `resolve` and the loader report), and only once the shell's watcher covers every one
//!   of them ([`FolderWatch::cover`]) with watches that existed before the view was built (a
//!   change made before a watch existed would never be reported). When the watches are new,
//!   the view is built a second time, now that they exist, and that one is kept.
//! - Each batch of changed paths the watcher reports drops every view depending on a folder
//!   that holds one of them ([`ContextCache::changed`]); a watcher overflow or error (an
//!   empty batch) drops them all, and a stopped watcher turns the cache off for good.
//! - A view built while any batch arrived is not kept: what it read may predate the change.
//! - The key is the whole request with its date resolved, so a view is never served for
//!   another day; settings files are dependencies, and the process environment is fixed for
//!   the life of the [`Mneme`] the shell holds.

use crate::context::ContextRequest;
use crate::{ApiError, ContextView, Mneme};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// A folder a cached view depends on: a change to an entry directly in it (or anywhere
/// below, when `recursive`) may change the view.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DependsOn {
    pub dir: PathBuf,
    pub recursive: bool,
}

impl DependsOn {
    fn flat(dir: impl Into<PathBuf>) -> Self {
        DependsOn { dir: dir.into(), recursive: false }
    }

    fn tree(dir: impl Into<PathBuf>) -> Self {
        DependsOn { dir: dir.into(), recursive: true }
    }

    /// Whether a change at `path` (a file or folder the watcher names) may concern this folder:
    /// an entry of it (anywhere below, when recursive), the folder itself, or a folder above it
    /// (removed or renamed, taking this one along).
    pub fn concerns(&self, path: &Path) -> bool {
        if self.recursive {
            path.starts_with(&self.dir) || self.dir.starts_with(path)
        } else {
            path.parent() == Some(self.dir.as_path()) || self.dir.starts_with(path)
        }
    }
}

/// What the shell's file watcher offers the cache.
pub trait FolderWatch: Send + Sync {
    /// How many watches have been added so far: the number the next one will exceed.
    fn generation(&self) -> u64;
    /// Makes sure every folder (each exists when asked) is watched, adding the watches that are
    /// missing. Answers the generation of the newest watch covering them, or `None` when one
    /// could not be watched (then the view is not kept).
    fn cover(&self, folders: &[DependsOn]) -> Option<u64>;
}

/// How many views are kept: a person looks at a handful of projects; each view of a large one
/// is a few hundred kilobytes.
const MAX_ENTRIES: usize = 32;

/// Cached context views, invalidated by a shell's file watcher.
pub struct ContextCache {
    watch: Arc<dyn FolderWatch>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Oldest first; the key is the request with its date resolved, as its `Debug` text, so
    /// every field of the request is part of it without a list to keep up to date.
    entries: Vec<(String, Entry)>,
    /// Counts change batches and clears; a view built across a change is not kept.
    changes: u64,
    /// The watcher stopped: nothing is kept any more.
    closed: bool,
    stats: CacheStats,
}

struct Entry {
    view: Arc<ContextView>,
    depends_on: Vec<DependsOn>,
}

/// Counters for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Calls answered from the cache.
    pub hits: u64,
    /// Calls that built the view.
    pub misses: u64,
    /// Views kept now.
    pub entries: usize,
}

impl ContextCache {
    pub fn new(watch: Arc<dyn FolderWatch>) -> Self {
        ContextCache { watch, state: Mutex::new(State::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves at worst a missing entry.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One batch of changed paths from the watcher; an empty batch means it lost track
    /// (overflow, error), so everything goes.
    pub fn changed(&self, paths: &[PathBuf]) {
        let mut s = self.lock();
        s.changes += 1;
        if paths.is_empty() {
            s.entries.clear();
        } else {
            s.entries.retain(|(_, e)| !e.depends_on.iter().any(|d| paths.iter().any(|p| d.concerns(p))));
        }
    }

    /// Drops every view (an operation just wrote files; the watcher reports that only after
    /// its debounce, and the page asks again at once).
    pub fn clear(&self) {
        let mut s = self.lock();
        s.changes += 1;
        s.entries.clear();
    }

    /// The watcher stopped: drop everything and keep nothing from now on.
    pub fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.changes += 1;
        s.entries.clear();
    }

    pub fn stats(&self) -> CacheStats {
        let s = self.lock();
        CacheStats { entries: s.entries.len(), ..s.stats }
    }
}

/// How many times a view is built before giving up on keeping it: once, and once more when
/// that added watches (the second build starts after them).
const BUILDS: usize = 2;

impl Mneme {
    /// [`Mneme::context`] through `cache`: the same view, from memory when nothing it depends
    /// on has changed since it was built.
    pub fn context_cached(&self, req: &ContextRequest, cache: &ContextCache) -> Result<Arc<ContextView>, ApiError> {
        let mut req = req.clone();
        req.date = Some(req.date.take().unwrap_or_else(|| self.today()));
        let key = format!("{req:?}");
        {
            let mut s = cache.lock();
            if let Some(view) = s.entries.iter().find(|(k, _)| *k == key).map(|(_, e)| e.view.clone()) {
                s.stats.hits += 1;
                return Ok(view);
            }
            s.stats.misses += 1;
        }
        let mut last = None;
        for _ in 0..BUILDS {
            let (changes, watches) = (cache.lock().changes, cache.watch.generation());
            let (view, depends_on) = self.context_traced(&req, true)?;
            let view = Arc::new(view);
            let depends_on = existing(depends_on);
            let Some(newest) = cache.watch.cover(&depends_on) else { return Ok(view) };
            if newest > watches {
                // Watched only since this build began: build again with the watches in place.
                last = Some(view);
                continue;
            }
            let mut s = cache.lock();
            if s.closed || s.changes != changes {
                return Ok(view);
            }
            if s.entries.len() >= MAX_ENTRIES {
                s.entries.remove(0);
            }
            s.entries.push((key, Entry { view: view.clone(), depends_on }));
            return Ok(view);
        }
        Ok(last.expect("BUILDS is at least 1"))
    }
}

/// Each folder as the watcher can watch it: canonical (the kernel knows a folder by its inode,
/// so a second name for it would rename the events of the first), and a folder that does not
/// exist replaced by the nearest one above that does, watched flat — creating the missing one
/// is a change there.
fn existing(depends_on: BTreeSet<DependsOn>) -> Vec<DependsOn> {
    let mut out = BTreeSet::new();
    for d in depends_on {
        match std::fs::canonicalize(&d.dir) {
            Ok(dir) if dir.is_dir() => {
                out.insert(DependsOn { dir, recursive: d.recursive });
            }
            _ => {
                let Some(dir) = d.dir.ancestors().skip(1).find_map(|a| std::fs::canonicalize(a).ok().filter(|a| a.is_dir()))
                else {
                    continue;
                };
                out.insert(DependsOn::flat(dir));
            }
        }
    }
    out.into_iter().collect()
}

/// The folders a view built from these inputs depends on (see the module's list).
pub(crate) fn dependencies(
    m: &Mneme,
    req: &ContextRequest,
    r: &crate::context::Resolved,
    ctx: &mneme_claudemd::Context,
) -> BTreeSet<DependsOn> {
    let mut out = BTreeSet::new();
    // A folder Claude Code looks into for instructions: its CLAUDE.md files, `.claude`
    // (CLAUDE.md, settings) and `.claude/rules` with every sub-folder.
    let project_folder = |out: &mut BTreeSet<DependsOn>, dir: &Path| {
        out.insert(DependsOn::flat(dir));
        out.insert(DependsOn::flat(dir.join(".claude")));
        out.insert(DependsOn::tree(dir.join(".claude/rules")));
    };
    let asked = std::path::absolute(&req.cwd).unwrap_or_else(|_| req.cwd.clone());
    for dir in asked.ancestors().chain(r.cwd.ancestors()) {
        project_folder(&mut out, dir);
    }
    for dir in &r.options.additional_dirs {
        project_folder(&mut out, dir);
    }
    // The nested-candidate walk's folders and those of missing candidates.
    for dir in &ctx.looked_in {
        project_folder(&mut out, dir);
    }
    for home in [m.env.config_home(), r.options.config_home.clone()] {
        out.insert(DependsOn::flat(&home));
        out.insert(DependsOn::tree(home.join("rules")));
    }
    for managed in [&m.env.managed_dir, &r.options.managed_dir] {
        out.insert(DependsOn::tree(managed));
    }
    // `~/.claude.json`: trust and the external-includes approval.
    if let Some(dir) = m.env.global_config_path().parent() {
        out.insert(DependsOn::flat(dir));
    }
    for file in r.settings.files() {
        if let Some(dir) = file.path.parent() {
            out.insert(DependsOn::flat(dir));
        }
    }
    if let Some(dir) = req.settings_file.as_ref().map(|f| crate::context::absolute(&r.cwd, f)) {
        if let Some(dir) = dir.parent() {
            out.insert(DependsOn::flat(dir));
        }
    }
    out.insert(DependsOn::tree(&r.memdir));
    let listed = ctx.files.iter().map(|f| &f.path).chain(ctx.skipped.iter().map(|s| &s.path));
    for path in listed.chain(ctx.conditional.iter().map(|c| &c.path)).chain(&ctx.nested_candidates) {
        if let Some(dir) = path.parent() {
            out.insert(DependsOn::flat(dir));
        }
        // A linked file changes where its target lives.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            if let Some(dir) = std::fs::canonicalize(path).ok().and_then(|p| p.parent().map(Path::to_path_buf)) {
                out.insert(DependsOn::flat(dir));
            }
        }
    }
    // Which Claude Code is installed decides the release rendered for, unless the request
    // names one: every place looked at up to the one found, and the folder of the file it
    // resolves to (an update replaces it).
    if req.claude_version.is_none() {
        for (path, _) in mneme_store::claude_install::candidates(&m.env) {
            if let Some(dir) = path.parent() {
                out.insert(DependsOn::flat(dir));
            }
            if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                if let Some(dir) = std::fs::canonicalize(&path).ok().and_then(|p| p.parent().map(Path::to_path_buf)) {
                    out.insert(DependsOn::flat(dir));
                }
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::FixedClock;
    use mneme_testsupport::TestHome;

    /// A watcher that watched everything long ago, or one that can watch nothing.
    struct Fake {
        can_watch: bool,
    }

    impl FolderWatch for Fake {
        fn generation(&self) -> u64 {
            1
        }

        fn cover(&self, _: &[DependsOn]) -> Option<u64> {
            self.can_watch.then_some(1)
        }
    }

    fn setup(can_watch: bool) -> (TestHome, Mneme, ContextCache, ContextRequest) {
        let home = TestHome::new();
        let repo = home.git_repo("repo");
        home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
        let mneme = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_400_000)));
        let req = ContextRequest { cwd: repo, ..Default::default() };
        (home, mneme, ContextCache::new(Arc::new(Fake { can_watch })), req)
    }

    #[test]
    fn a_view_whose_folders_cannot_all_be_watched_is_never_kept() {
        let (_home, m, cache, req) = setup(false);
        let a = m.context_cached(&req, &cache).unwrap();
        let b = m.context_cached(&req, &cache).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(cache.stats(), CacheStats { hits: 0, misses: 2, entries: 0 });
    }

    #[test]
    fn a_watched_view_is_kept_per_request_until_cleared() {
        let (_home, m, cache, req) = setup(true);
        let a = m.context_cached(&req, &cache).unwrap();
        assert!(Arc::ptr_eq(&a, &m.context_cached(&req, &cache).unwrap()));
        // The date resolved: today's date asked for explicitly is the same request.
        let dated = ContextRequest { date: Some(m.today()), ..req.clone() };
        assert!(Arc::ptr_eq(&a, &m.context_cached(&dated, &cache).unwrap()));
        let other_day = ContextRequest { date: Some("2001-01-01".into()), ..req.clone() };
        assert!(!Arc::ptr_eq(&a, &m.context_cached(&other_day, &cache).unwrap()));
        cache.clear();
        assert!(!Arc::ptr_eq(&a, &m.context_cached(&req, &cache).unwrap()));
        cache.close();
        let c = m.context_cached(&req, &cache).unwrap();
        assert!(!Arc::ptr_eq(&c, &m.context_cached(&req, &cache).unwrap()), "kept after close");
    }

    #[test]
    fn the_dependencies_cover_the_folders_above_the_project_and_the_config_home() {
        let (home, m, _cache, req) = setup(true);
        let r = m.resolve(&req).unwrap();
        let ctx = mneme_claudemd::load(&r.options);
        let deps = existing(dependencies(&m, &req, &r, &ctx));
        let flat = |d: &Path| deps.contains(&DependsOn::flat(d));
        assert!(flat(&req.cwd) && flat(&home.root) && flat(Path::new("/")), "{deps:?}");
        assert!(flat(&home.config_home()), "{deps:?}");
        assert!(deps.contains(&DependsOn::tree(home.root.join("managed"))) || flat(&home.root), "{deps:?}");
        // A missing folder is watched through the nearest one above that exists.
        assert!(!deps.iter().any(|d| !d.dir.is_dir()), "{deps:?}");
    }

    #[test]
    fn a_flat_folder_concerns_its_entries_itself_and_folders_above_but_not_deeper_ones() {
        let d = DependsOn::flat("/p/a");
        assert!(d.concerns(Path::new("/p/a/CLAUDE.md")));
        assert!(d.concerns(Path::new("/p/a")));
        assert!(d.concerns(Path::new("/p")));
        assert!(!d.concerns(Path::new("/p/a/src/main.rs")));
        assert!(!d.concerns(Path::new("/p/ab/CLAUDE.md")));
        let t = DependsOn::tree("/p/a/.claude/rules");
        assert!(t.concerns(Path::new("/p/a/.claude/rules/x/y.md")));
        assert!(!t.concerns(Path::new("/p/a/.claude/settings.json")));
    }
}
