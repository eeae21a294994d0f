//! `mneme-server`: serve team memory, or administer its database.
//!
//! ```text
//! mneme-server serve --db sqlite:/var/lib/mneme/team.db --listen 127.0.0.1:8787
//! mneme-server admin create-team acme
//! mneme-server admin create-user alice --password-stdin
//! mneme-server admin grant alice acme/app [--lead] [--team acme]
//! mneme-server admin token alice
//! mneme-server admin set-max-entries acme/app 500
//! mneme-server admin set-max-bytes acme/app 2147483648
//! mneme-server admin set-max-live-bytes acme/app 134217728
//! mneme-server admin prune-history acme/app --keep 20 [--older-than-days 90] [--dry-run]
//! mneme-server admin revoke-grant alice acme/app
//! mneme-server admin revoke-tokens alice
//! mneme-server admin disable-user alice        # enable-user to undo
//! mneme-server admin sign-ins [alice]
//! mneme-server admin purge acme/app notes/leaked.md
//! ```
//! `--db` may also come from `MNEME_SERVER_DB`. Logs are JSON lines on stderr (`--log-format
//! text` for people); `RUST_LOG` picks the level. SIGTERM or Ctrl-C stops accepting
//! connections and exits once in-flight requests are answered, or after 30 seconds.

use clap::{Parser, Subcommand, ValueEnum};
use mneme_team_server::admin::{iso, Admin, Role};
use mneme_team_server::{DatabaseUrl, RateLimit, ServerConfig};
use std::io::Read;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
// The version says the commit too (stamped by build.rs).
#[command(name = "mneme-server", version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("MNEME_COMMIT"), ")"), about = "The Mneme team-memory sync server")]
struct Cli {
    /// sqlite:/path/to/file.db or postgres://user:password@host:port/database
    #[arg(long, global = true, env = "MNEME_SERVER_DB")]
    db: Option<String>,
    /// Log lines as JSON (for collectors) or plain text.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Json)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Json,
    Text,
}

