//! The secret scanner that guards team memory (pure: no IO).
//!
//! Claude Code 2.1.197 refuses a Write or Edit into the team folder when the content matches
//! one of its curated gitleaks rules, skips such files when it pushes, and redacts secrets in
//! text it logs. This crate holds that rule table verbatim (the JavaScript sources, in Claude
//! Code's order, rewritten for Rust by [`jsregex`] so they match exactly as in JavaScript) and
//! answers three questions:
//!
//! - [`scan_claude_code`]: what Claude Code's `scanForSecrets` returns, exactly (checked
//!   against Claude Code's own code on 500 inputs by `tests/claude_code_oracle.rs`).
//! - [`scan`]: Mneme's verdict, used on every write into team memory. It starts from Claude
//!   Code's matches and drops those gitleaks itself would drop: each rule's entropy floor and
//!   allowlist (`AKIAIOSFODNN7EXAMPLE`, `ghp_xxxx…`, the Firebase SDK's published keys),
//!   which Claude Code's port left out and without which it flags half of gitleaks' own
//!   false-positive examples. It adds one rule, passwords in database connection strings
//!   ([`connection`]). Figures on gitleaks' examples are in `docs/team-memory.md`.
//! - [`redact`]: Claude Code's `redactSecrets`, exactly: every rule, including the
//!   low-confidence ones, replaced by `[REDACTED]` with quotes kept.
//!
//! A finding names the rule and its label (`GitHub PAT`), never the secret.
//!
//! Scanning is one pass of a `RegexSet` over the text; only rules that hit are run again to
//! confirm them, so clean text (the common case) costs a single linear scan.

pub mod connection;
pub mod jsregex;
pub mod rules;

use regex::{Regex, RegexSet, RegexSetBuilder};
use rules::{Confidence, CLAUDE_CODE_RULES};
use serde::Serialize;
use std::sync::LazyLock;

/// One rule that fired. The matched text is deliberately not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The rule id (`github-pat`).
    pub rule_id: &'static str,
    /// Its label as Claude Code shows it (`GitHub PAT`).
    pub label: String,
}

/// Content refused for team memory, with Claude Code's exact message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Content contains potential secrets ({}) and cannot be written to team memory. Team memory is shared with all repository collaborators. Remove the sensitive content and try again.",
    labels(.findings)
)]
pub struct TeamWriteRefused {
    /// What was found, in rule order (at least one).
    pub findings: Vec<Finding>,
}

fn labels(findings: &[Finding]) -> String {
    findings.iter().map(|f| f.label.as_str()).collect::<Vec<_>>().join(", ")
}

/// Refuses content for team memory when [`scan`] finds anything.
pub fn check_team_content(content: &str) -> Result<(), TeamWriteRefused> {
    let findings = scan(content);
    if findings.is_empty() {
        Ok(())
    } else {
        Err(TeamWriteRefused { findings })
    }
}

