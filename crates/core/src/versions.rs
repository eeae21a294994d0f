//! Claude Code versions and what changes between them.
//!
//! Claude Code updates itself almost daily, and some releases change what it sends the model:
//! the wrapper around the instructions, how files attached later arrive, the wording of the
//! MEMORY.md truncation warning, which files it reads. Every such difference lives here, as
//! data: [`CHANGES`] lists each change with the first release that has it, [`behaviours`]
//! folds them into the [`Profile`] of a release, and the loader and renderers take a
//! `Profile` instead of testing versions. A new change is one variant and one row.
//!
//! The table's boundaries were found by bisecting the npm releases against the real binaries;
//! `docs/claude-code-versions.md` says how, per behaviour. The versions the test matrix runs
//! the real binary for are listed in `data/claude-code-versions.txt` (one per line); a version
//! inside that range is covered by the bisection, one outside it is *unverified*: Mneme then
//! uses the nearest profile and says so.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// A Claude Code release number, `MAJOR.MINOR.PATCH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClaudeVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl ClaudeVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        ClaudeVersion { major, minor, patch }
    }

    /// The version in what `claude --version` prints (`2.1.332 (Claude Code)`), or in a bare
    /// `2.1.332`; a pre-release or build suffix (`-beta.1`, `+abc`) is ignored.
    pub fn from_version_output(text: &str) -> Option<Self> {
        text.split_whitespace().find_map(|word| word.parse().ok())
    }
}

impl fmt::Display for ClaudeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Serialize for ClaudeVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionParseError(pub String);

impl fmt::Display for VersionParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a Claude Code version; write it as MAJOR.MINOR.PATCH, for example 2.1.332", self.0)
    }
}

impl std::error::Error for VersionParseError {}

impl FromStr for ClaudeVersion {
    type Err = VersionParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let core = s.trim().trim_start_matches('v');
        let core = core.split(['-', '+']).next().unwrap_or(core);
        let parts: Vec<&str> = core.split('.').collect();
        let num = |p: &str| -> Option<u32> {
            (!p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit())).then(|| p.parse().ok()).flatten()
        };
        match parts.as_slice() {
            [a, b, c] => match (num(a), num(b), num(c)) {
                (Some(major), Some(minor), Some(patch)) => Ok(ClaudeVersion { major, minor, patch }),
                _ => Err(VersionParseError(s.to_string())),
            },
            _ => Err(VersionParseError(s.to_string())),
        }
    }
}

/// How the CLAUDE.md files reach the model in the first request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum InstructionsWrapper {
    /// One `<system-reminder>` "user context" block holding `# claudeMd` (when there are
    /// files) and `# currentDate`, closed by a note that the context may not be relevant.
    /// The block is sent even when no file loads (it still carries the date).
    UserContext,
    /// The instructions are a `<system-reminder>` block of their own, with no section header
    /// and no date (the date moved to the end of the system prompt); nothing is sent when no
    /// file loads.
    OwnReminder,
}

/// How files attached after the model reads something (conditional rules, sub-folder
/// CLAUDE.md) arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LazyAttachment {
    /// Appended to the Read's own tool result after a blank line: one `<system-reminder>`
    /// holding `Contents of PATH:` and its text per file, the reminders separated by a blank
    /// line, all of one turn's files on the turn's last result.
    InToolResult,
    /// One `role: system` message: each file as `Contents of PATH:` and its text, the files
    /// separated by a blank line.
    SystemMessage,
    /// One `<system-reminder>` text block per file in the user message that carries the tool
    /// results.
    ReminderPerFile,
}

/// Which settings sources `autoMemoryDirectory` is read from (before
/// [`Profile::memory_dir_from_enabled_sources`] narrows them further).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum MemoryDirSources {
    /// The policy, a flag file, the repository's local settings and the user's: never the
    /// checked-in project settings.
    AllButProject,
    /// Only the policy, a flag file and the user's settings (as before a folder is trusted).
    UserLevel,
    /// Every source: policy → flag → local → project → user.
    Every,
}

/// What runs a release's JavaScript. The npm package shipped `cli.js` for Node up to 2.1.112
/// and a Bun-compiled binary from 2.1.113; the native installer has always installed a binary.
/// The runtime decides two things Mneme shows: the order a folder's entries are listed in, and
/// how deep Markdown can nest before the lexer runs out of stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Runtime {
    /// Node: `fs.readdir` lists a folder sorted byte by byte (libuv sorts `scandir`), and its
    /// default stack of about 1 MB ends nesting after a couple of thousand levels.
    Node,
    /// A Bun binary: a folder is listed in the order the file system keeps it, and an 8 MiB
    /// stack nests past 11,000 levels.
    Bun,
}

/// Which YAML parser reads a release's frontmatter. Claude Code hands a block to its runtime's
/// parser: Node's releases bundle the strict `yaml` package, Bun binaries call `Bun.YAML.parse`,
/// whose reading changed with Bun 1.4 (docs/claude-code-versions.md, row 62).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum YamlParser {
    /// The `yaml` package (releases up to 2.1.112): tab indentation and a repeated key are errors.
    Node,
    /// Bun 1.3 (2.1.113 to 2.1.179): a tab separates like a space instead of indenting, so a
    /// tab-indented key lands at the top level (`metadata:\n\ttype: user` is a `type` of its
    /// own), and a value opened by `? ` is the text after it.
    Bun1_3,
    /// Bun 1.4 (from 2.1.181): a tab that indents is an error, and `key: ? value` does not parse.
    Bun1_4,
}

/// How a release reads a frontmatter block: its YAML parser, and the one retry after the parser
/// refuses a block, which quotes the values of `key: value` lines that hold a character YAML
/// treats specially. When the retry is refused too, the file has no frontmatter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontmatterReader {
    pub parser: YamlParser,
    /// The retry leaves a value alone that is a whole flow list (`[src/**, lib/**]`), instead
    /// of quoting it into one string (from 2.1.146).
    pub retry_keeps_lists: bool,
    /// The retry turns each tab that indents a line into two spaces (from 2.1.163).
    pub retry_untabs: bool,
}

impl FrontmatterReader {
    /// The newest release's reader.
    pub const NEWEST: FrontmatterReader =
        FrontmatterReader { parser: YamlParser::Bun1_4, retry_keeps_lists: true, retry_untabs: true };

    /// Every reader a release has had, oldest first (Node's to 2.1.112; Bun 1.3's from 2.1.113,
    /// keeping lists from 2.1.146 and untabbing from 2.1.163; Bun 1.4's from 2.1.181).
    pub const ALL: [FrontmatterReader; 5] = [
        FrontmatterReader { parser: YamlParser::Node, retry_keeps_lists: false, retry_untabs: false },
        FrontmatterReader { parser: YamlParser::Bun1_3, retry_keeps_lists: false, retry_untabs: false },
        FrontmatterReader { parser: YamlParser::Bun1_3, retry_keeps_lists: true, retry_untabs: false },
        FrontmatterReader { parser: YamlParser::Bun1_3, retry_keeps_lists: true, retry_untabs: true },
        FrontmatterReader::NEWEST,
    ];
}

/// The note appended to a MEMORY.md that was cut to fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TruncationNote {
    /// Releases before 2.1.83: only the 200-line cap exists (no size cap); the text is cut to
    /// its first 200 lines, and the note says so and asks for a shorter index. A MEMORY.md
    /// under the cap is left as it is on disk (not trimmed).
    FirstLines,
    /// Says why (lines, size or both) and that only part was loaded.
    Reason,
    /// Also says what was cut: how many lines from which line, quoting the first cut line, or
    /// where a single over-long first line was cut.
    ReasonAndCut,
}

/// How recall's selector side query is sent, apart from its system prompt (which Mneme reads
/// from the user's own binary) and its messages (the same dialogue in every release here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecallSelector {
    /// The model the `sonnet` alias names on the first-party API, when
    /// `ANTHROPIC_DEFAULT_SONNET_MODEL` does not name one.
    pub sonnet_model: &'static str,
    pub max_tokens: u32,
    /// `thinking: {"type": "disabled"}` is sent.
    pub thinking_disabled: bool,
    /// The answer's schema also offers `selected_knowledge_ids`.
    pub knowledge_ids: bool,
}

/// Which secret scanner a release runs (`scanForSecrets`: what it refuses to write into team
/// memory and leaves out of a push). Named by the first release of each; the rule tables are in
/// `mneme_secrets::claude_code`, checked against each release's own code by
/// `crates/secrets/tests/claude_code_oracle.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum SecretScanner {
    /// Up to 2.1.195: 36 token rules, a private key block among them.
    #[serde(rename = "2.1.80")]
    V2_1_80,
    /// 2.1.196: Google OAuth client secrets, OpenAI's legacy keys and Supabase's two key kinds;
    /// OpenAI keys of any length around `T3BlbkFJ`; a GCP key may end before any non-key character.
    #[serde(rename = "2.1.196")]
    V2_1_196,
    /// 2.1.232: GitLab's nine other token kinds, and GitLab tokens longer than 20 characters.
    #[serde(rename = "2.1.232")]
    V2_1_232,
    /// 2.1.234: Anthropic OAuth tokens, Slack rotation, workflow and webhook tokens and every
    /// Slack user token kind; a private key is a BEGIN line, 64 characters, then an END line.
    #[serde(rename = "2.1.234")]
    V2_1_234,
    /// 2.1.323: a private key whose BEGIN or END line was already redacted (`[REDACTED]PRIVATE
    /// KEY-----`) still counts.
    #[serde(rename = "2.1.323")]
    V2_1_323,
}

/// Which read-only Bash tables a release judges shell commands by (`readOnlyValidation`: each
/// command's safe flags, the plain read-only commands, find's predicates, the patterns), named
/// by the first release that has them. Mneme's agents run a command only when it passes them.
/// The tables are `crates/agent/data/readonly/<release>.json`, taken from each release's own
/// binary by `crates/agent/data/extract-readonly.mjs`; `crates/agent/tests/readonly_tables.rs`
/// checks them against the matrix's releases and `tests/bash_verdicts.rs` the verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct BashReadOnlyTables(pub ClaudeVersion);

impl BashReadOnlyTables {
    /// Every set some release judges by, oldest first: the baseline's and each change's.
    pub fn all() -> Vec<BashReadOnlyTables> {
        let changed = CHANGES.iter().filter_map(|(_, c)| match c {
            Change::BashReadOnly(t) => Some(*t),
            _ => None,
        });
        std::iter::once(BASELINE.bash_read_only).chain(changed).collect()
    }
}

