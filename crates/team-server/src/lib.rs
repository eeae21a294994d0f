//! `mneme-server`: the team-memory sync server.
//!
//! It speaks exactly the HTTP API Claude Code's team-memory client speaks (reference §8.2,
//! types in [`mneme_team::wire`]); Mneme's sync client, which reproduces Claude Code's, syncs
//! through it. (Claude Code itself authenticates with its Anthropic OAuth token, which only
//! Anthropic can verify, so it is the wire format, not Claude Code's sign-in, that is shared.)
//!
//! - `GET /api/claude_code/team_memory?repo=owner%2Fname` — 200 with every live entry, their
//!   checksums and the tombstones (`content.deletedEntries`), 304 when `If-None-Match` names
//!   the current checksum, 404 while the repository has no data; `&view=hashes` leaves the
//!   contents out.
//! - `PUT` the same URL with `{"entries": {…}, "soft_delete_keys": […]}` — an upsert (keys
//!   not sent are kept), refused with 412 when `If-Match` names a checksum that is no longer
//!   current, so an update is never lost; 413 with Claude Code's structured body when the
//!   push would take the repository over its entry cap. Each PUT that changes something
//!   commits one new `version`; one that changes nothing commits nothing and answers with the
//!   current checksum.
//! - Bearer access tokens; 401 without a live one, 403 without a grant for the repository,
//!   429 with `Retry-After` past the per-token rate limit.
//!
//! Beyond that: device sign-in with rotating refresh tokens ([`oauth`]), a lead API for the
//! Mneme app's Team screen (every key's newest version, history, rollback, removal, in
//! [`http`]), `/healthz`, and [`admin`] for the command line. Checksums are defined in
//! [`checksum`], key rules in [`keys`]. Data lives in SQLite or PostgreSQL behind
//! [`store::Store`]; writes commit only if the repository is still at the version they read,
//! so several replicas can share one PostgreSQL database.

pub mod admin;
pub mod auth;
pub mod checksum;
pub mod config;
pub mod http;
pub mod keys;
pub mod memory;
pub mod oauth;
pub mod store;
mod time_fmt;

pub use config::{DatabaseUrl, RateLimit, ServerConfig};
pub use store::Role;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use store::SqlStore;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server running on a background task; [`RunningServer::shutdown`] stops it.
pub struct RunningServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
    store: Arc<SqlStore>,
    admin: admin::Admin,
}

impl RunningServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`: the base URL for `TEAM_MEMORY_SYNC_URL` and the client.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Administration over the server's own database connection.
    pub fn admin(&self) -> admin::Admin {
        self.admin.clone()
    }

    /// Stops accepting connections, lets in-flight requests finish, then closes the database.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Ok(Err(e)) = (&mut self.task).await {
            tracing::error!(error = %e, "the server stopped with an error");
        }
        self.store.close().await;
    }
}

async fn prepare(config: ServerConfig, listener: &TcpListener) -> anyhow::Result<(axum::Router, Arc<SqlStore>, admin::Admin)> {
    let addr = listener.local_addr()?;
    let store = Arc::new(SqlStore::connect(&config.database).await?);
    let base_url = config.public_url.clone().unwrap_or_else(|| format!("http://{addr}")).trim_end_matches('/').to_string();
    let memory = memory::Memory {
        store: store.clone(),
        clock: config.clock.clone(),
        default_max_entries: config.max_entries,
    };
    let admin = admin::Admin::new(store.clone(), config.clock.clone(), config.access_token_ttl);
    let state = Arc::new(http::AppState::new(memory, config, base_url));
    Ok((http::router(state), store, admin))
}

/// Opens the database (creating and migrating it as needed) and serves on `listener` from a
/// background task. Returns once requests are accepted.
pub async fn spawn(config: ServerConfig, listener: TcpListener) -> anyhow::Result<RunningServer> {
    let addr = listener.local_addr()?;
    let (router, store, admin) = prepare(config, &listener).await?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    Ok(RunningServer { addr, stop: Some(stop), task, store, admin })
}

/// Serves on `listener` until `shutdown` completes, then finishes in-flight requests and
/// returns. `ready` is called with the bound address once requests are accepted.
pub async fn run(
    config: ServerConfig,
    listener: TcpListener,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    let (router, store, _admin) = prepare(config, &listener).await?;
    ready(addr);
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await?;
    store.close().await;
    Ok(())
}
