//! The rule tables: Claude Code 2.1.197's secret-scanner rules, verbatim and in its order, and
//! the confirmation data Mneme adds to each.

/// How Claude Code uses a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confidence {
    /// Refuses team writes and skips files on push (`scanForSecrets`), and redacts.
    High,
    /// Only redacts (`redactSecrets`): too loose to refuse content on its own.
    Low,
}

/// One entry of Claude Code's table: the JavaScript regex source exactly as the binary holds
/// it (after string escapes), its flags, and its confidence.
#[derive(Debug, Clone, Copy)]
pub struct CcRule {
    /// The rule id (`aws-access-token`); labels are derived from it.
    pub id: &'static str,
    /// The JavaScript `RegExp` source.
    pub source: &'static str,
    /// The JavaScript flags (`""` or `"i"`).
    pub flags: &'static str,
    /// Whether the rule refuses content or only redacts it.
    pub confidence: Confidence,
}

// Cut from the binary (the module that defines `scanForSecrets`) by
// tests/data/claude_code_oracle.mjs; tests/claude_code_oracle.rs checks every field against it.
// `sk-ant-api` is spelled in pieces in the binary (`["sk","ant","api"].join("-")`) so the source
// does not trip scanners; the value is the same.
pub const CLAUDE_CODE_RULES: &[CcRule] = &[
    CcRule { id: "url-userinfo", source: r#":\/\/([^/@\s]+)@"#, flags: "", confidence: Confidence::Low },
    CcRule { id: "gcp-service-account", source: r#"\b([a-z0-9-]+@[a-z0-9-]+\.iam\.gserviceaccount\.com)\b"#, flags: "i", confidence: Confidence::Low },
    CcRule { id: "loose-anthropic-key", source: r#"\b(sk-ant-?[\w-]{10,})"#, flags: "", confidence: Confidence::Low },
    CcRule { id: "http-auth-scheme", source: r#"\b(?:Bearer|Basic)\s+([A-Za-z0-9+/=._~-]{20,})"#, flags: "i", confidence: Confidence::Low },
    CcRule { id: "loose-jwt", source: r#"\b(eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"#, flags: "", confidence: Confidence::Low },
    CcRule { id: "sensitive-assign", source: r#"(?:api[_-]?key|secret|token|password|passwd|credential|bearer|authorization|auth[_-]?header|cookie|session[_-]?(?:id|key)|connection[_-]?string|(?:private|ssh|encryption|signing|access|deploy|master|license)[_-]?key|client[_-]?secret)[\w.-]*["']?\s*[=:]\s*(\[REDACTED\]|"[^"]*"|'[^']*'|(?:Bearer|Basic)\s+(?:\[REDACTED\]|[^\s,;&}\])]+)|[^\s-]{0,4}-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----['"`]?|[^\s,;&}\])]+)"#, flags: "i", confidence: Confidence::Low },
    CcRule { id: "cloud-env-var", source: r#"\b(?:AWS|GOOGLE|GCP|GCLOUD|AZURE)_\w+\s*[=:]\s*(\[REDACTED\]|"[^"]*"|'[^']*'|(?:Bearer|Basic)\s+(?:\[REDACTED\]|[^\s,;&}\])]+)|[^\s-]{0,4}-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----['"`]?|[^\s,;&}\])]+)"#, flags: "i", confidence: Confidence::Low },
    CcRule { id: "aws-access-token", source: r#"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b"#, flags: "", confidence: Confidence::High },
    CcRule { id: "gcp-api-key", source: r#"\b(AIza[\w-]{35})(?![\w-])"#, flags: "", confidence: Confidence::High },
    CcRule { id: "google-oauth-client-secret", source: r#"\bGOCSPX-[\w-]{28}(?![\w-])"#, flags: "", confidence: Confidence::High },
    CcRule { id: "azure-ad-client-secret", source: r#"(?:^|[\\'"\x60\s>=:(,)])([a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'"\x60\s<),])"#, flags: "", confidence: Confidence::High },
    CcRule { id: "digitalocean-pat", source: r#"\b(dop_v1_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "digitalocean-access-token", source: r#"\b(doo_v1_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "anthropic-api-key", source: r#"\b(sk-ant-api03-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "anthropic-admin-api-key", source: r#"\b(sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "openai-api-key", source: r#"sk-[A-Za-z0-9_-]{8,200}T3BlbkFJ[A-Za-z0-9_-]{8,200}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "openai-legacy-api-key", source: r#"\bsk-[a-zA-Z0-9]{48}(?![a-zA-Z0-9])"#, flags: "", confidence: Confidence::High },
    CcRule { id: "huggingface-access-token", source: r#"\b(hf_[a-zA-Z]{34})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "supabase-secret-key", source: r#"\bsb_secret_[A-Za-z0-9_-]{20,}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "supabase-access-token", source: r#"\bsbp_[a-z0-9]{40,}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "github-pat", source: r#"ghp_[0-9a-zA-Z]{36}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "github-fine-grained-pat", source: r#"github_pat_\w{82}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "github-app-token", source: r#"(?:ghu|ghs)_[0-9a-zA-Z]{36}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "github-oauth", source: r#"gho_[0-9a-zA-Z]{36}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "github-refresh-token", source: r#"ghr_[0-9a-zA-Z]{36}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "gitlab-pat", source: r#"glpat-[\w-]{20}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "gitlab-deploy-token", source: r#"gldt-[0-9a-zA-Z_\-]{20}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "slack-bot-token", source: r#"xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*"#, flags: "", confidence: Confidence::High },
    CcRule { id: "slack-user-token", source: r#"xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "slack-app-token", source: r#"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"#, flags: "i", confidence: Confidence::High },
    CcRule { id: "twilio-api-key", source: r#"SK[0-9a-fA-F]{32}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "sendgrid-api-token", source: r#"\b(SG\.[a-zA-Z0-9=_\-.]{66})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "npm-access-token", source: r#"\b(npm_[a-zA-Z0-9]{36})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "pypi-upload-token", source: r#"pypi-AgEIcHlwaS5vcmc[\w-]{50,1000}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "databricks-api-token", source: r#"\b(dapi[a-f0-9]{32}(?:-\d)?)(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "hashicorp-tf-api-token", source: r#"[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9\-_=]{60,70}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "pulumi-api-token", source: r#"\b(pul-[a-f0-9]{40})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "postman-api-token", source: r#"\b(PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "grafana-api-key", source: r#"\b(eyJrIjoi[A-Za-z0-9+/]{70,400}={0,3})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "grafana-cloud-api-token", source: r#"\b(glc_[A-Za-z0-9+/]{32,400}={0,3})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "grafana-service-account-token", source: r#"\b(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "sentry-user-token", source: r#"\b(sntryu_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "sentry-org-token", source: r#"\bsntrys_eyJpYXQiO[a-zA-Z0-9+/]{10,200}(?:LCJyZWdpb25fdXJs|InJlZ2lvbl91cmwi|cmVnaW9uX3VybCI6)[a-zA-Z0-9+/]{10,200}={0,2}_[a-zA-Z0-9+/]{43}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "stripe-access-token", source: r#"\b((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})(?:[\x60'"\s;]|\\[nr]|$)"#, flags: "", confidence: Confidence::High },
    CcRule { id: "shopify-access-token", source: r#"shpat_[a-fA-F0-9]{32}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "shopify-shared-secret", source: r#"shpss_[a-fA-F0-9]{32}"#, flags: "", confidence: Confidence::High },
    CcRule { id: "private-key", source: r#"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"#, flags: "i", confidence: Confidence::High },
];

/// What Mneme checks on a Claude Code match before calling it a secret: gitleaks' own filters
/// for the rule of the same id (v8.30.1 `config/gitleaks.toml`), which Claude Code's port of
/// the regexes left out. A match counts when the secret (the first non-empty capture group,
/// else the whole match) has more Shannon entropy than `entropy` and no `allow` regex matches
/// it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Confirm {
    /// gitleaks' `entropy` floor (bits per character), if the rule has one.
    pub entropy: Option<f64>,
    /// gitleaks' `[[rules.allowlists]] regexes`, tested against the secret.
    pub allow: &'static [&'static str],
}

/// gitleaks' filters for a rule id; rules gitleaks does not have (or has without filters) get
/// none, so Claude Code's verdict stands for them.
pub fn confirm_for(id: &str) -> Confirm {
    let entropy = |e: f64| Confirm { entropy: Some(e), allow: &[] };
    match id {
        "aws-access-token" => Confirm { entropy: Some(3.0), allow: &[r".+EXAMPLE$"] },
        "gcp-api-key" => Confirm {
            entropy: Some(4.0),
            // gitleaks: "example keys from https://github.com/firebase/firebase-android-sdk".
            allow: &[
                "AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
                "AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
                "AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM",
                "AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU",
                "AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0",
                "AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A",
                "AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c",
                "AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4",
                "AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY",
                "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM",
                "AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ",
                "AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g",
                "AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU",
                "AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw",
                "AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE",
                "AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY",
            ],
        },
        "azure-ad-client-secret"
        | "digitalocean-pat"
        | "digitalocean-access-token"
        | "openai-api-key"
        | "github-pat"
        | "github-fine-grained-pat"
        | "github-app-token"
        | "github-oauth"
        | "github-refresh-token"
        | "gitlab-pat"
        | "gitlab-deploy-token"
        | "slack-bot-token"
        | "twilio-api-key"
        | "pypi-upload-token"
        | "databricks-api-token"
        | "postman-api-token"
        | "grafana-api-key"
        | "grafana-cloud-api-token"
        | "grafana-service-account-token" => entropy(3.0),
        "hashicorp-tf-api-token" | "sentry-user-token" => entropy(3.5),
        "sentry-org-token" => entropy(4.5),
        "huggingface-access-token"
        | "slack-user-token"
        | "slack-app-token"
        | "sendgrid-api-token"
        | "npm-access-token"
        | "pulumi-api-token"
        | "stripe-access-token"
        | "shopify-access-token"
        | "shopify-shared-secret" => entropy(2.0),
        // gitleaks' GitLab token rules other than `gitlab-pat`/`gitlab-deploy-token` (from
        // 2.1.232): the same floor, so `glrt-xxxxxxxxxxxxxxxxxxxxxxxx` is no runner token.
        "gitlab-runner-authentication-token"
        | "gitlab-feed-token"
        | "gitlab-incoming-mail-token"
        | "gitlab-kubernetes-agent-token"
        | "gitlab-oauth-app-secret"
        | "gitlab-feature-flag-client-token" => entropy(3.0),
        // gitleaks has these under other ids (`gitlab-ptt`, `gitlab-scim-token`,
        // `gitlab-cicd-job-token`), each with a floor of 3.
        "gitlab-pipeline-trigger-token" | "gitlab-scim-oauth-token" | "gitlab-ci-build-token" => entropy(3.0),
        // Their random parts, like the other token rules'; a placeholder such as
        // `sk-ant-oat01-xxxxxxxxxxxxxxxxxxxxxxxx` is not refused.
        "anthropic-oauth-token" | "slack-rotation-token" | "slack-workflow-token" => entropy(3.0),
        _ => Confirm::default(),
    }
}

/// gitleaks' global allowlist regexes (tested against the secret), in Rust syntax: template
/// and variable placeholders, one repeated letter, `true`/`false`/`null`, Unix paths.
pub const GLOBAL_ALLOW: &[&str] = &[
    r"(?i)^true|false|null$",
    r"^(?i:a+|b+|c+|d+|e+|f+|g+|h+|i+|j+|k+|l+|m+|n+|o+|p+|q+|r+|s+|t+|u+|v+|w+|x+|y+|z+|\*+|\.+)$",
    r"^\$(?:\d+|\{\d+\})$",
    r"^\$(?:[A-Z_]+|[a-z_]+)$",
    r"^\$\{(?:[A-Z_]+|[a-z_]+)\}$",
    r"^\{\{[ \t]*[\w ().|]+[ \t]*\}\}$",
    r#"^\$\{\{[ \t]*(?:(?:env|github|secrets|vars)(?:\.[A-Za-z]\w+)+[\w "'&./=|]*)[ \t]*\}\}$"#,
    r"^%(?:[A-Z_]+|[a-z_]+)%$",
    r"^%[+\-# 0]?[bcdeEfFgGoOpqstTUvxX]$",
    r"^\{\d{0,2}\}$",
    r"^@(?:[A-Z_]+|[a-z_]+)@$",
    r"^/Users/(?i)[a-z0-9]+/[\w .-/]+$",
    r"^/(?:bin|etc|home|opt|tmp|usr|var)/[\w ./-]+$",
];

/// gitleaks' global stop words: a secret containing one (case-insensitively) is a placeholder.
pub const GLOBAL_STOPWORDS: &[&str] = &["014df517-39d1-4453-b7b3-9930c563627c", "abcdefghijklmnopqrstuvwxyz"];

/// gitleaks' `shannonEntropy`: characters counted per code point, divided by the length in
/// bytes (the same thing for the ASCII tokens these rules match).
pub fn shannon_entropy(s: &str) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts: std::collections::HashMap<char, usize> = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_default() += 1;
    }
    let inv = 1.0 / s.len() as f64;
    counts.values().map(|&n| n as f64 * inv).map(|f| -f * f.log2()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gitleaks::gitleaks;

    /// Every Claude Code rule gitleaks has under the same id (or, for three GitLab tokens, under
    /// its own id) is held to gitleaks' entropy floor.
    #[test]
    fn entropy_floors_are_gitleaks_own() {
        let renamed = [
            ("gitlab-pipeline-trigger-token", "gitlab-ptt"),
            ("gitlab-scim-oauth-token", "gitlab-scim-token"),
            ("gitlab-ci-build-token", "gitlab-cicd-job-token"),
        ];
        let mut compared = 0;
        for rule in crate::claude_code::TOKEN_RULES {
            let id = renamed.iter().find(|(cc, _)| *cc == rule.id).map_or(rule.id, |(_, g)| *g);
            let Some(g) = gitleaks().rules().iter().find(|r| r.id == id) else { continue };
            let want = (g.entropy() != 0.0).then_some(g.entropy());
            assert_eq!(confirm_for(rule.id).entropy, want, "{}", rule.id);
            compared += 1;
        }
        assert!(compared >= 40, "{compared}");
    }

    #[test]
    fn gitlab_token_placeholders_are_not_secrets() {
        let random = "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0Ae";
        for prefix in ["glrt-", "glft-", "glimt-", "glagent-", "gloas-", "glffct-", "glptt-", "glsoat-", "glcbt-"] {
            let placeholder = format!("{prefix}{}", "x".repeat(24));
            assert!(crate::scan(&placeholder).is_empty(), "{placeholder}: {:?}", crate::scan(&placeholder));
            assert!(!crate::scan(&format!("{prefix}{random}")).is_empty(), "{prefix}");
        }
    }
}
