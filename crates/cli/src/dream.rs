//! `mneme dream`: the auto-dream gates, running a dream now, and the history with review
//! (approve / reject) and one-step undo. Text for people, `--json` for scripts.

use crate::print::{safe, safe_lines, safe_path};
use anyhow::{anyhow, Result};
use clap::{Args, Subcommand};
use mneme_api::records::dream::{retention, DreamMode, DreamRecord, DreamStatus, Gate, Trigger};
use mneme_api::records::{Cancel, DreamGateStatus, MemoryFolder, ModelChoice};
use mneme_api::Mneme;
use std::path::{Path, PathBuf};

// Which memory folder a command works on. (A plain comment: with `defer`, a flattened `Args`
// struct's doc comment would replace the subcommand's own description in its help.)
#[derive(Args, Clone, Default)]
pub struct Folder {
    /// The folder Claude Code would be started in (default: the current folder); its memory
    /// folder and transcripts are used.
    #[arg(long, value_name = "DIR", conflicts_with = "memory_dir")]
    pub cwd: Option<PathBuf>,
    /// The memory folder itself.
    #[arg(long, value_name = "DIR")]
    pub memory_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
#[command(defer = true)]
pub enum DreamCommand {
    /// The gates: hours and sessions since the last dream, the lock holder, when one may run.
    Status {
        #[command(flatten)]
        at: Folder,
        #[arg(long)]
        json: bool,
    },
    /// Dream now (the lock is still honoured). Applied at once unless the folder's mode is
    /// review or off, which hold it until approved (--yes applies it anyway).
    Run {
        #[command(flatten)]
        at: Folder,
        /// The deterministic offline dream, whatever provider is configured.
        #[arg(long, conflicts_with = "provider")]
        offline: bool,
        /// offline, claude-cli, anthropic or openai (default: the provider in Settings).
        #[arg(long, value_name = "NAME")]
        provider: Option<String>,
        /// Apply at once even when the folder's mode holds dreams for review.
        #[arg(long)]
        yes: bool,
        #[arg(long)]
        json: bool,
    },
    /// Every dream of the folder, newest first.
    #[command(after_help = retention::describe())]
    History {
        #[command(flatten)]
        at: Folder,
        #[arg(long)]
        json: bool,
    },
    /// One dream with every change it made or proposes.
    Show {
        id: String,
        #[command(flatten)]
        at: Folder,
        #[arg(long)]
        json: bool,
    },
    /// Undo an applied dream in one step.
    Undo {
        #[arg(required_unless_present = "last", conflicts_with = "last")]
        id: Option<String>,
        /// The most recent applied dream.
        #[arg(long)]
        last: bool,
        /// Undo even if files changed since the dream (their newer text is kept in its record).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        at: Folder,
        #[arg(long)]
        json: bool,
    },
    /// Apply a dream held for review.
    Approve {
        id: String,
        #[command(flatten)]
        at: Folder,
        #[arg(long)]
        json: bool,
    },
    /// Turn down a dream held for review; nothing is written.
    Reject {
        id: String,
        #[command(flatten)]
        at: Folder,
        #[arg(long)]
        json: bool,
    },
    /// Show or set what happens to this folder's dreams: automatic (the default: applied at
    /// once), review (held until approved or rejected) or off (no automatic dreams).
    Mode {
        #[arg(value_name = "MODE")]
        mode: Option<String>,
        #[command(flatten)]
        at: Folder,
        #[arg(long)]
        json: bool,
    },
}

/// `p` made absolute and tidied lexically: `.` components, repeated and trailing separators
/// dropped, `..` taken back. A folder's dream history and mode are keyed by its path as text,
/// so `memory/`, `./memory` or `x/../memory` must come out as the path the app and the
/// scheduler use, or `dream mode review` would set a mode they never read. Lexical, not
/// `canonicalize`: the app does not resolve links in a memory folder's path either.
fn absolute(p: &Path) -> Result<PathBuf> {
    use std::path::Component;
    let joined = if p.is_absolute() { p.to_path_buf() } else { crate::current_dir()?.join(p) };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            // `/..` is `/`.
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    Ok(out)
}

/// The memory folder the user named: --memory-dir itself, else the one of --cwd (default: the
/// current folder).
pub(crate) fn folder(at: &Folder) -> Result<MemoryFolder> {
    if let Some(dir) = &at.memory_dir {
        return Ok(MemoryFolder::MemoryDir(absolute(dir)?));
    }
    let cwd = match &at.cwd {
        Some(c) => absolute(c)?,
        None => crate::current_dir()?,
    };
    Ok(MemoryFolder::Cwd(crate::existing_cwd(cwd)?))
}

fn json<T: serde::Serialize>(v: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// `YYYY-MM-DD HH:MM`, local time.
fn when(ms: i64) -> String {
    let at = std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))).unwrap_or(std::time::UNIX_EPOCH);
    let offset = time::UtcOffset::from_whole_seconds(crate::local_offset_at(at)).unwrap_or(time::UtcOffset::UTC);
    match time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000) {
        Ok(t) => {
            let t = t.to_offset(offset);
            format!("{:04}-{:02}-{:02} {:02}:{:02}", t.year(), u8::from(t.month()), t.day(), t.hour(), t.minute())
        }
        Err(_) => ms.to_string(),
    }
}

