//! A stub model server for tests: the Anthropic Messages API (`POST /v1/messages`, JSON and SSE
//! streaming, `count_tokens`, `GET /v1/models`) and the OpenAI chat completions API
//! (`POST /v1/chat/completions`, JSON and streaming) on 127.0.0.1, port 0.
//!
//! Tests script the answers: a FIFO queue of [`Reply`]s (model turns with text and `tool_use`
//! blocks, HTTP errors, hangs), optionally each with a predicate so that only matching requests
//! consume it. A request that finds nothing in the queue gets the default turn (text `ok`, like
//! the conformance harness's `stub_api.py`), because real Claude Code makes calls of its own
//! besides the main loop and those must not break a scripted conversation. Every request is
//! recorded, headers and JSON body, for assertions.
//!
//! The server runs on its own thread and runtime, so it serves synchronous tests (a `mneme`
//! subprocess), async tests, and requests that hang without blocking the test's runtime.
//!
//! ```no_run
//! # async fn demo() {
//! use mneme_stub_model::{StubModel, Turn};
//! let stub = StubModel::start().await;
//! stub.push(Turn::tool_use("Write", serde_json::json!({"file_path": "/tmp/x", "content": "hi"})));
//! stub.push(Turn::text("done"));
//! // point a provider or `ANTHROPIC_BASE_URL` at stub.base_url() ...
//! assert_eq!(stub.model_requests().len(), 0);
//! # }
//! ```

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;

/// One block of a scripted assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnBlock {
    Text(String),
    /// A tool call. An empty `id` gets a generated `toolu_stub_<n>`.
    ToolUse { id: String, name: String, input: Value },
}

/// A scripted assistant turn. The stop reason uses the Anthropic names (`end_turn`, `tool_use`,
/// `max_tokens`, `stop_sequence`); the OpenAI endpoint maps them to `stop`, `tool_calls`, `length`.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub blocks: Vec<TurnBlock>,
    pub stop_reason: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Turn {
    /// A text answer ending the turn.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn { blocks: vec![TurnBlock::Text(text.into())], stop_reason: "end_turn".into(), input_tokens: 10, output_tokens: 1 }
    }

    /// A structured-output answer: the JSON serialized as the only text block.
    pub fn json(value: &Value) -> Turn {
        Turn::text(value.to_string())
    }

    /// A single tool call (stop reason `tool_use`).
    pub fn tool_use(name: impl Into<String>, input: Value) -> Turn {
        Turn { blocks: Vec::new(), stop_reason: "tool_use".into(), input_tokens: 10, output_tokens: 1 }.and_tool_use(name, input)
    }

    /// Adds a text block.
    pub fn and_text(mut self, text: impl Into<String>) -> Turn {
        self.blocks.push(TurnBlock::Text(text.into()));
        self
    }

    /// Adds a tool call and makes the stop reason `tool_use`.
    pub fn and_tool_use(mut self, name: impl Into<String>, input: Value) -> Turn {
        self.blocks.push(TurnBlock::ToolUse { id: String::new(), name: name.into(), input });
        self.stop_reason = "tool_use".into();
        self
    }

    /// Adds a tool call with a fixed id, for tests that assert the id comes back in a tool result.
    pub fn and_tool_use_id(mut self, id: impl Into<String>, name: impl Into<String>, input: Value) -> Turn {
        self.blocks.push(TurnBlock::ToolUse { id: id.into(), name: name.into(), input });
        self.stop_reason = "tool_use".into();
        self
    }

    pub fn with_stop_reason(mut self, stop_reason: impl Into<String>) -> Turn {
        self.stop_reason = stop_reason.into();
        self
    }

    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Turn {
        self.input_tokens = input_tokens;
        self.output_tokens = output_tokens;
        self
    }
}

/// What the server does with one model request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Turn(Turn),
    /// An HTTP error. `body: None` renders the standard error body for that status in the shape of
    /// the API that was called (Anthropic `{"type":"error","error":{..}}` or OpenAI `{"error":{..}}`).
    Error { status: u16, headers: Vec<(String, String)>, body: Option<Value> },
    /// Never answers (until the stub is dropped): for client timeouts and cancellation.
    Hang,
    /// A streamed Anthropic answer that starts (status 200, `message_start`) and then fails with
    /// an `event: error` of this type (`overloaded_error`, `api_error`, ...), as the real API does
    /// when it is overloaded mid-answer. Non-streaming and OpenAI requests get the matching status.
    StreamError { error_type: String, message: String },
}

