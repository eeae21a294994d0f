//! `getMemoryFiles` (eager load) and `getNestedMemoryAttachmentsForFile` (lazy attachments),
//! following Claude Code 2.1.195/2.1.197 where it differs from the 2.1.88 source.

use crate::content::{self, ParseFailure, Truncation};
use crate::exclude::Excludes;
use crate::paths::{self, path_str};
use crate::{AgentsMd, ConditionalRule, Context, HookContext, LoadOptions, LoadedFile, SkipReason, SkippedFile};
use mneme_core::text::{estimate_tokens, js_trim, truncate_entrypoint_with, utf16_len};
use mneme_core::Layer;
use mneme_core::versions::Runtime;
use std::collections::HashSet;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// `MAX_INCLUDE_DEPTH`: a file reached through 5 or more includes is not read.
const MAX_INCLUDE_DEPTH: usize = 5;

/// How deep rules folders are followed. Claude Code's walk has no limit of its own, but a
/// cloned repository's chain of links (`rules/n -> ../d/1`, `d/1/n -> ../2`, … all inside
/// the project) nests folders as deep as it likes, and each level is a frame of this walk:
/// thousands abort the process on an overflowed stack. No real rules tree comes near this.
const MAX_RULES_DEPTH: usize = 200;

/// The most rules folders one load lists. Releases before 2.1.232 follow a rules folder's
/// link out of the project, so a cloned repository's `.claude/rules/r -> /` has them read
/// every `.md` file on the machine; Mneme stops there and says so. No real rules tree comes
/// near this.
const MAX_RULES_FOLDERS: usize = 10_000;

/// The set Claude Code calls `processedPaths`: normalized path strings.
type Processed = HashSet<String>;

struct Walker {
    cwd: String,
    home: String,
    excludes: Excludes,
    /// The behaviours of the release being reproduced.
    profile: mneme_core::Profile,
    /// Only the eager load reports skipped files and conditional rules.
    record: bool,
    skipped: Vec<SkippedFile>,
    conditional: Vec<ConditionalRule>,
    /// Paths read as regular files during this load: a later mention of one (1,500 rules
    /// including the same shared file) is reported as already loaded without another `stat`.
    read_files: HashSet<String>,
    /// Candidates that did not exist ([`Context::missing`]).
    missing: Vec<PathBuf>,
    /// How many rules folders deep the walk is now (see [`MAX_RULES_DEPTH`]).
    rules_depth: usize,
    /// Rules folders listed so far in this load ([`MAX_RULES_FOLDERS`]).
    rules_folders: usize,
}

enum ReadError {
    /// ENOENT, ENOTDIR, EISDIR: Claude Code ignores these silently.
    Missing,
    /// Over [`MAX_INSTRUCTION_FILE_BYTES`] in a release that leaves such files out (silently;
    /// Mneme says so).
    TooLarge(u64),
    Other(String),
}

/// Claude Code leaves out, without a word, any instruction file larger than this many bytes
/// (from 2.1.196, `Profile::oversized_files_left_out`; exactly 4 MiB is still sent whole).
pub const MAX_INSTRUCTION_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a file the lexer refused is left out, for the skipped list.
fn lexer_refusal(e: &crate::marked::LexError) -> SkipReason {
    match e {
        crate::marked::LexError::TooDeep { limit } => SkipReason::TooDeep { limit: *limit as u32 },
        crate::marked::LexError::Stuck { .. } => SkipReason::Unreadable { message: "the Markdown lexer rejected it".into() },
    }
}

/// The size over which `profile`'s release leaves a file out, if it does.
fn size_cap(profile: &mneme_core::Profile) -> Option<u64> {
    profile.oversized_files_left_out.then_some(MAX_INSTRUCTION_FILE_BYTES)
}

/// The most of one file read in a release without a size cap: a `/proc` file (`pagemap`,
/// reached through a cloned repository's `CLAUDE.md` link) reports size 0 and streams
/// hundreds of gigabytes.
const READ_CEILING: u64 = 64 * 1024 * 1024;

/// Reads the rest of `file` onto `bytes`, refusing past `cap` (or [`READ_CEILING`]).
fn bounded_read(file: impl std::io::Read, bytes: &mut Vec<u8>, cap: Option<u64>) -> Result<(), ReadError> {
    use std::io::Read;
    let limit = cap.unwrap_or(READ_CEILING);
    let have = bytes.len() as u64;
    file.take((limit + 1).saturating_sub(have)).read_to_end(bytes).map_err(classify)?;
    let len = bytes.len() as u64;
    match cap {
        Some(_) if len > limit => Err(ReadError::TooLarge(len)),
        None if len > limit => Err(ReadError::Other(format!("larger than {} MiB, so it is not read", READ_CEILING >> 20))),
        _ => Ok(()),
    }
}

fn read_text(path: &str, cap: Option<u64>) -> Result<(String, usize), ReadError> {
    let meta = fs::metadata(path).map_err(classify)?;
    if meta.is_dir() {
        return Err(ReadError::Missing);
    }
    if !meta.is_file() {
        // Claude Code would block reading a FIFO forever; refuse special files instead.
        return Err(ReadError::Other("not a regular file".into()));
    }
    if cap.is_some_and(|cap| meta.len() > cap) {
        return Err(ReadError::TooLarge(meta.len()));
    }
    // Opened without waiting: the name may have become a FIFO since the `stat`.
    let file = mneme_store::open::open_no_wait(Path::new(path)).map_err(classify)?;
    let mut bytes = Vec::with_capacity(mneme_store::open::capacity_for(meta.len()));
    bounded_read(file, &mut bytes, cap)?;
    let len = bytes.len();
    // `readFile(path, 'utf-8')`: invalid sequences become U+FFFD, a BOM stays.
    let text = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((text, len))
}

/// Reads a file [`paths::open_resolved`] already opened. Usually its first `pread` read it
/// whole (`open`, `pread`, `close`: three calls, where `read_text` takes six). Otherwise its
/// `fstat` gave the type and size, so one `read` asking for a byte more than the size both
/// reads the file and proves its end was reached.
fn read_opened(opened: paths::Opened, cap: Option<u64>) -> Result<(String, usize), ReadError> {
    use std::io::Read;
    let paths::Opened { mut file, head } = opened;
    let meta = match head {
        paths::Head::Whole(bytes) => {
            // Under HEAD_BYTES, so never over MAX_INSTRUCTION_FILE_BYTES.
            paths::release(file);
            let len = bytes.len();
            let text = match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            };
            return Ok((text, len));
        }
        paths::Head::Dir => return Err(ReadError::Missing),
        paths::Head::Stat(meta) => meta,
    };
    if meta.is_dir() {
        return Err(ReadError::Missing);
    }
    if !meta.is_file() {
        return Err(ReadError::Other("not a regular file".into()));
    }
    if cap.is_some_and(|cap| meta.len() > cap) {
        return Err(ReadError::TooLarge(meta.len()));
    }
    // A release without a cap still gets the ceiling, before the buffer is made: a sparse
    // file (`@logs/lastlog`) says it holds hundreds of gigabytes.
    if cap.is_none() && meta.len() > READ_CEILING {
        return Err(ReadError::Other(format!("larger than {} MiB, so it is not read", READ_CEILING >> 20)));
    }
    let size = meta.len() as usize;
    let mut bytes = vec![0u8; size + 1];
    let mut filled = 0;
    loop {
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if filled == size {
                    break;
                }
                if filled == bytes.len() {
                    // It grew since the fstat (or is a /proc file that says it is empty and
                    // never ends): read the rest, no further than the cap.
                    bytes.truncate(filled);
                    bounded_read(&mut file, &mut bytes, cap)?;
                    filled = bytes.len();
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(classify(e)),
        }
    }
    bytes.truncate(filled);
    let len = bytes.len();
    let text = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((text, len))
}

