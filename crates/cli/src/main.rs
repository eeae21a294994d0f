//! `mneme`: the command line over the Mneme engine. It reads the real environment once,
//! hands it to the api crate, and prints either text for people or `--json` for scripts.
//! Errors are one line on stderr with a non-zero exit.

mod daemon;
mod dream;
mod extract;
mod inbox;
mod log;
mod memories_json;
mod print;
mod provider;
mod recall;
mod secrets;
mod team;
mod team_sync;
mod verify;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use mneme_api::{ClaudeVersion, ContextRequest, Environment, MemoryEdit, MemoryListFilter, Mneme, NewMemoryRequest, SystemClock};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
// The version says the commit too (stamped by build.rs), so a bug report names the exact build.
#[command(name = "mneme", version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("MNEME_COMMIT"), ")"), about = "See and manage the memory Claude Code uses.")]
struct Cli {
    /// The managed-policy folder Claude Code reads (default /etc/claude-code).
    #[arg(long, global = true, value_name = "DIR")]
    managed_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Args, Clone, Default)]
struct Where {
    /// The folder Claude Code would be started in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Claude Code's --setting-sources (comma list of user, project, local).
    #[arg(long, value_name = "LIST")]
    setting_sources: Option<String>,
    /// Claude Code's --add-dir (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    add_dirs: Vec<PathBuf>,
    /// Claude Code's --settings (flag settings): a file, or the settings as JSON (`'{"autoMemoryEnabled": false}'`).
    #[arg(long = "settings", value_name = "FILE-OR-JSON")]
    settings_file: Option<PathBuf>,
    /// Work on this sub-agent's memory folder instead of auto memory (its type, e.g.
    /// `reviewer` or `toolkit:auditor`; `mneme agents` lists them).
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// With --agent: the memory scope to open (default: the one the agent declares).
    #[arg(long, value_name = "SCOPE", requires = "agent", value_parser = ["user", "project", "local"])]
    scope: Option<String>,
    /// Show it as this Claude Code release sends it (default: the installed one, else the
    /// newest release Mneme checks). `mneme claude-code` says which is installed.
    #[arg(long = "claude-version", value_name = "X.Y.Z")]
    claude_version: Option<ClaudeVersion>,
}

#[derive(Subcommand)]
// `defer`: each subcommand's arguments are built only when that subcommand runs (or its help
// is shown). Building all ~40 of them took ~0.15 ms and ~300 KB of heap at every start, a
// tenth of a `mneme context` on a small project. Every Subcommand enum here does the same.
#[command(defer = true)]
enum Command {
    /// Print byte for byte the instructions block Claude Code would send from a folder.
    Context {
        #[command(flatten)]
        at: Where,
        /// Print the block with per-file provenance as JSON.
        #[arg(long)]
        json: bool,
        /// The date to print instead of today (YYYY-MM-DD).
        #[arg(long)]
        date: Option<String>,
    },
    /// Print what Claude Code would attach after the model read these files in one turn.
    Touched {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        #[command(flatten)]
        at: Where,
        #[arg(long)]
        json: bool,
    },
    /// Which Claude Code you run (PATH, the native installer, npm) and which release's
    /// behaviours Mneme shows.
    ClaudeCode {
        #[arg(long)]
        json: bool,
    },
    /// List every project Claude Code keeps a folder for, orphans flagged.
    #[command(args_conflicts_with_subcommands = true)]
    Projects {
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        action: Option<ProjectsCommand>,
    },
    /// The sub-agents Claude Code would offer here (user, project, managed, enabled plugins),
    /// each with its memory scope and folder, and every agent-memory folder on disk.
    Agents {
        #[command(flatten)]
        at: Where,
        #[arg(long)]
        json: bool,
    },
    /// Manage the auto-memory folder of a project (or, with --agent, a sub-agent's).
    Memories {
        #[command(subcommand)]
        action: MemoriesCommand,
    },
    /// Memories, the index, CLAUDE.md files and rules as a graph (JSON).
    Graph {
        #[command(flatten)]
        at: Where,
        #[arg(long, required = true)]
        json: bool,
    },
    /// Show or change per-machine memory settings in Claude Code's user settings file.
    Settings {
        #[command(subcommand)]
        action: Option<SettingsCommand>,
    },
    /// Scan text for secrets as writes into team memory are scanned.
    Secrets {
        #[command(subcommand)]
        action: secrets::SecretsCommand,
    },
    /// Team memory: sync with the team server (status, pull, push, login, logout), check keys.
    Team {
        #[command(subcommand)]
        action: team::TeamCommand,
    },
    /// Auto dream: the gates, dreaming now, history, review and undo.
    Dream {
        #[command(subcommand)]
        action: dream::DreamCommand,
    },
    /// Run your own Claude Code once, offline, and check Mneme shows exactly what it sends
    /// (exit 0: it matches; 1: the differences, side by side; 2: the check could not run).
    Verify(verify::VerifyArgs),
    /// Run extraction, auto dream and team sync in the background until stopped (for machines
    /// without the desktop app); `install-unit` sets it up as a systemd user service.
    Daemon(daemon::DaemonArgs),
    /// KAIROS daily logs: `mneme log "TEXT"` appends to today's log; `mneme log show` prints one.
    Log(log::LogArgs),
    /// Run memory extraction over a Claude Code session transcript, from where it last stopped.
    Extract(extract::ExtractArgs),
    /// Review what extraction staged: list, show, keep, edit, discard, promote; the review mode.
    Inbox(inbox::InboxArgs),
    /// Which memories Claude Code would recall for a prompt, in order, with why.
    Recall(recall::RecallArgs),
    /// Serve the browser UI and its API on 127.0.0.1 until Ctrl-C (prints the address to open).
    Serve {
        /// Port on 127.0.0.1 (default: any free port).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// The built UI folder (default: $MNEME_UI_DIR, else the repository's ui/dist).
        #[arg(long, value_name = "DIR")]
        ui_dir: Option<PathBuf>,
        /// Also run the background scheduler (extraction, auto dream, team sync) while serving,
        /// and show its runs live in the page (`npm start` does). When the desktop app or a
        /// `mneme daemon` already runs it, this serves without it and says so.
        #[arg(long)]
        scheduler: bool,
    },
}