/// The behaviours of a range of Claude Code releases that change what Mneme shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    /// The first release with exactly these behaviours (the newest change applied).
    pub since: ClaudeVersion,
    /// The release these behaviours were asked for ([`behaviours`]): what a per-release table,
    /// such as the settings schema's value rules, is looked up by.
    pub release: ClaudeVersion,
    /// What runs the release as npm installs it ([`Runtime`]); a native install of an older
    /// release is a binary all the same (`with_runtime`).
    pub runtime: Runtime,
    pub instructions: InstructionsWrapper,
    pub lazy: LazyAttachment,
    pub truncation_note: TruncationNote,
    /// Which wording of the `# Memory` section the system prompt carries (1, 2, …); the text
    /// itself is read from the user's binary, never shipped.
    pub memory_policy_revision: u8,
    /// A rule file reached through a symlink (or inside a symlinked folder) is loaded.
    pub rules_follow_symlinks: bool,
    /// Whether a rules folder or rule counts as reached through a symlink when its real path
    /// differs from its path, a linked `.claude` above it included; before, only when that path
    /// itself is a link (so the rules inside a linked `.claude` still loaded).
    pub links_judged_by_realpath: bool,
    /// A UTF-8 byte-order mark before `---` still lets the frontmatter be recognised.
    pub frontmatter_after_bom: bool,
    /// How frontmatter YAML is read (rules' `paths:`, memories' descriptions and types).
    pub frontmatter_reader: FrontmatterReader,
    /// `AGENTS.md` is read as project instructions where a folder has no CLAUDE.md.
    pub agents_md: bool,
    /// The AGENTS.md plugin's switches (`enabledPlugins`, its `instructionFiles` option) are
    /// honoured; 2.1.281-2.1.284 ran it in its default mode whatever they said.
    pub agents_md_settings_honoured: bool,
    /// MEMORY.md's CRLF line ends become LF before it is measured and cut.
    pub memory_index_crlf_to_lf: bool,
    /// A memory folder with topic files but no MEMORY.md gets one written from them at
    /// start-up (`mneme_store::memdir::generated_index`), and that is what loads.
    pub writes_missing_memory_index: bool,
    /// The settings sources `autoMemoryDirectory` is read from.
    pub memory_dir_sources: MemoryDirSources,
    /// `autoMemoryDirectory` is read only from the settings sources `--setting-sources`
    /// enables (older releases read every source regardless).
    pub memory_dir_from_enabled_sources: bool,
    /// The working folder is taken as spelled on disk. Older releases took its composed
    /// (NFC) spelling, so in a folder named in decomposed form they read the composed twin's
    /// files, and where there is no such twin they ended at once without a word.
    pub cwd_as_spelled: bool,
    /// `CLAUDE_CODE_DISABLE_CLAUDE_MDS` also keeps out what a Read would attach (nested
    /// CLAUDE.md files, conditional rules); older releases kept out only the start-up files.
    pub claude_mds_switch_covers_reads: bool,
    /// Managed-policy files (`/etc/claude-code`) carry their own label; older releases gave
    /// them the user's ("user's private global instructions for all projects").
    pub managed_files_own_label: bool,
    /// With the working folder taken in its composed spelling (`cwd_as_spelled` off), a folder
    /// with no composed twin stops Claude Code from starting; before 2.1.84 it started in the
    /// composed path all the same.
    pub refuses_missing_composed_cwd: bool,
    /// Each entry of a `paths:` list is its own pattern; before, the list was walked like a
    /// string and its entries ran together into one (`frontmatter::paths_parts_as_2_1_83`).
    pub paths_lists_split: bool,
    /// A file that can include others is lexed (and can fail, nested too deep) only when it
    /// holds an `@` or a comment; older releases lex every such file.
    pub lexes_only_files_with_at: bool,
    /// A blockquote's lazy continuation ends at a line starting HTML after up to three
    /// spaces (`  <!-- c -->`), so such a comment is stripped (the bundled marked's rule).
    pub blockquote_ends_at_indented_html: bool,
    /// Files loaded at start count as already read, so a Read does not attach them again: a
    /// `.claude/CLAUDE.md` reached as the `.claude` folder's own CLAUDE.md on the way to a file
    /// inside it, or a start-up include that a sub-folder's CLAUDE.md includes too. Older
    /// releases attach them again.
    pub reads_skip_startup_files: bool,
    /// Block nesting (quotes, list items) past which a file is left out: where the release's
    /// Markdown lexer runs out of stack under the usual 8 MiB (`BLOCK_NESTING_*`).
    pub block_nesting: usize,
    /// Variables no settings file's `env` block can set: Claude Code reads them before it
    /// applies the blocks (so a settings file cannot make a session remote).
    pub settings_env_ignored: &'static [&'static str],
    /// Variables a repository's own settings files (project, local) may not set through
    /// their `env` block; the user's, the flag file's and the policy's still apply.
    pub repo_env_ignored: &'static [&'static str],
    /// An instruction file over 4 MiB (`MAX_INSTRUCTION_FILE_BYTES` in `mneme-claudemd`) is
    /// left out without a word; older releases sent it whole.
    pub oversized_files_left_out: bool,
    /// Bare mode (`CLAUDE_CODE_SIMPLE`) loads nothing even with `--add-dir` (releases from
    /// 2.1.81 to 2.1.285 still loaded the working folder's files then; 2.1.80 and older did not).
    pub bare_loads_nothing: bool,
    /// Markdown is re-rendered only when a comment is really removed, and then keeps link
    /// reference definitions (older releases re-rendered any file holding `<!--`, which
    /// turned CRLF into LF and dropped a leading `[ref]: target` line).
    pub comments_rerender_only_when_removed: bool,
    /// Started in a sub-folder of a repository, the repository root's
    /// `.claude/settings.local.json` applies over the working folder's own (older releases
    /// read only the working folder's).
    pub local_settings_from_repo_root: bool,
    /// `CLAUDE_COWORK_MEMORY_PATH_OVERRIDE` is read trimmed (blank is unset); before, as it is.
    pub cowork_override_trimmed: bool,
    /// A managed-settings file with a wrong-typed key keeps its other keys (before, the whole
    /// file was left out).
    pub policy_keeps_valid_keys: bool,
    /// A broken hook entry costs the settings file only under the events whose hooks guard an
    /// action (`PreToolUse`, `PermissionRequest`); under any other event the release passes it.
    pub hooks_strict_only_where_they_guard: bool,
    /// A hook event whose value is not an array (`"Stop": "x"`, `null`) no longer costs the
    /// settings file (from 2.1.257 again, for a non-null value under an event that guards).
    pub hooks_mend_non_array_events: bool,
    /// A managed-settings file that is not a JSON object stops Claude Code from starting.
    pub policy_unparsable_stops_start: bool,
    /// A managed-settings file that cannot be read (other than for permission) stops it too.
    pub policy_unreadable_stops_start: bool,
    /// With the project source off (`--setting-sources` without `project`), no project rules
    /// are attached after a Read: neither the working folder's conditional rules nor any
    /// sub-folder's `.claude/rules` (older releases attached them; the sub-folders' CLAUDE.md
    /// files always needed the project source).
    pub project_rules_need_project_source: bool,
    /// A memory's type is read from `metadata.type` (the newer frontmatter) as well as a
    /// top-level `type`, so the recall manifest tags such memories, and the release's memory
    /// instructions ask for new memories in that form; older releases read and write only a
    /// top-level `type` (`frontmatter::Generation::written_by`).
    pub memory_type_in_metadata: bool,
    /// The manifest shows a memory's description only when its YAML is text; older releases
    /// print whatever value it is (a number, `true`) as JavaScript would.
    pub manifest_text_descriptions: bool,
    /// The memory scan behind the manifest leaves out files and folders whose name starts
    /// with `.`, and the top-level `logs/`, `sessions/` and `proposals/` folders, those and
    /// `team` named in any case (and with trailing dots or spaces); older releases list them.
    pub memory_scan_skips_dot_entries: bool,
    /// The memory scan keeps of a file's first 30 lines only whole lines within 64 KiB, so a
    /// frontmatter that closes later is not seen.
    pub memory_head_byte_cap: bool,
    /// The memory scan decodes a file that starts with the UTF-16LE byte-order mark as UTF-16
    /// (older releases read its bytes as UTF-8 and find no frontmatter).
    pub memory_heads_decode_utf16: bool,
    /// The memory scan behind the manifest leaves out what lies in a folder inside the top-level
    /// `team/` (`team/a/b.md`; `team/b.md` stays): those are other team stores' mounts.
    pub memory_scan_skips_team_subfolders: bool,
    /// The memory scan is Claude Code's own walk (rows 51 and 52): sub-folders depth first,
    /// then the links, sorted, each folder followed once, so links come after the plain files
    /// among the manifest's ties. Older releases list the folder with a recursive `readdir`,
    /// links where the folder has them, and fail on a link back into the folder
    /// (`mneme_store::memdir::listing`).
    pub memory_scan_links_last: bool,
    /// The recall selector is a dialogue kept for the conversation (the manifest first, then
    /// one message per query); older releases send one message per query holding both, with
    /// the recently used tools, in their own wording (the recall crate's `Dialect`).
    pub recall_dialogue: bool,
    /// The first recalled memory opens with a note that it was retrieved for possible
    /// relevance, and a memory saved today or yesterday is headed `Memory: <path>:` like any
    /// other; older releases headed it `Memory (saved today): <path>:` and had no note.
    pub recall_relevance_note: bool,
    /// The recall selector's model, limits and schema.
    pub recall_selector: RecallSelector,
    /// The secret scanner guarding team memory.
    pub secret_scanner: SecretScanner,
    /// The read-only Bash tables the agents' shell judges commands by.
    pub bash_read_only: BashReadOnlyTables,
    /// The memory agents may not write through a `.claude-science` folder inside the memory
    /// folder, as through `.git` or `.claude`; older releases let them.
    pub memory_agents_protect_claude_science: bool,
    /// The memory agents' `rm` refuses an operand with a `..` segment, even one that stays
    /// inside the memory folder; older releases judge the normalized path.
    pub memory_rm_refuses_parent_segments: bool,
    /// The memory agents' `rm` takes no flag but `-f`/`--force`, and holds each operand to the
    /// rule of their writes (no protected folder name); before, any flag but a recursive one,
    /// and any `.md` inside the memory folder.
    pub memory_rm_checked_as_writes: bool,
    /// A memory agent's write or `rm` of a path with a `:` after the memory folder is refused.
    pub memory_paths_refuse_colon: bool,
    /// The memory agents' calls answer to the user's permission rules too: a `deny` or `ask`
    /// rule of any settings source that covers a call refuses it (an agent runs in the
    /// background, with no one to ask), before their own guard is consulted.
    pub memory_agents_obey_permission_rules: bool,
    /// The memory agents' Read, Grep and Glob refuse a path under the `/net` automount map
    /// (`/net/<host>…`: reading it could mount a remote host's share over the network).
    pub memory_agents_refuse_net_hosts: bool,
    /// ... and one under `/Network/Servers/<host>` too (the same map's other spelling).
    pub memory_agents_refuse_network_servers: bool,
    /// ... and `/net` itself.
    pub memory_agents_refuse_net_root: bool,
    /// The memory agents' Read, Grep and Glob answer to `permissions.blockReadsOutsideWorkingDirectories`:
    /// a path outside the working directories and outside the memory folder is refused (with
    /// [`Profile::memory_agents_obey_permission_rules`] a shell command naming one is too).
    pub memory_agents_obey_read_block: bool,
    /// A whole-file Read over the token cap returns its first page (with a note on how to read
    /// on); before, it is refused as a range over the cap is.
    pub read_first_page: bool,
    /// The note on a Read's first page (a whole file over the token cap) comes after the
    /// results, naming the file, instead of opening the result.
    pub read_page_note_after_result: bool,
    /// Edit and Write refuse, when they check their input, a file a Read deny rule covers (a
    /// whole-tool `Read` rule covers every file); before, only one an `Edit(path)` deny rule covers.
    pub writes_refuse_read_denied: bool,
    /// The team-memory check on a Write or Edit runs [`Profile::secret_scanner`] also on the text
    /// with control and invisible characters left out (then without ZWNJ, ZWJ, VS15 and VS16 too),
    /// so a token split by one is refused; before, on the text as written only.
    pub secret_scan_readings: bool,
    /// A Read that selects lines of a file with no text (an empty file from the start) warns
    /// that the file is empty; before, it said the file was shorter than the offset.
    pub read_empty_file_warns: bool,
    /// A Grep or Glob whose pattern, glob or file type ripgrep refuses fails with ripgrep's
    /// message; before, it answered that nothing was found.
    pub searches_report_refused_input: bool,
    /// A Read's `limit: 0` means no limit; before, the schema refused a limit that is not
    /// above 0.
    pub read_limit_zero_is_none: bool,
    /// Read offers `allow_large`: with it a file, or a range of one, above the size and token
    /// limits is returned whole (up to what fits), and the refusal of a file above the size
    /// limit names it; before, the schema refused it as an unexpected parameter.
    pub read_allow_large: bool,
    /// A Read with `offset: 0` numbers the file's lines from 1; before, from 0 (`0\t` for
    /// the first line), though it read from the first line all the same.
    pub read_offset_zero_numbers_from_one: bool,
    /// A successful Edit or Write ends by saying the file's state is current in the model's
    /// context, so it need not read the file back; before, the answer ended with the path.
    pub edits_say_state_is_current: bool,
    /// Grep offers `-o` (only the matched parts); before, the schema refused it as an
    /// unexpected parameter.
    pub grep_only_matching: bool,
    /// A Read repeating the previous one of a file unchanged since is answered with a short
    /// note instead of the text again (up to 2.1.316).
    pub read_dedups_unchanged: bool,
    /// A Grep or Glob given a path that does not exist fails when it runs; before, the call was
    /// refused as bad input (the answer wrapped as a `<tool_use_error>`).
    pub search_path_checked_when_run: bool,
    /// `CLAUDE_COWORK_MEMORY_INDEX_CONTENT`, when set (from the shell or a settings file's
    /// `env` block), is the auto-memory index instead of MEMORY.md's text: truncated as the file
    /// is, nothing else done to it, and an empty value loads no index. Older releases ignore it.
    pub memory_index_from_env: bool,
    /// Auto dream is offered (and, with `autoDreamEnabled` unset, on) not only to accounts the
    /// cached server flag `tengu_onyx_plover` marks, but also in a session whose team memory
    /// holds content on Anthropic's server: 2.1.101 to 2.1.209. Before and after, the flag alone
    /// decides whether Claude Code dreams at all.
    pub dream_offered_by_team_memory: bool,
    /// With `CLAUDE_MEMORY_STORES` set to anything but blanks (from the shell or a settings
    /// file's `env` block), MEMORY.md is not loaded at start: Claude Code recalls memories turn
    /// by turn instead, as its `tengu_moth_copse` flag makes it do. Older releases load it.
    pub memory_stores_skip_index: bool,
    /// A session that read a claude.ai chat's text saved on disk (a Read of a file named
    /// `artifact-chat.*` in a `tool-results` folder under the config home's `projects/`) saves
    /// no memory for the rest of the session: extraction does not run at its turn ends, auto
    /// dream does not fire from it, and its writes to the memory folder are refused until
    /// `/clear`. Older releases go on saving.
    pub memory_off_after_chat_read: bool,
    /// Auto dream, its lock taken, searches the transcript folder for `hybrid-organization`
    /// records and gives the lock back without dreaming when they name another organization
    /// than the session's, or several (`mneme_dream::organization`). Older releases do not.
    pub dream_skips_other_hybrid_organization: bool,
    /// That search also finds restricted `session-owner` records (an organization that keeps
    /// conversations for a limited time) and skips the dream unless the session runs under the
    /// same owner.
    pub dream_skips_other_retention_owner: bool,
    /// MEMORY.md's label in the instructions is reworded (a caution that its notes grant no
    /// permission) when the cached server flag `tengu_woolly_harp` is on for the session
    /// (`mneme_store::server_flags`); older releases never read that flag.
    pub auto_memory_label_by_flag: bool,
    /// MEMORY.md's text is cleaned before it is sent: control and invisible characters
    /// dropped, and a `<` that opens one of these tag names (those Claude Code's own requests
    /// use) escaped as `<\`; an index with nothing visible left is not sent. `None` before
    /// 2.1.284: the text went out as it is.
    pub memory_index_tags: Option<MemoryIndexTags>,
    /// MEMORY.md's cleaned text goes out quoted: a fixed preamble first, then every line behind
    /// one `> ` (a line's own leading `> `s folded into it).
    pub memory_index_quoted: bool,
    /// In a Cowork session (`CLAUDE_CODE_ENTRYPOINT` `remote_cowork` or `remote_cowork_trigger`),
    /// a managed file the session's own account could have written (root; the file, or a folder
    /// on its way from `/`, owned or writable by the account; a file outside the managed folder)
    /// is labelled as unverified, its path quoted, its text cleaned like MEMORY.md's and every
    /// line behind `> ` (`mneme_claudemd::managed`). Other sessions, and older releases, keep
    /// the managed label whoever owns the folder.
    pub unverified_managed_files: bool,
}