fn classify(e: std::io::Error) -> ReadError {
    match e.kind() {
        ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::IsADirectory => ReadError::Missing,
        _ => ReadError::Other(e.to_string()),
    }
}

fn is_file(path: &str) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file())
}

impl Walker {
    fn new(opts: &LoadOptions, record: bool) -> Self {
        Walker {
            cwd: path_str(&opts.original_cwd),
            home: path_str(&opts.home),
            excludes: Excludes::new(&opts.excludes),
            profile: opts.profile,
            record,
            skipped: Vec::new(),
            conditional: Vec::new(),
            read_files: HashSet::new(),
            missing: Vec::new(),
            rules_depth: 0,
            rules_folders: 0,
        }
    }

    /// Newer releases do not follow a rule, a rules folder or an `@include` of a repository's
    /// files through a symlink that leads outside the project (the user's and the managed
    /// folders' own links are still followed).
    fn outside_project(&self, layer: Layer, resolved: &str) -> bool {
        !self.profile.rules_follow_symlinks
            && matches!(layer, Layer::Project | Layer::Local)
            && !paths::path_in_working_path(resolved, &self.cwd, &self.home)
    }

    /// For a path whose real path differs from it: whether the release counts it as reached
    /// through a symlink. From 2.1.284 it does; 2.1.232-2.1.283 asked only whether the path
    /// itself is a link, so a rules folder inside a linked `.claude` (and its rules) still
    /// loaded (bisected: 2.1.283 loads them, 2.1.284 does not). `listed_plain`: a folder
    /// listing already said the path is a plain file or folder, so it is no link itself.
    fn judged_a_link(&self, path: &str, listed_plain: bool) -> bool {
        self.profile.links_judged_by_realpath
            || !listed_plain && fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }

    fn skip_link(&mut self, path: &str, layer: Layer, target: &str) {
        if self.record {
            self.skipped.push(SkippedFile {
                path: PathBuf::from(path),
                layer,
                parent: None,
                reason: SkipReason::SymlinkOutsideProject { target: target.to_string() },
            });
        }
    }

    fn skip(&mut self, path: &str, layer: Layer, parent: Option<&str>, reason: SkipReason) {
        if !self.record {
            return;
        }
        if self.read_files.contains(path) || is_file(path) {
            self.skipped.push(SkippedFile {
                path: PathBuf::from(path),
                layer,
                parent: parent.map(PathBuf::from),
                reason,
            });
        } else {
            // Not listed while missing, but it would be once it appears.
            self.note_missing(path);
        }
    }

    /// Notes a candidate that does not exist ([`Context::missing`]).
    fn note_missing(&mut self, path: &str) {
        if self.record {
            self.missing.push(PathBuf::from(path));
        }
    }

    /// `processMemoryFile`: the file first, then its includes depth-first.
    #[allow(clippy::too_many_arguments)]
    fn process_memory_file(
        &mut self,
        path: &str,
        layer: Layer,
        processed: &mut Processed,
        include_external: bool,
        depth: usize,
        parent: Option<&str>,
        is_rule: bool,
    ) -> Vec<LoadedFile> {
        let normalized = paths::normalize(path);
        if processed.contains(&normalized) {
            self.skip(path, layer, parent, SkipReason::AlreadyLoaded);
            return Vec::new();
        }
        if depth >= MAX_INCLUDE_DEPTH {
            self.skip(path, layer, parent, SkipReason::DepthLimit);
            return Vec::new();
        }
        if layer.is_excludable() {
            if let Some(pattern) = self.excludes.matching(path).map(str::to_string) {
                self.skip(path, layer, parent, SkipReason::Excluded { pattern });
                return Vec::new();
            }
        }
        if path.starts_with("//") {
            return Vec::new();
        }
        let (resolved, is_symlink, opened) = match paths::open_resolved(path) {
            paths::Probe::Missing => {
                processed.insert(normalized);
                self.note_missing(path);
                return Vec::new();
            }
            paths::Probe::Resolved { real, is_symlink, opened } => (real, is_symlink, opened),
        };
        if is_symlink && parent.is_some() && self.outside_project(layer, &resolved) {
            self.skip_link(path, layer, &resolved);
            return Vec::new();
        }
        if is_symlink {
            // 2.1.19x: a symlink whose target was already processed is skipped.
            let resolved_norm = paths::normalize(&resolved);
            if processed.contains(&resolved_norm) {
                self.skip(path, layer, parent, SkipReason::AlreadyLoaded);
                return Vec::new();
            }
            processed.insert(resolved_norm);
        }
        processed.insert(normalized);

        let read = match opened {
            Some(opened) => read_opened(opened, size_cap(&self.profile)),
            None => read_text(path, size_cap(&self.profile)),
        };
        let (raw, raw_bytes) = match read {
            Ok(r) => {
                self.read_files.insert(path.to_string());
                r
            }
            Err(ReadError::Missing) => {
                self.note_missing(path);
                return Vec::new();
            }
            Err(ReadError::TooLarge(bytes)) => {
                self.skip(path, layer, parent, SkipReason::TooLarge { bytes });
                return Vec::new();
            }
            Err(ReadError::Other(message)) => {
                if self.record {
                    self.skipped.push(SkippedFile {
                        path: PathBuf::from(path),
                        layer,
                        parent: parent.map(PathBuf::from),
                        reason: SkipReason::Unreadable { message },
                    });
                }
                return Vec::new();
            }
        };
        let parsed = match content::parse_memory_file_content(&raw, path, Truncation::None, Some(&resolved), &self.home, &self.profile) {
            Ok(p) => p,
            Err(ParseFailure::NonTextExtension) => {
                self.skip(path, layer, parent, SkipReason::NonTextExtension);
                return Vec::new();
            }
            Err(ParseFailure::Lexer(e)) => {
                self.skip(path, layer, parent, lexer_refusal(&e));
                return Vec::new();
            }
        };
        if js_trim(&parsed.content).is_empty() {
            self.skip(path, layer, parent, SkipReason::Empty);
            return Vec::new();
        }
        let include_paths = parsed.include_paths.clone();
        let mut out = vec![loaded(path, layer, parent, is_rule, raw_bytes, parsed)];
        for include in include_paths {
            let external = !paths::path_in_working_path(&include, &self.cwd, &self.home);
            if external && !include_external {
                self.skip(&include, layer, Some(path), SkipReason::ExternalInclude);
                continue;
            }
            out.extend(self.process_memory_file(&include, layer, processed, include_external, depth + 1, Some(path), false));
        }
        out
    }

