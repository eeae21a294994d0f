//! `mneme secrets scan`: the check team memory writes go through, on any text.

use clap::Subcommand;
use mneme_core::versions::{self, ClaudeVersion, Profile};
use std::io::Read;
use std::process::ExitCode;

#[derive(Subcommand)]
#[command(defer = true)]
pub enum SecretsCommand {
    /// Scan text from standard input for secrets the way writes into team memory are checked.
    /// Prints the label of each rule that fired, one per line, and exits 1 when the text holds
    /// a secret; prints nothing and exits 0 when it is clean; exits 2 when the scan could not
    /// run (standard input could not be read), as `mneme verify` does. The secret itself is
    /// never printed.
    Scan {
        /// Give Claude Code's own verdict exactly: the installed release's token rules alone,
        /// without the placeholder filters (AKIAIOSFODNN7EXAMPLE, ghp_xxx…) and the
        /// connection-string rule Mneme adds.
        #[arg(long)]
        claude_code: bool,
        /// With --claude-code: as this release scans (default: the installed one, else the
        /// newest release Mneme checks).
        #[arg(long = "claude-version", value_name = "X.Y.Z", requires = "claude_code")]
        claude_version: Option<ClaudeVersion>,
    },
}

/// `installed` names the user's Claude Code release when none is given.
pub fn run(cmd: SecretsCommand, installed: impl FnOnce() -> Profile) -> ExitCode {
    match cmd {
        SecretsCommand::Scan { claude_code, claude_version } => {
            let mut bytes = Vec::new();
            if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
                eprintln!("mneme: could not read standard input ({e}); pipe the text to scan into mneme secrets scan");
                // Not 1: a script reading 1 as "holds a secret" must not take an unread text for one.
                return ExitCode::from(2);
            }
            let findings = if claude_code {
                // Invalid UTF-8 is scanned as U+FFFD, as Claude Code reads such a file.
                let text = String::from_utf8_lossy(&bytes);
                let release = claude_version.map_or_else(installed, |v| versions::profile_for(v).profile);
                mneme_secrets::scan_claude_code(&text, release.secret_scanner)
            } else {
                // Mneme's verdict also reads UTF-16 text (a PowerShell redirect writes it).
                mneme_secrets::scan_bytes(&bytes)
            };
            for f in &findings {
                println!("{}", f.label);
            }
            if findings.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