/// How deep a release's Markdown lexer nests before JavaScript runs out of stack and the file
/// is left out, measured on each release by bisection (`scripts/claude-nesting-limit.sh`,
/// `ulimit -s` 8192; docs/claude-code-versions.md, rows 33 and 40). Each sits a little under
/// the lowest depth measured for its releases, quotes, lists and quote-and-item pairs alike,
/// since the exact depth moves a few dozen levels with the environment.
///
/// Releases on Node (`cli.js`, up to 2.1.112): Node's ~1 MB stack; 2.1.112 on Node 20 loads
/// 2,050 quote levels and drops 2,100, loads 1,500 list levels and drops 2,000.
pub const BLOCK_NESTING_NODE: usize = 1_500;
/// Binaries (2.1.113 on) with small lexer frames: 11,500 quote levels in 2.1.122, 11,585 in
/// 2.1.310, 13,750 in 2.1.332, more than 14,500 in 2.1.331, and more list levels.
pub const BLOCK_NESTING_BINARY: usize = 11_000;
/// 2.1.311 to 2.1.327, whose lexer frames are larger: 7,902 quote levels in 2.1.311 and
/// 2.1.312, 7,702 to 7,730 in 2.1.314 to 2.1.327; 2.1.316 loads 8,464 list levels and 3,995
/// quote-and-item pairs (7,990 levels).
pub const BLOCK_NESTING_BINARY_2_1_311: usize = 7_500;
/// 2.1.328 to 2.1.330: 8,464 quote levels.
pub const BLOCK_NESTING_BINARY_2_1_328: usize = 8_200;

/// From 2.1.195: `CLAUDE_CODE_REMOTE` is read before the settings files' `env` blocks.
const SETTINGS_ENV_IGNORED_REMOTE: &[&str] = &["CLAUDE_CODE_REMOTE"];
/// From 2.1.246: a repository may not put Claude Code into bare mode or safe mode. (The
/// release's list holds more names; these are the ones that decide what Mneme shows.)
const REPO_ENV_IGNORED_BARE: &[&str] = &["CLAUDE_CODE_SIMPLE", "CLAUDE_CODE_SAFE_MODE"];
/// From 2.1.251: nor move where Claude Code keeps its configuration and memory.
const REPO_ENV_IGNORED_LOCATIONS: &[&str] = &[
    "CLAUDE_CODE_SIMPLE",
    "CLAUDE_CODE_SAFE_MODE",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
    "CLAUDE_CODE_REMOTE_MEMORY_DIR",
];
/// From 2.1.290: nor turn off what is attached after a read.
const REPO_ENV_IGNORED_ATTACHMENTS: &[&str] = &[
    "CLAUDE_CODE_SIMPLE",
    "CLAUDE_CODE_SAFE_MODE",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
    "CLAUDE_CODE_REMOTE_MEMORY_DIR",
    "CLAUDE_CODE_DISABLE_ATTACHMENTS",
];

/// The tag names releases from 2.1.284 neutralize in MEMORY.md's text: the ones their own
/// requests use to mark what a tool, a command, a hook or another agent said (read from each
/// release's bundle; the list is the same from 2.1.284 to 2.1.337 but for one addition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryIndexTags {
    /// `untrusted-widget-state`, from 2.1.317 (2.1.316 lacks it, bisected).
    pub untrusted_widget_state: bool,
    /// Which release's neutralizer reads the text: the look-alike brackets and letters of its
    /// table (`mneme_claudemd`'s `data/lookalikes.txt`, each entry with the release that added
    /// it) and, from 2.1.337, a second reading. 2.1.284 first; 2.1.314 read 18 more brackets
    /// (two outside the BMP); 2.1.315 read subscript w, y and z as letters; 2.1.337 also reads
    /// the text without controls and private-use characters, and without `antml:` after a `<`
    /// (bisected on the real binaries: 2.1.312 and 2.1.314, 2.1.314 and 2.1.315, 2.1.332 and
    /// 2.1.337; 2.1.313 and 2.1.333 to 2.1.336 were never published).
    pub neutralizer: ClaudeVersion,
}

impl MemoryIndexTags {
    const BASE: &'static [&'static str] = &[
        "bash-input", "bash-stdout", "bash-stderr", "bash-exit-code", "local-command-stdout", "local-command-stderr",
        "local-command-caveat", "command-name", "command-message", "command-args", "task-notification", "agent-message",
        "teammate-message", "cross-session-message", "remote-review", "slack-ping", "slack-tag-message", "tick",
        "fetched-web-content", "coordinator-relay", "artifact-type-instructions", "cowritten-artifact-html",
        "artifact-file-content", "artifact-origin-notes", "artifact-stored-declaration", "channel", "system-reminder",
        "system_reminder", "function_results", "tool_use_error", "sandbox_violations", "persisted-output", "total_tokens",
        "user-prompt-submit-hook",
    ];

    /// The names, in no particular order.
    pub fn names(self) -> Vec<&'static str> {
        let mut names = Self::BASE.to_vec();
        if self.untrusted_widget_state {
            names.push("untrusted-widget-state");
        }
        names
    }
}

/// The cached server flag that rewords MEMORY.md's label, for releases with
/// [`Profile::auto_memory_label_by_flag`].
pub const AUTO_MEMORY_LABEL_FLAG: &str = "tengu_woolly_harp";