    /// `processMdRules`: a rules directory in readdir order, recursing into folders where they
    /// appear, following symlinks (reported under their resolved path). `conditional` keeps
    /// only files with `paths:` globs, otherwise only files without.
    #[allow(clippy::too_many_arguments)]
    fn process_md_rules(
        &mut self,
        rules_dir: &str,
        layer: Layer,
        processed: &mut Processed,
        include_external: bool,
        conditional: bool,
        visited: &mut HashSet<String>,
        base_dir: &str,
    ) -> Vec<LoadedFile> {
        if visited.contains(rules_dir) {
            return Vec::new();
        }
        if self.rules_depth >= MAX_RULES_DEPTH {
            if self.record {
                let message = format!("rules folders nested more than {MAX_RULES_DEPTH} deep (a chain of links?) are not followed");
                self.skipped.push(SkippedFile { path: PathBuf::from(rules_dir), layer, parent: None, reason: SkipReason::Unreadable { message } });
            }
            return Vec::new();
        }
        // Nothing there (the usual case for most folders on the way): one `lstat`, no `open`.
        let Some((resolved_dir, is_symlink)) = paths::resolve_if_present(rules_dir) else { return Vec::new() };
        if is_symlink && self.judged_a_link(rules_dir, false) && self.outside_project(layer, &resolved_dir) {
            self.skip_link(rules_dir, layer, &resolved_dir);
            return Vec::new();
        }
        visited.insert(rules_dir.to_string());
        if is_symlink {
            visited.insert(resolved_dir.clone());
        }
        self.rules_folders += 1;
        if self.rules_folders > MAX_RULES_FOLDERS {
            if self.record && self.rules_folders == MAX_RULES_FOLDERS + 1 {
                let message = format!(
                    "more than {MAX_RULES_FOLDERS} rules folders (a link to a large tree, such as `/`?): Mneme stops listing here, \
                     where Claude Code would read every .md file below; remove the link"
                );
                self.skipped.push(SkippedFile { path: PathBuf::from(rules_dir), layer, parent: None, reason: SkipReason::Unreadable { message } });
            }
            return Vec::new();
        }
        let Ok(listing) = fs::read_dir(&resolved_dir) else { return Vec::new() };
        // A failing entry makes Claude Code's whole call for this directory return [].
        let Ok(mut entries) = listing.collect::<Result<Vec<_>, _>>() else { return Vec::new() };
        if self.profile.runtime == Runtime::Node {
            // Node's readdir hands back names sorted byte by byte; a Bun binary, the file
            // system's own order.
            entries.sort_by_key(|e| e.file_name());
        }
        let mut out = Vec::new();
        for entry in entries {
            let os_name = entry.file_name();
            let Some(name) = os_name.to_str().map(str::to_string) else {
                // Claude Code reads the name with U+FFFD for the bytes that are not UTF-8, a
                // name no file has, so the entry is left out in every release (captured); the
                // view says so for what would have been a rule, its bytes escaped.
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if self.record && (is_dir || os_name.as_encoded_bytes().ends_with(b".md")) {
                    let shown = paths::join(rules_dir, &mneme_store::text_form::escaped_name(&os_name));
                    let message = "its name is not UTF-8 (the \\xNN bytes come from a system using another encoding, such as \
                                   Latin-1), so Claude Code never reads it; rename it to a UTF-8 name"
                        .to_string();
                    self.skipped.push(SkippedFile { path: PathBuf::from(shown), layer, parent: None, reason: SkipReason::Unreadable { message } });
                }
                continue;
            };
            // Releases before 2.1.160 compose every path (NFC), entry names too: a name
            // spelled in decomposed form (a folder synced from macOS) is looked up by its
            // composed spelling, and where nothing has that spelling the lookup fails, which
            // ends the call for this whole folder (docs/claude-code-versions.md, row 29).
            let (name, composed_type) = match composed_spelling(&name).filter(|_| !self.profile.cwd_as_spelled) {
                None => (name, None),
                Some(composed) => match fs::symlink_metadata(Path::new(&resolved_dir).join(&composed)) {
                    Ok(m) => (composed, Some(m.file_type())),
                    Err(_) => return Vec::new(),
                },
            };
            let entry_path = paths::join(rules_dir, &name);
            // The listing says what each entry is: a plain file or folder resolves to the
            // folder's realpath plus its name, with no call of its own; only links (and file
            // systems that do not say) take `realpath`.
            let listed = composed_type.or_else(|| entry.file_type().ok()).filter(|t| t.is_file() || t.is_dir());
            let (resolved_entry, entry_is_symlink) = match listed {
                Some(_) => {
                    let real = paths::entry_realpath(&resolved_dir, &name);
                    let differs = real != entry_path;
                    (real, differs)
                }
                None => paths::safe_resolve_path(&entry_path),
            };
            if entry_is_symlink && self.judged_a_link(&entry_path, listed.is_some()) && self.outside_project(layer, &resolved_entry) {
                self.skip_link(&entry_path, layer, &resolved_entry);
                continue;
            }
            let (is_dir, is_file) = match listed {
                Some(t) => (t.is_dir(), t.is_file()),
                None if entry_is_symlink => match fs::metadata(&resolved_entry) {
                    Ok(m) => (m.is_dir(), m.is_file()),
                    Err(_) => return Vec::new(),
                },
                None => match entry.file_type() {
                    Ok(t) => (t.is_dir(), t.is_file()),
                    Err(_) => return Vec::new(),
                },
            };
            if is_dir {
                if listed.is_some() {
                    paths::note_listed_folder(&resolved_entry, &resolved_entry);
                }
                self.rules_depth += 1;
                let below = self.process_md_rules(&resolved_entry, layer, processed, include_external, conditional, visited, base_dir);
                self.rules_depth -= 1;
                out.extend(below);
            } else if is_file && name.ends_with(".md") {
                let files = self.process_memory_file(&resolved_entry, layer, processed, include_external, 0, None, true);
                for f in files {
                    if f.globs.is_some() == conditional {
                        out.push(f);
                    } else if !conditional && self.record {
                        let globs = f.globs.clone().unwrap_or_default();
                        self.skipped.push(SkippedFile {
                            path: f.path.clone(),
                            layer,
                            parent: f.parent.clone(),
                            reason: SkipReason::Conditional,
                        });
                        self.conditional.push(ConditionalRule {
                            path: f.path,
                            layer,
                            globs,
                            base_dir: PathBuf::from(base_dir),
                            parent: f.parent,
                        });
                    }
                }
            }
        }
        out
    }

