//! The user's permission rules, as Claude Code's memory agents obey them.
//!
//! Claude Code's memory agents (extraction, auto dream) meet the user's `permissions` rules in
//! three places (`docs/claude-code-versions.md`, rows 92 and 93 and the notes around them):
//!
//! - in every release, a `deny` rule on a whole tool takes it out of the session
//!   ([`PermissionRules::removes_tool`]), and the tools refuse, when they check their input, a
//!   Read of a file a `Read(path)` deny rule covers and an Edit or Write of one an `Edit(path)`
//!   deny rule covers; from 2.1.228 also one a Read deny rule covers
//!   ([`PermissionRules::denies_writing`]);
//! - from 2.1.292 (`Profile::memory_agents_obey_permission_rules`) each call first goes through
//!   the session's rule check (`checkRuleBasedPermissions`): a `deny` or `ask` rule of any
//!   settings source that covers it refuses it, since a background agent has no one to ask
//!   ([`PermissionRules::refusing`]). `allow` rules widen nothing: the agents' own guard still
//!   decides what is allowed;
//! - from 2.1.292 extraction does not start while a rule refuses every write into the memory
//!   folder ([`PermissionRules::blocking_memory_writes`]).
//!
//! The rules are read from the settings files the session applies (`permissions.deny` and
//! `permissions.ask`; only the managed file's when it sets `allowManagedPermissionRulesOnly`),
//! each with its source. What is reproduced of Claude Code's matching:
//!
//! - `Tool` (also `Tool()` and `Tool(*)`): every call of that tool;
//! - `Read(path)`: Read's `file_path`, Grep's and Glob's `path` (the working folder when none);
//!   `Edit(path)`: Edit's and Write's `file_path`. Paths are gitignore patterns: `//x` from the
//!   file-system root, `~/x` from the home folder, `/x` from the settings file's own root (the
//!   config home for user settings, the flag file's folder for `--settings`, the working folder
//!   for the others), anything else from the working folder and at any depth below it; a
//!   pattern ending in `/**` also covers the folder itself;
//! - `Bash(command)`: the whole command or any simple command of it, matched exactly, by a
//!   legacy prefix (`git log:*`), or as a wildcard (`*` any text, `\*` a star; a trailing ` *`
//!   also matches the bare command).
//!
//! The settings also say whether `permissions.blockReadsOutsideWorkingDirectories` is on (in
//! any source) and which `permissions.additionalDirectories` count as working directories (not
//! the project's, nor those of a local settings file git tracks);
//! the agents' guard applies that block from 2.1.257 ([`PermissionRules::read_blocked`],
//! `crate::policy`, row 97).
//!
//! Not reproduced: the realpath variants Claude Code also tries for rules, its other safety
//! checks inside the tools' own permission functions (sensitive paths), sandbox auto-allow, MCP
//! and hook decisions (Mneme's agents have neither), and rules on input fields
//! (`Tool(field:value)`).

use mneme_store::settings::{SettingSource, Settings};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What a rule asks for when it covers a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleBehavior {
    Deny,
    Ask,
}

impl RuleBehavior {
    /// The word the settings files use (`deny`, `ask`).
    pub fn as_str(self) -> &'static str {
        match self {
            RuleBehavior::Deny => "deny",
            RuleBehavior::Ask => "ask",
        }
    }
}

/// Which kind of deny rule refuses a write when Edit or Write checks its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteDenial {
    /// An `Edit(path)` deny rule covers the file.
    EditRule,
    /// A Read deny rule covers it.
    ReadRule,
}

/// One `deny` or `ask` rule of a settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionRule {
    pub behavior: RuleBehavior,
    /// The rule as the file spells it, e.g. `Edit(~/.claude/**)`.
    pub text: String,
    /// The tool it names.
    pub tool: String,
    /// What is inside the parentheses, unescaped; `None` for the whole tool.
    pub content: Option<String>,
    pub source: SettingSource,
    /// Where a `/x` path pattern of this rule starts.
    root: PathBuf,
}