/// One behaviour that changed in a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    /// Bare mode with `--add-dir` loads the working folder's and the added folders' files.
    BareLoadsAddDirs,
    /// MEMORY.md's label follows the server flag `tengu_woolly_harp`.
    AutoMemoryLabelByFlag,
    /// MEMORY.md's text is cleaned, with this list of tag names to neutralize.
    MemoryIndexCleaned(MemoryIndexTags),
    /// MEMORY.md's tag neutralizer became this release's.
    MemoryIndexNeutralizer(ClaudeVersion),
    /// MEMORY.md's text goes out quoted behind a preamble.
    MemoryIndexQuoted,
    /// A Cowork session labels managed files its own account could have written as unverified.
    UnverifiedManagedFiles,
    /// MEMORY.md gets a size cap besides the line cap, and a note that says which was met.
    MemoryIndexSizeCap,
    /// A `paths:` list's entries are separate patterns.
    PathsListsSplit,
    /// A working folder with no composed twin stops Claude Code from starting.
    RefusesMissingComposedCwd,
    /// The npm package became a Bun binary instead of `cli.js` for Node.
    BunBinary,
    /// The lexer's frames changed size, so the nesting it survives moved ([`Profile::block_nesting`]).
    LexerStack(usize),
    /// Files without an `@` or a comment are no longer lexed.
    LexesOnlyFilesWithAt,
    /// Managed-policy files got a label of their own.
    ManagedFilesOwnLabel,
    /// Files attached later moved from the Read's result to a system message.
    LazySystemMessage,
    /// `CLAUDE_CODE_DISABLE_CLAUDE_MDS` also stops what a Read attaches.
    ClaudeMdsSwitchCoversReads,
    /// The repository's local settings can no longer set `autoMemoryDirectory`.
    MemoryDirFromUserLevelOnly,
    /// Every settings source, the checked-in project settings too, can set `autoMemoryDirectory`.
    MemoryDirFromRepoSettings,
    /// The working folder is no longer normalized to NFC.
    CwdAsSpelled,
    /// `CLAUDE_CODE_REMOTE` stopped being settable from a settings file's `env` block.
    RemoteReadBeforeSettings,
    /// Instruction files over 4 MiB stopped loading.
    OversizedFilesLeftOut,
    /// The `# Memory` section of the system prompt was reworded.
    MemoryPolicyReworded,
    /// Rules reached through symlinks stopped loading.
    RuleSymlinksIgnored,
    /// The symlink check looks at the real path, so a linked `.claude`'s rules stop loading.
    LinksJudgedByRealpath,
    /// A byte-order mark before the frontmatter is skipped.
    FrontmatterAfterBom,
    /// The instructions became a `<system-reminder>` of their own, without the date.
    InstructionsOwnReminder,
    /// The MEMORY.md truncation note says what was cut.
    TruncationNoteSaysWhatWasCut,
    /// `AGENTS.md` is read as project instructions.
    AgentsMd,
    /// The AGENTS.md plugin's settings take effect.
    AgentsMdSettingsHonoured,
    /// Files attached later arrive as one `<system-reminder>` block per file.
    LazyReminderPerFile,
    /// MEMORY.md's CRLF line ends are read as LF.
    MemoryIndexCrlfToLf,
    /// A missing MEMORY.md is written from the topic files at start-up.
    WritesMissingMemoryIndex,
    /// `autoMemoryDirectory` follows `--setting-sources`.
    MemoryDirFromEnabledSources,
    /// Indented HTML ends a blockquote's lazy continuation.
    BlockquoteEndsAtIndentedHtml,
    /// A repository's settings `env` can no longer turn on bare mode.
    RepoEnvIgnoresBareMode,
    /// A repository's settings `env` can no longer move the config or memory folders.
    RepoEnvIgnoresLocations,
    /// A repository's settings `env` can no longer turn off attachments after reads.
    RepoEnvIgnoresAttachments,
    /// Bare mode loads nothing, `--add-dir` or not.
    BareLoadsNothing,
    /// Comment stripping re-renders only files it changes, keeping link definitions.
    CommentsRerenderOnlyWhenRemoved,
    /// The repository root's local settings apply in its sub-folders.
    LocalSettingsFromRepoRoot,
    /// The cowork memory-folder override is read through the env schema, trimmed.
    CoworkOverrideTrimmed,
    /// A managed-settings file keeps its valid keys when one is wrong-typed.
    PolicyKeepsValidKeys,
    /// Broken hook entries cost the file only under the events whose hooks guard an action.
    HooksStrictOnlyWhereTheyGuard,
    /// A hook event whose value is not an array no longer costs the file.
    HooksMendNonArrayEvents,
    /// A managed-settings file that is not a JSON object stops Claude Code from starting.
    PolicyUnparsableStopsStart,
    /// A managed-settings file that cannot be read stops Claude Code from starting.
    PolicyUnreadableStopsStart,
    /// Project rules attach after a Read only with the project source on.
    ProjectRulesNeedProjectSource,
    /// A Read no longer attaches files that were loaded at start.
    ReadsSkipStartupFiles,
    /// A memory's `metadata.type` counts as its type.
    MemoryTypeInMetadata,
    /// The manifest shows a description only when it is text.
    ManifestTextDescriptions,
    /// The memory scan leaves out dot files and dot folders, and the reserved top-level folders.
    MemoryScanSkipsDotEntries,
    /// The memory scan leaves out folders inside `team/`.
    MemoryScanSkipsTeamSubfolders,
    /// The memory scan reads heads within 64 KiB.
    MemoryHeadByteCap,
    /// The memory scan decodes UTF-16LE files.
    MemoryHeadsDecodeUtf16,
    /// The memory scan lists links after plain files.
    MemoryScanLinksLast,
    /// The recall selector became a dialogue kept for the conversation.
    RecallDialogue,
    /// Recalled memories got the relevance note and lost the saved-when header.
    RecallRelevanceNote,
    /// The recall selector is asked with another model, limits or schema.
    RecallSelector(RecallSelector),
    /// The secret scanner changed its rules.
    SecretScanner(SecretScanner),
    /// The read-only Bash tables changed.
    BashReadOnly(BashReadOnlyTables),
    /// `.claude-science` joins the folder names the memory agents may not write through.
    MemoryAgentsProtectClaudeScience,
    /// The memory agents' `rm` refuses operands with a `..` segment.
    MemoryRmRefusesParentSegments,
    /// The memory agents' `rm` takes only `-f` and answers to the write rule.
    MemoryRmCheckedAsWrites,
    /// The memory agents refuse paths with a `:` inside the memory folder.
    MemoryPathsRefuseColon,
    /// The memory agents' calls answer to the user's `deny` and `ask` permission rules.
    MemoryAgentsObeyPermissionRules,
    /// The memory agents' reads refuse `/net/<host>` paths.
    MemoryAgentsRefuseNetHosts,
    /// ... and `/Network/Servers/<host>` paths.
    MemoryAgentsRefuseNetworkServers,
    /// ... and `/net` itself.
    MemoryAgentsRefuseNetRoot,
    /// The memory agents' reads answer to `blockReadsOutsideWorkingDirectories`.
    MemoryAgentsObeyReadBlock,
    /// A whole-file Read over the token cap returns its first page.
    ReadFirstPage,
    /// A Read's first-page note comes after the results.
    ReadPageNoteAfterResult,
    /// Edit and Write refuse files a Read deny rule covers.
    WritesRefuseReadDenied,
    /// The team-memory secret check also scans the text with invisible characters left out.
    SecretScanReadings,
    /// `CLAUDE_MEMORY_STORES` turns the MEMORY.md index off.
    MemoryStoresSkipIndex,
    /// Reading a saved claude.ai chat stops the session's memory saving.
    MemoryOffAfterChatRead,
    /// Auto dream skips sessions of another hybrid organization.
    DreamSkipsOtherHybridOrganization,
    /// Auto dream skips sessions of another restricted (limited-retention) owner.
    DreamSkipsOtherRetentionOwner,
    /// `CLAUDE_COWORK_MEMORY_INDEX_CONTENT` stands in for MEMORY.md.
    MemoryIndexFromEnv,
    /// Auto dream is offered where team memory holds content, too (`true`), or again by the
    /// server flag alone (`false`).
    DreamOfferedByTeamMemory(bool),
    /// The agent's Read warns of an empty file where it had said "shorter than the offset".
    ReadEmptyFileWarns,
    /// The agent's Grep and Glob fail with ripgrep's message where they had found nothing.
    SearchesReportRefusedInput,
    /// The agent's Grep and Glob check their path when they run, not as input.
    SearchPathCheckedWhenRun,
    /// The agent's Read answers a repeated Read of an unchanged file in full.
    ReadRepeatsInFull,
    /// The agent's Read takes `limit: 0` for no limit.
    ReadLimitZeroIsNone,
    /// The agent's Read takes `allow_large`.
    ReadAllowLarge,
    /// The agent's Read numbers from 1 after `offset: 0`.
    ReadOffsetZeroNumbersFromOne,
    /// The agent's Edit and Write say the file's state is current.
    EditsSayStateIsCurrent,
    /// The agent's Grep offers `-o`.
    GrepOnlyMatching,
    /// Frontmatter YAML is read by another parser.
    YamlParser(YamlParser),
    /// The frontmatter retry leaves whole flow lists unquoted.
    FrontmatterRetryKeepsLists,
    /// The frontmatter retry turns indenting tabs into spaces.
    FrontmatterRetryUntabs,
}

