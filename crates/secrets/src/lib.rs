//! The secret scanner that guards team memory (pure: no IO).
//!
//! Claude Code refuses a Write or Edit into the team folder when the content matches one of its
//! curated token rules, skips such files when it pushes, and redacts secrets in text it logs.
//! This crate holds those rule tables verbatim (the JavaScript sources, in Claude Code's order,
//! rewritten for Rust by [`jsregex`] so they match exactly as in JavaScript) and answers four
//! questions:
//!
//! - [`scan_claude_code`]: what a release's `scanForSecrets` returns, exactly, for each of the
//!   tables releases have run ([`claude_code`]; checked against each table's releases' own code
//!   on 7,100 inputs by `tests/claude_code_oracle.rs`).
//! - [`scan`]: Mneme's verdict (`mneme secrets scan`, and the core of every team-memory check):
//!   gitleaks' whole default rule set with gitleaks' own semantics ([`gitleaks`]: keyword prefilter, entropy floors,
//!   global and per-rule allowlists), plus the newest Claude Code table's matches confirmed by
//!   the same floors and allowlists (so it refuses all Claude Code refuses but placeholders such
//!   as `AKIAIOSFODNN7EXAMPLE`, `ghp_xxxx…` and the Firebase SDK's published keys), plus
//!   passwords in database connection strings ([`connection`]). Measured per rule on gitleaks'
//!   own examples by `tests/gitleaks_examples.rs`; the figures are in `docs/team-memory.md`.
//! - [`scan_team`]: the stricter verdict on writes into team memory: [`scan`] on the text, on
//!   its Markdown read as plain text ([`markdown_plain`]: `**API key**: …`, table rows,
//!   `ghp\_…` escapes, invisible, control and fullwidth characters, CRLF), which gitleaks' rules
//!   pass by, and on the text as Claude Code's own team-memory check also reads it (control and
//!   invisible characters left out).
//!   [`check_team_content`] refuses what it finds and what a push would hold back
//!   ([`held_back_on_push`]), so nothing is written to team memory that never reaches the team.
//! - [`redact`]: Claude Code 2.1.197's `redactSecrets`, exactly: every rule, including the
//!   low-confidence ones, replaced by `[REDACTED]` with quotes kept. (Later releases rewrote
//!   redaction around URL credentials and tracked spans; it only shapes their logs, and Mneme
//!   logs no secrets, so it is not ported.)
//!
//! A finding names the rule and its label (`GitHub PAT`), never the secret.
//!
//! Claude Code's rules are one pass of a `RegexSet` over the text; only rules that hit are run
//! again to confirm them. gitleaks' rules run only when one of their keywords occurs (one
//! Aho-Corasick pass), so clean text (the common case) costs two linear scans.

pub mod claude_code;
pub mod connection;
pub mod gitleaks;
pub mod jsregex;
pub mod rules;

pub use mneme_core::versions::SecretScanner;
use regex::{Regex, RegexSet};
use rules::CLAUDE_CODE_RULES;
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

/// Content refused for team memory. The refusal is the same as Claude Code's (same content,
/// same rule labels); the wording is Mneme's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Not written to team memory: the content appears to contain secrets ({}), and everyone working on the repository can read team memory. Remove the secret and try again.",
    labels(.findings)
)]
pub struct TeamWriteRefused {
    /// What was found, in rule order (at least one).
    pub findings: Vec<Finding>,
}

fn labels(findings: &[Finding]) -> String {
    findings.iter().map(|f| f.label.as_str()).collect::<Vec<_>>().join(", ")
}

/// Refuses content for team memory when [`scan_team`] finds anything, or when a push would hold
/// it back ([`held_back_on_push`]: a documented example key such as `AKIAIOSFODNN7EXAMPLE` passes
/// gitleaks' filters but not Claude Code's scanner), so nothing is written to team memory that
/// would then silently never reach the team.
pub fn check_team_content(content: &str) -> Result<(), TeamWriteRefused> {
    let findings = merged(scan_team(content), held_back_on_push(content.as_bytes()));
    if findings.is_empty() {
        Ok(())
    } else {
        Err(TeamWriteRefused { findings })
    }
}

