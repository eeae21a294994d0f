//! `mneme log`: KAIROS daily logs. `mneme log "TEXT"` appends one timestamped bullet to today's
//! `logs/YYYY/MM/YYYY-MM-DD.md` in the memory folder; `mneme log show` prints a day's log.

use crate::dream::{folder, Folder};
use anyhow::{anyhow, Result};
use clap::{Args, Subcommand};
use mneme_api::Mneme;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LogArgs {
    /// What to log (one line; line breaks become spaces).
    #[arg(value_name = "TEXT", allow_hyphen_values = true)]
    pub text: Option<String>,
    #[command(flatten)]
    pub at: Folder,
    #[arg(long)]
    pub json: bool,
    #[command(subcommand)]
    pub action: Option<LogCommand>,
}

#[derive(Subcommand)]
#[command(defer = true)]
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

pub fn run(mneme: &Mneme, args: LogArgs) -> Result<()> {
    match (args.action, args.text) {
        (Some(LogCommand::Show { date, at, json }), _) => {
            match mneme.daily_log_text(&folder(&at)?, date.as_deref())? {
                (path, text) if json => {
                    println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "path": path, "text": text }))?)
                }
                (_, Some(text)) => print!("{text}"),
                (path, None) => println!("No log for that day ({} does not exist).", crate::print::safe_path(&path)),
            }
        }
        (None, Some(text)) => {
            let appended = mneme.append_log_line(&folder(&args.at)?, &text)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&appended)?);
            } else {
                println!("{} → {}", crate::print::safe(&appended.line), crate::print::safe_path(&appended.path));
            }
        }
        (None, None) => return Err(anyhow!("nothing to log: pass the text, as in mneme log \"prefers tabs\", or use mneme log show")),
    }
    Ok(())
}
