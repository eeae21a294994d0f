//! `mneme team …`: team memory from the command line. `check-key` runs Mneme's strict key
//! policy and Claude Code's key validation (`validateTeamMemKey`) against a real team folder,
//! or Claude Code's alone with `--claude-code`.

use clap::{ArgGroup, Args, Subcommand};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
#[command(defer = true)]
pub enum TeamCommand {
    /// Check whether a key (a path the sync server sends) may be written under a team memory
    /// folder. By default Mneme's strict policy applies first — the key must be canonical (no
    /// `./`, `//`, `..` or trailing `/`), free of control and invisible or text-direction
    /// characters, NFC, at most 4,096 bytes with components of at most 255, and a name Windows
    /// can create — then Claude Code's own check: NUL bytes, %-encoded and Unicode-normalised
    /// traversal, backslashes, absolute keys, `..`, and symbolic links leading out. Prints the
    /// path the key resolves to and exits 0 when it is accepted; prints the reason (on standard
    /// output) and exits 1 when it is refused; exits 2 when the check could not run (the
    /// --key-file could not be read, the key is not UTF-8), as `mneme verify` does.
    CheckKey(CheckKey),
    /// status, pull, push, login, logout: team memory sync (see `team_sync`).
    #[command(flatten)]
    Sync(crate::team_sync::SyncCommand),
}

#[derive(Args)]
#[command(group(ArgGroup::new("source").required(true).args(["key", "key_file"])))]
pub struct CheckKey {
    /// The key, relative to the team folder (`notes/deploy.md`).
    #[arg(value_name = "KEY")]
    key: Option<String>,
    /// Read the key from FILE instead, as raw bytes (`-` for standard input), so keys with a
    /// NUL byte can be checked. Exactly one trailing newline (`\n`) is removed if present;
    /// anything else, a `\r` included, stays part of the key.
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// The team memory folder (`<auto-memory folder>/team`); it need not exist.
    #[arg(long, value_name = "DIR", required = true)]
    team_dir: PathBuf,
    /// Claude Code's verdict alone (`validateTeamMemKey`, with its exact messages), without
    /// Mneme's strict policy.
    #[arg(long)]
    claude_code: bool,
}

fn read_key(file: &PathBuf) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    let read = if file.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(file).map(|b| bytes = b)
    };
    read.map_err(|e| anyhow::anyhow!("could not read the key from {} ({e}); check the path", file.display()))?;
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    String::from_utf8(bytes).map_err(|_| {
        anyhow::anyhow!("the key is not valid UTF-8; team memory keys are JSON strings, so give the key as UTF-8 text")
    })
}

/// `managed_dir`: the global --managed-dir, which decides the team folder as it does every
/// other memory folder (a policy's autoMemoryDirectory).
pub fn run(cmd: TeamCommand, managed_dir: Option<PathBuf>) -> ExitCode {
    match cmd {
        TeamCommand::Sync(sync) => crate::team_sync::run_command(sync, managed_dir),
        TeamCommand::CheckKey(args) => {
            let key = match (&args.key, &args.key_file) {
                (Some(k), _) => k.clone(),
                (None, Some(f)) => match read_key(f) {
                    Ok(k) => k,
                    Err(e) => {
                        crate::print::failure(&e);
                        // Not 1, which says the key is refused: this key was never checked.
                        return ExitCode::from(2);
                    }
                },
                (None, None) => unreachable!("clap requires KEY or --key-file"),
            };
            let team_dir = if args.team_dir.is_absolute() {
                args.team_dir
            } else {
                match std::env::current_dir() {
                    Ok(cwd) => cwd.join(args.team_dir),
                    Err(e) => {
                        eprintln!("mneme: cannot read the current folder ({e}); give --team-dir as an absolute path");
                        return ExitCode::from(2);
                    }
                }
            };
            match mneme_api::records::check_team_key(&team_dir, &key, args.claude_code) {
                Ok(path) => {
                    println!("{}", path.display());
                    ExitCode::SUCCESS
                }
                Err(refused) => {
                    println!("{refused}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