impl From<Turn> for Reply {
    fn from(turn: Turn) -> Reply {
        Reply::Turn(turn)
    }
}

impl Reply {
    /// An error with the API's standard body for the status.
    pub fn status(status: u16) -> Reply {
        Reply::Error { status, headers: Vec::new(), body: None }
    }

    /// 429 with a `retry-after` header in seconds.
    pub fn rate_limited(retry_after_secs: u64) -> Reply {
        Reply::Error { status: 429, headers: vec![("retry-after".into(), retry_after_secs.to_string())], body: None }
    }
}

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Header names lower-cased, in arrival order; secrets are kept so tests can assert them.
    pub headers: Vec<(String, String)>,
    /// The JSON body; a non-JSON body is kept as a string, an empty one is `null`.
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }

    /// A call to `POST /v1/messages` (Anthropic).
    pub fn is_anthropic_message(&self) -> bool {
        self.method == "POST" && self.route().ends_with("/v1/messages")
    }

    /// A call to `POST /v1/chat/completions` (OpenAI).
    pub fn is_openai_chat(&self) -> bool {
        self.method == "POST" && self.route().ends_with("/chat/completions")
    }

    /// Either kind of model call (these are the requests that consume scripted replies).
    pub fn is_model_call(&self) -> bool {
        self.is_anthropic_message() || self.is_openai_chat()
    }

    pub fn is_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool).unwrap_or(false)
    }

    /// Whether the request offers a tool of this name (Anthropic `tools[].name` or OpenAI
    /// `tools[].function.name`). Claude Code's main loop offers `Read`/`Write`; its side calls do not.
    pub fn has_tool(&self, name: &str) -> bool {
        self.body.get("tools").and_then(Value::as_array).is_some_and(|tools| {
            tools.iter().any(|t| {
                t.get("name").and_then(Value::as_str) == Some(name)
                    || t.pointer("/function/name").and_then(Value::as_str) == Some(name)
            })
        })
    }

    /// Every `tool_result` block of the conversation (Anthropic), in order, as (text, is_error).
    pub fn tool_results(&self) -> Vec<(String, bool)> {
        self.messages().iter().flat_map(tool_results_of).collect()
    }

    /// The tool results of the latest message that carries any: the answers to the calls of
    /// the turn before (earlier ones a client may have trimmed or rewritten since).
    pub fn latest_tool_results(&self) -> Vec<(String, bool)> {
        self.messages().iter().rev().map(tool_results_of).find(|r| !r.is_empty()).unwrap_or_default()
    }

    fn messages(&self) -> &[Value] {
        self.body.get("messages").and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }

    /// The number of `tool_result` blocks (Anthropic) or `tool` messages (OpenAI) sent back.
    pub fn tool_result_count(&self) -> usize {
        let Some(messages) = self.body.get("messages").and_then(Value::as_array) else { return 0 };
        messages
            .iter()
            .map(|m| {
                if m.get("role").and_then(Value::as_str) == Some("tool") {
                    return 1;
                }
                m.get("content").and_then(Value::as_array).map_or(0, |c| {
                    c.iter().filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")).count()
                })
            })
            .sum()
    }
}

/// The `tool_result` blocks of one message; a block's content is a string or text blocks.
fn tool_results_of(message: &Value) -> Vec<(String, bool)> {
    let blocks = message.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .map(|b| {
            let text = match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts.iter().filter_map(|t| t.get("text").and_then(Value::as_str)).collect(),
                _ => String::new(),
            };
            (text, b.get("is_error").and_then(Value::as_bool).unwrap_or(false))
        })
        .collect()
}

type Matcher = Arc<dyn Fn(&RecordedRequest) -> bool + Send + Sync>;

struct Queued {
    when: Option<Matcher>,
    reply: Reply,
}

struct Inner {
    queue: VecDeque<Queued>,
    default: Reply,
    requests: Vec<RecordedRequest>,
    next_id: u64,
}

struct Shared {
    inner: Mutex<Inner>,
    shutdown: watch::Receiver<bool>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panicking test thread must not hide the recorded requests from the next assertion.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The running stub. Dropping it stops the server and releases hanging requests.
pub struct StubModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
}

impl StubModel {
    /// Starts the server on 127.0.0.1 with a free port.
    pub async fn start() -> StubModel {
        StubModel::start_blocking()
    }

