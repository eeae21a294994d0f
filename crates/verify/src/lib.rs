//! "Check with my Claude Code": run the user's own `claude` once, offline, against a stub of
//! the Anthropic Messages API that listens on 127.0.0.1, and capture the first request it
//! sends, so the api crate can compare what Claude Code really loads with Mneme's view.
//!
//! This crate only runs and captures; it knows nothing about memory. It is separate from the
//! api crate so that HTTP stays out of the engine: the stub is a minimal HTTP/1.1 reader on
//! `std::net` (one request shape from one client, so a server framework would add more than it
//! saves), answering every `POST /v1/messages` with a one-word reply in the form Claude Code
//! asked for (an SSE stream when the body says `"stream": true`, else a JSON message), which is
//! what makes `claude -p` finish on its own. It serves only requests with its own random key,
//! which only the Claude Code it runs is given, and bounds what any client can make it read.
//!
//! Bounded time always: Claude Code runs in a process group of its own and the whole group is
//! killed when the deadline passes, or shortly after the request has been captured if it does
//! not exit by itself.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The largest request body the stub reads (Claude Code's first request, with every instruction
/// file and the memory index, is far smaller); a larger one closes the connection.
const MAX_BODY: usize = 32 << 20;
/// The longest request or header line it reads.
const MAX_LINE: u64 = 64 << 10;
/// The most header lines in one request.
const MAX_HEADERS: usize = 200;
/// The most connections served at once; more are closed at once. Claude Code opens a few.
const MAX_CONNECTIONS: usize = 32;
/// How long a new connection may take to send its first request's headers (and so show the
/// key) before it is closed.
const FIRST_HEADERS_WITHIN: Duration = Duration::from_secs(10);
/// How long any connection is served at most: longer than any run is allowed to take.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// How long Claude Code may keep running after its request was captured and answered before
/// its process group is killed (it normally exits within a second).
const AFTER_CAPTURE: Duration = Duration::from_secs(15);

/// How much of Claude Code's stderr a failure shows.
const STDERR_TAIL: usize = 2000;
/// How long the end of its stderr is waited for once its group is gone.
const STDERR_GRACE: Duration = Duration::from_secs(1);

