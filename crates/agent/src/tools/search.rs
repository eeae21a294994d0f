//! `Grep` and `Glob`. Claude Code runs ripgrep for both; here ripgrep's own walker, matcher,
//! searcher and printer crates produce the same lines, over the disk as the overlay changes it.

use super::{num_arg, str_arg, bool_arg, Failure, ToolResult, Tools};
use crate::messages;
use crate::schema::{opt, req, Param, Ty};
use grep_printer::{StandardBuilder, SummaryBuilder, SummaryKind};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::WalkBuilder;
use serde_json::{Map, Value};
use mneme_core::Clock;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub(super) const GREP_PARAMS: &[Param] = &[
    req("pattern", Ty::Str, "Regular expression to look for (ripgrep syntax)"),
    opt("path", Ty::Str, "File or folder to search; the working directory when left out"),
    opt("glob", Ty::Str, "Only search files whose names match this glob, e.g. \"*.md\" or \"*.{ts,tsx}\" (rg --glob)"),
    opt(
        "output_mode",
        Ty::Enum(&["content", "files_with_matches", "count"]),
        "What to return: \"files_with_matches\" (default) the matching files, \"content\" the matching lines, \"count\" matches per file",
    ),
    opt("-B", Ty::Num, "Lines of context before each match (rg -B); content mode only"),
    opt("-A", Ty::Num, "Lines of context after each match (rg -A); content mode only"),
    opt("-C", Ty::Num, "Same as context"),
    opt("context", Ty::Num, "Lines of context around each match (rg -C); content mode only"),
    opt("-n", Ty::Bool, "Number the lines (rg -n); content mode only; on unless set to false"),
    opt("-i", Ty::Bool, "Ignore case (rg -i)"),
    opt("-o", Ty::Bool, "Print only the matched parts, one per line (rg -o); content mode only; off by default"),
    opt("type", Ty::Str, "Only search files of this ripgrep type (rg --type), e.g. md, py, rust"),
    opt("head_limit", Ty::Num, "Return at most this many lines or entries, in any mode (default 250; 0 means no limit)"),
    opt("offset", Ty::Num, "Skip this many lines or entries before head_limit applies (default 0)"),
    opt("multiline", Ty::Bool, "Let patterns span lines, with . matching newlines (rg -U --multiline-dotall); off by default"),
];

pub(super) const GLOB_PARAMS: &[Param] = &[
    req("pattern", Ty::Str, "Glob pattern the paths must match"),
    opt("path", Ty::Str, "Folder to search in; leave the field out (do not pass \"null\") for the working directory"),
];

// Mneme's own descriptions (data/tools/), written from what each tool does here.
pub(super) const GREP_DESCRIPTION: &str = include_str!("../../data/tools/Grep.txt");
pub(super) const GLOB_DESCRIPTION: &str = include_str!("../../data/tools/Glob.txt");

/// Folders Claude Code's Grep never searches.
const VCS_DIRS: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];
/// Claude Code's default Grep `head_limit` and Glob result cap.
const GREP_DEFAULT_LIMIT: usize = 250;
/// Grep stops collecting matches past this much output: a page of it is all one result can
/// show ([`super::MAX_RESULT_CHARS`]), with room left for an offset to page through.
const COLLECT_BYTES: usize = 16 << 20;
const GLOB_LIMIT: usize = 100;

/// How long one Grep or Glob may search. Claude Code stops its ripgrep after 20 seconds (60
/// under WSL) and answers with what it had found, saying more may exist; here the walk and the
/// search stop between files at the same limit. A path like `/` would otherwise hold the run
/// for as long as the disk takes to walk.
const SEARCH_TIME_LIMIT: Duration = Duration::from_secs(20);

/// One search's time limit, on the run's clock (tests move it).
struct Budget {
    clock: Arc<dyn Clock>,
    deadline: SystemTime,
    spent: bool,
}

impl Budget {
    fn start(clock: &Arc<dyn Clock>) -> Budget {
        Budget { clock: clock.clone(), deadline: clock.now() + SEARCH_TIME_LIMIT, spent: false }
    }

    /// Whether the search may go on to its next file; once false, false for good.
    fn left(&mut self) -> bool {
        if !self.spent && self.clock.now() >= self.deadline {
            self.spent = true;
        }
        !self.spent
    }

