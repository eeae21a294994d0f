//! `mneme-server`: the team-memory sync server.
//!
//! It speaks exactly the HTTP API Claude Code's team-memory client speaks (reference §8.2,
//! types in [`mneme_team_proto::wire`]); Mneme's sync client, which reproduces Claude Code's, syncs
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
pub mod limits;
pub mod memory;
pub mod oauth;
pub mod store;

pub use config::{DatabaseUrl, RateLimit, ServerConfig, SignInLimits, Window};
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

    /// Stops accepting connections, lets in-flight requests finish (for at most
    /// [`ServerConfig::shutdown_grace`]), then closes the database.
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
    let mut memory = memory::Memory::new(store.clone(), config.clock.clone(), config.max_entries, config.max_repo_bytes);
    memory.default_max_live_bytes = config.max_live_bytes;
    let admin = admin::Admin::new(store.clone(), config.clock.clone(), config.access_token_ttl);
    let state = Arc::new(http::AppState::new(memory, config, base_url));
    Ok((http::router(state), store, admin))
}

/// Opens the database (creating and migrating it as needed) and serves on `listener` from a
/// background task. Returns once requests are accepted.
pub async fn spawn(config: ServerConfig, listener: TcpListener) -> anyhow::Result<RunningServer> {
    let addr = listener.local_addr()?;
    let (timeout, grace) = (config.header_read_timeout, config.shutdown_grace);
    let (router, store, admin) = prepare(config, &listener).await?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve_http(listener, router, timeout, grace, async move {
        let _ = stopped.await;
    }));
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
    let (timeout, grace) = (config.header_read_timeout, config.shutdown_grace);
    let (router, store, _admin) = prepare(config, &listener).await?;
    ready(addr);
    serve_http(listener, router, timeout, grace, shutdown).await?;
    store.close().await;
    Ok(())
}

/// Serves HTTP/1.1 on `listener` until `shutdown`, then waits up to `grace` for open requests
/// to finish and closes whatever connections are left.
///
/// This is `axum::serve` plus what it lacks: a connection that has not sent a request's
/// headers within `header_read_timeout` is dropped (a slow-header client would otherwise hold
/// a connection for as long as it likes), and each request carries the peer address
/// (`ConnectInfo`) for the sign-in limits.
async fn serve_http(
    listener: TcpListener,
    router: axum::Router,
    header_read_timeout: std::time::Duration,
    grace: std::time::Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Every connection's task, so that those still open after the grace period can be ended.
    let mut connections = tokio::task::JoinSet::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %e, "could not accept a connection");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            let mut router = router.clone();
            async move { tower_service::Service::call(&mut router, req).await }
        });
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        // Reap the finished ones, so the set holds only open connections.
        while connections.try_join_next().is_some() {}
        connections.spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    // Idle connections close at once and requests in flight are finished, but a client that
    // stops reading its answer would hold the shutdown for ever (no timeout covers writes).
    if tokio::time::timeout(grace, graceful.shutdown()).await.is_err() {
        tracing::warn!(
            open = connections.len(),
            seconds = grace.as_secs(),
            "connections still open after the shutdown grace period; closing them"
        );
        connections.shutdown().await;
    }
    Ok(())
}
