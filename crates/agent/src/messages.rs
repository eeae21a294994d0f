//! Everything the agent's tools say to the model in words, in one place and in Mneme's own
//! wording.
//!
//! The tools reproduce Claude Code's behaviour exactly (which call fails, at which stage, with
//! which data), but not its prose: each message here says what happened and what to do in our
//! words, and keeps the data Claude Code's message carries (counts, sizes, the string, the
//! working directory). The `<system-reminder>` wrapper is part of the tool_result format, so it
//! stays. `tests/differential.rs` checks that each of these appears exactly where Claude Code
//! answers with its own message of the same kind.

/// Edit/Write on an existing file that this run has not read (in full).
pub const NOT_READ: &str =
    "This file already exists and has not been read in this session. Read it first, then make the change.";

/// Edit/Write on a file that changed on disk after it was read.
pub const MODIFIED: &str =
    "This file changed on disk after it was last read (someone else edited it). Read it again, then make the change.";

/// A Read repeating the previous one of a file that has not changed since: a success, not an
/// error, so the model is steered back to the result it already has.
pub const UNCHANGED: &str =
    "Same file, same range, no change since your previous Read of it: use that earlier result instead of reading it again.";

/// A Read of an empty file.
pub const EMPTY_FILE: &str = "<system-reminder>Note: this file exists and is empty.</system-reminder>";

/// A Grep that did not run because its pattern, glob or file type was refused; `detail` is what
/// the search program said.
pub fn search_refused(detail: &str) -> String {
    format!("The search did not run: its pattern, glob or file type was refused before any file was searched.\n{detail}")
}

/// A Read whose offset lies past the end of the file.
pub fn past_end(offset: i64, total: usize) -> String {
    format!(
        "<system-reminder>Note: nothing to show, the file ends before line {offset} (its line count is {total}). Read from an earlier offset.</system-reminder>"
    )
}

/// The path names no file; `similar` is a file with the same name and another extension.
pub fn no_such_file(cwd: &str, similar: Option<&str>) -> String {
    let mut msg = format!("There is no file at this path (relative paths start from {cwd}).");
    if let Some(similar) = similar {
        msg.push_str(&format!(" A file with a similar name exists: {similar}."));
    }
    msg
}

/// Read of a device that would block or never end.
pub fn endless_device(path: &str) -> String {
    format!("'{path}' is a device that waits for input or never stops producing output, so Read cannot read it. Read a regular file instead.")
}

/// A whole-file Read of a file above the byte limit (sizes as `format_file_size` writes them).
pub fn too_many_bytes(size: &str, max: &str) -> String {
    format!(
        "This file is {size}, more than Read returns at once ({max}). Read part of it with offset and limit, or find the part you need with Grep."
    )
}

/// A ranged Read whose text is above the token limit.
pub fn too_many_tokens(tokens: usize, max: usize) -> String {
    format!(
        "These lines come to {tokens} tokens, more than Read returns at once ({max}). Ask for fewer lines with a smaller limit, or find the part you need with Grep."
    )
}

/// Added to a size or token refusal by releases whose Read takes `allow_large` (2.1.296 on).
pub const ALLOW_LARGE_HINT: &str = " If you truly need all of it, call Read again with allow_large: true.";

/// A Read with `allow_large` whose text is above even the cap that lifts (tokens as counted
/// for the token limit).
pub fn too_large_even_allowed(tokens: usize, cap: usize) -> String {
    format!(
        "This text comes to {tokens} tokens, more than Read returns even with allow_large ({cap}). Read part of it with offset and limit, or find the part you need with Grep."
    )
}

/// A Bash call with `run_in_background: true`: a memory agent's run keeps no shell running
/// after a call.
pub const NO_BACKGROUND: &str =
    "Bash cannot run a command in the background here. Call Bash again without run_in_background (or with it false); the command then runs to its end and its output comes back.";

/// The note leading the first page of a whole-file Read over the token limit, when it could be
/// cut at a line.
pub fn first_page_lines(shown: usize, total: usize, tokens: usize, max: usize) -> String {
    format!(
        "[Partial view: lines 1-{shown} of {total} ({tokens} tokens; one Read returns at most {max}). For the next page call Read with offset={} limit={shown}, or use Grep to find the part you need. The answer may be in lines not shown here.]",
        shown + 1
    )
}

/// The first-page note as it follows the results (from 2.1.205): naming the file, and, where
/// Read takes `allow_large` (from 2.1.296), saying it would return the whole file.
pub fn first_page_after(path: &str, note: &str, allow_large: bool) -> String {
    let hint = if allow_large {
        " If all of it is really needed, Read it again with allow_large: true, which returns as much as fits."
    } else {
        ""
    };
    format!("{path}: {note}{hint}")
}