    fn rules(&mut self, dir: &str, layer: Layer, processed: &mut Processed, include_external: bool, conditional: bool) -> Vec<LoadedFile> {
        let base = match layer {
            Layer::Project => paths::dirname(&paths::dirname(dir)),
            _ => self.cwd.clone(),
        };
        self.process_md_rules(dir, layer, processed, include_external, conditional, &mut HashSet::new(), &base)
    }

    /// `processConditionedMdRules`: conditional rules whose globs match `target`.
    fn conditioned_rules(&mut self, target: &str, rules_dir: &str, layer: Layer, processed: &mut Processed, include_external: bool) -> Vec<LoadedFile> {
        let files = self.rules(rules_dir, layer, processed, include_external, true);
        let base = match layer {
            Layer::Project => paths::dirname(&paths::dirname(rules_dir)),
            _ => self.cwd.clone(),
        };
        files
            .into_iter()
            .filter(|f| {
                let Some(globs) = f.globs.as_deref().filter(|g| !g.is_empty()) else { return false };
                let rel = paths::relative(&base, target);
                if rel.is_empty() || rel.starts_with("..") || rel.starts_with('/') {
                    return false;
                }
                gitignore_matches(globs, &rel)
            })
            .collect()
    }

    /// Records existing files that a disabled source or the nested-worktree rule keeps out.
    fn skip_candidates(&mut self, candidates: &[(String, Layer)], reason: SkipReason) {
        for (path, layer) in candidates {
            if Path::new(path).is_dir() {
                if self.record && fs::read_dir(path).is_ok_and(|mut d| d.next().is_some()) {
                    self.skipped.push(SkippedFile { path: PathBuf::from(path), layer: *layer, parent: None, reason: reason.clone() });
                }
            } else {
                self.skip(path, *layer, None, reason.clone());
            }
        }
    }
}

/// `name` in composed form (NFC) when that differs from how it is spelled.
fn composed_spelling(name: &str) -> Option<String> {
    use unicode_normalization::UnicodeNormalization;
    if unicode_normalization::is_nfc_quick(name.chars()) == unicode_normalization::IsNormalized::Yes {
        return None;
    }
    let composed: String = name.nfc().collect();
    (composed != name).then_some(composed)
}

fn loaded(path: &str, layer: Layer, parent: Option<&str>, is_rule: bool, raw_bytes: usize, p: content::Parsed) -> LoadedFile {
    LoadedFile {
        path: PathBuf::from(path),
        layer,
        chars: utf16_len(&p.content),
        tokens: estimate_tokens(&p.content),
        content: p.content,
        parent: parent.map(PathBuf::from),
        globs: p.globs,
        is_rule,
        raw_bytes,
        content_differs_from_disk: p.content_differs_from_disk,
        truncated: p.truncated,
        unverified: None,
    }
}

/// npm `ignore().add(globs).ignores(rel)`: gitignore semantics, where a pattern matching a
/// parent folder also matches everything inside it.
fn gitignore_matches(globs: &[String], rel: &str) -> bool {
    let root = Path::new("/__mneme_rule_base__");
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    // Claude Code matches `paths:` globs without regard to case (family `yaml_paths`).
    builder.case_insensitive(true).expect("a static setting");
    for g in globs {
        // npm `ignore` (like git) has no `{a,b}` alternation while the ignore crate does:
        // braces left after Claude Code's own brace expansion must stay literal.
        let literal = g.replace('{', "\\{").replace('}', "\\}");
        // A pattern that cannot be parsed matches nothing.
        let _ = builder.add_line(None, &literal);
    }
    let Ok(gi) = builder.build() else { return false };
    // npm `ignore` tests the folders on the way first, top down, and an ignored folder decides
    // for everything inside it (a later `!` cannot bring a file back); otherwise the path's own
    // last matching pattern decides. (The ignore crate's `matched_path_or_any_parents` asks in
    // the other order, and also asks the empty path above a one-segment `rel`, which `*/`
    // matches.)
    let segments: Vec<&str> = rel.split('/').collect();
    for depth in 1..segments.len() {
        let dir = segments[..depth].join("/");
        if gi.matched(root.join(&dir), true).is_ignore() {
            return true;
        }
    }
    gi.matched(root.join(rel), false).is_ignore()
}

/// Directories from `start` up to, not including, the filesystem root; root first.
fn ancestors_root_first(start: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut current = start.to_string();
    while !paths::is_root(&current) && !current.is_empty() && current != "." {
        dirs.push(current.clone());
        current = paths::dirname(&current);
    }
    dirs.reverse();
    dirs
}

/// `getMemoryFiles()`.
pub fn load(opts: &LoadOptions) -> Context {
    mneme_store::git::with_memo(|| paths::with_realpath_cache(|| load_uncached(opts)))
}

