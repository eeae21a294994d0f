//! `mneme inbox`: what extraction staged for review — list, show, keep, edit, discard, promote
//! to CLAUDE.md or team memory — and the project's review mode. Text for people, `--json` for
//! scripts.

use crate::print::{safe, safe_path};
use anyhow::{anyhow, Result};
use clap::{Args, Subcommand};
use mneme_api::records::extract::{InboxItem, ItemStatus, PromoteTarget, ProposalAction, ReviewMode};
use mneme_api::Mneme;
use std::path::PathBuf;

#[derive(Args)]
pub struct InboxArgs {
    #[command(subcommand)]
    action: Option<InboxCommand>,
    /// The folder Claude Code would be started in (default: the current folder).
    #[arg(long, value_name = "DIR", global = true)]
    cwd: Option<PathBuf>,
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
#[command(defer = true)]
enum InboxCommand {
    /// Items waiting for review for this project, newest first.
    List {
        /// Also kept, discarded and promoted items.
        #[arg(long)]
        history: bool,
        /// Every project's items.
        #[arg(long)]
        all: bool,
    },
    /// One item with every change it proposes.
    Show { id: String },
    /// Write the item to the memory folder: each memory together with its index line.
    Keep { id: String },
    /// Replace the proposed content of one file of the item (from --content or standard
    /// input), then keep it unless --no-keep.
    Edit {
        id: String,
        /// The file, by name or path inside the memory folder.
        file: String,
        /// The file's new text (default: standard input); it may start with a dash.
        #[arg(long, allow_hyphen_values = true)]
        content: Option<String>,
        #[arg(long)]
        no_keep: bool,
    },
    /// Drop the item; nothing is written (it stays in the history).
    Discard { id: String },
    /// Put the item's memories into CLAUDE.md, CLAUDE.local.md or team memory instead.
    Promote {
        id: String,
        #[arg(long, value_name = "claude-md|claude-local|team")]
        to: String,
    },
    /// Show or set what happens to what extraction finds here: automatic (the default, as
    /// Claude Code: written at once), review (held in the inbox) or off (no extraction).
    Mode {
        #[arg(value_name = "MODE")]
        mode: Option<String>,
    },
}

fn cwd(arg: &Option<PathBuf>) -> Result<PathBuf> {
    // The current folder is asked for only when needed: it may have been deleted, and then
    // `crate::current_dir` says so and what to do.
    crate::existing_cwd(match arg {
        Some(c) if c.is_absolute() => c.clone(),
        Some(c) => crate::current_dir()?.join(c),
        None => crate::current_dir()?,
    })
}

/// The decision went through, but old decided items it should have deleted are still there
/// (the JSON carries them as `notPruned`): said on stderr so a script reading stdout is not
/// confused, and so the user knows why the inbox folder keeps growing.
fn warn_not_pruned(item: &InboxItem) {
    for n in &item.not_pruned {
        eprintln!("warning: could not delete the old inbox item {}: {} (the next decision tries again; remove it by hand if this repeats)", safe_path(&n.path), safe(&n.error));
    }
}

pub fn run(mneme: &Mneme, args: InboxArgs) -> Result<()> {
    let memory_dir = || -> Result<PathBuf> { Ok(mneme.extraction_memory_dir(&cwd(&args.cwd)?)) };
    let as_json = args.json;
    let done = |item: &InboxItem, what: &str| -> Result<()> {
        if as_json {
            println!("{}", serde_json::to_string_pretty(item)?);
        } else {
            println!("{what} {}", item.id);
            warn_not_pruned(item);
        }
        Ok(())
    };
    match args.action.unwrap_or(InboxCommand::List { history: false, all: false }) {
        InboxCommand::List { history, all } => {
            let dir = if all { None } else { Some(memory_dir()?) };
            let items = mneme.inbox_items(dir.as_deref(), history)?;
            // Not in any list, and not any one project's: named wherever the inbox is listed.
            let damaged = mneme.damaged_inbox_items()?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&items)?);
            } else if items.is_empty() && damaged.is_empty() {
                println!("Nothing waiting for review.");
            } else {
                for i in &items {
                    println!("{}", summary_line(i));
                }
            }
            for d in &damaged {
                eprintln!("{}", safe(d));
            }
        }
        InboxCommand::Show { id } => {
            let item = mneme.inbox_item(&id)?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&item)?);
            } else {
                print_item(&item);
            }
        }
        InboxCommand::Keep { id } => done(&mneme.keep_inbox_item(&id)?, "Kept")?,
        InboxCommand::Edit { id, file, content, no_keep } => {
            let content = match content {
                Some(c) => c,
                None => crate::read_text("the file's new text", "or pass it with --content TEXT")?,
            };
            if no_keep {
                done(&mneme.edit_inbox_item(&id, &file, content, false)?, "Edited")?;
            } else {
                done(&mneme.edit_inbox_item(&id, &file, content, true)?, "Edited and kept")?;
            }
        }
        InboxCommand::Discard { id } => done(&mneme.discard_inbox_item(&id)?, "Discarded")?,
        InboxCommand::Promote { id, to } => {
            let target = PromoteTarget::parse(&to)
                .ok_or_else(|| anyhow!("'{to}' is not a place to promote to. Use claude-md, claude-local or team."))?;
            let item = mneme.promote_inbox_item(&id, target)?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&item)?);
            } else if let ItemStatus::Promoted { paths, .. } = &item.status {
                for p in paths {
                    println!("Promoted {} to {}", item.id, safe_path(p));
                }
                warn_not_pruned(&item);
            }
        }
        InboxCommand::Mode { mode } => {
            let dir = memory_dir()?;
            let current = match mode {
                Some(m) => {
                    let m = ReviewMode::parse(m.trim())
                        .ok_or_else(|| anyhow!("'{m}' is not a mode. Use automatic, review or off."))?;
                    mneme.set_review_mode_at(&dir, m)?;
                    m
                }
                None => mneme.review_mode_at(&dir)?,
            };
            if as_json {
                println!("{}", serde_json::json!({ "memoryDir": dir, "mode": current }));
            } else {
                println!("{} ({})", current.as_str(), safe_path(&dir));
            }
        }
    }
    Ok(())
}