impl Change {
    fn apply(self, p: &mut Profile) {
        match self {
            Change::BareLoadsAddDirs => p.bare_loads_nothing = false,
            Change::AutoMemoryLabelByFlag => p.auto_memory_label_by_flag = true,
            Change::MemoryIndexQuoted => p.memory_index_quoted = true,
            Change::UnverifiedManagedFiles => p.unverified_managed_files = true,
            Change::MemoryIndexCleaned(tags) => p.memory_index_tags = Some(tags),
            Change::MemoryIndexNeutralizer(release) => {
                if let Some(tags) = p.memory_index_tags.as_mut() {
                    tags.neutralizer = release;
                }
            }
            Change::MemoryIndexSizeCap => p.truncation_note = TruncationNote::Reason,
            Change::PathsListsSplit => p.paths_lists_split = true,
            Change::RefusesMissingComposedCwd => p.refuses_missing_composed_cwd = true,
            Change::BunBinary => {
                p.runtime = Runtime::Bun;
                p.frontmatter_reader.parser = YamlParser::Bun1_3;
                p.block_nesting = BLOCK_NESTING_BINARY;
            }
            Change::LexerStack(levels) => p.block_nesting = levels,
            Change::LexesOnlyFilesWithAt => p.lexes_only_files_with_at = true,
            Change::ManagedFilesOwnLabel => p.managed_files_own_label = true,
            Change::LazySystemMessage => p.lazy = LazyAttachment::SystemMessage,
            Change::ClaudeMdsSwitchCoversReads => p.claude_mds_switch_covers_reads = true,
            Change::MemoryDirFromUserLevelOnly => p.memory_dir_sources = MemoryDirSources::UserLevel,
            Change::MemoryDirFromRepoSettings => p.memory_dir_sources = MemoryDirSources::Every,
            Change::CwdAsSpelled => p.cwd_as_spelled = true,
            Change::MemoryPolicyReworded => p.memory_policy_revision += 1,
            Change::RuleSymlinksIgnored => p.rules_follow_symlinks = false,
            Change::RemoteReadBeforeSettings => p.settings_env_ignored = SETTINGS_ENV_IGNORED_REMOTE,
            Change::OversizedFilesLeftOut => p.oversized_files_left_out = true,
            Change::LinksJudgedByRealpath => p.links_judged_by_realpath = true,
            Change::FrontmatterAfterBom => p.frontmatter_after_bom = true,
            Change::InstructionsOwnReminder => p.instructions = InstructionsWrapper::OwnReminder,
            Change::TruncationNoteSaysWhatWasCut => p.truncation_note = TruncationNote::ReasonAndCut,
            Change::AgentsMd => p.agents_md = true,
            Change::AgentsMdSettingsHonoured => p.agents_md_settings_honoured = true,
            Change::LazyReminderPerFile => p.lazy = LazyAttachment::ReminderPerFile,
            Change::MemoryIndexCrlfToLf => p.memory_index_crlf_to_lf = true,
            Change::WritesMissingMemoryIndex => p.writes_missing_memory_index = true,
            Change::MemoryDirFromEnabledSources => p.memory_dir_from_enabled_sources = true,
            Change::BlockquoteEndsAtIndentedHtml => p.blockquote_ends_at_indented_html = true,
            Change::RepoEnvIgnoresBareMode => p.repo_env_ignored = REPO_ENV_IGNORED_BARE,
            Change::RepoEnvIgnoresLocations => p.repo_env_ignored = REPO_ENV_IGNORED_LOCATIONS,
            Change::RepoEnvIgnoresAttachments => p.repo_env_ignored = REPO_ENV_IGNORED_ATTACHMENTS,
            Change::BareLoadsNothing => p.bare_loads_nothing = true,
            Change::CommentsRerenderOnlyWhenRemoved => p.comments_rerender_only_when_removed = true,
            Change::LocalSettingsFromRepoRoot => p.local_settings_from_repo_root = true,
            Change::CoworkOverrideTrimmed => p.cowork_override_trimmed = true,
            Change::PolicyKeepsValidKeys => p.policy_keeps_valid_keys = true,
            Change::HooksStrictOnlyWhereTheyGuard => p.hooks_strict_only_where_they_guard = true,
            Change::HooksMendNonArrayEvents => p.hooks_mend_non_array_events = true,
            Change::PolicyUnparsableStopsStart => p.policy_unparsable_stops_start = true,
            Change::PolicyUnreadableStopsStart => p.policy_unreadable_stops_start = true,
            Change::ProjectRulesNeedProjectSource => p.project_rules_need_project_source = true,
            Change::ReadsSkipStartupFiles => p.reads_skip_startup_files = true,
            Change::MemoryTypeInMetadata => p.memory_type_in_metadata = true,
            Change::ManifestTextDescriptions => p.manifest_text_descriptions = true,
            Change::MemoryScanSkipsDotEntries => p.memory_scan_skips_dot_entries = true,
            Change::MemoryScanSkipsTeamSubfolders => p.memory_scan_skips_team_subfolders = true,
            Change::MemoryHeadByteCap => p.memory_head_byte_cap = true,
            Change::MemoryHeadsDecodeUtf16 => p.memory_heads_decode_utf16 = true,
            Change::MemoryScanLinksLast => p.memory_scan_links_last = true,
            Change::RecallDialogue => p.recall_dialogue = true,
            Change::RecallRelevanceNote => p.recall_relevance_note = true,
            Change::RecallSelector(selector) => p.recall_selector = selector,
            Change::SecretScanner(scanner) => p.secret_scanner = scanner,
            Change::BashReadOnly(tables) => p.bash_read_only = tables,
            Change::MemoryAgentsProtectClaudeScience => p.memory_agents_protect_claude_science = true,
            Change::MemoryRmRefusesParentSegments => p.memory_rm_refuses_parent_segments = true,
            Change::MemoryRmCheckedAsWrites => p.memory_rm_checked_as_writes = true,
            Change::MemoryPathsRefuseColon => p.memory_paths_refuse_colon = true,
            Change::MemoryAgentsObeyPermissionRules => p.memory_agents_obey_permission_rules = true,
            Change::MemoryAgentsRefuseNetHosts => p.memory_agents_refuse_net_hosts = true,
            Change::MemoryAgentsRefuseNetworkServers => p.memory_agents_refuse_network_servers = true,
            Change::MemoryAgentsRefuseNetRoot => p.memory_agents_refuse_net_root = true,
            Change::MemoryAgentsObeyReadBlock => p.memory_agents_obey_read_block = true,
            Change::ReadFirstPage => p.read_first_page = true,
            Change::ReadPageNoteAfterResult => p.read_page_note_after_result = true,
            Change::WritesRefuseReadDenied => p.writes_refuse_read_denied = true,
            Change::SecretScanReadings => p.secret_scan_readings = true,
            Change::MemoryStoresSkipIndex => p.memory_stores_skip_index = true,
            Change::MemoryOffAfterChatRead => p.memory_off_after_chat_read = true,
            Change::DreamSkipsOtherHybridOrganization => p.dream_skips_other_hybrid_organization = true,
            Change::DreamSkipsOtherRetentionOwner => p.dream_skips_other_retention_owner = true,
            Change::MemoryIndexFromEnv => p.memory_index_from_env = true,
            Change::DreamOfferedByTeamMemory(on) => p.dream_offered_by_team_memory = on,
            Change::ReadEmptyFileWarns => p.read_empty_file_warns = true,
            Change::SearchesReportRefusedInput => p.searches_report_refused_input = true,
            Change::SearchPathCheckedWhenRun => p.search_path_checked_when_run = true,
            Change::ReadRepeatsInFull => p.read_dedups_unchanged = false,
            Change::ReadLimitZeroIsNone => p.read_limit_zero_is_none = true,
            Change::ReadAllowLarge => p.read_allow_large = true,
            Change::ReadOffsetZeroNumbersFromOne => p.read_offset_zero_numbers_from_one = true,
            Change::EditsSayStateIsCurrent => p.edits_say_state_is_current = true,
            Change::GrepOnlyMatching => p.grep_only_matching = true,
            Change::YamlParser(parser) => p.frontmatter_reader.parser = parser,
            Change::FrontmatterRetryKeepsLists => p.frontmatter_reader.retry_keeps_lists = true,
            Change::FrontmatterRetryUntabs => p.frontmatter_reader.retry_untabs = true,
        }
    }
}

/// The oldest behaviours Mneme reproduces: 2.1.80's (`since`, the oldest release differential
/// runs compared; the matrix's oldest is 2.1.100, and releases up to 2.1.112 ship `cli.js` for
/// Node). Older releases get these too, flagged unverified: 2.1.70, for one, ends with an error
/// instead of dropping a file nested too deep. The agents' tools are 2.1.92's here: the few ways
/// 2.1.80–2.1.91 answer otherwise are listed, not reproduced (docs/claude-code-versions.md).
pub const BASELINE: Profile = Profile {
    since: ClaudeVersion::new(2, 1, 80),
    release: ClaudeVersion::new(2, 1, 80),
    runtime: Runtime::Node,
    instructions: InstructionsWrapper::UserContext,
    lazy: LazyAttachment::InToolResult,
    truncation_note: TruncationNote::FirstLines,
    memory_policy_revision: 1,
    rules_follow_symlinks: true,
    links_judged_by_realpath: false,
    frontmatter_after_bom: false,
    frontmatter_reader: FrontmatterReader { parser: YamlParser::Node, retry_keeps_lists: false, retry_untabs: false },
    agents_md: false,
    agents_md_settings_honoured: false,
    memory_index_crlf_to_lf: false,
    writes_missing_memory_index: false,
    memory_dir_sources: MemoryDirSources::AllButProject,
    memory_dir_from_enabled_sources: false,
    cwd_as_spelled: false,
    claude_mds_switch_covers_reads: false,
    managed_files_own_label: false,
    refuses_missing_composed_cwd: false,
    paths_lists_split: false,
    lexes_only_files_with_at: false,
    blockquote_ends_at_indented_html: false,
    reads_skip_startup_files: false,
    block_nesting: BLOCK_NESTING_NODE,
    settings_env_ignored: &[],
    repo_env_ignored: &[],
    oversized_files_left_out: false,
    bare_loads_nothing: true,
    comments_rerender_only_when_removed: false,
    local_settings_from_repo_root: false,
    cowork_override_trimmed: false,
    policy_keeps_valid_keys: false,
    hooks_strict_only_where_they_guard: false,
    hooks_mend_non_array_events: false,
    policy_unparsable_stops_start: false,
    policy_unreadable_stops_start: false,
    project_rules_need_project_source: false,
    memory_type_in_metadata: false,
    manifest_text_descriptions: false,
    memory_scan_skips_dot_entries: false,
    memory_scan_skips_team_subfolders: false,
    memory_head_byte_cap: false,
    memory_heads_decode_utf16: false,
    memory_scan_links_last: false,
    recall_dialogue: false,
    recall_relevance_note: false,
    recall_selector: RECALL_SELECTOR_2_1_80,
    secret_scanner: SecretScanner::V2_1_80,
    bash_read_only: BashReadOnlyTables(ClaudeVersion::new(2, 1, 113)),
    memory_agents_protect_claude_science: false,
    memory_rm_refuses_parent_segments: false,
    memory_rm_checked_as_writes: false,
    memory_paths_refuse_colon: false,
    memory_agents_obey_permission_rules: false,
    memory_agents_refuse_net_hosts: false,
    memory_agents_refuse_network_servers: false,
    memory_agents_refuse_net_root: false,
    memory_agents_obey_read_block: false,
    read_first_page: false,
    read_page_note_after_result: false,
    writes_refuse_read_denied: false,
    secret_scan_readings: false,
    read_empty_file_warns: false,
    searches_report_refused_input: false,
    search_path_checked_when_run: false,
    read_dedups_unchanged: true,
    read_limit_zero_is_none: false,
    read_allow_large: false,
    read_offset_zero_numbers_from_one: false,
    edits_say_state_is_current: false,
    grep_only_matching: false,
    memory_stores_skip_index: false,
    memory_index_from_env: false,
    dream_offered_by_team_memory: false,
    memory_off_after_chat_read: false,
    dream_skips_other_hybrid_organization: false,
    dream_skips_other_retention_owner: false,
    auto_memory_label_by_flag: false,
    memory_index_tags: None,
    memory_index_quoted: false,
    unverified_managed_files: false,
};

/// The recall selector up to 2.1.146.
const RECALL_SELECTOR_2_1_80: RecallSelector =
    RecallSelector { sonnet_model: "claude-sonnet-4-6", max_tokens: 256, thinking_disabled: false, knowledge_ids: false };
/// From 2.1.147: the schema offers knowledge ids.
const RECALL_SELECTOR_2_1_147: RecallSelector = RecallSelector { knowledge_ids: true, ..RECALL_SELECTOR_2_1_80 };
/// From 2.1.197: Sonnet 5.
const RECALL_SELECTOR_2_1_197: RecallSelector = RecallSelector { sonnet_model: "claude-sonnet-5", ..RECALL_SELECTOR_2_1_147 };
/// From 2.1.210: no knowledge ids.
const RECALL_SELECTOR_2_1_210: RecallSelector = RecallSelector { knowledge_ids: false, ..RECALL_SELECTOR_2_1_197 };
/// From 2.1.216: a larger answer with thinking turned off.
const RECALL_SELECTOR_2_1_216: RecallSelector =
    RecallSelector { max_tokens: 512, thinking_disabled: true, ..RECALL_SELECTOR_2_1_210 };
/// From 2.1.284: Sonnet 5.5, a larger answer again, thinking left to the model's default.
const RECALL_SELECTOR_2_1_284: RecallSelector =
    RecallSelector { sonnet_model: "claude-sonnet-5-5", max_tokens: 2560, thinking_disabled: false, knowledge_ids: false };

