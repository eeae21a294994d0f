//! `mneme log`: KAIROS daily logs. `mneme log "TEXT"` appends one timestamped bullet to today's
//! `logs/YYYY/MM/YYYY-MM-DD.md` in the memory folder; `mneme log show` prints a day's log.

use crate::dream::Folder;
use anyhow::{anyhow, Result};
use clap::{Args, Subcommand};
use mneme_api::{Environment, SystemClock};
use mneme_dream::Dreams;
use std::sync::Arc;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LogArgs {
    /// What to log (one line; line breaks become spaces).
    #[arg(value_name = "TEXT")]
    pub text: Option<String>,
    #[command(flatten)]
    pub at: Folder,
    #[arg(long)]
    pub json: bool,
    #[command(subcommand)]
    pub action: Option<LogCommand>,
}

#[derive(Subcommand)]
pub enum LogCommand {
    /// Print a day's log.
    Show {
        /// The day (YYYY-MM-DD; default: today, local time).
        #[arg(long, value_name = "DATE")]
        date: Option<String>,
        #[command(flatten)]
        at: Folder,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(env: &Environment, args: LogArgs) -> Result<()> {
    let d = Dreams::new(env.clone(), Arc::new(SystemClock)).with_utc_offset(crate::local_offset());
    match (args.action, args.text) {
        (Some(LogCommand::Show { date, at, json }), _) => {
            let date = match date {
                Some(s) => Some(
                    mneme_dream::dates::parse_iso_date(&s)
                        .filter(|_| s.trim().len() == 10)
                        .ok_or_else(|| anyhow!("'{s}' is not a date; write it as YYYY-MM-DD"))?,
                ),
                None => None,
            };
            let dir = crate::dream::memory_dir_of(&d, &at)?;
            match d.read_log(&dir, date)? {
                (path, text) if json => {
                    println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "path": path, "text": text }))?)
                }
                (_, Some(text)) => print!("{text}"),
                (path, None) => println!("No log for that day ({} does not exist).", path.display()),
            }
        }
        (None, Some(text)) => {
            let dir = crate::dream::memory_dir_of(&d, &args.at)?;
            let appended = d.log(&dir, &text)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&appended)?);
            } else {
                println!("{} → {}", appended.line, appended.path.display());
            }
        }
        (None, None) => return Err(anyhow!("nothing to log: pass the text, as in mneme log \"prefers tabs\", or use mneme log show")),
    }
    Ok(())
}