fn load_uncached(opts: &LoadOptions) -> Context {
    if opts.disabled {
        return Context::default();
    }
    let mut w = Walker::new(opts, true);
    let mut processed = Processed::new();
    let mut files: Vec<LoadedFile> = Vec::new();
    let include_external = opts.include_external;
    let managed = path_str(&opts.managed_dir);
    let config = path_str(&opts.config_home);

    files.extend(w.process_memory_file(&paths::join(&managed, "CLAUDE.md"), Layer::Managed, &mut processed, include_external, 0, None, false));
    files.extend(w.rules(&paths::join(&managed, ".claude/rules"), Layer::Managed, &mut processed, include_external, false));

    let user_md = paths::join(&config, "CLAUDE.md");
    let user_rules = paths::join(&config, "rules");
    if opts.sources.user {
        // User memory may always include files outside the project.
        files.extend(w.process_memory_file(&user_md, Layer::User, &mut processed, true, 0, None, false));
        files.extend(w.rules(&user_rules, Layer::User, &mut processed, true, false));
    } else {
        w.skip_candidates(&[(user_md, Layer::User), (user_rules, Layer::User)], SkipReason::SourceDisabled);
    }

    let cwd = w.cwd.clone();
    // The working folder is normally given as its realpath already (the api resolves it):
    // then no folder above it needs an `lstat` to learn its own realpath.
    if mneme_store::paths::realpath(Path::new(&cwd)).is_ok_and(|real| path_str(&real) == cwd) {
        paths::seed_realpath_chain(&cwd);
    }
    let git_root = mneme_store::git::find_git_root(Path::new(&cwd)).map(|p| path_str(&p));
    let canonical = mneme_store::git::find_canonical_git_root(Path::new(&cwd)).map(|p| path_str(&p));
    let nested_worktree = match (&git_root, &canonical) {
        (Some(g), Some(c)) => paths::normalize(g) != paths::normalize(c) && paths::path_in_working_path(g, c, &w.home),
        _ => false,
    };
    let ancestors = ancestors_root_first(&cwd);
    // From 2.1.281 AGENTS.md stands in for CLAUDE.md in projects that have none on the way
    // from the filesystem root to the working folder (or next to it, when the user asks).
    let agents_md = opts.profile.agents_md
        && match opts.agents_md {
            AgentsMd::Off => false,
            AgentsMd::Always => true,
            AgentsMd::WithoutClaudeMd => !ancestors.iter().any(|d| has_claude_md(d)),
        };
    for dir in ancestors {
        let skip_project = nested_worktree
            && canonical.as_deref().is_some_and(|c| paths::path_in_working_path(&dir, c, &w.home))
            && !git_root.as_deref().is_some_and(|g| paths::path_in_working_path(&dir, g, &w.home));
        let project_md = paths::join(&dir, "CLAUDE.md");
        let dot_md = paths::join(&dir, ".claude/CLAUDE.md");
        let rules_dir = paths::join(&dir, ".claude/rules");
        if opts.sources.project && !skip_project {
            // Asked once, so a missing `.claude` answers for everything below it.
            paths::folder_present(&paths::join(&dir, ".claude"));
            files.extend(w.process_memory_file(&project_md, Layer::Project, &mut processed, include_external, 0, None, false));
            files.extend(w.process_memory_file(&dot_md, Layer::Project, &mut processed, include_external, 0, None, false));
            files.extend(w.rules(&rules_dir, Layer::Project, &mut processed, include_external, false));
            if agents_md {
                for name in ["AGENTS.md", ".claude/AGENTS.md"] {
                    files.extend(w.process_memory_file(&paths::join(&dir, name), Layer::Project, &mut processed, include_external, 0, None, false));
                }
            }
        } else {
            let reason = if opts.sources.project { SkipReason::NestedWorktree } else { SkipReason::SourceDisabled };
            w.skip_candidates(&[(project_md, Layer::Project), (dot_md, Layer::Project), (rules_dir, Layer::Project)], reason);
        }
        let local_md = paths::join(&dir, "CLAUDE.local.md");
        if opts.sources.local {
            files.extend(w.process_memory_file(&local_md, Layer::Local, &mut processed, include_external, 0, None, false));
        } else {
            w.skip_candidates(&[(local_md, Layer::Local)], SkipReason::SourceDisabled);
        }
    }

    if opts.additional_dirs_claude_md {
        // `--add-dir` is an explicit user action: the projectSettings gate is not checked.
        for dir in &opts.additional_dirs {
            let dir = path_str(dir);
            files.extend(w.process_memory_file(&paths::join(&dir, "CLAUDE.md"), Layer::Project, &mut processed, include_external, 0, None, false));
            files.extend(w.process_memory_file(&paths::join(&dir, ".claude/CLAUDE.md"), Layer::Project, &mut processed, include_external, 0, None, false));
            files.extend(w.rules(&paths::join(&dir, ".claude/rules"), Layer::Project, &mut processed, include_external, false));
            if opts.sources.local {
                files.extend(w.process_memory_file(&paths::join(&dir, "CLAUDE.local.md"), Layer::Local, &mut processed, include_external, 0, None, false));
            }
        }
    }

    for (entrypoint, layer) in [(&opts.auto_mem_entrypoint, Layer::AutoMem), (&opts.team_mem_entrypoint, Layer::TeamMem)] {
        let Some(entrypoint) = entrypoint else { continue };
        let given = if layer == Layer::AutoMem { opts.auto_mem_content.as_deref() } else { None };
        let index = match given {
            Some(text) => w.given_memory_index(&path_str(entrypoint), text, &mut processed),
            None => w.memory_index(&path_str(entrypoint), layer, &mut processed),
        };
        files.extend(index);
    }

    let mut looked_in = Vec::new();
    let nested_candidates = nested_candidates(opts, &cwd, &files, &mut looked_in);
    // A Cowork session of a release that asks marks the managed files its own account could
    // have written (`managed`); every other session sends them as the organization's.
    if opts.cowork_session && opts.profile.unverified_managed_files {
        for f in files.iter_mut().filter(|f| f.layer == Layer::Managed) {
            f.unverified = crate::managed::why_session_could_write(&f.path, &opts.managed_dir);
        }
    }
    Context { files, skipped: w.skipped, conditional: w.conditional, nested_candidates, missing: w.missing, looked_in }
}

impl Walker {
    /// The auto-memory index given as text instead of read from `path` (see
    /// [`LoadOptions::auto_mem_content`]): nothing for an empty text, else the text truncated
    /// as MEMORY.md is, under the file's path, whether or not the file exists.
    fn given_memory_index(&mut self, path: &str, text: &str, processed: &mut Processed) -> Option<LoadedFile> {
        if text.is_empty() {
            return None;
        }
        let given_bytes = text.len();
        let unified;
        let text = if self.profile.memory_index_crlf_to_lf && text.contains("\r\n") {
            unified = text.replace("\r\n", "\n");
            unified.as_str()
        } else {
            text
        };
        let t = truncate_entrypoint_with(text, self.profile.truncation_note);
        let truncated = t.was_truncated();
        let normalized = paths::normalize(path);
        if processed.contains(&normalized) {
            self.skip(path, Layer::AutoMem, None, SkipReason::AlreadyLoaded);
            return None;
        }
        processed.insert(normalized);
        if t.content.is_empty() || (self.profile.memory_index_tags.is_some() && crate::holds_nothing_visible(&t.content)) {
            self.skip(path, Layer::AutoMem, None, SkipReason::Empty);
            return None;
        }
        // As for the file (`content::parse_memory_file_content`): a lone CR is sent as LF after
        // the cut (captured from 2.1.283, 2.1.284 and 2.1.332 with the index in settings `env`).
        let content = if self.profile.memory_index_crlf_to_lf && t.content.contains('\r') { t.content.replace('\r', "\n") } else { t.content };
        let parsed = content::Parsed { content, globs: None, content_differs_from_disk: true, truncated, include_paths: Vec::new() };
        Some(loaded(path, Layer::AutoMem, None, false, given_bytes, parsed))
    }

    /// MEMORY.md (auto or team memory): read without include processing, frontmatter and
    /// comments stripped, truncated; added unless its path was already loaded.
    fn memory_index(&mut self, path: &str, layer: Layer, processed: &mut Processed) -> Option<LoadedFile> {
        let (raw, raw_bytes) = match read_text(path, size_cap(&self.profile)) {
            Ok(r) => r,
            // Newer releases write a missing auto-memory index from the topic files before
            // loading it; nothing is on disk yet, hence 0 bytes.
            Err(ReadError::Missing) if layer == Layer::AutoMem && self.profile.writes_missing_memory_index => {
                let folder = Path::new(path).parent()?;
                (mneme_store::memdir::generated_index(folder, &self.profile)?, 0)
            }
            Err(ReadError::Missing) => return None,
            Err(ReadError::TooLarge(bytes)) => {
                self.skip(path, layer, None, SkipReason::TooLarge { bytes });
                return None;
            }
            Err(ReadError::Other(message)) => {
                self.skipped.push(SkippedFile { path: PathBuf::from(path), layer, parent: None, reason: SkipReason::Unreadable { message } });
                return None;
            }
        };
        let parsed = match content::parse_memory_file_content(&raw, path, Truncation::Entrypoint, None, &self.home, &self.profile) {
            Ok(p) => p,
            Err(ParseFailure::NonTextExtension) => {
                self.skip(path, layer, None, SkipReason::NonTextExtension);
                return None;
            }
            Err(ParseFailure::Lexer(e)) => {
                self.skip(path, layer, None, lexer_refusal(&e));
                return None;
            }
        };
        let normalized = paths::normalize(path);
        if processed.contains(&normalized) {
            self.skip(path, layer, None, SkipReason::AlreadyLoaded);
            return None;
        }
        processed.insert(normalized);
        // Claude Code keeps an empty index in its list but renders nothing for it.
        // Releases that clean the index drop one with nothing visible left (from 2.1.284).
        if parsed.content.is_empty() || (layer == Layer::AutoMem && self.profile.memory_index_tags.is_some() && crate::holds_nothing_visible(&parsed.content)) {
            self.skip(path, layer, None, SkipReason::Empty);
            return None;
        }
        Some(loaded(path, layer, None, false, raw_bytes, parsed))
    }
}