#[derive(Subcommand)]
#[command(defer = true)]
enum MemoriesCommand {
    /// List topic files, newest first.
    List {
        #[command(flatten)]
        at: Where,
        /// Only this type (user, feedback, project, reference).
        #[arg(long = "type")]
        kind: Option<String>,
        /// Only memories whose name, description or body contains this text.
        #[arg(long)]
        search: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Show one memory (by file name or `name:`).
    Show {
        memory: String,
        #[command(flatten)]
        at: Where,
        #[arg(long)]
        json: bool,
    },
    /// Print the manifest Claude Code's recall and extraction show the model (newest 200).
    Manifest {
        #[command(flatten)]
        at: Where,
    },
    /// Check MEMORY.md against Claude Code's caps and the topic files.
    Health {
        #[command(flatten)]
        at: Where,
        /// Print the report as JSON. `unindexed` names at most the 50 newest memories with no
        /// index line and `unindexedCount` counts them all (`memories list --json` gives each
        /// memory's `indexed`).
        #[arg(long)]
        json: bool,
        /// Apply the fixes: add missing index lines, drop dangling ones, move cut entries up.
        /// With --json the answer is one object: `{"fixed": [what was done], "health": {…}}`.
        #[arg(long)]
        fix: bool,
    },
    /// Create a memory and its index line. The body is read from --body or standard input.
    New {
        /// The memory's `name:` (a short kebab-case slug, as Claude Code names its own).
        #[arg(long)]
        name: String,
        /// One line saying what the memory is about: recall decides on it.
        #[arg(long, allow_hyphen_values = true)]
        description: String,
        /// user, feedback, project or reference. Written where your Claude Code reads it (a
        /// top-level `type:` before 2.1.139, under `metadata:` since; see --claude-version).
        #[arg(long = "type", value_name = "TYPE")]
        kind: String,
        /// The memory's text (default: standard input). Markdown starts lines with `- `, so
        /// a value may start with a dash.
        #[arg(long, allow_hyphen_values = true)]
        body: Option<String>,
        /// File name (default: derived from the name).
        #[arg(long)]
        file: Option<String>,
        #[command(flatten)]
        at: Where,
    },
    /// Change a memory's description, type, name or body (body from --body or --body-stdin).
    Edit {
        /// The memory: its file name or `name:`.
        memory: String,
        /// A new `name:`.
        #[arg(long)]
        name: Option<String>,
        /// A new one-line description.
        #[arg(long, allow_hyphen_values = true)]
        description: Option<String>,
        /// A new type: user, feedback, project or reference. A memory that has a type keeps
        /// its form; one without gets it where your Claude Code reads it.
        #[arg(long = "type", value_name = "TYPE")]
        kind: Option<String>,
        /// A new text (it may start with a dash, as a Markdown list does).
        #[arg(long, allow_hyphen_values = true, conflicts_with = "body_stdin")]
        body: Option<String>,
        /// Read the new text from standard input.
        #[arg(long)]
        body_stdin: bool,
        /// Rename the file (the index line follows).
        #[arg(long)]
        rename: Option<String>,
        #[command(flatten)]
        at: Where,
    },
    /// Replace a memory's whole file with the text on stdin, but only if the file is still at
    /// REVISION (the `revision` of `memories show --json`): a file Claude Code or anyone else
    /// changed since is refused, never overwritten.
    Save {
        memory: String,
        #[arg(long, value_name = "REVISION")]
        revision: String,
        #[command(flatten)]
        at: Where,
    },
    /// Move a memory to Mneme's trash (recoverable) and drop its index line.
    Rm {
        memory: String,
        #[command(flatten)]
        at: Where,
    },
    /// Restore a memory from the trash; without an id, list the trash.
    Restore {
        id: Option<String>,
        #[command(flatten)]
        at: Where,
        #[arg(long)]
        json: bool,
    },
    /// Delete a trashed memory for good (no undo); --all empties this folder's trash.
    Purge {
        /// The trash entry (see `mneme memories restore`).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        /// Every entry of this memory folder's trash.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        at: Where,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
#[command(defer = true)]
enum ProjectsCommand {
    /// Move an orphaned memory folder's topic files and index lines into a project's memory
    /// (never overwriting: a clash is kept as <name>-merged.md); the emptied folder goes to
    /// Mneme's trash.
    Merge {
        /// The orphan's project folder, <config>/projects/<name> (see `mneme projects`).
        #[arg(value_name = "FROM_FOLDER")]
        from: PathBuf,
        /// The project folder whose memory receives the files.
        #[arg(long, value_name = "DIR")]
        into: PathBuf,
        /// Show what would happen without changing anything.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
#[command(defer = true)]
enum SettingsCommand {
    /// Turn auto memory on or off on this machine (autoMemoryEnabled in user settings).
    AutoMemory { state: OnOff },
    /// Turn auto dream on or off on this machine (autoDreamEnabled in user settings).
    AutoDream { state: OnOff },
    /// Show, set or clear the one folder for every project's auto memory (autoMemoryDirectory).
    MemoryDir {
        /// An absolute folder or ~/folder, checked with Claude Code's rules.
        #[arg(value_name = "PATH", conflicts_with = "clear")]
        path: Option<String>,
        /// Remove the setting: one memory folder per project again.
        #[arg(long)]
        clear: bool,
        #[arg(long)]
        json: bool,
    },
    /// The model provider Mneme asks: show, set, its API key (key set|clear), test.
    Provider(provider::ProviderArgs),
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum OnOff {
    On,
    Off,
}

/// `mneme … | head` closes the pipe before mneme has written everything. Rust ignores SIGPIPE,
/// so `println!` panics there ("failed printing to stdout: Broken pipe") with a backtrace; the
/// reader has what it wanted, so end quietly, as `grep` or `rg` do.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if let Some(reason) = message.strip_prefix("failed printing to stdout: ") {
            if reason.contains("Broken pipe") {
                std::process::exit(0);
            }
            // `mneme … > file` on a full disk, or into /dev/full: say so as an error, not a panic.
            let reason = reason.find(" (os error").map_or(reason, |at| &reason[..at]);
            eprintln!("mneme: {}", stdout_failed_text(reason));
            std::process::exit(1);
        }
        default(info);
    }));
}

fn stdout_failed_text(reason: &str) -> String {
    format!("could not write the answer to standard output: {reason}. What was printed is incomplete; check the disk or where the output goes, then run the command again.")
}

/// An error writing standard output, as the one line [`quiet_on_closed_stdout`] prints.
pub(crate) fn stdout_failed(e: &std::io::Error) -> anyhow::Error {
    anyhow::anyhow!(stdout_failed_text(&io_reason(e)))
}

/// What is still buffered on standard output (a `print!` without a line feed) is written
/// before the exit, and a failure there is an error: a `mneme context > file` on a full disk
/// must not exit 0 with the file cut short. A closed pipe stays quiet.
fn flushed(code: ExitCode) -> ExitCode {
    use std::io::Write;
    match std::io::stdout().flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            print::failure(&stdout_failed(&e));
            ExitCode::FAILURE
        }
        _ => code,
    }
}

