//! Claude Code's permission functions for its memory agents, with their exact denial texts.
//!
//! `createAutoMemCanUseTool(memoryDir)` as compiled into 2.1.197: `Read`, `Grep` and `Glob`
//! are allowed (unless the path is a UNC path); `Bash` when the read-only classifier accepts
//! the command, or when it is an `rm` of `.md` files inside the folder; `Edit`/`Write` when
//! `file_path` is a string naming a `.md` file inside the folder (`team/` included) that does
//! not pass through a protected folder name (`.git`, `.claude`, `hooks`, …; from 2.1.337 also
//! `.claude-science`) and, from 2.1.315, has no `:` after the folder. Everything else is
//! denied. The session-memory update allows only `Edit` of exactly its summary file.
//!
//! From 2.1.292 the user's `deny` and `ask` permission rules are consulted first under the
//! memory policy (`crate::rules`): a call one of them covers is refused whatever the guard says.
//!
//! Two read gates sit in front of `Read`, `Grep` and `Glob` (`docs/claude-code-versions.md`,
//! rows 96 and 97): a path under the `/net` automount map is refused (from 2.1.191
//! `/net/<host>…`, from 2.1.251 `/Network/Servers/<host>…`, from 2.1.257 `/net` itself), since
//! merely looking there can mount a remote share; and from 2.1.257, while a settings file turns
//! `permissions.blockReadsOutsideWorkingDirectories` on, a path outside the working directories
//! is refused unless it lies in the memory folder (from 2.1.292 the same holds for the files a
//! shell command names, and a command whose files cannot be told, such as a substitution or
//! `eval`, is refused in the block's name). Which `additionalDirectories` count, and whether
//! the memory folder is exempt, depend on whose settings named them (`crate::rules`, rows 100
//! and 101). Each path is judged as given (made absolute and normalized) and as its
//! links resolve. The UNC refusal (`//server/share`) applies on Windows only: elsewhere the
//! path is normalized to `/server/share` first, a local path, as in Claude Code.

use crate::bash::{is_memory_rm_command, is_read_only_command};
use crate::rules::PermissionRules;
use crate::Policy;
use mneme_core::versions::Profile;
use mneme_store::paths::node_normalize;
use serde_json::Value;
use std::path::Path;

/// The memory folder as Claude Code writes it into messages: normalized, one trailing `/`.
pub fn auto_mem_prefix(memory_dir: &Path) -> String {
    let normalized = node_normalize(&memory_dir.to_string_lossy());
    format!("{}/", normalized.trim_end_matches('/'))
}

/// The denial for any tool call the memory policy does not allow.
pub fn auto_mem_denial(prefix: &str) -> String {
    format!("only Read, Grep, Glob, read-only Bash, and Edit/Write within {prefix} are allowed")
}

/// The denial for a `Bash` command that is neither read-only nor an allowed `rm`.
pub fn bash_denial(prefix: &str) -> String {
    crate::messages::shell_refused(prefix)
}

/// The session-memory update's denial.
pub fn session_memory_denial(path: &Path) -> String {
    format!("only Edit on {} is allowed", path.display())
}

/// Folder names an agent may never write through, even inside the memory folder (Claude
/// Code's list), compared after its case and invisible-character folding.
const PROTECTED_SEGMENTS: &[&str] = &[
    ".git", "hooks", ".husky", ".githooks", "node_modules", ".vscode", ".idea", "head", "config", "objects", "refs",
    ".claude", "skills", "commands", "agents", ".cargo", ".devcontainer", ".yarn", ".mvn",
];

/// The name 2.1.337 added to the list (`Profile::memory_agents_protect_claude_science`).
const CLAUDE_SCIENCE: &str = ".claude-science";

/// Claude Code's segment folding: lower case (dotless ı and long ſ folded), zero-width and
/// bidi controls removed, an NTFS stream suffix (`:…`) and trailing dots/spaces dropped.
fn fold_segment(seg: &str) -> String {
    let lower = seg.to_lowercase().replace('\u{131}', "i").replace('\u{17f}', "s");
    let mut out: String = lower
        .chars()
        .filter(|c| {
            !matches!(*c as u32, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff)
        })
        .collect();
    if let Some(i) = out.find(':') {
        out.truncate(i);
    }
    let trimmed = out.trim_end_matches(['.', ' ']).to_string();
    if trimmed.is_empty() {
        lower
    } else {
        trimmed
    }
}

/// `isAutoMemPath` for writes (`.md`, inside the folder after normalizing, no protected
/// segment of `release`'s list, from 2.1.315 no `:` after the folder). `prefix` is
/// [`auto_mem_prefix`].
pub fn is_auto_mem_write_path(path: &str, prefix: &str, release: &Profile) -> bool {
    if !path.ends_with(".md") {
        return false;
    }
    let normalized = node_normalize(path);
    let Some(rest) = normalized.strip_prefix(prefix) else { return false };
    if release.memory_paths_refuse_colon && rest.contains(':') {
        return false;
    }
    !rest.split('/').any(|seg| {
        let folded = fold_segment(seg);
        PROTECTED_SEGMENTS.contains(&folded.as_str()) || (release.memory_agents_protect_claude_science && folded == CLAUDE_SCIENCE)
    })
}