const NESTED_SKIP_DIRS: [&str; 3] = [".git", "node_modules", "target"];

/// Folders a package manager or tool fills with thousands of folders of other people's code and
/// caches. Claude Code skips none of them by name when it loads nested CLAUDE.md files, so the
/// nested walk lists them, but after every other folder: walked in name order, a big `.venv`
/// spent the walk's 5,000-folder budget before `src` was reached. The api does not watch their
/// listing either (`context_cache`), to spare inotify watches.
pub const TOOL_FOLDERS: [&str; 16] = [
    ".venv",
    "venv",
    "site-packages",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".next",
    ".nuxt",
    ".svelte-kit",
    ".gradle",
    ".terraform",
    "bower_components",
    ".direnv",
];

/// Whether `dir` is one of [`TOOL_FOLDERS`] by name, or a Python virtual environment by any
/// name (it holds `pyvenv.cfg`).
pub fn is_tool_folder(dir: &Path) -> bool {
    is_tool_folder_name(dir) || dir.join("pyvenv.cfg").is_file()
}

fn is_tool_folder_name(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| TOOL_FOLDERS.iter().any(|t| n == *t))
}
const NESTED_MAX_DEPTH: usize = 8;
const NESTED_MAX_DIRS: usize = 5_000;

/// Memory files in folders below the cwd that would attach lazily (best-effort listing).
fn nested_candidates(opts: &LoadOptions, cwd: &str, eager: &[LoadedFile], listed: &mut Vec<PathBuf>) -> Vec<PathBuf> {
    let eager: HashSet<&Path> = eager.iter().map(|f| f.path.as_path()).collect();
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut push = |p: PathBuf, out: &mut Vec<PathBuf>| {
        if !eager.contains(p.as_path()) && seen.insert(p.clone()) {
            out.push(p);
        }
    };
    let mut visited_dirs = 0usize;
    // Asked only when some folder below has a rules folder: most walks never need it, and a
    // deep cwd would cost a readlink per level through `fs::canonicalize`.
    let real_cwd = std::cell::OnceCell::new();
    let real_cwd = || real_cwd.get_or_init(|| mneme_store::paths::realpath(Path::new(cwd)).unwrap_or_else(|_| PathBuf::from(cwd)));
    // Depth-first, sorted, so the listing is stable; the folders tools fill once the rest is
    // done, in the order met.
    let mut stack: Vec<(PathBuf, usize)> = vec![(PathBuf::from(cwd), 0)];
    let mut later: std::collections::VecDeque<(PathBuf, usize)> = std::collections::VecDeque::new();
    while let Some((dir, depth)) = stack.pop().or_else(|| later.pop_front()) {
        visited_dirs += 1;
        if visited_dirs > NESTED_MAX_DIRS {
            break;
        }
        if depth > 0 {
            let mut names: Vec<&str> = Vec::new();
            if opts.sources.project {
                names.extend(["CLAUDE.md", ".claude/CLAUDE.md"]);
            }
            if opts.sources.local {
                names.push("CLAUDE.local.md");
            }
            for n in names {
                let p = dir.join(n);
                if p.is_file() {
                    push(p, &mut out);
                }
            }
            // A rules folder that is a link out of the project (`sub/.claude/rules -> /`) is
            // not listed: it would list the whole file system. Every folder listed counts
            // against the same budget as the walk.
            let rules_dir = dir.join(".claude/rules");
            let inside = || mneme_store::paths::realpath(&rules_dir).is_ok_and(|real| real.starts_with(real_cwd()));
            if rules_dir.is_dir() && inside() {
                let mut rules = Vec::new();
                collect_rule_files(&rules_dir, 0, &mut rules, &mut visited_dirs);
                for r in rules {
                    push(r, &mut out);
                }
            }
        }
        if depth >= NESTED_MAX_DEPTH {
            // Not listed, but looked into for candidates above: one appearing here counts.
            listed.push(dir.clone());
            continue;
        }
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        listed.push(dir.clone());
        let mut subdirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                !NESTED_SKIP_DIRS.contains(&n.as_ref()) && n != ".claude"
            })
            .map(|e| e.path())
            .collect();
        subdirs.sort();
        // A virtual environment by another name is looked for where they are made, in the
        // working folder (a `pyvenv.cfg` looked for in every folder would double the walk's cost).
        let (tools, own): (Vec<PathBuf>, Vec<PathBuf>) =
            subdirs.into_iter().partition(|d| if depth == 0 { is_tool_folder(d) } else { is_tool_folder_name(d) });
        later.extend(tools.into_iter().map(|d| (d, depth + 1)));
        for d in own.into_iter().rev() {
            stack.push((d, depth + 1));
        }
    }
    out
}

fn collect_rule_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>, visited_dirs: &mut usize) {
    if depth > NESTED_MAX_DEPTH || *visited_dirs > NESTED_MAX_DIRS {
        return;
    }
    *visited_dirs += 1;
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        // Plain file types only: symlink loops in a rules folder cannot trap this walk.
        match e.file_type() {
            Ok(t) if t.is_dir() => collect_rule_files(&p, depth + 1, out, visited_dirs),
            Ok(t) if t.is_file() && p.extension().is_some_and(|x| x == "md") => out.push(p),
            _ => {}
        }
    }
}

/// `getNestedMemoryAttachmentsForFile` for each target in order, deduplicated like
/// `memoryFilesToAttachments`: a file is attached once (`loadedNestedMemoryPaths`) and never
/// when it is already in the read-file state (every eagerly loaded file, and the targets
/// themselves, which the tool just read).
pub fn touched(opts: &LoadOptions, already_loaded: &Context, targets: &[PathBuf]) -> Vec<LoadedFile> {
    paths::with_realpath_cache(|| touched_uncached(opts, already_loaded, targets))
}