/// Mneme's provider settings (`providers.json` in its data folder) are read by every command
/// that may ask a model. A FIFO there blocked the read for ever (`mneme recall` hung); a folder
/// or device cannot be settings either. Refused up front, saying what to do.
fn provider_settings_readable(mneme: &Mneme) -> Result<()> {
    let path = mneme.environment().data_dir().join("providers.json");
    match std::fs::metadata(&path) {
        Ok(meta) if !meta.is_file() => {
            let what = if meta.is_dir() { "a folder" } else { "not a plain file (a pipe, socket or device)" };
            anyhow::bail!(
                "{} (Mneme's model provider settings) is {what}, so it cannot be read. Move it aside or delete it (Mneme starts again with the offline provider), then run this again.",
                print::safe_path(&path)
            )
        }
        _ => Ok(()),
    }
}

/// clap's usage error as one line, like every other mneme error: what is wrong, clap's tips
/// (`a similar subcommand exists: 'status'`), and the help of the command that was being
/// parsed (`mneme dream status --help`), not always `mneme --help`.
fn usage_error(text: &str, args: &[std::ffi::OsString]) -> String {
    let summary: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let mut out = summary.join(" ").trim_start_matches("error: ").to_string();
    for tip in text.lines().map(str::trim).filter(|l| l.starts_with("tip:")) {
        out.push_str("; ");
        out.push_str(tip);
    }
    out.push_str(&format!(" (see: {} --help)", command_path(args)));
    out
}

/// The deepest subcommand the words of `args` name, as `mneme dream status`: each word that
/// is a subcommand of the one before descends (clap's errors do not say which command they
/// were parsing, and not all of them print its usage).
fn command_path(args: &[std::ffi::OsString]) -> String {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    // `defer`: the subcommands' own subcommands exist only once built. Only errors get here.
    cmd.build();
    let mut path = vec![cmd.get_name().to_string()];
    let mut at = &cmd;
    for word in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if let Some(sub) = at.find_subcommand(word) {
            path.push(sub.get_name().to_string());
            at = sub;
        }
    }
    path.join(" ")
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and --version are not errors; print them as clap formats them.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        // A command that needs a subcommand got none (`mneme dream`): its help, which lists
        // them, is the answer; clap sends it to standard error for this kind.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::from(2);
        }
        Err(e) => {
            // The words quoted back are the user's own, and may hold terminal escapes.
            print::failure(&usage_error(&e.to_string(), &std::env::args_os().collect::<Vec<_>>()));
            return ExitCode::from(2);
        }
    };
    // These answer with an exit code of their own and need no memory folder or HOME.
    match cli.command {
        Some(Command::Secrets { action }) => {
            let managed_dir = cli.managed_dir.clone();
            return flushed(secrets::run(action, move || match environment(managed_dir) {
                Ok(env) => mneme_api::installed_profile(&env),
                Err(_) => mneme_core::versions::profile_for(mneme_core::versions::newest_checked()).profile,
            }));
        }
        Some(Command::Verify(args)) => return flushed(verify::run(environment(cli.managed_dir.clone()), local_offset(), args)),
        Some(Command::Team { action }) => return flushed(team::run(action, cli.managed_dir.clone())),
        _ => {}
    }
    match run(cli) {
        Ok(()) => flushed(ExitCode::SUCCESS),
        Err(e) => {
            let e = agent_error(e);
            print::failure(&e);
            exit_code(&e)
        }
    }
}

