//! `mneme daemon`: the background scheduler (extraction on turn ends, auto-dream gate checks,
//! team sync) for machines without a display, plus the systemd user unit that keeps it running.

use anyhow::{anyhow, Context, Result};
use clap::{Args, Subcommand};
use mneme_api::{Environment, Mneme, SystemClock};
use mneme_scheduler::{Event, Jobs, Outcome, RunRecord, SchedulerConfig};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long stopping waits for runs in flight (a dream rolls its lock back, team sync pushes
/// once more) before the daemon exits anyway; a second Ctrl-C or SIGTERM does not wait at all.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DaemonArgs {
    #[command(subcommand)]
    action: Option<DaemonCommand>,
    #[command(flatten)]
    run: RunFlags,
}

#[derive(Args, Default)]
struct RunFlags {
    /// Don't run extraction at turn ends.
    #[arg(long)]
    no_extraction: bool,
    /// Don't check auto-dream gates or dream.
    #[arg(long)]
    no_dream: bool,
    /// Don't sync team memory.
    #[arg(long)]
    no_team: bool,
    /// Also keep each session's notes file (session memory); needs a model provider.
    #[arg(long)]
    session_memory: bool,
    /// Print every event as a JSON line instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
#[command(defer = true)]
enum DaemonCommand {
    /// Write the systemd user unit that runs `mneme daemon` at login, and print how to enable it.
    InstallUnit {
        /// Print the unit instead of writing it.
        #[arg(long)]
        print: bool,
    },
    /// The most recent background runs, newest first.
    Runs {
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(mneme: &Mneme, args: DaemonArgs) -> Result<()> {
    match args.action {
        Some(DaemonCommand::InstallUnit { print }) => install_unit(mneme.environment(), print),
        Some(DaemonCommand::Runs { limit, json }) => runs(mneme, limit, json),
        None => daemon(mneme.environment(), args.run),
    }
}

fn daemon(env: &Environment, flags: RunFlags) -> Result<()> {
    let jobs = Jobs { extraction: !flags.no_extraction, session_memory: flags.session_memory, dream: !flags.no_dream, team: !flags.no_team };
    let mut config = SchedulerConfig::new(env.clone(), Arc::new(SystemClock));
    config.jobs = jobs;
    config.claude_code_check = Some(Arc::new(mneme_api::ScheduledClaudeCheck(mneme_api::Mneme::new(env.clone(), Arc::new(SystemClock)))));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let result = runtime.block_on(async move {
        let handle = mneme_scheduler::start(config)?;
        let mut events = handle.subscribe();
        handle.ready().await;
        let on = |b: bool| if b { "on" } else { "off" };
        note(&format!(
            "mneme daemon: extraction {}, dream {}, team sync {}, session notes {}; run log {}. Ctrl-C or SIGTERM stops it.",
            on(jobs.extraction),
            on(jobs.dream),
            on(jobs.team),
            on(jobs.session_memory),
            handle.run_log().path().display()
        ));
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut printing = true;
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                ev = events.recv() => match ev {
                    Ok(ev) if printing => {
                        // Standard output gone (a closed pipe, a full disk) ends the printing, not
                        // the daemon: the jobs go on, and the run log keeps every run.
                        if let Err(e) = print_event(&ev, flags.json) {
                            printing = false;
                            note(&format!(
                                "mneme daemon: cannot write to standard output ({e}); carrying on without printing runs (`mneme daemon runs` shows them from {})",
                                handle.run_log().path().display()
                            ));
                        }
                    }
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => note(&format!("mneme daemon: {n} events were not shown (the run log has them)")),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
            }
        }
        note(&format!("mneme daemon: stopping (finishing runs in flight, at most {} s; Ctrl-C again stops at once)…", SHUTDOWN_GRACE.as_secs()));
        tokio::select! {
            stopped = tokio::time::timeout(SHUTDOWN_GRACE, handle.shutdown()) => {
                if stopped.is_err() {
                    note("mneme daemon: runs still in flight were cut short");
                }
            }
            _ = tokio::signal::ctrl_c() => stop_now(),
            _ = term.recv() => stop_now(),
        }
        anyhow::Ok(())
    });
    // Whatever is left on the blocking pool (a team push cut short above) is abandoned rather
    // than waited for: dropping the runtime would wait for it without limit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// A second Ctrl-C or SIGTERM while stopping: exit without waiting for runs in flight. Every
/// file Mneme writes is replaced atomically, and a dream cut short while writing is recorded
/// as applying, with the earlier text of every file, so undo puts back what it changed.
fn stop_now() -> ! {
    note("mneme daemon: stopped at once");
    std::process::exit(130)
}

/// A line on standard error. A daemon whose standard error is gone has nowhere to say so, and
/// must not panic over it as `eprintln!` would.
fn note(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

fn print_event(ev: &Event, json: bool) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(ev)?)?;
    } else if let Event::Finished { record } = ev {
        writeln!(out, "{}", record_line(record))?;
    } else if let Event::Progress { job, message, .. } = ev {
        writeln!(out, "[{}] {message}", job.label())?;
    }
    out.flush()?;
    Ok(())
}

fn record_line(r: &RunRecord) -> String {
    let what = match &r.outcome {
        Outcome::Done { summary } => summary.replace('\n', " · "),
        Outcome::Skipped { reason } => format!("skipped: {reason}"),
        Outcome::Failed { error } => format!("failed: {error}"),
        Outcome::Cancelled => "cancelled".into(),
    };
    format!("[{}] {}: {what}", r.job.label(), r.target)
}

fn runs(mneme: &Mneme, limit: usize, json: bool) -> Result<()> {
    let records = mneme.background_run_records(limit)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&records)?);
    } else if records.is_empty() {
        println!("No background runs yet. `mneme daemon` (or the desktop app) runs extraction, dream and team sync.");
    } else {
        for r in &records {
            println!("{}", record_line(r));
        }
    }
    Ok(())
}

/// The unit: restarted on failure, started with the user's session.
fn unit_text(exe: &std::path::Path) -> String {
    format!(
        "[Unit]\n\
         Description=Mneme: background memory jobs for Claude Code (extraction, auto dream, team sync)\n\
         Documentation=mneme daemon --help\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={} daemon\n\
         Restart=on-failure\n\
         RestartSec=10\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        exe.display()
    )
}

fn install_unit(env: &Environment, print: bool) -> Result<()> {
    let exe = std::env::current_exe().context("cannot tell where the mneme binary is")?;
    let text = unit_text(&exe);
    if print {
        print!("{text}");
        return Ok(());
    }
    let config = env
        .var("XDG_CONFIG_HOME")
        .filter(|d| d.starts_with('/'))
        .map(PathBuf::from)
        .unwrap_or_else(|| env.home.join(".config"));
    let dir = config.join("systemd/user");
    std::fs::create_dir_all(&dir).map_err(|e| anyhow!("cannot create {} ({e}); check its permissions", dir.display()))?;
    let path = dir.join("mneme.service");
    mneme_api::write_atomic(&path, text.as_bytes()).map_err(|e| anyhow!("cannot write {} ({e})", path.display()))?;
    println!("Wrote {}", path.display());
    println!("Enable it now and at every login with:\n  systemctl --user daemon-reload && systemctl --user enable --now mneme.service");
    println!("Follow it with:\n  journalctl --user -u mneme.service -f");
    Ok(())
}