/// A permission decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Allow,
    /// Refused, with the exact message the model receives.
    Deny(String),
}

/// The policy, prepared once per run.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    policy: Policy,
    prefix: String,
    /// The release the run answers as: its secret scanner, its read-only shell tables.
    release: Profile,
    /// The user's deny and ask rules, consulted first under the memory policy from 2.1.292.
    rules: PermissionRules,
    /// The working folder: relative paths start here, and it is the working directory the read
    /// block lets the agents read.
    cwd: std::path::PathBuf,
}

impl Gate {
    /// The policy as the release `release` applies it (its secret scanner, its read-only
    /// shell tables).
    pub fn new(policy: &Policy, release: &Profile) -> Gate {
        let prefix = match policy {
            Policy::AutoMem { memory_dir } => auto_mem_prefix(memory_dir),
            Policy::SessionMemory { path } => path.to_string_lossy().into_owned(),
        };
        Gate { policy: policy.clone(), prefix, release: *release, rules: PermissionRules::default(), cwd: std::path::PathBuf::new() }
    }

    /// The gate for a run working in `cwd` (`AgentTask::cwd`).
    pub fn with_cwd(mut self, cwd: &Path) -> Gate {
        self.cwd = cwd.to_path_buf();
        self
    }

    /// The gate with the user's permission rules (`AgentTask::permission_rules`).
    pub fn with_rules(mut self, rules: &PermissionRules) -> Gate {
        self.rules = rules.clone();
        self
    }

    /// The user's permission rules the run was given.
    pub fn rules(&self) -> &PermissionRules {
        &self.rules
    }

    /// The memory folder with its trailing `/`, under the memory policy.
    pub fn memory_prefix(&self) -> Option<&str> {
        matches!(self.policy, Policy::AutoMem { .. }).then_some(self.prefix.as_str())
    }

    /// The team-memory secret guard (Claude Code's `checkTeamMemSecrets`): why `content` may
    /// not be written to `path`, when the path is in team memory and the content holds a secret.
    /// A model run refuses what the release's own scanner flags *and* what Mneme's does (every
    /// other write into team memory answers to that one): the model writes what a transcript put
    /// before it, and Claude Code's tables miss secrets Mneme's catches (a database password in a
    /// connection string; an Anthropic OAuth token before 2.1.234).
    pub fn team_secret_refusal(&self, path: &Path, content: &str) -> Option<String> {
        let team = format!("{}team/", self.memory_prefix()?);
        if !path.to_string_lossy().starts_with(&team) {
            return None;
        }
        // From 2.1.284 the release's check also reads the text without control and invisible
        // characters, so a token (or a placeholder) split by one is refused there, and here.
        let mut findings = if self.release.secret_scan_readings {
            mneme_secrets::scan_claude_code_readings(content, self.release.secret_scanner)
        } else {
            mneme_secrets::scan_claude_code(content, self.release.secret_scanner)
        };
        // The team guard's pass, which also reads Markdown spellings (`**API key**: …`).
        for f in mneme_secrets::scan_team(content) {
            if !findings.iter().any(|seen| seen.rule_id == f.rule_id) {
                findings.push(f);
            }
        }
        (!findings.is_empty()).then(|| mneme_secrets::TeamWriteRefused { findings }.to_string())
    }

    /// Whether an `Edit`/`Write` of `file_path` is one the policy allows (Claude Code's
    /// `writtenPaths` filter).
    pub fn allows_write_path(&self, tool: &str, file_path: &str) -> bool {
        match &self.policy {
            Policy::AutoMem { .. } => is_auto_mem_write_path(file_path, &self.prefix, &self.release),
            Policy::SessionMemory { path } => tool == "Edit" && Path::new(file_path) == path.as_path(),
        }
    }

    /// The decision for one tool call whose input already passed its schema.
    pub fn decide(&self, tool: &str, input: &Value) -> Decision {
        match &self.policy {
            Policy::SessionMemory { path } => {
                let file = input.get("file_path").and_then(Value::as_str);
                if tool == "Edit" && file.is_some_and(|f| Path::new(f) == path.as_path()) {
                    Decision::Allow
                } else {
                    Decision::Deny(session_memory_denial(path))
                }
            }
            Policy::AutoMem { .. } => self.decide_auto_mem(tool, input),
        }
    }

