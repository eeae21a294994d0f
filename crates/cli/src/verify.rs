//! `mneme verify`: run the user's own Claude Code once, offline, and say whether Mneme shows
//! exactly what it sends. Exit 0 when it matches, 1 with each difference, 2 when the check
//! could not run (no Claude Code, a timeout, a bad folder).

use anyhow::Result;
use clap::Args;
use mneme_api::{ContextRequest, Environment, Mneme, SystemClock, VerifyOptions, VerifyReport};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct VerifyArgs {
    /// The folder Claude Code would be started in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Claude Code's --setting-sources (comma list of user, project, local).
    #[arg(long, value_name = "LIST")]
    setting_sources: Option<String>,
    /// Claude Code's --add-dir (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    add_dirs: Vec<PathBuf>,
    /// The claude binary to run (default: the one you run, as `mneme claude-code` finds it).
    #[arg(long, value_name = "PATH")]
    claude_bin: Option<PathBuf>,
    /// Stop Claude Code after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    timeout: u64,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(env: Result<Environment>, utc_offset: i32, args: VerifyArgs) -> ExitCode {
    match check(env, utc_offset, &args) {
        Ok(report) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
            } else {
                print(&report);
            }
            match report.status.as_str() {
                "match" => ExitCode::SUCCESS,
                "differ" => ExitCode::from(1),
                _ => ExitCode::from(2),
            }
        }
        Err(e) => {
            if args.json {
                println!("{}", serde_json::json!({"status": "failed", "summary": e.to_string()}));
            }
            crate::print::failure(&e);
            ExitCode::from(2)
        }
    }
}

fn check(env: Result<Environment>, utc_offset: i32, args: &VerifyArgs) -> Result<VerifyReport> {
    let mneme = Mneme::new(env?, Arc::new(SystemClock)).with_utc_offset(utc_offset);
    let here = crate::current_dir()?;
    let cwd = args.cwd.as_ref().map_or_else(|| here.clone(), |c| here.join(c));
    let req = ContextRequest {
        cwd,
        setting_sources: args.setting_sources.clone(),
        add_dirs: args.add_dirs.iter().map(|d| here.join(d)).collect(),
        ..ContextRequest::default()
    };
    let opts = VerifyOptions {
        claude_bin: args.claude_bin.as_ref().map(|b| here.join(b)),
        timeout: Some(std::time::Duration::from_secs(args.timeout.max(1))),
    };
    Ok(mneme.verify_with(&req, &opts)?)
}

fn print(r: &VerifyReport) {
    if r.status == "failed" {
        eprintln!("mneme: {}", r.summary);
        return;
    }
    println!("{}", r.summary);
    for d in &r.differences {
        println!();
        println!("- {}", d.detail);
        if d.claude.is_some() || d.mneme.is_some() {
            side_by_side(d.claude.as_deref().unwrap_or("(nothing)"), d.mneme.as_deref().unwrap_or("(nothing)"));
        }
    }
}

/// Claude Code's lines on the left, Mneme's on the right, at most 60 columns each.
fn side_by_side(left: &str, right: &str) {
    const W: usize = 60;
    let cut = |s: &str| -> String {
        let s = s.replace('\t', "    ");
        if s.chars().count() > W { s.chars().take(W - 1).collect::<String>() + "…" } else { s }
    };
    let (l, r): (Vec<&str>, Vec<&str>) = (left.lines().collect(), right.lines().collect());
    println!("  {:<W$} | Mneme", "Claude Code");
    for i in 0..l.len().max(r.len()).min(20) {
        let a = cut(l.get(i).copied().unwrap_or(""));
        let b = cut(r.get(i).copied().unwrap_or(""));
        let mark = if l.get(i) == r.get(i) { ' ' } else { '≠' };
        println!("{mark} {a:<W$} | {b}");
    }
}
