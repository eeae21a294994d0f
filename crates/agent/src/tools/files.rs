//! `Read`, `Edit` and `Write`, with Claude Code's validation order and results; the error and
//! notice texts are Mneme's own (`crate::messages`).

use super::{bool_arg, num_arg, str_arg, Failure, ReadState, ToolResult, Tools};
use crate::messages::{self, MODIFIED, NOT_READ, UNCHANGED};
use crate::overlay::Seen;
use crate::schema::{opt, opt_false, req, Lower, Param, Ty};
use mneme_core::text::format_file_size;
use mneme_store::memdir::Memdir;
use serde_json::{Map, Value};
use std::path::Path;

pub(super) const READ_PARAMS: &[Param] = &[
    req("file_path", Ty::Str, "Absolute path of the file"),
    opt("offset", Ty::Int(Lower::AtLeastZero), "First line to return (counting from 1); only for files too long to read whole"),
    opt("limit", Ty::Int(Lower::AboveZero), "How many lines to return; only for files too long to read whole"),
    // Every release offers `pages` (PDF pages). Memory agents read notes: a text file's Read
    // ignores it, as Claude Code's does.
    opt("pages", Ty::Str, "Pages of a PDF to return (\"3\", \"1-5\"); a text file is read as if it were not given"),
    // From 2.1.296 (`Profile::read_allow_large`; left out of the schema before).
    opt("allow_large", Ty::Bool, "true: return a file, or a range of one, above the usual size limits, as long as it stays under a larger cap; only when you need all of it"),
];

pub(super) const EDIT_PARAMS: &[Param] = &[
    req("file_path", Ty::Str, "Absolute path of the file to change"),
    req("old_string", Ty::Str, "The exact text to find"),
    req("new_string", Ty::Str, "What to put in its place (must differ from old_string)"),
    opt_false("replace_all", "Change every occurrence of old_string instead of exactly one (default false)"),
];

pub(super) const WRITE_PARAMS: &[Param] = &[
    req("file_path", Ty::Str, "Absolute path of the file to create or replace"),
    req("content", Ty::Str, "The file's complete new content"),
];

// Mneme's own descriptions (data/tools/), written from what each tool does here.
pub(super) const READ_DESCRIPTION: &str = include_str!("../../data/tools/Read.txt");
pub(super) const EDIT_DESCRIPTION: &str = include_str!("../../data/tools/Edit.txt");
pub(super) const WRITE_DESCRIPTION: &str = include_str!("../../data/tools/Write.txt");

/// Appended to successful Edit/Write results from 2.1.128 (`Profile::edits_say_state_is_current`).
const STATE_IS_CURRENT: &str = " (file state is current in your context \u{2014} no need to Read it back)";
/// Whole-file reads above this many bytes are refused (Claude Code's default `maxSizeBytes`).
const MAX_READ_BYTES: usize = 262_144;
/// Claude Code's default token cap for one Read.
const MAX_READ_TOKENS: usize = 25_000;
/// The token cap of a Read with `allow_large`. Claude Code lifts its limits up to the room left
/// in the model's context; Mneme does not know the provider's window or what the run has used,
/// so it takes half of the smallest window its providers' models have (200,000 tokens).
const MAX_ALLOW_LARGE_TOKENS: usize = 100_000;
const DAY_MS: u128 = 86_400_000;
/// The largest file an Edit or Write may leave. Claude Code has no such cap, but a run is
/// Mneme's own process: without one, three replace_all Edits of one character by two thousand
/// grow a file to gigabytes and take the app down. Memory files are notes (a Read shows at
/// most 256 KiB of one), so 4 MiB refuses nothing a real run writes.
const MAX_WRITE_BYTES: usize = 4 << 20;

/// The most a run may hold written at once, over all its files. Each file is capped at
/// [`MAX_WRITE_BYTES`], but a run may write many: a Write of 2,000 characters and one
/// replace_all Edit make a megabyte, so a hostile transcript steering a dream through its 100
/// turns could stage gigabytes (each kept more than once: the pending file, what the run last
/// read of it, the changeset, the dream's record) and take the app down. 32 MiB is thousands
/// of memory files.
const MAX_RUN_BYTES: usize = 32 << 20;