/// How the shared answers for an `--agent` Mneme cannot open end: the app points at the
/// agents' memory folders its picker lists; here that list is `mneme agents`, and a folder is
/// opened with `--scope`.
const AGENT_LEFT_BEHIND: &str = " A folder it left behind is listed with the agents' memory folders, with its scope.";
const AGENT_WITHOUT_MEMORY: &str = "; a folder it already has is listed with the agents' memory folders, with its scope.";

/// An `--agent` that names no agent with memory, in the command line's words.
fn agent_error(e: anyhow::Error) -> anyhow::Error {
    let Some(message) = e.downcast_ref::<mneme_api::ApiError>().map(|a| a.message.clone()) else { return e };
    if let Some(start) = message.strip_suffix(AGENT_LEFT_BEHIND) {
        anyhow::anyhow!("{start} Run `mneme agents` to list them, or pass --scope user|project|local to open a folder left behind.")
    } else if let Some(start) = message.strip_suffix(AGENT_WITHOUT_MEMORY) {
        anyhow::anyhow!("{start}, or pass --scope user|project|local to open a folder anyway.")
    } else {
        e
    }
}

/// The exit status of a failed command: 1, except when the disk refused a write, which scripts
/// may want to tell apart (retry after freeing space, not at all on a read-only mount). The
/// numbers are sysexits.h's: 74 a full disk (EX_IOERR), 73 a read-only one (EX_CANTCREAT), 77
/// no permission (EX_NOPERM).
fn exit_code(e: &anyhow::Error) -> ExitCode {
    use mneme_api::DiskRefusal as Refusal;
    let code = e.downcast_ref::<mneme_api::ApiError>().and_then(|a| match a.code {
        mneme_api::ErrorCode::DiskFull => Some(Refusal::DiskFull),
        mneme_api::ErrorCode::ReadOnly => Some(Refusal::ReadOnly),
        mneme_api::ErrorCode::PermissionDenied => Some(Refusal::PermissionDenied),
        _ => None,
    });
    match code.or_else(|| e.chain().find_map(Refusal::in_chain)) {
        Some(Refusal::DiskFull) => ExitCode::from(74),
        Some(Refusal::ReadOnly) => ExitCode::from(73),
        Some(Refusal::PermissionDenied) => ExitCode::from(77),
        None => ExitCode::FAILURE,
    }
}

/// The real world, read once: the home folder (`HOME`, or `USERPROFILE` on Windows), the
/// environment, the managed folder (this system's unless --managed-dir).
fn environment(managed_dir: Option<PathBuf>) -> Result<Environment> {
    let mut env = Environment::from_process()?;
    if let Some(m) = managed_dir {
        // A missing folder is a machine without managed policy; a file is a mistyped flag,
        // which Claude Code's own message would blame on "whoever manages this machine".
        if m.exists() && !m.is_dir() {
            anyhow::bail!(
                "--managed-dir {} is not a folder. Pass the folder that holds managed-settings.json and the managed CLAUDE.md (default /etc/claude-code), or leave the flag out.",
                print::safe_path(&m)
            );
        }
        env.managed_dir = m;
    }
    config_home_is_a_folder(&env)?;
    Ok(env)
}

/// Claude Code's config folder (`CLAUDE_CONFIG_DIR`, else ~/.claude) may be missing (a first
/// run: it is made when something is written), but something else in its place would make
/// every command fail with "Not a directory" on a path the user never typed. Say which
/// setting points where, and what to do.
fn config_home_is_a_folder(env: &Environment) -> Result<()> {
    let dir = env.config_home();
    let Ok(meta) = std::fs::metadata(&dir) else { return Ok(()) };
    if meta.is_dir() {
        return Ok(());
    }
    let what = if meta.is_file() { "a file" } else { "not a folder" };
    match env.var("CLAUDE_CONFIG_DIR") {
        Some(_) => anyhow::bail!(
            "CLAUDE_CONFIG_DIR is {}, which is {what}. Point CLAUDE_CONFIG_DIR at Claude Code's config folder, or unset it to use ~/.claude.",
            print::safe_path(&dir)
        ),
        None => anyhow::bail!(
            "{} is {what}, but Claude Code keeps its settings and memory in a folder there. Move it aside (Claude Code makes the folder again), or set CLAUDE_CONFIG_DIR to another folder.",
            print::safe_path(&dir)
        ),
    }
}

/// The user settings file is about to be changed: something other than a plain file in its
/// place (a FIFO would block the read for ever, a folder fails with "Is a directory") is
/// refused first, saying what it is. Nothing is written.
fn user_settings_changeable(mneme: &Mneme) -> Result<()> {
    let path = mneme.machine_settings()?.user_settings_path;
    match std::fs::metadata(&path) {
        Ok(meta) if !meta.is_file() => {
            let what = if meta.is_dir() { "a folder" } else { "not a plain file (a pipe, socket or device)" };
            anyhow::bail!(
                "{} is {what}, so Mneme cannot change it and Claude Code cannot read it. Move it aside (a settings file is plain JSON such as {{}}), then run this again; nothing was changed.",
                print::safe_path(&path)
            )
        }
        _ => Ok(()),
    }
}