/// Every change since the baseline, with the first release that has it, oldest first.
/// Found by bisecting the npm releases (docs/claude-code-versions.md).
pub static CHANGES: &[(ClaudeVersion, Change)] = &[
    (ClaudeVersion::new(2, 1, 81), Change::BareLoadsAddDirs),
    (ClaudeVersion::new(2, 1, 83), Change::MemoryIndexSizeCap),
    (ClaudeVersion::new(2, 1, 84), Change::PathsListsSplit),
    (ClaudeVersion::new(2, 1, 84), Change::RefusesMissingComposedCwd),
    (ClaudeVersion::new(2, 1, 90), Change::RecallRelevanceNote),
    (ClaudeVersion::new(2, 1, 91), Change::RecallDialogue),
    (ClaudeVersion::new(2, 1, 101), Change::DreamOfferedByTeamMemory(true)),
    (ClaudeVersion::new(2, 1, 113), Change::BunBinary),
    (ClaudeVersion::new(2, 1, 117), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 117)))),
    (ClaudeVersion::new(2, 1, 121), Change::MemoryDirFromUserLevelOnly),
    (ClaudeVersion::new(2, 1, 122), Change::MemoryIndexFromEnv),
    (ClaudeVersion::new(2, 1, 122), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 122)))),
    (ClaudeVersion::new(2, 1, 122), Change::HooksMendNonArrayEvents),
    (ClaudeVersion::new(2, 1, 128), Change::EditsSayStateIsCurrent),
    (ClaudeVersion::new(2, 1, 136), Change::ManagedFilesOwnLabel),
    (ClaudeVersion::new(2, 1, 136), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 136)))),
    (ClaudeVersion::new(2, 1, 139), Change::MemoryTypeInMetadata),
    (ClaudeVersion::new(2, 1, 139), Change::ManifestTextDescriptions),
    (ClaudeVersion::new(2, 1, 139), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 139)))),
    (ClaudeVersion::new(2, 1, 141), Change::GrepOnlyMatching),
    (ClaudeVersion::new(2, 1, 144), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 144)))),
    (ClaudeVersion::new(2, 1, 145), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 145)))),
    (ClaudeVersion::new(2, 1, 145), Change::ReadFirstPage),
    (ClaudeVersion::new(2, 1, 146), Change::FrontmatterRetryKeepsLists),
    (ClaudeVersion::new(2, 1, 147), Change::RecallSelector(RECALL_SELECTOR_2_1_147)),
    (ClaudeVersion::new(2, 1, 149), Change::ClaudeMdsSwitchCoversReads),
    (ClaudeVersion::new(2, 1, 154), Change::LazySystemMessage),
    (ClaudeVersion::new(2, 1, 157), Change::MemoryDirFromRepoSettings),
    (ClaudeVersion::new(2, 1, 157), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 157)))),
    (ClaudeVersion::new(2, 1, 160), Change::CwdAsSpelled),
    (ClaudeVersion::new(2, 1, 160), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 160)))),
    (ClaudeVersion::new(2, 1, 161), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 161)))),
    (ClaudeVersion::new(2, 1, 163), Change::FrontmatterRetryUntabs),
    (ClaudeVersion::new(2, 1, 166), Change::PolicyKeepsValidKeys),
    (ClaudeVersion::new(2, 1, 181), Change::YamlParser(YamlParser::Bun1_4)),
    (ClaudeVersion::new(2, 1, 181), Change::ReadLimitZeroIsNone),
    (ClaudeVersion::new(2, 1, 191), Change::MemoryAgentsRefuseNetHosts),
    (ClaudeVersion::new(2, 1, 195), Change::RemoteReadBeforeSettings),
    (ClaudeVersion::new(2, 1, 196), Change::OversizedFilesLeftOut),
    (ClaudeVersion::new(2, 1, 196), Change::SecretScanner(SecretScanner::V2_1_196)),
    (ClaudeVersion::new(2, 1, 197), Change::RecallSelector(RECALL_SELECTOR_2_1_197)),
    (ClaudeVersion::new(2, 1, 198), Change::MemoryStoresSkipIndex),
    (ClaudeVersion::new(2, 1, 205), Change::ReadPageNoteAfterResult),
    (ClaudeVersion::new(2, 1, 208), Change::MemoryHeadByteCap),
    (ClaudeVersion::new(2, 1, 208), Change::ReadEmptyFileWarns),
    (ClaudeVersion::new(2, 1, 208), Change::SearchesReportRefusedInput),
    (ClaudeVersion::new(2, 1, 210), Change::RecallSelector(RECALL_SELECTOR_2_1_210)),
    (ClaudeVersion::new(2, 1, 210), Change::DreamOfferedByTeamMemory(false)),
    (ClaudeVersion::new(2, 1, 211), Change::LocalSettingsFromRepoRoot),
    (ClaudeVersion::new(2, 1, 211), Change::ProjectRulesNeedProjectSource),
    (ClaudeVersion::new(2, 1, 213), Change::MemoryScanSkipsTeamSubfolders),
    (ClaudeVersion::new(2, 1, 213), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 213)))),
    (ClaudeVersion::new(2, 1, 216), Change::RecallSelector(RECALL_SELECTOR_2_1_216)),
    (ClaudeVersion::new(2, 1, 217), Change::MemoryScanSkipsDotEntries),
    (ClaudeVersion::new(2, 1, 219), Change::MemoryRmCheckedAsWrites),
    (ClaudeVersion::new(2, 1, 227), Change::MemoryPolicyReworded),
    (ClaudeVersion::new(2, 1, 228), Change::CoworkOverrideTrimmed),
    (ClaudeVersion::new(2, 1, 228), Change::WritesRefuseReadDenied),
    (ClaudeVersion::new(2, 1, 232), Change::RuleSymlinksIgnored),
    (ClaudeVersion::new(2, 1, 232), Change::SecretScanner(SecretScanner::V2_1_232)),
    (ClaudeVersion::new(2, 1, 234), Change::SecretScanner(SecretScanner::V2_1_234)),
    (ClaudeVersion::new(2, 1, 239), Change::FrontmatterAfterBom),
    (ClaudeVersion::new(2, 1, 242), Change::LexesOnlyFilesWithAt),
    (ClaudeVersion::new(2, 1, 246), Change::RepoEnvIgnoresBareMode),
    (ClaudeVersion::new(2, 1, 251), Change::RepoEnvIgnoresLocations),
    (ClaudeVersion::new(2, 1, 251), Change::MemoryAgentsRefuseNetworkServers),
    (ClaudeVersion::new(2, 1, 257), Change::HooksStrictOnlyWhereTheyGuard),
    (ClaudeVersion::new(2, 1, 257), Change::MemoryAgentsRefuseNetRoot),
    (ClaudeVersion::new(2, 1, 257), Change::MemoryAgentsObeyReadBlock),
    (ClaudeVersion::new(2, 1, 259), Change::PolicyUnparsableStopsStart),
    (ClaudeVersion::new(2, 1, 260), Change::SearchPathCheckedWhenRun),
    (ClaudeVersion::new(2, 1, 268), Change::InstructionsOwnReminder),
    (ClaudeVersion::new(2, 1, 268), Change::TruncationNoteSaysWhatWasCut),
    (ClaudeVersion::new(2, 1, 281), Change::AgentsMd),
    (ClaudeVersion::new(2, 1, 281), Change::ReadsSkipStartupFiles),
    (ClaudeVersion::new(2, 1, 284), Change::RecallSelector(RECALL_SELECTOR_2_1_284)),
    (ClaudeVersion::new(2, 1, 284), Change::MemoryIndexCrlfToLf),
    (ClaudeVersion::new(2, 1, 284), Change::MemoryIndexCleaned(MemoryIndexTags { untrusted_widget_state: false, neutralizer: ClaudeVersion::new(2, 1, 284) })),
    (ClaudeVersion::new(2, 1, 284), Change::LinksJudgedByRealpath),
    (ClaudeVersion::new(2, 1, 284), Change::SecretScanReadings),
    (ClaudeVersion::new(2, 1, 285), Change::WritesMissingMemoryIndex),
    (ClaudeVersion::new(2, 1, 285), Change::AgentsMdSettingsHonoured),
    (ClaudeVersion::new(2, 1, 285), Change::PolicyUnreadableStopsStart),
    (ClaudeVersion::new(2, 1, 286), Change::BareLoadsNothing),
    (ClaudeVersion::new(2, 1, 289), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 289)))),
    (ClaudeVersion::new(2, 1, 290), Change::RepoEnvIgnoresAttachments),
    (ClaudeVersion::new(2, 1, 290), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 290)))),
    (ClaudeVersion::new(2, 1, 292), Change::MemoryAgentsObeyPermissionRules),
    (ClaudeVersion::new(2, 1, 295), Change::MemoryDirFromEnabledSources),
    (ClaudeVersion::new(2, 1, 295), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 295)))),
    (ClaudeVersion::new(2, 1, 296), Change::ReadAllowLarge),
    (ClaudeVersion::new(2, 1, 299), Change::MemoryHeadsDecodeUtf16),
    (ClaudeVersion::new(2, 1, 304), Change::UnverifiedManagedFiles),
    (ClaudeVersion::new(2, 1, 307), Change::LazyReminderPerFile),
    (ClaudeVersion::new(2, 1, 311), Change::LexerStack(BLOCK_NESTING_BINARY_2_1_311)),
    (ClaudeVersion::new(2, 1, 314), Change::MemoryIndexNeutralizer(ClaudeVersion::new(2, 1, 314))),
    (ClaudeVersion::new(2, 1, 315), Change::MemoryPathsRefuseColon),
    (ClaudeVersion::new(2, 1, 315), Change::MemoryIndexNeutralizer(ClaudeVersion::new(2, 1, 315))),
    (ClaudeVersion::new(2, 1, 317), Change::ReadRepeatsInFull),
    (ClaudeVersion::new(2, 1, 317), Change::MemoryIndexCleaned(MemoryIndexTags { untrusted_widget_state: true, neutralizer: ClaudeVersion::new(2, 1, 315) })),
    (ClaudeVersion::new(2, 1, 319), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 319)))),
    (ClaudeVersion::new(2, 1, 323), Change::SecretScanner(SecretScanner::V2_1_323)),
    (ClaudeVersion::new(2, 1, 324), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 324)))),
    (ClaudeVersion::new(2, 1, 326), Change::MemoryScanLinksLast),
    (ClaudeVersion::new(2, 1, 328), Change::LexerStack(BLOCK_NESTING_BINARY_2_1_328)),
    (ClaudeVersion::new(2, 1, 329), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 329)))),
    (ClaudeVersion::new(2, 1, 330), Change::CommentsRerenderOnlyWhenRemoved),
    (ClaudeVersion::new(2, 1, 331), Change::BlockquoteEndsAtIndentedHtml),
    (ClaudeVersion::new(2, 1, 331), Change::LexerStack(BLOCK_NESTING_BINARY)),
    (ClaudeVersion::new(2, 1, 331), Change::DreamSkipsOtherHybridOrganization),
    (ClaudeVersion::new(2, 1, 337), Change::MemoryOffAfterChatRead),
    (ClaudeVersion::new(2, 1, 337), Change::DreamSkipsOtherRetentionOwner),
    (ClaudeVersion::new(2, 1, 337), Change::AutoMemoryLabelByFlag),
    (ClaudeVersion::new(2, 1, 337), Change::MemoryIndexQuoted),
    (ClaudeVersion::new(2, 1, 337), Change::MemoryIndexNeutralizer(ClaudeVersion::new(2, 1, 337))),
    (ClaudeVersion::new(2, 1, 337), Change::BashReadOnly(BashReadOnlyTables(ClaudeVersion::new(2, 1, 337)))),
    (ClaudeVersion::new(2, 1, 337), Change::MemoryAgentsProtectClaudeScience),
    (ClaudeVersion::new(2, 1, 337), Change::MemoryRmRefusesParentSegments),
    (ClaudeVersion::new(2, 1, 337), Change::ReadOffsetZeroNumbersFromOne),
];