    fn decide_auto_mem(&self, tool: &str, input: &Value) -> Decision {
        // From 2.1.292 the session's rule check runs before the agents' own guard: a deny rule,
        // or an ask rule (no one can answer a background agent), refuses the call even where
        // the guard would allow it; allow rules add nothing to what the guard allows.
        if self.release.memory_agents_obey_permission_rules {
            if let Some(rule) = self.rules.refusing(tool, input) {
                return Decision::Deny(crate::messages::permission_rule_refused(tool, rule.behavior.as_str(), &rule.text, rule.source.label()));
            }
        }
        // From 2.1.292 the read block also holds the files a shell command names (the session's
        // rule check asks about such a command, and the agents cannot ask).
        if tool == "Bash" && self.release.memory_agents_obey_read_block && self.release.memory_agents_obey_permission_rules {
            if let Some(refusal) = self.bash_read_block(input) {
                return refusal;
            }
        }
        match tool {
            "Read" | "Grep" | "Glob" => self.decide_read(tool, input),
            "Bash" => {
                let command = input.get("command").and_then(Value::as_str).unwrap_or_default();
                if is_read_only_command(command, self.release.bash_read_only) || is_memory_rm_command(command, &self.prefix, &self.release) {
                    Decision::Allow
                } else {
                    Decision::Deny(bash_denial(&self.prefix))
                }
            }
            "Edit" | "Write" => match input.get("file_path").and_then(Value::as_str) {
                Some(p) if is_auto_mem_write_path(p, &self.prefix, &self.release) => Decision::Allow,
                _ => Decision::Deny(auto_mem_denial(&self.prefix)),
            },
            _ => Decision::Deny(auto_mem_denial(&self.prefix)),
        }
    }
}

impl Gate {
    /// The read gates in front of Read, Grep and Glob: a UNC path (Windows only), an automount
    /// path, then the read block; allowed otherwise.
    fn decide_read(&self, tool: &str, input: &Value) -> Decision {
        let key = if tool == "Read" { "file_path" } else { "path" };
        let given = input.get(key).and_then(Value::as_str);
        // UNC paths are refused in the same check as the automount paths (from 2.1.191), and only
        // where they stay UNC paths: on Windows.
        if let Some(p) = given.filter(|p| cfg!(windows) && self.release.memory_agents_refuse_net_hosts && (p.starts_with("//") || p.starts_with("\\\\"))) {
            return Decision::Deny(crate::messages::network_path(p));
        }
        let path = match given {
            Some(p) => absolute(&self.cwd, p),
            None => self.cwd.clone(),
        };
        let shown = given.map_or_else(|| path.to_string_lossy().into_owned(), str::to_string);
        let spellings = spellings(&path);
        let automount = |p: &str| is_automount(p, &self.release);
        if spellings.iter().any(|s| automount(&s.to_string_lossy())) {
            return Decision::Deny(crate::messages::automount_path(&shown));
        }
        // Glob's pattern is judged too, as written, when it is absolute.
        if tool == "Glob" {
            if let Some(pattern) = input.get("pattern").and_then(Value::as_str).filter(|p| automount(p)) {
                return Decision::Deny(crate::messages::automount_path(pattern));
            }
        }
        if self.release.memory_agents_obey_read_block {
            if let Some(refusal) = self.read_block_refusal(&spellings, &shown) {
                return refusal;
            }
        }
        Decision::Allow
    }

    /// The read block's refusal of a path whose spellings are `spellings`, shown as `shown`.
    fn read_block_refusal(&self, spellings: &[std::path::PathBuf], shown: &str) -> Option<Decision> {
        let (source, file) = self.rules.read_block()?;
        let memory = match &self.policy {
            Policy::AutoMem { memory_dir } => spellings_of_dir(&absolute(&self.cwd, &memory_dir.to_string_lossy())),
            Policy::SessionMemory { .. } => Vec::new(),
        };
        let cwd = spellings_of_dir(&self.cwd);
        spellings.iter().any(|s| self.rules.read_blocked(s, &cwd, &memory)).then(|| {
            Decision::Deny(crate::messages::read_outside_blocked(shown, source.label(), &file.to_string_lossy()))
        })
    }

    /// The read block's refusal of a shell command naming a file outside the working
    /// directories and the memory folder, or of one whose files cannot be told: a command the
    /// parser cannot analyse, or `eval` (2.1.292 and later ask about both under the block, where
    /// without it the agents' guard refuses them as not read-only: case `shell_hard_block`).
    fn bash_read_block(&self, input: &Value) -> Option<Decision> {
        let command = input.get("command").and_then(Value::as_str)?;
        let (source, file) = self.rules.read_block()?;
        let unchecked = |why: &str| Some(Decision::Deny(crate::messages::shell_unchecked_under_read_block(why, source.label(), &file.to_string_lossy())));
        match crate::bash::parse::parse(command) {
            Err(why) => return unchecked(why),
            Ok(simple) if simple.iter().any(|c| c.argv.first().is_some_and(|name| name == "eval")) => {
                return unchecked("`eval` runs its words as shell code");
            }
            Ok(_) => {}
        }
        self.rules
            .command_files(command, &self.cwd)
            .into_iter()
            .find_map(|file| self.read_block_refusal(&spellings(&file), &file.to_string_lossy()))
    }
}

/// `path` made absolute against `cwd` and normalized, as Claude Code's `expandPath` does.
fn absolute(cwd: &Path, path: &str) -> std::path::PathBuf {
    if path.starts_with('/') {
        std::path::PathBuf::from(node_normalize(path))
    } else {
        std::path::PathBuf::from(node_normalize(&format!("{}/{path}", cwd.to_string_lossy())))
    }
}

