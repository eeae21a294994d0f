//! `mneme recall "PROMPT"`: which memories Claude Code would surface for a prompt typed in a
//! folder, in order, with why. The selection is Claude Code's side query through the
//! configured model provider, or Mneme's offline ranker.

use anyhow::{anyhow, Result};
use clap::Args;
use mneme_api::records::recall::{ProviderKind, RecallResult, Truncation};
use crate::print::{safe, safe_path};
use mneme_api::{ContextRequest, Mneme, RenderedFor};
use mneme_core::versions::ClaudeVersion;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct RecallArgs {
    /// The prompt, as typed into Claude Code. Quote it to keep its spacing; words left
    /// unquoted are joined with one space (`mneme recall how do I indent` asks "how do I indent").
    #[arg(value_name = "PROMPT", required = true, num_args = 1..)]
    pub prompt: Vec<String>,
    /// The folder Claude Code would be started in (default: the current folder).
    #[arg(long, value_name = "DIR", conflicts_with = "memory_dir")]
    pub cwd: Option<PathBuf>,
    /// A memory folder to search instead of the folder's auto memory.
    #[arg(long, value_name = "DIR")]
    pub memory_dir: Option<PathBuf>,
    /// offline, claude-cli, anthropic or openai (default: the provider in Settings).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Ask and surface as this Claude Code release does (default: the installed one, else the
    /// newest release Mneme checks).
    #[arg(long = "claude-version", value_name = "X.Y.Z")]
    pub claude_version: Option<ClaudeVersion>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output<'a> {
    memory_dir: &'a Path,
    claude_code: &'a RenderedFor,
    #[serde(flatten)]
    result: &'a RecallResult,
}

fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() { p.to_path_buf() } else { crate::current_dir()?.join(p) })
}

pub fn run(mneme: &Mneme, args: RecallArgs) -> Result<()> {
    let memory_dir = match &args.memory_dir {
        Some(dir) => {
            let dir = absolute(dir)?;
            match std::fs::metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => anyhow::bail!("--memory-dir {} is a file, not a folder; pass the folder that holds MEMORY.md and the topic files", dir.display()),
                Err(_) => anyhow::bail!("--memory-dir {} does not exist; check the path (`mneme context` shows a project's memory folder)", dir.display()),
            }
            dir
        }
        None => {
            let cwd = match &args.cwd {
                Some(c) => absolute(c)?,
                None => crate::current_dir()?,
            };
            let req = ContextRequest { cwd, claude_version: args.claude_version, ..ContextRequest::default() };
            let auto = mneme.context(&req)?.auto_memory;
            if !auto.enabled {
                eprintln!("note: auto memory is off here ({}); Claude Code would recall nothing.", safe(&auto.reason));
            }
            auto.dir
        }
    };
    let (result, claude_code) = mneme.recall_result(&args.prompt.join(" "), &memory_dir, args.provider.as_deref(), args.claude_version)?;
    if args.json {
        let out = Output { memory_dir: &memory_dir, claude_code: &claude_code, result: &result };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print(&result, &memory_dir, &claude_code);
    }
    match (&result.error, result.selected.is_empty()) {
        (Some(e), true) => Err(anyhow!("nothing recalled: {e}")),
        _ => Ok(()),
    }
}

fn print(r: &RecallResult, memory_dir: &Path, claude_code: &RenderedFor) {
    let by = match &r.model {
        Some(model) => format!("{} via {}", safe(model), kind_name(r.provider)),
        None => "the offline ranker".to_string(),
    };
    if let Some(why) = r.skipped {
        println!("Nothing recalled: {}.", safe(&why.to_string()));
        return;
    }
    if r.selected.is_empty() {
        if r.error.is_none() {
            println!("Nothing recalled from {} (chosen by {by}).", safe_path(memory_dir));
        }
        if let Some(why) = &r.abstained {
            println!("Why: {}.", safe(&why.to_string()));
        }
        return;
    }
    let n = r.selected.len();
    println!("{n} {} recalled from {} (chosen by {by}):", if n == 1 { "memory" } else { "memories" }, safe_path(memory_dir));
    if let Some(prompt) = &r.selector_prompt {
        // The release decides the selector's model, limits and schema. The source names the
        // installed Claude Code's path and, when its prompt could not be cut, bytes of it.
        println!("Asked with {}. {}", safe(&prompt.describe()), claude_code.note);
    }
    for (i, m) in r.selected.iter().enumerate() {
        let cut = match m.truncated {
            Some(Truncation::ByteLimit) => " [cut at 4,096 bytes]",
            Some(Truncation::LineLimit) => " [cut at 200 lines]",
            None => "",
        };
        println!("{}. {} \u{2014} {}{cut}", i + 1, safe(&m.rel_path), safe(&m.name));
        match m.score {
            Some(score) => println!("   {} (score {score:.2})", safe(&m.reason)),
            None => println!("   {}", safe(&m.reason)),
        }
    }
    if let (Some(chance), Some(first)) = (r.first_confidence(), r.selected.first()) {
        println!("The offline ranker puts the chance that {} is relevant at about {:.0}%.", safe(&first.rel_path), chance * 100.0);
    }
}

fn kind_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Offline => "offline",
        ProviderKind::ClaudeCli => "claude-cli",
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::Openai => "openai",
    }
}