/// The behaviours of `version`: the baseline with every change up to it applied.
pub fn behaviours(version: ClaudeVersion) -> Profile {
    let mut p = Profile { release: version, ..BASELINE };
    for &(since, change) in CHANGES.iter().take_while(|(since, _)| *since <= version) {
        change.apply(&mut p);
        p.since = since;
    }
    p
}

impl Profile {
    /// The same release run by `runtime`: a native install of a release whose npm package was
    /// still `cli.js` runs as a binary.
    pub fn with_runtime(self, runtime: Runtime) -> Profile {
        // The runtime's stack decides how deep the lexer gets; a binary of a release that npm
        // ships for Node nests like the first binaries did.
        let block_nesting = match runtime {
            _ if runtime == self.runtime => self.block_nesting,
            Runtime::Node => BLOCK_NESTING_NODE,
            Runtime::Bun => BLOCK_NESTING_BINARY,
        };
        // The same JavaScript asks Bun's parser when it runs in Bun (`typeof Bun` decides), and
        // the first binaries' Bun reads YAML as Bun 1.3 does.
        let mut frontmatter_reader = self.frontmatter_reader;
        frontmatter_reader.parser = match runtime {
            _ if runtime == self.runtime => frontmatter_reader.parser,
            Runtime::Node => YamlParser::Node,
            Runtime::Bun => YamlParser::Bun1_3,
        };
        Profile { runtime, block_nesting, frontmatter_reader, ..self }
    }
}

/// The releases the test matrix runs the real binary for, one per line (`#` comments).
pub const MATRIX: &str = include_str!("../data/claude-code-versions.txt");

/// The matrix's versions, in file order.
pub fn matrix() -> Vec<ClaudeVersion> {
    MATRIX
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| l.parse().expect("data/claude-code-versions.txt holds MAJOR.MINOR.PATCH lines"))
        .collect()
}

/// How sure Mneme is that a profile matches a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Fidelity {
    /// The release is in the test matrix: checked byte for byte against its binary.
    Verified,
    /// Between two matrix releases; the bisection of the releases in between placed it.
    Bisected,
    /// Older or newer than anything checked: the nearest profile is used.
    Unverified,
}

/// The profile that applies to a release, and how sure that is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    pub version: ClaudeVersion,
    pub profile: Profile,
    pub fidelity: Fidelity,
}

/// The newest release the matrix checks: what Mneme assumes when no Claude Code is installed.
pub fn newest_checked() -> ClaudeVersion {
    matrix().into_iter().max().expect("the matrix lists at least one release")
}

/// The newest known behaviours: every change applied.
pub fn newest() -> Profile {
    behaviours(ClaudeVersion::new(u32::MAX, u32::MAX, u32::MAX))
}