/// The spellings a read of `path` is judged by: the path as given, and where its links lead
/// (the deepest part of it that exists, resolved, with the rest appended), when that differs.
fn spellings(path: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![path.to_path_buf()];
    let mut existing = path;
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else { return out };
        rest.push(name);
        existing = parent;
    }
    // A link whose target is missing (a link to `/net/host/share`, nothing mounted yet) does
    // not canonicalize: its target is read instead, made absolute against the link's folder.
    let resolved = std::fs::canonicalize(existing).ok().or_else(|| {
        let target = std::fs::read_link(existing).ok()?;
        let base = existing.parent().unwrap_or(Path::new("/"));
        Some(std::path::PathBuf::from(node_normalize(&base.join(target).to_string_lossy())))
    });
    if let Some(mut real) = resolved {
        for name in rest.iter().rev() {
            real.push(name);
        }
        if real != path {
            out.push(real);
        }
    }
    out
}

/// A folder's spellings: as given and link-resolved.
fn spellings_of_dir(dir: &Path) -> Vec<std::path::PathBuf> {
    spellings(dir)
}

/// Whether `path` is under an automount map the release refuses: walked as Claude Code walks
/// it (empty and `.` segments skipped, `..` dropping the last one; each name folded: zero-width
/// and bidi controls removed, lower case), refused when at some step the names so far are `net`
/// and a host, or `network`, `servers` and a host, or, once the walk ends, `net` alone.
pub(crate) fn is_automount(path: &str, release: &Profile) -> bool {
    if !path.starts_with('/') {
        return false;
    }
    let fold = |s: &str| -> String {
        s.chars().filter(|c| !matches!(*c as u32, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff)).collect::<String>().to_lowercase()
    };
    let mut names: Vec<String> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => continue,
            ".." => {
                names.pop();
                continue;
            }
            _ => names.push(fold(seg)),
        }
        let hit = (release.memory_agents_refuse_net_hosts && names.len() == 2 && names[0] == "net")
            || (release.memory_agents_refuse_network_servers && names.len() == 3 && names[0] == "network" && names[1] == "servers");
        if hit {
            return true;
        }
    }
    release.memory_agents_refuse_net_root && names.len() == 1 && names[0] == "net"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    const MEM: &str = "/home/u/.claude/projects/-repo/memory";

    fn gate() -> Gate {
        Gate::new(&Policy::AutoMem { memory_dir: PathBuf::from(MEM) }, &mneme_core::versions::newest())
    }

    #[test]
    fn prefix_has_one_trailing_slash() {
        assert_eq!(auto_mem_prefix(Path::new(MEM)), format!("{MEM}/"));
        assert_eq!(auto_mem_prefix(Path::new(&format!("{MEM}//"))), format!("{MEM}/"));
        assert_eq!(auto_mem_prefix(Path::new("/a/./b/../memory")), "/a/memory/");
    }

    #[test]
    fn exact_denial_texts() {
        let p = format!("{MEM}/");
        assert_eq!(
            auto_mem_denial(&p),
            "only Read, Grep, Glob, read-only Bash, and Edit/Write within /home/u/.claude/projects/-repo/memory/ are allowed"
        );
        assert_eq!(
            bash_denial(&p),
            "This command may not run here: only read-only commands (ls, find, grep, cat, stat, wc, head, tail and the like) \
             and rm of paths inside /home/u/.claude/projects/-repo/memory/ are allowed. Use one of those, or the Edit and \
             Write tools for memory files."
        );
        assert_eq!(session_memory_denial(Path::new("/s/summary.md")), "only Edit on /s/summary.md is allowed");
    }

    #[test]
    fn memory_policy_decisions() {
        let g = gate();
        let deny = Decision::Deny(auto_mem_denial(&format!("{MEM}/")));
        assert_eq!(g.decide("Read", &json!({"file_path": "/etc/hosts"})), Decision::Allow);
        assert_eq!(g.decide("Grep", &json!({"pattern": "x"})), Decision::Allow);
        assert_eq!(g.decide("Glob", &json!({"pattern": "*"})), Decision::Allow);
        assert_eq!(g.decide("Write", &json!({"file_path": format!("{MEM}/a.md"), "content": ""})), Decision::Allow);
        assert_eq!(g.decide("Edit", &json!({"file_path": format!("{MEM}/team/a.md")})), Decision::Allow);
        assert_eq!(g.decide("Write", &json!({"file_path": format!("{MEM}/a.txt")})), deny);
        assert_eq!(g.decide("Write", &json!({"file_path": format!("{MEM}/../escape.md")})), deny);
        assert_eq!(g.decide("Write", &json!({"file_path": format!("{MEM}-old/a.md")})), deny);
        assert_eq!(g.decide("Write", &json!({"file_path": format!("{MEM}/.git/hooks.md")})), deny);
        assert_eq!(g.decide("Write", &json!({"file_path": format!("{MEM}/Skills./a.md")})), deny);
        assert_eq!(g.decide("Write", &json!({"file_path": "a.md"})), deny);
        assert_eq!(g.decide("Edit", &json!({"file_path": 5})), deny);
        assert_eq!(g.decide("WebFetch", &json!({"url": "x"})), deny);
        assert_eq!(g.decide("Bash", &json!({"command": "ls -la"})), Decision::Allow);
        assert_eq!(g.decide("Bash", &json!({"command": format!("rm {MEM}/old.md")})), Decision::Allow);
        assert_eq!(
            g.decide("Bash", &json!({"command": "touch x"})),
            Decision::Deny(bash_denial(&format!("{MEM}/")))
        );
        // A UNC spelling is refused on Windows only: elsewhere Claude Code normalizes it to a
        // local path first (every release run answers "File does not exist" for it).
        let unc = g.decide("Read", &json!({"file_path": "//server/share/x"}));
        if cfg!(windows) {
            assert_eq!(unc, Decision::Deny(crate::messages::network_path("//server/share/x")));
        } else {
            assert_eq!(unc, Decision::Allow);
        }
    }

    /// From 2.1.337 `.claude-science` is a protected folder name like `.git`, folded the same
    /// way (case, trailing dots); 2.1.332 lets the agents write through it.
    #[test]
    fn claude_science_is_protected_from_2_1_337() {
        let policy = Policy::AutoMem { memory_dir: PathBuf::from(MEM) };
        let [before, after] = ["2.1.332", "2.1.337"].map(|v| Gate::new(&policy, &mneme_core::versions::behaviours(v.parse().unwrap())));
        let deny = Decision::Deny(auto_mem_denial(&format!("{MEM}/")));
        for path in [format!("{MEM}/.claude-science/a.md"), format!("{MEM}/team/.Claude-Science./notes.md")] {
            for tool in ["Write", "Edit"] {
                let input = json!({"file_path": path, "content": "", "old_string": "a", "new_string": "b"});
                assert_eq!(before.decide(tool, &input), Decision::Allow, "2.1.332 {tool} {path}");
                assert_eq!(after.decide(tool, &input), deny, "2.1.337 {tool} {path}");
            }
            assert!(before.allows_write_path("Write", &path) && !after.allows_write_path("Write", &path), "{path}");
        }
        // Only the folder name: a note called so is still a memory.
        assert_eq!(after.decide("Write", &json!({"file_path": format!("{MEM}/.claude-science.md"), "content": ""})), Decision::Allow);
    }

    /// From 2.1.315 a write with a `:` after the memory folder is denied; before, a segment
    /// was only folded at its `:` (so `.git:x` still counted as `.git`).
    #[test]
    fn a_colon_inside_the_memory_folder_is_refused_from_2_1_315() {
        let policy = Policy::AutoMem { memory_dir: PathBuf::from(MEM) };
        let [before, after] = ["2.1.314", "2.1.315"].map(|v| Gate::new(&policy, &mneme_core::versions::behaviours(v.parse().unwrap())));
        for path in [format!("{MEM}/a:b.md"), format!("{MEM}/x:y/a.md")] {
            assert!(before.allows_write_path("Write", &path) && !after.allows_write_path("Write", &path), "{path}");
        }
        assert!(!before.allows_write_path("Write", &format!("{MEM}/.git:x/a.md")));
    }

    #[test]
    fn team_writes_answer_to_both_scanners() {
        let g = gate();
        let team = PathBuf::from(format!("{MEM}/team/ci.md"));
        // Assembled at run time, so this file holds no secret-looking literal.
        let pat = format!("token ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8");
        let placeholder = format!("AKIA{}", "IOSFODNN7EXAMPLE");
        let oauth = format!("sk-ant-oat01-{}", "Zq8vN2mK4pR7tX1wB5yC3dF6gH9jL0sA2eU4iO6uY8qW1zT3xV5nM7bQ9cE2rK4-aBcDeFgHiJkLmNoP-QrStUvAA");
        let dsn = format!("postgres://deploy:{}@db.internal:5432/app", "Tr0ub4dor-and-3");
        for content in [&pat, &placeholder, &oauth, &dsn] {
            assert!(g.team_secret_refusal(&team, content).is_some(), "{content}");
            assert_eq!(g.team_secret_refusal(&PathBuf::from(format!("{MEM}/ci.md")), content), None, "private memory is not scanned");
        }
        // Claude Code's rule and gitleaks' both fire on the PAT: it is named once.
        assert_eq!(g.team_secret_refusal(&team, &pat).unwrap().matches("GitHub PAT").count(), 1);
        assert_eq!(g.team_secret_refusal(&team, "Deploys go through staging first."), None);
    }

    #[test]
    fn team_writes_answer_to_the_releases_own_scanner() {
        // A placeholder OAuth token: Mneme's own verdict passes it (too little entropy to be a
        // token), Claude Code refuses it from 2.1.234, whose table has the rule; 2.1.232's has not.
        let content = format!("oauth: sk-ant-oat01-{}\n", "x".repeat(30));
        let team = PathBuf::from(format!("{MEM}/team/auth.md"));
        let policy = Policy::AutoMem { memory_dir: PathBuf::from(MEM) };
        let scanning = |secret_scanner| Gate::new(&policy, &Profile { secret_scanner, ..mneme_core::versions::newest() });
        let refusal = scanning(mneme_secrets::SecretScanner::V2_1_234).team_secret_refusal(&team, &content);
        assert!(refusal.is_some_and(|r| r.contains("Anthropic OAuth Token")));
        assert_eq!(scanning(mneme_secrets::SecretScanner::V2_1_232).team_secret_refusal(&team, &content), None);
    }

    #[test]
    fn team_writes_answer_to_the_releases_readings_from_2_1_284() {
        // A placeholder Mneme's own verdict passes (gitleaks allows AWS's documented example key),
        // split by a control character: from 2.1.284 Claude Code's check also scans the text
        // without it and refuses the key; 2.1.283 scans the text as written and lets it through.
        let policy = Policy::AutoMem { memory_dir: PathBuf::from(MEM) };
        let team = PathBuf::from(format!("{MEM}/team/aws.md"));
        let [before, after] = ["2.1.283", "2.1.284"].map(|v| Gate::new(&policy, &mneme_core::versions::behaviours(v.parse().unwrap())));
        for c in ['\u{1}', '\u{1B}', '\u{7F}', '\u{85}', '\u{200B}', '\u{E000}', '\u{200D}', '\u{FE0F}'] {
            let content = format!("aws_access_key: AKIAIOSF{c}{}\n", "ODNN7EXAMPLE");
            assert_eq!(before.team_secret_refusal(&team, &content), None, "{c:?}");
            let refusal = after.team_secret_refusal(&team, &content);
            assert!(refusal.as_deref().is_some_and(|r| r.contains("AWS")), "{c:?}: {refusal:?}");
            assert_eq!(after.team_secret_refusal(&PathBuf::from(format!("{MEM}/aws.md")), &content), None, "private memory is not scanned");
        }
        // A tab ends the token for every release.
        let tab = format!("aws_access_key: AKIAIOSF\t{}\n", "ODNN7EXAMPLE");
        assert_eq!(after.team_secret_refusal(&team, &tab), None);
    }

    /// From 2.1.292 the user's deny and ask rules refuse a memory agent's calls that its own
    /// guard allows (row 92); 2.1.291 does not consult them.
    #[test]
    fn the_users_deny_and_ask_rules_refuse_calls_from_2_1_292() {
        use mneme_store::settings::{SettingSource, Settings, SettingsFile};
        let settings = Settings::from_files(vec![
            SettingsFile::from_value(
                SettingSource::User,
                "/home/u/.claude/settings.json",
                json!({"permissions": {"deny": ["Read(~/.ssh/**)", "Bash(wc:*)"], "allow": ["Bash"]}}),
            ),
            SettingsFile::from_value(
                SettingSource::Project,
                "/repo/.claude/settings.json",
                // `/x` in project settings starts at the working folder, here `/`.
                json!({"permissions": {"ask": [format!("Edit({MEM}/team/**)"), "Grep"]}}),
            ),
        ]);
        let rules = PermissionRules::from_settings(&settings, Path::new("/home/u"), Path::new("/home/u/.claude"), Path::new("/"));
        let policy = Policy::AutoMem { memory_dir: PathBuf::from(MEM) };
        let [before, after] = ["2.1.291", "2.1.292"].map(|v| Gate::new(&policy, &mneme_core::versions::behaviours(v.parse().unwrap())).with_rules(&rules));
        let calls = [
            ("Read", json!({"file_path": "/home/u/.ssh/id_ed25519"}), "deny", "Read(~/.ssh/**)", "user"),
            ("Bash", json!({"command": format!("wc -l {MEM}/a.md")}), "deny", "Bash(wc:*)", "user"),
            ("Grep", json!({"pattern": "x", "path": MEM}), "ask", "Grep", "project"),
        ];
        for (tool, input, behavior, rule, source) in calls {
            assert_eq!(before.decide(tool, &input), Decision::Allow, "2.1.291 {tool}");
            assert_eq!(
                after.decide(tool, &input),
                Decision::Deny(crate::messages::permission_rule_refused(tool, behavior, rule, source)),
                "2.1.292 {tool}"
            );
        }
        let team_rule = rules.rules().iter().find(|r| r.tool == "Edit").unwrap().text.clone();
        let team = json!({"file_path": format!("{MEM}/team/a.md"), "content": ""});
        assert_eq!(before.decide("Write", &team), Decision::Allow);
        assert_eq!(after.decide("Write", &team), Decision::Deny(crate::messages::permission_rule_refused("Write", "ask", &team_rule, "project")));
        // What no rule covers is still the guard's to decide; an allow rule widens nothing.
        assert_eq!(after.decide("Write", &json!({"file_path": format!("{MEM}/a.md"), "content": ""})), Decision::Allow);
        assert_eq!(after.decide("Read", &json!({"file_path": "/etc/hosts"})), Decision::Allow);
        assert_eq!(after.decide("Bash", &json!({"command": "touch x"})), Decision::Deny(bash_denial(&format!("{MEM}/"))));
    }

    #[test]
    fn session_memory_policy() {
        let path = PathBuf::from("/h/.claude/projects/x/s1/session-memory/summary.md");
        let g = Gate::new(&Policy::SessionMemory { path: path.clone() }, &mneme_core::versions::newest());
        let deny = Decision::Deny(session_memory_denial(&path));
        assert_eq!(g.decide("Edit", &json!({"file_path": path})), Decision::Allow);
        assert_eq!(g.decide("Write", &json!({"file_path": path})), deny);
        assert_eq!(g.decide("Read", &json!({"file_path": path})), deny);
        assert_eq!(g.decide("Edit", &json!({"file_path": "/h/other.md"})), deny);
    }

    fn release(v: &str) -> Profile {
        mneme_core::versions::behaviours(v.parse().unwrap())
    }

    /// Row 96: the automount maps, walked and folded as Claude Code does, release by release.
    #[test]
    fn automount_paths_by_release() {
        let [before, hosts, servers, root] = ["2.1.190", "2.1.191", "2.1.251", "2.1.257"].map(release);
        for p in ["/net/host", "/net/host/share/a.md", "/NET/Host/a.md", "/net\u{200c}/host", "/n\u{feff}et/h", "//net/host", "/./net/h", "/x/../net/h"] {
            assert!(!is_automount(p, &before) && is_automount(p, &hosts) && is_automount(p, &root), "{p}");
        }
        for p in ["/Network/Servers/host/a.md", "/network/SERVERS/h"] {
            assert!(!is_automount(p, &hosts) && is_automount(p, &servers), "{p}");
        }
        for p in ["/net", "/net/", "/Net/."] {
            assert!(!is_automount(p, &servers) && is_automount(p, &root), "{p}");
        }
        // A host named and then left (`/net/h/..`) was under the map at one step.
        assert!(is_automount("/net/h/../..", &hosts));
        // Only the zero-width and bidi characters Claude Code folds away (U+200C–U+200F,
        // U+202A–U+202E, U+206A–U+206F, U+FEFF); a zero-width space (U+200B) stays.
        for p in ["/net\u{200b}/host", "/net/../repo/a.md", "/network/a", "/Network/Servers", "/home/net/h", "net/host", "/netx/h"] {
            assert!(!is_automount(p, &root), "{p}");
        }
    }

    /// Grep's and Glob's path, Glob's absolute pattern, a relative path against the working
    /// folder, and a link leading under `/net` are all judged.
    #[test]
    #[cfg(unix)]
    fn automount_reads_by_every_tool_and_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        let policy = Policy::AutoMem { memory_dir: PathBuf::from(MEM) };
        let g = Gate::new(&policy, &release("2.1.337")).with_cwd(&cwd);
        let old = Gate::new(&policy, &release("2.1.190")).with_cwd(&cwd);
        std::os::unix::fs::symlink("/net/host/share", cwd.join("share")).unwrap();
        let refused = |p: &str| Decision::Deny(crate::messages::automount_path(p));
        let calls = [
            ("Grep", json!({"pattern": "x", "path": "/net/host"}), "/net/host"),
            ("Glob", json!({"pattern": "*.md", "path": "/net/host"}), "/net/host"),
            ("Glob", json!({"pattern": "/net/host/*.md"}), "/net/host/*.md"),
            ("Read", json!({"file_path": "share/notes.md"}), "share/notes.md"),
            ("Read", json!({"file_path": "../../../../../../../../net/h/a.md"}), "../../../../../../../../net/h/a.md"),
        ];
        for (tool, input, shown) in calls {
            assert_eq!(g.decide(tool, &input), refused(shown), "{tool} {input}");
            assert_eq!(old.decide(tool, &input), Decision::Allow, "2.1.190 {tool} {input}");
        }
        assert_eq!(g.decide("Glob", &json!({"pattern": "net/*/x"})), Decision::Allow);
    }

    /// Row 97: the read block, from the settings through the gate.
    #[test]
    #[cfg(unix)]
    fn the_read_block_lets_the_agents_read_the_project_and_their_memory_only() {
        use mneme_store::settings::{SettingSource, Settings, SettingsFile};
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (home, cwd, mem, extra) = (root.join("home"), root.join("repo"), root.join("home/.claude/projects/-repo/memory"), root.join("extra"));
        for d in [&cwd, &mem, &extra, &home.join("secret")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let rules_of = |permissions: Value, source: SettingSource| {
            let file = SettingsFile::from_value(source, cwd.join(".claude/settings.json"), json!({ "permissions": permissions }));
            PermissionRules::from_settings(&Settings::from_files(vec![file]), &home, &home.join(".claude"), &cwd)
        };
        let blocking = rules_of(json!({"blockReadsOutsideWorkingDirectories": true, "additionalDirectories": [extra]}), SettingSource::Project);
        let policy = Policy::AutoMem { memory_dir: mem.clone() };
        let gate = |v: &str, rules: &PermissionRules| Gate::new(&policy, &release(v)).with_rules(rules).with_cwd(&cwd);
        let secret = home.join("secret/key.txt").to_string_lossy().into_owned();
        let file = cwd.join(".claude/settings.json").to_string_lossy().into_owned();
        let refused = |p: &str| Decision::Deny(crate::messages::read_outside_blocked(p, "project", &file));
        let read = |p: &str| json!({"file_path": p});
        let (new, old) = (gate("2.1.257", &blocking), gate("2.1.252", &blocking));
        assert_eq!(new.decide("Read", &read(&secret)), refused(&secret));
        assert_eq!(old.decide("Read", &read(&secret)), Decision::Allow);
        assert_eq!(new.decide("Grep", &json!({"pattern": "x", "path": "../home"})), refused("../home"));
        for inside in [mem.join("a.md"), cwd.join("src/a.rs")] {
            assert_eq!(new.decide("Read", &read(&inside.to_string_lossy())), Decision::Allow, "{inside:?}");
        }
        // The project's settings widen nothing: their `additionalDirectories` are dropped.
        let b = extra.join("b.md").to_string_lossy().into_owned();
        assert_eq!(new.decide("Read", &read(&b)), refused(&b));
        // The user's and an untracked local file's count; those of a local file git tracks
        // (the repository's own) do not.
        for (source, tracked, allowed) in [(SettingSource::User, false, true), (SettingSource::Local, false, true), (SettingSource::Local, true, false)] {
            let rules = rules_of(json!({"blockReadsOutsideWorkingDirectories": true, "additionalDirectories": [extra]}), source).with_local_settings_tracked(tracked);
            let label = source.label();
            let expected = if allowed { Decision::Allow } else { Decision::Deny(crate::messages::read_outside_blocked(&b, label, &file)) };
            assert_eq!(gate("2.1.337", &rules).decide("Read", &read(&b)), expected, "{label} tracked={tracked}");
            let cat = json!({"command": format!("cat {b}")});
            assert_eq!(gate("2.1.337", &rules).decide("Bash", &cat) == Decision::Allow, allowed, "{label} tracked={tracked}: cat");
        }
        assert_eq!(new.decide("Glob", &json!({"pattern": "*.md"})), Decision::Allow);
        // `false`, or no such setting, blocks nothing.
        let off = rules_of(json!({"blockReadsOutsideWorkingDirectories": false}), SettingSource::User);
        assert_eq!(gate("2.1.337", &off).decide("Read", &read(&secret)), Decision::Allow);
        // A link inside the project leading out of it is judged where it leads.
        std::os::unix::fs::symlink(home.join("secret"), cwd.join("s")).unwrap();
        assert_eq!(new.decide("Read", &read("s/key.txt")), refused("s/key.txt"));
        // Shell commands from 2.1.292: a file named outside is refused; the memory folder,
        // relative words and `~` are judged like Read's paths.
        let cat = json!({"command": format!("cat {secret}")});
        assert_eq!(gate("2.1.291", &blocking).decide("Bash", &cat), Decision::Allow);
        assert_eq!(gate("2.1.292", &blocking).decide("Bash", &cat), refused(&secret));
        let tilde = json!({"command": "cat ~/secret/key.txt"});
        assert_eq!(gate("2.1.337", &blocking).decide("Bash", &tilde), refused(&secret));
        for ok in [format!("ls {}", mem.display()), "grep -r tabs .".to_string(), "wc -l src/a.rs".to_string()] {
            assert_eq!(gate("2.1.337", &blocking).decide("Bash", &json!({"command": ok})), Decision::Allow, "{ok}");
        }
        // A command whose files cannot be told is refused by the block from 2.1.292, in the
        // block's words; before, by the guard (not read-only); a pipe is analysed.
        let notes = cwd.join("notes.md").to_string_lossy().into_owned();
        for (command, why) in [
            (format!("echo $(cat {notes})"), "parameter expansion and command substitution cannot be analysed"),
            (format!("cat `echo {notes}`"), "command substitution cannot be analysed"),
            (format!("eval cat {notes}"), "`eval` runs its words as shell code"),
        ] {
            let input = json!({"command": command});
            let unchecked = Decision::Deny(crate::messages::shell_unchecked_under_read_block(why, "project", &file));
            assert_eq!(gate("2.1.292", &blocking).decide("Bash", &input), unchecked, "{command}");
            assert_eq!(gate("2.1.291", &blocking).decide("Bash", &input), Decision::Deny(bash_denial(&auto_mem_prefix(&mem))), "{command}");
            assert_eq!(gate("2.1.337", &off).decide("Bash", &input), Decision::Deny(bash_denial(&auto_mem_prefix(&mem))), "{command}");
        }
        let pipe = |f: &str| json!({"command": format!("cat {f} | wc -l")});
        assert_eq!(gate("2.1.337", &blocking).decide("Bash", &pipe(&notes)), Decision::Allow);
        assert_eq!(gate("2.1.337", &blocking).decide("Bash", &pipe(&secret)), refused(&secret));
        // A memory folder the repository's settings chose is not exempt.
        let repo_chosen = blocking.clone().with_memory_dir_from_repo(true);
        let m = mem.join("a.md").to_string_lossy().into_owned();
        assert_eq!(gate("2.1.337", &repo_chosen).decide("Read", &read(&m)), refused(&m));
    }
}