/// The verdict that guards writes into team memory: [`scan`] on the text and, when they read
/// differently, on [`markdown_plain`]'s reading of it and on the readings Claude Code's own
/// team-memory check scans ([`claude_code_readings`]). Team memory is Markdown a model wrote,
/// where a key is often spelled `**API key**: …`, `` `API_KEY`: `…` ``, in a table row, with
/// `\_` escapes, across a CRLF line end, or with an invisible, control or fullwidth character
/// inside a token: forms gitleaks' rules pass by. [`scan`] itself keeps gitleaks' results
/// (`mneme secrets scan`); this is the stricter pass on top. A finding names the rule, never
/// where or what the secret is.
pub fn scan_team(content: &str) -> Vec<Finding> {
    let mut findings = scan(content);
    let plain = markdown_plain(content);
    if plain != content {
        findings = merged(findings, scan(&plain));
    }
    // Claude Code's readings change nothing but the characters they leave out, so a token that
    // Markdown's other rules would reshape (an emphasis run inside it) is still seen whole.
    for reading in claude_code_readings(content) {
        if reading != plain {
            findings = merged(findings, scan(&reading));
        }
    }
    findings
}

/// The characters Claude Code's team-memory check reads past (`mneme_core::text::UNSEEN_CHARACTERS`:
/// the same from 2.1.284, where the readings first appear, to 2.1.337). ZWNJ, ZWJ and the
/// variation selectors VS15 and VS16 are not in it: emoji sequences are spelled with them, so
/// only the second reading leaves them out.
static READ_PAST: &LazyLock<Regex> = &mneme_core::text::UNSEEN_CHARACTERS;
static JOINERS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[\u{200C}\u{200D}\u{FE0E}\u{FE0F}]").expect("the joiner class compiles"));

/// The texts besides `content` itself that Claude Code scans before it writes or pushes team
/// memory: `content` without [`READ_PAST`]'s characters, and that also without ZWNJ, ZWJ, VS15
/// and VS16; each once, and only those that differ from `content` (none for ordinary text). A
/// token split by such a character is a token to it.
fn claude_code_readings(content: &str) -> Vec<String> {
    if !READ_PAST.is_match(content) && !JOINERS.is_match(content) {
        return Vec::new();
    }
    let first = READ_PAST.replace_all(content, "");
    let second = JOINERS.replace_all(&first, "");
    let mut readings: Vec<String> = Vec::new();
    for reading in [first.as_ref(), second.as_ref()] {
        if reading != content && !readings.iter().any(|r| r == reading) {
            readings.push(reading.to_string());
        }
    }
    readings
}

/// What a push leaves out of team memory, as the client decides it: [`scan_bytes`] on the file,
/// then the team server's verdict ([`scan_pushed`]) on it read as UTF-8, which also refuses what
/// only looks like a token. Empty when the file would be pushed.
pub fn held_back_on_push(bytes: &[u8]) -> Vec<Finding> {
    merged(scan_bytes(bytes), scan_pushed(&String::from_utf8_lossy(bytes)))
}

/// `a` then what of `b` it lacks, in [`rule_ids`]' order.
fn merged(mut a: Vec<Finding>, b: Vec<Finding>) -> Vec<Finding> {
    if b.is_empty() {
        return a;
    }
    for f in b {
        if !a.contains(&f) {
            a.push(f);
        }
    }
    let order: Vec<&str> = rule_ids().collect();
    a.sort_by_key(|f| order.iter().position(|id| *id == f.rule_id));
    a
}

