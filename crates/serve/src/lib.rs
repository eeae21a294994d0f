//! `mneme serve`: the same [`Mneme`] api over HTTP for the browser UI, on the loopback only
//! (127.0.0.1, and [::1] on the same port so that nobody else can listen there).
//!
//! - `POST /api/{method}` with a camelCase JSON body calls one api method and answers with
//!   its JSON result, or with an error status and `{ "code", "message" }` (see [`methods`]).
//! - `GET /api/events` is a Server-Sent Events stream of `changed` events naming the files
//!   that changed under Claude Code's folders (see [`events`]), and, with `--scheduler`,
//!   `scheduler` events from the background scheduler (`mneme_live::background`, which the
//!   desktop shell runs too).
//! - Everything else is the static UI (`ui/dist`), with index.html for unknown paths.
//!
//! A local web server is reachable by every page the browser opens, so [`security`] checks
//! every request: a per-run secret token (Bearer header only, the event stream included),
//! the Host header (DNS rebinding), the Origin header (cross-site requests) and a JSON content
//! type on POST (simple cross-site form posts). No CORS headers are ever sent.

pub mod events;
pub mod methods;
mod peer;
pub mod security;
pub mod ui;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use mneme_api::Mneme;
use mneme_live::background::Background;
use std::future::Future;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