/// Every `deny` and `ask` rule one session applies, and the folders path patterns start from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionRules {
    rules: Vec<PermissionRule>,
    home: PathBuf,
    /// The session's working folder: relative patterns start here, and Grep or Glob without a
    /// path search here.
    cwd: PathBuf,
    /// The settings file whose `permissions.blockReadsOutsideWorkingDirectories` is `true`
    /// (the first one; `true` in any source wins, whatever the others say).
    read_block: Option<(SettingSource, PathBuf)>,
    /// `permissions.additionalDirectories`: working directories beside the working folder, each
    /// with the source that names it (the project's, and a local file git tracks, do not
    /// count: [`PermissionRules::working_directories`]).
    additional_dirs: Vec<(SettingSource, PathBuf)>,
    /// Git tracks the project's local settings file (`.claude/settings.local.json`): then it is
    /// the repository's own, and its `additionalDirectories` widen nothing.
    local_settings_tracked: bool,
    /// The memory folder was chosen by the repository's own settings (`autoMemoryDirectory` in
    /// `.claude/settings.json`, or in a `.claude/settings.local.json` git tracks): then reading
    /// it is not exempt from the read block.
    memory_dir_from_repo: bool,
}

/// `Tool` or `Tool(content)` as Claude Code reads a rule: the first `(` and a `)` that ends the
/// rule, with `\(`, `\)` and `\\` escaped inside; `Tool()` and `Tool(*)` name the whole tool.
/// `None` for a malformed rule, which Claude Code drops.
pub fn parse_rule(text: &str) -> Option<(String, Option<String>)> {
    let open = unescaped(text, '(').next();
    let close = unescaped(text, ')').last();
    match (open, close) {
        (None, None) => (!text.trim().is_empty()).then(|| (text.to_string(), None)),
        (Some(o), Some(c)) if c > o && c == text.len() - 1 && !text[..o].contains(['(', ')']) => {
            let tool = text[..o].to_string();
            let raw = &text[o + 1..c];
            if tool.is_empty() {
                return None;
            }
            if raw.is_empty() || raw == "*" {
                return Some((tool, None));
            }
            Some((tool, Some(raw.replace("\\(", "(").replace("\\)", ")").replace("\\\\", "\\"))))
        }
        _ => None,
    }
}

/// Byte offsets of `c` not escaped by an odd run of backslashes.
fn unescaped(text: &str, c: char) -> impl Iterator<Item = usize> + '_ {
    text.char_indices().filter(move |&(i, ch)| ch == c && text[..i].chars().rev().take_while(|&b| b == '\\').count() % 2 == 0).map(|(i, _)| i)
}