/// The local offset from UTC now, from the system's time zone.
fn local_offset() -> i32 {
    local_offset_at(std::time::SystemTime::now())
}

/// The local offset from UTC the system's time zone has at `at` (a time shown from the past
/// takes the offset of its own day: summer or winter time). Asked of the tz database rather
/// than libc, so it is right on any thread, after the runtime's have started too.
fn local_offset_at(at: std::time::SystemTime) -> i32 {
    mneme_api::LocalZone::system().offset_at(at)
}

fn request(at: &Where, date: Option<String>) -> Result<ContextRequest> {
    let cwd = match &at.cwd {
        Some(c) => c.clone(),
        None => crate::current_dir()?,
    };
    let cwd = existing_cwd(if cwd.is_absolute() { cwd } else { crate::current_dir()?.join(cwd) })?;
    Ok(ContextRequest {
        cwd,
        setting_sources: at.setting_sources.clone(),
        add_dirs: at.add_dirs.clone(),
        settings_file: at.settings_file.clone(),
        date,
        claude_version: at.claude_version,
        agent: at.agent.clone().map(|name| mneme_api::AgentTarget {
            name,
            scope: at.scope.as_deref().and_then(mneme_api::AgentScope::from_name),
        }),
    })
}

/// `mneme context` and `touched` load once and exit, so the files the loader reads are left
/// for the exit to close (one `close` fewer per file; see
/// `mneme_api::keep_files_open_until_exit`). The soft open-files limit is raised toward
/// the hard one first, as Go's runtime does for every program, and a margin is kept so the
/// process's own later opens never run short.
fn leave_files_to_exit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    let Some(mut soft) = limit.current else { return };
    let wanted = limit.maximum.map_or(65_536, |hard| hard.min(65_536));
    if wanted > soft {
        limit.current = Some(wanted);
        if setrlimit(Resource::Nofile, limit).is_ok() {
            soft = wanted;
        }
    }
    mneme_api::keep_files_open_until_exit(soft.saturating_sub(256) as usize);
}

/// The folder mneme was started in. When it was deleted (or moved) after the shell entered
/// it, the OS answers only "No such file or directory": say which folder, and what to do.
pub(crate) fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().map_err(|e| {
        let shown = std::env::var_os("PWD").map(|p| format!(" ({})", print::safe_path(std::path::Path::new(&p)))).unwrap_or_default();
        anyhow::anyhow!(
            "the current folder{shown} cannot be read: {}. It may have been deleted or moved; cd to an existing folder, or pass --cwd with one.",
            io_reason(&e)
        )
    })
}

/// An I/O error's reason without Rust's " (os error N)" suffix.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// A folder this user may not enter (no search permission) is one Claude Code cannot be
/// started in, and every file in it would read as missing: the answer would describe a
/// project nobody can see. (Whether it is a folder at all is the api's check.)
pub(crate) fn enterable(cwd: &std::path::Path) -> Result<()> {
    match std::fs::metadata(cwd.join(".")) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => anyhow::bail!(
            "you may not open the folder {} (permission denied), so Claude Code could not start there. Pass --cwd with a folder you can open, or fix its permissions (chmod u+rx).",
            print::safe_path(cwd)
        ),
        _ => Ok(()),
    }
}

/// `--cwd` must name a folder, as `mneme context` and `dream status` require (the api's
/// resolution): a typo would otherwise set a mode, or show a team folder, for a project that
/// does not exist. Checked here so the error names the flag; the api's own refusal speaks to
/// both shells and names none.
fn existing_cwd(cwd: PathBuf) -> Result<PathBuf> {
    if !cwd.is_dir() {
        anyhow::bail!("{} is not a folder. Pass --cwd with the folder Claude Code would start in.", print::safe_path(&cwd));
    }
    enterable(&cwd)?;
    Ok(cwd)
}

fn json<T: serde::Serialize>(v: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// Text a command needs, read from standard input. On a terminal nothing would say mneme is
/// waiting, so a prompt does (on standard error, standard output stays the answer); text
/// that is empty or only blanks is refused: `< /dev/null` or a bare Ctrl-D is a slip, and
/// would otherwise leave a memory with no text. `what` names it; `instead` says how else to
/// give it.
fn read_text(what: &str, instead: &str) -> Result<String> {
    prompt_on_terminal(what, instead);
    let text = read_stdin()?;
    if text.trim().is_empty() {
        anyhow::bail!("{what} is empty: standard input held no text. Pipe the text in, {instead}.");
    }
    Ok(text)
}

fn prompt_on_terminal(what: &str, instead: &str) {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        let end = if cfg!(windows) { "Ctrl-Z then Enter" } else { "Ctrl-D" };
        eprintln!("mneme: type {what}, then end it with {end} on a line of its own ({instead})");
    }
}

fn read_stdin() -> Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow::anyhow!("could not read standard input ({e}); pipe the text in, or pass it as an option"))?;
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("standard input is not UTF-8 text; memory and instruction files are UTF-8, so convert it first (iconv -t UTF-8)"))
}

