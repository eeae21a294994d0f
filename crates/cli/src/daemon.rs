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

/// The exit status when another scheduler already runs on this machine (EX_TEMPFAIL). The
/// systemd unit does not restart on it: the other one (the desktop app, `mneme serve
/// --scheduler`) holds the lock for as long as it runs, so a restart every 10 s would only fail
/// the same way.
const ALREADY_RUNNING_EXIT: i32 = 75;

/// The variables that say where Mneme and Claude Code keep their files, carried into the unit
/// when set here: the user manager starts the daemon without the login shell's environment, and
/// a daemon looking at other folders than the sessions it serves would do nothing, or the wrong
/// thing. Secrets (ANTHROPIC_API_KEY) are not written into a unit file; keep keys in the OS
/// keyring (Settings → Model provider) instead.
const UNIT_VARIABLES: &[&str] = &[
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_REMOTE_MEMORY_DIR",
    "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
    "MNEME_DATA_DIR",
    "XDG_DATA_HOME",
    "MNEME_KEYRING_SERVICE",
    "NPM_CONFIG_PREFIX",
];

#[derive(Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Exit status: 0 when stopped by Ctrl-C or SIGTERM; 75 when another Mneme scheduler (the desktop app, `mneme serve --scheduler`) already runs; 130 when a second Ctrl-C or SIGTERM stopped it without waiting for runs in flight; 1 on any other error."
)]
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
    // The fallback for when the scheduler cannot ask the system before a dream.
    config.utc_offset = mneme_scheduler::LocalOffset::System { fallback: crate::local_offset() };
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
    if let Some(e @ mneme_scheduler::SchedulerError::AlreadyRunning { .. }) = result.as_ref().err().and_then(|e| e.downcast_ref()) {
        crate::print::failure(e);
        std::process::exit(ALREADY_RUNNING_EXIT);
    }
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
        writeln!(out, "[{}] {}", job.label(), crate::print::safe(message))?;
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
        Outcome::Newer { status } => format!("finished (a newer Mneme's outcome: '{}')", status.as_str()),
    };
    // Summaries and errors name memories and carry models' and servers' words.
    crate::print::safe(&format!("[{}] {}: {what}", r.job.label(), r.target)).into_owned()
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

/// The unit: restarted on failure (but not while another scheduler holds the lock), started
/// with the user's session, with the environment that says where the files are.
fn unit_text(exe: &str, env: &Environment) -> Result<String> {
    let mut environment = String::new();
    for name in UNIT_VARIABLES {
        if let Some(value) = env.var(name).filter(|v| !v.is_empty()) {
            environment.push_str(&format!("Environment={}\n", systemd_quote(&format!("{name}={value}"))));
        }
    }
    // systemd refuses to start an executable whose path holds a quote, a backslash or a
    // control character, however it is escaped (`string_is_safe`); `$` in it is taken as it is.
    if exe.chars().any(|c| c.is_control() || matches!(c, '"' | '\'' | '\\')) {
        return Err(anyhow!(
            "systemd cannot start a program whose path holds a quote, a backslash or a control character ({exe:?}); move the mneme binary to a folder whose path has none and run `mneme daemon install-unit` from there"
        ));
    }
    Ok(format!(
        "[Unit]\n\
         Description=Mneme: background memory jobs for Claude Code (extraction, auto dream, team sync)\n\
         # More: mneme daemon --help\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={} daemon\n\
         {environment}\
         Restart=on-failure\n\
         RestartSec=10\n\
         # {ALREADY_RUNNING_EXIT}: another Mneme scheduler (the desktop app, `mneme serve --scheduler`) already runs.\n\
         RestartPreventExitStatus={ALREADY_RUNNING_EXIT}\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        systemd_quote(exe)
    ))
}

/// One word of a unit file, double-quoted (spaces stay in the word): backslashes and quotes
/// escaped, control characters as C escapes, `%` doubled (systemd's specifiers). `$` is left as
/// it is: neither `Environment=` values nor the executable's path expand variables.
fn systemd_quote(word: &str) -> String {
    let mut out = String::from("\"");
    for c in word.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn install_unit(env: &Environment, print: bool) -> Result<()> {
    let exe = std::env::current_exe().context("cannot tell where the mneme binary is")?;
    let exe = exe.to_str().ok_or_else(|| {
        anyhow!("the mneme binary's path {} is not UTF-8, which a systemd unit cannot name; move the binary to a folder whose path is", exe.display())
    })?;
    let text = unit_text(exe, env)?;
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
    println!("Wrote {}", crate::print::safe_path(&path));
    println!("Enable it now and at every login with:\n  systemctl --user daemon-reload && systemctl --user enable --now mneme.service");
    println!("Follow it with:\n  journalctl --user -u mneme.service -f");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words come out as systemd reads them back (checked with `systemd-analyze verify`, which
    /// prints what it parsed): one word in quotes, specifiers doubled, the rest C-escaped.
    #[test]
    fn unit_words_are_quoted_for_systemd() {
        assert_eq!(systemd_quote("/opt/my apps/100%/$x/mneme"), r#""/opt/my apps/100%%/$x/mneme""#);
        assert_eq!(systemd_quote("A=$HOME \"q\" \\b%\n\u{1}"), r#""A=$HOME \"q\" \\b%%\n\u0001""#);
        let env = Environment::with_home("/h").set_var("CLAUDE_CONFIG_DIR", "/c/50% off").set_var("MNEME_DATA_DIR", "").set_var("ANTHROPIC_API_KEY", "sk-secret");
        let unit = unit_text("/opt/my apps/mneme", &env).unwrap();
        assert!(unit.contains("ExecStart=\"/opt/my apps/mneme\" daemon\nEnvironment=\"CLAUDE_CONFIG_DIR=/c/50%% off\"\nRestart=on-failure\n"), "{unit}");
        assert!(unit.contains(&format!("RestartPreventExitStatus={ALREADY_RUNNING_EXIT}\n")), "{unit}");
        assert!(!unit.contains("MNEME_DATA_DIR") && !unit.contains("sk-secret"), "{unit}");
        // A path systemd would refuse to start is refused here, with what to do.
        let e = unit_text("/opt/it's/mneme", &env).unwrap_err().to_string();
        assert!(e.contains("move the mneme binary"), "{e}");
    }
}
