//! `mneme extract`: run memory extraction over one Claude Code session transcript, from where
//! the last extraction of that session stopped. Offline (explicit statements only) unless a
//! provider is named. Text for people, `--json` for scripts.

use crate::print::{safe, safe_lines, safe_path};
use anyhow::{bail, Result};
use clap::Args;
use mneme_api::records::extract::{Decision, RunOutcome, RunRecord, SkipReason};
use mneme_api::records::{Cancel, ModelChoice};
use mneme_api::Mneme;
use std::path::PathBuf;

#[derive(Args)]
pub struct ExtractArgs {
    /// A Claude Code session transcript: <config>/projects/<project>/<session>.jsonl.
    #[arg(long, value_name = "FILE")]
    transcript: PathBuf,
    /// offline (the default: explicit "remember …" statements only), claude-cli, anthropic or
    /// openai (configured in Settings).
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Put what is found in the inbox for review, even if the project saves automatically.
    #[arg(long)]
    review: bool,
    #[arg(long)]
    json: bool,
}

pub fn run(mneme: &Mneme, args: ExtractArgs) -> Result<()> {
    let transcript = if args.transcript.is_absolute() { args.transcript } else { crate::current_dir()?.join(args.transcript) };
    // Offline unless a provider is named: extraction over a file is asked for explicitly.
    let model = args.provider.as_deref().map_or(ModelChoice::Offline, ModelChoice::Named);
    let cancel = Cancel::new();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let records = runtime.block_on(async {
        let run = mneme.extract_transcript(&transcript, model, args.review, &cancel);
        tokio::pin!(run);
        tokio::select! {
            r = &mut run => r,
            _ = tokio::signal::ctrl_c() => {
                cancel.cancel();
                run.await
            }
        }
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&records)?);
    } else {
        for r in &records {
            print_record(r);
        }
    }
    match records.iter().find_map(|r| match &r.outcome {
        RunOutcome::Failed { error } => Some(error.clone()),
        _ => None,
    }) {
        Some(error) => bail!("extraction failed: {error}. Nothing was written; the same messages are offered again next time."),
        None => Ok(()),
    }
}

/// A saved run recorded without its line (before runs named what they removed): a run that
/// only removed memories must not read as one that saved something.
fn unlined_saved(r: &RunRecord) -> String {
    let removed = r.changeset.as_ref().map_or(0, |c| {
        c.changes.iter().filter(|f| f.after.is_none() && f.path.file_name().is_some_and(|n| n != "MEMORY.md")).count()
    });
    if r.memory_paths.is_empty() && removed > 0 {
        format!("Removed {removed} {} from {}", if removed == 1 { "memory" } else { "memories" }, safe_path(&r.about.memory_dir))
    } else {
        format!("Saved changes to {}", safe_path(&r.about.memory_dir))
    }
}

fn print_record(r: &RunRecord) {
    match &r.outcome {
        RunOutcome::Saved => match &r.message {
            Some(m) => println!("{}", safe_lines(m)),
            None => println!("{}", unlined_saved(r)),
        },
        RunOutcome::Staged { inbox_id } => {
            let n = r.changeset.as_ref().map_or(0, |c| {
                c.changes.iter().filter(|f| f.path.file_name().is_some_and(|n| n != "MEMORY.md")).count()
            });
            println!(
                "{n} {} waiting for review as inbox item {inbox_id} (mneme inbox show {inbox_id})",
                if n == 1 { "memory" } else { "memories" }
            );
        }
        RunOutcome::NothingToSave => println!("Nothing to save."),
        RunOutcome::Skipped { reason } => println!(
            "Skipped: {}",
            match reason {
                SkipReason::DirectWrite => "the session already wrote memory itself since the last extraction",
                SkipReason::NoProse => "no new message from the user since the last extraction",
                SkipReason::Throttled => "waiting for more turns (extraction runs every N turns)",
                SkipReason::Stashed => "an extraction is already running; this turn goes into its trailing run",
            }
        ),
        RunOutcome::Disabled { why } => println!("Not run: {}", safe(why)),
        RunOutcome::Failed { .. } => {}
    }
    if let Some(left_out) = &r.left_out {
        println!("  left out: {left_out}");
    }
    for d in &r.decisions {
        if let Decision::Rejected { sentence, reason } = d {
            println!("  not saved: \"{}\" — {}", safe(sentence), reason.rule());
        }
    }
    for d in &r.denials {
        println!("  refused {}: {}", safe(&d.tool), safe_lines(&d.message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_record_of_a_run_that_only_removed_says_so() {
        let m = std::path::PathBuf::from("/p/memory");
        let change = |name: &str, after: Option<&str>| serde_json::json!({"path": m.join(name), "before": "x", "after": after, "reason": "forget"});
        let record = |changes: Vec<serde_json::Value>| {
            serde_json::from_value::<RunRecord>(serde_json::json!({
                "id": "1", "startedMs": 0, "startedAt": "", "memoryDir": m, "projectRoot": "/p", "sessionId": null,
                "transcript": "/t", "trigger": "requested", "engine": "offline", "model": null, "newMessageCount": 1,
                "outcome": {"kind": "saved"}, "writtenPaths": [], "memoryPaths": [], "teamCount": 0, "message": null,
                "changeset": {"root": m, "changes": changes}, "turns": 0, "denials": [], "decisions": []
            }))
            .unwrap()
        };
        let only_removed = record(vec![change("a.md", None), change("MEMORY.md", Some(""))]);
        assert!(unlined_saved(&only_removed).starts_with("Removed 1 memory from "), "{}", unlined_saved(&only_removed));
        assert!(unlined_saved(&record(vec![change("MEMORY.md", Some(""))])).starts_with("Saved changes to "));
    }
}