fn run(cli: Cli) -> Result<()> {
    // The zone, not one offset: `mneme serve` may run across a daylight-saving change.
    let mneme = Mneme::new(environment(cli.managed_dir)?, Arc::new(SystemClock)).with_local_zone(mneme_api::LocalZone::system());
    let Some(command) = cli.command else {
        return print::overview(&mneme, &request(&Where::default(), None)?);
    };
    if matches!(
        command,
        Command::Settings { action: Some(SettingsCommand::Provider(_)) }
            | Command::Recall(_)
            | Command::Dream { .. }
            | Command::Extract(_)
            | Command::Inbox(_)
            | Command::Daemon(_)
            | Command::Serve { .. }
    ) {
        provider_settings_readable(&mneme)?;
    }
    match command {
        Command::Context { at, json: as_json, .. } if at.agent.is_some() => {
            let view = mneme.agent_context(&request(&at, None)?)?;
            if as_json {
                json(&view)?;
            } else {
                match &view.section {
                    Some(section) => print!("{section}"),
                    None => anyhow::bail!("{}", view.unavailable.as_deref().unwrap_or("no memory section")),
                }
            }
        }
        Command::Context { at, json: as_json, date } => {
            leave_files_to_exit();
            let view = mneme.context(&request(&at, date)?)?;
            if as_json {
                json(&view)?;
            } else {
                // Standard output stays the block, byte for byte; what Claude Code would warn
                // about goes to standard error.
                for p in &view.settings_problems {
                    eprintln!("mneme: settings problem: {p}");
                }
                print!("{}", view.block);
            }
        }
        Command::Touched { files, at, json: as_json } => {
            leave_files_to_exit();
            let view = mneme.touched(&request(&at, None)?, &files)?;
            if as_json {
                json(&view)?;
            } else {
                print!("{}", view.block);
            }
        }
        Command::Projects { action: Some(ProjectsCommand::Merge { from, into, dry_run, json: as_json }), .. } => {
            let at = Where { cwd: Some(into), ..Where::default() };
            let from = if from.is_absolute() { from } else { crate::current_dir()?.join(from) };
            let report = if dry_run {
                mneme.plan_merge_memory(&from, &request(&at, None)?).map_err(merge_error)?
            } else {
                mneme.merge_memory(&from, &request(&at, None)?).map_err(merge_error)?
            };
            if as_json {
                json(&report)?;
            } else {
                print::merge_report(&report);
            }
        }
        Command::Projects { json: as_json, action: None } => {
            let projects = mneme.projects()?;
            if as_json {
                json(&projects)?;
            } else {
                print::projects(&projects);
            }
        }
        Command::Agents { at, json: as_json } => {
            let view = mneme.agents(&request(&at, None)?)?;
            if as_json {
                json(&view)?;
            } else {
                print::agents(&view);
            }
        }
        Command::Graph { at, .. } => json(&mneme.graph(&request(&at, None)?)?)?,
        Command::ClaudeCode { json: as_json } => {
            let info = mneme.claude_code();
            if as_json {
                json(&info)?;
            } else {
                print::claude_code(&info);
            }
        }
        Command::Recall(args) => recall::run(&mneme, args)?,
        Command::Memories { action } => memories(&mneme, action)?,
        Command::Settings { action } => match action {
            None => print::settings(&mneme.machine_settings()?),
            Some(SettingsCommand::AutoMemory { state }) => {
                user_settings_changeable(&mneme)?;
                let path = mneme.set_auto_memory(matches!(state, OnOff::On))?;
                println!("autoMemoryEnabled is now {} in {}", matches!(state, OnOff::On), print::safe_path(&path));
                if let Some(why) = mneme.machine_settings()?.auto_memory_overridden {
                    eprintln!("warning: this has no effect for now. {why}");
                }
            }
            Some(SettingsCommand::MemoryDir { path, clear, json: as_json }) => {
                if path.is_none() && !clear {
                    let s = mneme.machine_settings()?;
                    if as_json {
                        return json(&serde_json::json!({
                            "settingsPath": s.user_settings_path,
                            "value": s.auto_memory_directory,
                            "overridden": s.auto_memory_directory_overridden,
                            // The problem that makes Claude Code ignore the whole file, value included.
                            "ignored": s.ignored_for,
                        }));
                    }
                    match (&s.auto_memory_directory, &s.ignored_for) {
                        (Some(v), None) => println!("autoMemoryDirectory is {} in {}", print::safe(v), print::safe_path(&s.user_settings_path)),
                        // While Claude Code ignores the file, the value decides nothing (as `mneme settings` says).
                        (Some(v), Some(problem)) => println!(
                            "autoMemoryDirectory is {} in {}, which Claude Code ignores: {}",
                            print::safe(v),
                            print::safe_path(&s.user_settings_path),
                            print::safe(problem)
                        ),
                        (None, _) => println!("autoMemoryDirectory is not set: one memory folder per project"),
                    }
                    if let Some(why) = &s.auto_memory_directory_overridden {
                        println!("  but: {}", print::safe(why));
                    }
                    return Ok(());
                }
                user_settings_changeable(&mneme)?;
                let change = mneme.set_auto_memory_directory(if clear { None } else { path.as_deref() })?;
                if as_json {
                    json(&change)?;
                } else {
                    print::memory_dir_change(&change);
                }
            }
            Some(SettingsCommand::Provider(args)) => provider::run(&mneme, args)?,
            Some(SettingsCommand::AutoDream { state }) => {
                user_settings_changeable(&mneme)?;
                let path = mneme.set_auto_dream(matches!(state, OnOff::On))?;
                println!("autoDreamEnabled is now {} in {}", matches!(state, OnOff::On), print::safe_path(&path));
                if let Some(why) = mneme.machine_settings()?.auto_dream_overridden {
                    eprintln!("warning: this has no effect for now. {why}");
                }
            }
        },
        Command::Secrets { .. } | Command::Team { .. } | Command::Verify(_) => unreachable!("answered in main"),
        Command::Dream { action } => dream::run(&mneme, action)?,
        Command::Log(args) => log::run(&mneme, args)?,
        Command::Daemon(args) => daemon::run(&mneme, args)?,
        Command::Extract(args) => extract::run(&mneme, args)?,
        Command::Inbox(args) => inbox::run(&mneme, args)?,
        Command::Serve { port, ui_dir, scheduler } => {
            // A --ui-dir that is not a built UI would serve a "not built" page: say so now.
            if let Some(dir) = &ui_dir {
                if !dir.join("index.html").is_file() {
                    anyhow::bail!(
                        "--ui-dir {} holds no index.html, so it is not a built UI. Pass the folder `npm run build:ui` makes (ui/dist in the Mneme repository), or leave --ui-dir out.",
                        print::safe_path(dir)
                    );
                }
            }
            let opts =
                mneme_serve::ServeOptions { port, ui_dir, token: None, start_dir: Some(crate::current_dir()?), scheduler, operation_patience: None };
            // The tokio runtime lives inside this call only; every other command stays synchronous.
            mneme_serve::serve_blocking(mneme, opts, |addr, token| {
                println!("Mneme is running at http://127.0.0.1:{}/?token={token}", addr.port());
                // Scripts and the desktop shell read this line from a pipe; don't leave it buffered.
                let _ = std::io::Write::flush(&mut std::io::stdout());
            })?;
        }
    }
    Ok(())
}

