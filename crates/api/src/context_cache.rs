//! The context cache the app shells keep (the desktop app, `mneme serve`): "What Claude sees"
//! for a folder that has not changed is answered from memory instead of walking the folder
//! chain, rules, includes and settings again (issue 16). The one-shot CLI never caches.
//!
//! It is only as good as the file watcher behind it, so the rules are strict:
//!
//! - A view is kept with what it depends on ([`DependsOn`]: one entry of a folder, any entry
//!   of it, or a whole tree; derived from what `resolve` and the loader report), and only once
//!   the shell's watcher covers every folder of them ([`FolderWatch::cover`]) with watches that
//!   existed before the view was built (a change made before a watch existed would never be
//!   reported). When the watches are new,
//!   the view is built a second time, now that they exist, and that one is kept.
//! - A kept view holds its watches (the ticket [`FolderWatch::cover`] answers) and hands them
//!   back when it goes ([`FolderWatch::release`]), so the watcher can drop those no view needs.
//! - Each batch of changed paths the watcher reports drops every view one of them concerns
//!   ([`ContextCache::changed`]); a watcher overflow or error (an empty batch) drops them all,
//!   and a stopped watcher turns the cache off for good.
//! - A view built while any batch arrived is not kept: what it read may predate the change.
//! - The key is the whole request with its date resolved, so a view is never served for
//!   another day; settings files are dependencies, and the process environment is fixed for
//!   the life of the [`Mneme`] the shell holds.

use crate::context::ContextRequest;
use crate::{ApiError, ContextView, Mneme};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// A place a cached view depends on: one entry of a folder (a file the view read or looked
/// for), any entry directly in the folder, or (when `recursive`) anything below it. Naming the
/// entry keeps a view (and the page showing it) from reloading whenever anything else in a busy
/// folder above the project changes, such as a shell's history file in the home folder.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DependsOn {
    pub dir: PathBuf,
    pub recursive: bool,
    /// Only this entry of `dir` matters; `None`: any entry (or anything below, when recursive).
    pub entry: Option<OsString>,
    /// Only sub-folders of `dir` matter (flat, no `entry`): one appearing there, going or
    /// renamed, not a file changing. A folder the nested walk listed is one: a new sub-folder
    /// may hold instructions, a dev server's `logs/app.log` changes nothing.
    pub folders_only: bool,
}

impl DependsOn {
    fn flat(dir: impl Into<PathBuf>) -> Self {
        DependsOn { dir: dir.into(), recursive: false, entry: None, folders_only: false }
    }

    fn tree(dir: impl Into<PathBuf>) -> Self {
        DependsOn { dir: dir.into(), recursive: true, entry: None, folders_only: false }
    }

    fn sub_folders(dir: impl Into<PathBuf>) -> Self {
        DependsOn { dir: dir.into(), recursive: false, entry: None, folders_only: true }
    }

    /// What in a project's own folder, watched flat by a shell, can change what Claude Code
    /// loads or what a page shows: the entries that matter in every folder Claude Code looks
    /// into for instructions, by name (`.git` among them: it makes the folder the repository
    /// root), and a sub-folder appearing or going (the nested walk lists it). Any other file
    /// there (a build log written at every build) changes nothing; a file a view includes from
    /// there is named by that view's own dependencies.
    pub fn project_folder(dir: &Path) -> Vec<DependsOn> {
        let mut out: Vec<DependsOn> = INSTRUCTION_ENTRIES.iter().map(|name| DependsOn::file(&dir.join(name))).collect();
        out.push(DependsOn::sub_folders(dir));
        out
    }

    /// What in Claude Code's config folder (`~/.claude`, `$CLAUDE_CONFIG_DIR`), watched flat by
    /// a shell, a page may show or can change what Claude Code loads: the entries Mneme reads
    /// there ([`CONFIG_ENTRIES`]), by name. Claude Code writes the rest there all the time
    /// while a session runs (`history.jsonl` at every prompt, `.credentials.json`, `backups`,
    /// `sessions`, `telemetry`, `statsig`, `todos`, `shell-snapshots`, `session-env`, lock
    /// files, …, by release), and none of it is shown; a file a view includes from there is
    /// named by that view's own dependencies.
    pub fn config_folder(dir: &Path) -> Vec<DependsOn> {
        CONFIG_ENTRIES.iter().map(|name| DependsOn::file(&dir.join(name))).collect()
    }