/// Rules in gitleaks' example set that Mneme deliberately does not refuse content for, and
/// why. None of them is in Claude Code's curated table either; some are redacted by its
/// low-confidence rules.
pub const OMITTED_RULES: &[(&str, &str)] = &[
    ("aws-amazon-bedrock-api-key-long-lived", "not in Claude Code's table; the ABSK prefix is short base64 that also begins ordinary base64 data"),
    ("aws-amazon-bedrock-api-key-short-lived", "not in Claude Code's table; matches on the word bedrock-api-key plus any base64, which documentation is full of"),
    ("curl-auth-header", "not in Claude Code's table; a context heuristic over curl command lines (Claude Code redacts Bearer/Basic values instead)"),
    ("curl-auth-user", "not in Claude Code's table; -u user:password in example commands is mostly placeholders (23 of 31 examples are false positives)"),
    ("discord-client-id", "a client id is public by design"),
    ("discord-client-secret", "not in Claude Code's table; keyword heuristic (the word discord near 32 characters)"),
    ("generic-api-key", "keyword-plus-entropy heuristic; Claude Code keeps it out of refusals (its sensitive-assign rule only redacts); 36 of 44 examples are false positives"),
    ("gitlab-pat-routable", "not in Claude Code's table; a routable glpat- token still starts with glpat- and 20 token characters, which gitlab-pat refuses"),
    ("gitlab-ptt", "not in Claude Code's table (pipeline trigger tokens)"),
    ("gitlab-rrt", "not in Claude Code's table (runner registration tokens, deprecated by GitLab)"),
    ("gitlab-runner-authentication-token-routable", "not in Claude Code's table"),
    ("heroku-api-key", "not in Claude Code's table; any UUID near the word heroku, and UUIDs are everywhere"),
    ("heroku-api-key-v2", "not in Claude Code's table"),
    ("jwt", "JWTs are mostly short-lived and often public (ID tokens, examples); Claude Code only redacts them (loose-jwt)"),
    ("jwt-base64", "not in Claude Code's table; base64 of a JWT header"),
    ("mailchimp-api-key", "not in Claude Code's table; keyword heuristic"),
    ("slack-config-access-token", "not in Claude Code's table"),
    ("slack-config-refresh-token", "not in Claude Code's table"),
    ("slack-legacy-bot-token", "not in Claude Code's table; legacy Slack token formats are retired"),
    ("slack-legacy-token", "not in Claude Code's table; legacy Slack token formats are retired"),
    ("slack-legacy-workspace-token", "not in Claude Code's table; legacy Slack token formats are retired"),
    ("slack-webhook-url", "not in Claude Code's table; a webhook only posts messages"),
    ("square-access-token", "not in Claude Code's table"),
    ("vault-batch-token", "not in Claude Code's table"),
    ("vault-service-token", "not in Claude Code's table; its legacy s. form is 24 letters after s., which prose matches"),
];

/// The ids [`scan`] refuses content for, in order: Claude Code's high-confidence rules, then
/// [`connection::RULE_ID`].
pub fn rule_ids() -> impl Iterator<Item = &'static str> {
    CLAUDE_CODE_RULES
        .iter()
        .filter(|r| r.confidence == Confidence::High)
        .map(|r| r.id)
        .chain(std::iter::once(connection::RULE_ID))
}