fn memories(mneme: &Mneme, action: MemoriesCommand) -> Result<()> {
    match action {
        MemoriesCommand::List { at, kind, search, json: true } => {
            memories_json::print(mneme, &request(&at, None)?, &MemoryListFilter { kind, search })?;
        }
        MemoriesCommand::List { at, kind, search, json: false } => {
            print::memory_list(&mneme.memories(&request(&at, None)?, &MemoryListFilter { kind, search })?);
        }
        MemoriesCommand::Show { memory, at, json: as_json } => {
            let detail = mneme.memory(&request(&at, None)?, &memory).map_err(memory_error)?;
            if as_json {
                json(&detail)?;
            } else {
                print!("{}", detail.content);
            }
        }
        MemoriesCommand::Manifest { at } => {
            let manifest = mneme.manifest(&request(&at, None)?)?;
            if !manifest.text.is_empty() {
                println!("{}", manifest.text);
            }
            if let Some(note) = manifest.note {
                eprintln!("mneme: {note}");
            }
        }
        MemoriesCommand::Health { at, json: as_json, fix } => {
            let req = request(&at, None)?;
            let done = if fix { Some(mneme.fix_index(&req)?) } else { None };
            let health = mneme.health(&req)?;
            match (as_json, done) {
                // Standard output stays one JSON document, what was fixed included.
                (true, Some(done)) => json(&serde_json::json!({ "fixed": done, "health": health }))?,
                (true, None) => json(&health)?,
                (false, done) => {
                    for line in done.iter().flatten() {
                        // The lines quote index lines, names and descriptions.
                        println!("{}", print::safe(line));
                    }
                    print::health(&health);
                }
            }
        }
        MemoriesCommand::New { name, description, kind, body, file, at } => {
            let body = match body {
                Some(b) => b,
                None => read_text("the memory's text", "or pass it with --body TEXT")?,
            };
            let created = mneme.create_memory(
                &request(&at, None)?,
                &NewMemoryRequest { name, description, kind, body, file_name: file },
            )?;
            println!("created {}", print::safe_path(&created.path));
        }
        MemoriesCommand::Edit { memory, name, description, kind, body, body_stdin, rename, at } => {
            // Nothing asked for: say so rather than "saved" over an untouched file.
            if name.is_none() && description.is_none() && kind.is_none() && body.is_none() && !body_stdin && rename.is_none() {
                anyhow::bail!(
                    "nothing to change in {}: pass --name, --description, --type, --body, --body-stdin or --rename (see: mneme memories edit --help)",
                    print::safe(&memory)
                );
            }
            let body = if body_stdin { Some(read_text("the memory's new text", "or pass it with --body TEXT")?) } else { body };
            let edited = mneme.edit_memory(
                &request(&at, None)?,
                &MemoryEdit { memory, name, description, kind, body, rename },
            ).map_err(memory_error)?;
            println!("saved {}", print::safe_path(&edited.path));
        }
        MemoriesCommand::Save { memory, revision, at } => {
            let req = request(&at, None)?;
            let rel_path = mneme.memory(&req, &memory).map_err(memory_error)?.summary.rel_path;
            prompt_on_terminal("the memory's whole file, frontmatter included", "or pipe it in");
            let text = read_stdin()?;
            // `< /dev/null`, a closed pipe or a bare Ctrl-D would otherwise empty the memory.
            if text.trim().is_empty() {
                anyhow::bail!(
                    "standard input held no text, so {rel_path} was left as it is. Pipe in the memory's whole file (`mneme memories show {rel_path}` prints it); to delete a memory, use `mneme memories rm {rel_path}`."
                );
            }
            let saved = mneme.save_memory(&req, &rel_path, &text, &revision).map_err(|e| match e.code {
                // The shared message offers the app's "overwrite"; here the way is a new revision.
                mneme_api::ErrorCode::Conflict => anyhow::anyhow!(
                    "{rel_path} changed on disk since revision {revision} (Claude Code may have written it); nothing was saved. `mneme memories show {rel_path} --json` gives its text and revision now: save again with that --revision to replace it."
                ),
                // The shared message for a revision Mneme never handed out says to reload the
                // file, as the app does; here the way is a command. Other refusals (a file that
                // is not UTF-8, with its own command) have nothing to do with the revision.
                mneme_api::ErrorCode::InvalidInput if e.message.contains(REVISION_RELOAD) => anyhow::anyhow!(
                    "{}; nothing was saved. `mneme memories show {rel_path} --json` gives the current revision.",
                    e.message.trim_end_matches('.').replace(REVISION_RELOAD, "")
                ),
                _ => e.into(),
            })?;
            println!("saved {} (revision {})", print::safe_path(&saved.path), saved.revision);
            match (saved.index_lines_updated, &saved.index_error) {
                (_, Some(e)) => eprintln!("warning: its MEMORY.md line still shows the old name or description: {e}. `mneme memories health --fix` brings it in line."),
                (0, None) => {}
                (1, None) => println!("its MEMORY.md line follows the new name or description"),
                (n, None) => println!("its {n} MEMORY.md lines follow the new name or description"),
            }
        }
        MemoriesCommand::Rm { memory, at } => {
            let entry = mneme.delete_memory(&request(&at, None)?, &memory).map_err(memory_error)?;
            println!("moved {} to the trash (restore with: mneme memories restore {})", print::safe_path(&entry.original), print::safe(&entry.id));
        }
        MemoriesCommand::Purge { id, all, at, json: as_json } => {
            let req = request(&at, None)?;
            let gone = match id.filter(|_| !all) {
                Some(id) => mneme.purge_trash(&req, &id).map_err(trash_id_error)?,
                None => mneme.empty_trash(&req)?,
            };
            if as_json {
                json(&gone)?;
            } else if gone.removed == 0 {
                println!("The trash is already empty.");
            } else {
                let noun = if gone.removed == 1 { "memory" } else { "memories" };
                println!("deleted {} trashed {noun} for good ({} bytes)", gone.removed, gone.bytes);
            }
        }
        MemoriesCommand::Restore { id, at, json: as_json } => {
            let req = request(&at, None)?;
            match id {
                Some(id) => {
                    let path = mneme.restore_memory(&req, &id).map_err(trash_id_error)?;
                    if as_json {
                        json(&serde_json::json!({ "id": id, "restored": path }))?;
                    } else {
                        println!("restored {}", print::safe_path(&path));
                    }
                }
                None => {
                    let trash = mneme.trash(&req)?;
                    if as_json {
                        json(&trash)?;
                    } else {
                        print::trash(&trash);
                    }
                }
            }
        }
    }
    Ok(())
}