    /// The same for synchronous tests.
    pub fn start_blocking() -> StubModel {
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner { queue: VecDeque::new(), default: Turn::text("ok").into(), requests: Vec::new(), next_id: 0 }),
            shutdown: shutdown_rx.clone(),
        });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let app = Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::max(64 * 1024 * 1024))
            .with_state(shared.clone());
        std::thread::Builder::new()
            .name("stub-model".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("stub model runtime");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0 for the stub model");
                    addr_tx.send(listener.local_addr().expect("stub model address")).expect("stub model start-up");
                    let mut stop = shutdown_rx;
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async move {
                            let _ = stop.wait_for(|stopped| *stopped).await;
                        })
                        .await;
                });
            })
            .expect("spawn the stub model thread");
        let addr = addr_rx.recv().expect("the stub model did not start");
        StubModel { addr, shared, shutdown: shutdown_tx }
    }

    /// `http://127.0.0.1:<port>` — what `ANTHROPIC_BASE_URL` takes (no `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The environment variables real Claude Code gets when it is pointed at this stub, as
    /// the conformance harness's `capture.sh` sets them: this server as its API with a dummy
    /// key, no telemetry, error reporting, auto-update or other traffic, and no retries of
    /// its own (errors are scripted once; its ten retries would only wait them out).
    pub fn claude_code_vars(&self) -> Vec<(&'static str, String)> {
        vec![
            ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
            ("TERM", "dumb".into()),
            ("LANG", "C.UTF-8".into()),
            ("ANTHROPIC_BASE_URL", self.base_url()),
            ("ANTHROPIC_API_KEY", "stub".into()),
            ("DISABLE_TELEMETRY", "1".into()),
            ("DISABLE_ERROR_REPORTING", "1".into()),
            ("DISABLE_AUTOUPDATER", "1".into()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
            ("CLAUDE_CODE_MAX_RETRIES", "0".into()),
        ]
    }

    /// `http://127.0.0.1:<port>/v1` — what OpenAI-compatible clients take.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a reply for the next model call.
    pub fn push(&self, reply: impl Into<Reply>) {
        self.shared.lock().queue.push_back(Queued { when: None, reply: reply.into() });
    }

    /// Queues a reply that only a request satisfying `when` consumes; other requests skip past it.
    pub fn push_when(&self, when: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static, reply: impl Into<Reply>) {
        self.shared.lock().queue.push_back(Queued { when: Some(Arc::new(when)), reply: reply.into() });
    }

    /// Queues an HTTP error with this exact JSON body.
    pub fn push_error(&self, status: u16, body: Value) {
        self.push(Reply::Error { status, headers: Vec::new(), body: Some(body) });
    }

    /// Queues an HTTP error with the API's standard body for the status.
    pub fn push_status(&self, status: u16) {
        self.push(Reply::status(status));
    }

    /// Queues a 429 with `retry-after: <secs>`.
    pub fn push_rate_limit(&self, retry_after_secs: u64) {
        self.push(Reply::rate_limited(retry_after_secs));
    }

    /// Queues a streamed answer that fails mid-stream with an `error` event of this type.
    pub fn push_stream_error(&self, error_type: &str, message: &str) {
        self.push(Reply::StreamError { error_type: error_type.into(), message: message.into() });
    }

    /// Queues a request that never gets an answer.
    pub fn push_hang(&self) {
        self.push(Reply::Hang);
    }

    /// What model calls get when nothing in the queue matches (initially the text `ok`).
    pub fn set_default(&self, reply: impl Into<Reply>) {
        self.shared.lock().default = reply.into();
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Only the model calls (`/v1/messages`, `/v1/chat/completions`).
    pub fn model_requests(&self) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(RecordedRequest::is_model_call).collect()
    }
}