/// Markdown read as the plain text a reader sees, for [`scan_team`]: CRLF (and lone CR) line
/// ends as LF; invisible characters (Unicode format characters such as U+200B and the soft
/// hyphen, the other default-ignorable ones, private-use and unassigned code points, and control
/// characters but tab and LF) removed; NFKC (fullwidth `＿` is `_`);
/// backslash escapes of ASCII punctuation undone (`ghp\_…`); backticks, and `*`/`_` emphasis
/// delimiters (runs of one or two; a `_` between two letters or digits is kept) removed; a
/// table row's cells joined by `:` (`| API key | … |` reads `API key : …`).
pub fn markdown_plain(content: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    static INVISIBLE: LazyLock<Regex> =
        LazyLock::new(|| {
            Regex::new(r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\p{Cf}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}]")
                .expect("the invisible-character class compiles")
        });
    static ESCAPE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\\([!-/:-@\[-`{-~])").expect("the escape pattern compiles"));
    let text = content.replace("\r\n", "\n").replace('\r', "\n");
    let text: String = INVISIBLE.replace_all(&text, "").nfkc().collect();
    let text = ESCAPE.replace_all(&text, "$1");
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !matches!(c, '`' | '*' | '_') {
            out.push(c);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&d| d == c).count();
        let between_words = i > 0 && chars[i - 1].is_alphanumeric() && chars.get(i + run).is_some_and(|d| d.is_alphanumeric());
        let delimiter = match c {
            '`' => true,
            '*' => run <= 2,
            _ => run <= 2 && !between_words,
        };
        if !delimiter {
            out.extend(std::iter::repeat_n(c, run));
        }
        i += run;
    }
    // Tables: a row's cells joined by `:`, and under a header, each cell after its column's
    // name on a line of its own (`API key : …`).
    let mut plain = String::with_capacity(out.len());
    let (mut previous, mut header): (Option<Vec<&str>>, Option<Vec<&str>>) = (None, None);
    for line in out.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        let Some(cells) = body.trim().strip_prefix('|') else {
            (previous, header) = (None, None);
            plain.push_str(body);
            plain.push_str(end);
            continue;
        };
        let cells = cells.strip_suffix('|').unwrap_or(cells);
        plain.push_str(&cells.replace('|', ":"));
        plain.push_str(end);
        let row: Vec<&str> = cells.split('|').map(str::trim).collect();
        let delimiter = row.iter().all(|c| {
            let c = c.trim_matches(':');
            !c.is_empty() && c.bytes().all(|b| b == b'-')
        });
        if delimiter {
            header = previous.take();
            continue;
        }
        if let Some(names) = &header {
            plain.push('\n');
            for (name, cell) in names.iter().zip(&row) {
                plain.push_str(&format!("{name} : {cell}\n"));
            }
        }
        previous = Some(row);
    }
    plain
}

/// gitleaks rules that never fire on team memory, and why: they are bound to file names, and
/// team memory is Markdown. gitleaks itself skips them for such files too.
pub const OMITTED_RULES: &[(&str, &str)] = &[
    ("freemius-secret-key", "gitleaks applies it to .php files only"),
    ("hashicorp-tf-password", "gitleaks applies it to .tf and .hcl files only"),
    ("kubernetes-secret-yaml", "gitleaks applies it to .yaml and .yml files only"),
    ("nuget-config-password", "gitleaks applies it to nuget.config files only"),
    ("pkcs12-file", "matches a file name (.p12, .pfx), not content"),
];

/// The ids [`scan`] refuses content for, each once: the newest Claude Code's token rules and its
/// private-key check, then gitleaks' rules (less [`OMITTED_RULES`]), then
/// [`connection::RULE_ID`].
pub fn rule_ids() -> impl Iterator<Item = &'static str> {
    let mut seen = std::collections::HashSet::new();
    claude_code::token_rules(newest_table())
        .map(|r| r.id)
        .chain(std::iter::once("private-key"))
        .chain(gitleaks::gitleaks().rules().iter().map(|r| r.id.as_str()))
        .filter(|id| !OMITTED_RULES.iter().any(|(o, _)| o == id))
        .chain(std::iter::once(connection::RULE_ID))
        .filter(move |id| seen.insert(*id))
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
            "ci" => "CI".to_string(),
            "scim" => "SCIM".to_string(),
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
/// `fancy-regex` with the rule's lookaround-free prefilter (see [`claude_code::fancy_captures`]).
enum Engine {
    Plain(Regex),
    Fancy(fancy_regex::Regex, Regex),
}

struct Compiled {
    rule: &'static rules::CcRule,
    engine: Engine,
}

impl Compiled {
    fn new(rule: &'static rules::CcRule) -> Compiled {
        let engine = if jsregex::needs_fancy(rule.source) {
            let p = jsregex::translate(rule.source, rule.flags, jsregex::Target::Fancy).expect("rule translates");
            let pre = jsregex::translate(rule.source, rule.flags, jsregex::Target::Prefilter).expect("rule translates");
            Engine::Fancy(fancy_regex::Regex::new(&p).expect("rule compiles for fancy-regex"), Regex::new(&pre).expect("rule compiles"))
        } else {
            let p = jsregex::translate(rule.source, rule.flags, jsregex::Target::Prefilter).expect("rule translates");
            Engine::Plain(Regex::new(&p).expect("rule compiles"))
        };
        Compiled { rule, engine }
    }