    /// What a search cut short answers: its results and a note, or, when it found nothing
    /// before the limit, a failure (nothing found is not "no matches").
    fn finish(&self, found_any: bool, output: String) -> Result<ToolResult, Failure> {
        match (self.spent, found_any) {
            (false, _) => Ok(ToolResult::ok(output)),
            (true, true) => Ok(ToolResult::ok(format!("{output}\n\n{}", messages::search_cut(SEARCH_TIME_LIMIT.as_secs())))),
            (true, false) => Err(Failure::Failed(messages::search_timed_out(SEARCH_TIME_LIMIT.as_secs()))),
        }
    }
}

/// Searches one file as the run sees it: the overlay's text (`own`) where the run wrote it,
/// else the disk's. A file on disk is opened without waiting, so a FIFO or a file like
/// `/proc/kmsg`, whose reads block until something arrives, answers at once instead of holding
/// the search past its limit; only regular files are read. Errors leave the file out, as rg's do.
fn search_one<S: Sink>(searcher: &mut Searcher, matcher: &grep_regex::RegexMatcher, path: &Path, own: Option<&str>, sink: S) {
    if let Some(text) = own {
        let _ = searcher.search_slice(matcher, text.as_bytes(), sink);
        return;
    }
    let Ok(file) = mneme_store::open::open_no_wait(path) else { return };
    if file.metadata().is_ok_and(|m| m.is_file()) {
        let _ = searcher.search_file(matcher, &file, sink);
    }
}

fn rg_error(e: impl std::fmt::Display) -> Failure {
    Failure::Failed(e.to_string())
}

/// Claude Code's `applyHeadLimit`: the page and the limit it applied, if any.
fn head_limit<T: Clone>(items: &[T], limit: Option<usize>, offset: usize) -> (Vec<T>, Option<usize>) {
    let rest = items.get(offset..).unwrap_or_default();
    if limit == Some(0) {
        return (rest.to_vec(), None);
    }
    let l = limit.unwrap_or(GREP_DEFAULT_LIMIT);
    let page = rest.iter().take(l).cloned().collect();
    (page, (rest.len() > l).then_some(l))
}

fn pagination(limit: Option<usize>, offset: usize) -> String {
    let mut parts = Vec::new();
    if let Some(l) = limit {
        parts.push(format!("limit: {l}"));
    }
    if offset > 0 {
        parts.push(format!("offset: {offset}"));
    }
    parts.join(", ")
}