impl Drop for StubModel {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

async fn handle(State(shared): State<Arc<Shared>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path_and_query().map_or_else(|| uri.path().to_string(), |pq| pq.as_str().to_string());
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()))
    };
    let request = RecordedRequest {
        method: method.as_str().to_string(),
        path,
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        body,
    };
    let route = request.route().to_string();

    let (reply, id) = {
        let mut inner = shared.lock();
        inner.requests.push(request.clone());
        inner.next_id += 1;
        let id = inner.next_id;
        let reply = if request.is_model_call() {
            let position = inner.queue.iter().position(|q| q.when.as_ref().is_none_or(|when| when(&request)));
            Some(match position.and_then(|i| inner.queue.remove(i)) {
                Some(queued) => queued.reply,
                None => inner.default.clone(),
            })
        } else {
            None
        };
        (reply, id)
    };

    let openai = request.is_openai_chat();
    match reply {
        Some(Reply::Turn(turn)) => {
            let model = request.body.get("model").and_then(Value::as_str).unwrap_or("claude-stub").to_string();
            let turn = with_ids(turn, id);
            match (openai, request.is_stream()) {
                (false, false) => json_response(200, &[], &anthropic_message(&turn, &model, id)),
                (false, true) => sse_response(anthropic_events(&turn, &model, id)),
                (true, false) => json_response(200, &[], &openai_completion(&turn, &model, id)),
                (true, true) => {
                    let include_usage =
                        request.body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
                    sse_response(openai_chunks(&turn, &model, id, include_usage))
                }
            }
        }
        Some(Reply::Error { status, headers, body }) => {
            let body = body.unwrap_or_else(|| {
                let model = request.body.get("model").and_then(Value::as_str).unwrap_or("");
                if openai {
                    openai_error(status, model)
                } else {
                    anthropic_error(status, model)
                }
            });
            json_response(status, &headers, &body)
        }
        Some(Reply::StreamError { error_type, message }) => {
            let status = match error_type.as_str() {
                "overloaded_error" => 529,
                "rate_limit_error" => 429,
                "invalid_request_error" => 400,
                _ => 500,
            };
            if openai || !request.is_stream() {
                let body = if openai { openai_error(status, "") } else { anthropic_error(status, "") };
                return json_response(status, &[], &body);
            }
            let model = request.body.get("model").and_then(Value::as_str).unwrap_or("claude-stub");
            let start = json!({"type": "message_start", "message": {
                "id": format!("msg_stub_{id}"), "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 1, "output_tokens": 1}}});
            let error = json!({"type": "error", "error": {"type": error_type, "message": message}});
            sse_response(format!("event: message_start\ndata: {start}\n\nevent: error\ndata: {error}\n\n"))
        }
        Some(Reply::Hang) => {
            let mut stop = shared.shutdown.clone();
            let _ = stop.wait_for(|stopped| *stopped).await;
            json_response(503, &[], &anthropic_error(503, ""))
        }
        None if route.ends_with("/v1/messages/count_tokens") => {
            let n = request.body.to_string().len() / 4;
            json_response(200, &[], &json!({"input_tokens": n.max(1)}))
        }
        None if route.ends_with("/v1/models") || route.contains("/v1/models/") => json_response(
            200,
            &[],
            &json!({"data": [{"type": "model", "id": "claude-sonnet-4-5", "display_name": "stub", "created_at": "2025-01-01T00:00:00Z"}],
                    "has_more": false, "first_id": null, "last_id": null}),
        ),
        None => json_response(200, &[], &json!({})),
    }
}

fn with_ids(mut turn: Turn, id: u64) -> Turn {
    for (i, block) in turn.blocks.iter_mut().enumerate() {
        if let TurnBlock::ToolUse { id: tool_id, .. } = block {
            if tool_id.is_empty() {
                *tool_id = format!("toolu_stub_{id}_{i}");
            }
        }
    }
    turn
}

fn json_response(status: u16, headers: &[(String, String)], body: &Value) -> Response {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json")
        .header("request-id", "req_stub");
    for (k, v) in headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    builder.body(Body::from(body.to_string())).expect("a valid stub response")
}

fn sse_response(payload: String) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .header("request-id", "req_stub")
        .body(Body::from(payload))
        .expect("a valid stub response")
}

fn usage(turn: &Turn) -> Value {
    json!({"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens,
           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn anthropic_block(block: &TurnBlock) -> Value {
    match block {
        TurnBlock::Text(text) => json!({"type": "text", "text": text}),
        TurnBlock::ToolUse { id, name, input } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
    }
}

fn anthropic_message(turn: &Turn, model: &str, id: u64) -> Value {
    json!({
        "id": format!("msg_stub_{id}"), "type": "message", "role": "assistant", "model": model,
        "content": turn.blocks.iter().map(anthropic_block).collect::<Vec<_>>(),
        "stop_reason": turn.stop_reason, "stop_sequence": null, "usage": usage(turn),
    })
}

/// Splits text in two at a character boundary so clients must concatenate deltas.
fn halves(text: &str) -> Vec<&str> {
    if text.chars().count() < 2 {
        return vec![text];
    }
    let mid = text.char_indices().nth(text.chars().count() / 2).map_or(text.len(), |(i, _)| i);
    vec![&text[..mid], &text[mid..]]
}

fn anthropic_events(turn: &Turn, model: &str, id: u64) -> String {
    let mut events: Vec<(&str, Value)> = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_stub_{id}"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": turn.input_tokens, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    )];
    for (index, block) in turn.blocks.iter().enumerate() {
        match block {
            TurnBlock::Text(text) => {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
                ));
                events.push(("ping", json!({"type": "ping"})));
                for piece in halves(text) {
                    events.push((
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
                    ));
                }
            }
            TurnBlock::ToolUse { id, name, input } => {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                let input = input.to_string();
                for piece in halves(&input) {
                    events.push((
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    ));
                }
            }
        }
        events.push(("content_block_stop", json!({"type": "content_block_stop", "index": index})));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": turn.stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": turn.output_tokens}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events.iter().map(|(name, data)| format!("event: {name}\ndata: {data}\n\n")).collect()
}

