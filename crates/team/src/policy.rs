//! What may be written into team memory, which everyone in the repository receives: nothing
//! the secret scanner flags (`mneme_secrets::scan_team`: gitleaks' rules and Claude Code's, on
//! the text and on its Markdown read as plain text), refused where Claude Code refuses, in
//! Mneme's words; and nothing a push would hold back (`mneme_secrets::held_back_on_push`), which
//! would be written here and then silently never reach the team. The store asks this through
//! `Memdir::with_team_write_check` for every create, edit, rename into `team/` and team index
//! write; the api passes it (the disk layer itself does not decide what is shareable). The
//! decision is `mneme_secrets::check_team_content`'s; only the wording for what only a push
//! would refuse is this module's own.

use mneme_store::memdir::TeamWriteRefused;

/// Refuses content for team memory that holds something that looks like a secret, or that a
/// push would leave out; the message names the kinds found (never the secret) and says what to
/// do.
pub fn check_team_write(content: &str) -> Result<(), TeamWriteRefused> {
    let secrets = mneme_secrets::scan_team(content);
    if !secrets.is_empty() {
        return Err(TeamWriteRefused(mneme_secrets::TeamWriteRefused { findings: secrets }.to_string()));
    }
    let held = mneme_secrets::held_back_on_push(content.as_bytes());
    if held.is_empty() {
        return Ok(());
    }
    let labels: Vec<&str> = held.iter().map(|f| f.label.as_str()).collect();
    Err(TeamWriteRefused(format!(
        "Not written to team memory: part of the content looks like a secret to Claude Code's scanner ({}), \
         even if it is a published example or a placeholder, so a push would leave the file out and the team would never \
         receive it. Write the value as a named placeholder (such as <AWS_ACCESS_KEY_ID>) or leave it out, and try again.",
        labels.join(", ")
    )))
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