pub fn run(mneme: &Mneme, cmd: DreamCommand) -> Result<()> {
    match cmd {
        DreamCommand::Status { at, json: as_json } => {
            let gates = mneme.dream_gate_status(&folder(&at)?)?;
            if as_json {
                json(&gates)?;
            } else {
                print_status(&gates);
            }
        }
        DreamCommand::Run { at, offline, provider: name, yes, json: as_json } => {
            let at = folder(&at)?;
            let model = match name.as_deref() {
                _ if offline => ModelChoice::Offline,
                Some(name) => ModelChoice::Named(name),
                None => ModelChoice::Configured,
            };
            let cancel = Cancel::new();
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let record = runtime.block_on(async {
                let dream = mneme.dream_now(&at, model, yes, &cancel);
                tokio::pin!(dream);
                tokio::select! {
                    r = &mut dream => r,
                    _ = tokio::signal::ctrl_c() => {
                        // The dream rolls its lock back and records itself as failed.
                        cancel.cancel();
                        dream.await
                    }
                }
            })?;
            if as_json {
                json(&record)?;
            } else {
                print_record(&record, false);
            }
        }
        DreamCommand::History { at, json: as_json } => {
            let (dir, records, damaged) = mneme.dream_records(&folder(&at)?)?;
            if as_json {
                json(&records.iter().map(DreamRecord::summary_view).collect::<Vec<_>>())?;
            } else if records.is_empty() {
                println!("No dreams yet for {}. Start one with `mneme dream run`.", safe_path(&dir));
            } else {
                for r in &records {
                    let (added, changed, removed) = r.counts();
                    let lost = r.moved.iter().filter(|m| m.lost()).count();
                    let lost = if lost > 0 { format!("  {lost} LOST") } else { String::new() };
                    println!(
                        "{}  {}  {:<6}  {:<10}  {:<8}  +{added} ~{changed} -{removed}{lost}  {}",
                        r.id,
                        when(r.created_at_ms),
                        trigger(r.trigger),
                        safe(&r.provider),
                        r.status.as_str(),
                        safe(r.summary.lines().next().unwrap_or_default())
                    );
                }
                // Where a user who misses an old dream looks; the rule itself is in the help.
                println!("Older dreams are pruned as new ones are recorded: see `mneme dream history --help`.");
            }
            for e in damaged {
                crate::print::failure(&e);
            }
        }
        DreamCommand::Show { id, at, json: as_json } => {
            let record = mneme.dream_record(&folder(&at)?, &id)?;
            if as_json {
                json(&record)?;
            } else {
                print_record(&record, true);
            }
        }
        DreamCommand::Undo { id, last, force, at, json: as_json } => {
            let record = mneme.undo_dream_record(&folder(&at)?, if last { None } else { id.as_deref() }, force)?;
            if as_json {
                json(&record)?;
            } else {
                println!("Undid dream {}: {} file(s) put back as they were.", safe(&record.id), record.changeset.changes.len());
            }
        }
        DreamCommand::Approve { id, at, json: as_json } => {
            let record = mneme.approve_dream_record(&folder(&at)?, &id)?;
            if as_json {
                json(&record)?;
            } else {
                println!("Applied dream {} ({} file(s)). Undo with `mneme dream undo {}`.", safe(&record.id), record.changeset.changes.len(), safe(&record.id));
            }
        }
        DreamCommand::Reject { id, at, json: as_json } => {
            let record = mneme.reject_dream_record(&folder(&at)?, &id)?;
            if as_json {
                json(&record)?;
            } else {
                println!("Rejected dream {}; nothing was written.", safe(&record.id));
            }
        }
        DreamCommand::Mode { mode, at, json: as_json } => {
            let dir = mneme.dream_memory_dir(&folder(&at)?)?;
            if let Some(m) = mode {
                let m = DreamMode::parse(&m)
                    .ok_or_else(|| anyhow!("'{m}' is not a dream mode. Use one of: automatic, review, off."))?;
                // A mode is kept by the folder's path: one set on a mistyped --memory-dir would
                // apply to no folder. (--cwd is checked by the resolution above; a project's
                // memory folder may not exist yet, and its mode still counts once it does.)
                if at.memory_dir.is_some() && !dir.is_dir() {
                    anyhow::bail!(
                        "--memory-dir {} is not a folder; check the path (`mneme context` shows a project's memory folder), or pass --cwd with the project's folder when its memory folder is not created yet",
                        safe_path(&dir)
                    );
                }
                mneme.set_dream_mode_of(&dir, m)?;
                if !as_json {
                    println!("Dreams for {} are now {}.", safe_path(&dir), m.as_str());
                    return Ok(());
                }
            }
            let mode = mneme.dream_mode_of(&dir)?;
            if as_json {
                json(&serde_json::json!({ "memoryDir": dir, "mode": mode }))?;
            } else {
                println!("{}", mode.as_str());
            }
        }
    }
    Ok(())
}