fn openai_finish_reason(stop_reason: &str) -> &'static str {
    match stop_reason {
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        _ => "stop",
    }
}

fn openai_text(turn: &Turn) -> Option<String> {
    let texts: Vec<&str> = turn
        .blocks
        .iter()
        .filter_map(|b| match b {
            TurnBlock::Text(t) => Some(t.as_str()),
            TurnBlock::ToolUse { .. } => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.concat())
}

fn openai_tool_calls(turn: &Turn) -> Vec<(&str, &str, String)> {
    turn.blocks
        .iter()
        .filter_map(|b| match b {
            TurnBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input.to_string())),
            TurnBlock::Text(_) => None,
        })
        .collect()
}

fn openai_usage(turn: &Turn) -> Value {
    json!({"prompt_tokens": turn.input_tokens, "completion_tokens": turn.output_tokens,
           "total_tokens": turn.input_tokens + turn.output_tokens})
}

fn openai_completion(turn: &Turn, model: &str, id: u64) -> Value {
    let mut message = json!({"role": "assistant", "content": openai_text(turn)});
    let calls = openai_tool_calls(turn);
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
            .collect();
    }
    json!({
        "id": format!("chatcmpl-stub-{id}"), "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": openai_finish_reason(&turn.stop_reason)}],
        "usage": openai_usage(turn),
    })
}

fn openai_chunks(turn: &Turn, model: &str, id: u64, include_usage: bool) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": format!("chatcmpl-stub-{id}"), "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    if let Some(text) = openai_text(turn) {
        for piece in halves(&text) {
            chunks.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (index, (call_id, name, args)) in openai_tool_calls(turn).iter().enumerate() {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in halves(args) {
            chunks.push(chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), Value::Null));
        }
    }
    chunks.push(chunk(json!({}), json!(openai_finish_reason(&turn.stop_reason))));
    if include_usage {
        chunks.push(json!({"id": format!("chatcmpl-stub-{id}"), "object": "chat.completion.chunk", "created": 0,
                           "model": model, "choices": [], "usage": openai_usage(turn)}));
    }
    let mut out: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    out.push_str("data: [DONE]\n\n");
    out
}

/// The Anthropic API's error body for a status (`{"type":"error","error":{"type","message"}}`).
pub fn anthropic_error(status: u16, model: &str) -> Value {
    let (kind, message) = match status {
        400 => ("invalid_request_error", "invalid request".to_string()),
        401 => ("authentication_error", "invalid x-api-key".to_string()),
        403 => ("permission_error", "your API key does not have permission to use the specified resource".to_string()),
        404 => ("not_found_error", format!("model: {model}")),
        413 => ("request_too_large", "request exceeds the maximum allowed number of bytes".to_string()),
        429 => ("rate_limit_error", "rate limit exceeded".to_string()),
        529 => ("overloaded_error", "Overloaded".to_string()),
        _ => ("api_error", "Internal server error".to_string()),
    };
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_stub"})
}

/// The OpenAI API's error body for a status (`{"error":{"message","type","param","code"}}`).
pub fn openai_error(status: u16, model: &str) -> Value {
    let (kind, code, message) = match status {
        400 => ("invalid_request_error", "invalid_request", "invalid request".to_string()),
        401 => ("invalid_request_error", "invalid_api_key", "Incorrect API key provided".to_string()),
        403 => ("invalid_request_error", "forbidden", "you are not allowed to use this model".to_string()),
        404 => ("invalid_request_error", "model_not_found", format!("The model `{model}` does not exist")),
        429 => ("requests", "rate_limit_exceeded", "Rate limit reached".to_string()),
        _ => ("server_error", "server_error", "The server had an error while processing your request".to_string()),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}