/// How the shared answer for a memory name with nothing there ends: the app points at its list;
/// here the list is a command.
const MEMORY_LIST: &str = "The list of memories shows the ones there are.";

/// A memory name with nothing there, in the command line's words.
fn memory_error(e: mneme_api::ApiError) -> anyhow::Error {
    match e.message.strip_suffix(MEMORY_LIST) {
        Some(start) if e.code == mneme_api::ErrorCode::NotFound => anyhow::anyhow!("{start}`mneme memories list` lists the ones there are."),
        _ => e.into(),
    }
}

/// How the shared answer for a project folder that is not there ends: the app points at its
/// Projects list; here the list is a command.
const PROJECT_LIST: &str = "The list of project folders shows the ones there are.";

/// A project folder to merge that is not there, in the command line's words.
fn merge_error(e: mneme_api::ApiError) -> anyhow::Error {
    match e.message.strip_suffix(PROJECT_LIST) {
        Some(start) if e.code == mneme_api::ErrorCode::NotFound => anyhow::anyhow!("{start}`mneme projects` lists the ones there are."),
        _ => e.into(),
    }
}

/// How the shared refusal of a revision Mneme never handed out ends (the store's words): the
/// app reloads the file, the command line names the command that gives a revision.
const REVISION_RELOAD: &str = "; reload the file to get a fresh one";

/// A trash id that is not one: the shared message tells the app to reload its trash list; here
/// the list is a command.
fn trash_id_error(e: mneme_api::ApiError) -> anyhow::Error {
    match e.code {
        mneme_api::ErrorCode::NotFound | mneme_api::ErrorCode::InvalidInput => {
            let message = e.message.trim_end_matches('.').replace(". Reload the trash list", "").replace("; reload the trash list", "");
            anyhow::anyhow!("{message}. `mneme memories restore` lists the ids in the trash.")
        }
        _ => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// clap's own checks over the whole tree, deferred subcommands included (`debug_assert`
    /// builds every one of them).
    #[test]
    fn the_command_tree_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// With `defer`, metadata applied when a subcommand is built can replace the description
    /// its variant gives it (a flattened `Args` struct's doc comment did, for twenty
    /// subcommands). Every subcommand must keep a description of its own: none empty, and no
    /// two of one command's subcommands alike.
    #[test]
    fn every_subcommand_keeps_its_own_description() {
        fn check(cmd: &clap::Command, path: &str) {
            let mut seen = std::collections::HashMap::new();
            for sub in cmd.get_subcommands() {
                let name = format!("{path} {}", sub.get_name());
                let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
                assert!(!about.trim().is_empty(), "`{name}` has no description");
                if let Some(other) = seen.insert(about.clone(), name.clone()) {
                    panic!("`{name}` and `{other}` both say {about:?}");
                }
                check(sub, &name);
            }
        }
        let mut cmd = Cli::command();
        cmd.build();
        check(&cmd, "mneme");
    }
}