/// Refuses a result larger than [`MAX_WRITE_BYTES`], before it is built.
fn check_write_size(bytes: usize) -> Result<(), Failure> {
    if bytes <= MAX_WRITE_BYTES {
        return Ok(());
    }
    Err(Failure::Invalid(messages::too_large_to_write(&format_file_size(bytes), &format_file_size(MAX_WRITE_BYTES))))
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The first `units` UTF-16 code units of `s`, as JavaScript's `slice(0, units)` cuts them, with
/// a high surrogate left alone at the end dropped (as Claude Code drops it): a character outside
/// the BMP that the cut would split is left out whole.
fn utf16_prefix(s: &str, units: usize) -> String {
    let mut used = 0;
    let mut out = String::new();
    for c in s.chars() {
        used += c.len_utf16();
        if used > units {
            break;
        }
        out.push(c);
    }
    out
}

fn lf(s: &str) -> String {
    s.replace("\r\n", "\n")
}

/// Claude Code's `addLineNumbers`: `N\tline` from `start`, a trailing `\r` dropped.
fn number_lines(content: &str, start: i64) -> String {
    content
        .split('\n')
        .enumerate()
        .map(|(i, line)| format!("{}\t{}", start + i as i64, line.strip_suffix('\r').unwrap_or(line)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lines `[skip, skip + limit)` of a file, as Claude Code's reader slices them: BOM
/// dropped, `\r\n` folded, and the last (possibly empty) segment after a final newline
/// counted as a line. Returns the text and the file's total line count.
fn slice_lines(text: &str, skip: usize, limit: Option<usize>) -> (String, usize) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if skip == 0 && limit.is_none() {
        let mut whole = lf(text);
        if whole.ends_with('\r') {
            whole.pop();
        }
        let total = whole.matches('\n').count() + 1;
        return (whole, total);
    }
    let end = limit.map_or(usize::MAX, |l| skip.saturating_add(l));
    let mut kept = Vec::new();
    let mut total = 0;
    for line in text.split('\n') {
        if total >= skip && total < end {
            kept.push(line.strip_suffix('\r').unwrap_or(line));
        }
        total += 1;
    }
    (kept.join("\n"), total)
}

/// Claude Code's quote folding for `old_string`: curly quotes match straight ones.
fn fold_quotes(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201c}' | '\u{201d}' => '"',
            c => c,
        })
        .collect()
}

/// The text in `content` that `old` stands for: itself, or the same text with the file's
/// curly quotes (Claude Code's `findActualString`).
fn find_actual(content: &str, old: &str) -> Option<String> {
    if content.contains(old) {
        return Some(old.to_string());
    }
    let folded_content = fold_quotes(content);
    let folded_old = fold_quotes(old);
    let byte_at = folded_content.find(&folded_old)?;
    // Folding maps one char to one char, so char positions carry over.
    let start = folded_content[..byte_at].chars().count();
    let len = folded_old.chars().count();
    Some(content.chars().skip(start).take(len).collect())
}

fn opens_quote(chars: &[char], i: usize) -> bool {
    i == 0 || matches!(chars[i - 1], ' ' | '\t' | '\n' | '\r' | '(' | '[' | '{' | '\u{2014}' | '\u{2013}')
}

/// When the file's text used curly quotes, `new` gets them too (Claude Code's
/// `preserveQuoteStyle`).
fn keep_quote_style(old: &str, actual: &str, new: &str) -> String {
    if old == actual {
        return new.to_string();
    }
    let doubles = actual.contains(['\u{201c}', '\u{201d}']);
    let singles = actual.contains(['\u{2018}', '\u{2019}']);
    let chars: Vec<char> = new.chars().collect();
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| match c {
            '"' if doubles => {
                if opens_quote(&chars, i) {
                    '\u{201c}'
                } else {
                    '\u{201d}'
                }
            }
            '\'' if singles => {
                let letter = |j: Option<usize>| j.and_then(|j| chars.get(j)).is_some_and(|c| c.is_alphabetic());
                if letter(i.checked_sub(1)) && letter(Some(i + 1)) {
                    '\u{2019}'
                } else if opens_quote(&chars, i) {
                    '\u{2018}'
                } else {
                    '\u{2019}'
                }
            }
            c => c,
        })
        .collect()
}

impl Tools {
    /// The memory folder the run writes in, under the memory policy.
    pub(super) fn memdir(&self) -> Option<(Memdir, &str)> {
        let prefix = self.gate.memory_prefix()?;
        Some((Memdir::new(prefix.trim_end_matches('/'), self.work_dir.join("unused-trash"), self.clock.clone()), prefix))
    }

    /// Refuses a path in the memory folder that the changeset could not apply, when the model
    /// asks for it: a backslash or a control character in a name, a link on the way that
    /// leads out of the folder (or a link as the file itself), a file this run wrote or
    /// removed where a folder would have to be, or a folder of files this run wrote. Found
    /// only at apply time, it would lose the whole run.
    /// Edit and Write refuse a file a deny rule of the user's permission settings covers (an
    /// `Edit(path)` rule; from 2.1.228 a Read rule too) when they check their input, before the
    /// permission function (`PermissionRules::denies_writing`).
    fn check_write_rules(&self, path: &Path) -> Result<(), Failure> {
        match self.gate.rules().denies_writing(&path.to_string_lossy(), self.release.writes_refuse_read_denied) {
            Some((rule, kind)) => Err(Failure::Invalid(messages::write_denied_by_rule(&rule.text, kind == crate::rules::WriteDenial::EditRule))),
            None => Ok(()),
        }
    }

    fn check_memory_path(&self, path: &Path) -> Result<(), Failure> {
        let Some((memdir, prefix)) = self.memdir() else { return Ok(()) };
        let Some(rel) = path.to_str().and_then(|p| p.strip_prefix(prefix)) else { return Ok(()) };
        memdir.check_write_path(rel).map_err(|e| Failure::Invalid(e.to_string()))?;
        if let Some(file) = self.overlay.changed().find(|p| path.starts_with(p) && path != *p) {
            return Err(Failure::Invalid(messages::under_a_file(&file.to_string_lossy())));
        }
        if self.overlay.written().any(|(p, _)| p.starts_with(path) && p != path) {
            return Err(Failure::Invalid(messages::over_a_folder(&path.to_string_lossy())));
        }
        Ok(())
    }