    /// JavaScript's `text.replace(re_g, callback)` with `redactSecrets`' callback.
    fn redact(&self, text: &str) -> String {
        let groups = match &self.engine {
            Engine::Plain(r) => r.captures_len(),
            Engine::Fancy(r, _) => r.captures_len(),
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
        // The private key's `[\s\S-]{64,}?` counts as JavaScript does (`CodeUnits`); the match
        // starts and ends on its ASCII lines, so it maps back.
        let units = if self.rule.id == "private-key" { jsregex::CodeUnits::of(text) } else { None };
        match (&self.engine, units) {
            (Engine::Plain(re), Some(units)) => {
                let mut out = String::with_capacity(text.len());
                let mut last = 0;
                for m in re.find_iter(&units.text) {
                    let (start, end) = (units.original_offset(m.start()), units.original_offset(m.end()));
                    out.push_str(&text[last..start]);
                    out.push_str("[REDACTED]");
                    last = end;
                }
                out.push_str(&text[last..]);
                out
            }
            (Engine::Plain(re), None) => {
                re.replace_all(text, |c: &regex::Captures<'_>| replace(&c[0], c.get(1).map(|m| m.as_str()))).into_owned()
            }
            (Engine::Fancy(re, plain), _) => {
                // `replace_all` would panic where `fancy-regex`'s backtracking limit is hit (a long
                // text); candidates are tried one by one, and one the limit stops is redacted.
                let mut out = String::with_capacity(text.len());
                let mut last = 0;
                for c in claude_code::fancy_captures(plain, re, text) {
                    let (span, replaced) = match &c {
                        Ok(c) => {
                            let whole = c.get(0).map_or(0..0, |m| m.range());
                            (whole.clone(), replace(&text[whole], c.get(1).map(|m| m.as_str())))
                        }
                        Err(span) => (span.clone(), "[REDACTED]".to_string()),
                    };
                    out.push_str(&text[last..span.start]);
                    out.push_str(&replaced);
                    last = span.end;
                }
                out.push_str(&text[last..]);
                out
            }
        }
    }
}

/// 2.1.197's whole table (low-confidence rules too), for [`redact`].
struct Scanner {
    all: Vec<Compiled>,
}

static GLOBAL_ALLOW: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(rules::GLOBAL_ALLOW).expect("gitleaks' global allowlist compiles"));

static SCANNER: LazyLock<Scanner> = LazyLock::new(|| Scanner { all: CLAUDE_CODE_RULES.iter().map(Compiled::new).collect() });

/// The table Mneme's own verdict takes Claude Code's rules from: the newest release's, so that
/// Mneme refuses at least what the Claude Code a teammate updates to refuses.
fn newest_table() -> SecretScanner {
    // Resolving the newest profile folds the whole change list; every scan asks.
    static NEWEST: LazyLock<SecretScanner> = LazyLock::new(|| mneme_core::versions::newest().secret_scanner);
    *NEWEST
}

/// gitleaks' allowlist regexes for each rule id Claude Code's newest table has, compiled once.
static ALLOW: LazyLock<std::collections::HashMap<&'static str, Vec<Regex>>> = LazyLock::new(|| {
    claude_code::token_rules(newest_table())
        .map(|r| (r.id, rules::confirm_for(r.id).allow.iter().map(|a| Regex::new(a).expect("allowlist compiles")).collect()))
        .collect()
});

/// Whether gitleaks' filters for rule `id` keep `secret` (a Claude Code match): its entropy
/// floor, its allowlist, gitleaks' global allowlist and stop words. A private key block has no
/// secret to weigh: it is kept.
fn confirmed(id: &str, secret: &str) -> bool {
    if id == "private-key" {
        return true;
    }
    if rules::confirm_for(id).entropy.is_some_and(|floor| rules::shannon_entropy(secret) <= floor) {
        return false;
    }
    if ALLOW.get(id).is_some_and(|allow| allow.iter().any(|a| a.is_match(secret))) || GLOBAL_ALLOW.is_match(secret) {
        return false;
    }
    let lower = secret.to_lowercase();
    !rules::GLOBAL_STOPWORDS.iter().any(|w| lower.contains(w))
}