/// How to run the server.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The port on 127.0.0.1 (and [::1]); 0 picks any free one.
    pub port: u16,
    /// The built UI (`index.html` and its assets); `None` = [`ui::default_ui_dir`].
    pub ui_dir: Option<PathBuf>,
    /// The secret every API request must carry; `None` = 32 random bytes in hex.
    pub token: Option<String>,
    /// The folder the UI opens first (reported by the `home` method); `None` = the process's
    /// current folder.
    pub start_dir: Option<PathBuf>,
    /// Also run the background scheduler (extraction, auto dream, team sync) while serving.
    /// Off by default: a `mneme daemon` may already run it.
    pub scheduler: bool,
    /// How long a request's operation is waited for before it is answered `unavailable` (a
    /// drive that stopped answering mid-request; `mneme_api::drive_check`); `None` =
    /// `mneme_api::drive_check::OPERATION_PATIENCE`. Tests shorten it.
    pub operation_patience: Option<std::time::Duration>,
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("Could not listen on 127.0.0.1:{port}: {source}. Pick another port with --port, or stop the program using it.")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("Another program listens on [::1]:{port}, where a browser opening localhost:{port} may connect before it tries 127.0.0.1 (and send it the access token). Pick another port with --port, or stop that program.")]
    Ipv6Taken { port: u16 },
    #[error("Could not make a random access token: {0}. The operating system's random source is unavailable.")]
    Random(String),
    #[error("The file watcher for live updates could not start: {0}.")]
    Watch(#[from] mneme_live::WatchError),
    #[error("The server stopped with an error: {0}.")]
    Io(#[from] std::io::Error),
    #[error("--scheduler: {0}")]
    Scheduler(#[from] mneme_scheduler::SchedulerError),
}

/// What every handler shares.
pub(crate) struct AppState {
    pub mneme: Mneme,
    pub token: String,
    pub port: u16,
    pub start_dir: PathBuf,
    pub ui_dir: Option<PathBuf>,
    pub events: events::Events,
    /// The background scheduler's events, when it runs in this server.
    pub scheduler: Option<tokio::sync::broadcast::Sender<Arc<mneme_api::SchedulerEvent>>>,
    /// [`ServeOptions::operation_patience`].
    pub operation_patience: std::time::Duration,
}

/// Serves until Ctrl-C. `ready` gets the bound address and the token once requests can be
/// accepted (print the URL there).
pub async fn serve(mneme: Mneme, opts: ServeOptions, ready: impl FnOnce(SocketAddr, &str)) -> Result<(), ServeError> {
    serve_until(mneme, opts, ready, async {
        // If the signal handler cannot be installed, run until the process is killed.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
    .await
}

/// Serves until `shutdown` completes, then lets open requests finish and ends event streams.
pub async fn serve_until(
    mneme: Mneme,
    opts: ServeOptions,
    ready: impl FnOnce(SocketAddr, &str),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let token = match opts.token {
        Some(t) => t,
        None => random_token()?,
    };
    // Loopback only: the API reads and writes a person's files and must never be reachable
    // from another machine.
    let (listener, listener_v6) = bind_loopback(opts.port).await?;
    let addr = listener.local_addr()?;
    let env = mneme.environment().clone();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let events = events::Events::start(&env, stop_rx)?;
    let start_dir = match opts.start_dir {
        Some(d) => d,
        None => std::env::current_dir()?,
    };
    let background = match opts.scheduler {
        true => match Background::start(&env, mneme.clock(), mneme.utc_offset()) {
            Ok(b) => Some(b),
            // A `mneme daemon` or the desktop app already runs the jobs; the page still shows
            // their runs from the shared run log.
            Err(e @ mneme_scheduler::SchedulerError::AlreadyRunning { .. }) => {
                eprintln!("mneme serve: background jobs stay off here: {e}");
                None
            }
            Err(e) => return Err(e.into()),
        },
        false => None,
    };
    let state = Arc::new(AppState {
        scheduler: background.as_ref().map(Background::channel),
        mneme,
        token,
        port: addr.port(),
        start_dir,
        ui_dir: opts.ui_dir.or_else(ui::default_ui_dir),
        events,
        operation_patience: opts.operation_patience.unwrap_or(mneme_api::drive_check::OPERATION_PATIENCE),
    });
    let app = router(state.clone());
    ready(addr, &state.token);
    let limits = Limits { header_read: HEADER_READ_TIMEOUT, write_stall: WRITE_STALL_TIMEOUT, shutdown_grace: SHUTDOWN_GRACE, max_connections: MAX_CONNECTIONS };
    serve_http(listener, listener_v6, app, limits, async move {
        shutdown.await;
        // Event streams never end on their own; graceful shutdown would wait for them.
        let _ = stop_tx.send(true);
    })
    .await?;
    if let Some(b) = background {
        b.shutdown().await;
    }
    Ok(())
}

/// How long a connection may take to send a request's headers. The page and the app send
/// them at once; a local process holding connections open by trickling headers is dropped.
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long an answer may wait for its client to read. A browser reads its sockets as data
/// arrives; a local process (no token needed: the UI's files are public) that asks for a
/// file and never reads would otherwise hold its connection, and the server's, forever.
const WRITE_STALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// How long a shutdown waits for requests in flight. Without a bound one client that stops
/// reading its answer kept `mneme serve` running after Ctrl-C. Operations run on blocking
/// threads, which the runtime waits for, so no file write is cut short by this.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// How many connections are open at once, at most. A browser opens six per host and the page
/// keeps one for its event stream; without a bound a local process opening thousands (each
/// held up to the 10 s header limit) took the process's file descriptors and memory, and the
/// UI with them. Past it a connection is closed to make room: the oldest that has not sent a
/// whole request yet (so half-open ones cannot keep the page out), else the oldest with no
/// request in flight (a kept-alive one idle between requests: any local process can hold 128
/// of those by sending one request on each). A connection whose answer is still being sent,
/// the page's event stream included, is never closed for a newcomer; when every one has a
/// request in flight the new one is closed at once.
pub const MAX_CONNECTIONS: usize = 128;
/// How many free IPv4 ports `--port 0` tries before giving up on one whose IPv6 twin is free.
const PORT_TRIES: usize = 20;

/// 127.0.0.1:`port`, and [::1] on the same port where the machine has IPv6. `localhost` may
/// resolve to ::1 first, and any local user can listen on [::1]:<port> (the port is listed
/// in /proc/net/tcp): someone who opened `localhost:<port>/?token=…` would send the token
/// there. Holding both leaves nothing to take; a taken [::1] twin means another port (or, for
/// a port given with `--port`, an error saying so).
async fn bind_loopback(port: u16) -> Result<(tokio::net::TcpListener, Option<tokio::net::TcpListener>), ServeError> {
    let mut tries = 0;
    loop {
        let v4 = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .await
            .map_err(|source| ServeError::Bind { port, source })?;
        let chosen = v4.local_addr()?.port();
        match tokio::net::TcpListener::bind((Ipv6Addr::LOCALHOST, chosen)).await {
            Ok(v6) => return Ok((v4, Some(v6))),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                tries += 1;
                if port != 0 || tries >= PORT_TRIES {
                    return Err(ServeError::Ipv6Taken { port: chosen });
                }
            }
            // No IPv6 loopback here (disabled, or not configured): nobody can listen there either.
            Err(_) => return Ok((v4, None)),
        }
    }
}

/// The time bounds [`serve_http`] puts on connections.
#[derive(Debug, Clone, Copy)]
struct Limits {
    header_read: std::time::Duration,
    write_stall: std::time::Duration,
    shutdown_grace: std::time::Duration,
    /// Open connections at most ([`MAX_CONNECTIONS`]).
    max_connections: usize,
}

/// `axum::serve` plus the bounds it does not set: HTTP/1.1 on `listener` until `shutdown`,
/// connections that trickle headers or stop reading answers dropped, at most
/// `max_connections` open (see [`MAX_CONNECTIONS`]), then open requests get `shutdown_grace`
/// to finish.
async fn serve_http(
    listener: tokio::net::TcpListener,
    listener_v6: Option<tokio::net::TcpListener>,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_read);
    // Connections live in this set so that those still open after the grace period are
    // dropped (closed) when serving ends, not left to the runtime.
    let mut connections = tokio::task::JoinSet::new();
    let open = slots::Open::default();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = accept(&listener, listener_v6.as_ref()) => match accepted {
                Ok((stream, peer)) => match stream.local_addr().map(|local| peer::classify(peer, local)) {
                    Ok(peer::Peer::Welcome) => stream,
                    // Another account's connection never takes a place (see peer.rs). The
                    // refusal is small enough for the socket's buffer, so it never waits.
                    Ok(peer::Peer::Foreign { uid }) => {
                        let _ = stream.try_write(&peer::refusal(uid));
                        // Closing with its request unread would reset the connection, and
                        // the refusal with it; take what has arrived.
                        let _ = stream.try_read(&mut [0u8; 4096]);
                        continue;
                    }
                    Err(_) => continue,
                },
                // Out of file descriptors and the like: wait instead of spinning.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            // Reap finished connections so the set does not grow with every one served.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            () = &mut shutdown => break,
        };
        let Some(slot) = open.admit(limits.max_connections) else {
            // Every slot has a request in flight: this one is closed at once.
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let requests = slot.requests.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            // Counted from here until the answer's body is dropped: hyper drops it once sent
            // to its end, or when the connection ends first. Held by the handler's future
            // until then, so a request abandoned before its answer is ready is uncounted too.
            let in_flight = requests.start();
            let mut router = router.clone();
            async move {
                let Ok(response) = tower_service::Service::call(&mut router, req).await;
                Ok::<_, std::convert::Infallible>(response.map(|body| axum::body::Body::new(slots::Counted::new(body, in_flight))))
            }
        });
        let io = TokioIo::new(stall::StallGuard::new(stream, limits.write_stall));
        let conn = graceful.watch(http.serve_connection(io, service));
        connections.spawn(async move {
            tokio::select! {
                _ = conn => {}
                // Closed to make room for a newer connection.
                () = slot.evicted.notified() => {}
            }
            drop(slot);
        });
    }
    drop(listener);
    drop(listener_v6);
    let _ = tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await;
    connections.shutdown().await;
    Ok(())
}