/// The variables that keep Claude Code on the stub at `base_url` (whose key is `api_key`) and
/// quiet: its API address and key, and every switch that stops it from reaching anything else
/// (updates, telemetry and its exporters, error reports, other traffic). Set in its environment
/// and, through [`flag_env`], in flag settings, so that no settings file's `env` block can
/// point it elsewhere.
fn offline_vars(base_url: &str, api_key: &str) -> Vec<(&'static str, String)> {
    vec![
        ("ANTHROPIC_BASE_URL", base_url.to_string()),
        ("ANTHROPIC_API_KEY", api_key.to_string()),
        ("DISABLE_AUTOUPDATER", "1".to_string()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
        ("DISABLE_TELEMETRY", "1".to_string()),
        ("DISABLE_ERROR_REPORTING", "1".to_string()),
        ("CLAUDE_CODE_ENABLE_TELEMETRY", "0".to_string()),
        ("OTEL_METRICS_EXPORTER", "none".to_string()),
        ("OTEL_LOGS_EXPORTER", "none".to_string()),
        ("OTEL_TRACES_EXPORTER", "none".to_string()),
        ("NO_PROXY", "127.0.0.1,localhost".to_string()),
        ("no_proxy", "127.0.0.1,localhost".to_string()),
    ]
}

/// Variables that would send Claude Code to another provider or gateway, through a proxy, to a
/// telemetry collector, or sign it in with real credentials: never passed on, and set to ""
/// in flag settings (which outrank every settings file but the managed policy), since a
/// settings file's `env` block counts exactly as the shell. An empty value is what Claude Code
/// takes for unset. [`is_withheld`] also catches names of these kinds not listed here.
pub const WITHHELD_VARS: &[&str] = &[
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_BEDROCK_MANTLE_BASE_URL",
    "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_FOUNDRY_BASE_URL",
    "ANTHROPIC_FOUNDRY_RESOURCE",
    "ANTHROPIC_FOUNDRY_API_KEY",
    "ANTHROPIC_AWS_BASE_URL",
    "ANTHROPIC_GOOGLE_CLOUD_BASE_URL",
    "ANTHROPIC_IDENTITY_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "CLAUDE_CODE_USE_GATEWAY",
    "CLAUDE_CODE_USE_MANTLE",
    "CLAUDE_CODE_USE_ANTHROPIC_AWS",
    "CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD",
    "CLAUDE_CODE_API_BASE_URL",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
];

/// Whether `name` is withheld: listed in [`WITHHELD_VARS`], or of a kind releases keep adding
/// (another provider's `CLAUDE_CODE_USE_*` switch is listed; by shape: an address ending in
/// `_BASE_URL`, a proxy, an OpenTelemetry setting, a token or key). The stub's own address
/// and key and the proxy exemption for loopback are not.
pub fn is_withheld(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if matches!(upper.as_str(), "ANTHROPIC_BASE_URL" | "ANTHROPIC_API_KEY" | "NO_PROXY") {
        return false;
    }
    WITHHELD_VARS.contains(&name)
        || upper.ends_with("_BASE_URL")
        || upper.contains("PROXY")
        || upper.starts_with("OTEL_")
        || upper.ends_with("_AUTH_TOKEN")
        || upper.ends_with("_OAUTH_TOKEN")
        || upper.ends_with("_API_KEY")
}

/// The `env` block of the flag settings a sandboxed run gets: every withheld variable (those
/// listed, and those of `found`, the names the user's environment and settings files set, that
/// [`is_withheld`] catches) set to "", then [`offline_vars`].
fn flag_env(base_url: &str, api_key: &str, found: impl IntoIterator<Item = String>) -> serde_json::Map<String, Value> {
    let mut env = serde_json::Map::new();
    for name in WITHHELD_VARS.iter().map(|n| n.to_string()).chain(found.into_iter().filter(|n| is_withheld(n))) {
        env.insert(name, Value::String(String::new()));
    }
    for (name, value) in offline_vars(base_url, api_key) {
        env.insert(name.to_string(), Value::String(value));
    }
    env
}

/// One run of Claude Code.
#[derive(Debug, Clone)]
pub struct Run {
    pub bin: PathBuf,
    /// The folder it starts in.
    pub cwd: PathBuf,
    /// Its whole environment (nothing else is inherited) but the withheld variables;
    /// [`Stub::offline_vars`] are added on top.
    pub vars: BTreeMap<String, String>,
    /// Arguments after `-p PROMPT --output-format json`.
    pub args: Vec<String>,
    pub prompt: String,
    /// The run and its process group are killed after this.
    pub timeout: Duration,
}

/// What Claude Code sent.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The body of its first `POST /v1/messages`.
    pub request: Value,
    /// Its exit status; `None` when it had to be killed after the capture.
    pub status: Option<ExitStatus>,
    pub stderr_tail: String,
}

/// Why no request was captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureError {
    /// The stub could not listen on 127.0.0.1.
    Stub(String),
    /// The binary could not be started.
    Spawn(String),
    /// It ran past the deadline without sending a request; its group was killed.
    TimedOut { secs: u64, stderr_tail: String },
    /// It exited without sending a request.
    NoRequest { status: String, stderr_tail: String },
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureError::Stub(e) => write!(f, "could not listen on 127.0.0.1 for Claude Code: {e}"),
            CaptureError::Spawn(e) => write!(f, "could not start Claude Code: {e}"),
            CaptureError::TimedOut { secs, stderr_tail } => {
                write!(f, "Claude Code sent no request within {secs} s and was stopped")?;
                tail(f, stderr_tail)
            }
            CaptureError::NoRequest { status, stderr_tail } => {
                write!(f, "Claude Code exited ({status}) without sending a request")?;
                tail(f, stderr_tail)
            }
        }
    }
}

fn tail(f: &mut std::fmt::Formatter<'_>, stderr_tail: &str) -> std::fmt::Result {
    if stderr_tail.trim().is_empty() {
        write!(f, "; it printed nothing on stderr")
    } else {
        write!(f, "; the end of its stderr:\n{}", stderr_tail.trim_end())
    }
}

impl std::error::Error for CaptureError {}

