//! What may be written into team memory, which everyone in the repository receives: nothing
//! the secret scanner flags (`mneme_secrets::scan_team`: gitleaks' rules and Claude Code's, on
//! the text and on its Markdown read as plain text), refused where Claude Code refuses, in
//! Mneme's words; and nothing a push would hold back (`mneme_secrets::held_back_on_push`), which
//! would be written here and then silently never reach the team. The store asks this through
//! `Memdir::with_team_write_check` for every create, edit, rename into `team/` and team index
//! write; the api passes it (the disk layer itself does not decide what is shareable), and asks
//! [`check_team_restore`] before it puts back a local version a pull replaced (Team →
//! Conflicts). The decision is `mneme_secrets::check_team_content`'s; only the wording for what
//! only a push would refuse, and for a restore, is this module's own.

use mneme_secrets::Finding;
use mneme_store::memdir::TeamWriteRefused;
use std::path::Path;

/// What keeps content out of team memory.
enum Found {
    /// The secret scanner flags it.
    Secrets(Vec<Finding>),
    /// Only Claude Code's scanner does, so a push would hold the file back.
    HeldBack(Vec<Finding>),
}

/// The one decision every refusal here words: `text` is the content as text, `bytes` as a push
/// would send it (the same but for a file that is not UTF-8).
fn found(text: &str, bytes: &[u8]) -> Option<Found> {
    let secrets = mneme_secrets::scan_team(text);
    if !secrets.is_empty() {
        return Some(Found::Secrets(secrets));
    }
    let held = mneme_secrets::held_back_on_push(bytes);
    (!held.is_empty()).then_some(Found::HeldBack(held))
}

fn labels(findings: &[Finding]) -> String {
    findings.iter().map(|f| f.label.as_str()).collect::<Vec<_>>().join(", ")
}

/// Refuses content for team memory that holds something that looks like a secret, or that a
/// push would leave out; the message names the kinds found (never the secret) and says what to
/// do.
pub fn check_team_write(content: &str) -> Result<(), TeamWriteRefused> {
    match found(content, content.as_bytes()) {
        None => Ok(()),
        Some(Found::Secrets(findings)) => Err(TeamWriteRefused(mneme_secrets::TeamWriteRefused { findings }.to_string())),
        Some(Found::HeldBack(held)) => Err(TeamWriteRefused(format!(
            "Not written to team memory: part of the content looks like a secret to Claude Code's scanner ({}), \
             even if it is a published example or a placeholder, so a push would leave the file out and the team would never \
             receive it. Write the value as a named placeholder (such as <AWS_ACCESS_KEY_ID>) or leave it out, and try again.",
            labels(&held)
        ))),
    }
}