fn finding(rule_id: &'static str) -> Finding {
    Finding { rule_id, label: rule_label(rule_id) }
}

/// Mneme's verdict: one finding per rule that fired, each rule once, in [`rule_ids`]' order
/// (see the crate docs): gitleaks' rules, the newest Claude Code's rules held to gitleaks'
/// placeholder filters for the same id (so `ghp_xxxx…` and `AKIAIOSFODNN7EXAMPLE` pass, while a
/// real token of a kind gitleaks spells more narrowly is refused as Claude Code refuses it), and
/// passwords in connection strings.
pub fn scan(content: &str) -> Vec<Finding> {
    let g = gitleaks::gitleaks();
    let mut fired: Vec<&'static str> = g.detect(content, None).into_iter().map(|r| r.id.as_str()).collect();
    fired.extend(claude_code::kept_matches(content, newest_table(), confirmed));
    if connection::has_password(content) {
        fired.push(connection::RULE_ID);
    }
    if fired.is_empty() {
        return Vec::new();
    }
    rule_ids().filter(|id| fired.contains(id)).map(finding).collect()
}

/// [`scan`] for a file's bytes, whatever text encoding they are in. Bytes that are not UTF-8
/// are read as UTF-8 with U+FFFD for what does not decode, and also, when they look like
/// UTF-16 (a byte-order mark, or a NUL in every other byte, as Windows PowerShell's `>`
/// writes), as UTF-16 in both byte orders: a token spelled with a NUL after each letter is
/// still a token to whoever reads the file.
pub fn scan_bytes(bytes: &[u8]) -> Vec<Finding> {
    let text = String::from_utf8_lossy(bytes);
    let mut findings = scan(&text);
    // Valid UTF-8 too: ASCII with a NUL after each letter is valid UTF-8.
    if !looks_like_utf16(bytes) {
        return findings;
    }
    for big_endian in [false, true] {
        for f in scan(&decode_utf16(bytes, big_endian)) {
            if !findings.contains(&f) {
                findings.push(f);
            }
        }
    }
    let order: Vec<&str> = rule_ids().collect();
    findings.sort_by_key(|f| order.iter().position(|id| *id == f.rule_id));
    findings
}

/// What a team server refuses to store: the newest Claude Code release's verdict (its curated,
/// high-confidence token rules, without gitleaks' broader ones), on the text and on the readings
/// its team-memory check also scans ([`claude_code_readings`]: control and invisible characters
/// left out) and, when it looks like UTF-16, on the text decoded. Every client scans before it
/// pushes; this catches a client that does not (a teammate's `curl`) without refusing anything a
/// current Claude Code sends.
pub fn scan_pushed(content: &str) -> Vec<Finding> {
    let mut texts = vec![std::borrow::Cow::Borrowed(content)];
    let bytes = content.as_bytes();
    if looks_like_utf16(bytes) {
        // A byte-order mark read as UTF-8 became replacement characters (three bytes each), so
        // the text may start on either byte.
        for (skip, big_endian) in [(0, false), (0, true), (1, false), (1, true)] {
            texts.push(decode_utf16(&bytes[skip.min(bytes.len())..], big_endian).into());
        }
    }
    let mut findings: Vec<Finding> = Vec::new();
    let mut add = |text: &str| {
        for f in claude_code::scan(text, newest_table()) {
            if !findings.contains(&f) {
                findings.push(f);
            }
        }
    };
    for text in &texts {
        add(text);
        for reading in claude_code_readings(text) {
            add(&reading);
        }
    }
    findings
}

fn looks_like_utf16(bytes: &[u8]) -> bool {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return true;
    }
    // ASCII text in UTF-16 has a NUL in every other byte: at least a third of them, say.
    let nuls = bytes.iter().filter(|b| **b == 0).count();
    bytes.len() >= 4 && nuls * 3 >= bytes.len()
}

fn decode_utf16(bytes: &[u8], big_endian: bool) -> String {
    let units = bytes.chunks_exact(2).map(|p| if big_endian { u16::from_be_bytes([p[0], p[1]]) } else { u16::from_le_bytes([p[0], p[1]]) });
    char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
}

