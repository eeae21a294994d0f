//! Claude Code's own secret scanner, release by release: what `scanForSecrets` refuses to write
//! into team memory and leaves out of a push. Each release runs one of a few tables
//! ([`SecretScanner`], chosen in `mneme_core::versions`); `tests/claude_code_oracle.rs` checks
//! every table against the code of a release that runs it, cut from the binary
//! (`tests/data/claude_code_scan_oracle.mjs`).
//!
//! A table is a list of token rules (JavaScript regex sources, in Claude Code's order, matched
//! as JavaScript matches them: [`crate::jsregex`]) and a private-key check: a rule of the table
//! up to 2.1.233, then a BEGIN line, at least 64 characters, and an END line, and from 2.1.323 a
//! BEGIN or END line already replaced by `[REDACTED]` counts too.

use crate::jsregex::{self, CodeUnits, Target};
use crate::{finding, Finding};
use mneme_core::versions::SecretScanner;
use mneme_core::versions::SecretScanner::{V2_1_196, V2_1_232, V2_1_234, V2_1_323, V2_1_80};
use regex::{Regex, RegexSet, RegexSetBuilder};
use std::sync::{LazyLock, OnceLock};

/// One token rule, for the releases from `from` up to (not including) `until`.
#[derive(Debug, Clone, Copy)]
pub struct TokenRule {
    pub id: &'static str,
    /// The JavaScript `RegExp` source, as the binary holds it.
    pub source: &'static str,
    /// The JavaScript flags (`""` or `"i"`).
    pub flags: &'static str,
    pub from: SecretScanner,
    pub until: Option<SecretScanner>,
}