impl PermissionRules {
    /// The rules of `settings` (as the session loaded them for its release) for a session whose
    /// home folder is `home`, config home `config_home`, working in `cwd`.
    pub fn from_settings(settings: &Settings, home: &Path, config_home: &Path, cwd: &Path) -> PermissionRules {
        let managed_only = settings
            .source_object(SettingSource::Policy)
            .and_then(|p| p.get("allowManagedPermissionRulesOnly").and_then(Value::as_bool))
            .unwrap_or(false);
        let mut rules = Vec::new();
        let mut seen: Vec<PathBuf> = Vec::new();
        let mut read_block = None;
        let mut additional_dirs = Vec::new();
        for file in settings.files().iter().filter(|f| f.enabled) {
            let permissions = file.applied_object().and_then(|o| o.get("permissions")).and_then(Value::as_object);
            // The read block counts from every source, managed-only rules or not (Claude Code
            // takes it before it looks at `allowManagedPermissionRulesOnly`).
            if read_block.is_none()
                && permissions.and_then(|p| p.get("blockReadsOutsideWorkingDirectories")).and_then(Value::as_bool) == Some(true)
            {
                read_block = Some((file.source, file.path.clone()));
            }
            if managed_only && file.source != SettingSource::Policy {
                continue;
            }
            // One file read for two sources (the home folder as working folder) counts once.
            if file.source != SettingSource::Policy {
                if seen.contains(&file.path) {
                    continue;
                }
                seen.push(file.path.clone());
            }
            let Some(permissions) = permissions else {
                continue;
            };
            for dir in permissions.get("additionalDirectories").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                let dir = match dir.strip_prefix('~') {
                    Some("") => home.to_path_buf(),
                    Some(rest) if rest.starts_with('/') => home.join(&rest[1..]),
                    _ => cwd.join(dir),
                };
                additional_dirs.push((file.source, mneme_store::git::normalize(&dir)));
            }
            let root = match file.source {
                SettingSource::User => config_home.to_path_buf(),
                SettingSource::Flag => file.path.parent().map_or_else(|| cwd.to_path_buf(), Path::to_path_buf),
                SettingSource::Policy | SettingSource::Project | SettingSource::Local => cwd.to_path_buf(),
            };
            for (key, behavior) in [("deny", RuleBehavior::Deny), ("ask", RuleBehavior::Ask)] {
                for text in permissions.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                    if let Some((tool, content)) = parse_rule(text) {
                        rules.push(PermissionRule { behavior, text: text.to_string(), tool, content, source: file.source, root: root.clone() });
                    }
                }
            }
        }
        PermissionRules {
            rules,
            home: home.to_path_buf(),
            cwd: cwd.to_path_buf(),
            read_block,
            additional_dirs,
            local_settings_tracked: false,
            memory_dir_from_repo: false,
        }
    }

    /// The rules one session applies: its settings, home, config home and working folder.
    pub fn for_session(session: &mneme_store::session::SessionMemory, cwd: &Path) -> PermissionRules {
        use mneme_store::paths::AutoMemSource;
        let mut rules = PermissionRules::from_settings(&session.settings, &session.env.home, &session.env.config_home(), cwd);
        let chosen_by = |source| session.dir.source == AutoMemSource::Setting(source);
        // Git is asked only when the answer matters: the block is on, and the local file names
        // folders or chose the memory folder.
        if rules.read_block.is_some()
            && (chosen_by(SettingSource::Local) || rules.additional_dirs.iter().any(|(s, _)| *s == SettingSource::Local))
        {
            let local = session.settings.files().iter().find(|f| f.source == SettingSource::Local).map(|f| f.path.clone());
            rules.local_settings_tracked = local.is_some_and(|p| git_tracks(&p));
        }
        // A local settings file git tracks is the repository's as much as `.claude/settings.json`
        // (2.1.257 refuses a read of the memory folder such a file chose, and reads it when the
        // file is untracked).
        rules.memory_dir_from_repo = chosen_by(SettingSource::Project) || (chosen_by(SettingSource::Local) && rules.local_settings_tracked);
        rules
    }

    /// With the local settings file tracked by git or not (what [`PermissionRules::for_session`]
    /// asks git).
    pub fn with_local_settings_tracked(mut self, tracked: bool) -> PermissionRules {
        self.local_settings_tracked = tracked;
        self
    }

    /// The `permissions.additionalDirectories` that count as working directories: those of the
    /// user's settings, a flag file, the managed settings, and a local settings file git does
    /// not track. Claude Code drops the project's settings' folders (a repository may not widen
    /// what its own sessions read) and those of a local file the repository carries (seen on
    /// 2.1.257, 2.1.292, 2.1.316, 2.1.332 and 2.1.337, row 97).
    pub fn working_directories(&self) -> impl Iterator<Item = &Path> {
        self.additional_dirs
            .iter()
            .filter(|(source, _)| match source {
                SettingSource::Project => false,
                SettingSource::Local => !self.local_settings_tracked,
                _ => true,
            })
            .map(|(_, dir)| dir.as_path())
    }

    /// With the memory folder chosen by the repository's settings or not (what
    /// [`PermissionRules::for_session`] finds out from the session).
    pub fn with_memory_dir_from_repo(mut self, from_repo: bool) -> PermissionRules {
        self.memory_dir_from_repo = from_repo;
        self
    }

    /// The source and file of `permissions.blockReadsOutsideWorkingDirectories`, when a settings
    /// file the session applies turns it on.
    pub fn read_block(&self) -> Option<(SettingSource, &Path)> {
        self.read_block.as_ref().map(|(s, p)| (*s, p.as_path()))
    }

    /// Under the read block, whether reading `path` (absolute, normalized) is refused: it lies
    /// outside the working folder (`cwd`: its spellings, the link-resolved one too) and every
    /// additional directory, and outside the memory folder (`memory_dir`, its spellings), which
    /// the agents may read unless the repository's settings chose it. `false` when the block is
    /// off.
    pub fn read_blocked(&self, path: &Path, cwd: &[PathBuf], memory_dir: &[PathBuf]) -> bool {
        if self.read_block.is_none() {
            return false;
        }
        let inside = |dir: &Path| !dir.as_os_str().is_empty() && path.starts_with(dir);
        let exempt = if self.memory_dir_from_repo { &[][..] } else { memory_dir };
        !(cwd.iter().any(|d| inside(d)) || self.working_directories().any(inside) || exempt.iter().any(|d| inside(d)))
    }

    /// The files a shell command names (its words after each command name that are not flags),
    /// made absolute against the working folder `cwd` (`~` as the home folder, as the shell
    /// expands it).
    pub(crate) fn command_files(&self, command: &str, cwd: &Path) -> Vec<PathBuf> {
        bash_operands(command)
            .iter()
            .map(|w| match w.strip_prefix('~') {
                Some("") => self.home.clone(),
                Some(rest) if rest.starts_with('/') => mneme_store::git::normalize(&self.home.join(&rest[1..])),
                _ => absolute(cwd, w),
            })
            .collect()
    }

    /// No rule at all.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules, in the order they are consulted.
    pub fn rules(&self) -> &[PermissionRule] {
        &self.rules
    }

    /// Whether a deny rule takes `tool` away whole (`Read`, `Edit(*)`): Claude Code then does
    /// not offer the tool at all, so a call of it is a call of a tool that does not exist.
    /// Seen in 2.1.291 and 2.1.292, before and after row 92 alike.
    pub fn removes_tool(&self, tool: &str) -> bool {
        self.rules.iter().any(|r| r.behavior == RuleBehavior::Deny && r.content.is_none() && r.tool == tool)
    }

    /// The `Read(path)` deny rule covering `path`: the Read tool refuses such a path when it
    /// checks its input, before any permission function (seen in 2.1.291 and 2.1.292).
    pub fn denies_reading(&self, path: &str) -> Option<&PermissionRule> {
        self.rules.iter().find(|r| {
            r.behavior == RuleBehavior::Deny && r.tool == "Read" && r.content.as_deref().is_some_and(|p| self.path_matches(r, p, path))
        })
    }

    /// Why Edit and Write refuse `path` when they check their input: an `Edit(path)` deny rule
    /// covers it (seen in 2.1.197, 2.1.291 and 2.1.292), or else, when `read_rules_too`
    /// (`Profile::writes_refuse_read_denied`, from 2.1.228), a Read deny rule does (a
    /// whole-tool `Read` one included: what may not be read may not be written either). A
    /// whole-tool `Edit` deny rule is not consulted here (it takes the Edit tool away, not Write).
    pub fn denies_writing(&self, path: &str, read_rules_too: bool) -> Option<(&PermissionRule, WriteDenial)> {
        let edit = self.rules.iter().find(|r| {
            r.behavior == RuleBehavior::Deny && r.tool == "Edit" && r.content.as_deref().is_some_and(|p| self.path_matches(r, p, path))
        });
        if let Some(rule) = edit {
            return Some((rule, WriteDenial::EditRule));
        }
        if !read_rules_too {
            return None;
        }
        let read = self.rules.iter().find(|r| {
            r.behavior == RuleBehavior::Deny && r.tool == "Read" && r.content.as_deref().is_none_or(|p| self.path_matches(r, p, path))
        });
        read.map(|rule| (rule, WriteDenial::ReadRule))
    }

    /// The rule that refuses a call of `tool` with `input`: deny rules first (a tool-wide one,
    /// then one on the call's content), then ask rules, as Claude Code's check orders them.
    pub fn refusing(&self, tool: &str, input: &Value) -> Option<&PermissionRule> {
        [RuleBehavior::Deny, RuleBehavior::Ask].into_iter().find_map(|behavior| {
            let mut of = self.rules.iter().filter(move |r| r.behavior == behavior);
            of.clone()
                .find(|r| r.content.is_none() && r.tool == tool)
                .or_else(|| of.find(|r| r.content.is_some() && self.covers(r, tool, input)))
        })
    }

    /// The rule under which no write into `memory_dir` could be allowed (Claude Code's
    /// `memoryWriteBlockingRule`): a deny or ask rule on all of Write or Edit, or an `Edit(path)`
    /// deny or ask rule covering the folder itself.
    pub fn blocking_memory_writes(&self, memory_dir: &Path) -> Option<&PermissionRule> {
        let dir = memory_dir.to_string_lossy();
        let dir = dir.trim_end_matches('/');
        ["Write", "Edit"]
            .into_iter()
            .find_map(|tool| self.rules.iter().find(|r| r.content.is_none() && r.tool == tool))
            .or_else(|| {
                [RuleBehavior::Deny, RuleBehavior::Ask].into_iter().find_map(|behavior| {
                    self.rules.iter().find(|r| {
                        r.behavior == behavior && r.tool == "Edit" && r.content.as_deref().is_some_and(|p| self.path_matches(r, p, dir))
                    })
                })
            })
    }

    fn covers(&self, rule: &PermissionRule, tool: &str, input: &Value) -> bool {
        let Some(content) = rule.content.as_deref() else { return false };
        let str_field = |k: &str| input.get(k).and_then(Value::as_str);
        match (rule.tool.as_str(), tool) {
            ("Read", "Read") => str_field("file_path").is_some_and(|p| self.path_matches(rule, content, p)),
            ("Read", "Grep" | "Glob") => {
                let cwd = self.cwd.to_string_lossy();
                self.path_matches(rule, content, str_field("path").unwrap_or(&cwd))
            }
            ("Edit", "Edit" | "Write") => str_field("file_path").is_some_and(|p| self.path_matches(rule, content, p)),
            ("Bash", "Bash") => str_field("command").is_some_and(|c| bash_matches(content, c)),
            // A shell command's file operands answer to the Read rules (seen in 2.1.292:
            // `cat` of a file a Read deny rule covers is refused).
            ("Read", "Bash") => str_field("command").is_some_and(|c| bash_operands(c).iter().any(|p| self.path_matches(rule, content, p))),
            _ => false,
        }
    }

    /// Whether the path pattern `pattern` of `rule` covers `path` (gitignore semantics: a
    /// pattern that covers a folder covers what is inside it).
    fn path_matches(&self, rule: &PermissionRule, pattern: &str, path: &str) -> bool {
        let (pattern, root) = if let Some(rest) = pattern.strip_prefix("//") {
            (format!("/{rest}"), PathBuf::from("/"))
        } else if let Some(rest) = pattern.strip_prefix("~/") {
            (format!("/{rest}"), self.home.clone())
        } else if pattern.starts_with('/') {
            (pattern.to_string(), rule.root.clone())
        } else {
            (pattern.strip_prefix("./").unwrap_or(pattern).to_string(), self.cwd.clone())
        };
        // `x/**` also covers the folder `x` itself (for deny and ask rules).
        let pattern = match pattern.strip_suffix("/**") {
            Some(r) if r.chars().any(|c| c != '/') => r.to_string(),
            Some(_) => "/**".to_string(),
            None => pattern,
        };
        let path = absolute(&self.cwd, path);
        let root = absolute(&self.cwd, &root.to_string_lossy());
        let Ok(relative) = path.strip_prefix(&root) else { return false };
        if relative.as_os_str().is_empty() {
            return false;
        }
        let mut builder = ignore::gitignore::GitignoreBuilder::new(&root);
        if builder.add_line(None, &pattern).is_err() {
            return false;
        }
        let Ok(matcher) = builder.build() else { return false };
        matcher.matched_path_or_any_parents(&path, false).is_ignore()
    }
}

