//! `mneme team status|pull|push|login|logout`: team memory sync from the command line.
//! The server comes from `TEAM_MEMORY_SYNC_URL` or the one signed in to; the token from the
//! OS keyring.

use anyhow::{anyhow, Result};
use clap::Subcommand;
use mneme_api::{Mneme, SystemClock};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Subcommand)]
#[command(defer = true)]
pub enum SyncCommand {
    /// Show the repository, server, who is signed in, the last pull and push, files held back
    /// for secrets, files the server accepted and then lost (each with why and the command that
    /// sends it again), and whether automatic pushes are suppressed.
    ///
    /// Exits 0 whenever the status could be shown, also when the OS keyring cannot be reached
    /// or is locked: then "Signed in" reads "unknown" with what to do (in --json, `signedIn` is
    /// false and `keyringProblem` says why), and pulls and pushes fail until the keyring
    /// answers. So does a sync state file that cannot be read (not JSON, too large, a FIFO):
    /// "Sync state" says so and what to do in place of the last pull and push (in --json,
    /// `stateProblem`, and `state` is null). Exits 1 only when no status could be shown (a
    /// folder that does not exist, say).
    Status {
        /// The project folder (default: the current folder).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Fetch the team's memory into this project's team folder (the server wins per file;
    /// replaced local edits are kept in Mneme's trash).
    Pull {
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Ignore the cached checksum and fetch everything.
        #[arg(long)]
        fresh: bool,
        #[arg(long)]
        json: bool,
    },
    /// Upload the team folder's changes (files with secrets are never sent).
    Push {
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Sign in to a team server with a code shown here and approved in a browser.
    Login {
        /// The server (default: TEAM_MEMORY_SYNC_URL or the one signed in to before).
        url: Option<String>,
    },
    /// Sign out: forget the token in the OS keyring.
    Logout {
        url: Option<String>,
    },
}

fn cwd_or_current(cwd: Option<PathBuf>) -> Result<PathBuf> {
    match cwd {
        Some(c) => crate::existing_cwd(c),
        None => crate::current_dir(),
    }
}

fn print_json<T: Serialize>(v: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn when(ms: u64) -> String {
    let secs = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// A file the server accepted and then lost, as `status --json` gives it (`lostFiles`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LostFileJson {
    key: String,
    times_lost: u32,
    held_back: bool,
    sent_again: bool,
    why: String,
    /// The command to run next: the push that sends it again, or, once sent, the pull that
    /// shows whether the server kept it.
    command: String,
}

/// `status --json`: the api's view with the files the server lost added.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusJson<'a, T: Serialize> {
    #[serde(flatten)]
    view: &'a T,
    lost_files: Vec<LostFileJson>,
}

/// A word for a shell as it is, or in single quotes when it holds anything a shell would read.
fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./=:,+@%".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `mneme team <action>` for the folder and policy this command ran with, to copy as it is.
fn command_for(action: &str, cwd: Option<&Path>, managed_dir: Option<&Path>) -> String {
    let mut c = String::from("mneme");
    if let Some(m) = managed_dir {
        c.push_str(&format!(" --managed-dir {}", shell_word(&m.to_string_lossy())));
    }
    c.push_str(&format!(" team {action}"));
    if let Some(d) = cwd {
        c.push_str(&format!(" --cwd {}", shell_word(&d.to_string_lossy())));
    }
    c
}

/// Runs a sync command against the real environment (with the global --managed-dir, if given);
/// errors print one line and exit 1.
pub fn run_command(cmd: SyncCommand, managed_dir: Option<PathBuf>) -> std::process::ExitCode {
    let mneme = crate::environment(managed_dir.clone()).map(|env| Mneme::new(env, Arc::new(SystemClock)));
    match mneme.and_then(|mneme| run(&mneme, cmd, managed_dir.as_deref())) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            crate::print::failure(&e);
            std::process::ExitCode::FAILURE
        }
    }
}