fn touched_uncached(opts: &LoadOptions, already_loaded: &Context, targets: &[PathBuf]) -> Vec<LoadedFile> {
    if opts.disabled {
        return Vec::new();
    }
    let mut w = Walker::new(opts, false);
    let cwd = w.cwd.clone();
    let home = w.home.clone();
    let targets: Vec<String> = targets.iter().map(|t| paths::expand_path(&path_str(t), &cwd, &home)).collect();
    // What counts as already read: the start-up files, from the release that stopped attaching
    // them again (docs/claude-code-versions.md, row 41), and the Reads' own targets.
    let mut read_file_state: HashSet<String> = if opts.profile.reads_skip_startup_files {
        already_loaded.files.iter().map(|f| path_str(&f.path)).collect()
    } else {
        HashSet::new()
    };
    read_file_state.extend(targets.iter().cloned());
    let mut attached: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let managed_rules = paths::join(&path_str(&opts.managed_dir), ".claude/rules");
    let user_rules = paths::join(&path_str(&opts.config_home), "rules");

    for target in &targets {
        if !allowed_working_path(opts, &cwd, &home, target) {
            continue;
        }
        let mut processed = Processed::new();
        let mut found = Vec::new();
        // getManagedAndUserConditionalRules
        found.extend(w.conditioned_rules(target, &managed_rules, Layer::Managed, &mut processed, false));
        if opts.sources.user {
            found.extend(w.conditioned_rules(target, &user_rules, Layer::User, &mut processed, true));
        }
        let (nested_dirs, cwd_level_dirs) = directories_to_process(target, &cwd);
        // From 2.1.211 a project's rules (every folder's, conditional or not) are attached only
        // with the project source on, as its CLAUDE.md files always were (docs/claude-code-versions.md,
        // row 23).
        let project_rules = opts.sources.project || !opts.profile.project_rules_need_project_source;
        for dir in nested_dirs {
            // getMemoryFilesForNestedDirectory
            if opts.sources.project {
                found.extend(w.process_memory_file(&paths::join(&dir, "CLAUDE.md"), Layer::Project, &mut processed, false, 0, None, false));
                found.extend(w.process_memory_file(&paths::join(&dir, ".claude/CLAUDE.md"), Layer::Project, &mut processed, false, 0, None, false));
            }
            if opts.sources.local {
                found.extend(w.process_memory_file(&paths::join(&dir, "CLAUDE.local.md"), Layer::Local, &mut processed, false, 0, None, false));
            }
            if !project_rules {
                continue;
            }
            let rules_dir = paths::join(&dir, ".claude/rules");
            // Unconditional rules use a copy so the conditional pass can still see the files.
            let mut unconditional = processed.clone();
            found.extend(w.rules(&rules_dir, Layer::Project, &mut unconditional, false, false));
            found.extend(w.conditioned_rules(target, &rules_dir, Layer::Project, &mut processed, false));
            processed.extend(unconditional);
        }
        // getConditionalRulesForCwdLevelDirectory.
        if project_rules {
            for dir in cwd_level_dirs {
                let rules_dir = paths::join(&dir, ".claude/rules");
                found.extend(w.conditioned_rules(target, &rules_dir, Layer::Project, &mut processed, false));
            }
        }
        for f in found {
            let key = path_str(&f.path);
            if attached.contains(&key) || read_file_state.contains(&key) {
                continue;
            }
            attached.insert(key.clone());
            read_file_state.insert(key);
            out.push(f);
        }
    }
    // A managed conditional rule is judged as the start-up files are (2.1.337: the rules walk
    // marks a managed file before keeping the conditional or the unconditional ones, and the
    // attachment carries the mark).
    if opts.cowork_session && opts.profile.unverified_managed_files {
        for f in out.iter_mut().filter(|f| f.layer == Layer::Managed) {
            f.unverified = crate::managed::why_session_could_write(&f.path, &opts.managed_dir);
        }
    }
    out
}

/// The names that make a folder a CLAUDE.md folder for the AGENTS.md plugin.
const CLAUDE_NAMES: [&str; 3] = ["CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md"];
/// The names the AGENTS.md plugin reads in a folder, in this order.
const AGENTS_NAMES: [&str; 2] = ["AGENTS.md", ".claude/AGENTS.md"];

fn has_claude_md(dir: &str) -> bool {
    // `.claude` first: the load asks for it anyway, and when it is missing `.claude/CLAUDE.md`
    // needs no lookup. What is found missing here is not looked for again by the load.
    paths::folder_present(&paths::join(dir, ".claude"));
    CLAUDE_NAMES.iter().any(|f| paths::file_present(&paths::join(dir, f)))
}

/// What the built-in AGENTS.md plugin adds after each `Read` (releases with `agents_md`), in
/// the order of `targets`. Unlike nested CLAUDE.md files, these come from the plugin's hook on
/// the Read tool, so Claude Code sends them in a separate message (see `render_touched`).
///
/// The rules, as measured against 2.1.281-2.1.332 (docs/claude-code-versions.md, row 8):
/// only files strictly below the working folder count; the folders from just below the working
/// folder down to the read file's folder are read root first, `AGENTS.md` then
/// `.claude/AGENTS.md`, each followed by its `@include`s. In the default mode nothing is added
/// when a CLAUDE.md is on the way to the working folder, and a folder that has its own
/// CLAUDE.md keeps only that. A file is left out when it is already in the context (by path),
/// when its trimmed text equals that of a project file in the context or a CLAUDE.md on the
/// way, when an earlier read this turn already added it, or when it is the file being read
/// (which then also counts as given).
pub fn agents_md_hook(opts: &LoadOptions, already_loaded: &Context, targets: &[PathBuf]) -> Vec<HookContext> {
    paths::with_realpath_cache(|| agents_md_hook_uncached(opts, already_loaded, targets))
}

