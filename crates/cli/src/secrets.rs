//! `mneme secrets scan`: the check team memory writes go through, on any text.

use clap::Subcommand;
use std::io::Read;
use std::process::ExitCode;

#[derive(Subcommand)]
#[command(defer = true)]
pub enum SecretsCommand {
    /// Scan text from standard input for secrets the way writes into team memory are checked.
    /// Prints the label of each rule that fired, one per line, and exits 1 when the text holds
    /// a secret; prints nothing and exits 0 when it is clean. The secret itself is never
    /// printed.
    Scan {
        /// Use Claude Code 2.1.197's verdict exactly: its regexes alone, without the
        /// placeholder filters (AKIAIOSFODNN7EXAMPLE, ghp_xxx…) and the connection-string rule
        /// Mneme adds.
        #[arg(long)]
        claude_code: bool,
    },
}

pub fn run(cmd: SecretsCommand) -> ExitCode {
    match cmd {
        SecretsCommand::Scan { claude_code } => {
            let mut bytes = Vec::new();
            if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
                eprintln!("mneme: could not read standard input ({e}); pipe the text to scan into mneme secrets scan");
                return ExitCode::FAILURE;
            }
            // Invalid UTF-8 is scanned as U+FFFD: a secret around it still matches.
            let text = String::from_utf8_lossy(&bytes);
            let findings =
                if claude_code { mneme_secrets::scan_claude_code(&text) } else { mneme_secrets::scan(&text) };
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