/// `managed_dir`: the global --managed-dir, repeated in the commands the status suggests.
pub fn run(mneme: &Mneme, cmd: SyncCommand, managed_dir: Option<&Path>) -> Result<()> {
    match cmd {
        SyncCommand::Status { cwd, json } => {
            let given = cwd.is_some();
            let cwd = cwd_or_current(cwd)?;
            let view = mneme.team_sync_status(&cwd)?;
            // The commands name the folder only when it was named here: otherwise they run
            // where this one ran.
            let command = |action: &str| command_for(action, given.then_some(cwd.as_path()), managed_dir);
            let lost = view.state.as_ref().map(|st| st.lost_files(&view.team_dir)).unwrap_or_default();
            if json {
                let lost_files = lost
                    .iter()
                    .map(|f| LostFileJson {
                        key: f.key.clone(),
                        times_lost: f.times_lost,
                        held_back: f.held_back,
                        sent_again: f.sent_again,
                        why: f.why(),
                        command: command(if f.sent_again { "pull" } else { "push" }),
                    })
                    .collect();
                return print_json(&StatusJson { view: &view, lost_files });
            }
            println!("Team folder:  {}", crate::print::safe_path(&view.team_dir));
            println!("Repository:   {}", safe(view.repo.as_deref().unwrap_or("none (no github.com `origin` remote)")));
            match (&view.server_url, view.server_url_source) {
                (Some(s), Some(src)) => println!("Server:       {} ({src})", safe(s)),
                _ => println!("Server:       none (run `mneme team login <URL>`)"),
            }
            println!(
                "Signed in:    {}",
                match (view.signed_in, &view.signed_in_as, &view.keyring_problem) {
                    (_, _, Some(problem)) => format!("unknown, pulls and pushes need the keyring: {}", safe(problem)),
                    (true, Some(u), None) => safe(u).into_owned(),
                    (true, None, None) => "yes".into(),
                    (false, _, None) => "no".into(),
                }
            );
            if let Some(problem) = &view.state_problem {
                // Not "never": what was synced is unknown until the file is dealt with.
                println!("Sync state:   unreadable: {}", safe(problem));
                return Ok(());
            }
            let Some(st) = &view.state else {
                println!("Last pull:    never");
                println!("Last push:    never");
                return Ok(());
            };
            for (label, o) in [("Last pull:   ", &st.last_pull), ("Last push:   ", &st.last_push)] {
                match o {
                    Some(o) => println!("{label} {} — {}{}", when(o.at_ms), if o.ok { "" } else { "failed: " }, safe(&o.summary)),
                    None => println!("{label} never"),
                }
            }
            if !st.skipped_for_secrets.is_empty() {
                let list: Vec<String> = st.skipped_for_secrets.iter().map(|s| s.describe()).collect();
                println!("Held back for secrets: {}. Take the secret out of each file and it is pushed on the next sync.", safe(&list.join(", ")));
            }
            if !st.skipped_over_cap.is_empty() {
                println!("Over the server's cap of {}: {}", st.server_max_entries.unwrap_or(0), safe(&st.skipped_over_cap.join(", ")));
            }
            for f in &lost {
                let (label, next) = match (f.held_back, f.sent_again) {
                    (true, _) => ("Held back:   ", format!("Send it again: {}", command("push"))),
                    (false, true) => ("Sent again:  ", format!("Check: {}", command("pull"))),
                    (false, false) => ("Lost:        ", format!("Send it now: {}", command("push"))),
                };
                // The folder in the command is the person's own, but shown as every path is.
                println!("{label} {} — {}. {}", safe(&f.key), f.why(), safe(&next));
            }
            match &st.suppressed {
                Some(s) => println!("Automatic pushes: suppressed since {} ({})", when(s.at_ms), safe(&s.reason)),
                None => println!("Automatic pushes: on"),
            }
            for c in st.conflicts.iter().rev().take(5) {
                println!("Conflict:     {} {:?} at {}{}", safe(&c.key), c.kind, when(c.at_ms), c.trash_id.as_deref().map(|t| format!(" (trash {t})")).unwrap_or_default());
            }
            Ok(())
        }
        SyncCommand::Pull { cwd, fresh, json } => {
            let r = mneme.team_pull_report(&cwd_or_current(cwd)?, fresh)?;
            if json {
                return print_json(&r);
            }
            println!("Pulled: {}", safe(&r.summary()));
            for s in &r.skipped {
                println!("  skipped {}: {}", safe(&s.key), safe(&s.reason));
            }
            Ok(())
        }
        SyncCommand::Push { cwd, json } => {
            let r = mneme.team_push_report(&cwd_or_current(cwd)?)?;
            if json {
                return print_json(&r);
            }
            println!("Pushed: {}", safe(&r.summary()));
            Ok(())
        }
        SyncCommand::Login { url } => {
            let server = mneme
                .team_server_for(url.as_deref())?
                .ok_or_else(|| anyhow!("give the team server's address: mneme team login <URL>"))?;
            let user = mneme.team_device_login(&server, |l| {
                println!("To sign in, open {} and enter the code {}", safe(&l.verification_uri), safe(&l.user_code));
                println!("(or open {})", safe(&l.verification_uri_complete));
                println!("Waiting for approval…");
            })?;
            println!("Signed in to {server}{}.", user.map(|u| format!(" as {}", safe(&u))).unwrap_or_default());
            Ok(())
        }
        SyncCommand::Logout { url } => {
            let server = mneme
                .team_server_for(url.as_deref())?
                .ok_or_else(|| anyhow!("no team server is configured; nothing to sign out of"))?;
            mneme.team_logout(&server)?;
            println!("Signed out of {server}; the token is gone from the OS keyring.");
            Ok(())
        }
    }
}

/// Text a team server or a teammate chose (keys, reasons, names, the sign-in page), with
/// anything a terminal would act on shown as an escape.
fn safe(s: &str) -> std::borrow::Cow<'_, str> {
    mneme_core::text::terminal_safe(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggested_commands_can_be_pasted_into_a_shell() {
        assert_eq!(command_for("push", None, None), "mneme team push");
        assert_eq!(command_for("pull", Some(Path::new("/work/shop")), None), "mneme team pull --cwd /work/shop");
        assert_eq!(
            command_for("push", Some(Path::new("/work/it's here")), Some(Path::new("/etc/claude code"))),
            "mneme --managed-dir '/etc/claude code' team push --cwd '/work/it'\\''s here'"
        );
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$HOME;rm"), "'$HOME;rm'");
    }
}