/// The next connection on either listener.
async fn accept(v4: &tokio::net::TcpListener, v6: Option<&tokio::net::TcpListener>) -> std::io::Result<(tokio::net::TcpStream, SocketAddr)> {
    match v6 {
        None => v4.accept().await,
        Some(v6) => tokio::select! {
            a = v4.accept() => a,
            a = v6.accept() => a,
        },
    }
}

mod slots {
    //! The open connections, counted, each with whether it has sent a whole request yet and
    //! how many of its requests are in flight (their answers not yet wholly sent).

    use axum::body::{Body, Bytes};
    use hyper::body::{Frame, SizeHint};
    use std::collections::BTreeMap;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};
    use tokio::sync::Notify;

    struct Entry {
        requests: Requests,
        evicted: Arc<Notify>,
    }

    /// Connections by the order they came in.
    #[derive(Default, Clone)]
    pub(crate) struct Open {
        inner: Arc<Mutex<(u64, BTreeMap<u64, Entry>)>>,
    }

    /// One connection's place; dropping it (the connection ended) frees the place.
    pub(crate) struct Slot {
        id: u64,
        open: Open,
        /// What the connection's requests have been; the service marks them.
        pub(crate) requests: Requests,
        /// Notified when the connection is closed to make room.
        pub(crate) evicted: Arc<Notify>,
    }

    /// One connection's requests: whether hyper has read a whole request's headers on it yet,
    /// and how many are in flight. The flag alone is not enough: a kept-alive connection that
    /// sent one request long ago and now sits idle is no more serving than a silent one.
    #[derive(Default, Clone)]
    pub(crate) struct Requests {
        requested: Arc<AtomicBool>,
        in_flight: Arc<AtomicUsize>,
    }

    impl Requests {
        /// A request came in; it counts as in flight until the returned guard is dropped.
        pub(crate) fn start(&self) -> InFlight {
            self.requested.store(true, Ordering::Relaxed);
            self.in_flight.fetch_add(1, Ordering::Relaxed);
            InFlight(self.in_flight.clone())
        }

        fn requested(&self) -> bool {
            self.requested.load(Ordering::Relaxed)
        }

        fn idle(&self) -> bool {
            self.in_flight.load(Ordering::Relaxed) == 0
        }
    }

    /// One request in flight; dropping it ends the request's count.
    pub(crate) struct InFlight(Arc<AtomicUsize>);

    impl Drop for InFlight {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// An answer's body that keeps its request in flight for as long as it lives: hyper drops
    /// it when the last of it is sent or the connection ends. The event stream never ends on
    /// its own, so its connection is never taken for a newcomer.
    pub(crate) struct Counted {
        body: Body,
        _in_flight: InFlight,
    }

    impl Counted {
        pub(crate) fn new(body: Body, in_flight: InFlight) -> Self {
            Counted { body, _in_flight: in_flight }
        }
    }

    impl hyper::body::Body for Counted {
        type Data = Bytes;
        type Error = axum::Error;

        fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
            Pin::new(&mut self.body).poll_frame(cx)
        }

        fn is_end_stream(&self) -> bool {
            self.body.is_end_stream()
        }

        // Passed on so that answers of a known length keep their Content-Length.
        fn size_hint(&self) -> SizeHint {
            self.body.size_hint()
        }
    }

    impl Open {
        /// A place for a new connection when fewer than `max` are open; else one is told to
        /// close and its place taken: the oldest that has not sent a whole request yet, else
        /// the oldest with no request in flight. `None` when every open connection has a
        /// request in flight (the new one is refused).
        pub(crate) fn admit(&self, max: usize) -> Option<Slot> {
            let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let (next, open) = &mut *guard;
            if open.len() >= max {
                let oldest = |pick: fn(&Requests) -> bool| open.iter().find(|(_, e)| pick(&e.requests)).map(|(id, _)| *id);
                let idle = oldest(|r| !r.requested()).or_else(|| oldest(Requests::idle))?;
                if let Some(e) = open.remove(&idle) {
                    // A stored permit: the connection's task closes it even if not yet waiting.
                    e.evicted.notify_one();
                }
            }
            *next += 1;
            let (requests, evicted) = (Requests::default(), Arc::new(Notify::new()));
            open.insert(*next, Entry { requests: requests.clone(), evicted: evicted.clone() });
            Some(Slot { id: *next, open: self.clone(), requests, evicted })
        }
    }

    impl Drop for Slot {
        fn drop(&mut self) {
            self.open.inner.lock().unwrap_or_else(|p| p.into_inner()).1.remove(&self.id);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn ids(open: &Open) -> Vec<u64> {
            open.inner.lock().unwrap().1.keys().copied().collect()
        }

        #[test]
        fn past_the_cap_silent_then_idle_ones_make_room_never_one_in_flight() {
            let open = Open::default();
            let streaming = open.admit(3).unwrap();
            let _stream = streaming.requests.start();
            let kept_alive = open.admit(3).unwrap();
            drop(kept_alive.requests.start());
            let _silent = open.admit(3).unwrap();
            // The silent one goes first, though the others are older.
            let newcomer = open.admit(3).unwrap();
            assert_eq!(ids(&open), [1, 2, 4]);
            // Then the oldest that asked for something no longer in flight; never the stream.
            drop(newcomer.requests.start());
            let next = open.admit(3).unwrap();
            assert_eq!(ids(&open), [1, 4, 5]);
            let _busy = [newcomer.requests.start(), next.requests.start()];
            assert!(open.admit(3).is_none(), "every one has a request in flight");
            assert_eq!(ids(&open), [1, 4, 5]);
        }
    }
}