/// Every token rule of every table, in Claude Code's order (a rule's older form sits just before
/// its newer one). From 2.1.290 the Anthropic OAuth token's regex is wrapped in a guard that
/// starts matching only at the beginning of a run of token characters; that changes how fast it
/// fails, not what it matches (any place the bare regex matches is reached from the start of its
/// run), so the bare form stands for both.
pub const TOKEN_RULES: &[TokenRule] = &[
    TokenRule { id: "aws-access-token", source: r#"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "gcp-api-key", source: r#"\b(AIza[\w-]{35})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: Some(V2_1_196) },
    TokenRule { id: "gcp-api-key", source: r#"\b(AIza[\w-]{35})(?![\w-])"#, flags: "", from: V2_1_196, until: None },
    TokenRule { id: "google-oauth-client-secret", source: r#"\bGOCSPX-[\w-]{28}(?![\w-])"#, flags: "", from: V2_1_196, until: None },
    TokenRule { id: "azure-ad-client-secret", source: r#"(?:^|[\\'"\x60\s>=:(,)])([a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'"\x60\s<),])"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "digitalocean-pat", source: r#"\b(dop_v1_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "digitalocean-access-token", source: r#"\b(doo_v1_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "anthropic-api-key", source: r#"\b(sk-ant-api03-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "anthropic-admin-api-key", source: r#"\b(sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "anthropic-oauth-token", source: r#"\b(sk-ant-(?:oat|ort)\d{2}-[\w-]{20,})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_234, until: None },
    TokenRule { id: "openai-api-key", source: r#"\b(sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})\b|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: Some(V2_1_196) },
    TokenRule { id: "openai-api-key", source: r#"sk-[A-Za-z0-9_-]{8,200}T3BlbkFJ[A-Za-z0-9_-]{8,200}"#, flags: "", from: V2_1_196, until: None },
    TokenRule { id: "openai-legacy-api-key", source: r#"\bsk-[a-zA-Z0-9]{48}(?![a-zA-Z0-9])"#, flags: "", from: V2_1_196, until: None },
    TokenRule { id: "huggingface-access-token", source: r#"\b(hf_[a-zA-Z]{34})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "supabase-secret-key", source: r#"\bsb_secret_[A-Za-z0-9_-]{20,}"#, flags: "", from: V2_1_196, until: None },
    TokenRule { id: "supabase-access-token", source: r#"\bsbp_[a-z0-9]{40,}"#, flags: "", from: V2_1_196, until: None },
    TokenRule { id: "github-pat", source: r#"ghp_[0-9a-zA-Z]{36}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "github-fine-grained-pat", source: r#"github_pat_\w{82}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "github-app-token", source: r#"(?:ghu|ghs)_[0-9a-zA-Z]{36}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "github-oauth", source: r#"gho_[0-9a-zA-Z]{36}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "github-refresh-token", source: r#"ghr_[0-9a-zA-Z]{36}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "gitlab-pat", source: r#"glpat-[\w-]{20}"#, flags: "", from: V2_1_80, until: Some(V2_1_232) },
    TokenRule { id: "gitlab-pat", source: r#"glpat-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-deploy-token", source: r#"gldt-[0-9a-zA-Z_\-]{20}"#, flags: "", from: V2_1_80, until: Some(V2_1_232) },
    TokenRule { id: "gitlab-deploy-token", source: r#"gldt-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-runner-authentication-token", source: r#"glrt-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-oauth-app-secret", source: r#"gloas-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-pipeline-trigger-token", source: r#"glptt-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-kubernetes-agent-token", source: r#"glagent-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-incoming-mail-token", source: r#"glimt-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-scim-oauth-token", source: r#"glsoat-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-ci-build-token", source: r#"glcbt-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-feed-token", source: r#"glft-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "gitlab-feature-flag-client-token", source: r#"glffct-[\w=-]{20,}(?:\.[0-9a-z]{9})?"#, flags: "", from: V2_1_232, until: None },
    TokenRule { id: "slack-bot-token", source: r#"xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "slack-user-token", source: r#"xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}"#, flags: "", from: V2_1_80, until: Some(V2_1_234) },
    TokenRule { id: "slack-user-token", source: r#"xox[a-z](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}"#, flags: "", from: V2_1_234, until: None },
    TokenRule { id: "slack-rotation-token", source: r#"xoxe(?:\.xox[a-z])?-[0-9]-[A-Za-z0-9-]{28,}"#, flags: "", from: V2_1_234, until: None },
    TokenRule { id: "slack-app-token", source: r#"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"#, flags: "i", from: V2_1_80, until: None },
    TokenRule { id: "slack-workflow-token", source: r#"\bxwfp-[a-zA-Z0-9-]{20,}"#, flags: "", from: V2_1_234, until: None },
    TokenRule { id: "slack-webhook-url", source: r#"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{40,}"#, flags: "i", from: V2_1_234, until: None },
    TokenRule { id: "twilio-api-key", source: r#"SK[0-9a-fA-F]{32}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "sendgrid-api-token", source: r#"\b(SG\.[a-zA-Z0-9=_\-.]{66})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "npm-access-token", source: r#"\b(npm_[a-zA-Z0-9]{36})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "pypi-upload-token", source: r#"pypi-AgEIcHlwaS5vcmc[\w-]{50,1000}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "databricks-api-token", source: r#"\b(dapi[a-f0-9]{32}(?:-\d)?)(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "hashicorp-tf-api-token", source: r#"[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9\-_=]{60,70}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "pulumi-api-token", source: r#"\b(pul-[a-f0-9]{40})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "postman-api-token", source: r#"\b(PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "grafana-api-key", source: r#"\b(eyJrIjoi[A-Za-z0-9+/]{70,400}={0,3})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "grafana-cloud-api-token", source: r#"\b(glc_[A-Za-z0-9+/]{32,400}={0,3})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "grafana-service-account-token", source: r#"\b(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "sentry-user-token", source: r#"\b(sntryu_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "sentry-org-token", source: r#"\bsntrys_eyJpYXQiO[a-zA-Z0-9+/]{10,200}(?:LCJyZWdpb25fdXJs|InJlZ2lvbl91cmwi|cmVnaW9uX3VybCI6)[a-zA-Z0-9+/]{10,200}={0,2}_[a-zA-Z0-9+/]{43}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "stripe-access-token", source: r#"\b((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "shopify-access-token", source: r#"shpat_[a-fA-F0-9]{32}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "shopify-shared-secret", source: r#"shpss_[a-fA-F0-9]{32}"#, flags: "", from: V2_1_80, until: None },
    TokenRule { id: "private-key", source: r#"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"#, flags: "i", from: V2_1_80, until: Some(V2_1_234) },
];

/// How a table looks for a private key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrivateKeyCheck {
    /// The `private-key` rule of the table.
    Rule,
    /// A BEGIN line, then an END line starting at least 64 characters after it.
    Span,
    /// The same, where either line may also be one already redacted (`[REDACTED]PRIVATE
    /// KEY-----`, `[REDACTED-RSA]-BEGIN RSA PRIVATE KEY-----`).
    SpanAfterRedaction,
}

/// The private-key check of a table.
pub fn private_key_check(scanner: SecretScanner) -> PrivateKeyCheck {
    match scanner {
        V2_1_80 | V2_1_196 | V2_1_232 => PrivateKeyCheck::Rule,
        V2_1_234 => PrivateKeyCheck::Span,
        V2_1_323 => PrivateKeyCheck::SpanAfterRedaction,
    }
}

/// The token rules of a table, in order.
pub fn token_rules(scanner: SecretScanner) -> impl Iterator<Item = &'static TokenRule> {
    TOKEN_RULES.iter().filter(move |r| r.from <= scanner && r.until.is_none_or(|u| scanner < u))
}

/// Exactly what `scanForSecrets(content)` returns in a release running `scanner`: one finding per
/// rule that matches, in table order, then the private key when the table checks it apart.
pub fn scan(content: &str, scanner: SecretScanner) -> Vec<Finding> {
    kept_matches(content, scanner, |_, _| true).into_iter().map(finding).collect()
}

/// The rules of a table that match where `keep(rule id, secret)` agrees for at least one match
/// (the secret: the first non-empty capture group, else the whole match), in table order, then
/// the private key when the table checks it apart (`keep(id, "")`). [`scan`] keeps every match;
/// Mneme's own verdict holds them to gitleaks' placeholder filters.
pub(crate) fn kept_matches(content: &str, scanner: SecretScanner, keep: impl Fn(&str, &str) -> bool) -> Vec<&'static str> {
    let table = compiled(scanner);
    let hits = table.set.matches(content);
    let mut kept: Vec<&'static str> = Vec::new();
    for (k, (rule, fancy)) in table.rules.iter().enumerate() {
        let found = if rule.id == "private-key" {
            // The one rule that counts characters of any kind: JavaScript counts a character
            // outside the BMP as two, so a block the set misses may still be one. The block
            // itself is the secret.
            (hits.matched(k)
                || (content.contains("-----") && CodeUnits::of(content).is_some_and(|u| PRIVATE_KEY_RULE.is_match(&u.text))))
                && keep(rule.id, "")
        } else if !hits.matched(k) {
            false
        } else {
            let secret_of = |groups: &mut dyn Iterator<Item = Option<&str>>| -> Option<String> {
                let whole = groups.next().flatten()?;
                Some(groups.flatten().find(|g| !g.is_empty()).unwrap_or(whole).to_string())
            };
            match fancy {
                Some(re) => fancy_captures(table.plain(k), re, content).any(|c| match c {
                    Ok(c) => secret_of(&mut c.iter().map(|m| m.map(|m| m.as_str()))).is_some_and(|s| keep(rule.id, &s)),
                    // A backtracking limit, at one candidate (so whatever the text's length):
                    // refusing is the safe side.
                    Err(_) => true,
                }),
                None => table.plain(k).captures_iter(content).any(|c| {
                    secret_of(&mut c.iter().map(|m| m.map(|m| m.as_str()))).is_some_and(|s| keep(rule.id, &s))
                }),
            }
        };
        if found {
            kept.push(rule.id);
        }
    }
    let check = private_key_check(scanner);
    if check != PrivateKeyCheck::Rule
        && has_private_key_span(content, check == PrivateKeyCheck::SpanAfterRedaction)
        && keep("private-key", "")
    {
        kept.push("private-key");
    }
    kept
}

/// What `fancy.captures_iter(text)` yields, found without running `fancy-regex`'s unanchored
/// search over the whole text: its backtracking limit counts every step of one search, so on a
/// long text (~400 KB) with a near miss it fails where JavaScript simply finds no match. Each
/// place `plain` (the same rule with its lookarounds dropped, so it matches wherever the rule
/// does) matches is tried anchored instead, with the whole text around it for the lookarounds;
/// the work per place depends on the rule, not on the text. An `Err` (the limit, at one
/// place) carries that place's span.
pub(crate) fn fancy_captures<'t>(
    plain: &'t Regex,
    fancy: &'t fancy_regex::Regex,
    text: &'t str,
) -> impl Iterator<Item = Result<fancy_regex::Captures<'t, str>, std::ops::Range<usize>>> {
    let next_char = move |at: usize| at + text[at..].chars().next().map_or(1, char::len_utf8);
    let mut pos = 0;
    std::iter::from_fn(move || {
        while pos <= text.len() {
            let candidate = plain.find_at(text, pos)?;
            let start = candidate.start();
            let input = fancy_regex::RegexInput::new(text).from_pos(start).anchored(true);
            match fancy.captures_input(input) {
                Ok(Some(c)) => {
                    let end = c.get(0).map_or(start, |m| m.end());
                    pos = if end > start { end } else { next_char(start) };
                    return Some(Ok(c));
                }
                Ok(None) => pos = next_char(start),
                Err(_) => {
                    pos = next_char(start);
                    return Some(Err(candidate.range()));
                }
            }
        }
        None
    })
}

/// A table ready to run: one prefilter per rule (exact for the rules without lookarounds, which
/// are the others' `fancy-regex`) in a set, so clean text costs one pass.
struct Compiled {
    rules: Vec<(&'static TokenRule, Option<fancy_regex::Regex>)>,
    set: RegexSet,
    /// Each plain rule on its own, compiled the first time a text needs its matches.
    plain: Vec<OnceLock<Regex>>,
}

impl Compiled {
    fn plain(&self, k: usize) -> &Regex {
        self.plain[k].get_or_init(|| {
            let r = self.rules[k].0;
            Regex::new(&jsregex::translate(r.source, r.flags, Target::Prefilter).expect("rule translates")).expect("rule compiles")
        })
    }
}

fn compiled(scanner: SecretScanner) -> &'static Compiled {
    static TABLES: [OnceLock<Compiled>; 5] = [const { OnceLock::new() }; 5];
    TABLES[scanner as usize].get_or_init(|| {
        let rules: Vec<_> = token_rules(scanner)
            .map(|r| {
                let fancy = jsregex::needs_fancy(r.source).then(|| {
                    let p = jsregex::translate(r.source, r.flags, Target::Fancy).expect("rule translates");
                    fancy_regex::Regex::new(&p).expect("rule compiles for fancy-regex")
                });
                (r, fancy)
            })
            .collect();
        let patterns = rules.iter().map(|(r, _)| jsregex::translate(r.source, r.flags, Target::Prefilter).expect("rule translates"));
        // The counted repetitions ({50,1000}, {70,400}, …) make a large automaton; allow it.
        let set = RegexSetBuilder::new(patterns).size_limit(64 << 20).build().expect("rule set compiles");
        let plain = rules.iter().map(|_| OnceLock::new()).collect();
        Compiled { rules, set, plain }
    })
}

/// The `private-key` rule of the tables up to 2.1.233.
static PRIVATE_KEY_RULE: LazyLock<Regex> = LazyLock::new(|| {
    let rule = TOKEN_RULES.iter().find(|r| r.id == "private-key").expect("the table has the rule");
    Regex::new(&jsregex::translate(rule.source, rule.flags, Target::Prefilter).expect("rule translates")).expect("rule compiles")
});

/// The lines of a private key block, as Claude Code's span check finds them (`i`: any case).
const BEGIN: &str = r"-----BEGIN[ A-Z0-9_-]{0,100}?PRIVATE KEY(?: BLOCK)?-----";
const END: &str = r"-----END[ A-Z0-9_-]{0,100}?PRIVATE KEY(?: BLOCK)?-----";
/// The same lines, or lines whose start was already replaced by a redaction marker; the text
/// between the marker and `PRIVATE KEY` is captured.
const BEGIN_OR_REDACTED: &str =
    r"(?:-----BEGIN[ A-Z0-9_-]{0,100}?|\[REDACTED(?:-[A-Z]{1,20})?\](?:-{1,4}BEGIN)?([ A-Z0-9_-]{0,100}?))PRIVATE KEY(?: BLOCK)?-----";
const END_OR_REDACTED: &str =
    r"(?:-----END[ A-Z0-9_-]{0,100}?|\[REDACTED(?:-[A-Z]{1,20})?\](?:-{1,4}END)?([ A-Z0-9_-]{0,100}?))PRIVATE KEY(?: BLOCK)?-----";
/// How far after the BEGIN line the END line may start, in UTF-16 code units (JavaScript's
/// string indices).
const MIN_KEY_BODY: usize = 64;

fn line_regexes(after_redaction: bool) -> &'static (Regex, Regex) {
    static PLAIN: LazyLock<(Regex, Regex)> = LazyLock::new(|| (js(BEGIN), js(END)));
    static REDACTED: LazyLock<(Regex, Regex)> = LazyLock::new(|| (js(BEGIN_OR_REDACTED), js(END_OR_REDACTED)));
    if after_redaction {
        &REDACTED
    } else {
        &PLAIN
    }
}

fn js(source: &str) -> Regex {
    Regex::new(&jsregex::translate(source, "i", Target::Prefilter).expect("line regex translates")).expect("line regex compiles")
}

/// Whether the text holds a BEGIN line and, at least [`MIN_KEY_BODY`] code units after its end,
/// an END line: the first BEGIN line decides, as Claude Code looks no further.
fn has_private_key_span(text: &str, after_redaction: bool) -> bool {
    let (begin, end) = line_regexes(after_redaction);
    let Some(begin_end) = first_line(begin, text, 0) else { return false };
    let mut at = begin_end;
    let mut units = 0;
    for c in text[begin_end..].chars() {
        if units >= MIN_KEY_BODY {
            break;
        }
        units += c.len_utf16();
        at += c.len_utf8();
    }
    units >= MIN_KEY_BODY && first_line(end, text, at).is_some()
}

/// The end of the first line match from `at` on. A redacted line whose captured part starts with
/// `-` or holds `--` is no line (a marker that swallowed the dashes of a real one); the search
/// goes on one character after its start, as Claude Code's does.
fn first_line(re: &Regex, text: &str, mut at: usize) -> Option<usize> {
    loop {
        let c = re.captures_at(text, at)?;
        let whole = c.get(0)?;
        match c.get(1) {
            Some(g) if g.as_str().starts_with('-') || g.as_str().contains("--") => {
                // The match starts with `[`, one byte.
                at = whole.start() + 1;
            }
            _ => return Some(whole.end()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(text: &str, scanner: SecretScanner) -> Vec<&'static str> {
        scan(text, scanner).into_iter().map(|f| f.rule_id).collect()
    }

    #[test]
    fn each_table_keeps_one_form_of_each_rule() {
        for scanner in [V2_1_80, V2_1_196, V2_1_232, V2_1_234, V2_1_323] {
            let mut seen = std::collections::HashSet::new();
            assert!(token_rules(scanner).all(|r| seen.insert(r.id)), "{scanner:?}");
        }
        assert_eq!(token_rules(V2_1_80).count(), 36);
        assert_eq!(token_rules(V2_1_196).count(), 40);
        assert_eq!(token_rules(V2_1_232).count(), 49);
        assert_eq!(token_rules(V2_1_234).count(), 52);
    }

    #[test]
    fn private_keys_by_table() {
        let body = "A".repeat(64);
        let pem = format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----");
        for scanner in [V2_1_80, V2_1_232, V2_1_234, V2_1_323] {
            assert_eq!(ids(&pem, scanner), ["private-key"], "{scanner:?}");
        }
        // 63 characters between the lines are not a key.
        let short = format!("-----BEGIN PRIVATE KEY-----{}-----END PRIVATE KEY-----", "A".repeat(63));
        assert!(ids(&short, V2_1_234).is_empty());
        assert!(ids(&short, V2_1_80).is_empty());
        // A BEGIN line already redacted counts from 2.1.323 only.
        let redacted = format!("[REDACTED]PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----");
        assert!(ids(&redacted, V2_1_234).is_empty());
        assert_eq!(ids(&redacted, V2_1_323), ["private-key"]);
        // A marker that swallowed a real line's dashes is skipped, and the real line found.
        let swallowed = format!("[REDACTED]-- PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----");
        assert!(ids(&swallowed, V2_1_323).is_empty());
        // 64 code units in JavaScript: an emoji counts two.
        let emoji = format!("-----BEGIN PRIVATE KEY-----{}-----END PRIVATE KEY-----", "\u{1F600}".repeat(32));
        assert_eq!(ids(&emoji, V2_1_234), ["private-key"]);
        let emoji = format!("-----BEGIN PRIVATE KEY-----{}-----END PRIVATE KEY-----", "\u{1F600}".repeat(31));
        assert!(ids(&emoji, V2_1_234).is_empty());
    }

    /// Prose of about `len` bytes, no token in it.
    fn prose(len: usize) -> String {
        let words = ["deploy", "main", "into", "the", "staging", "cluster", "before", "merging", "run", "tests"];
        let mut out = String::with_capacity(len + 16);
        let mut k = 7usize;
        while out.len() < len {
            k = k.wrapping_mul(31).wrapping_add(17) % 1009;
            out.push_str(words[k % words.len()]);
            out.push(if k.is_multiple_of(13) { '\n' } else { ' ' });
        }
        out
    }

    /// The rules with lookarounds answer the same on a long text as on a short one: a near
    /// miss (a token run too long to be one) is no match however much prose follows, and a real
    /// token is found after any amount of it.
    #[test]
    fn lookaround_rules_do_not_depend_on_the_texts_length() {
        let near_misses = [
            format!("GOCSPX-{}", "a".repeat(40)),
            format!("model id sk-{} is not a key", "a".repeat(60)),
            format!("AIza{}", "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0AeQw9Lx"),
        ];
        let tokens = [
            ("google-oauth-client-secret", format!("GOCSPX-{}", "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5")),
            ("openai-legacy-api-key", format!("sk-{}", "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0AeQw9Lx2Mv7Nb4Kp1")),
            ("gcp-api-key", format!("AIza{}", "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0AeQw")),
        ];
        for len in [1_000, 100_000, 1_000_000] {
            let tail = prose(len);
            for miss in &near_misses {
                let text = format!("{miss}\n{tail}");
                assert!(ids(&text, V2_1_323).is_empty(), "{len}: {miss}");
                assert!(crate::scan(&text).is_empty(), "{len}: {miss}: {:?}", crate::scan(&text));
                assert_eq!(crate::redact(&text), text, "{len}: {miss}");
            }
            for (id, token) in &tokens {
                for text in [format!("{token}\n{tail}"), format!("{tail}\n{token}\n"), format!("{} {token} {tail}", near_misses[0])] {
                    assert!(ids(&text, V2_1_323).contains(id), "{len}: {id}");
                    assert!(crate::scan(&text).iter().any(|f| f.rule_id == *id), "{len}: {id}");
                    assert!(!crate::redact(&text).contains(token.as_str()), "{len}: {id}");
                }
            }
        }
    }

    #[test]
    fn later_tables_know_later_tokens() {
        let oauth = format!("sk-ant-oat01-{}", "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0Ae");
        assert!(ids(&oauth, V2_1_232).is_empty());
        assert_eq!(ids(&oauth, V2_1_234), ["anthropic-oauth-token"]);
        let glrt = format!("glrt-{}", "Zq8Kd2mXv9Lp4Rt7Wn3Bc6");
        assert!(ids(&glrt, V2_1_196).is_empty());
        assert_eq!(ids(&glrt, V2_1_232), ["gitlab-runner-authentication-token"]);
        assert_eq!(scan(&glrt, V2_1_323)[0].label, "GitLab Runner Authentication Token");
    }
}