    /// The one entry `path` names in its folder (the folder itself, for a path with no parent).
    fn file(path: &Path) -> Self {
        match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => DependsOn { dir: dir.to_path_buf(), recursive: false, entry: Some(name.to_owned()), folders_only: false },
            _ => DependsOn::flat(path),
        }
    }

    /// Whether a change at `path` (a file or folder the watcher names) may concern this: the
    /// entry (any entry; anything below, when recursive), the folder itself, or a folder above
    /// it (removed or renamed, taking this one along). Entry names compare ignoring ASCII case,
    /// as a case-insensitive file system may report another spelling of the same name.
    /// A change of unknown kind: it may be a folder (see [`DependsOn::concerns_change`]).
    pub fn concerns(&self, path: &Path) -> bool {
        self.concerns_change(path, true)
    }

    /// Whether a change at `path` concerns it: as [`DependsOn::concerns`], except that a change
    /// to a file (`folder` false: see [`ContextCache::changed`]) in a folder that counts only
    /// for its sub-folders does not.
    pub fn concerns_change(&self, path: &Path, folder: bool) -> bool {
        if self.dir.starts_with(path) {
            return true;
        }
        if self.recursive {
            return path.starts_with(&self.dir);
        }
        path.parent() == Some(self.dir.as_path())
            && match &self.entry {
                None => folder || !self.folders_only,
                Some(name) => path.file_name().is_some_and(|n| n.eq_ignore_ascii_case(name)),
            }
    }
}

/// Many dependencies, asked about one changed path at a time: the answer of
/// [`DependsOn::concerns`] for any of them, in time that grows with the path's depth rather than
/// with their number. A shell keeps every view's dependencies for the life of the session (a
/// page may still show a view the cache dropped), and a busy batch names hundreds of paths.
#[derive(Debug, Default)]
pub struct DependsOnIndex {
    /// By folder: each dependency's `recursive`, `entry` and `folders_only`.
    by_dir: BTreeMap<PathBuf, BTreeSet<(bool, Option<OsString>, bool)>>,
}

impl DependsOnIndex {
    pub fn insert(&mut self, d: DependsOn) {
        self.by_dir.entry(d.dir).or_default().insert((d.recursive, d.entry, d.folders_only));
    }

    pub fn is_empty(&self) -> bool {
        self.by_dir.is_empty()
    }

    /// Whether a change at `path` of unknown kind concerns any dependency kept.
    pub fn concerns(&self, path: &Path) -> bool {
        self.concerns_change(path, true)
    }

    /// Whether a change at `path` concerns any dependency kept ([`DependsOn::concerns_change`]).
    pub fn concerns_change(&self, path: &Path, folder: bool) -> bool {
        // The path itself or a folder above a dependency: paths sort component by component,
        // so those starting with `path` follow it without a gap and the first one tells.
        if self.by_dir.range::<Path, _>((Bound::Included(path), Bound::Unbounded)).next().is_some_and(|(dir, _)| dir.starts_with(path)) {
            return true;
        }
        let name = path.file_name();
        let mut above = path.ancestors().skip(1);
        // Its own folder: a dependency on any entry, on this entry, or on the whole tree.
        if let Some(parent) = above.next() {
            let in_parent = self.by_dir.get(parent).is_some_and(|deps| {
                deps.iter().any(|(recursive, entry, folders_only)| match entry {
                    _ if *recursive => true,
                    None => folder || !folders_only,
                    Some(e) => name.is_some_and(|n| n.eq_ignore_ascii_case(e)),
                })
            });
            if in_parent {
                return true;
            }
        }
        // Further up: only a tree reaches down.
        above.any(|dir| self.by_dir.get(dir).is_some_and(|deps| deps.iter().any(|(recursive, _, _)| *recursive)))
    }
}

impl Extend<DependsOn> for DependsOnIndex {
    fn extend<I: IntoIterator<Item = DependsOn>>(&mut self, iter: I) {
        for d in iter {
            self.insert(d);
        }
    }
}

/// What the shell's file watcher offers the cache.
pub trait FolderWatch: Send + Sync {
    /// How many watches have been added so far: the number the next one will exceed.
    fn generation(&self) -> u64;
    /// Makes sure every folder (each exists when asked) is watched, adding the watches that are
    /// missing. Answers `(newest, ticket)`: the generation of the newest watch covering them,
    /// and a ticket holding those watches until handed to [`FolderWatch::release`]; or `None`
    /// when one could not be watched (then the view is not kept, and nothing is held).
    fn cover(&self, folders: &[DependsOn]) -> Option<(u64, u64)>;
    /// The view a ticket from [`FolderWatch::cover`] was for is not kept (any more): its
    /// watches may go once no other view holds them (a project's `.venv` is thousands).
    fn release(&self, ticket: u64);
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
    /// The watches held for it ([`FolderWatch::release`] when it goes).
    ticket: u64,
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
    /// Batches of changes the watcher reported.
    pub batches: u64,
}

