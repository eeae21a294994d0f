//! gitleaks' whole default rule set, run with gitleaks' own semantics.
//!
//! `gitleaks/gitleaks.toml` is gitleaks' generated default config, vendored unchanged (MIT; the
//! notice is in `THIRD_PARTY_NOTICES.md` and `gitleaks/LICENSE`), from gitleaks commit
//! b58d3f10 (v8.30.0 + 27 commits). It is parsed once, on first use. For one text, as gitleaks'
//! `Detector.DetectString` does:
//!
//! 1. a keyword prefilter: one Aho-Corasick pass over the text, case-insensitively, for every
//!    rule's keywords; a rule runs only when one of its keywords occurs (rules without keywords
//!    always run). Rule regexes are compiled the first time a rule runs, so clean text costs the
//!    keyword pass plus the few keyword-less rules;
//! 2. each match of the rule's regex, trimmed of newlines, is matched again to take the secret:
//!    `secretGroup`, else the first non-empty capture group, else the whole match;
//! 3. the secret is dropped when its Shannon entropy is at or below the rule's `entropy`, when
//!    gitleaks' global allowlist or one of the rule's allowlists allows it (regexes against the
//!    secret, the match or the line; stopwords; `condition = "AND"`; paths).
//!
//! Two deliberate differences. Regexes run with ASCII `\w`, `\d`, `\s` and `\b`, as Go's RE2
//! does, on bytes (`regex::bytes` without Unicode), so no pattern needs translating. And a
//! `gitleaks:allow` comment on the line is **not** honoured: whoever writes the content (a
//! prompt-injected transcript, say) could otherwise wave its own secret through.
//!
//! Rules restricted to file paths (`path = ...`, such as `.tf` passwords or `.p12` files) only
//! fire when the caller names a matching path; team memory is Markdown, so they never do
//! there, exactly as in gitleaks.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};

/// gitleaks' default config, unchanged.
pub const CONFIG_TOML: &str = include_str!("../gitleaks/gitleaks.toml");