/// A stub Anthropic API on 127.0.0.1 (a free port), recording every `POST /v1/messages` body.
/// It stops when dropped.
///
/// Any local user can connect to a loopback port, so it serves only requests that carry its
/// key, a random one per stub that only the Claude Code it runs is given: anyone else's is
/// refused before its body is read, so no one can plant the request a check compares (or the
/// text the agent-memory probe caches for good). Whatever a client sends is bounded: line and
/// body sizes, connections at once, and how long each is served.
pub struct Stub {
    port: u16,
    api_key: String,
    messages: Arc<Mutex<Vec<Value>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Set by [`Stub::start_launching`]: sub-agents the main loop is made to start.
    launch: Option<Arc<Launch>>,
}

/// Sub-agents for Claude Code's main loop to start through its Agent tool (named `Task` in
/// older releases): its first turn is answered with one tool call per agent, each given
/// `task` as its prompt, so each sub-agent's own first request can be captured.
pub struct Launch {
    pub agent_types: Vec<String>,
    /// The prompt every sub-agent gets; it also tells their requests from the main loop's.
    pub task: String,
    launched: AtomicBool,
}

impl Stub {
    pub fn start() -> Result<Stub, CaptureError> {
        Self::start_with(None)
    }

    /// A stub whose first main-loop turn starts these sub-agents (see [`Launch`]).
    /// [`Stub::capture`] then waits for one request from each before its after-capture grace.
    pub fn start_launching(agent_types: Vec<String>, task: String) -> Result<Stub, CaptureError> {
        Self::start_with(Some(Arc::new(Launch { agent_types, task, launched: AtomicBool::new(false) })))
    }