fn mtime_of(path: &Path) -> SystemTime {
    std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Modification time in whole milliseconds, the precision Claude Code compares.
fn mtime_ms(path: &Path) -> u128 {
    mtime_of(path).duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

/// An approximation of JavaScript's `localeCompare` for paths: letters and digits compared
/// case-insensitively first (punctuation is ignored at that level), then case, then bytes.
fn locale_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |s: &str| -> String { s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect() };
    key(a).cmp(&key(b)).then_with(|| a.to_lowercase().cmp(&b.to_lowercase())).then_with(|| b.cmp(a))
}

impl Tools {
    /// Whether `path` exists as the run sees it.
    fn exists(&self, path: &Path) -> bool {
        if self.overlay.is_removed(path) {
            return false;
        }
        self.overlay.written().any(|(p, _)| p == path || p.starts_with(path)) || path.exists()
    }

    pub(super) fn validate_grep(&mut self, args: &Map<String, Value>) -> Result<(), Failure> {
        for field in ["pattern", "path", "glob", "type"] {
            if str_arg(args, field).is_some_and(|v| v.contains('\0')) {
                return Err(Failure::Invalid(messages::null_byte(field)));
            }
        }
        self.missing_path_failure(self.missing_search_path(args, false), false)
    }

    /// Why a Grep's (`folder` false) or Glob's path cannot be searched because nothing is
    /// there. Up to 2.1.259 that refuses the call as input, before the permission check; from
    /// 2.1.260 the call fails when it runs.
    fn missing_search_path(&self, args: &Map<String, Value>, folder: bool) -> Option<String> {
        let p = str_arg(args, "path")?;
        if p.starts_with("//") {
            return None;
        }
        let abs = self.abs(p);
        let cwd = self.cwd.to_string_lossy();
        match folder {
            false => (!self.exists(&abs)).then(|| messages::no_such_path(p, &cwd)),
            true => (!abs.exists()).then(|| messages::no_such_folder(p, &cwd)),
        }
    }

    /// A missing search path (`message`) at this stage of the call: refused as input
    /// (`at_run` false) up to 2.1.259, a failed call as it runs (`at_run` true) from 2.1.260,
    /// and nothing at the other stage.
    fn missing_path_failure(&self, message: Option<String>, at_run: bool) -> Result<(), Failure> {
        match message {
            Some(m) if at_run == self.release.search_path_checked_when_run => {
                Err(if at_run { Failure::Failed(m) } else { Failure::Invalid(m) })
            }
            _ => Ok(()),
        }
    }

    /// What a search rg refuses before it searches answers (`detail` in rg's words): an error
    /// from 2.1.208, and before, as if nothing was found (`none`).
    fn refused_search(&self, detail: String, none: &str) -> Result<ToolResult, Failure> {
        if self.release.searches_report_refused_input {
            Err(Failure::Failed(messages::search_refused(&format!("rg: {detail}"))))
        } else {
            Ok(ToolResult::ok(none.to_string()))
        }
    }

    pub(super) fn validate_glob(&mut self, args: &Map<String, Value>) -> Result<(), Failure> {
        if let missing @ Some(_) = self.missing_search_path(args, true) {
            return self.missing_path_failure(missing, false);
        }
        if let Some(p) = str_arg(args, "path").filter(|p| !p.starts_with("//")) {
            let abs = self.abs(p);
            if !abs.is_dir() {
                return Err(Failure::Invalid(format!("Path is not a directory: {p}")));
            }
        }
        Ok(())
    }

    /// Whether `root` names one file as the run sees it: on disk, or written earlier in the run
    /// (only in the overlay). Grep then searches just it and prints no file name.
    fn is_single_file(&self, root: &Path) -> bool {
        root.is_file() || (!root.exists() && self.overlay.written().any(|(p, _)| p == root))
    }

    /// The files under `root` as the run sees them, filtered like `rg` with `overrides`
    /// (and `types`), in path order.
    fn files_under(
        &self,
        root: &Path,
        overrides: &ignore::overrides::Override,
        types: Option<&ignore::types::Types>,
        respect_ignore_files: bool,
        budget: &mut Budget,
    ) -> Vec<PathBuf> {
        let mut files = BTreeSet::new();
        if self.is_single_file(root) {
            files.insert(root.to_path_buf());
        } else {
            let mut walk = WalkBuilder::new(root);
            walk.hidden(false).overrides(overrides.clone());
            if !respect_ignore_files {
                walk.ignore(false).git_ignore(false).git_global(false).git_exclude(false).parents(false);
            }
            if let Some(t) = types {
                walk.types(t.clone());
            }
            for entry in walk.build().flatten() {
                if !budget.left() {
                    break;
                }
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    files.insert(entry.into_path());
                }
            }
            for (p, _) in self.overlay.written() {
                let Ok(rel) = p.strip_prefix(root) else { continue };
                if overrides.matched(rel, false).is_ignore() {
                    continue;
                }
                if types.is_some_and(|t| t.matched(rel, false).is_ignore()) {
                    continue;
                }
                files.insert(p.to_path_buf());
            }
        }
        files.into_iter().filter(|p| !self.overlay.is_removed(p)).collect()
    }

    pub(super) fn grep(&mut self, args: &Map<String, Value>) -> Result<ToolResult, Failure> {
        self.missing_path_failure(self.missing_search_path(args, false), true)?;
        let pattern = str_arg(args, "pattern").unwrap_or_default();
        let root = str_arg(args, "path").map_or_else(|| self.cwd.clone(), |p| self.abs(p));
        let mode = str_arg(args, "output_mode").unwrap_or("files_with_matches");
        let context = num_arg(args, "context").or_else(|| num_arg(args, "-C"));
        let before = num_arg(args, "-B");
        let after = num_arg(args, "-A");
        let line_numbers = bool_arg(args, "-n").unwrap_or(true);
        let only_matching = bool_arg(args, "-o").unwrap_or(false);
        let multiline = bool_arg(args, "multiline").unwrap_or(false);
        let limit = num_arg(args, "head_limit").map(|n| n.max(0.0) as usize);
        let offset = num_arg(args, "offset").map_or(0, |n| n.max(0.0) as usize);

        let mut mb = RegexMatcherBuilder::new();
        mb.multi_line(true).case_insensitive(bool_arg(args, "-i").unwrap_or(false));
        if multiline {
            mb.dot_matches_new_line(true);
        } else {
            mb.line_terminator(Some(b'\n'));
        }
        // What rg refuses before it searches (a pattern, glob or file type it cannot use).
        let none = match mode {
            "content" => "No matches found",
            "count" => "No matches found\n\nFound 0 total occurrences across 0 files.",
            _ => "No files found",
        };
        let refused = |detail: String| self.refused_search(detail, none);
        let matcher = match mb.build(pattern) {
            Ok(m) => m,
            Err(e) => return refused(e.to_string()),
        };

        let mut ob = OverrideBuilder::new(&root);
        for vcs in VCS_DIRS {
            ob.add(&format!("!{vcs}")).map_err(rg_error)?;
        }
        if let Some(glob) = str_arg(args, "glob") {
            for word in glob.split_whitespace() {
                let parts: Vec<&str> =
                    if word.contains('{') && word.contains('}') { vec![word] } else { word.split(',').collect() };
                for g in parts.into_iter().filter(|g| !g.is_empty()) {
                    if let Err(e) = ob.add(g) {
                        return refused(e.to_string());
                    }
                }
            }
        }
        let overrides = match ob.build() {
            Ok(o) => o,
            Err(e) => return refused(e.to_string()),
        };
        let types = match str_arg(args, "type") {
            Some(t) => {
                let mut tb = TypesBuilder::new();
                tb.add_defaults();
                tb.select(t);
                match tb.build() {
                    Ok(types) => Some(types),
                    Err(_) => return refused(format!("unrecognized file type: {t}")),
                }
            }
            None => None,
        };
        let single_file = self.is_single_file(&root);
        let mut budget = Budget::start(&self.clock);
        let files = self.files_under(&root, &overrides, types.as_ref(), true, &mut budget);

        let mut sb = SearcherBuilder::new();
        // A multi-line search holds a whole file; one under /proc has no end (`pagemap`).
        sb.multi_line(multiline).binary_detection(BinaryDetection::quit(0)).heap_limit(Some(crate::overlay::MAX_READ_BYTES as usize));
        if mode == "content" {
            sb.line_number(line_numbers);
            match context {
                Some(c) => {
                    sb.before_context(c.max(0.0) as usize).after_context(c.max(0.0) as usize);
                }
                None => {
                    sb.before_context(before.map_or(0, |b| b.max(0.0) as usize));
                    sb.after_context(after.map_or(0, |a| a.max(0.0) as usize));
                }
            }
        }
        let mut searcher = sb.build();
        // Search text as the run sees it: the overlay's version where it has one.
        let contents: Vec<(PathBuf, Option<String>)> = files
            .into_iter()
            .map(|p| {
                let own = self.overlay.written().find(|(w, _)| *w == p).map(|(_, c)| c.to_string());
                (p, own)
            })
            .collect();

        let (found_any, output) = match mode {
            "content" => {
                let mut printer = StandardBuilder::new()
                    .path(!single_file)
                    .max_columns(Some(500))
                    .only_matching(only_matching)
                    .build_no_color(Vec::new());
                for (p, own) in &contents {
                    // Past what one result may show, more matches would only fill memory.
                    if !budget.left() || printer.get_mut().get_ref().len() > COLLECT_BYTES {
                        break;
                    }
                    let sink = printer.sink_with_path(&matcher, p);
                    search_one(&mut searcher, &matcher, p, own.as_deref(), sink);
                }
                let text = String::from_utf8_lossy(printer.get_mut().get_ref()).into_owned();
                let lines: Vec<String> = text.lines().map(|l| self.relativize_line(l, false)).collect();
                let (page, applied) = head_limit(&lines, limit, offset);
                let body = if page.is_empty() { "No matches found".to_string() } else { page.join("\n") };
                let pag = pagination(applied, offset);
                let out = if pag.is_empty() { body } else { format!("{body}\n\n[Showing results with pagination = {pag}]") };
                (!lines.is_empty(), out)
            }
            "count" => {
                let mut printer = SummaryBuilder::new().kind(SummaryKind::Count).path(true).build_no_color(Vec::new());
                for (p, own) in &contents {
                    // Past what one result may show, more matches would only fill memory.
                    if !budget.left() || printer.get_mut().get_ref().len() > COLLECT_BYTES {
                        break;
                    }
                    let sink = printer.sink_with_path(&matcher, p);
                    search_one(&mut searcher, &matcher, p, own.as_deref(), sink);
                }
                let text = String::from_utf8_lossy(printer.get_mut().get_ref()).into_owned();
                let lines: Vec<String> = text.lines().map(|l| self.relativize_line(l, true)).collect();
                let (page, applied) = head_limit(&lines, limit, offset);
                let (mut matches, mut nfiles) = (0u64, 0u64);
                for l in &page {
                    if let Some((_, n)) = l.rsplit_once(':') {
                        if let Ok(n) = n.parse::<u64>() {
                            matches += n;
                            nfiles += 1;
                        }
                    }
                }
                let body = if page.is_empty() { "No matches found".to_string() } else { page.join("\n") };
                let pag = pagination(applied, offset);
                let out = format!(
                    "{body}\n\nFound {matches} total {} across {nfiles} {}.{}",
                    if matches == 1 { "occurrence" } else { "occurrences" },
                    if nfiles == 1 { "file" } else { "files" },
                    if pag.is_empty() { String::new() } else { format!(" with pagination = {pag}") }
                );
                (!lines.is_empty(), out)
            }
            _ => {
                // The run's own files count as newest: they were written after everything on disk.
                let mut hits: Vec<(PathBuf, (bool, u128))> = Vec::new();
                for (p, own) in &contents {
                    if !budget.left() {
                        break;
                    }
                    let mut printer = SummaryBuilder::new().kind(SummaryKind::QuietWithMatch).build_no_color(Vec::new());
                    let mut sink = printer.sink_with_path(&matcher, p);
                    search_one(&mut searcher, &matcher, p, own.as_deref(), &mut sink);
                    if sink.has_match() {
                        hits.push((p.clone(), (own.is_some(), mtime_ms(p))));
                    }
                }
                // Newest first, then by name (Claude Code sorts rg's list this way).
                hits.sort_by(|a, b| {
                    b.1.cmp(&a.1).then_with(|| locale_cmp(&a.0.to_string_lossy(), &b.0.to_string_lossy()))
                });
                let names: Vec<String> = hits.iter().map(|(p, _)| self.display_path(p)).collect();
                let (page, applied) = head_limit(&names, limit, offset);
                let out = if page.is_empty() {
                    "No files found".to_string()
                } else {
                    let pag = pagination(applied, offset);
                    format!(
                        "Found {} {}{}\n{}",
                        page.len(),
                        if page.len() == 1 { "file" } else { "files" },
                        if pag.is_empty() { String::new() } else { format!(" {pag}") },
                        page.join("\n")
                    )
                };
                (!names.is_empty(), out)
            }
        };
        budget.finish(found_any, output)
    }

    /// `path:rest` lines from rg with the path made relative to the working directory.
    fn relativize_line(&self, line: &str, last_colon: bool) -> String {
        let split = if last_colon { line.rfind(':') } else { line.find(':') };
        match split {
            Some(i) if i > 0 && line.starts_with('/') => {
                format!("{}{}", self.display_path(Path::new(&line[..i])), &line[i..])
            }
            _ => line.to_string(),
        }
    }

    pub(super) fn glob(&mut self, args: &Map<String, Value>) -> Result<ToolResult, Failure> {
        self.missing_path_failure(self.missing_search_path(args, true), true)?;
        let pattern = str_arg(args, "pattern").unwrap_or_default();
        let mut base = str_arg(args, "path").map_or_else(|| self.cwd.clone(), |p| self.abs(p));
        let mut relative = pattern.to_string();
        if let Some(after_root) = pattern.strip_prefix('/') {
            // Split an absolute pattern at the last `/` before its first glob character.
            let (dir, rest) = match pattern.find(['*', '?', '[', '{']) {
                None => {
                    let p = Path::new(pattern);
                    (
                        p.parent().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default(),
                        p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                    )
                }
                Some(i) => match pattern[..i].rfind('/') {
                    Some(0) => ("/".to_string(), after_root.to_string()),
                    Some(o) => (pattern[..o].to_string(), pattern[o + 1..].to_string()),
                    None => (String::new(), pattern.to_string()),
                },
            };
            if !dir.is_empty() {
                base = PathBuf::from(dir);
                relative = rest;
            }
        }
        let mut ob = OverrideBuilder::new(&base);
        if let Err(e) = ob.add(&relative) {
            return self.refused_search(e.to_string(), "No files found");
        }
        let overrides = match ob.build() {
            Ok(o) => o,
            Err(e) => return self.refused_search(e.to_string(), "No files found"),
        };
        let mut budget = Budget::start(&self.clock);
        let files = self.files_under(&base, &overrides, None, false, &mut budget);
        // The run's own files count as newest: they were written after everything on disk.
        // Each file costs a stat for its date, which on a huge or slow tree takes as long as the
        // walk did, so the dating has a time limit of its own (a walk cut short still gets its
        // files dated); a file not dated in time is left out and the answer says it was cut,
        // except the run's own (few, and always listed).
        let mut dating = Budget::start(&self.clock);
        let mut dated: Vec<(PathBuf, (bool, SystemTime))> = Vec::with_capacity(files.len());
        for p in files {
            if self.overlay.is_changed(&p) {
                let key = (true, mtime_of(&p));
                dated.push((p, key));
            } else if dating.left() {
                let key = (false, mtime_of(&p));
                dated.push((p, key));
            }
        }
        // `rg --sort=modified`: oldest first.
        dated.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        budget.spent |= dating.spent;
        if dated.is_empty() {
            return budget.finish(false, "No files found".to_string());
        }
        let total = dated.len();
        let mut lines: Vec<String> = dated.iter().take(GLOB_LIMIT).map(|(p, _)| self.display_path(p)).collect();
        if total > GLOB_LIMIT {
            lines.push(messages::glob_cut(GLOB_LIMIT, total));
        }
        budget.finish(true, lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Gate;
    use mneme_model::Cancel;
    use crate::Policy;
    use std::sync::Mutex;

    /// A clock that moves on by `step` each time it is read, after `quick` reads that move a
    /// millisecond each.
    struct Ticking {
        now: Mutex<(SystemTime, usize)>,
        step: Duration,
        quick: usize,
    }

    impl Clock for Ticking {
        fn now(&self) -> SystemTime {
            let mut guard = self.now.lock().unwrap();
            let (now, reads) = &mut *guard;
            *now += if *reads < self.quick { Duration::from_millis(1) } else { self.step };
            *reads += 1;
            *now
        }
    }

    /// Tools over a folder of `n` notes that all hold "needle", on a clock that moves `step`
    /// at every look: the search's time limit runs out after a known number of files.
    fn tools_over_notes(n: usize, step: Duration) -> (tempfile::TempDir, Tools) {
        tools_over_notes_after(n, step, 0)
    }

    fn tools_over_notes_after(n: usize, step: Duration, quick: usize) -> (tempfile::TempDir, Tools) {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..n {
            std::fs::write(dir.path().join(format!("note{i:02}.md")), "a needle here\n").unwrap();
        }
        let clock: Arc<dyn Clock> = Arc::new(Ticking { now: Mutex::new((SystemTime::UNIX_EPOCH, 0)), step, quick });
        let gate = Gate::new(&Policy::AutoMem { memory_dir: dir.path().to_path_buf() }, &mneme_core::versions::newest());
        let tools = Tools::new(dir.path().to_path_buf(), gate, clock, dir.path().to_path_buf());
        (dir, tools)
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// Each look at the clock is a second: the walk of 10 notes takes 11 (the folder and each
    /// note), so the search reads 8 notes before its 20th second and says it stopped.
    #[test]
    fn a_grep_past_its_time_limit_answers_with_what_it_found_and_says_so() {
        let (_dir, mut tools) = tools_over_notes(10, Duration::from_secs(1));
        let out = tools.grep(&args(serde_json::json!({"pattern": "needle"}))).unwrap();
        assert!(!out.is_error);
        let (list, note) = out.content.split_once("\n\n").unwrap();
        assert!(list.starts_with("Found 8 files\n"), "{list}");
        assert_eq!(list.lines().count(), 9);
        assert_eq!(note, messages::search_cut(20));
        // Within the limit nothing is said.
        let (_dir, mut tools) = tools_over_notes(10, Duration::from_millis(10));
        let out = tools.grep(&args(serde_json::json!({"pattern": "needle", "output_mode": "count"}))).unwrap();
        assert!(out.content.ends_with("Found 10 total occurrences across 10 files."), "{}", out.content);
    }

    #[test]
    fn a_glob_past_its_time_limit_lists_what_the_walk_reached() {
        let (_dir, mut tools) = tools_over_notes(30, Duration::from_secs(1));
        let out = tools.glob(&args(serde_json::json!({"pattern": "*.md"}))).unwrap();
        let (list, note) = out.content.split_once("\n\n").unwrap();
        // The folder and 18 notes before the 20th second.
        assert_eq!(list.lines().count(), 18, "{list}");
        assert_eq!(note, messages::search_cut(20));
    }

    /// Dating each file is a stat, bounded like the walk: the walk of 30 notes is quick (32 looks
    /// at the clock: its start, the folder, each note), then each look is a second, so the
    /// dating's start and 19 notes fit in its 20 seconds and the rest are left out.
    #[test]
    fn a_glob_dates_its_files_within_a_time_limit_too() {
        let (_dir, mut tools) = tools_over_notes_after(30, Duration::from_secs(1), 32);
        let out = tools.glob(&args(serde_json::json!({"pattern": "*.md"}))).unwrap();
        let (list, note) = out.content.split_once("\n\n").expect("the answer says it was cut");
        assert_eq!(list.lines().count(), 19, "{list}");
        assert_eq!(note, messages::search_cut(20));
    }

    /// Nothing found before the limit is a failure, not "No files found": matches may exist.
    #[test]
    fn a_search_that_found_nothing_in_time_fails_instead_of_saying_no_matches() {
        let (_dir, mut tools) = tools_over_notes(3, Duration::from_secs(3600));
        for out in [
            tools.grep(&args(serde_json::json!({"pattern": "needle"}))),
            tools.grep(&args(serde_json::json!({"pattern": "needle", "output_mode": "content"}))),
            tools.glob(&args(serde_json::json!({"pattern": "*.md"}))),
        ] {
            assert_eq!(out, Err(Failure::Failed(messages::search_timed_out(20))));
        }
    }

    /// A pattern, glob or file type rg refuses: from 2.1.208 the Grep fails with rg's message,
    /// before it answered that nothing was found (checked on 2.1.207, 2.1.208 and 2.1.332 in
    /// tests/differential.rs).
    #[test]
    fn a_refused_search_fails_from_2_1_208_and_found_nothing_before() {
        let (_dir, mut tools) = tools_over_notes(2, Duration::from_millis(1));
        let version = |v: &str| mneme_core::versions::behaviours(v.parse().unwrap());
        let calls = [
            (serde_json::json!({"pattern": "(open"}), "rg: regex parse error:\n    (?:(open)\n    ^\nerror: unclosed group", "No files found"),
            (serde_json::json!({"pattern": "(open", "output_mode": "content"}), "rg: regex parse error:\n    (?:(open)\n    ^\nerror: unclosed group", "No matches found"),
            (serde_json::json!({"pattern": "a", "type": "nosuch"}), "rg: unrecognized file type: nosuch", "No files found"),
            (serde_json::json!({"pattern": "a", "glob": "{x", "output_mode": "count"}), "rg: error parsing glob '{x': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)", "No matches found\n\nFound 0 total occurrences across 0 files."),
        ];
        for (call, detail, before) in calls {
            tools.release = version("2.1.208");
            assert_eq!(tools.grep(&args(call.clone())), Err(Failure::Failed(messages::search_refused(detail))));
            tools.release = version("2.1.207");
            let out = tools.grep(&args(call)).unwrap();
            assert_eq!((out.content.as_str(), out.is_error), (before, false));
        }
        let bad_glob = args(serde_json::json!({"pattern": "a["}));
        tools.release = version("2.1.208");
        let detail = "rg: error parsing glob 'a[': unclosed character class; missing ']'";
        assert_eq!(tools.glob(&bad_glob), Err(Failure::Failed(messages::search_refused(detail))));
        tools.release = version("2.1.207");
        assert_eq!(tools.glob(&bad_glob).unwrap().content, "No files found");
    }

    /// A search in a folder that is not there: refused as input (before the permission check)
    /// up to 2.1.259, a failed call from 2.1.260 (checked in tests/differential.rs).
    #[test]
    fn a_missing_search_path_is_bad_input_until_2_1_260_and_a_failed_call_from_it() {
        let (dir, mut tools) = tools_over_notes(1, Duration::from_millis(1));
        let missing = dir.path().join("nope").to_string_lossy().into_owned();
        let cwd = dir.path().to_string_lossy().into_owned();
        let grep = args(serde_json::json!({"pattern": "a", "path": missing}));
        let glob = args(serde_json::json!({"pattern": "*.md", "path": missing}));
        tools.release = mneme_core::versions::behaviours("2.1.259".parse().unwrap());
        assert_eq!(tools.validate_grep(&grep), Err(Failure::Invalid(messages::no_such_path(&missing, &cwd))));
        assert_eq!(tools.validate_glob(&glob), Err(Failure::Invalid(messages::no_such_folder(&missing, &cwd))));
        tools.release = mneme_core::versions::behaviours("2.1.260".parse().unwrap());
        assert_eq!((tools.validate_grep(&grep), tools.validate_glob(&glob)), (Ok(()), Ok(())));
        assert_eq!(tools.grep(&grep), Err(Failure::Failed(messages::no_such_path(&missing, &cwd))));
        assert_eq!(tools.glob(&glob), Err(Failure::Failed(messages::no_such_folder(&missing, &cwd))));
    }

    /// Grep's `-o`: offered from 2.1.141, in the schema the model is shown and in the check of
    /// each call; up to 2.1.140 a call with it is refused as input (checked on 2.1.140 and
    /// 2.1.141 in tests/differential.rs).
    #[tokio::test]
    async fn grep_offers_only_matching_from_2_1_141() {
        let (dir, mut tools) = tools_over_notes(1, Duration::from_millis(1));
        let offers = |release: &mneme_core::versions::Profile| {
            let defs = crate::tools::definitions(release);
            let grep = defs.iter().find(|d| d.name == "Grep").unwrap();
            grep.input_schema["properties"].get("-o").is_some()
        };
        let version = |v: &str| mneme_core::versions::behaviours(v.parse().unwrap());
        assert!(!offers(&version("2.1.140")) && offers(&version("2.1.141")));
        let call = serde_json::json!({"pattern": "a", "path": dir.path(), "output_mode": "content", "-o": true});
        tools.release = version("2.1.140");
        let refused = tools.call("Grep", &call, &Cancel::new()).await;
        let words = format!("InputValidationError: {}", messages::bad_input("Grep", &[messages::unknown_param("-o")]));
        assert_eq!((refused.content, refused.is_error), (format!("<tool_use_error>{words}</tool_use_error>"), true));
        tools.release = version("2.1.141");
        let answered = tools.call("Grep", &call, &Cancel::new()).await;
        assert!(!answered.is_error && answered.content.lines().all(|l| l.ends_with(":a")), "{}", answered.content);
    }

    #[test]
    fn head_limit_like_claude_code() {
        let items: Vec<u32> = (0..300).collect();
        let (page, applied) = head_limit(&items, None, 0);
        assert_eq!((page.len(), applied), (250, Some(250)));
        let (page, applied) = head_limit(&items, Some(0), 10);
        assert_eq!((page.len(), applied), (290, None));
        let (page, applied) = head_limit(&items[..5], Some(10), 2);
        assert_eq!((page, applied), (vec![2, 3, 4], None));
        assert_eq!(pagination(Some(250), 3), "limit: 250, offset: 3");
        let mut paths = vec!["/m/sub/c.md", "/m/MEMORY.md", "/m/a.md"];
        paths.sort_by(|a, b| locale_cmp(a, b));
        assert_eq!(paths, ["/m/a.md", "/m/MEMORY.md", "/m/sub/c.md"]);
    }
}