fn agents_md_hook_uncached(opts: &LoadOptions, already_loaded: &Context, targets: &[PathBuf]) -> Vec<HookContext> {
    if opts.disabled || !opts.sources.project || !opts.profile.agents_md || opts.agents_md == AgentsMd::Off {
        return Vec::new();
    }
    let mut w = Walker::new(opts, false);
    let cwd = w.cwd.clone();
    let home = w.home.clone();
    let fallback = opts.agents_md == AgentsMd::WithoutClaudeMd;
    if fallback && ancestors_root_first(&cwd).iter().any(|d| has_claude_md(d)) {
        return Vec::new();
    }
    let below_cwd = format!("{}/", cwd.trim_end_matches('/'));
    let in_context_paths: HashSet<String> = already_loaded.files.iter().map(|f| paths::normalize(&path_str(&f.path))).collect();
    let in_context_texts: HashSet<String> = already_loaded
        .files
        .iter()
        .filter(|f| matches!(f.layer, Layer::Project | Layer::Local))
        .map(|f| js_trim(&f.content).to_string())
        .filter(|t| !t.is_empty())
        .collect();
    let mut given: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for target in targets {
        let target = paths::expand_path(&path_str(target), &cwd, &home);
        // The hook runs only after a Read that succeeded, and only for files below the cwd.
        if !allowed_working_path(opts, &cwd, &home, &target) || !target.starts_with(&below_cwd) {
            continue;
        }
        let mut dirs = Vec::new();
        let mut dir = paths::dirname(&target);
        while dir.starts_with(&below_cwd) {
            dirs.push(dir.clone());
            dir = paths::dirname(&dir);
        }
        dirs.reverse();
        let mut seen = in_context_paths.clone();
        let mut texts = in_context_texts.clone();
        let mut found = Vec::new();
        for dir in &dirs {
            let mut processed = Processed::new();
            let claude: Vec<LoadedFile> = CLAUDE_NAMES
                .iter()
                .flat_map(|name| w.process_memory_file(&paths::join(dir, name), Layer::Project, &mut processed, false, 0, None, false))
                .collect();
            let has_claude = has_claude_md(dir);
            for f in &claude {
                seen.insert(paths::normalize(&path_str(&f.path)));
                let t = js_trim(&f.content);
                if !t.is_empty() {
                    texts.insert(t.to_string());
                }
            }
            if fallback && has_claude {
                continue;
            }
            for name in AGENTS_NAMES {
                found.extend(w.process_memory_file(&paths::join(dir, name), Layer::Project, &mut processed, false, 0, None, false));
            }
        }
        let target_key = paths::normalize(&target);
        let mut files = Vec::new();
        for f in found {
            let key = paths::normalize(&path_str(&f.path));
            let text = js_trim(&f.content);
            if seen.contains(&key) || (!text.is_empty() && texts.contains(text)) || given.contains(&key) {
                continue;
            }
            seen.insert(key.clone());
            given.insert(key.clone());
            if key != target_key {
                files.push(f);
            }
        }
        if !files.is_empty() {
            out.push(HookContext { read: PathBuf::from(&target), files });
        }
    }
    out
}

/// `pathInAllowedWorkingPath`: the target (and its realpath) must lie in the cwd or an
/// `--add-dir` directory (or their realpaths).
fn allowed_working_path(opts: &LoadOptions, cwd: &str, home: &str, target: &str) -> bool {
    let mut working: Vec<String> = vec![cwd.to_string()];
    working.extend(opts.additional_dirs.iter().map(|d| path_str(d)));
    let resolved_working: Vec<String> = working
        .iter()
        .flat_map(|w| {
            let (real, _) = paths::safe_resolve_path(w);
            if real != *w { vec![w.clone(), real] } else { vec![w.clone()] }
        })
        .collect();
    let mut to_check = vec![target.to_string()];
    let (real, _) = paths::safe_resolve_path(target);
    if real != target {
        to_check.push(real);
    }
    to_check.iter().all(|p| resolved_working.iter().any(|w| paths::path_in_working_path(p, w, home)))
}

/// `getDirectoriesToProcess`: the folders strictly below the cwd down to the target's folder
/// (parent first), and the cwd's ancestors (root first). Prefix tests are plain string
/// prefixes, as in Claude Code.
fn directories_to_process(target: &str, cwd: &str) -> (Vec<String>, Vec<String>) {
    let mut dir = paths::dirname(&paths::resolve(cwd, target));
    if !dir.starts_with(cwd) {
        if let Ok(real) = mneme_store::paths::realpath(Path::new(&dir)) {
            let real = path_str(&real);
            if real.starts_with(cwd) {
                dir = real;
            }
        }
    }
    let mut nested = Vec::new();
    let mut o = dir;
    while o != cwd && !paths::is_root(&o) && o != "." {
        if o.starts_with(cwd) {
            nested.push(o.clone());
        }
        o = paths::dirname(&o);
    }
    nested.reverse();
    (nested, ancestors_root_first(cwd))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded answers of npm `ignore` 7.0.17 for 1,500 generated glob sets and 4,500 paths
    /// (tests/data/ignore_oracle.js made them).
    #[test]
    fn agrees_with_recorded_npm_ignore_answers() {
        let data = include_str!("../tests/data/ignore_oracle.json");
        let cases: Vec<(Vec<String>, Vec<String>, Vec<bool>)> = serde_json::from_str(data).expect("oracle parses");
        let mut differences = Vec::new();
        let (mut total, mut ignored) = (0, 0);
        for (globs, paths, answers) in &cases {
            for (rel, want) in paths.iter().zip(answers) {
                total += 1;
                ignored += usize::from(*want);
                if gitignore_matches(globs, rel) != *want {
                    differences.push(format!("{globs:?} vs {rel:?}: npm ignore says {want}"));
                }
            }
        }
        assert!(differences.is_empty(), "{} of {total} differ:\n{}", differences.len(), differences[..differences.len().min(20)].join("\n"));
        assert!(ignored * 5 > total && ignored * 5 < total * 4, "{ignored} of {total} match");
    }

    /// Expected values from npm `ignore` 7 (`ignore().add(globs).ignores(rel)`).
    #[test]
    fn gitignore_semantics_agree_with_npm_ignore() {
        let table: &[(&[&str], &str, bool)] = &[
            (&["src/**/*.ts"], "src/app.ts", true),
            (&["src/**/*.ts"], "src/a/b/app.ts", true),
            (&["src/**/*.ts"], "lib/app.ts", false),
            (&["**/*.py"], "tool.py", true),
            (&["*.py"], "deep/x/tool.py", true),
            (&["src"], "src/x/y.ts", true),
            (&["docs/"], "docs/a.md", true),
            (&["/src"], "lib/src/x.ts", false),
            (&["*.py", "!tool.py"], "tool.py", false),
            (&["docs"], "docs", true),
            (&["a/*.rs"], "a/b/c.rs", false),
            (&["**/test/**"], "x/test/y.ts", true),
            (&["*.{ts,tsx}"], "a.ts", false),
            (&["src/*"], "src/a/b.ts", true),
            (&["lib/*.rs"], "lib/m.rs", true),
            (&["*.{ts,tsx}"], "a.{ts,tsx}", true),
            (&["a", "!a/b"], "a/b", true),
            (&["src", "!src/x.ts"], "src/x.ts", true),
            (&["*.ts", "!x.ts"], "src/x.ts", false),
            (&["a/**", "!a/b"], "a/b", false),
            (&["a/**", "!a/b/**"], "a/b/c", true),
            (&["*/"], "a", false),
            (&["*/"], "a/b", true),
            (&["**/"], "a", false),
        ];
        for (globs, rel, want) in table {
            let globs: Vec<String> = globs.iter().map(|s| s.to_string()).collect();
            assert_eq!(gitignore_matches(&globs, rel), *want, "{globs:?} vs {rel}");
        }
    }

    #[test]
    fn directories_between_cwd_and_target() {
        let (nested, level) = directories_to_process("/r/a/b/f.txt", "/r");
        assert_eq!(nested, vec!["/r/a", "/r/a/b"]);
        assert_eq!(level, vec!["/r"]);
        let (nested, _) = directories_to_process("/r/f.txt", "/r");
        assert!(nested.is_empty());
        // A plain string prefix: a sibling folder sharing the prefix counts.
        let (nested, _) = directories_to_process("/tmp/repo2/x/f", "/tmp/repo");
        assert_eq!(nested, vec!["/tmp/repo2", "/tmp/repo2/x"]);
    }
}