/// Refuses putting a version kept in Mneme's trash (`bytes`, lying at `kept`) back at `rel` in
/// team memory when [`check_team_write`] would refuse writing it: a restore writes into the
/// shared folder like any other write, and what it put back a push would then hold back. The
/// same decision, worded for a restore: nothing has moved, and the edit can still be shared by
/// copying it over without the secret (the trashed copy cannot be edited where it lies).
pub fn check_team_restore(bytes: &[u8], rel: &str, kept: &Path) -> Result<(), TeamWriteRefused> {
    let kept_note = format!(
        "Nothing was moved: {rel} stays as it is, and your version stays in Mneme's trash ({}).",
        kept.display()
    );
    match found(&String::from_utf8_lossy(bytes), bytes) {
        None => Ok(()),
        Some(Found::Secrets(findings)) => Err(TeamWriteRefused(format!(
            "Not restored: your version of {rel} appears to contain secrets ({}), and everyone working on the repository \
             can read team memory. {kept_note} To share your edit, copy it from there into {rel} without the secret, then push.",
            labels(&findings)
        ))),
        Some(Found::HeldBack(held)) => Err(TeamWriteRefused(format!(
            "Not restored: part of your version of {rel} looks like a secret to Claude Code's scanner ({}), even if it is \
             a published example or a placeholder, so a push would leave the file out and the team would never receive it. \
             {kept_note} To share your edit, copy it from there into {rel} with the value written as a named placeholder \
             (such as <AWS_ACCESS_KEY_ID>) or left out, then push.",
            labels(&held)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_refused() {
        // Assembled at run time, so this file holds no secret-looking literal.
        let pat = format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd");
        assert_eq!(
            check_team_write(&format!("Use the bot token {pat} for CI.")).unwrap_err().to_string(),
            "Not written to team memory: the content appears to contain secrets (GitHub PAT), \
             and everyone working on the repository can read team memory. Remove the secret and try again."
        );
        check_team_write("Deploys go through the staging cluster first.").unwrap();
        check_team_write("Example: aws_access_key_id = <AWS_ACCESS_KEY_ID>").unwrap();
    }

    /// A memory a push would hold back is not written: a published example key passes gitleaks'
    /// filters, but Claude Code's scanner (the push's and the team server's) refuses it.
    #[test]
    fn what_a_push_would_hold_back_is_refused_with_what_to_do() {
        let aws = format!("AKIAIOSFODNN7{}", "EXAMPLE");
        let ghp = format!("ghp_{}", "x".repeat(36));
        let firebase = format!("AIzaSy{}", "abcdefghijklmnopqrstuvwxyz1234567");
        for (text, label) in [
            (format!("Example: aws_access_key: {aws}"), "AWS Access Token"),
            (format!("token format: {ghp}"), "GitHub PAT"),
            (format!("firebase apiKey: \"{firebase}\""), "GCP API Key"),
        ] {
            assert!(!mneme_secrets::held_back_on_push(text.as_bytes()).is_empty(), "{text}");
            let err = check_team_write(&text).unwrap_err().to_string();
            assert!(err.contains(label) && err.contains("a push would leave the file out") && err.contains("placeholder"), "{err}");
            assert!(!err.contains(&text[text.len() - 12..]), "{err}");
            // The same decision as the secrets crate's own check (the inbox's promotion to team).
            assert!(mneme_secrets::check_team_content(&text).is_err(), "{text}");
        }
    }

    /// A restore is judged as a write is, on the bytes a push would send, and its refusal says
    /// that nothing moved, where the kept version lies, and how to share the edit after all.
    #[test]
    fn a_restore_is_refused_as_a_write_is() {
        let kept = Path::new("/data/trash/x/1796601600000-oncall/oncall.md");
        let pat = format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd");
        let err = check_team_restore(format!("Use {pat} for CI.").as_bytes(), "team/oncall.md", kept).unwrap_err().to_string();
        assert!(err.starts_with("Not restored: your version of team/oncall.md appears to contain secrets (GitHub PAT)"), "{err}");
        assert!(err.contains(&format!("your version stays in Mneme's trash ({})", kept.display())) && err.contains("without the secret, then push"), "{err}");
        assert!(!err.contains(&pat[4..]), "{err}");
        let aws = format!("Example: aws_access_key: AKIAIOSFODNN7{}", "EXAMPLE");
        let err = check_team_restore(aws.as_bytes(), "team/aws.md", kept).unwrap_err().to_string();
        assert!(err.contains("AWS Access Token") && err.contains("a push would leave the file out") && err.contains("placeholder"), "{err}");
        // Bytes that are not UTF-8 around a secret: judged as the push reads them.
        let mut bytes = b"\xff\xfe token ".to_vec();
        bytes.extend_from_slice(pat.as_bytes());
        assert!(check_team_restore(&bytes, "team/bin.md", kept).is_err());
        check_team_restore(b"Pager rota moved to the handbook.\n", "team/oncall.md", kept).unwrap();
        check_team_restore(b"\xff\xfe plain", "team/bin.md", kept).unwrap();
    }

    /// Whatever the write policy lets through, a push sends.
    #[test]
    fn what_is_written_is_pushed() {
        let texts = [
            "Deploys go through the staging cluster first.".to_string(),
            "Use `AWS_PROFILE=dev` for the sandbox account.".to_string(),
            format!("Example key: AKIA{}", "IOSFODNN7EXAMPLE"),
            format!("- **API key**: {}", "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0"),
        ];
        for text in &texts {
            if check_team_write(text).is_ok() {
                assert!(mneme_secrets::held_back_on_push(text.as_bytes()).is_empty(), "{text}");
            }
        }
    }

    /// Markdown spellings of a key, which gitleaks' rules pass by, are refused.
    #[test]
    fn markdown_spellings_of_a_secret_are_refused() {
        let key = "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0";
        for text in [format!("- **API key**: {key}"), format!("| API key | {key} |"), format!("api_key:\r\n    {key}")] {
            let err = check_team_write(&text).unwrap_err().to_string();
            assert!(err.contains("appears to contain secrets") && !err.contains(key), "{err}");
        }
    }
}