#[derive(Deserialize)]
struct ConfigDef {
    allowlist: AllowlistDef,
    rules: Vec<RuleDef>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleDef {
    id: String,
    description: String,
    regex: Option<String>,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    path: Option<String>,
    #[serde(default)]
    allowlists: Vec<AllowlistDef>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AllowlistDef {
    condition: Option<String>,
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
}

/// What an allowlist's regexes are matched against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

struct Allowlist {
    /// `condition = "AND"`: every configured check must allow (gitleaks' default is OR).
    and: bool,
    target: Target,
    regexes: Vec<Regex>,
    paths: Vec<Regex>,
    /// Lowercase; matched as substrings of the lowercased secret.
    stopwords: Option<AhoCorasick>,
}

/// One gitleaks rule.
pub struct Rule {
    /// gitleaks' rule id (`gitlab-pat`).
    pub id: String,
    /// gitleaks' description of what it finds.
    pub description: String,
    source: Option<String>,
    regex: OnceLock<Regex>,
    secret_group: usize,
    entropy: f64,
    keywords: Vec<String>,
    path: Option<Regex>,
    allowlists: Vec<Allowlist>,
}

/// The compiled rule set.
pub struct Gitleaks {
    rules: Vec<Rule>,
    global: Allowlist,
    /// Every distinct lowercase keyword; `keyword_rules[k]` are the rules keyword `k` enables.
    keywords: AhoCorasick,
    keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords, which always run.
    always: Vec<usize>,
}

/// Go RE2 patterns under `regex::bytes` with Unicode off have the same ASCII classes and word
/// boundary, and `(?i)`, `\z`, `(?P<name>…)` mean the same. One spelling differs: RE2 reads a
/// `{` that does not start a repetition (`{{ .Values }}`) as a literal, Rust's parser refuses
/// it, so such a brace is escaped.
pub fn go_to_rust(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                out.push(c);
                if let Some(&n) = chars.get(i + 1) {
                    out.push(n);
                }
                i += 2;
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` first in a class (after an optional `^`) is a literal.
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            '[' if in_class && chars.get(i + 1) == Some(&':') => {
                // `[:alpha:]` inside a class.
                let end = chars[i..].iter().collect::<String>().find(":]").map_or(chars.len(), |e| i + e + 2);
                out.extend(&chars[i..end]);
                i = end;
                continue;
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            '{' if !in_class && !is_repetition(&chars[i..]) => out.push_str("\\{"),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// `{n}`, `{n,}` or `{n,m}` at the start of `rest`.
fn is_repetition(rest: &[char]) -> bool {
    let s: String = rest.iter().take(24).collect();
    let Some(close) = s.find('}') else { return false };
    let inner = &s[1..close];
    let (a, b) = inner.split_once(',').unwrap_or((inner, "0"));
    !a.is_empty() && a.chars().all(|c| c.is_ascii_digit()) && b.chars().all(|c| c.is_ascii_digit())
}

fn compile(pattern: &str) -> Regex {
    RegexBuilder::new(&go_to_rust(pattern))
        .unicode(false)
        .size_limit(64 << 20)
        .dfa_size_limit(16 << 20)
        .build()
        .unwrap_or_else(|e| panic!("gitleaks pattern {pattern:?} compiles: {e}"))
}

fn allowlist(def: AllowlistDef) -> Allowlist {
    let stopwords: Vec<String> = def.stopwords.iter().map(|w| w.to_lowercase()).collect();
    Allowlist {
        and: def.condition.as_deref().is_some_and(|c| c.eq_ignore_ascii_case("AND")),
        target: match def.regex_target.as_deref() {
            Some("match") => Target::Match,
            Some("line") => Target::Line,
            _ => Target::Secret,
        },
        regexes: def.regexes.iter().map(|r| compile(r)).collect(),
        paths: def.paths.iter().map(|r| compile(r)).collect(),
        stopwords: (!stopwords.is_empty()).then(|| AhoCorasick::new(&stopwords).expect("stopwords build")),
    }
}

impl Allowlist {
    fn path_allowed(&self, path: Option<&str>) -> bool {
        path.is_some_and(|p| self.paths.iter().any(|r| r.is_match(p.as_bytes())))
    }

    /// gitleaks' `checkCommitOrPathAllowed` for one allowlist (there are no commits here).
    fn allows_file(&self, path: Option<&str>) -> bool {
        if path.is_none() {
            return false;
        }
        if self.and {
            !self.paths.is_empty() && self.regexes.is_empty() && self.stopwords.is_none() && self.path_allowed(path)
        } else {
            self.path_allowed(path)
        }
    }

    /// gitleaks' `checkFindingAllowed` for one allowlist. `line_matches` says whether one of
    /// its regexes matches the finding's line; it is asked only when the line is the target, so
    /// the caller can answer once per line (see [`Rule::fires`]).
    fn allows_finding(&self, secret: &[u8], whole: &[u8], line_matches: impl FnOnce() -> bool, path: Option<&str>) -> bool {
        let regex_allowed = match self.target {
            Target::Secret => self.regex_matches(secret),
            Target::Match => self.regex_matches(whole),
            Target::Line => line_matches(),
        };
        let stopword = !secret.is_empty()
            && self.stopwords.as_ref().is_some_and(|ac| ac.is_match(String::from_utf8_lossy(secret).to_lowercase().as_str()));
        if self.and {
            let mut checks = Vec::new();
            if !self.paths.is_empty() {
                checks.push(self.path_allowed(path));
            }
            if !self.regexes.is_empty() {
                checks.push(regex_allowed);
            }
            if self.stopwords.is_some() {
                checks.push(stopword);
            }
            checks.iter().all(|&c| c)
        } else {
            regex_allowed || stopword
        }
    }

    /// Whether one of its regexes matches `target` (never an empty one).
    fn regex_matches(&self, target: &[u8]) -> bool {
        !target.is_empty() && self.regexes.iter().any(|r| r.is_match(target))
    }
}

/// gitleaks' `shannonEntropy`: over characters, divided by the length in bytes.
fn entropy(secret: &[u8]) -> f64 {
    crate::rules::shannon_entropy(&String::from_utf8_lossy(secret))
}

impl Rule {
    /// gitleaks' `entropy` floor for the secret (0 when the rule has none).
    pub fn entropy(&self) -> f64 {
        self.entropy
    }

    fn regex(&self) -> Option<&Regex> {
        let source = self.source.as_deref()?;
        Some(self.regex.get_or_init(|| compile(source)))
    }

    /// Whether this rule finds a secret in `text` that no allowlist or entropy floor drops.
    fn fires(&self, text: &[u8], path: Option<&str>, global: &Allowlist) -> bool {
        if self.allowlists.iter().any(|a| a.allows_file(path)) {
            return false;
        }
        if let Some(p) = &self.path {
            if !path.is_some_and(|f| p.is_match(f.as_bytes())) {
                return false;
            }
        }
        // A rule with a path and no regex flags the file itself (`.p12` files).
        let Some(re) = self.regex() else { return self.path.is_some() };
        // A finding's line is found, and the allowlists that look at lines are asked, once per
        // line: one long line can hold thousands of matches the filters drop, and scanning the
        // line again for each of them was quadratic (a 444 KB line of `token=xxx… ` took 4 s).
        let mut lines = Lines::new(text);
        // Per line (its span) and allowlist (0 the global one, then the rule's), the answer.
        let mut line_answers: HashMap<(usize, usize, usize), bool> = HashMap::new();
        re.find_iter(text).any(|m| {
            let whole = trim_newlines(m.as_bytes());
            let start = m.start() + (m.as_bytes().len() - trim_start_newlines(m.as_bytes()).len());
            let secret = self.secret_of(re, whole);
            if self.entropy != 0.0 && entropy(secret) <= self.entropy {
                return false;
            }
            let (from, to) = lines.around(start, start + whole.len());
            let mut line_matches = |k: usize, a: &Allowlist| *line_answers.entry((from, to, k)).or_insert_with(|| a.regex_matches(&text[from..to]));
            if global.allows_finding(secret, whole, || line_matches(0, global), path) {
                return false;
            }
            !self.allowlists.iter().enumerate().any(|(k, a)| a.allows_finding(secret, whole, || line_matches(k + 1, a), path))
        })
    }

    /// The secret inside a match: the match is matched again, and `secretGroup` or the first
    /// non-empty group is taken when the regex has groups.
    fn secret_of<'a>(&self, re: &Regex, whole: &'a [u8]) -> &'a [u8] {
        let Some(caps) = re.captures(whole) else { return whole };
        if caps.len() < 2 {
            return whole;
        }
        if self.secret_group > 0 {
            return caps.get(self.secret_group).map_or(&[][..], |m| m.as_bytes());
        }
        caps.iter().skip(1).flatten().map(|m| m.as_bytes()).find(|g| !g.is_empty()).unwrap_or(whole)
    }
}

fn trim_start_newlines(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|&&c| c == b'\n').count();
    &b[n..]
}

fn trim_newlines(b: &[u8]) -> &[u8] {
    let b = trim_start_newlines(b);
    let n = b.iter().rev().take_while(|&&c| c == b'\n').count();
    &b[..b.len() - n]
}

/// Where the lines of a text start and end, found on first use.
struct Lines<'a> {
    text: &'a [u8],
    newlines: Option<Vec<usize>>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a [u8]) -> Lines<'a> {
        Lines { text, newlines: None }
    }

    /// The span of the whole lines `start..end` is in (gitleaks' `finding.Line`): from after
    /// the last newline before `start` to the first newline at or after `end`.
    fn around(&mut self, start: usize, end: usize) -> (usize, usize) {
        let text = self.text;
        let newlines = self.newlines.get_or_insert_with(|| text.iter().enumerate().filter(|(_, &c)| c == b'\n').map(|(i, _)| i).collect());
        let before = newlines.partition_point(|&p| p < start);
        let from = if before == 0 { 0 } else { newlines[before - 1] + 1 };
        let to = newlines.get(newlines.partition_point(|&p| p < end)).copied().unwrap_or(text.len());
        (from, to)
    }
}

impl Gitleaks {
    fn load() -> Gitleaks {
        let def: ConfigDef = toml::from_str(CONFIG_TOML).expect("gitleaks' config parses");
        let mut keyword_list: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        let mut rules = Vec::new();
        for (i, r) in def.rules.into_iter().enumerate() {
            if r.keywords.is_empty() {
                always.push(i);
            }
            for k in &r.keywords {
                let k = k.to_lowercase();
                match keyword_list.iter().position(|x| *x == k) {
                    Some(j) => keyword_rules[j].push(i),
                    None => {
                        keyword_list.push(k);
                        keyword_rules.push(vec![i]);
                    }
                }
            }
            rules.push(Rule {
                id: r.id,
                description: r.description,
                source: r.regex,
                regex: OnceLock::new(),
                secret_group: r.secret_group.unwrap_or(0),
                entropy: r.entropy.unwrap_or(0.0),
                keywords: r.keywords.iter().map(|k| k.to_lowercase()).collect(),
                path: r.path.as_deref().map(compile),
                allowlists: r.allowlists.into_iter().map(allowlist).collect(),
            });
        }
        // Overlapping search needs the standard match kind: every keyword occurrence counts,
        // also one inside another (`xoxb` inside `xoxb-`).
        let keywords = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&keyword_list)
            .expect("keywords build");
        Gitleaks { rules, global: allowlist(def.allowlist), keywords, keyword_rules, always }
    }

    /// Every rule, in the config's order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The indices of the rules whose keywords occur in `text` (plus the keyword-less ones),
    /// ascending.
    fn candidates(&self, text: &[u8]) -> Vec<usize> {
        let mut hit = vec![false; self.rules.len()];
        for &i in &self.always {
            hit[i] = true;
        }
        for m in self.keywords.find_overlapping_iter(text) {
            for &i in &self.keyword_rules[m.pattern().as_usize()] {
                hit[i] = true;
            }
        }
        (0..hit.len()).filter(|&i| hit[i]).collect()
    }

    /// The rules that find a secret in `text`, in the config's order. `path` is the file's
    /// path, for the rules and allowlists that look at it.
    pub fn detect(&self, text: &str, path: Option<&str>) -> Vec<&Rule> {
        // gitleaks' global path allowlist (lock files, vendored code, images…).
        if self.global.allows_file(path) {
            return Vec::new();
        }
        let bytes = text.as_bytes();
        self.candidates(bytes).into_iter().map(|i| &self.rules[i]).filter(|r| r.fires(bytes, path, &self.global)).collect()
    }

    /// Whether the one rule `id` finds a secret in `text` — gitleaks' single-rule detector,
    /// which is how gitleaks validates a rule against its examples.
    pub fn rule_fires(&self, id: &str, text: &str, path: Option<&str>) -> bool {
        let Some(rule) = self.rules.iter().find(|r| r.id == id) else { return false };
        if self.global.allows_file(path) {
            return false;
        }
        let lower = text.to_lowercase();
        let keyword_hit = rule.keywords.is_empty() || rule.keywords.iter().any(|k| lower.contains(k.as_str()));
        keyword_hit && rule.fires(text.as_bytes(), path, &self.global)
    }
}

static GITLEAKS: LazyLock<Gitleaks> = LazyLock::new(Gitleaks::load);

/// The rule set, compiled on first use.
pub fn gitleaks() -> &'static Gitleaks {
    &GITLEAKS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_config_loads_and_every_regex_compiles() {
        let g = gitleaks();
        assert!(g.rules().len() >= 200, "{} rules", g.rules().len());
        for r in g.rules() {
            let _ = r.regex();
        }
    }

    #[test]
    fn lines_around_a_match_are_the_whole_lines_it_spans() {
        // The plain definition: back to the last newline before the start, on to the first at
        // or after the end.
        fn naive(text: &[u8], start: usize, end: usize) -> (usize, usize) {
            let from = text[..start].iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
            let to = text[end..].iter().position(|&c| c == b'\n').map_or(text.len(), |i| end + i);
            (from, to)
        }
        let mut seed = 17u64;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..2000 {
            let len = next(24);
            let text: Vec<u8> = (0..len).map(|_| if next(3) == 0 { b'\n' } else { b'a' }).collect();
            let mut lines = Lines::new(&text);
            for _ in 0..8 {
                let start = next(len + 1);
                let end = start + next(len + 1 - start);
                assert_eq!(lines.around(start, end), naive(&text, start, end), "{:?} {start}..{end}", String::from_utf8_lossy(&text));
            }
        }
    }

    #[test]
    fn a_long_line_of_dropped_matches_still_finds_the_real_one() {
        let g = gitleaks();
        let dropped = format!("token={} ", "x".repeat(30)).repeat(5000);
        assert!(g.detect(&dropped, None).is_empty());
        let token = format!("glpat-{}", "nUwYcfi1NQBYsmPBK6K7");
        let ids: Vec<&str> = g.detect(&format!("{dropped}{token}"), None).iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["gitlab-pat"]);
    }

    #[test]
    fn go_literal_braces_are_escaped() {
        assert_eq!(go_to_rust(r"\$?{{[^}]+}}"), r"\$?\{\{[^}]+}}");
        assert_eq!(go_to_rust(r"a{2,}[{]b{1,3}"), r"a{2,}[{]b{1,3}");
        assert_eq!(go_to_rust(r"[]{]x"), r"[\]{]x");
    }

    #[test]
    fn entropy_and_allowlists_apply() {
        let g = gitleaks();
        let token = format!("glpat-{}", "nUwYcfi1NQBYsmPBK6K7");
        assert_eq!(g.detect(&token, None).iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["gitlab-pat"]);
        // Low entropy: a placeholder.
        assert!(g.detect("glpat-xxxxxxxxxxxxxxxxxxxx", None).is_empty());
        // gitleaks' global allowlist: template variables are not secrets.
        assert!(g.detect("api_key = \"${API_KEY}\"", None).is_empty());
    }

    #[test]
    fn globally_allowed_files_are_skipped() {
        let token = format!("glpat-{}", "nUwYcfi1NQBYsmPBK6K7");
        assert!(gitleaks().detect(&token, Some("web/package-lock.json")).is_empty());
        assert!(!gitleaks().detect(&token, Some("notes/deploy.md")).is_empty());
    }

    #[test]
    fn gitleaks_allow_comments_are_not_honoured() {
        let token = format!("glpat-{}", "nUwYcfi1NQBYsmPBK6K7");
        assert!(!gitleaks().detect(&format!("{token} # gitleaks:allow"), None).is_empty());
    }

    #[test]
    fn path_rules_need_a_matching_path() {
        let g = gitleaks();
        let text = "administrator_login_password = \"thisIsDog11\"";
        assert!(g.rule_fires("hashicorp-tf-password", text, Some("main.tf")));
        assert!(!g.rule_fires("hashicorp-tf-password", text, Some("notes.md")));
        assert!(!g.rule_fires("hashicorp-tf-password", text, None));
    }
}
