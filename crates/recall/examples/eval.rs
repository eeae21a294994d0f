//! The recall evaluation: `npm run eval:recall` (or `scripts/recall-eval.sh`, or
//! `cargo run -p mneme-recall --example eval -- [--providers offline,anthropic] [--verbose] [--json]
//! [--tune min_score=1.2,synonyms=0.5]`).
//!
//! Runs every labelled prompt of `testdata/recall-eval/labels.json` (or of the `--labels` files;
//! given several, they run as one set) through recall with each
//! provider and prints recall@5, precision@5 and the share of no-memory prompts answered with nothing,
//! overall, for the paraphrase prompts and per folder. Offline always runs. A model provider runs
//! when it is configured — the provider chosen in Mneme's settings, Anthropic when
//! `ANTHROPIC_API_KEY` is set — or when named with `--providers`; the others are listed as
//! unavailable with the reason. Model providers are asked with Claude Code's selector model
//! (`ANTHROPIC_DEFAULT_SONNET_MODEL`, else `claude-sonnet-5`) unless the settings name one.

use mneme_core::SystemClock;
use anyhow::{anyhow, bail, Context};
use mneme_model::{build_provider, find_claude, keychain_for, ModelError, Provider, ProviderKind, ProviderSettings};
use mneme_recall::eval::{evaluate, evaluate_tuned, load_labels, Figures, Report};
use mneme_recall::offline::Tuning;
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
    /// One or more labelled sets; several are run as one (the combined figures).
    labels: Vec<PathBuf>,
    providers: Option<Vec<ProviderKind>>,
    verbose: bool,
    json: bool,
    sweep: bool,
    /// `--tune`: the offline ranker's knobs changed from the default for this run.
    tuning: Tuning,
}

fn parse_args() -> anyhow::Result<Options> {
    let mut o = Options { labels: Vec::new(), providers: None, verbose: false, json: false, sweep: false, tuning: Tuning::default() };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--labels" => o.labels.push(args.next().map(PathBuf::from).context("--labels needs a file")?),
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
            "--sweep" => o.sweep = true,
            "--tune" => o.tuning = parse_tuning(&args.next().context("--tune needs knob=value pairs, e.g. --tune min_score=1.2,synonyms=0.5")?, o.tuning)?,
            other => bail!("unknown argument '{other}' (use --labels FILE (repeat it to run several sets as one), --providers LIST, --verbose, --json, --sweep, --tune KNOB=VALUE,...)"),
        }
    }
    if o.labels.is_empty() {
        o.labels.push(PathBuf::from("testdata/recall-eval/labels.json"));
    }
    Ok(o)
}

/// `--tune min_score=1.2,synonyms=0.5`: a one-off run of the offline ranker with some
/// knobs changed, to try a setting without editing the defaults.
fn parse_tuning(list: &str, mut t: Tuning) -> anyhow::Result<Tuning> {
    for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').with_context(|| format!("'{pair}' is not knob=value"))?;
        let num = || value.parse::<f32>().with_context(|| format!("{key}: '{value}' is not a number"));
        let count = || value.parse::<u16>().with_context(|| format!("{key}: '{value}' is not a whole number from 0 to 65535"));
        match key {
            "relative_floor" => t.relative_floor = num()?,
            "part_floor" => t.part_floor = num()?,
            "min_score" => t.min_score = num()?,
            "min_words" => t.min_words = count()?.into(),
            "min_about_words" => t.min_about_words = count()?.into(),
            "link" => t.link = num()?,
            "synonyms" => t.synonyms = num()?,
            "synonym_max_senses" => t.synonym_max_senses = count()?,
            "folder_related" => t.folder_related = num()?,
            "near_cos" => t.near_cos = num()?,
            "min_near_share" => t.min_near_share = num()?,
            "phrases" => t.phrases = num()?,
            "second_look" => t.second_look = num()?,
            "min_confidence" => t.min_confidence = num()?,
            other => bail!("'{other}' is not a knob of the offline ranker (see mneme_recall::offline::Tuning)"),
        }
    }
    Ok(t)
}

fn environment() -> anyhow::Result<Environment> {
    Ok(Environment::from_process()?)
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
        settings.model = Some(selector_model(env, &mneme_core::versions::newest()));
    }
    build_provider(&settings, env, &keychain_for(env))
}