    /// Refuses a write of `bytes` to `path` that would take what the run holds written past
    /// [`MAX_RUN_BYTES`] (what the file held pending before is replaced, so it does not count).
    fn check_run_size(&self, path: &Path, bytes: usize) -> Result<(), Failure> {
        let total = self.overlay.pending_bytes() - self.overlay.pending_len(path) + bytes;
        if total <= MAX_RUN_BYTES {
            return Ok(());
        }
        Err(Failure::Invalid(messages::run_too_large(&format_file_size(total), &format_file_size(MAX_RUN_BYTES))))
    }

    /// Records `path` as fully read, as Claude Code does for the session-memory file before
    /// its update agent starts.
    pub(crate) fn preload(&mut self, path: &Path) {
        if let Ok(Some(seen)) = self.overlay.read(path) {
            let writes = self.overlay.writes(path);
            let state = ReadState { content: lf(&seen.content), mtime_ms: seen.mtime_ms, offset: None, limit: None, partial: false, writes };
            self.read_state.insert(path.to_path_buf(), state);
        }
    }

    fn missing_file(&self, path: &Path) -> String {
        // A file with the same name and another extension (`findSimilarFile`).
        let mut similar = None;
        if let (Some(dir), Some(stem)) = (path.parent(), path.file_stem()) {
            if let Ok(entries) = std::fs::read_dir(dir) {
                let mut names: Vec<String> = entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| Path::new(n).file_stem() == Some(stem) && dir.join(n) != path)
                    .collect();
                names.sort();
                similar = names.into_iter().next();
            }
        }
        messages::no_such_file(&self.cwd.to_string_lossy(), similar.as_deref())
    }

    /// Whether the file changed since it was read, by someone other than this run.
    fn changed_since_read(&mut self, path: &Path, state: &ReadState) -> Result<bool, Failure> {
        if self.overlay.is_changed(path) {
            return Ok(false);
        }
        let Some(seen) = self.seen(path)? else { return Ok(true) };
        let newer = match (seen.mtime_ms, state.mtime_ms) {
            (Some(now), Some(then)) => now > then,
            _ => false,
        };
        let full_view = state.offset.unwrap_or(1) <= 1 && state.limit.is_none();
        Ok(newer && !(full_view && lf(&seen.content) == state.content))
    }

    fn seen(&mut self, path: &Path) -> Result<Option<Seen>, Failure> {
        self.overlay.read(path).map_err(|e| Failure::Failed(e.to_string()))
    }

    pub(super) fn validate_read(&mut self, args: &Map<String, Value>) -> Result<(), Failure> {
        // Up to 2.1.179 the schema wants an offset of 0 or more (from 2.1.181 one below is the
        // first line)...
        if let Some(offset) = num_arg(args, "offset").filter(|o| *o < 0.0 && !self.release.read_limit_zero_is_none) {
            let given = mneme_core::text::js_number(offset);
            return Err(Failure::Invalid(format!(
                "InputValidationError: {}",
                messages::bad_input("Read", &[messages::negative("offset", &given)])
            )));
        }
        // ... and a limit above 0; from 2.1.181 a limit of 0 is none.
        if let Some(limit) = num_arg(args, "limit").filter(|l| *l <= 0.0 && !self.release.read_limit_zero_is_none) {
            let given = mneme_core::text::js_number(limit);
            return Err(Failure::Invalid(format!(
                "InputValidationError: {}",
                messages::bad_input("Read", &[messages::not_positive("limit", &given)])
            )));
        }
        let raw = str_arg(args, "file_path").unwrap_or_default();
        let path = self.abs(raw);
        if let Some(rule) = self.gate.rules().denies_reading(&path.to_string_lossy()) {
            return Err(Failure::Invalid(messages::read_denied_by_rule(&rule.text)));
        }
        let device = path.to_string_lossy().into_owned();
        let blocking = [
            "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full", "/dev/stdin", "/dev/tty", "/dev/console",
            "/dev/stdout", "/dev/stderr", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2",
        ];
        let proc_fd = device.starts_with("/proc/") && ["/fd/0", "/fd/1", "/fd/2"].iter().any(|s| device.ends_with(s));
        let proc_file = device.starts_with("/proc/")
            && ["environ", "cmdline", "auxv", "maps", "mem", "stat"].iter().any(|f| {
                device.strip_suffix(f).and_then(|p| p.strip_suffix('/')).is_some_and(|p| p.matches('/').count() == 2)
            });
        if blocking.contains(&device.as_str()) || proc_fd || proc_file {
            return Err(Failure::Invalid(messages::endless_device(raw)));
        }
        Ok(())
    }

    pub(super) fn read(&mut self, args: &Map<String, Value>) -> Result<ToolResult, Failure> {
        let raw = str_arg(args, "file_path").unwrap_or_default();
        let path = self.abs(raw);
        // An offset of 0 or below reads from the first line; up to 2.1.295 `offset: 0` numbers
        // it 0 (the numbering starts at the offset given), from 2.1.337 1.
        let offset = match num_arg(args, "offset") {
            Some(n) if n == 0.0 && !self.release.read_offset_zero_numbers_from_one => 0,
            Some(n) => n.max(1.0) as u64,
            None => 1,
        };
        // From 2.1.296 `allow_large` lifts the size and token limits (up to its own cap).
        let allow_large = self.release.read_allow_large && bool_arg(args, "allow_large") == Some(true);
        let hint = if self.release.read_allow_large { messages::ALLOW_LARGE_HINT } else { "" };
        // A limit of 0 is no limit, as Claude Code takes it.
        let limit = num_arg(args, "limit").filter(|n| *n >= 1.0).map(|n| n as u64);
        if !self.overlay.is_changed(&path) && path.is_dir() {
            return Err(Failure::Failed(format!(
                "EISDIR: illegal operation on a directory, read '{}'",
                path.display()
            )));
        }
        let Some(seen) = self.seen(&path)? else {
            return Err(Failure::Failed(self.missing_file(&path)));
        };
        // A repeated identical Read of an unchanged file gets a short answer, up to 2.1.316;
        // later releases answer it in full.
        if let Some(prev) = self.read_state.get(&path).filter(|_| self.release.read_dedups_unchanged) {
            let unchanged = match (prev.mtime_ms, seen.mtime_ms) {
                (Some(then), Some(now)) => then == now,
                // The run's own file: no write since that Read.
                (None, None) => prev.writes == self.overlay.writes(&path),
                _ => false,
            };
            if !prev.partial && prev.offset == Some(offset) && prev.limit == limit && unchanged {
                return Ok(ToolResult::ok(UNCHANGED));
            }
        }
        if limit.is_none() && seen.content.len() > MAX_READ_BYTES && !allow_large {
            let refusal = messages::too_many_bytes(&format_file_size(seen.content.len()), &format_file_size(MAX_READ_BYTES));
            return Err(Failure::Failed(refusal + hint));
        }
        let skip = offset.saturating_sub(1) as usize;
        let (mut text, total) = slice_lines(&seen.content, skip, limit.map(|l| l as usize));
        let mut start = offset as i64;
        let mut lines = if text.is_empty() { 0 } else { text.matches('\n').count() + 1 };
        let mut truncation = None;
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default().to_ascii_lowercase();
        let divisor = if matches!(ext.as_str(), "json" | "jsonl" | "jsonc") { 2.0 } else { 4.0 };
        let tokens = (utf16_len(&text) as f64 / divisor).round() as usize;
        if allow_large && tokens > MAX_ALLOW_LARGE_TOKENS {
            return Err(Failure::Failed(messages::too_large_even_allowed(tokens, MAX_ALLOW_LARGE_TOKENS)));
        }
        if tokens > MAX_READ_TOKENS && !allow_large {
            // A range over the cap is refused; so is a whole file before 2.1.145, which from
            // then on gets its first page.
            if offset > 1 || limit.is_some() || !self.release.read_first_page {
                return Err(Failure::Failed(messages::too_many_tokens(tokens, MAX_READ_TOKENS) + hint));
            }
            let (page, page_lines, note) = first_page(&text, tokens, total);
            text = page;
            lines = page_lines;
            start = 1;
            truncation = Some(note);
        }
        self.read_state.insert(
            path.clone(),
            ReadState {
                content: text.clone(),
                mtime_ms: seen.mtime_ms,
                offset: Some(offset),
                limit: if truncation.is_some() { Some(lines as u64) } else { limit },
                partial: truncation.is_some(),
                writes: self.overlay.writes(&path),
            },
        );
        // Lines with no text: an empty file has one (empty) line. Up to 2.1.207 a Read that
        // finds no text says the file is shorter than the offset; from 2.1.208 one that reaches
        // lines shows them numbered, or, for the empty file, says it is empty. An offset past
        // the end is "shorter" in every release.
        let reached = skip < total && limit != Some(0);
        let numbered_blank = reached && self.release.read_empty_file_warns && total > 1;
        if text.is_empty() && !numbered_blank {
            return Ok(ToolResult::ok(if total == 0 || (reached && self.release.read_empty_file_warns) {
                messages::EMPTY_FILE.to_string()
            } else {
                messages::past_end(start, total)
            }));
        }
        let mut out = String::new();
        // Up to 2.1.204 the first page's note opens the result; from 2.1.205 Claude Code sends
        // it after the results (a message of its own), naming the file.
        let mut after = None;
        match truncation {
            Some(note) if self.release.read_page_note_after_result => {
                after = Some(messages::first_page_after(&path.to_string_lossy(), &note, self.release.read_allow_large));
            }
            Some(note) => out.push_str(&format!("<system-reminder>{note}</system-reminder>\n\n")),
            None => {}
        }
        out.push_str(&self.memory_age_note(&path, seen.mtime_ms));
        out.push_str(&number_lines(&text, start));
        Ok(ToolResult { note: after, ..ToolResult::ok(out) })
    }

    /// The staleness note on memory files more than a day old (where Claude Code puts its own).
    fn memory_age_note(&self, path: &Path, mtime_ms: Option<u128>) -> String {
        let Some(prefix) = self.gate.memory_prefix() else { return String::new() };
        let Some(mtime) = mtime_ms else { return String::new() };
        if !path.to_string_lossy().starts_with(prefix) {
            return String::new();
        }
        let days = self.clock.now_ms().saturating_sub(mtime) / DAY_MS;
        if days <= 1 {
            return String::new();
        }
        messages::memory_age(days)
    }

    pub(super) fn validate_edit(&mut self, args: &Map<String, Value>) -> Result<(), Failure> {
        let path = self.abs(str_arg(args, "file_path").unwrap_or_default());
        let old = str_arg(args, "old_string").unwrap_or_default();
        let new = str_arg(args, "new_string").unwrap_or_default();
        let replace_all = bool_arg(args, "replace_all").unwrap_or(false);
        self.check_write_rules(&path)?;
        check_write_size(new.len())?;
        self.check_run_size(&path, new.len())?;
        self.check_memory_path(&path)?;
        if let Some(refusal) = self.gate.team_secret_refusal(&path, new) {
            return Err(Failure::Invalid(refusal));
        }
        if old == new {
            return Err(Failure::Invalid(messages::NO_CHANGE.into()));
        }
        let Some(seen) = self.seen(&path)? else {
            if old.is_empty() {
                return Ok(());
            }
            return Err(Failure::Invalid(self.missing_file(&path)));
        };
        let content = lf(&seen.content);
        if old.is_empty() {
            if !content.trim().is_empty() {
                return Err(Failure::Invalid(messages::ALREADY_EXISTS.into()));
            }
            return Ok(());
        }
        let Some(state) = self.read_state.get(&path).cloned().filter(|s| !s.partial) else {
            return Err(Failure::Invalid(NOT_READ.into()));
        };
        if self.changed_since_read(&path, &state)? {
            return Err(Failure::Invalid(MODIFIED.into()));
        }
        let Some(actual) = find_actual(&content, old) else {
            return Err(Failure::Invalid(messages::not_found(old)));
        };
        let count = content.matches(actual.as_str()).count();
        if count > 1 && !replace_all {
            return Err(Failure::Invalid(messages::several_matches(count, old)));
        }
        // Curly quotes kept from the file take up to 3 bytes where new_string has 1.
        let replaced = if replace_all { count } else { 1 };
        let most = (content.len() - replaced * actual.len()).saturating_add(replaced.saturating_mul(new.len().saturating_mul(3)));
        check_write_size(most)?;
        self.check_run_size(&path, most)
    }

    pub(super) fn edit(&mut self, args: &Map<String, Value>) -> Result<ToolResult, Failure> {
        let raw = str_arg(args, "file_path").unwrap_or_default();
        let path = self.abs(raw);
        let old = str_arg(args, "old_string").unwrap_or_default();
        let new = str_arg(args, "new_string").unwrap_or_default();
        let replace_all = bool_arg(args, "replace_all").unwrap_or(false);
        let seen = self.seen(&path)?;
        let crlf = seen.as_ref().is_some_and(|s| s.content.contains("\r\n"));
        let content = seen.map(|s| lf(&s.content)).unwrap_or_default();
        let updated = if old.is_empty() {
            new.to_string()
        } else {
            let actual = find_actual(&content, old).unwrap_or_else(|| old.to_string());
            let replacement = keep_quote_style(old, &actual, new);
            if replace_all {
                content.replace(&actual, &replacement)
            } else {
                content.replacen(&actual, &replacement, 1)
            }
        };
        let on_disk = if crlf { updated.replace('\n', "\r\n") } else { updated.clone() };
        self.overlay.write(&path, on_disk, "Edit").map_err(|e| Failure::Failed(e.to_string()))?;
        let writes = self.overlay.writes(&path);
        self.read_state.insert(path, ReadState { content: updated, mtime_ms: None, offset: None, limit: None, partial: false, writes });
        Ok(self.written(if replace_all {
            format!("The file {raw} has been updated. All occurrences were successfully replaced.")
        } else {
            format!("The file {raw} has been updated successfully.")
        }))
    }

    pub(super) fn validate_write(&mut self, args: &Map<String, Value>) -> Result<(), Failure> {
        let path = self.abs(str_arg(args, "file_path").unwrap_or_default());
        let content = str_arg(args, "content").unwrap_or_default();
        self.check_write_rules(&path)?;
        check_write_size(content.len())?;
        self.check_run_size(&path, content.len())?;
        self.check_memory_path(&path)?;
        if let Some(refusal) = self.gate.team_secret_refusal(&path, content) {
            return Err(Failure::Invalid(refusal));
        }
        if self.seen(&path)?.is_none() {
            return Ok(());
        }
        let Some(state) = self.read_state.get(&path).cloned().filter(|s| !s.partial) else {
            return Err(Failure::Invalid(NOT_READ.into()));
        };
        if self.changed_since_read(&path, &state)? {
            return Err(Failure::Invalid(MODIFIED.into()));
        }
        Ok(())
    }

    pub(super) fn write(&mut self, args: &Map<String, Value>) -> Result<ToolResult, Failure> {
        let raw = str_arg(args, "file_path").unwrap_or_default();
        let path = self.abs(raw);
        let content = str_arg(args, "content").unwrap_or_default().to_string();
        let existed = self.seen(&path)?.is_some();
        self.overlay.write(&path, content.clone(), "Write").map_err(|e| Failure::Failed(e.to_string()))?;
        let writes = self.overlay.writes(&path);
        self.read_state.insert(path, ReadState { content, mtime_ms: None, offset: None, limit: None, partial: false, writes });
        Ok(self.written(if existed {
            format!("The file {raw} has been updated successfully.")
        } else {
            format!("File created successfully at: {raw}")
        }))
    }

    /// A successful Edit's or Write's answer, with the note the release adds.
    fn written(&self, said: String) -> ToolResult {
        ToolResult::ok(if self.release.edits_say_state_is_current { said + STATE_IS_CURRENT } else { said })
    }
}