fn trigger(t: Trigger) -> &'static str {
    match t {
        Trigger::Manual => "manual",
        Trigger::Auto => "auto",
    }
}

fn print_status(gates: &DreamGateStatus) {
    let s = &gates.status;
    println!("Memory folder:      {}", safe_path(&s.memory_dir));
    println!("Auto dream:         {}", safe(&s.enabled_explanation));
    if let Some(note) = &gates.offer_note {
        println!("Claude Code:        {}", safe(note));
    }
    println!("Review mode:        {}", gates.mode.as_str());
    // A lock dated ahead of the clock (a clock that ran ahead when it was stamped, a folder
    // copied from another machine): "-72.0 h ago" reads as a typo, so it is said as it is.
    // Under a minute ahead is two clocks' jitter (a network file system's), said as just now.
    let ahead = s.hours_since.filter(|h| *h < -1.0 / 60.0).map(|h| -h);
    match (s.last_consolidated_at_ms, s.hours_since, ahead) {
        (Some(at), _, Some(a)) => println!("Last consolidated:  {} (stamped {a:.1} h in the future; needs {} h after that)", when(at), s.min_hours),
        (Some(at), Some(h), None) => println!("Last consolidated:  {} ({:.1} h ago; needs {} h)", when(at), h.max(0.0), s.min_hours),
        _ => println!("Last consolidated:  never"),
    }
    println!("Sessions since:     {} (needs {})", s.sessions_since, s.min_sessions);
    let lock = &s.lock;
    let holder = match (lock.exists, lock.holder_pid) {
        (false, _) => "no lock file".to_string(),
        (true, Some(pid)) if lock.held && ahead.is_some() => format!(
            "held by PID {pid} (running): stamped {:.1} h in the future, and a lock counts as held until an hour after its stamp, so until {}",
            ahead.unwrap_or_default(),
            when(lock.stale_at_ms.unwrap_or_default())
        ),
        (true, Some(pid)) if lock.held => format!("held by PID {pid} (running) until {} at the latest", when(lock.stale_at_ms.unwrap_or_default())),
        (true, Some(pid)) if lock.holder_alive => format!("free (PID {pid} still runs, but the lock is over 60 minutes old)"),
        (true, Some(pid)) => format!("free (PID {pid} is not running)"),
        (true, None) => "free".to_string(),
    };
    println!("Lock:               {holder}");
    // Checked last, once the lock is taken, as the release does: the scheduler's own reason
    // for giving the lock back, which it says otherwise only in the run log.
    let organization = match &gates.organization {
        Some(o) => format!("skipped: {}", o.explanation),
        None => format!("open ({})", gates.organization_checks.clear_note()),
    };
    println!("Organizations:      {}", safe(&organization));
    let blocked = match s.blocked_by {
        None if gates.organization.is_some() => "the organization check (above): no automatic dream runs here".to_string(),
        None => "nothing: a dream would start now".to_string(),
        Some(Gate::Enabled) => "auto dream is off".to_string(),
        // Claude Code counts the hours from the lock's date whatever the clock says, so a date
        // ahead of it closes the gate until that date plus the hours; a dream run by hand
        // (when the lock is free) stamps the lock anew with the present.
        Some(Gate::Time) if ahead.is_some() => format!(
            "the time gate: the last dream is stamped {:.1} h in the future (the clock was ahead when it was recorded, or the lock file came from another machine), and Claude Code waits {} h after that date before it dreams here again. {}",
            ahead.unwrap_or_default(),
            s.min_hours,
            if lock.held {
                "If the process holding the lock is not a dream, remove the lock file; then `mneme dream run` dreams now and dates it to the present"
            } else {
                "`mneme dream run` dreams now and dates it to the present"
            }
        ),
        Some(Gate::Time) => format!("the time gate ({} h since the last dream)", s.min_hours),
        Some(Gate::Throttle) => "the 10-minute scan throttle".to_string(),
        Some(Gate::Sessions) => format!("the session gate ({} of {} sessions)", s.sessions_since, s.min_sessions),
        Some(Gate::Lock) => "the lock: another dream is running".to_string(),
    };
    println!("Blocked by:         {blocked}");
    println!("Next eligible:      {}", when(s.next_eligible_at_ms));
}

