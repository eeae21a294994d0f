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
}

impl Gate {
    /// The policy as the release `release` applies it (its secret scanner, its read-only
    /// shell tables).
    pub fn new(policy: &Policy, release: &Profile) -> Gate {
        let prefix = match policy {
            Policy::AutoMem { memory_dir } => auto_mem_prefix(memory_dir),
            Policy::SessionMemory { path } => path.to_string_lossy().into_owned(),
        };
        Gate { policy: policy.clone(), prefix, release: *release, rules: PermissionRules::default() }
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
        match tool {
            "Read" | "Grep" | "Glob" => {
                let key = if tool == "Read" { "file_path" } else { "path" };
                match input.get(key).and_then(Value::as_str) {
                    Some(p) if p.starts_with("//") || p.starts_with("\\\\") => Decision::Deny(crate::messages::network_path(p)),
                    _ => Decision::Allow,
                }
            }
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
        assert_eq!(
            g.decide("Read", &json!({"file_path": "//server/share/x"})),
            Decision::Deny(crate::messages::network_path("//server/share/x"))
        );
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
}