/// Claude Code's first page of a whole-file read over the token cap: as many leading lines
/// as fit (or, for very long lines, leading characters), and the note saying how to go on.
fn first_page(text: &str, tokens: usize, total: usize) -> (String, usize, String) {
    let cap = MAX_READ_TOKENS as f64;
    let lines: Vec<&str> = text.split('\n').collect();
    let per_token = (utf16_len(text) as f64 / tokens.max(1) as f64).max(0.5);
    let est = |s: &str| utf16_len(s) as f64 / per_token;
    let mut m = ((lines.len() as f64 * cap / tokens.max(1) as f64 * 0.85).floor() as usize).clamp(1, lines.len());
    let mut page = lines[..m].join("\n");
    for _ in 0..6 {
        if est(&page) <= cap || m <= 1 {
            break;
        }
        m = ((m as f64 * 0.7).floor() as usize).max(1);
        page = lines[..m].join("\n");
    }
    // JavaScript's `trim` (U+FEFF is blank to it, not to Rust's).
    if est(&page) > cap || mneme_core::text::js_trim(&page).is_empty() {
        let mut k = ((cap * per_token * 0.85).floor() as usize).max(1);
        for _ in 0..6 {
            page = utf16_prefix(text, k);
            if est(&page) <= cap {
                break;
            }
            k = ((k as f64 * 0.7).floor() as usize).max(1);
        }
        let note = messages::first_page_chars(utf16_len(&page), utf16_len(text), tokens, MAX_READ_TOKENS);
        let n = page.matches('\n').count() + 1;
        return (page, n, note);
    }
    let note = if m < total {
        messages::first_page_lines(m, total, tokens, MAX_READ_TOKENS)
    } else {
        messages::first_page_chars(utf16_len(&page), utf16_len(text), tokens, MAX_READ_TOKENS)
    };
    (page, m, note)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A first page cut inside a line is cut by UTF-16 units, as JavaScript's `slice` cuts it
    /// (read in the 2.1.197 and 2.1.337 bundles), and a character outside the BMP the cut would
    /// split is left out: 85,000 units here, so `a` and 42,499 of the emoji (84,999 units).
    #[test]
    fn a_first_page_cut_inside_a_line_counts_utf16_units_and_splits_no_character() {
        let text = format!("a{}", "\u{1f600}".repeat(60_000));
        let tokens = (utf16_len(&text) as f64 / 4.0).round() as usize;
        assert_eq!(tokens, 30_000);
        let (page, lines, note) = first_page(&text, tokens, 1);
        assert_eq!(page, format!("a{}", "\u{1f600}".repeat(42_499)));
        assert_eq!(lines, 1);
        assert_eq!(note, messages::first_page_chars(84_999, 120_001, 30_000, MAX_READ_TOKENS));
        // A page of nothing but U+FEFF is blank to JavaScript's trim: cut by characters too.
        let bom = format!("{}\n{}", "\u{feff}".repeat(10), "x".repeat(200_000));
        let (page, _, _) = first_page(&bom, 50_003, 2);
        assert_eq!(page, format!("{}\n{}", "\u{feff}".repeat(10), "x".repeat(84_988)));
    }

    #[test]
    fn line_numbering_matches_claude_code() {
        assert_eq!(number_lines("a\nb\n", 1), "1\ta\n2\tb\n3\t");
        assert_eq!(number_lines("x\r\ny", 5), "5\tx\n6\ty");
        assert_eq!(slice_lines("\u{feff}a\r\nb\r\n", 0, None), ("a\nb\n".to_string(), 3));
        assert_eq!(slice_lines("a\nb\nc\nd", 1, Some(2)), ("b\nc".to_string(), 4));
        assert_eq!(slice_lines("a\nb", 5, None), (String::new(), 2));
    }

    /// Tools over `dir` answering as `release` does.
    fn tools_for(dir: &Path, release: &str) -> Tools {
        let gate = crate::policy::Gate::new(&crate::Policy::AutoMem { memory_dir: dir.to_path_buf() }, &mneme_core::versions::newest());
        let clock: std::sync::Arc<dyn mneme_core::Clock> = std::sync::Arc::new(mneme_core::FixedClock::at_unix_secs(1_764_422_207));
        let mut tools = Tools::new(dir.to_path_buf(), gate, clock, dir.to_path_buf());
        tools.release = mneme_core::versions::behaviours(release.parse().unwrap());
        tools
    }

    /// Lines with no text (an empty file, blank lines): from 2.1.208 a Read that reaches them
    /// says the file is empty or shows them numbered; before, it said the file was shorter than
    /// the offset (checked on 2.1.197, 2.1.207, 2.1.208 and 2.1.332 in tests/differential.rs).
    #[test]
    fn reads_of_lines_with_no_text_follow_the_release() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("empty.md"), "").unwrap();
        std::fs::write(dir.path().join("blank.md"), "\n\n\n").unwrap();
        let read = |release: &str, file: &str, offset: u64, limit: Option<u64>| {
            let mut tools = tools_for(dir.path(), release);
            let mut call = serde_json::json!({"file_path": dir.path().join(file), "offset": offset});
            if let Some(l) = limit {
                call["limit"] = l.into();
            }
            tools.read(call.as_object().unwrap()).unwrap().content
        };
        assert_eq!(read("2.1.207", "empty.md", 1, None), messages::past_end(1, 1));
        assert_eq!(read("2.1.208", "empty.md", 1, None), messages::EMPTY_FILE);
        assert_eq!(read("2.1.208", "empty.md", 3, None), messages::past_end(3, 1));
        assert_eq!(read("2.1.207", "blank.md", 2, Some(1)), messages::past_end(2, 4));
        assert_eq!(read("2.1.208", "blank.md", 2, Some(1)), "2\t");
    }

    /// A Read repeating the previous one of an unchanged file: a short note up to 2.1.316 (for
    /// the run's own writes too, until it writes again), the text again from 2.1.317.
    #[test]
    fn repeated_reads_follow_the_release() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "alpha\n").unwrap();
        let call = |v: Value| v.as_object().unwrap().clone();
        for (release, repeats_short) in [("2.1.316", true), ("2.1.317", false)] {
            let mut tools = tools_for(dir.path(), release);
            let read = call(serde_json::json!({"file_path": dir.path().join("a.md")}));
            let whole = |t: &mut Tools| t.read(&read).unwrap().content;
            assert_eq!(whole(&mut tools), "1\talpha\n2\t");
            assert_eq!(whole(&mut tools) == UNCHANGED, repeats_short, "{release}");
            // The run's own write: read afresh once, then short again until the next write.
            tools.write(&call(serde_json::json!({"file_path": dir.path().join("a.md"), "content": "beta"}))).unwrap();
            assert_eq!(whole(&mut tools), "1\tbeta");
            assert_eq!(whole(&mut tools) == UNCHANGED, repeats_short, "{release}");
        }
    }

    /// A whole-file Read over the token cap gets its first page; the note on the cut opens the
    /// result up to 2.1.204 and follows the results from 2.1.205, naming the file (seen in
    /// 2.1.204, 2.1.205, 2.1.220, 2.1.240, 2.1.296 and 2.1.337), and from 2.1.296 pointing at
    /// `allow_large` (row 98).
    #[test]
    fn the_first_pages_note_follows_the_release() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big.md");
        std::fs::write(&file, "0123456789abcdef\n".repeat(7_000)).unwrap();
        let call = serde_json::json!({"file_path": file});
        let note = messages::first_page_lines(5_000, 7_001, 29_750, MAX_READ_TOKENS);
        let page = number_lines(&"0123456789abcdef\n".repeat(5_000)[..16 * 5_000 + 4_999], 1);
        let mut before = tools_for(dir.path(), "2.1.144");
        let refused = messages::too_many_tokens(29_750, MAX_READ_TOKENS);
        assert_eq!(before.read(call.as_object().unwrap()), Err(Failure::Failed(refused)));
        for (release, after, allow_large) in [("2.1.145", false, false), ("2.1.204", false, false), ("2.1.205", true, false), ("2.1.296", true, true)] {
            let mut tools = tools_for(dir.path(), release);
            let got = tools.read(call.as_object().unwrap()).unwrap();
            if after {
                assert_eq!(got.content, page, "{release}");
                assert_eq!(got.note, Some(messages::first_page_after(&file.to_string_lossy(), &note, allow_large)), "{release}");
            } else {
                assert_eq!(got.content, format!("<system-reminder>{note}</system-reminder>\n\n{page}"), "{release}");
                assert_eq!(got.note, None);
            }
        }
    }

    /// `limit: 0`: refused by the schema up to 2.1.179, no limit from 2.1.181.
    #[test]
    fn a_zero_limit_follows_the_release() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "one\ntwo\n").unwrap();
        let mut tools = tools_for(dir.path(), "2.1.179");
        let call = serde_json::json!({"file_path": dir.path().join("a.md"), "limit": 0});
        let args = call.as_object().unwrap();
        let refusal = format!("InputValidationError: {}", messages::bad_input("Read", &[messages::not_positive("limit", "0")]));
        assert_eq!(tools.validate_read(args), Err(Failure::Invalid(refusal)));
        tools.release = mneme_core::versions::behaviours("2.1.181".parse().unwrap());
        assert_eq!(tools.validate_read(args), Ok(()));
        assert_eq!(tools.read(args).unwrap().content, "1\tone\n2\ttwo\n3\t");
    }

    /// `allow_large` (row 83): offered from 2.1.296, where it lifts the size and token limits up
    /// to Mneme's own cap and the refusals name it; before, not in the schema (checked on
    /// 2.1.295, 2.1.296 and 2.1.337 in tests/differential.rs).
    #[test]
    fn allow_large_follows_the_release() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("huge.md"), "0123456789abcdef\n".repeat(17_000)).unwrap();
        std::fs::write(dir.path().join("giant.md"), "0123456789abcdef\n".repeat(30_000)).unwrap();
        let call = |v: Value| v.as_object().unwrap().clone();
        let huge = dir.path().join("huge.md");
        let offered = |release: &str| {
            let defs = super::super::definitions(&mneme_core::versions::behaviours(release.parse().unwrap()));
            defs.iter().find(|d| d.name == "Read").unwrap().input_schema["properties"].get("allow_large").is_some()
        };
        assert!(!offered("2.1.295") && offered("2.1.296"));
        let size = messages::too_many_bytes("282.2KB", "256KB");
        assert_eq!(tools_for(dir.path(), "2.1.295").read(&call(serde_json::json!({"file_path": huge}))), Err(Failure::Failed(size.clone())));
        let mut tools = tools_for(dir.path(), "2.1.296");
        assert_eq!(tools.read(&call(serde_json::json!({"file_path": huge}))), Err(Failure::Failed(size + messages::ALLOW_LARGE_HINT)));
        let range = |allow: bool| call(serde_json::json!({"file_path": huge, "offset": 2, "limit": 7_000, "allow_large": allow}));
        let tokens = messages::too_many_tokens(29_750, 25_000) + messages::ALLOW_LARGE_HINT;
        assert_eq!(tools.read(&range(false)), Err(Failure::Failed(tokens)));
        let lines = tools.read(&range(true)).unwrap().content;
        assert!(lines.starts_with("2\t0123456789abcdef\n") && lines.ends_with("\n7001\t0123456789abcdef"), "{}", &lines[lines.len() - 40..]);
        let whole = tools.read(&call(serde_json::json!({"file_path": huge, "allow_large": true}))).unwrap().content;
        assert!(whole.starts_with("1\t0123456789abcdef\n") && whole.ends_with("\n17000\t0123456789abcdef\n17001\t"));
        // Above Mneme's own cap (510,000 characters, 127,500 tokens) even `allow_large` refuses.
        let giant = call(serde_json::json!({"file_path": dir.path().join("giant.md"), "allow_large": true}));
        assert_eq!(tools.read(&giant), Err(Failure::Failed(messages::too_large_even_allowed(127_500, MAX_ALLOW_LARGE_TOKENS))));
    }

    /// `offset: 0` reads from the first line, numbered from 0 up to 2.1.332 and from 1 from
    /// 2.1.337 (row 84); an offset below 0 is refused up to 2.1.179 and is the first line from
    /// 2.1.181 (with row 69). Mneme had numbered `offset: -1` from 0 in every release.
    #[test]
    fn offsets_of_zero_and_below_follow_the_release() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "one\ntwo\n").unwrap();
        let call = |offset: i64| serde_json::json!({"file_path": dir.path().join("a.md"), "offset": offset}).as_object().unwrap().clone();
        let read = |release: &str, offset: i64| tools_for(dir.path(), release).read(&call(offset)).unwrap().content;
        assert_eq!(read("2.1.332", 0), "0\tone\n1\ttwo\n2\t");
        assert_eq!(read("2.1.337", 0), "1\tone\n2\ttwo\n3\t");
        assert_eq!(read("2.1.181", -1), "1\tone\n2\ttwo\n3\t");
        assert_eq!(read("2.1.337", -1), "1\tone\n2\ttwo\n3\t");
        let refusal = format!("InputValidationError: {}", messages::bad_input("Read", &[messages::negative("offset", "-1")]));
        assert_eq!(tools_for(dir.path(), "2.1.179").validate_read(&call(-1)), Err(Failure::Invalid(refusal)));
        assert_eq!(tools_for(dir.path(), "2.1.181").validate_read(&call(-1)), Ok(()));
    }

    /// A successful Edit or Write: the note that the file's state is current from 2.1.128,
    /// the bare answer before (checked on 2.1.126 and 2.1.128 in tests/differential.rs).
    #[test]
    fn edits_and_writes_note_the_current_state_from_2_1_128() {
        let dir = tempfile::tempdir().unwrap();
        let call = |v: Value| v.as_object().unwrap().clone();
        for (release, note) in [("2.1.126", ""), ("2.1.128", STATE_IS_CURRENT)] {
            let mut tools = tools_for(dir.path(), release);
            let file = dir.path().join(format!("{release}.md"));
            let raw = file.to_string_lossy().into_owned();
            let created = tools.write(&call(serde_json::json!({"file_path": raw, "content": "one\n"}))).unwrap();
            assert_eq!(created.content, format!("File created successfully at: {raw}{note}"));
            let edited = tools.edit(&call(serde_json::json!({"file_path": raw, "old_string": "one", "new_string": "two"}))).unwrap();
            assert_eq!(edited.content, format!("The file {raw} has been updated successfully.{note}"));
            let all = call(serde_json::json!({"file_path": raw, "old_string": "two", "new_string": "three", "replace_all": true}));
            assert_eq!(tools.edit(&all).unwrap().content, format!("The file {raw} has been updated. All occurrences were successfully replaced.{note}"));
            let replaced = tools.write(&call(serde_json::json!({"file_path": raw, "content": "four\n"}))).unwrap();
            assert_eq!(replaced.content, format!("The file {raw} has been updated successfully.{note}"));
            // The run's writes are staged; its own Read sees them.
            assert_eq!(tools.read(&call(serde_json::json!({"file_path": raw}))).unwrap().content, "1\tfour\n2\t");
        }
    }

    #[test]
    fn curly_quotes_match_and_are_kept() {
        let file = "She said \u{201c}hi\u{201d} and it\u{2019}s fine";
        let actual = find_actual(file, "\"hi\" and it's").unwrap();
        assert_eq!(actual, "\u{201c}hi\u{201d} and it\u{2019}s");
        assert_eq!(keep_quote_style("\"hi\" and it's", &actual, "\"bye\" and it's"), "\u{201c}bye\u{201d} and it\u{2019}s");
        assert_eq!(find_actual("plain", "plain").as_deref(), Some("plain"));
        assert_eq!(find_actual("plain", "other"), None);
    }
}