#[derive(Subcommand)]
enum Command {
    /// Serve Claude Code's team-memory API, device sign-in and the lead API.
    Serve {
        #[arg(long, default_value = "127.0.0.1:8787")]
        listen: SocketAddr,
        /// The URL people reach the server at, for the sign-in page link.
        #[arg(long)]
        public_url: Option<String>,
        /// Entry cap for repositories without their own.
        #[arg(long, default_value_t = mneme_team_server::config::DEFAULT_MAX_ENTRIES)]
        max_entries: u64,
        /// Storage cap, in bytes of history (every version pushed), for repositories without
        /// their own.
        #[arg(long, default_value_t = mneme_team_server::config::DEFAULT_MAX_REPO_BYTES)]
        max_repo_bytes: u64,
        /// Live-content cap, in bytes of the current entries (what every full pull carries), for
        /// repositories without their own.
        #[arg(long, default_value_t = mneme_team_server::config::DEFAULT_MAX_LIVE_BYTES)]
        max_live_bytes: u64,
        /// Requests per minute one access token may make (0 = unlimited).
        #[arg(long, default_value_t = 0)]
        rate_limit_per_minute: u32,
        /// Full pulls (every entry with its content) built at once; more wait, then get 503.
        #[arg(long, default_value_t = mneme_team_server::config::DEFAULT_MAX_FULL_PULLS)]
        max_full_pulls: usize,
        /// Another client_id a device sign-in may name (repeatable); `mneme` is always known.
        #[arg(long = "client-id")]
        client_ids: Vec<String>,
    },
    /// Manage teams, users, grants and limits.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Create a team (repositories belong to one).
    CreateTeam { name: String },
    /// Create a user who signs in with a password.
    CreateUser {
        name: String,
        /// Read the password from standard input (its first line).
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// Give USER access to REPO (owner/name), registering the repository if it is new.
    Grant {
        user: String,
        repo: String,
        /// Lead: may also remove entries and roll them back.
        #[arg(long)]
        lead: bool,
        /// The team a new repository belongs to (needed when there are several teams).
        #[arg(long)]
        team: Option<String>,
    },
    /// Print an access token for USER, for scripts.
    Token {
        user: String,
        /// Lifetime in seconds (at most 30 days).
        #[arg(long, default_value_t = 3600)]
        expires_in: u64,
    },
    /// Take USER's access to REPO away.
    RevokeGrant { user: String, repo: String },
    /// End every sign-in of USER now (they can sign in again).
    RevokeTokens { user: String },
    /// End every sign-in of USER and refuse new ones until enable-user.
    DisableUser { user: String },
    /// Let a disabled USER sign in again.
    EnableUser { user: String },
    /// List sign-ins (of USER, or everyone), newest first.
    SignIns { user: Option<String> },
    /// Remove KEY from REPO for everyone and erase its whole history (a leaked secret).
    Purge { repo: String, key: String },
    /// Cap the live entries of REPO (Claude Code learns the cap from the 413 it gets).
    SetMaxEntries { repo: String, max: u64 },
    /// Cap the bytes of history REPO may hold (every version pushed; a lead's purge frees a key's).
    SetMaxBytes { repo: String, max: u64 },
    /// Cap the bytes of REPO's current entries (what every full pull carries).
    SetMaxLiveBytes { repo: String, max: u64 },
    /// Free storage in REPO by dropping old versions from history (what teammates pull stays).
    PruneHistory {
        repo: String,
        /// How many of each key's newest versions to keep (at least 1).
        #[arg(long)]
        keep: u64,
        /// Drop only versions written more than this many days ago.
        #[arg(long, value_name = "DAYS")]
        older_than_days: Option<u64>,
        /// Say what would be dropped and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Text => builder.init(),
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let db: DatabaseUrl = cli
        .db
        .as_deref()
        .ok_or_else(|| anyhow::anyhow!("Say which database to use with --db sqlite:/path/to/file.db (or set MNEME_SERVER_DB)."))?
        .parse()?;
    match cli.command {
        Command::Serve {
            listen,
            public_url,
            max_entries,
            max_repo_bytes,
            max_live_bytes,
            rate_limit_per_minute,
            max_full_pulls,
            client_ids,
        } => {
            let mut config = ServerConfig::new(db.clone());
            config.client_ids.extend(client_ids);
            config.public_url = public_url;
            config.max_entries = max_entries;
            config.max_repo_bytes = max_repo_bytes;
            config.max_live_bytes = max_live_bytes;
            config.max_full_pulls = max_full_pulls;
            config.rate_limit = (rate_limit_per_minute > 0)
                .then_some(RateLimit { burst: rate_limit_per_minute, period: Duration::from_secs(60) });
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|e| anyhow::anyhow!("Could not listen on {listen}: {e}. Pick another address with --listen."))?;
            mneme_team_server::run(
                config,
                listener,
                |addr| tracing::info!(addr = %addr, db = %db, "listening"),
                shutdown_signal(),
            )
            .await?;
            tracing::info!("stopped");
        }
        Command::Admin { command } => {
            let admin = Admin::connect(&db).await?;
            match command {
                AdminCommand::CreateTeam { name } => {
                    admin.create_team(&name).await?;
                    println!("Created team {name}.");
                }
                AdminCommand::CreateUser { name, password_stdin: _ } => {
                    let mut input = String::new();
                    std::io::stdin().read_to_string(&mut input)?;
                    let password = input.lines().next().unwrap_or("");
                    admin.create_user(&name, password).await?;
                    println!("Created user {name}.");
                }
                AdminCommand::Grant { user, repo, lead, team } => {
                    let role = if lead { Role::Lead } else { Role::Member };
                    admin.grant(&user, team.as_deref(), &repo, role).await?;
                    println!("{user} is now a {} of {repo}.", role.as_str());
                }
                AdminCommand::Token { user, expires_in } => {
                    println!("{}", admin.mint_token_for(&user, Duration::from_secs(expires_in)).await?);
                }
                AdminCommand::SetMaxEntries { repo, max } => {
                    admin.set_max_entries(&repo, Some(max)).await?;
                    println!("{repo} may now hold {max} entries.");
                }
                AdminCommand::SetMaxBytes { repo, max } => {
                    admin.set_max_bytes(&repo, Some(max)).await?;
                    println!("{repo} may now hold {max} bytes of history.");
                }
                AdminCommand::SetMaxLiveBytes { repo, max } => {
                    admin.set_max_live_bytes(&repo, Some(max)).await?;
                    println!("{repo} may now hold {max} bytes of current entries.");
                }
                AdminCommand::RevokeGrant { user, repo } => {
                    admin.revoke_grant(&user, &repo).await?;
                    println!("{user} no longer has access to {repo}.");
                }
                AdminCommand::RevokeTokens { user } => {
                    let n = admin.revoke_tokens(&user).await?;
                    println!("Ended {n} live sign-in(s) of {user}.");
                }
                AdminCommand::DisableUser { user } => {
                    let n = admin.disable_user(&user).await?;
                    println!("{user} is disabled; ended {n} live sign-in(s).");
                }
                AdminCommand::EnableUser { user } => {
                    admin.enable_user(&user).await?;
                    println!("{user} may sign in again.");
                }
                AdminCommand::SignIns { user } => {
                    let rows = admin.sign_ins(user.as_deref()).await?;
                    if rows.is_empty() {
                        println!("No sign-ins.");
                    }
                    for r in rows {
                        let state = match r.revoked_ms {
                            Some(at) => format!("revoked {}", iso(at)),
                            None => format!("expires {}", iso(r.expires_ms)),
                        };
                        println!(
                            "{}\t{}\tsigned in {}\tlast used {}\t{state}",
                            r.user,
                            r.client_id,
                            iso(r.created_ms),
                            iso(r.last_used_ms)
                        );
                    }
                }
                AdminCommand::PruneHistory { repo, keep, older_than_days, dry_run } => {
                    let age = older_than_days.map(|d| Duration::from_secs(d.saturating_mul(86_400)));
                    let pruned = admin.prune_history(&repo, keep, age, dry_run).await?;
                    let which = match older_than_days {
                        Some(d) => format!("beyond each key's {keep} newest and older than {d} days"),
                        None => format!("beyond each key's {keep} newest"),
                    };
                    let verb = if dry_run { "Would drop" } else { "Dropped" };
                    let versions = if pruned.versions == 1 { "version" } else { "versions" };
                    println!(
                        "{verb} {} old {versions} from {repo}'s history ({which}), freeing {} bytes.",
                        pruned.versions, pruned.bytes
                    );
                }
                AdminCommand::Purge { repo, key } => {
                    admin.purge(&repo, &key).await?;
                    println!(
                        "Purged {key:?} from {repo}: removed for everyone, and its history erased. \
                         Copies already pulled stay on teammates' machines; rotate the secret."
                    );
                }
            }
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logs(cli.log_format);
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mneme-server: {e}");
            ExitCode::from(1)
        }
    }
}