/// Claude Code's label for a rule id: kebab-case to Title Case, with its special spellings
/// (`github-pat` → `GitHub PAT`, `hashicorp-tf-api-token` → `HashiCorp TF API Token`).
pub fn rule_label(rule_id: &str) -> String {
    rule_id
        .split('-')
        .map(|word| match word {
            "aws" => "AWS".to_string(),
            "gcp" => "GCP".to_string(),
            "api" => "API".to_string(),
            "pat" => "PAT".to_string(),
            "ad" => "AD".to_string(),
            "tf" => "TF".to_string(),
            "oauth" => "OAuth".to_string(),
            "npm" => "NPM".to_string(),
            "pypi" => "PyPI".to_string(),
            "jwt" => "JWT".to_string(),
            "github" => "GitHub".to_string(),
            "gitlab" => "GitLab".to_string(),
            "openai" => "OpenAI".to_string(),
            "digitalocean" => "DigitalOcean".to_string(),
            "huggingface" => "HuggingFace".to_string(),
            "hashicorp" => "HashiCorp".to_string(),
            "sendgrid" => "SendGrid".to_string(),
            // JavaScript's `charAt(0).toUpperCase() + slice(1)`.
            _ => {
                let mut chars = word.chars();
                match chars.next() {
                    Some(first) => first.to_uppercase().chain(chars).collect(),
                    None => String::new(),
                }
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A compiled rule: the plain `regex` engine where the JavaScript needs no lookaround, else
/// `fancy-regex`.
enum Engine {
    Plain(Regex),
    Fancy(fancy_regex::Regex),
}

struct Compiled {
    rule: &'static rules::CcRule,
    engine: Engine,
    confirm: rules::Confirm,
    allow: Vec<Regex>,
}

impl Compiled {
    fn new(rule: &'static rules::CcRule) -> Compiled {
        let engine = if jsregex::needs_fancy(rule.source) {
            let p = jsregex::translate(rule.source, rule.flags, jsregex::Target::Fancy).expect("rule translates");
            Engine::Fancy(fancy_regex::Regex::new(&p).expect("rule compiles for fancy-regex"))
        } else {
            let p = jsregex::translate(rule.source, rule.flags, jsregex::Target::Prefilter).expect("rule translates");
            Engine::Plain(Regex::new(&p).expect("rule compiles"))
        };
        let confirm = rules::confirm_for(rule.id);
        let allow = confirm.allow.iter().map(|a| Regex::new(a).expect("allowlist compiles")).collect();
        Compiled { rule, engine, confirm, allow }
    }

    /// JavaScript's `re.test(text)`. A `fancy-regex` backtracking-limit error counts as a
    /// match: refusing is the safe side for a secret scanner.
    fn is_match(&self, text: &str) -> bool {
        match &self.engine {
            Engine::Plain(r) => r.is_match(text),
            Engine::Fancy(r) => r.is_match(text).unwrap_or(true),
        }
    }

    /// Calls `f` with (whole match, first non-empty group) for each match, until it says stop.
    fn any_match(&self, text: &str, mut f: impl FnMut(&str) -> bool) -> bool {
        let secret_of = |groups: Vec<Option<&str>>| -> Option<String> {
            let whole = groups.first().copied().flatten()?;
            Some(groups.iter().skip(1).flatten().find(|g| !g.is_empty()).copied().unwrap_or(whole).to_string())
        };
        match &self.engine {
            Engine::Plain(r) => r.captures_iter(text).any(|c| {
                let groups = c.iter().map(|m| m.map(|m| m.as_str())).collect();
                secret_of(groups).is_some_and(|s| f(&s))
            }),
            Engine::Fancy(r) => r.captures_iter(text).any(|c| match c {
                Ok(c) => {
                    let groups = c.iter().map(|m| m.map(|m| m.as_str())).collect();
                    secret_of(groups).is_some_and(|s| f(&s))
                }
                Err(_) => true,
            }),
        }
    }

    /// Whether gitleaks' filters for this rule keep the secret.
    fn confirmed(&self, secret: &str) -> bool {
        if self.confirm.entropy.is_some_and(|floor| rules::shannon_entropy(secret) <= floor) {
            return false;
        }
        if self.allow.iter().any(|a| a.is_match(secret)) || GLOBAL_ALLOW.is_match(secret) {
            return false;
        }
        let lower = secret.to_lowercase();
        !rules::GLOBAL_STOPWORDS.iter().any(|w| lower.contains(w))
    }

    /// JavaScript's `text.replace(re_g, callback)` with `redactSecrets`' callback.
    fn redact(&self, text: &str) -> String {
        let groups = match &self.engine {
            Engine::Plain(r) => r.captures_len(),
            Engine::Fancy(r) => r.captures_len(),
        };
        let replace = |whole: &str, first: Option<&str>| -> String {
            // Without a capture group JavaScript passes the offset (a number) as the second
            // argument; with an unmatched one, `undefined`. Either way the whole match goes.
            let r = match first {
                Some(r) if groups > 1 => r,
                _ => return "[REDACTED]".to_string(),
            };
            let mut ends = r.chars();
            let quote = match (ends.next(), ends.next_back()) {
                (Some(a), Some(b)) if (a == '"' || a == '\'') && a == b => a.to_string(),
                _ => String::new(),
            };
            let s = whole.rfind(r).unwrap_or(whole.len());
            format!("{}{quote}[REDACTED]{quote}{}", &whole[..s], &whole[s + r.len()..])
        };
        match &self.engine {
            Engine::Plain(re) => {
                re.replace_all(text, |c: &regex::Captures<'_>| replace(&c[0], c.get(1).map(|m| m.as_str()))).into_owned()
            }
            Engine::Fancy(re) => re
                .replace_all(text, |c: &fancy_regex::Captures<'_, str>| {
                    replace(c.get(0).map_or("", |m| m.as_str()), c.get(1).map(|m| m.as_str()))
                })
                .into_owned(),
        }
    }
}

struct Scanner {
    /// Every rule of Claude Code's table, in order.
    all: Vec<Compiled>,
    /// Indices into `all` of the high-confidence rules, in order.
    high: Vec<usize>,
    /// One prefilter per high rule (same order), then the connection-string rule.
    set: RegexSet,
}

static GLOBAL_ALLOW: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(rules::GLOBAL_ALLOW).expect("gitleaks' global allowlist compiles"));

static SCANNER: LazyLock<Scanner> = LazyLock::new(|| {
    let all: Vec<Compiled> = CLAUDE_CODE_RULES.iter().map(Compiled::new).collect();
    let high: Vec<usize> = (0..all.len()).filter(|&i| all[i].rule.confidence == Confidence::High).collect();
    let mut patterns: Vec<String> = high
        .iter()
        .map(|&i| {
            let r = all[i].rule;
            jsregex::translate(r.source, r.flags, jsregex::Target::Prefilter).expect("rule translates")
        })
        .collect();
    patterns.push(connection::PATTERN.to_string());
    // The counted repetitions ({50,1000}, {70,400}, …) make a large automaton; allow it.
    let set = RegexSetBuilder::new(&patterns).size_limit(64 << 20).build().expect("prefilter set compiles");
    Scanner { all, high, set }
});

fn finding(rule_id: &'static str) -> Finding {
    Finding { rule_id, label: rule_label(rule_id) }
}

/// Mneme's verdict: one finding per rule that fired, in rule order (see the crate docs).
pub fn scan(content: &str) -> Vec<Finding> {
    let s = &*SCANNER;
    let hits = s.set.matches(content);
    if !hits.matched_any() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, &i) in s.high.iter().enumerate() {
        let rule = &s.all[i];
        if hits.matched(k) && rule.any_match(content, |secret| rule.confirmed(secret)) {
            out.push(finding(rule.rule.id));
        }
    }
    if hits.matched(s.high.len()) && connection::has_password(content) {
        out.push(finding(connection::RULE_ID));
    }
    out
}

/// Exactly Claude Code 2.1.197's `scanForSecrets(content)`: one finding per high-confidence
/// rule whose regex matches, in table order, with no further filtering.
pub fn scan_claude_code(content: &str) -> Vec<Finding> {
    let s = &*SCANNER;
    let hits = s.set.matches(content);
    s.high
        .iter()
        .enumerate()
        .filter(|&(k, &i)| hits.matched(k) && (matches!(s.all[i].engine, Engine::Plain(_)) || s.all[i].is_match(content)))
        .map(|(_, &i)| finding(s.all[i].rule.id))
        .collect()
}

/// Exactly Claude Code 2.1.197's `redactSecrets(content)`: each rule of the table in turn
/// (low-confidence ones included) replaces what it matches, or its first capture group, with
/// `[REDACTED]`, keeping surrounding quotes.
pub fn redact(content: &str) -> String {
    SCANNER.all.iter().fold(content.to_string(), |text, rule| rule.redact(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_claude_codes_spelling() {
        assert_eq!(rule_label("github-pat"), "GitHub PAT");
        assert_eq!(rule_label("hashicorp-tf-api-token"), "HashiCorp TF API Token");
        assert_eq!(rule_label("azure-ad-client-secret"), "Azure AD Client Secret");
        assert_eq!(rule_label("pypi-upload-token"), "PyPI Upload Token");
        assert_eq!(rule_label("connection-string-password"), "Connection String Password");
        assert_eq!(rule_label("loose-jwt"), "Loose JWT");
    }

    #[test]
    fn refusal_message_is_claude_codes() {
        let aws = format!("AKIA{}", "QYLPMN5HHHFPZAM2");
        let ghp = format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd");
        let err = check_team_content(&format!("{ghp}\n{aws}")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Content contains potential secrets (AWS Access Token, GitHub PAT) and cannot be written to team memory. \
             Team memory is shared with all repository collaborators. Remove the sensitive content and try again."
        );
        assert!(check_team_content("Deploys go through the staging cluster first.").is_ok());
    }

    #[test]
    fn placeholders_claude_code_flags_are_not_findings() {
        for text in ["aws_access_key: AKIAIOSFODNN7EXAMPLE", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"] {
            assert!(!scan_claude_code(text).is_empty(), "{text}");
            assert!(scan(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn findings_never_carry_the_secret() {
        let ghp = format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd");
        let debug = format!("{:?}", scan(&ghp));
        assert!(!debug.contains(&ghp[4..]));
    }

    #[test]
    fn connection_strings_are_findings() {
        assert_eq!(scan("DATABASE_URL=postgres://app:Tr0ub4dor@db/app")[0].rule_id, connection::RULE_ID);
        assert!(scan("DATABASE_URL=postgres://app:${DB_PASSWORD}@db/app").is_empty());
    }
}