/// The same note when the lines are too long to cut at a line (character counts in UTF-16
/// units, as Claude Code counts them).
pub fn first_page_chars(shown: usize, total: usize, tokens: usize, max: usize) -> String {
    format!(
        "[Partial view: the first {shown} of {total} characters ({tokens} tokens; one Read returns at most {max}). The lines are too long to page by line: use Grep to find the part you need, or Read with offset and limit. The answer may be in the part not shown here.]"
    )
}

/// Leads a Read of a memory file last changed more than a day ago.
pub fn memory_age(days: u128) -> String {
    format!(
        "<system-reminder>This memory was last changed {days} days ago. It records what was true then; code, files and line numbers it names may have changed since, so check them against the current code before relying on it.</system-reminder>\n"
    )
}

/// Edit with identical old_string and new_string.
pub const NO_CHANGE: &str =
    "old_string and new_string are identical, so this edit would change nothing. Put the text you want in new_string.";

/// Edit with an empty old_string (which creates a file) on a file that has content.
pub const ALREADY_EXISTS: &str =
    "An empty old_string creates a new file, but this file already exists and is not empty. To change it, Read it and pass the text to replace as old_string; to replace all of it, use Write.";

/// Edit whose old_string is not in the file.
pub fn not_found(old: &str) -> String {
    format!(
        "old_string does not occur in the file. Read the file again and copy the text exactly, including spaces and line breaks.\nold_string: {old}"
    )
}

/// Edit whose old_string occurs more than once, without replace_all.
pub fn several_matches(count: usize, old: &str) -> String {
    format!(
        "old_string occurs {count} times in the file and replace_all is false, so it is unclear which to change. Add surrounding text to old_string so it matches one place, or set replace_all to true to change all {count}.\nold_string: {old}"
    )
}

/// Edit or Write whose result would pass the size a file written by a run may have.
pub fn too_large_to_write(size: &str, max: &str) -> String {
    format!("The file would be {size}, more than the {max} a file written here may hold. Memory files are short notes: write less, or split it into several files.")
}

/// A tool call of a response past the calls or the result size one turn runs.
pub fn not_run(calls: usize, max_calls: usize, max_chars: usize) -> String {
    format!("Not run: this response made {calls} tool calls, and one turn runs at most {max_calls} of them or gathers at most {max_chars} characters of results. Call fewer tools at once, and narrow searches and reads.")
}

/// Edit or Write that would take what the run holds written past its budget.
pub fn run_too_large(size: &str, max: &str) -> String {
    format!("This run would then hold {size} of written files, more than the {max} one run may write. Memory files are short notes: write less, or stop here and leave the rest for a later run.")
}

/// Edit or Write of a path under a file this run wrote or removed (`a.md/b.md` after writing
/// `a.md`): one name cannot be both a file and a folder.
pub fn under_a_file(file: &str) -> String {
    format!("{file} is a file this run wrote or removed, so it cannot also be a folder. Choose another path.")
}

/// Write of a path that names the folder of files this run wrote.
pub fn over_a_folder(path: &str) -> String {
    format!("{path} holds files this run wrote, so it is a folder and cannot also be a file. Choose another path.")
}

/// Grep with a NUL byte in one of its text fields.
pub fn null_byte(field: &str) -> String {
    format!("The Grep {field} contains a null byte (\\0), which no pattern or path can use. Remove it and call Grep again.")
}

/// Grep with a path that does not exist.
pub fn no_such_path(path: &str, cwd: &str) -> String {
    format!(
        "Nothing exists at {path} (relative paths start from {cwd}). Pass an existing file or folder as path, or leave path out."
    )
}

/// Glob with a folder that does not exist.
pub fn no_such_folder(path: &str, cwd: &str) -> String {
    format!(
        "There is no folder at {path} (relative paths start from {cwd}). Pass an existing folder as path, or leave path out."
    )
}

/// The last line of a Glob result cut at `shown` paths.
pub fn glob_cut(shown: usize, total: usize) -> String {
    format!(
        "({} more paths match but are not shown: {shown} of {total}. Use a narrower pattern or path to see them.)",
        total - shown
    )
}

/// The note after a Grep or Glob result cut short by the time limit.
pub fn search_cut(secs: u64) -> String {
    format!("(The search stopped at its {secs}-second limit, so more matches may exist. Search a narrower path or a more specific pattern to see them all.)")
}

/// A Grep or Glob that found nothing before the time limit: not the same as no matches.
pub fn search_timed_out(secs: u64) -> String {
    format!("The search stopped at its {secs}-second limit before finding anything, so matches may still exist. Search a narrower path or a more specific pattern.")
}

/// The refusal of a call one of the user's permission rules covers (`Profile::
/// memory_agents_obey_permission_rules`): a deny rule, or an ask rule nobody can answer in a
/// background run. `source` is the settings file's label (`user`, `project`, …).
pub fn permission_rule_refused(tool: &str, behavior: &str, rule: &str, source: &str) -> String {
    let why = if behavior == "ask" {
        "asks for a person's approval, and no one can give it to a background memory run"
    } else {
        "refuses it"
    };
    format!("This {tool} call is covered by the {behavior} rule \"{rule}\" in the {source} settings, which {why}. Do not retry it; go on without it.")
}

