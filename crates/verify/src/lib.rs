//! "Check with my Claude Code": run the user's own `claude` once, offline, against a stub of
//! the Anthropic Messages API that listens on 127.0.0.1, and capture the first request it
//! sends, so the api crate can compare what Claude Code really loads with Mneme's view.
//!
//! This crate only runs and captures; it knows nothing about memory. It is separate from the
//! api crate so that HTTP stays out of the engine: the stub is a minimal HTTP/1.1 reader on
//! `std::net` (one request shape from one client, so a server framework would add more than it
//! saves), answering every `POST /v1/messages` with a one-word reply in the form Claude Code
//! asked for (an SSE stream when the body says `"stream": true`, else a JSON message), which is
//! what makes `claude -p` finish on its own.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The dummy key Claude Code is given: the stub accepts anything, and no real key is ever read.
pub const DUMMY_API_KEY: &str = "sk-ant-mneme-verify-offline";

/// How long Claude Code may keep running after its request was captured and answered before
/// its process group is killed (it normally exits within a second).
const AFTER_CAPTURE: Duration = Duration::from_secs(15);

/// How much of Claude Code's stderr a failure shows.
const STDERR_TAIL: usize = 2000;

/// The variables that keep Claude Code on the stub and quiet: its API address and key, and
/// every switch that stops it from reaching anything else (updates, telemetry and its
/// exporters, error reports, other traffic). Set in its environment and, through
/// [`flag_env`], in flag settings, so that no settings file's `env` block can point it
/// elsewhere.
pub fn offline_vars(base_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("ANTHROPIC_BASE_URL", base_url.to_string()),
        ("ANTHROPIC_API_KEY", DUMMY_API_KEY.to_string()),
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
pub fn flag_env(base_url: &str, found: impl IntoIterator<Item = String>) -> serde_json::Map<String, Value> {
    let mut env = serde_json::Map::new();
    for name in WITHHELD_VARS.iter().map(|n| n.to_string()).chain(found.into_iter().filter(|n| is_withheld(n))) {
        env.insert(name, Value::String(String::new()));
    }
    for (name, value) in offline_vars(base_url) {
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
    /// Its whole environment (nothing else is inherited); [`offline_vars`] are added on top.
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
pub struct Stub {
    port: u16,
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
        let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| CaptureError::Stub(e.to_string()))?;
        let port = listener.local_addr().map_err(|e| CaptureError::Stub(e.to_string()))?.port();
        let messages = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (m, s, l) = (messages.clone(), stop.clone(), launch.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn {
                    let (m, l) = (m.clone(), l.clone());
                    std::thread::spawn(move || serve_connection(conn, &m, l.as_deref()));
                }
            }
        });
        Ok(Stub { port, messages, stop, thread: Some(thread), launch })
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
        cmd.envs(offline_vars(&self.base_url()));
        // A group of its own, so the deadline can stop it and every helper it started.
        cmd.current_dir(&run.cwd).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).process_group(0);
        // A binary written a moment ago (an update in progress) can still be open for writing in
        // a child some other thread is forking: exec then fails with "text file busy" for a few
        // milliseconds. Try again briefly before calling it unstartable.
        let mut tries = 0;
        let mut child = loop {
            match cmd.spawn() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 20 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => break other.map_err(|e| CaptureError::Spawn(format!("{}: {e}", run.bin.display())))?,
            }
        };
        let group = rustix::process::Pid::from_raw(child.id() as i32);
        let mut stderr = child.stderr.take().expect("piped stderr");
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr.read_to_end(&mut buf);
            buf
        });
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
        // Helpers it left behind would hold stderr open; the group goes with it.
        kill_group();
        let stderr_tail = tail_of(&stderr_reader.join().unwrap_or_default());
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

