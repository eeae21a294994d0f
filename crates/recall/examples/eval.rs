//! The recall evaluation: `npm run eval:recall` (or `scripts/recall-eval.sh`, or
//! `cargo run -p mneme-recall --example eval -- [--providers offline,anthropic] [--verbose] [--json]`).
//!
//! Runs every labelled prompt of `testdata/recall-eval/labels.json` through recall with each
//! provider and prints recall@5 and precision@5. Offline always runs. A model provider runs
//! when it is configured — the provider chosen in Mneme's settings, Anthropic when
//! `ANTHROPIC_API_KEY` is set — or when named with `--providers`; the others are listed as
//! unavailable with the reason. Model providers are asked with Claude Code's selector model
//! (`ANTHROPIC_DEFAULT_SONNET_MODEL`, else `claude-sonnet-5`) unless the settings name one.

use mneme_core::SystemClock;
use anyhow::{anyhow, bail, Context};
use mneme_model::{build_provider, find_claude, keychain_for, ModelError, Provider, ProviderKind, ProviderSettings};
use mneme_recall::eval::{evaluate, load_labels, Report};
use mneme_recall::selector_model;
use mneme_store::Environment;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

const ALL: [ProviderKind; 4] = [ProviderKind::Offline, ProviderKind::Anthropic, ProviderKind::Openai, ProviderKind::ClaudeCli];

fn name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Offline => "offline",
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::Openai => "openai",
        ProviderKind::ClaudeCli => "claude-cli",
    }
}

struct Options {
    labels: PathBuf,
    providers: Option<Vec<ProviderKind>>,
    verbose: bool,
    json: bool,
}

fn parse_args() -> anyhow::Result<Options> {
    let mut o = Options { labels: PathBuf::from("testdata/recall-eval/labels.json"), providers: None, verbose: false, json: false };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--labels" => o.labels = args.next().map(PathBuf::from).context("--labels needs a file")?,
            "--providers" => {
                let list = args.next().context("--providers needs a comma list")?;
                let mut kinds = Vec::new();
                for n in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    let kind = ALL
                        .into_iter()
                        .find(|k| name(*k) == n)
                        .ok_or_else(|| anyhow!("'{n}' is not a provider. Use offline, anthropic, openai or claude-cli."))?;
                    kinds.push(kind);
                }
                o.providers = Some(kinds);
            }
            "--verbose" => o.verbose = true,
            "--json" => o.json = true,
            other => bail!("unknown argument '{other}' (use --labels FILE, --providers LIST, --verbose, --json)"),
        }
    }
    Ok(o)
}

fn environment() -> anyhow::Result<Environment> {
    let home = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute());
    let home = home.context("HOME is not set to an absolute folder; set it and try again")?;
    let mut env = Environment::with_home(home);
    env.vars = std::env::vars().collect();
    Ok(env)
}

/// Why a model provider is left out when it was not asked for by name; `None` when it counts
/// as configured.
fn unavailable_reason(kind: ProviderKind, saved: &ProviderSettings, env: &Environment) -> Option<String> {
    if saved.kind == kind {
        return None;
    }
    match kind {
        ProviderKind::Anthropic if env.var("ANTHROPIC_API_KEY").is_some_and(|k| !k.trim().is_empty()) => None,
        ProviderKind::Anthropic => Some("not configured (choose it in Settings → Model provider, set ANTHROPIC_API_KEY, or pass --providers anthropic)".into()),
        ProviderKind::Openai => Some("not configured (choose an OpenAI-compatible endpoint and model in Settings → Model provider)".into()),
        ProviderKind::ClaudeCli => match find_claude(env) {
            Some(path) => Some(format!("not run by default: each prompt is a headless Claude Code session ({}); pass --providers claude-cli", path.display())),
            None => Some("`claude` is not on the PATH".into()),
        },
        ProviderKind::Offline => None,
    }
}

fn build(kind: ProviderKind, saved: &ProviderSettings, env: &Environment) -> Result<Arc<dyn Provider>, ModelError> {
    let mut settings = if saved.kind == kind { saved.clone() } else { ProviderSettings { kind, ..ProviderSettings::default() } };
    if matches!(kind, ProviderKind::Anthropic | ProviderKind::ClaudeCli) && settings.model.as_deref().is_none_or(|m| m.trim().is_empty()) {
        settings.model = Some(selector_model(env));
    }
    build_provider(&settings, env, &keychain_for(env))
}

fn print_report(r: &Report, verbose: bool) {
    println!(
        "{:<11} {:<22} {:>8.3} {:>11.3} {:>6} {:>7}",
        name(r.provider),
        r.model.as_deref().unwrap_or("-"),
        r.recall_at_5,
        r.precision_at_5,
        r.empty,
        r.errors
    );
    if verbose {
        for o in &r.outcomes {
            let mark = if o.recall >= 1.0 { "ok  " } else { "MISS" };
            println!("    {mark} {:.2}/{:.2} {}", o.recall, o.precision, o.prompt);
            println!("         got  {:?}", o.retrieved);
            if o.recall < 1.0 {
                println!("         want {:?}", o.relevant);
            }
            if let Some(e) = &o.error {
                println!("         error: {e}");
            }
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let run = async {
        let o = parse_args()?;
        let env = environment()?;
        let labels = load_labels(&o.labels)?;
        let root = std::env::current_dir()?;
        let saved = ProviderSettings::load(&env)?;
        let folders: std::collections::BTreeSet<&str> = labels.prompts.iter().map(|p| p.folder.as_str()).collect();
        if !o.json {
            println!("Recall evaluation: {} prompts in {} memory folders ({})\n", labels.prompts.len(), folders.len(), o.labels.display());
            println!("{:<11} {:<22} {:>8} {:>11} {:>6} {:>7}", "provider", "model", "recall@5", "precision@5", "empty", "errors");
        }
        let mut reports = Vec::new();
        let mut unavailable = Vec::new();
        for kind in ALL {
            let left_out = match &o.providers {
                Some(list) => (!list.contains(&kind)).then(|| "not requested".to_string()),
                None => unavailable_reason(kind, &saved, &env),
            };
            if let Some(why) = left_out {
                unavailable.push((kind, why));
                continue;
            }
            let provider = match kind {
                ProviderKind::Offline => None,
                _ => match build(kind, &saved, &env) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        unavailable.push((kind, e.to_string()));
                        continue;
                    }
                },
            };
            let report = evaluate(&labels, &root, provider.as_deref(), &env, Arc::new(SystemClock)).await;
            if report.errors == report.prompts {
                let first = report.outcomes.iter().find_map(|o| o.error.clone()).unwrap_or_default();
                unavailable.push((kind, format!("every request failed: {first}")));
                continue;
            }
            if !o.json {
                print_report(&report, o.verbose);
            }
            reports.push(report);
        }
        if o.json {
            let unavailable: Vec<_> = unavailable.iter().map(|(k, why)| serde_json::json!({"provider": name(*k), "reason": why})).collect();
            let out = serde_json::json!({"reports": reports, "unavailable": unavailable});
            println!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            for (kind, why) in &unavailable {
                println!("{:<11} unavailable: {why}", name(*kind));
            }
        }
        anyhow::Ok(())
    };
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("recall-eval: {e:#}");
            ExitCode::FAILURE
        }
    }
}