fn print_report(r: &Report, verbose: bool) {
    let row = |label: &str, f: &Figures| {
        println!(
            "  {:<44} {:>7} {:>8.3} {:>11.3} {:>9}",
            label,
            f.prompts,
            f.recall_at_5,
            f.precision_at_5,
            if f.no_memory == 0 { "-".to_string() } else { format!("{}/{}", f.silent, f.no_memory) }
        );
    };
    println!("{} ({}), {} errors", name(r.provider), r.model.as_deref().unwrap_or("no model"), r.errors);
    println!("  {:<44} {:>7} {:>8} {:>11} {:>9}", "", "prompts", "recall@5", "precision@5", "silent");
    row("all", &r.all);
    row("paraphrase prompts", &r.paraphrase);
    for (folder, f) in &r.folders {
        let short = folder.strip_prefix("testdata/realworld/").unwrap_or(folder).split('/').next().unwrap_or(folder);
        row(short, f);
    }
    if verbose {
        for o in &r.outcomes {
            let mark = if o.is_right() { "ok  " } else { "MISS" };
            let figures = match (o.recall, o.precision) {
                (Some(r), Some(p)) => format!("{r:.2}/{p:.2}"),
                _ => "none".to_string(),
            };
            println!("    {mark} {figures} [{:?}] {}", o.kind, o.prompt);
            println!("         got  {:?}", o.retrieved);
            if !o.is_right() {
                for (r, why) in o.retrieved.iter().zip(&o.reasons) {
                    println!("           {r}: {why}");
                }
            }
            if !o.is_right() {
                println!("         want {:?}", o.relevant);
            }
            if let Some(a) = &o.abstained {
                println!("         silent: {a}");
            }
            if let Some(e) = &o.error {
                println!("         error: {e}");
            }
        }
    }
    println!();
}

/// `--sweep`: the offline ranker over a grid of its knobs, one line each, so the trade-off
/// between answering and staying silent can be seen (docs/recall.md).
async fn sweep(labels: &mneme_recall::eval::Labels, root: &std::path::Path, env: &Environment) -> anyhow::Result<()> {
    println!("floor min_score words about link synonyms max_senses folder near_cos near_share phrases second_look confidence | recall@5 precision@5 silent paraphrase-recall@5");
    let base = Tuning::default();
    let mut grid = vec![base];
    for relative_floor in [0.5, 0.6, 0.7] {
        for min_score in [0.6, 0.8, 0.9, 1.0, 1.1, 1.2, 1.4] {
            for (min_words, min_about_words) in [(1, 1), (2, 0), (2, 1), (3, 1)] {
                grid.push(Tuning { relative_floor, min_score, min_words, min_about_words, ..base });
            }
        }
    }
    grid.push(Tuning { link: 0.3, ..base });
    for synonyms in [0.0, 0.3, 0.5, 0.6] {
        grid.push(Tuning { synonyms, ..base });
    }
    grid.push(Tuning { synonym_max_senses: 8, ..base });
    for folder_related in [0.0, 0.3, 0.7, 1.0] {
        grid.push(Tuning { folder_related, ..base });
    }
    grid.push(Tuning { synonym_max_senses: u16::MAX, ..base });
    for (near_cos, min_near_share) in [(0.0, 0.0), (0.3, 0.5), (0.35, 0.6), (0.4, 0.4), (0.4, 0.6), (0.4, 0.65), (0.45, 0.5), (0.5, 0.5)] {
        grid.push(Tuning { near_cos, min_near_share, ..base });
    }
    for phrases in [0.0, 0.4, 0.8, 0.9, 1.2] {
        grid.push(Tuning { phrases, ..base });
    }
    for second_look in [0.5, 0.9] {
        grid.push(Tuning { second_look, ..base });
    }
    for min_confidence in [0.0, 0.3, 0.35, 0.4, 0.5, 0.55, 0.6] {
        grid.push(Tuning { min_confidence, ..base });
    }
    for t in grid {
        let r = evaluate_tuned(labels, root, None, env, Arc::new(SystemClock), t).await;
        println!(
            "{:.1} {:.1} {} {} {:.1} {:.1} {} {:.1} {:.2} {:.2} {:.1} {:.1} {:.2} | {:.3} {:.3} {:.3} {:.3}",
            t.relative_floor,
            t.min_score,
            t.min_words,
            t.min_about_words,
            t.link,
            t.synonyms,
            t.synonym_max_senses,
            t.folder_related,
            t.near_cos,
            t.min_near_share,
            t.phrases,
            t.second_look,
            t.min_confidence,
            r.all.recall_at_5,
            r.all.precision_at_5,
            r.all.silent_share(),
            r.paraphrase.recall_at_5
        );
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let run = async {
        let o = parse_args()?;
        let env = environment()?;
        let mut labels = load_labels(&o.labels[0])?;
        for more in &o.labels[1..] {
            labels.prompts.extend(load_labels(more)?.prompts);
        }
        let files = o.labels.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" + ");
        let root = std::env::current_dir()?;
        if o.sweep {
            return sweep(&labels, &root, &env).await;
        }
        let saved = ProviderSettings::load(&env)?;
        let folders: std::collections::BTreeSet<&str> = labels.prompts.iter().map(|p| p.folder.as_str()).collect();
        if !o.json {
            println!("Recall evaluation: {} prompts in {} memory folders ({files})\n", labels.prompts.len(), folders.len());
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
            let report = match kind {
                ProviderKind::Offline => evaluate_tuned(&labels, &root, None, &env, Arc::new(SystemClock), o.tuning).await,
                _ => evaluate(&labels, &root, provider.as_deref(), &env, Arc::new(SystemClock)).await,
            };
            if report.errors == report.outcomes.len() {
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