/// Exactly what `scanForSecrets(content)` returns in a Claude Code release running `scanner`
/// (`Profile::secret_scanner`): one finding per rule whose regex matches, in table order, with
/// no further filtering ([`claude_code`]).
pub fn scan_claude_code(content: &str, scanner: SecretScanner) -> Vec<Finding> {
    claude_code::scan(content, scanner)
}

/// What the team-memory check of a Claude Code release from 2.1.284 finds before a Write or Edit
/// (`Profile::secret_scan_readings`): `scanForSecrets` with `scanner` on `content` and on each of
/// its readings without the characters the check reads past ([`claude_code_readings`]), each
/// finding once, in the order found. Older releases scan `content` alone ([`scan_claude_code`]).
pub fn scan_claude_code_readings(content: &str, scanner: SecretScanner) -> Vec<Finding> {
    let mut findings = claude_code::scan(content, scanner);
    for reading in claude_code_readings(content) {
        for f in claude_code::scan(&reading, scanner) {
            if !findings.contains(&f) {
                findings.push(f);
            }
        }
    }
    findings
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
    fn a_token_in_utf16_text_is_found() {
        let line = "deploy token: ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\n";
        let utf8 = scan(line);
        assert!(!utf8.is_empty());
        let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain(line.encode_utf16().flat_map(u16::to_le_bytes)).collect();
        let be: Vec<u8> = [0xFE, 0xFF].into_iter().chain(line.encode_utf16().flat_map(u16::to_be_bytes)).collect();
        let bare_le: Vec<u8> = line.encode_utf16().flat_map(u16::to_le_bytes).collect();
        for bytes in [&le, &be, &bare_le] {
            assert_eq!(scan_bytes(bytes), utf8, "{:?}", &bytes[..8]);
        }
        assert!(scan_bytes("plain notes, no tokens\n".as_bytes()).is_empty());
        let notes: Vec<u8> = "plain notes, no tokens\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert!(scan_bytes(&notes).is_empty());
        assert_eq!(scan_bytes(line.as_bytes()), utf8);
        // What a server is sent: the file read as UTF-8, NULs and all.
        let sent = String::from_utf8_lossy(&le).into_owned();
        assert_eq!(scan_pushed(&sent).iter().map(|f| f.rule_id).collect::<Vec<_>>(), ["github-pat"]);
        assert_eq!(scan_pushed(line).iter().map(|f| f.rule_id).collect::<Vec<_>>(), ["github-pat"]);
        // gitleaks' broad rules are the client's to apply, not the server's.
        assert!(scan_pushed("api_key = \"Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0\"").is_empty());
    }

    #[test]
    fn tokens_later_releases_refuse_are_refused_too() {
        let random = "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0Ae";
        let cases = [
            (format!("export CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-{random}-Qw"), "Anthropic OAuth Token"),
            (format!("refresh: sk-ant-ort01-{random}"), "Anthropic OAuth Token"),
            (format!("SLACK_ROTATING=xoxe.xoxp-1-{random}"), "Slack Rotation Token"),
            (format!("xoxe-1-{random}"), "Slack Rotation Token"),
            (format!("workflow xwfp-{random}"), "Slack Workflow Token"),
        ];
        for (text, label) in &cases {
            let found: Vec<String> = scan(text).into_iter().map(|f| f.label).collect();
            assert!(found.iter().any(|l| l == label), "{text}: {found:?}");
            // Not in 2.1.197's table: its scanner and redaction pass these by.
            assert!(!scan_claude_code(text, SecretScanner::V2_1_196).iter().any(|f| f.label == *label), "{text}");
        }
        // Placeholders and short or low-entropy tails are not secrets.
        for text in ["sk-ant-oat01-xxxxxxxxxxxxxxxxxxxxxxxxxxxx", "sk-ant-oat01-short", "xwfp-aaaaaaaaaaaaaaaaaaaaaaaa", "the xoxe prefix"] {
            assert!(scan(text).is_empty(), "{text}: {:?}", scan(text));
        }
        assert!(rule_ids().any(|id| id == "slack-workflow-token"));
    }

    #[test]
    fn labels_follow_claude_codes_spelling() {
        assert_eq!(rule_label("github-pat"), "GitHub PAT");
        assert_eq!(rule_label("hashicorp-tf-api-token"), "HashiCorp TF API Token");
        assert_eq!(rule_label("azure-ad-client-secret"), "Azure AD Client Secret");
        assert_eq!(rule_label("pypi-upload-token"), "PyPI Upload Token");
        assert_eq!(rule_label("connection-string-password"), "Connection String Password");
        assert_eq!(rule_label("loose-jwt"), "Loose JWT");
        assert_eq!(rule_label("gitlab-scim-oauth-token"), "GitLab SCIM OAuth Token");
        assert_eq!(rule_label("gitlab-ci-build-token"), "GitLab CI Build Token");
    }

    #[test]
    fn refusal_names_every_label_in_rule_order() {
        let aws = format!("AKIA{}", "QYLPMN5HHHFPZAM2");
        let ghp = format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd");
        let err = check_team_content(&format!("{ghp}\n{aws}")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Not written to team memory: the content appears to contain secrets (AWS Access Token, GitHub PAT), \
             and everyone working on the repository can read team memory. Remove the secret and try again."
        );
        assert!(check_team_content("Deploys go through the staging cluster first.").is_ok());
    }

    #[test]
    fn placeholders_claude_code_flags_are_not_findings() {
        for text in ["aws_access_key: AKIAIOSFODNN7EXAMPLE", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"] {
            assert!(!scan_claude_code(text, SecretScanner::V2_1_196).is_empty(), "{text}");
            assert!(scan(text).is_empty(), "{text}");
            // A push would leave such a file out (Claude Code's scanner refuses it), so team
            // memory does not take it either.
            assert!(!held_back_on_push(text.as_bytes()).is_empty(), "{text}");
            assert!(check_team_content(text).is_err(), "{text}");
        }
    }

    /// The team guard's Markdown reading: each spelling is missed by gitleaks' rules (and so by
    /// [`scan`], which keeps gitleaks' results) and refused by [`scan_team`].
    #[test]
    fn markdown_spellings_of_secrets_are_refused_for_team_memory() {
        let key = "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0";
        let ghp = format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd");
        let stripe = format!("sk_live_{}", "4eC39HqLyjWDarjtT1zdp7dc");
        let cases = [
            format!("- **API key**: {key}"),
            format!("**Token:** {key}"),
            format!("*Secret*: {key}"),
            format!("`API_KEY`: `{key}`"),
            format!("| API key | {key} |"),
            format!("| Service | API key | Notes |\n|---|---|---|\n| billing | {key} | prod |"),
            ghp.replace('_', "\\_"),
            stripe.replace('_', "\\_"),
            format!("{}\u{200B}{}", &ghp[..16], &ghp[16..]),
            format!("{}\u{00AD}{}", &ghp[..20], &ghp[20..]),
            format!("{}\u{2060}{}", &stripe[..10], &stripe[10..]),
            stripe.replace('_', "\u{FF3F}"),
            ghp.replace('_', "\u{FF3F}"),
            format!("api_key:\r\n    {key}"),
        ];
        for text in &cases {
            assert!(scan(text).is_empty(), "{text:?}: {:?}", scan(text));
            let found = scan_team(text);
            assert!(!found.is_empty(), "{text:?}");
            let err = check_team_content(text).unwrap_err().to_string();
            for secret in [key, &ghp[4..], &stripe[8..]] {
                assert!(!err.contains(secret) && !format!("{found:?}").contains(secret), "{err}");
            }
        }
        // The LF form is gitleaks' own finding, and stays one.
        assert!(!scan(&format!("api_key:\n    {key}")).is_empty());
    }

    /// Claude Code (2.1.316 to 2.1.337 at least) scans team memory also with the characters it
    /// takes for invisible left out (control characters but tab and line ends, format,
    /// private-use, unassigned and default-ignorable code points; then ZWJ, ZWNJ, VS15 and VS16
    /// too), on a Write or Edit and on a push: a token split by any of them is refused there, so
    /// it is here, and a push holds it back (the team server refuses it).
    #[test]
    fn tokens_split_by_characters_claude_code_drops_are_refused_for_team_memory() {
        let ghp = format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd");
        for c in ['\u{1}', '\u{1B}', '\u{7F}', '\u{85}', '\u{90}', '\u{E000}', '\u{F0000}', '\u{378}', '\u{200D}', '\u{FE0F}'] {
            let (text, whole) = (format!("token: {}{c}{}\n", &ghp[..12], &ghp[12..]), format!("token: {ghp}\n"));
            assert_eq!(scan_team(&text), scan_team(&whole), "{c:?}");
            assert_eq!(scan_pushed(&text), scan_pushed(&whole), "{c:?}");
            assert!(!scan_pushed(&whole).is_empty());
            assert!(!held_back_on_push(text.as_bytes()).is_empty(), "{c:?}");
            assert!(check_team_content(&text).is_err(), "{c:?}");
            // A Markdown escape as well: both readings at once.
            let escaped = text.replace('_', "\\_");
            assert!(!scan_team(&escaped).is_empty(), "{c:?}");
        }
        // What Claude Code's push holds back, a placeholder included, is not written either.
        let aws = "aws_access_key: AKIAIOSF\u{1}ODNN7EXAMPLE";
        assert!(!held_back_on_push(aws.as_bytes()).is_empty());
        assert!(check_team_content(aws).is_err());
        // A tab is text to Claude Code too: the token ends there.
        let tab = format!("{}\t{}", &ghp[..12], &ghp[12..]);
        assert!(scan_team(&tab).is_empty() && scan_pushed(&tab).is_empty(), "{tab:?}");
        assert!(check_team_content("Build notes\u{1B}[1m in bold\u{1B}[0m, \u{E000} icons.\n").is_ok());
    }

    /// A release's own check from 2.1.284 scans its table on the readings too: the placeholder
    /// split by a control character is one key to it, though not to the table on the raw text.
    #[test]
    fn claude_code_readings_scan_finds_split_tokens() {
        let aws = format!("aws_access_key: AKIAIOSF\u{1}{}\n", "ODNN7EXAMPLE");
        assert!(scan_claude_code(&aws, SecretScanner::V2_1_323).is_empty());
        let found = scan_claude_code_readings(&aws, SecretScanner::V2_1_323);
        assert_eq!(found.iter().map(|f| f.rule_id).collect::<Vec<_>>(), ["aws-access-token"]);
        // Found on the text itself, a token is named once however many readings hold it.
        let whole = format!("aws_access_key: AKIAIOSF{}\u{200B}\n", "ODNN7EXAMPLE");
        assert_eq!(scan_claude_code_readings(&whole, SecretScanner::V2_1_323), scan_claude_code(&whole, SecretScanner::V2_1_323));
        assert!(scan_claude_code_readings("Deploys go through staging.\u{1B}[0m\n", SecretScanner::V2_1_323).is_empty());
    }

    #[test]
    fn ordinary_markdown_reads_the_same_to_the_team_guard() {
        for text in [
            "# Deploys\n\n- **Always** deploy from `main`.\n- Run `make test` first; see _docs/deploy.md_.\n",
            "| Setting | Meaning |\n|---|---|\n| `API_KEY` | read from the environment |\n| token | see the vault |\n",
            "The key lives in 1Password under **Billing API key**; never paste it here.\r\n",
            "Use `${DB_PASSWORD}` in `postgres://app:${DB_PASSWORD}@db/app`.\n",
            "Escapes: 2 \\* 3, a\\_b, `__init__.py`, ***, ___\n",
            "ＡＰＩ docs — ﬁle names with zero\u{200B}width joiners.\n",
        ] {
            assert!(scan_team(text).is_empty(), "{text:?}: {:?}", scan_team(text));
            assert!(check_team_content(text).is_ok(), "{text:?}");
        }
    }

    #[test]
    fn markdown_plain_reads_markdown_as_text() {
        assert_eq!(markdown_plain("- **API key**: `v`"), "- API key: v");
        assert_eq!(markdown_plain("| a | b |\r\n|c|d|"), " a : b \nc:d");
        assert_eq!(markdown_plain("ghp\\_x sk\u{FF3F}y z\u{200B}w a\\\\b"), "ghp_x sk_y zw a\\b");
        assert_eq!(markdown_plain("_a_ __b__ snake_case __init__ *** ___"), "a b snake_case init *** ___");
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