mod stall {
    //! A socket whose writes fail once they have made no progress for a while.

    use std::future::Future;
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    use tokio::time::{Instant, Sleep};

    /// Wraps a connection: a write (or flush) that stays pending for `limit` fails with
    /// `TimedOut`, which ends the connection. Reads pass through (hyper bounds header reads).
    pub(crate) struct StallGuard<S> {
        inner: S,
        limit: Duration,
        /// Armed while a write is pending; reset whenever one completes.
        deadline: Option<Pin<Box<Sleep>>>,
    }

    impl<S> StallGuard<S> {
        pub(crate) fn new(inner: S, limit: Duration) -> Self {
            StallGuard { inner, limit, deadline: None }
        }

        /// Passes `poll` through; a pending write starts (or keeps) the stall clock.
        fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
            if poll.is_ready() {
                self.deadline = None;
                return poll;
            }
            let limit = self.limit;
            let deadline = self.deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
            match deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client read nothing of the answer for too long",
                ))),
                Poll::Pending => Poll::Pending,
            }
        }
    }

    impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
        fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
            self.watch(cx, poll)
        }

        fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
            let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
            self.watch(cx, poll)
        }

        fn is_write_vectored(&self) -> bool {
            self.inner.is_write_vectored()
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let poll = Pin::new(&mut self.inner).poll_flush(cx);
            self.watch(cx, poll)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
            self.watch(cx, poll)
        }
    }
}

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/api/events", get(events::stream))
        .route("/api/{method}", post(methods::call))
        .fallback(ui::serve_ui)
        // Whole-file saves carry the file in the body; CLAUDE.md files are small, but the
        // default 2 MB would refuse a large memory folder's index pasted in whole.
        .layer(DefaultBodyLimit::max(16 * 1024 * 1024))
        .layer(axum::middleware::from_fn_with_state(state.clone(), security::guard))
        .with_state(state)
}

/// 32 bytes from the operating system's random source, in lowercase hex.
fn random_token() -> Result<String, ServeError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| ServeError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Runs [`serve`] on a fresh multi-threaded runtime, for a command line that is otherwise
/// synchronous.
pub fn serve_blocking(mneme: Mneme, opts: ServeOptions, ready: impl FnOnce(SocketAddr, &str)) -> Result<(), ServeError> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(serve(mneme, opts, ready))
}