/// Whether git tracks `file` (in the index of the repository around it). Anything git cannot
/// answer (no repository, no git) counts as untracked, as Claude Code counts it when it decides
/// whose folders a local settings file may add.
fn git_tracks(file: &Path) -> bool {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else { return false };
    std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["ls-files", "-z", "--"])
        .arg(name)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// `path` made absolute against `cwd` and normalized (`.` and `..` resolved by name, as
/// Node's `path.resolve` does).
fn absolute(cwd: &Path, path: &str) -> PathBuf {
    mneme_store::git::normalize(&cwd.join(path))
}

/// Whether a `Bash(...)` rule's content covers `command`: the whole command, or one of its
/// simple commands (so `rm:*` also covers `ls && rm x`).
fn bash_matches(rule: &str, command: &str) -> bool {
    let mut candidates = vec![command.trim().to_string()];
    if let Ok(simple) = crate::bash::parse::parse(command) {
        for c in simple {
            candidates.push(c.text.trim().to_string());
            candidates.push(c.argv.join(" "));
        }
    }
    candidates.iter().any(|c| bash_rule_matches(rule, c))
}

/// The words of each simple command of `command` after its name that are not flags: the
/// files it may read. A command Mneme cannot read has none (the agents' guard refuses it).
fn bash_operands(command: &str) -> Vec<String> {
    let Ok(simple) = crate::bash::parse::parse(command) else { return Vec::new() };
    simple.into_iter().flat_map(|c| c.argv.into_iter().skip(1).filter(|w| !w.starts_with('-') && !w.is_empty())).collect()
}