fn tail_of(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let start = text.len().saturating_sub(STDERR_TAIL);
    let start = (start..text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
    text[start..].to_string()
}

/// One parsed request.
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// Serves requests on one keep-alive connection until the client closes it.
fn serve_connection(conn: TcpStream, log: &Mutex<Vec<Value>>, launch: Option<&Launch>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(120)));
    let Ok(write_half) = conn.try_clone() else { return };
    let mut reader = BufReader::new(conn);
    let mut writer = write_half;
    while let Some(req) = read_request(&mut reader) {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let path = req.path.split('?').next().unwrap_or("");
        let (content_type, payload) = if req.method == "POST" && path.ends_with("/v1/messages") {
            log.lock().expect("stub log").push(body.clone());
            let model = body.get("model").and_then(Value::as_str).unwrap_or("claude-stub").to_string();
            let calls = launch.and_then(|l| launch_calls(l, &body));
            let streamed = body.get("stream").and_then(Value::as_bool) == Some(true);
            match (calls, streamed) {
                (Some(calls), true) => ("text/event-stream", sse_tool_reply(&model, &calls)),
                (Some(calls), false) => ("application/json", json_tool_reply(&model, &calls).to_string()),
                (None, true) => ("text/event-stream", sse_reply(&model)),
                (None, false) => ("application/json", json_reply(&model).to_string()),
            }
        } else if path.ends_with("/v1/messages/count_tokens") {
            ("application/json", json!({"input_tokens": req.body.len() / 4 + 1}).to_string())
        } else if path.starts_with("/v1/models") {
            let model = json!({"type": "model", "id": "claude-sonnet-4-5", "display_name": "stub", "created_at": "2025-01-01T00:00:00Z"});
            ("application/json", json!({"data": [model], "has_more": false, "first_id": null, "last_id": null}).to_string())
        } else {
            ("application/json", "{}".to_string())
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nrequest-id: req_mneme_verify\r\n\r\n",
            payload.len()
        );
        let sent = writer.write_all(head.as_bytes()).and_then(|_| writer.write_all(payload.as_bytes())).and_then(|_| writer.flush());
        if sent.is_err() {
            break;
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
}

/// Reads one HTTP/1.1 request (`Content-Length` or chunked body); `None` at end of stream or
/// on anything malformed, which closes the connection.
fn read_request(r: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    // Tolerates blank lines between keep-alive requests.
    loop {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok()?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") && value.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?.trim(), 16).ok()?;
            if n == 0 {
                // Trailers, up to the blank line.
                loop {
                    let mut t = String::new();
                    if r.read_line(&mut t).ok()? == 0 || t.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let mut chunk = vec![0; n];
            r.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk);
            let mut crlf = String::new();
            r.read_line(&mut crlf).ok()?;
        }
    } else {
        body.resize(length, 0);
        r.read_exact(&mut body).ok()?;
    }
    Some(Request { method, path, body })
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

    fn post(port: u16, path: &str, body: &str, chunked: bool) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let req = if chunked {
            format!("POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n", body.len())
        } else {
            format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}", body.len())
        };
        s.write_all(req.as_bytes()).unwrap();
        let mut r = BufReader::new(s);
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut l = String::new();
            r.read_line(&mut l).unwrap();
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

    #[test]
    fn stub_records_messages_and_answers_in_the_form_asked() {
        let stub = Stub::start().unwrap();
        let port = stub.base_url().rsplit(':').next().unwrap().parse().unwrap();
        let streamed = post(port, "/v1/messages?beta=true", r#"{"model":"m","stream":true,"messages":[]}"#, false);
        assert!(streamed.contains("text/event-stream") && streamed.contains("event: message_stop"), "{streamed}");
        let plain = post(port, "/v1/messages", r#"{"model":"m","messages":[1]}"#, true);
        assert!(plain.contains("\"stop_reason\":\"end_turn\""), "{plain}");
        post(port, "/v1/messages/count_tokens", "{}", false);
        let got = stub.messages();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1]["messages"], json!([1]));
    }

    #[test]
    fn flag_settings_blank_every_withheld_variable_found_and_keep_the_rest() {
        let env = flag_env("http://127.0.0.1:9", ["ANTHROPIC_NEW_BASE_URL", "https_proxy", "OTEL_EXPORTER_OTLP_PROTOCOL", "CLAUDE_CODE_DISABLE_AUTO_MEMORY"].map(String::from));
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

    #[test]
    fn a_run_that_never_asks_is_stopped_at_the_deadline_with_its_group() {
        let dir = tempfile_dir();
        let bin = dir.join("claude");
        // A shell that starts a background helper and hangs: both must be gone afterwards.
        std::fs::write(&bin, format!("#!/bin/sh\necho starting >&2\nsleep 300 &\necho $! > {}/helper\nsleep 300\n", dir.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let stub = Stub::start().unwrap();
        let run = Run {
            bin,
            cwd: dir.clone(),
            vars: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
            args: vec![],
            prompt: "hi".into(),
            timeout: Duration::from_secs(2),
        };
        let t = Instant::now();
        let err = stub.capture(&run).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(matches!(&err, CaptureError::TimedOut { stderr_tail, .. } if stderr_tail.contains("starting")), "{err:?}");
        let helper: i32 = std::fs::read_to_string(dir.join("helper")).unwrap().trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(!std::path::Path::new(&format!("/proc/{helper}")).exists() || proc_is_zombie(helper), "helper {helper} survived");
        let _ = std::fs::remove_dir_all(dir);
    }

    fn proc_is_zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map(|s| s.contains(") Z ")).unwrap_or(true)
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("mneme-verify-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