/// A Read refused when it checks its input: a deny rule of the user's permission settings
/// covers the file.
pub fn read_denied_by_rule(rule: &str) -> String {
    format!("This file may not be read: the deny rule \"{rule}\" in the permission settings covers it.")
}

/// An Edit or Write refused when it checks its input: a deny rule covers the file, an Edit rule
/// (`edit_rule`) or a Read rule (what may not be read may not be written).
pub fn write_denied_by_rule(rule: &str, edit_rule: bool) -> String {
    let kind = if edit_rule { "deny" } else { "Read deny" };
    format!("This file may not be written: the {kind} rule \"{rule}\" in the permission settings covers it.")
}

/// The permission refusal for a network (UNC) path.
pub fn network_path(path: &str) -> String {
    format!("Reading {path} is refused: it is a network (UNC) path, and this agent reads only local files. Use a local path.")
}

/// The memory policy's refusal of a read under an automount map (`/net/<host>`,
/// `/Network/Servers/<host>`, `/net`), where looking could mount a remote host's share.
pub fn automount_path(path: &str) -> String {
    format!(
        "Reading {path} is refused: it is under the /net automount map, where even a look can mount a remote host's share over the network, and this agent reads only local files. Use a local path."
    )
}

/// The refusal of a read (or a shell command naming `path`) outside the working directories
/// and the memory folder while `permissions.blockReadsOutsideWorkingDirectories` is on, naming
/// the settings file that turned it on.
pub fn read_outside_blocked(path: &str, source: &str, file: &str) -> String {
    format!(
        "Reading {path} is refused: it is outside the working directories and the memory folder, and permissions.blockReadsOutsideWorkingDirectories is on in the {source} settings ({file}). Read files inside the project or the memory folder only."
    )
}

/// From 2.1.292, under `permissions.blockReadsOutsideWorkingDirectories`, a shell command
/// whose files cannot be told before it runs (`why`: a substitution, `eval`, …): the block asks
/// about such a command, and a memory agent has no one to ask.
pub fn shell_unchecked_under_read_block(why: &str, source: &str, file: &str) -> String {
    format!(
        "This command is refused: {why}, so which files it reads cannot be checked against permissions.blockReadsOutsideWorkingDirectories, which is on in the {source} settings ({file}). Name the files directly, without substitutions or eval, inside the project or the memory folder."
    )
}

/// A tool input that does not fit the tool's schema (after the `InputValidationError: `
/// prefix, which is part of the result format): one problem per line, in Claude Code's order
/// (missing, unexpected, wrong type).
pub fn bad_input(tool: &str, problems: &[String]) -> String {
    format!("{tool} cannot run with this input; correct it and call {tool} again:\n{}", problems.join("\n"))
}

/// A required parameter left out.
pub fn missing_param(name: &str) -> String {
    format!("- `{name}` is required but missing")
}

/// A parameter the tool does not have.
pub fn unknown_param(name: &str) -> String {
    format!("- `{name}` is not a parameter of this tool")
}

/// A parameter of the wrong JSON type (`input` for an input that is not an object).
pub fn wrong_type(name: &str, expected: &str, given: &str) -> String {
    format!("- `{name}` must be of type {expected}; this call gave {given}")
}

/// A number parameter that must be more than 0.
pub fn not_positive(name: &str, given: &str) -> String {
    format!("- `{name}` must be more than 0; this call gave {given}")
}

/// A number parameter that must be 0 or more.
pub fn negative(name: &str, given: &str) -> String {
    format!("- `{name}` must be 0 or more; this call gave {given}")
}

/// A string parameter outside its allowed values (the only problem reported then).
pub fn not_allowed(name: &str, allowed: &[&str], given: &str) -> String {
    let allowed = allowed.iter().map(|x| format!("'{x}'")).collect::<Vec<_>>().join(", ");
    format!("`{name}` must be one of {allowed}; this call gave '{given}'")
}

/// A Bash command stopped because the run was cancelled (the `<error>` wrapper is part of
/// Claude Code's result format).
pub const COMMAND_CANCELLED: &str = "<error>The command was stopped before it finished because the run was cancelled.</error>";

/// The memory policy's refusal of a `Bash` command that is neither read-only nor an `rm` of
/// paths inside the memory folder (`prefix`, with its trailing `/`).
pub fn shell_refused(prefix: &str) -> String {
    format!(
        "This command may not run here: only read-only commands (ls, find, grep, cat, stat, wc, head, tail and the like) and rm of paths inside {prefix} are allowed. Use one of those, or the Edit and Write tools for memory files."
    )
}