fn bash_rule_matches(rule: &str, command: &str) -> bool {
    if let Some(prefix) = rule.strip_suffix(":*") {
        return command == prefix || command.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(' '));
    }
    if unescaped(rule, '*').next().is_none() {
        return command == rule.replace("\\*", "*");
    }
    let mut re = String::from("(?s)^");
    let mut chars = rule.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'*') => {
                chars.next();
                re.push_str("\\*");
            }
            '\\' if chars.peek() == Some(&'\\') => {
                chars.next();
                re.push_str("\\\\");
            }
            '*' => re.push_str(".*"),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    // `ls *` also covers a bare `ls`.
    if let Some(stripped) = re.strip_suffix(" .*") {
        re = format!("{stripped}(?: .*)?");
    }
    re.push('$');
    regex::Regex::new(&re).is_ok_and(|r| r.is_match(command))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_store::settings::SettingsFile;
    use serde_json::json;

    fn rules(files: &[(SettingSource, &str, Value)]) -> PermissionRules {
        let files = files.iter().map(|(s, p, v)| SettingsFile::from_value(*s, *p, v.clone())).collect();
        PermissionRules::from_settings(&Settings::from_files(files), Path::new("/home/u"), Path::new("/home/u/.claude"), Path::new("/repo"))
    }

    fn deny(list: &[&str]) -> PermissionRules {
        rules(&[(SettingSource::User, "/home/u/.claude/settings.json", json!({"permissions": {"deny": list}}))])
    }

    #[test]
    fn rule_syntax() {
        assert_eq!(parse_rule("Read"), Some(("Read".into(), None)));
        assert_eq!(parse_rule("Read()"), Some(("Read".into(), None)));
        assert_eq!(parse_rule("Read(*)"), Some(("Read".into(), None)));
        assert_eq!(parse_rule("Bash(echo \\(x\\))"), Some(("Bash".into(), Some("echo (x)".into()))));
        assert_eq!(parse_rule("Read(a"), None);
        assert_eq!(parse_rule("Read(a)b"), None);
        assert_eq!(parse_rule("(a)"), None);
        assert_eq!(parse_rule(""), None);
    }

    #[test]
    fn tool_wide_rules() {
        let r = deny(&["Grep", "Write(*)"]);
        assert_eq!(r.refusing("Grep", &json!({"pattern": "x"})).map(|r| r.text.as_str()), Some("Grep"));
        assert_eq!(r.refusing("Write", &json!({"file_path": "/m/a.md"})).map(|r| r.text.as_str()), Some("Write(*)"));
        assert_eq!(r.refusing("Read", &json!({"file_path": "/m/a.md"})), None);
        assert_eq!(r.refusing("Edit", &json!({"file_path": "/m/a.md"})), None);
    }

    #[test]
    fn path_rules_and_their_roots() {
        let r = deny(&["Read(~/.ssh/**)", "Edit(//mem/private/*.md)", "Read(*.env)", "Edit(/notes/**)"]);
        let read = |p: &str| r.refusing("Read", &json!({"file_path": p})).map(|r| r.text.clone());
        let edit = |p: &str| r.refusing("Edit", &json!({"file_path": p})).map(|r| r.text.clone());
        assert_eq!(read("/home/u/.ssh/id_rsa").as_deref(), Some("Read(~/.ssh/**)"));
        assert_eq!(read("/home/u/.sshx/a"), None);
        assert_eq!(read("/repo/a/b/.env").as_deref(), Some("Read(*.env)"), "a bare name matches at any depth under the working folder");
        assert_eq!(read("/elsewhere/.env"), None, "relative patterns start at the working folder");
        assert_eq!(edit("/mem/private/a.md").as_deref(), Some("Edit(//mem/private/*.md)"));
        assert_eq!(edit("/mem/private/sub/a.md"), None);
        assert_eq!(edit("/mem/private/../private/a.md").as_deref(), Some("Edit(//mem/private/*.md)"));
        // `/x` in the user settings starts at the config home.
        assert_eq!(edit("/home/u/.claude/notes/a.md").as_deref(), Some("Edit(/notes/**)"));
        assert_eq!(edit("/repo/notes/a.md"), None);
        // Read rules do not cover writes, nor Edit rules reads.
        assert_eq!(r.refusing("Write", &json!({"file_path": "/home/u/.ssh/x.md"})), None);
        assert_eq!(read("/mem/private/a.md"), None);
        // Grep and Glob answer to Read rules, by their path or the working folder.
        assert!(r.refusing("Grep", &json!({"pattern": "k", "path": "/home/u/.ssh"})).is_some());
        let whole = deny(&["Read(//repo/**)"]);
        assert!(whole.refusing("Glob", &json!({"pattern": "*.md"})).is_some());
        assert!(whole.refusing("Glob", &json!({"pattern": "*.md", "path": "/m"})).is_none());
    }

    #[test]
    fn project_rules_start_at_the_working_folder_and_ask_counts_as_refusal() {
        let r = rules(&[(SettingSource::Project, "/repo/.claude/settings.json", json!({"permissions": {"ask": ["Edit(/docs/**)"], "allow": ["Edit"]}}))]);
        let hit = r.refusing("Write", &json!({"file_path": "/repo/docs/a.md"})).unwrap();
        assert_eq!((hit.behavior, hit.source), (RuleBehavior::Ask, SettingSource::Project));
        assert!(r.refusing("Write", &json!({"file_path": "/repo/src/a.md"})).is_none(), "allow rules refuse nothing");
    }

    #[test]
    fn deny_before_ask() {
        let r = rules(&[(SettingSource::User, "/home/u/.claude/settings.json", json!({"permissions": {"ask": ["Bash"], "deny": ["Bash(rm:*)"]}}))]);
        assert_eq!(r.refusing("Bash", &json!({"command": "rm /m/a.md"})).unwrap().behavior, RuleBehavior::Deny);
        assert_eq!(r.refusing("Bash", &json!({"command": "ls"})).unwrap().behavior, RuleBehavior::Ask);
    }

    #[test]
    fn bash_rules() {
        for (rule, command, hit) in [
            ("rm:*", "rm /m/a.md", true),
            ("rm:*", "rm", true),
            ("rm:*", "rmdir x", false),
            ("rm:*", "ls /m && rm /m/a.md", true),
            ("cat /etc/*", "cat /etc/passwd", true),
            ("cat /etc/*", "cat /home/x", false),
            ("ls *", "ls", true),
            ("ls *", "lsof", false),
            ("echo \\*", "echo *", true),
            ("echo \\*", "echo x", false),
            ("git status", "git status", true),
            ("git status", "git status -s", false),
        ] {
            assert_eq!(deny(&[&format!("Bash({rule})")]).refusing("Bash", &json!({"command": command})).is_some(), hit, "{rule} / {command}");
        }
    }

    #[test]
    fn what_the_tools_refuse_when_checking_their_input() {
        let r = deny(&["Read(//secret/**)", "Edit(//mem/locked.md)", "Glob"]);
        assert!(r.removes_tool("Glob") && !r.removes_tool("Read"));
        assert_eq!(r.denies_reading("/secret/k").map(|r| r.text.as_str()), Some("Read(//secret/**)"));
        assert_eq!(r.denies_reading("/mem/locked.md"), None);
        assert_eq!(r.denies_writing("/mem/locked.md", true).map(|(r, k)| (r.text.as_str(), k)), Some(("Edit(//mem/locked.md)", WriteDenial::EditRule)));
        assert_eq!(r.denies_writing("/secret/a.md", true).map(|(r, k)| (r.text.as_str(), k)), Some(("Read(//secret/**)", WriteDenial::ReadRule)));
        assert_eq!(r.denies_writing("/mem/a.md", true), None);
        // Before 2.1.228 Read rules are not consulted.
        assert_eq!(r.denies_writing("/secret/a.md", false), None);
        assert!(r.denies_writing("/mem/locked.md", false).is_some());
        // A whole-tool Read deny covers every write; a whole-tool Edit deny none.
        assert_eq!(deny(&["Read"]).denies_writing("/mem/a.md", true).map(|(_, k)| k), Some(WriteDenial::ReadRule));
        assert_eq!(deny(&["Edit"]).denies_writing("/mem/a.md", true), None);
        // Ask rules are not consulted there.
        let ask = rules(&[(SettingSource::User, "/home/u/.claude/settings.json", json!({"permissions": {"ask": ["Read(//secret/**)", "Glob"]}}))]);
        assert!(ask.denies_reading("/secret/k").is_none() && ask.denies_writing("/secret/k", true).is_none() && !ask.removes_tool("Glob"));
    }

    #[test]
    fn shell_operands_answer_to_read_rules() {
        let r = deny(&["Read(//secret/**)"]);
        assert!(r.refusing("Bash", &json!({"command": "cat /secret/key"})).is_some());
        assert!(r.refusing("Bash", &json!({"command": "ls /m && head -n 2 /secret/key"})).is_some());
        assert!(r.refusing("Bash", &json!({"command": "cat /m/a.md"})).is_none());
    }

    #[test]
    fn managed_only_rules_and_disabled_sources() {
        let user = (SettingSource::User, "/home/u/.claude/settings.json", json!({"permissions": {"deny": ["Read"]}}));
        let policy = (SettingSource::Policy, "/etc/claude-code/managed-settings.json", json!({"allowManagedPermissionRulesOnly": true, "permissions": {"deny": ["Grep"]}}));
        let r = rules(&[user.clone(), policy]);
        assert!(r.refusing("Read", &json!({"file_path": "/a"})).is_none());
        assert!(r.refusing("Grep", &json!({"pattern": "a"})).is_some());
        let mut off = SettingsFile::from_value(user.0, user.1, user.2);
        off.enabled = false;
        let r = PermissionRules::from_settings(&Settings::from_files(vec![off]), Path::new("/home/u"), Path::new("/home/u/.claude"), Path::new("/repo"));
        assert!(r.is_empty());
    }

    /// Row 97: under the read block, a local settings file counts as the repository's own when
    /// git tracks it: its `additionalDirectories` are dropped, and a memory folder it chose is
    /// not exempt; untracked, both hold. The project's settings' folders never count.
    #[test]
    #[cfg(unix)]
    fn a_local_settings_file_git_tracks_is_the_repositorys() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (home, repo, extra, mem) = (root.join("home"), root.join("repo"), root.join("extra"), root.join("mem"));
        for d in [&home.join(".claude"), &repo.join(".claude"), &extra, &mem] {
            std::fs::create_dir_all(d).unwrap();
        }
        let write = |p: &Path, v: Value| std::fs::write(p, serde_json::to_string(&v).unwrap()).unwrap();
        write(&home.join(".claude/settings.json"), json!({"permissions": {"blockReadsOutsideWorkingDirectories": true}}));
        write(&repo.join(".claude/settings.json"), json!({"permissions": {"additionalDirectories": [root.join("shared")]}}));
        let local = repo.join(".claude/settings.local.json");
        write(&local, json!({"autoMemoryDirectory": mem, "permissions": {"additionalDirectories": [extra]}}));
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git").arg("-C").arg(&repo).args(args).output().unwrap().status.success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        let env = mneme_store::env::Environment::with_home(&home);
        let session = || mneme_store::session::SessionMemory::for_cwd(&env, &repo);
        assert_eq!(session().dir.dir, mem, "the local file chose the memory folder");
        let blocked = |r: &PermissionRules, p: &Path| r.read_blocked(p, &[repo.clone()], &[mem.clone()]);

        let untracked = PermissionRules::for_session(&session(), &repo);
        assert!(!untracked.local_settings_tracked && !untracked.memory_dir_from_repo);
        assert!(!blocked(&untracked, &extra.join("a.md")) && !blocked(&untracked, &mem.join("a.md")));
        assert!(blocked(&untracked, &root.join("shared/a.md")), "the project's folders widen nothing");

        git(&["add", "-f", ".claude/settings.local.json"]);
        let tracked = PermissionRules::for_session(&session(), &repo);
        assert!(tracked.local_settings_tracked && tracked.memory_dir_from_repo);
        assert!(blocked(&tracked, &extra.join("a.md")) && blocked(&tracked, &mem.join("a.md")));
        assert!(!blocked(&tracked, &repo.join("a.md")));
    }

    #[test]
    fn rules_that_block_every_memory_write() {
        let mem = Path::new("/home/u/.claude/projects/-repo/memory");
        for (list, blocked) in [
            (vec!["Edit"], Some("Edit")),
            (vec!["Write"], Some("Write")),
            (vec!["Edit(~/.claude/projects/**)"], Some("Edit(~/.claude/projects/**)")),
            (vec!["Edit(//home/u/.claude/**)"], Some("Edit(//home/u/.claude/**)")),
            (vec!["Edit(~/.claude/projects/*/memory/*.md)"], None),
            (vec!["Read(~/.claude/**)"], None),
            (vec!["Edit(//elsewhere/**)"], None),
        ] {
            assert_eq!(deny(&list).blocking_memory_writes(mem).map(|r| r.text.as_str()), blocked, "{list:?}");
        }
    }
}