    fn start_with(launch: Option<Arc<Launch>>) -> Result<Stub, CaptureError> {
        let api_key = random_key().map_err(|e| CaptureError::Stub(format!("no random key: {e}")))?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| CaptureError::Stub(e.to_string()))?;
        let port = listener.local_addr().map_err(|e| CaptureError::Stub(e.to_string()))?.port();
        let messages = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let server = Arc::new(Server { api_key: api_key.clone(), log: messages.clone(), launch: launch.clone(), stop: stop.clone() });
        let active = Arc::new(AtomicUsize::new(0));
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if server.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    active.fetch_sub(1, Ordering::SeqCst);
                    continue;
                }
                let (server, active) = (server.clone(), active.clone());
                std::thread::spawn(move || {
                    serve_connection(conn, &server);
                    active.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Ok(Stub { port, api_key, messages, stop, thread: Some(thread), launch })
    }

    /// The key requests must carry (`x-api-key`, or `Authorization: Bearer`).
    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    /// The variables that keep Claude Code on this stub and quiet (see [`offline_vars`]).
    pub fn offline_vars(&self) -> Vec<(&'static str, String)> {
        offline_vars(&self.base_url(), &self.api_key)
    }

    /// The `env` block for a run's flag settings (see [`flag_env`]); `found` are the names the
    /// user's settings files set, so that any of them that is withheld is blanked too.
    pub fn flag_env(&self, found: impl IntoIterator<Item = String>) -> serde_json::Map<String, Value> {
        flag_env(&self.base_url(), &self.api_key, found)
    }

    /// The requests sub-agents sent (those whose messages carry the launch's task).
    pub fn sub_agent_requests(&self) -> Vec<Value> {
        let Some(launch) = &self.launch else { return Vec::new() };
        self.messages().into_iter().filter(|b| is_sub_agent(b, &launch.task)).collect()
    }

    fn captured_enough(&self) -> bool {
        match &self.launch {
            None => !self.messages().is_empty(),
            Some(l) => self.sub_agent_requests().len() >= l.agent_types.len(),
        }
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every `POST /v1/messages` body so far, in arrival order.
    pub fn messages(&self) -> Vec<Value> {
        self.messages.lock().expect("stub log").clone()
    }

    /// Runs Claude Code against this stub and answers its first request.
    pub fn capture(&self, run: &Run) -> Result<Captured, CaptureError> {
        let mut cmd = Command::new(&run.bin);
        cmd.arg("-p").arg(&run.prompt).arg("--output-format").arg("json").args(&run.args);
        cmd.env_clear().envs(&run.vars);
        for name in run.vars.keys().filter(|n| is_withheld(n)) {
            cmd.env_remove(name);
        }
        cmd.envs(self.offline_vars());
        // A group of its own, so the deadline can stop it and every helper it started.
        cmd.current_dir(&run.cwd).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).process_group(0);
        // A binary written a moment ago (an update in progress) can be busy for a few
        // milliseconds before it runs (`spawn_past_busy`).
        let mut child = mneme_core::process::spawn_past_busy(&mut cmd).map_err(|e| CaptureError::Spawn(format!("{}: {e}", run.bin.display())))?;
        let group = rustix::process::Pid::from_raw(child.id() as i32);
        let stderr = child.stderr.take().expect("piped stderr");
        let (stderr_tail, stderr_done) = read_tail(stderr);
        let kill_group = || {
            if let Some(pid) = group {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        };
        let started = Instant::now();
        let mut captured_at: Option<Instant> = None;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(_) => {
                    kill_group();
                    let _ = child.wait();
                    break None;
                }
            }
            if captured_at.is_none() && self.captured_enough() {
                captured_at = Some(Instant::now());
            }
            let late = captured_at.is_some_and(|at| at.elapsed() > AFTER_CAPTURE);
            if late || started.elapsed() > run.timeout {
                kill_group();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Helpers it left behind would hold stderr open; the group goes with it. One that left
        // the group can hold it for as long as it likes: the tail is taken as it is after a
        // moment, and the reader is left to end when that helper does.
        kill_group();
        let _ = stderr_done.recv_timeout(STDERR_GRACE);
        let stderr_tail = tail_of(&stderr_tail.lock().expect("stderr tail"));
        match self.messages().into_iter().next() {
            Some(request) => Ok(Captured { request, status, stderr_tail }),
            None => match status {
                None => Err(CaptureError::TimedOut { secs: run.timeout.as_secs(), stderr_tail }),
                Some(status) => Err(CaptureError::NoRequest { status: status.to_string(), stderr_tail }),
            },
        }
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads `from` to its end on a thread of its own, keeping only its last bytes (a few times
/// [`STDERR_TAIL`], so a run that prints without end costs no memory), and says on the channel
/// when it is done.
fn read_tail(mut from: impl Read + Send + 'static) -> (Arc<Mutex<Vec<u8>>>, std::sync::mpsc::Receiver<()>) {
    let tail = Arc::new(Mutex::new(Vec::new()));
    let (done, finished) = std::sync::mpsc::channel();
    let kept = tail.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = from.read(&mut buf) {
            let mut t = kept.lock().expect("stderr tail");
            t.extend_from_slice(&buf[..n]);
            if t.len() > 4 * STDERR_TAIL {
                let cut = t.len() - 2 * STDERR_TAIL;
                t.drain(..cut);
            }
        }
        let _ = done.send(());
    });
    (tail, finished)
}

fn tail_of(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let start = text.len().saturating_sub(STDERR_TAIL);
    let start = (start..text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
    text[start..].to_string()
}

/// A key no one else can guess: 128 bits from the kernel.
fn random_key() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(format!("sk-ant-mneme-{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// What every connection of one stub shares.
struct Server {
    api_key: String,
    log: Arc<Mutex<Vec<Value>>>,
    launch: Option<Arc<Launch>>,
    stop: Arc<AtomicBool>,
}

/// A connection read with a deadline that the stub's stop also ends: each read waits at most a
/// moment, so a client that sends nothing, or a byte at a time, is dropped in time.
struct Timed<'a> {
    conn: TcpStream,
    until: Instant,
    stop: &'a AtomicBool,
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let left = self.until.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stop.load(Ordering::SeqCst) {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            self.conn.set_read_timeout(Some(left.min(Duration::from_millis(250))))?;
            match self.conn.read(buf) {
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
                other => return other,
            }
        }
    }
}

/// One request's head.
struct Head {
    method: String,
    path: String,
    length: usize,
    chunked: bool,
    authorized: bool,
}

/// Serves requests on one keep-alive connection until the client closes it, sends something
/// malformed or oversized, or shows no key.
fn serve_connection(conn: TcpStream, server: &Server) {
    let started = Instant::now();
    let Ok(write_half) = conn.try_clone() else { return };
    let mut reader = BufReader::new(Timed { conn, until: started + FIRST_HEADERS_WITHIN, stop: &server.stop });
    let mut writer = write_half;
    while let Some(head) = read_head(&mut reader, &server.api_key) {
        if !head.authorized {
            let error = json!({"type": "error", "error": {"type": "authentication_error", "message": "this stub serves only the Claude Code Mneme started"}});
            let _ = respond(&mut writer, "401 Unauthorized", "application/json", &error.to_string(), true);
            break;
        }
        if head.length > MAX_BODY {
            let error = json!({"type": "error", "error": {"type": "request_too_large", "message": "request body too large"}});
            let _ = respond(&mut writer, "413 Payload Too Large", "application/json", &error.to_string(), true);
            break;
        }
        // A client with the key is the Claude Code this stub runs.
        reader.get_mut().until = started + CONNECTION_LIFETIME;
        let Some(body) = read_body(&mut reader, &head) else { break };
        let (content_type, payload) = answer(server, &head, &body);
        if respond(&mut writer, "200 OK", content_type, &payload, false).is_err() {
            break;
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
}

fn respond(w: &mut TcpStream, status: &str, content_type: &str, payload: &str, close: bool) -> std::io::Result<()> {
    let connection = if close { "Connection: close\r\n" } else { "" };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{connection}request-id: req_mneme_verify\r\n\r\n",
        payload.len()
    );
    w.write_all(head.as_bytes())?;
    w.write_all(payload.as_bytes())?;
    w.flush()
}

/// The reply to one authorized request.
fn answer(server: &Server, head: &Head, raw: &[u8]) -> (&'static str, String) {
    let body: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
    let path = head.path.split('?').next().unwrap_or("");
    if head.method == "POST" && path.ends_with("/v1/messages") {
        server.log.lock().expect("stub log").push(body.clone());
        let model = body.get("model").and_then(Value::as_str).unwrap_or("claude-stub").to_string();
        let calls = server.launch.as_deref().and_then(|l| launch_calls(l, &body));
        let streamed = body.get("stream").and_then(Value::as_bool) == Some(true);
        match (calls, streamed) {
            (Some(calls), true) => ("text/event-stream", sse_tool_reply(&model, &calls)),
            (Some(calls), false) => ("application/json", json_tool_reply(&model, &calls).to_string()),
            (None, true) => ("text/event-stream", sse_reply(&model)),
            (None, false) => ("application/json", json_reply(&model).to_string()),
        }
    } else if path.ends_with("/v1/messages/count_tokens") {
        ("application/json", json!({"input_tokens": raw.len() / 4 + 1}).to_string())
    } else if path.starts_with("/v1/models") {
        let model = json!({"type": "model", "id": "claude-sonnet-4-5", "display_name": "stub", "created_at": "2025-01-01T00:00:00Z"});
        ("application/json", json!({"data": [model], "has_more": false, "first_id": null, "last_id": null}).to_string())
    } else {
        ("application/json", "{}".to_string())
    }
}

/// One line of at most [`MAX_LINE`] bytes, with its line end; `None` at end of stream, on a
/// read error, on a longer line or one that is not UTF-8.
fn read_line(r: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    let n = r.by_ref().take(MAX_LINE).read_line(&mut line).ok()?;
    (n > 0 && line.ends_with('\n')).then_some(line)
}

/// Reads one HTTP/1.1 request head (a blank line before it is tolerated, as between keep-alive
/// requests); `None` at end of stream or on anything malformed, which closes the connection.
fn read_head(r: &mut impl BufRead, api_key: &str) -> Option<Head> {
    let mut line = read_line(r)?;
    if line.trim().is_empty() {
        line = read_line(r)?;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut head = Head { method, path, length: 0, chunked: false, authorized: false };
    for _ in 0..=MAX_HEADERS {
        let h = read_line(r)?;
        let h = h.trim_end();
        if h.is_empty() {
            return Some(head);
        }
        let (name, value) = h.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            head.length = value.parse().ok()?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") && value.to_ascii_lowercase().contains("chunked") {
            head.chunked = true;
        } else if name.eq_ignore_ascii_case("x-api-key") {
            head.authorized |= same_key(value, api_key);
        } else if name.eq_ignore_ascii_case("authorization") {
            head.authorized |= value.strip_prefix("Bearer ").is_some_and(|v| same_key(v.trim(), api_key));
        }
    }
    None
}

/// Compares a key without stopping at the first byte that differs (the time a refusal takes
/// says nothing about how much of the key was right).
fn same_key(given: &str, key: &str) -> bool {
    given.len() == key.len() && given.bytes().zip(key.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// The body after `head` (`Content-Length` or chunked), at most [`MAX_BODY`] bytes; `None` when
/// it is malformed, larger or cut short.
fn read_body(r: &mut impl BufRead, head: &Head) -> Option<Vec<u8>> {
    if !head.chunked {
        let mut body = Vec::new();
        r.by_ref().take(head.length as u64).read_to_end(&mut body).ok()?;
        return (body.len() == head.length).then_some(body);
    }
    let mut body = Vec::new();
    loop {
        let size = read_line(r)?;
        let n = usize::from_str_radix(size.trim().split(';').next()?.trim(), 16).ok()?;
        if n == 0 {
            // Trailers, up to the blank line.
            for _ in 0..=MAX_HEADERS {
                if read_line(r)?.trim().is_empty() {
                    return Some(body);
                }
            }
            return None;
        }
        if body.len().saturating_add(n) > MAX_BODY {
            return None;
        }
        let before = body.len();
        r.by_ref().take(n as u64).read_to_end(&mut body).ok()?;
        if body.len() - before != n {
            return None;
        }
        read_line(r)?;
    }
}

/// Whether a request comes from a sub-agent the launch started: its conversation opens with
/// the launch's task.
fn is_sub_agent(body: &Value, task: &str) -> bool {
    let first = body.get("messages").and_then(|m| m.get(0));
    first.is_some_and(|m| m.to_string().contains(task))
}

/// The tool calls that start the launch's sub-agents, when `body` is the main loop's first
/// turn (it offers the Agent tool, has no tool result yet and is not a sub-agent's), once.
fn launch_calls(launch: &Launch, body: &Value) -> Option<Vec<Value>> {
    let tools = body.get("tools")?.as_array()?;
    let tool = tools.iter().filter_map(|t| t.get("name")?.as_str()).find(|n| *n == "Agent" || *n == "Task")?;
    if is_sub_agent(body, &launch.task) || body.to_string().contains("\"tool_result\"") {
        return None;
    }
    if launch.launched.swap(true, Ordering::SeqCst) {
        return None;
    }
    Some(
        launch
            .agent_types
            .iter()
            .enumerate()
            .map(|(i, agent)| {
                json!({"type": "tool_use", "id": format!("toolu_mneme_{i}"), "name": tool,
                       "input": {"description": format!("probe {i}"), "prompt": launch.task, "subagent_type": agent}})
            })
            .collect(),
    )
}

fn json_tool_reply(model: &str, calls: &[Value]) -> Value {
    json!({
        "id": "msg_mneme_verify", "type": "message", "role": "assistant", "model": model,
        "content": calls, "stop_reason": "tool_use", "stop_sequence": null, "usage": usage(),
    })
}

/// A stream of tool calls: each block starts empty and gets its input as one JSON delta.
fn sse_tool_reply(model: &str, calls: &[Value]) -> String {
    let mut events = vec![("message_start", json!({"type": "message_start", "message": {
        "id": "msg_mneme_verify", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage()}}))];
    for (i, call) in calls.iter().enumerate() {
        let mut start = call.clone();
        start["input"] = json!({});
        events.push(("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": start})));
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": call["input"].to_string()}}),
        ));
        events.push(("content_block_stop", json!({"type": "content_block_stop", "index": i})));
    }
    events.push(("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 1}})));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events.iter().map(|(name, data)| format!("event: {name}\ndata: {data}\n\n")).collect()
}

fn usage() -> Value {
    json!({"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn json_reply(model: &str) -> Value {
    json!({
        "id": "msg_mneme_verify", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn", "stop_sequence": null, "usage": usage(),
    })
}

/// The smallest complete stream Claude Code accepts: one text block, then `end_turn`.
fn sse_reply(model: &str) -> String {
    let events = [
        ("message_start", json!({"type": "message_start", "message": {
            "id": "msg_mneme_verify", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage()}})),
        ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}})),
        ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 1}})),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    events.iter().map(|(name, data)| format!("event: {name}\ndata: {data}\n\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(stub: &Stub) -> u16 {
        stub.port
    }

    /// Sends `raw` on a new connection and reads one response (empty when the stub closed the
    /// connection without answering).
    fn exchange(port: u16, raw: &[u8]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        // The stub may close before taking everything; what matters is its answer.
        let _ = s.write_all(raw);
        let mut r = BufReader::new(s);
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut l = String::new();
            if r.read_line(&mut l).unwrap_or(0) == 0 {
                return head;
            }
            if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            head.push_str(&l);
            if l == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        r.read_exact(&mut body).unwrap();
        head + &String::from_utf8(body).unwrap()
    }

    fn post(stub: &Stub, path: &str, body: &str, chunked: bool) -> String {
        let key = stub.api_key();
        let req = if chunked {
            format!("POST {path} HTTP/1.1\r\nHost: x\r\nx-api-key: {key}\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n", body.len())
        } else {
            format!("POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\n\r\n{body}", body.len())
        };
        exchange(port(stub), req.as_bytes())
    }

    #[test]
    fn stub_records_messages_and_answers_in_the_form_asked() {
        let stub = Stub::start().unwrap();
        let streamed = post(&stub, "/v1/messages?beta=true", r#"{"model":"m","stream":true,"messages":[]}"#, false);
        assert!(streamed.contains("text/event-stream") && streamed.contains("event: message_stop"), "{streamed}");
        let plain = post(&stub, "/v1/messages", r#"{"model":"m","messages":[1]}"#, true);
        assert!(plain.contains("\"stop_reason\":\"end_turn\""), "{plain}");
        post(&stub, "/v1/messages/count_tokens", "{}", false);
        let got = stub.messages();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1]["messages"], json!([1]));
    }

    /// Another local user can reach the port but not the key: a request without it, or with
    /// another stub's, is refused before its body is read and never recorded; with it, a body
    /// larger than the cap, a header line longer than the cap, or a chunk past the cap closes
    /// the connection instead of being read (or aborting the process on a huge allocation);
    /// connections past the cap are closed at once.
    #[test]
    fn the_stub_serves_only_its_own_claude_code_and_bounds_what_it_reads() {
        let stub = Stub::start().unwrap();
        let other = Stub::start().unwrap();
        assert_ne!(stub.api_key(), other.api_key(), "a key per stub");
        let forged = r#"{"model":"m","messages":[{"role":"user","content":"forged"}]}"#;
        for auth in ["", &format!("x-api-key: {}\r\n", other.api_key()), &format!("x-api-key: {}x\r\n", stub.api_key())] {
            // A body that never comes: the refusal does not wait for it.
            let req = format!("POST /v1/messages HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 1000\r\n\r\n{forged}");
            let reply = exchange(port(&stub), req.as_bytes());
            assert!(reply.starts_with("HTTP/1.1 401"), "{auth:?}: {reply}");
        }
        assert!(stub.messages().is_empty());

        let key = stub.api_key();
        let huge = format!("POST /v1/messages HTTP/1.1\r\nx-api-key: {key}\r\nContent-Length: 99999999999999\r\n\r\n");
        assert!(exchange(port(&stub), huge.as_bytes()).starts_with("HTTP/1.1 413"));
        let long_line = format!("POST /v1/messages HTTP/1.1\r\nx-api-key: {key}\r\nX-Filler: {}\r\n\r\n", "a".repeat(70_000));
        assert_eq!(exchange(port(&stub), long_line.as_bytes()), "", "closed unanswered");
        let chunked = format!("POST /v1/messages HTTP/1.1\r\nx-api-key: {key}\r\nTransfer-Encoding: chunked\r\n\r\nffffffffff\r\n");
        assert_eq!(exchange(port(&stub), chunked.as_bytes()), "", "closed unanswered");
        assert!(stub.messages().is_empty());

        // Idle connections beyond the cap are closed at once; the capped ones wait. (The
        // connections above are closed; their threads end a moment later.)
        std::thread::sleep(Duration::from_millis(200));
        let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS + 5).map(|_| TcpStream::connect(("127.0.0.1", port(&stub))).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(300));
        let closed = idle
            .iter()
            .filter(|c| {
                c.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                matches!((&**c).read(&mut [0u8; 1]), Ok(0))
            })
            .count();
        assert_eq!(closed, 5);
        drop(idle);
        // Its own client is still served.
        std::thread::sleep(Duration::from_millis(300));
        assert!(post(&stub, "/v1/messages", r#"{"model":"m","messages":[]}"#, false).starts_with("HTTP/1.1 200"));
        assert_eq!(stub.messages().len(), 1);
    }

    #[test]
    fn flag_settings_blank_every_withheld_variable_found_and_keep_the_rest() {
        let env = flag_env("http://127.0.0.1:9", "k", ["ANTHROPIC_NEW_BASE_URL", "https_proxy", "OTEL_EXPORTER_OTLP_PROTOCOL", "CLAUDE_CODE_DISABLE_AUTO_MEMORY"].map(String::from));
        for name in ["CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_NEW_BASE_URL", "https_proxy", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            assert_eq!(env[name], "", "{name}");
        }
        assert!(!env.contains_key("CLAUDE_CODE_DISABLE_AUTO_MEMORY"), "memory switches are the user's");
        assert_eq!((env["ANTHROPIC_BASE_URL"].as_str(), env["NO_PROXY"].as_str()), (Some("http://127.0.0.1:9"), Some("127.0.0.1,localhost")));
        assert_eq!((env["CLAUDE_CODE_ENABLE_TELEMETRY"].as_str(), env["OTEL_LOGS_EXPORTER"].as_str()), (Some("0"), Some("none")));
    }

    #[test]
    fn a_missing_binary_is_a_spawn_error() {
        let stub = Stub::start().unwrap();
        let run = Run {
            bin: "/nonexistent/claude".into(),
            cwd: "/".into(),
            vars: BTreeMap::new(),
            args: vec![],
            prompt: "hi".into(),
            timeout: Duration::from_secs(5),
        };
        assert!(matches!(stub.capture(&run), Err(CaptureError::Spawn(_))));
    }

    /// A run of `script`, written as an executable `claude` in `dir`, with only a system PATH.
    fn script_run(dir: &std::path::Path, script: &str, timeout: Duration) -> Run {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("claude");
        std::fs::write(&bin, script).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Run { bin, cwd: dir.to_path_buf(), vars: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]), args: vec![], prompt: "hi".into(), timeout }
    }

    #[test]
    fn a_run_that_never_asks_is_stopped_at_the_deadline_with_its_group() {
        let dir = tempfile_dir("deadline");
        // A shell that starts a background helper and hangs: both must be gone afterwards.
        let run = script_run(&dir, &format!("#!/bin/sh\necho starting >&2\nsleep 300 &\necho $! > {}/helper\nsleep 300\n", dir.display()), Duration::from_secs(2));
        let stub = Stub::start().unwrap();
        let t = Instant::now();
        let err = stub.capture(&run).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(matches!(&err, CaptureError::TimedOut { stderr_tail, .. } if stderr_tail.contains("starting")), "{err:?}");
        let helper: i32 = std::fs::read_to_string(dir.join("helper")).unwrap().trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(!std::path::Path::new(&format!("/proc/{helper}")).exists() || proc_is_zombie(helper), "helper {helper} survived");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A helper that leaves the process group keeps stderr open for minutes after the run
    /// exits: the capture still ends at once, with the end of what was printed (a flood of it
    /// kept to its tail).
    #[test]
    fn a_helper_that_leaves_the_group_holding_stderr_does_not_hold_the_capture() {
        let dir = tempfile_dir("escape");
        let script = format!(
            "#!/bin/sh\necho starting >&2\nsetsid sh -c 'echo $$ > {}/escaped; exec sleep 300' &\nsleep 0.3\nhead -c 3000000 /dev/zero | tr '\\0' x >&2\necho the-end >&2\nexit 3\n",
            dir.display()
        );
        let run = script_run(&dir, &script, Duration::from_secs(60));
        let stub = Stub::start().unwrap();
        let t = Instant::now();
        let err = stub.capture(&run).unwrap_err();
        let took = t.elapsed();
        let escaped: i32 = std::fs::read_to_string(dir.join("escaped")).unwrap().trim().parse().unwrap();
        let _ = rustix::process::kill_process(rustix::process::Pid::from_raw(escaped).unwrap(), rustix::process::Signal::KILL);
        assert!(took < Duration::from_secs(10), "took {took:?}");
        let CaptureError::NoRequest { stderr_tail, .. } = err else { panic!("{err:?}") };
        assert!(stderr_tail.ends_with("xthe-end\n") && stderr_tail.len() <= STDERR_TAIL, "{} bytes: ...{}", stderr_tail.len(), &stderr_tail[stderr_tail.len().saturating_sub(50)..]);
        let _ = std::fs::remove_dir_all(dir);
    }

    fn proc_is_zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map(|s| s.contains(") Z ")).unwrap_or(true)
    }

    /// A folder of this test's own (tests run in parallel).
    fn tempfile_dir(test: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mneme-verify-test-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