fn status_word(s: &ItemStatus) -> String {
    match s {
        ItemStatus::Pending => "pending".into(),
        ItemStatus::Kept { .. } => "kept".into(),
        ItemStatus::Discarded { .. } => "discarded".into(),
        ItemStatus::Promoted { to, .. } => format!(
            "promoted to {}",
            match to {
                PromoteTarget::ClaudeMd => "CLAUDE.md",
                PromoteTarget::ClaudeLocal => "CLAUDE.local.md",
                PromoteTarget::Team => "team memory",
            }
        ),
    }
}

fn summary_line(i: &InboxItem) -> String {
    let names: Vec<String> = i
        .proposals
        .iter()
        .map(|p| {
            let verb = match p.action {
                ProposalAction::New => "+",
                ProposalAction::Update => "~",
                ProposalAction::Remove => "-",
            };
            format!("{verb}{}", safe(&p.rel_path))
        })
        .collect();
    let status = if i.status == ItemStatus::Pending { String::new() } else { format!(" [{}]", status_word(&i.status)) };
    format!("{}  {}  {}{status}", safe(&i.id), safe(&i.created_at), names.join(" "))
}

fn print_item(i: &InboxItem) {
    println!("Inbox item {} ({})", safe(&i.id), status_word(&i.status));
    println!("  created:    {}", safe(&i.created_at));
    println!("  by:         {}", safe(&i.source));
    println!("  project:    {}", safe_path(&i.project_root));
    println!("  memory:     {}", safe_path(&i.memory_dir));
    if let Some(s) = &i.session_id {
        println!("  session:    {}", safe(s));
    }
    if let Some(t) = &i.transcript {
        println!("  transcript: {}", safe_path(t));
    }
    for c in &i.changeset.changes {
        let rel = safe_path(c.path.strip_prefix(&i.changeset.root).unwrap_or(&c.path));
        let what = match (&c.before, &c.after) {
            (None, _) => "new",
            (Some(_), Some(_)) => "update",
            (Some(_), None) => "remove",
        };
        println!();
        println!("{what} {rel}");
        // The api's line diff, as the app shows it: a new file is all `+`, a removal all `-`.
        let diff = mneme_api::line_diff(c.before.as_deref().unwrap_or_default(), c.after.as_deref().unwrap_or_default());
        for l in diff.lines {
            let sign = match l.op {
                mneme_api::DiffOp::Same => ' ',
                mneme_api::DiffOp::Removed => '-',
                mneme_api::DiffOp::Added => '+',
            };
            println!("{sign} {}", safe(&l.text));
        }
    }
}
