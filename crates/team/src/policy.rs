//! What may be written into team memory, which everyone in the repository receives: nothing
//! the secret scanner flags (`mneme_secrets::check_team_content`, gitleaks' rules and Claude
//! Code's), refused where Claude Code refuses, in Mneme's words. The store asks this through
//! `Memdir::with_team_write_check` for every create, edit, rename into `team/` and team index
//! write; the api passes it (the disk layer itself does not decide what is shareable).

use mneme_store::memdir::TeamWriteRefused;

/// Refuses content for team memory that holds something that looks like a secret; the message
/// names the kinds found (never the secret) and says what to do.
pub fn check_team_write(content: &str) -> Result<(), TeamWriteRefused> {
    mneme_secrets::check_team_content(content).map_err(|refused| TeamWriteRefused(refused.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_refused_and_placeholders_pass() {
        // Assembled at run time, so this file holds no secret-looking literal.
        let pat = format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd");
        assert_eq!(
            check_team_write(&format!("Use the bot token {pat} for CI.")).unwrap_err().to_string(),
            "Not written to team memory: the content appears to contain secrets (GitHub PAT), \
             and everyone working on the repository can read team memory. Remove the secret and try again."
        );
        // Placeholders Claude Code's bare regexes would flag are accepted.
        check_team_write("Example: aws_access_key_id = AKIAIOSFODNN7EXAMPLE").unwrap();
        check_team_write("Deploys go through the staging cluster first.").unwrap();
    }
}