/// The behaviours of `version` and how sure Mneme is of them.
pub fn profile_for(version: ClaudeVersion) -> Resolved {
    let profile = behaviours(version);
    let checked = matrix();
    let fidelity = if checked.contains(&version) {
        Fidelity::Verified
    } else {
        match (checked.iter().min(), checked.iter().max()) {
            (Some(lo), Some(hi)) if *lo < version && version < *hi => Fidelity::Bisected,
            _ => Fidelity::Unverified,
        }
    };
    Resolved { version, profile, fidelity }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> ClaudeVersion {
        s.parse().unwrap()
    }

    #[test]
    fn parses_what_claude_version_prints() {
        assert_eq!(ClaudeVersion::from_version_output("2.1.332 (Claude Code)\n"), Some(v("2.1.332")));
        assert_eq!(v("v2.1.9-beta.1"), ClaudeVersion::new(2, 1, 9));
        assert_eq!(ClaudeVersion::from_version_output("Claude Code"), None);
        for bad in ["2.1", "2.1.x", "", "2..1", "1.2.3.4", "99999999999.1.1"] {
            assert!(bad.parse::<ClaudeVersion>().is_err(), "{bad}");
        }
        assert!(v("2.1.10") > v("2.1.9"), "numeric, not lexical");
    }

    #[test]
    fn table_is_sorted_and_covers_the_matrix() {
        assert!(CHANGES.windows(2).all(|w| w[0].0 <= w[1].0));
        let m = matrix();
        assert!(m.len() >= 2);
        for version in m {
            assert_eq!(profile_for(version).fidelity, Fidelity::Verified);
        }
    }

    #[test]
    fn each_release_gets_the_changes_up_to_it() {
        assert_eq!(behaviours(v("2.1.80")), BASELINE);
        assert_eq!(behaviours(v("1.0.0")), Profile { release: v("1.0.0"), ..BASELINE });
        // Up to 2.1.80 bare mode loads nothing, as again from 2.1.286; MEMORY.md has only its
        // line cap before 2.1.83; npm's package runs on Node up to 2.1.112.
        assert!(BASELINE.bare_loads_nothing && !behaviours(v("2.1.81")).bare_loads_nothing);
        assert!(!behaviours(v("2.1.285")).bare_loads_nothing && behaviours(v("2.1.286")).bare_loads_nothing);
        assert_eq!(behaviours(v("2.1.81")).truncation_note, TruncationNote::FirstLines);
        assert_eq!(behaviours(v("2.1.83")).truncation_note, TruncationNote::Reason);
        assert!(!behaviours(v("2.1.83")).paths_lists_split && behaviours(v("2.1.84")).paths_lists_split);
        assert!(!behaviours(v("2.1.83")).refuses_missing_composed_cwd && behaviours(v("2.1.84")).refuses_missing_composed_cwd);
        assert_eq!(behaviours(v("2.1.112")).runtime, Runtime::Node);
        assert_eq!(behaviours(v("2.1.113")).runtime, Runtime::Bun);
        // 2.1.117 changed only the read-only shell tables.
        assert_eq!(behaviours(v("2.1.120")).since, v("2.1.117"));
        assert_eq!(behaviours(v("2.1.116")).since, v("2.1.113"));
        // The read-only shell tables: 2.1.113's for older releases, then each set from the first
        // release that has it (2.1.319's up to 2.1.323, jq's guard in code from 2.1.324).
        assert_eq!(behaviours(v("2.1.100")).bash_read_only, BashReadOnlyTables(v("2.1.113")));
        assert_eq!(behaviours(v("2.1.197")).bash_read_only, BashReadOnlyTables(v("2.1.161")));
        assert_eq!(behaviours(v("2.1.323")).bash_read_only, BashReadOnlyTables(v("2.1.319")));
        assert_eq!(behaviours(v("2.1.324")).bash_read_only, BashReadOnlyTables(v("2.1.324")));
        // 2.1.337 rewrote the ls and find patterns (2.1.333 to 2.1.336 were never published).
        assert_eq!(behaviours(v("2.1.332")).bash_read_only, BashReadOnlyTables(v("2.1.329")));
        assert_eq!(behaviours(v("2.1.337")).bash_read_only, BashReadOnlyTables(v("2.1.337")));
        // The memory agents' guards tightened in 2.1.337 (rows 76 and 77).
        assert!(!behaviours(v("2.1.332")).memory_agents_protect_claude_science && behaviours(v("2.1.337")).memory_agents_protect_claude_science);
        assert!(!behaviours(v("2.1.332")).memory_rm_refuses_parent_segments && behaviours(v("2.1.337")).memory_rm_refuses_parent_segments);
        // MEMORY.md cleaned from 2.1.284 (one more tag from 2.1.317), quoted and relabelled by flag from 2.1.337.
        assert_eq!(behaviours(v("2.1.283")).memory_index_tags, None);
        assert!(!behaviours(v("2.1.316")).memory_index_tags.unwrap().names().contains(&"untrusted-widget-state"));
        assert!(behaviours(v("2.1.317")).memory_index_tags.unwrap().names().contains(&"untrusted-widget-state"));
        // Its neutralizer read more look-alikes from 2.1.314 and 2.1.315, and a second reading
        // from 2.1.337 (rows 85 and 86).
        let neutralizer = |r: &str| behaviours(v(r)).memory_index_tags.unwrap().neutralizer;
        assert_eq!((neutralizer("2.1.312"), neutralizer("2.1.314")), (v("2.1.284"), v("2.1.314")));
        assert_eq!((neutralizer("2.1.315"), neutralizer("2.1.317"), neutralizer("2.1.332")), (v("2.1.315"), v("2.1.315"), v("2.1.315")));
        assert_eq!(neutralizer("2.1.337"), v("2.1.337"));
        assert!(!behaviours(v("2.1.332")).memory_index_quoted && behaviours(v("2.1.337")).memory_index_quoted);
        // Bisected: 2.1.303 has no unverified label, 2.1.304 has it.
        assert!(!behaviours(v("2.1.303")).unverified_managed_files && behaviours(v("2.1.304")).unverified_managed_files);
        assert!(!behaviours(v("2.1.332")).auto_memory_label_by_flag && behaviours(v("2.1.337")).auto_memory_label_by_flag);
        // The memory agents' rm answers to their write rule from 2.1.219, and a `:` inside the
        // memory folder is refused from 2.1.315 (rows 78 and 79).
        assert!(!behaviours(v("2.1.218")).memory_rm_checked_as_writes && behaviours(v("2.1.219")).memory_rm_checked_as_writes);
        assert!(!behaviours(v("2.1.314")).memory_paths_refuse_colon && behaviours(v("2.1.315")).memory_paths_refuse_colon);
        // From 2.1.292 they answer to the user's deny and ask rules (row 92).
        assert!(!behaviours(v("2.1.291")).memory_agents_obey_permission_rules && behaviours(v("2.1.292")).memory_agents_obey_permission_rules);
        // Edit and Write refuse files a Read deny rule covers from 2.1.228 (seen on 2.1.227/2.1.228).
        assert!(!behaviours(v("2.1.227")).writes_refuse_read_denied && behaviours(v("2.1.228")).writes_refuse_read_denied);
        // The team-memory secret check scans the text's invisible-free readings from 2.1.284 (row 90).
        assert!(!behaviours(v("2.1.283")).secret_scan_readings && behaviours(v("2.1.284")).secret_scan_readings);
        assert!(!behaviours(v("2.1.241")).lexes_only_files_with_at && behaviours(v("2.1.242")).lexes_only_files_with_at);
        // Before 2.1.160: managed files labelled as the user's until 2.1.136, the
        // CLAUDE_CODE_DISABLE_CLAUDE_MDS switch blind to reads until 2.1.149, files attached
        // after a Read appended to its result until 2.1.154, the memory folder only from the
        // policy, flag or user settings until 2.1.157, the working folder in NFC until 2.1.160.
        assert!(!BASELINE.managed_files_own_label && behaviours(v("2.1.136")).managed_files_own_label);
        assert!(!behaviours(v("2.1.148")).claude_mds_switch_covers_reads && behaviours(v("2.1.149")).claude_mds_switch_covers_reads);
        assert_eq!(behaviours(v("2.1.153")).lazy, LazyAttachment::InToolResult);
        assert_eq!(behaviours(v("2.1.154")).lazy, LazyAttachment::SystemMessage);
        assert_eq!(BASELINE.memory_dir_sources, MemoryDirSources::AllButProject);
        assert_eq!(behaviours(v("2.1.120")).memory_dir_sources, MemoryDirSources::AllButProject);
        assert_eq!(behaviours(v("2.1.121")).memory_dir_sources, MemoryDirSources::UserLevel);
        assert_eq!(behaviours(v("2.1.156")).memory_dir_sources, MemoryDirSources::UserLevel);
        assert_eq!(behaviours(v("2.1.157")).memory_dir_sources, MemoryDirSources::Every);
        assert!(!behaviours(v("2.1.159")).cwd_as_spelled && behaviours(v("2.1.160")).cwd_as_spelled);
        assert_eq!(behaviours(v("2.1.190")).since, v("2.1.181"));
        assert_eq!(behaviours(v("2.1.194")).since, v("2.1.191"));
        // The memory agents' read gates (rows 96 and 97): automount paths from 2.1.191, 2.1.251
        // and 2.1.257, the read block from 2.1.257.
        assert!(!behaviours(v("2.1.190")).memory_agents_refuse_net_hosts && behaviours(v("2.1.191")).memory_agents_refuse_net_hosts);
        assert!(!behaviours(v("2.1.250")).memory_agents_refuse_network_servers && behaviours(v("2.1.251")).memory_agents_refuse_network_servers);
        assert!(!behaviours(v("2.1.252")).memory_agents_refuse_net_root && behaviours(v("2.1.257")).memory_agents_refuse_net_root);
        assert!(!behaviours(v("2.1.252")).memory_agents_obey_read_block && behaviours(v("2.1.257")).memory_agents_obey_read_block);
        // A whole file over the token cap paged from 2.1.145, the note after the results from
        // 2.1.205 (row 98).
        assert!(!behaviours(v("2.1.144")).read_first_page && behaviours(v("2.1.145")).read_first_page);
        assert!(!behaviours(v("2.1.204")).read_page_note_after_result && behaviours(v("2.1.205")).read_page_note_after_result);
        // Frontmatter: Bun 1.3's parser from the first binary, its retry keeping lists from
        // 2.1.146 and untabbing from 2.1.163, Bun 1.4's parser from 2.1.181.
        assert_eq!(behaviours(v("2.1.112")).frontmatter_reader, FrontmatterReader::ALL[0]);
        assert_eq!(behaviours(v("2.1.113")).frontmatter_reader, FrontmatterReader::ALL[1]);
        assert_eq!(behaviours(v("2.1.145")).frontmatter_reader, FrontmatterReader::ALL[1]);
        assert_eq!(behaviours(v("2.1.146")).frontmatter_reader, FrontmatterReader::ALL[2]);
        assert_eq!(behaviours(v("2.1.162")).frontmatter_reader, FrontmatterReader::ALL[2]);
        assert_eq!(behaviours(v("2.1.163")).frontmatter_reader, FrontmatterReader::ALL[3]);
        assert_eq!(behaviours(v("2.1.179")).frontmatter_reader, FrontmatterReader::ALL[3]);
        assert_eq!(behaviours(v("2.1.181")).frontmatter_reader, FrontmatterReader::NEWEST);
        // The agent's tools: an empty file and a refused search answered anew from 2.1.208.
        assert!(!behaviours(v("2.1.207")).read_empty_file_warns && behaviours(v("2.1.208")).read_empty_file_warns);
        assert!(!behaviours(v("2.1.207")).searches_report_refused_input && behaviours(v("2.1.208")).searches_report_refused_input);
        assert!(!behaviours(v("2.1.259")).search_path_checked_when_run && behaviours(v("2.1.260")).search_path_checked_when_run);
        assert!(behaviours(v("2.1.316")).read_dedups_unchanged && !behaviours(v("2.1.317")).read_dedups_unchanged);
        assert!(!behaviours(v("2.1.179")).read_limit_zero_is_none && behaviours(v("2.1.181")).read_limit_zero_is_none);
        // Read's `allow_large` came in 2.1.296 (row 83; 2.1.295 refuses it).
        assert!(!behaviours(v("2.1.295")).read_allow_large && behaviours(v("2.1.296")).read_allow_large);
        let zero = |r: &str| behaviours(v(r)).read_offset_zero_numbers_from_one;
        // `offset: 0` numbered from 1 from 2.1.337 (row 84; 2.1.332 from 0).
        assert!(!zero("2.1.332") && zero("2.1.337"));
        assert!(!behaviours(v("2.1.126")).edits_say_state_is_current && behaviours(v("2.1.128")).edits_say_state_is_current);
        assert!(!behaviours(v("2.1.140")).grep_only_matching && behaviours(v("2.1.141")).grep_only_matching);
        assert_eq!(behaviours(v("2.1.100")).with_runtime(Runtime::Bun).frontmatter_reader.parser, YamlParser::Bun1_3);
        // Before 2.1.195 a settings file could make a session remote; before 2.1.196 a file
        // over 4 MiB was sent whole.
        assert!(BASELINE.settings_env_ignored.is_empty() && !BASELINE.oversized_files_left_out);
        assert_eq!(behaviours(v("2.1.195")).settings_env_ignored, ["CLAUDE_CODE_REMOTE"]);
        assert!(!behaviours(v("2.1.195")).oversized_files_left_out && behaviours(v("2.1.196")).oversized_files_left_out);
        assert_eq!(behaviours(v("2.1.196")).since, v("2.1.196"));
        assert_eq!(behaviours(v("2.1.197")).since, v("2.1.197"));
        // Recall, captured release by release (testdata/recall-capture): one message per query
        // until 2.1.90, the relevance note from 2.1.90, the dialogue from 2.1.91; a memory's
        // `metadata.type` tags it from 2.1.139; the selector's model, limits and schema move at
        // 2.1.147, 2.1.197, 2.1.210, 2.1.216 and 2.1.284.
        assert!(!behaviours(v("2.1.89")).recall_relevance_note && behaviours(v("2.1.90")).recall_relevance_note);
        assert!(!behaviours(v("2.1.90")).recall_dialogue && behaviours(v("2.1.91")).recall_dialogue);
        assert!(!behaviours(v("2.1.138")).memory_type_in_metadata && behaviours(v("2.1.139")).memory_type_in_metadata);
        let selector = |r: &str| {
            let s = behaviours(v(r)).recall_selector;
            (s.sonnet_model, s.max_tokens, s.thinking_disabled, s.knowledge_ids)
        };
        assert_eq!(selector("2.1.146"), ("claude-sonnet-4-6", 256, false, false));
        assert_eq!(selector("2.1.147"), ("claude-sonnet-4-6", 256, false, true));
        assert_eq!(selector("2.1.196"), ("claude-sonnet-4-6", 256, false, true));
        assert_eq!(selector("2.1.197"), ("claude-sonnet-5", 256, false, true));
        assert_eq!(selector("2.1.209"), ("claude-sonnet-5", 256, false, true));
        assert_eq!(selector("2.1.210"), ("claude-sonnet-5", 256, false, false));
        assert_eq!(selector("2.1.215"), ("claude-sonnet-5", 256, false, false));
        assert_eq!(selector("2.1.216"), ("claude-sonnet-5", 512, true, false));
        assert_eq!(selector("2.1.283"), ("claude-sonnet-5", 512, true, false));
        assert_eq!(selector("2.1.284"), ("claude-sonnet-5-5", 2560, false, false));
        assert_eq!(selector("2.1.332"), ("claude-sonnet-5-5", 2560, false, false));
        let at_267 = behaviours(v("2.1.267"));
        assert_eq!(at_267.instructions, InstructionsWrapper::UserContext);
        assert!(!at_267.rules_follow_symlinks && at_267.frontmatter_after_bom);
        assert_eq!(at_267.since, v("2.1.260"));
        let at_268 = behaviours(v("2.1.268"));
        assert_eq!(at_268.instructions, InstructionsWrapper::OwnReminder);
        assert_eq!(at_268.truncation_note, TruncationNote::ReasonAndCut);
        assert_eq!(at_268.lazy, LazyAttachment::SystemMessage);
        assert_eq!(behaviours(v("2.1.332")).lazy, LazyAttachment::ReminderPerFile);
        // AGENTS.md from 2.1.281, its plugin's settings honoured only from 2.1.285.
        assert!(behaviours(v("2.1.284")).agents_md && !behaviours(v("2.1.284")).agents_md_settings_honoured);
        assert!(behaviours(v("2.1.285")).agents_md_settings_honoured);
        // From 2.1.337 a session that read a saved claude.ai chat saves no more memory.
        assert!(!behaviours(v("2.1.332")).memory_off_after_chat_read && behaviours(v("2.1.337")).memory_off_after_chat_read);
        // Auto dream's organization search: hybrid-organization records from 2.1.331 (2.1.330
        // has none, bisected), restricted owners from 2.1.337 (row 89).
        let org = |s: &str| (behaviours(v(s)).dream_skips_other_hybrid_organization, behaviours(v(s)).dream_skips_other_retention_owner);
        assert_eq!((org("2.1.330"), org("2.1.331"), org("2.1.332"), org("2.1.337")), ((false, false), (true, false), (true, false), (true, true)));
        // Up to 2.1.280 a Read attaches again what was loaded at start.
        assert!(!behaviours(v("2.1.280")).reads_skip_startup_files && behaviours(v("2.1.281")).reads_skip_startup_files);
        assert_eq!(profile_for(v("2.1.300")).fidelity, Fidelity::Bisected);
        let newer = profile_for(v("2.9.0"));
        assert_eq!(newer.profile, Profile { release: v("2.9.0"), ..newest() });
        assert_eq!(newer.fidelity, Fidelity::Unverified);
        assert_eq!(profile_for(v("1.0.0")).fidelity, Fidelity::Unverified);
    }

    #[test]
    fn each_release_nests_as_deep_as_its_stack_allows() {
        let nesting = |r: &str| behaviours(v(r)).block_nesting;
        assert_eq!(nesting("2.1.112"), BLOCK_NESTING_NODE);
        assert_eq!(nesting("2.1.113"), BLOCK_NESTING_BINARY);
        assert_eq!(nesting("2.1.310"), BLOCK_NESTING_BINARY);
        assert_eq!(nesting("2.1.311"), BLOCK_NESTING_BINARY_2_1_311);
        assert_eq!(nesting("2.1.327"), BLOCK_NESTING_BINARY_2_1_311);
        assert_eq!(nesting("2.1.328"), BLOCK_NESTING_BINARY_2_1_328);
        assert_eq!(nesting("2.1.330"), BLOCK_NESTING_BINARY_2_1_328);
        assert_eq!(nesting("2.1.331"), BLOCK_NESTING_BINARY);
        // A native install of a release npm shipped for Node is a binary; the other way round
        // is never needed, but keeps to the runtime.
        assert_eq!(behaviours(v("2.1.100")).with_runtime(Runtime::Bun).block_nesting, BLOCK_NESTING_BINARY);
        assert_eq!(behaviours(v("2.1.316")).with_runtime(Runtime::Bun).block_nesting, BLOCK_NESTING_BINARY_2_1_311);
        assert_eq!(behaviours(v("2.1.316")).with_runtime(Runtime::Node).block_nesting, BLOCK_NESTING_NODE);
    }
}