fn print_record(r: &DreamRecord, diffs: bool) {
    println!("Dream {} ({}, {}, {}): {}", safe(&r.id), trigger(r.trigger), safe(&r.provider), r.status.as_str(), when(r.created_at_ms));
    // The summary is the model's own words.
    if !r.summary.is_empty() {
        println!("{}", safe_lines(r.summary.trim_end()));
    }
    if let Some(e) = &r.error {
        println!("Error: {}", safe_lines(e));
    }
    for c in &r.changeset.changes {
        let rel = c.path.strip_prefix(&r.changeset.root).unwrap_or(&c.path).display().to_string();
        let rel_shown = safe(&rel);
        let verb = match (&c.before, &c.after) {
            (None, Some(_)) => "added",
            (Some(_), None) => "removed",
            _ => "changed",
        };
        println!("  {verb:<8} {rel_shown}");
        let reason = c.reason.strip_prefix(&format!("{rel}: ")).unwrap_or(&c.reason);
        println!("           {}", safe_lines(reason));
        if diffs {
            print!("{}", diff(c.before.as_deref().unwrap_or_default(), c.after.as_deref().unwrap_or_default()));
        }
    }
    print_moves(r);
    for n in &r.notes {
        println!("Note: {}", safe_lines(n));
    }
    for d in &r.denials {
        println!("Refused {}: {}", safe(&d.tool), safe_lines(&d.message));
    }
    match r.status {
        DreamStatus::Pending if r.moved.iter().any(|m| m.lost()) => println!(
            "Held for review because it would lose text: look at the LOST lines, then apply anyway with `mneme dream approve {}`, or turn it down with `mneme dream reject {}`.",
            r.id, r.id
        ),
        DreamStatus::Pending if !r.changeset.is_empty() => println!(
            "Held for review: apply with `mneme dream approve {}`, or turn it down with `mneme dream reject {}`.",
            r.id, r.id
        ),
        DreamStatus::Applied if !r.changeset.is_empty() => println!("Applied. Undo with `mneme dream undo {}`.", r.id),
        _ => {}
    }
}

/// What knowledge moved where, line by line: each line the dream takes out of a file and the
/// files its text is in afterwards; lines found nowhere first, loudly, with the missing parts.
fn print_moves(r: &DreamRecord) {
    let lost: Vec<_> = r.moved.iter().filter(|m| m.lost()).collect();
    if !lost.is_empty() {
        println!("LOST: {} line(s) this dream removes are found nowhere in the folder after it:", lost.len());
        for m in &lost {
            println!("  {}: {}", safe(&m.from), safe(&m.text));
            let missing: Vec<String> = m.missing.iter().map(|p| format!("\"{}\"", safe(p))).collect();
            println!("           missing: {}", missing.join(", "));
        }
    }
    let kept: Vec<_> = r.moved.iter().filter(|m| !m.lost()).collect();
    if !kept.is_empty() {
        println!("What moved where ({} line(s) taken out of files, each still in the folder):", kept.len());
        for m in kept {
            let to = safe(&m.found_in.join(", ")).into_owned();
            match &m.duplicate {
                Some(why) => println!("  {}: {}\n           → {to} ({})", safe(&m.from), safe(&m.text), safe(why)),
                None => println!("  {}: {}\n           → {to}", safe(&m.from), safe(&m.text)),
            }
        }
    }
}

/// The changed lines of a file (the api's line diff), `-`/`+` indented under the change.
fn diff(before: &str, after: &str) -> String {
    let mut out = String::new();
    for line in mneme_api::line_diff(before, after).lines {
        match line.op {
            mneme_api::DiffOp::Same => {}
            mneme_api::DiffOp::Removed => out.push_str(&format!("           - {}\n", safe(&line.text))),
            mneme_api::DiffOp::Added => out.push_str(&format!("           + {}\n", safe(&line.text))),
        }
    }
    out
}