impl ContextCache {
    pub fn new(watch: Arc<dyn FolderWatch>) -> Self {
        ContextCache { watch, state: Mutex::new(State::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves at worst a missing entry.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One batch of changes from the watcher, each a path and whether it may be a folder: the
    /// event said so (created or removed as one), the path is a folder now (renamed there), or
    /// the kind is unknown. A folder renamed away may say `false`: one a view listed is named
    /// by that view's own dependencies, and one no view listed changes none. An empty batch
    /// means the watcher lost track (overflow, error), so everything goes.
    pub fn changed(&self, changes: &[(PathBuf, bool)]) {
        let dropped = {
            let mut s = self.lock();
            s.changes += 1;
            s.stats.batches += 1;
            if changes.is_empty() {
                std::mem::take(&mut s.entries)
            } else {
                let (gone, kept) = std::mem::take(&mut s.entries)
                    .into_iter()
                    .partition(|(_, e)| e.depends_on.iter().any(|d| changes.iter().any(|(p, folder)| d.concerns_change(p, *folder))));
                s.entries = kept;
                gone
            }
        };
        self.release(dropped);
    }

    /// Hands the watches of views no longer kept back to the watcher (outside the lock).
    fn release(&self, dropped: Vec<(String, Entry)>) {
        for (_, e) in dropped {
            self.watch.release(e.ticket);
        }
    }

    /// Drops every view (an operation just wrote files; the watcher reports that only after
    /// its debounce, and the page asks again at once).
    pub fn clear(&self) {
        let dropped = {
            let mut s = self.lock();
            s.changes += 1;
            std::mem::take(&mut s.entries)
        };
        self.release(dropped);
    }

    /// The watcher stopped: drop everything and keep nothing from now on.
    pub fn close(&self) {
        let dropped = {
            let mut s = self.lock();
            s.closed = true;
            s.changes += 1;
            std::mem::take(&mut s.entries)
        };
        self.release(dropped);
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
        // The previous build's watches, held until this one's cover so they are not dropped
        // and added again (as new watches) in between.
        let mut held: Option<u64> = None;
        let release_held = |held: &mut Option<u64>| {
            if let Some(t) = held.take() {
                cache.watch.release(t);
            }
        };
        for _ in 0..BUILDS {
            let (changes, watches) = (cache.lock().changes, cache.watch.generation());
            let (view, depends_on) = match self.context_traced(&req, true) {
                Ok(built) => built,
                Err(e) => {
                    release_held(&mut held);
                    return Err(e);
                }
            };
            let view = Arc::new(view);
            let depends_on = existing(depends_on);
            let covered = cache.watch.cover(&depends_on);
            release_held(&mut held);
            let Some((newest, ticket)) = covered else { return Ok(view) };
            if newest > watches {
                // Watched only since this build began: build again with the watches in place.
                held = Some(ticket);
                last = Some(view);
                continue;
            }
            let mut s = cache.lock();
            if s.closed || s.changes != changes {
                drop(s);
                cache.watch.release(ticket);
                return Ok(view);
            }
            let evicted = if s.entries.len() >= MAX_ENTRIES { vec![s.entries.remove(0)] } else { Vec::new() };
            s.entries.push((key, Entry { view: view.clone(), depends_on, ticket }));
            drop(s);
            cache.release(evicted);
            return Ok(view);
        }
        release_held(&mut held);
        Ok(last.expect("BUILDS is at least 1"))
    }
}

/// Each dependency as the watcher can watch it: its folder canonical (the kernel knows a
/// folder by its inode, so a second name for it would rename the events of the first), and one
/// whose folder does not exist replaced by the nearest folder above that does, watching the
/// one entry of it on the way down: creating the missing folder is a change there. Where a
/// link lies on the way to a folder, each step of the way is watched by name as well, so
/// pointing the link elsewhere is seen.
fn existing(depends_on: BTreeSet<DependsOn>) -> Vec<DependsOn> {
    let mut out = BTreeSet::new();
    let mut todo: Vec<DependsOn> = depends_on.into_iter().collect();
    let mut linked = std::collections::HashSet::new();
    // Many dependencies share a folder (five names in each folder above the project): each
    // folder is resolved once.
    let mut resolved: std::collections::HashMap<PathBuf, Option<PathBuf>> = std::collections::HashMap::new();
    let mut real_dir = |dir: &Path| {
        resolved.entry(dir.to_path_buf()).or_insert_with(|| std::fs::canonicalize(dir).ok().filter(|r| r.is_dir())).clone()
    };
    while let Some(d) = todo.pop() {
        // The folder, or the nearest one above it that exists and the entry leading down.
        let mut found = None;
        let mut below: Option<&Path> = None;
        for dir in d.dir.ancestors() {
            if let Some(real) = real_dir(dir) {
                found = Some((dir.to_path_buf(), real));
                break;
            }
            below = Some(dir);
        }
        let Some((given, real)) = found else { continue };
        if real != given && linked.insert(given.clone()) {
            todo.extend(given.ancestors().filter(|a| a.parent().is_some()).map(DependsOn::file));
        }
        out.insert(match below {
            None => DependsOn { dir: real, ..d },
            // A `..` on the way has no name to watch: any entry then.
            Some(below) => DependsOn { dir: real, recursive: false, entry: below.file_name().map(OsString::from), folders_only: false },
        });
    }
    without_covered(out)
}

/// Leaves out what another dependency already covers (an entry of a folder whose entries all
/// count, anything inside a tree), so 2,000 rules under `.claude/rules` are one tree and
/// every batch is checked against a handful of dependencies, not thousands. Whatever concerns a
/// dropped one concerns the one covering it, a change to a folder above included.
fn without_covered(deps: BTreeSet<DependsOn>) -> Vec<DependsOn> {
    let trees: std::collections::HashSet<&Path> = deps.iter().filter(|d| d.recursive).map(|d| d.dir.as_path()).collect();
    let flats: std::collections::HashSet<&Path> =
        deps.iter().filter(|d| !d.recursive && d.entry.is_none() && !d.folders_only).map(|d| d.dir.as_path()).collect();
    let covered = |d: &DependsOn| {
        // A tree covers itself: only trees above it count.
        let above = if d.recursive { d.dir.parent() } else { Some(d.dir.as_path()) };
        above.is_some_and(|a| a.ancestors().any(|t| trees.contains(t)))
            || ((d.entry.is_some() || d.folders_only) && flats.contains(d.dir.as_path()))
    };
    deps.iter().filter(|d| !covered(d)).cloned().collect()
}

/// The entries that matter in a folder Claude Code looks into for instructions (every folder
/// from the filesystem root to the project, and `--add-dir` folders): the instruction files
/// the loader reads there (`AGENTS.md` from 2.1.281), `.claude` (its CLAUDE.md, rules and
/// settings, watched as a folder of its own) and `.git`, which makes a folder the project's
/// repository root and so decides the memory folder and which settings apply.
const INSTRUCTION_ENTRIES: [&str; 5] = ["CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", ".claude", ".git"];

/// The entries of Claude Code's config folder Mneme reads: the user's instructions
/// (`CLAUDE.md`, `rules`), the user settings (`settings.json`, or `cowork_settings.json`
/// under `CLAUDE_CODE_USE_COWORK_PLUGINS`), the global config (`.claude.json`, there when
/// `CLAUDE_CONFIG_DIR` is set: trust, approvals, cached flags), the user's agents and their
/// memory (`agents`, `agent-memory`), plugins (their agents, `installed_plugins.json`), the
/// memory folders (`projects`), the native install (`local/claude`: the release a view is
/// rendered for) and session memory's template overrides (`session-memory`). A folder among
/// them counts as an entry: what changes inside it reaches a flat watch on the config folder
/// only as its name, and the views name what they read in there.
const CONFIG_ENTRIES: [&str; 11] = [
    "CLAUDE.md",
    "rules",
    "settings.json",
    "cowork_settings.json",
    ".claude.json",
    "agents",
    "agent-memory",
    "plugins",
    "projects",
    "local",
    "session-memory",
];

/// The entries the nested-candidate walk looks for in each folder it lists (`.claude` holds
/// its CLAUDE.md and rules).
const NESTED_ENTRIES: [&str; 3] = ["CLAUDE.md", "CLAUDE.local.md", ".claude"];

/// Folders a package manager or tool fills (`mneme_claudemd::TOOL_FOLDERS`, or a Python virtual
/// environment by any name: thousands of folders of other people's code and caches), whose
/// listing is not watched below the project. Mneme's choice, to spare inotify watches: Claude
/// Code skips no folder by name when it loads nested CLAUDE.md files, so one the walk found in
/// here is still depended on by name, and one made in here later shows once something else
/// drops the view.
fn is_heavy(dir: &Path) -> bool {
    mneme_claudemd::is_tool_folder(dir)
}

/// What a view built from these inputs depends on (see the module's list).
pub(crate) fn dependencies(
    m: &Mneme,
    req: &ContextRequest,
    r: &crate::context::Resolved,
    ctx: &mneme_claudemd::Context,
) -> BTreeSet<DependsOn> {
    let mut out = BTreeSet::new();
    let instruction_folder = |out: &mut BTreeSet<DependsOn>, dir: &Path| {
        for name in INSTRUCTION_ENTRIES {
            out.insert(DependsOn::file(&dir.join(name)));
        }
        out.insert(DependsOn::flat(dir.join(".claude")));
        out.insert(DependsOn::tree(dir.join(".claude/rules")));
    };
    // The folders on the way to the project, and each step of the way: renaming a folder, or
    // pointing a link on the path elsewhere, moves the project.
    let asked = std::path::absolute(&req.cwd).unwrap_or_else(|_| req.cwd.clone());
    for path in [&asked, &r.cwd] {
        for dir in path.ancestors() {
            instruction_folder(&mut out, dir);
            if dir.parent().is_some() {
                out.insert(DependsOn::file(dir));
            }
        }
    }
    for dir in &r.options.additional_dirs {
        instruction_folder(&mut out, dir);
    }
    // Each folder the nested-candidate walk listed: the names it looks for there, and a
    // sub-folder appearing (it will list that too). Not its other files: a dev server writing
    // `logs/app.log` every second would drop the view (and reload the page) every second.
    // Folders inside a virtual environment or a tool's cache are not depended on (nor watched:
    // a `.venv` of 3,000 packages is as many inotify watches); the loader still lists them.
    let mut heavy: std::collections::HashSet<&Path> = std::collections::HashSet::new();
    for (i, dir) in ctx.looked_in.iter().enumerate() {
        // The walk lists a folder before the folders below it, the project first.
        let inside_heavy = dir.ancestors().skip(1).any(|a| heavy.contains(a));
        if inside_heavy || (i > 0 && is_heavy(dir)) {
            heavy.insert(dir);
            continue;
        }
        out.insert(DependsOn::sub_folders(dir));
        for name in NESTED_ENTRIES {
            out.insert(DependsOn::file(&dir.join(name)));
        }
        out.insert(DependsOn::flat(dir.join(".claude")));
        out.insert(DependsOn::tree(dir.join(".claude/rules")));
    }
    // The config home by the entries the view reads there, not whole: a running Claude Code
    // writes its credentials, backups, session and telemetry files there. The
    // settings files, the install and the memory folder are named below; `.claude.json` here
    // is the global config when `CLAUDE_CONFIG_DIR` (perhaps from a settings file's `env`
    // block: the second home) is set.
    for home in [m.env.config_home(), r.options.config_home.clone()] {
        out.insert(DependsOn::file(&home.join("CLAUDE.md")));
        out.insert(DependsOn::file(&home.join(".claude.json")));
        out.insert(DependsOn::tree(home.join("rules")));
    }
    for managed in [&m.env.managed_dir, &r.options.managed_dir] {
        out.insert(DependsOn::tree(managed));
    }
    // `~/.claude.json`: trust and the external-includes approval.
    out.insert(DependsOn::file(&m.env.global_config_path()));
    for file in r.settings.files() {
        out.insert(DependsOn::file(&file.path));
    }
    let flag_file = req.settings_file.as_ref().filter(|f| mneme_store::settings::inline_settings_json(f).is_none());
    if let Some(file) = flag_file.map(|f| crate::context::absolute(&r.cwd, f)) {
        out.insert(DependsOn::file(&file));
    }
    out.insert(DependsOn::tree(&r.memdir));
    // Every file the load read, skipped or looked for in vain.
    let listed = ctx.files.iter().map(|f| &f.path).chain(ctx.skipped.iter().map(|s| &s.path));
    let listed = listed.chain(ctx.conditional.iter().map(|c| &c.path)).chain(&ctx.nested_candidates).chain(&ctx.missing);
    for path in listed {
        out.insert(DependsOn::file(path));
        // A link changes where its target lives (a dangling one, where it will appear). Every
        // hop of a chain counts: re-pointing the middle link of `CLAUDE.md -> dotfiles/c.md
        // -> v2/c.md` changes the text as much as editing it.
        let mut hop = path.clone();
        for _ in 0..40 {
            let Ok(target) = std::fs::read_link(&hop) else { break };
            let next = hop.parent().map_or(target.clone(), |dir| dir.join(&target));
            out.insert(DependsOn::file(&next));
            hop = next;
        }
        if hop != *path {
            out.insert(DependsOn::file(&std::fs::canonicalize(&hop).unwrap_or(hop)));
        }
    }
    // A Cowork session's verdict on a managed file (whether its own account could have
    // written it: rows 87-88) follows the owner and mode of the file and of every folder on its
    // way down from `/`. A `chmod` or `chown` there changes the label the block gives the file
    // without a byte of text changing, and inotify reports it (`IN_ATTRIB`) only to a watch on
    // that folder or on the folder holding it: the managed folder's tree watch sees nothing
    // above it. So each step of the way is depended on by name, as the project's are.
    if r.options.cowork_session && r.options.profile.unverified_managed_files {
        for f in ctx.files.iter().filter(|f| f.layer == mneme_core::Layer::Managed) {
            way_judged(&mut out, &f.path);
        }
    }
    // Which Claude Code is installed decides the release rendered for, unless the request
    // names one: every place looked at up to the one found, and the folder of the file it
    // resolves to (an update replaces it).
    if req.claude_version.is_none() {
        for (path, _) in mneme_store::claude_install::candidates(&m.env) {
            out.insert(DependsOn::file(&path));
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

/// Each step of the way down from `/` to `path` that the managed-file judgement looks at
/// (`mneme_claudemd::managed`), by name: a link on the way is followed as the judgement
/// follows it, its target's way taken from the top again (at most 40 links, as there).
fn way_judged(out: &mut BTreeSet<DependsOn>, path: &Path) {
    let mut current = mneme_store::git::normalize(path);
    for _ in 0..=40 {
        let mut step = PathBuf::new();
        let mut next = None;
        let components: Vec<_> = current.components().collect();
        for (i, c) in components.iter().enumerate() {
            step.push(c);
            if step.parent().is_none() {
                continue;
            }
            out.insert(DependsOn::file(&step));
            if let Ok(target) = std::fs::read_link(&step) {
                let mut resolved = step.parent().map_or(target.clone(), |dir| dir.join(&target));
                resolved.extend(&components[i + 1..]);
                next = Some(mneme_store::git::normalize(&resolved));
                break;
            }
        }
        match next {
            Some(p) => current = p,
            None => return,
        }
    }
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

        fn cover(&self, _: &[DependsOn]) -> Option<(u64, u64)> {
            self.can_watch.then_some((1, 1))
        }

        fn release(&self, _: u64) {}
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
    fn the_index_answers_as_asking_every_dependency_would() {
        // Every dependency shape over a small tree, and every path near it: the index must
        // agree with `concerns` asked of each dependency in turn, for many random sets.
        let dirs = ["/", "/a", "/a/b", "/a/b/c", "/a/bc", "/x", "/x/y"];
        let entries = [None, Some("b"), Some("B"), Some("c"), Some("y")];
        let mut shapes = Vec::new();
        for dir in dirs {
            for recursive in [false, true] {
                for entry in entries {
                    shapes.push(DependsOn { dir: dir.into(), recursive, entry: entry.map(OsString::from), folders_only: false });
                }
            }
            shapes.push(DependsOn::sub_folders(dir));
        }
        let paths: Vec<PathBuf> = ["/", "/a", "/a/b", "/a/B", "/a/b/c", "/a/b/c/d", "/a/bc", "/a/bcd", "/x", "/x/y", "/x/Y/z", "/z", "/a/b/cc"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let mut seed: u64 = 20261205;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let mut disagreements = Vec::new();
        for _ in 0..2_000 {
            let picked: Vec<DependsOn> = (0..1 + next() % 4).map(|_| shapes[next() % shapes.len()].clone()).collect();
            let mut index = DependsOnIndex::default();
            index.extend(picked.iter().cloned());
            for path in &paths {
                for folder in [false, true] {
                    let linear = picked.iter().any(|d| d.concerns_change(path, folder));
                    if index.concerns_change(path, folder) != linear {
                        disagreements.push((picked.clone(), path.clone(), folder, linear));
                    }
                }
            }
        }
        assert!(disagreements.is_empty(), "{} disagreements, first: {:?}", disagreements.len(), disagreements.first());
        assert!(DependsOnIndex::default().is_empty() && !DependsOnIndex::default().concerns(Path::new("/a")));
    }

    #[test]
    fn a_view_whose_folders_cannot_all_be_watched_is_never_kept() {
        let (_home, m, cache, req) = setup(false);
        let a = m.context_cached(&req, &cache).unwrap();
        let b = m.context_cached(&req, &cache).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(cache.stats(), CacheStats { hits: 0, misses: 2, entries: 0, batches: 0 });
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
        let named = |p: &Path| deps.iter().any(|d| d.concerns(p));
        // Above the project: what the loader reads there and the way down, by name (in the
        // project, which the nested walk lists, also any sub-folder, but no other file).
        for dir in [req.cwd.as_path(), home.root.as_path(), Path::new("/")] {
            for name in INSTRUCTION_ENTRIES {
                assert!(named(&dir.join(name)), "{name} in {dir:?}: {deps:?}");
            }
        }
        assert!(deps.contains(&DependsOn::sub_folders(&req.cwd)) && deps.contains(&DependsOn::file(&req.cwd)), "{deps:?}");
        assert!(!flat(&req.cwd), "{deps:?}");
        assert!(!deps.iter().any(|d| d.concerns_change(&req.cwd.join("app.log"), false)), "{deps:?}");
        assert!(deps.iter().any(|d| d.concerns_change(&req.cwd.join("src"), true)), "{deps:?}");
        // The config home by the entries the view reads, not its busy files; the managed
        // folder (missing here: its name above it).
        let config = home.config_home();
        for entry in ["CLAUDE.md", "settings.json", ".claude.json", "rules"] {
            assert!(named(&config.join(entry)), "{entry}: {deps:?}");
        }
        assert!(!flat(&config), "{deps:?}");
        for busy in ["history.jsonl", ".credentials.json", "statsig/s.json", ".claude.json.backup", "todos"] {
            assert!(!deps.iter().any(|d| d.concerns_change(&config.join(busy), busy == "todos")), "{busy}: {deps:?}");
        }
        assert!(named(&home.root.join("managed")), "{deps:?}");
        // The home folder only by the entries that matter: `~/.zsh_history` changes nothing.
        assert!(!flat(&home.root) && !flat(&home.home()), "{deps:?}");
        for dir in [home.home(), home.root.clone()] {
            assert!(!deps.iter().any(|d| d.concerns(&dir.join(".zsh_history"))), "{deps:?}");
        }
        assert!(named(&m.env.global_config_path()), "{deps:?}");
        // A missing folder is watched through the nearest one above that exists.
        assert!(!deps.iter().any(|d| !d.dir.is_dir()), "{deps:?}");
    }

    #[test]
    fn every_hop_of_a_linked_claude_md_is_watched() {
        let (home, m, _cache, req) = setup(true);
        // CLAUDE.md -> dotfiles/claude.md -> current.md -> v2/claude.md: re-pointing a link in
        // the middle (a rename over it) changes what is loaded as much as editing the file.
        let dotfiles = home.root.join("dotfiles");
        home.write(dotfiles.join("v2/claude.md"), "Use spaces.\n");
        std::os::unix::fs::symlink("v2/claude.md", dotfiles.join("current.md")).unwrap();
        std::os::unix::fs::symlink("current.md", dotfiles.join("claude.md")).unwrap();
        std::fs::remove_file(req.cwd.join("CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink(dotfiles.join("claude.md"), req.cwd.join("CLAUDE.md")).unwrap();
        let r = m.resolve(&req).unwrap();
        let ctx = mneme_claudemd::load(&r.options);
        let deps = existing(dependencies(&m, &req, &r, &ctx));
        for hop in [dotfiles.join("claude.md"), dotfiles.join("current.md"), dotfiles.join("v2/claude.md")] {
            assert!(deps.iter().any(|d| d.concerns(&hop)), "{hop:?}: {deps:?}");
        }
    }

    #[test]
    fn a_missing_folder_is_watched_by_its_name_in_the_nearest_folder_that_exists() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let deps = existing([DependsOn::file(&root.join("a/b/CLAUDE.md")), DependsOn::tree(root.join("c/rules"))].into());
        assert_eq!(deps, [DependsOn::file(&root.join("a")), DependsOn::file(&root.join("c"))]);
    }

    #[test]
    fn what_another_dependency_covers_is_left_out() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("p/.claude/rules/deep")).unwrap();
        let rules = root.join("p/.claude/rules");
        let deps = existing(
            [
                DependsOn::tree(&rules),
                DependsOn::tree(rules.join("deep")),
                DependsOn::file(&rules.join("a.md")),
                DependsOn::flat(rules.join("deep")),
                DependsOn::flat(root.join("p")),
                DependsOn::file(&root.join("p/CLAUDE.md")),
                DependsOn::file(&root.join("CLAUDE.md")),
            ]
            .into(),
        );
        assert_eq!(deps, [DependsOn::file(&root.join("CLAUDE.md")), DependsOn::flat(root.join("p")), DependsOn::tree(rules)]);
    }

    #[test]
    fn a_link_on_the_way_is_watched_by_name_step_by_step() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real/docs")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        let deps = existing([DependsOn::file(&root.join("link/docs/x.md"))].into());
        // The file in the real folder, and the link's own entry: re-pointing it is seen.
        assert!(deps.contains(&DependsOn::file(&root.join("real/docs/x.md"))), "{deps:?}");
        assert!(deps.contains(&DependsOn::file(&root.join("link"))), "{deps:?}");
        assert!(deps.contains(&DependsOn::file(&root.join("real/docs"))), "{deps:?}");
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

    #[test]
    fn a_project_folder_shows_its_instruction_entries_and_sub_folders_not_a_build_log() {
        let deps = DependsOn::project_folder(Path::new("/p"));
        let any = |path: &str, folder: bool| deps.iter().any(|d| d.concerns_change(Path::new(path), folder));
        for name in ["CLAUDE.md", "CLAUDE.local.md", "AGENTS.md"] {
            assert!(any(&format!("/p/{name}"), false), "{name}: {deps:?}");
        }
        // `.git` coming or going moves the repository root; `.claude` holds settings and rules.
        assert!(any("/p/.git", true) && any("/p/.claude", true), "{deps:?}");
        assert!(any("/p/src", true), "a new sub-folder may hold a CLAUDE.md: {deps:?}");
        assert!(any("/p", true), "the folder itself going: {deps:?}");
        assert!(!any("/p/build.log", false) && !any("/p/src/main.rs", false), "{deps:?}");
    }

    #[test]
    fn a_config_folder_shows_what_mneme_reads_there_not_what_a_session_writes() {
        let deps = DependsOn::config_folder(Path::new("/h/.claude"));
        let any = |path: &str, folder: bool| deps.iter().any(|d| d.concerns_change(Path::new(path), folder));
        for name in ["CLAUDE.md", "settings.json", "cowork_settings.json", ".claude.json"] {
            assert!(any(&format!("/h/.claude/{name}"), false), "{name}: {deps:?}");
        }
        for name in ["rules", "agents", "agent-memory", "plugins", "projects", "local", "session-memory"] {
            assert!(any(&format!("/h/.claude/{name}"), true), "{name}: {deps:?}");
        }
        assert!(any("/h/.claude", true) && any("/h", true), "the folder itself going: {deps:?}");
        // What Claude Code writes there while a session runs (2.1.x): none of it is shown.
        for name in ["history.jsonl", ".credentials.json", ".claude.json.backup", ".claude.json.lock", "settings.json.tmp.12.34", ".last-cleanup"] {
            assert!(!any(&format!("/h/.claude/{name}"), false), "{name}: {deps:?}");
        }
        for name in ["statsig", "todos", "shell-snapshots", "session-env", "file-history", "backups", "ide", "cache"] {
            assert!(!any(&format!("/h/.claude/{name}"), true), "{name}: {deps:?}");
        }
    }

    #[test]
    fn a_named_entry_concerns_that_entry_in_any_case_and_the_folders_above_only() {
        let f = DependsOn::file(Path::new("/p/a/CLAUDE.md"));
        assert_eq!(f, DependsOn { dir: "/p/a".into(), recursive: false, entry: Some("CLAUDE.md".into()), folders_only: false });
        assert!(f.concerns(Path::new("/p/a/CLAUDE.md")));
        assert!(f.concerns(Path::new("/p/a/claude.md")), "a case-insensitive file system's spelling");
        assert!(f.concerns(Path::new("/p/a")) && f.concerns(Path::new("/p")));
        assert!(!f.concerns(Path::new("/p/a/.zsh_history")));
        assert!(!f.concerns(Path::new("/p/a/CLAUDE.md.swp")));
        assert!(!f.concerns(Path::new("/p/a/sub/CLAUDE.md")));
        assert_eq!(DependsOn::file(Path::new("/")), DependsOn::flat("/"));
    }
}
