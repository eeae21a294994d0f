//! OpenAI-compatible chat completions (`POST <base>/chat/completions`): OpenAI itself, and the
//! local and hosted servers that copy its API (Ollama, llama.cpp, vLLM, LM Studio, OpenRouter).
//! The base URL follows the OpenAI SDK's convention and includes the version
//! (`https://api.openai.com/v1`, `http://localhost:11434/v1`). Content blocks are translated at
//! this edge: `tool_use` ↔ assistant `tool_calls`, `tool_result` → `tool` messages.

use crate::http::{client, parse_answer, parse_json, read_body, read_sse, send, stream_result};
use crate::retry::{with_retries, Failure, HttpOptions};
use crate::{Block, Cancel, Message, ModelError, Provider, ProviderKind, Request, Response, Role, StopReason, Usage};
use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The name OpenAI requires for a `json_schema` response format.
const SCHEMA_NAME: &str = "response";

pub struct OpenAiProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    model: String,
    options: HttpOptions,
    streaming: bool,
}

impl OpenAiProvider {
    /// `api_key: None` sends no `Authorization` header (local servers need none).
    pub fn new(model: impl Into<String>, api_key: Option<String>, base_url: Option<&str>) -> Result<Self, ModelError> {
        let base_url = base_url.unwrap_or(OPENAI_DEFAULT_BASE_URL).trim_end_matches('/').to_string();
        if api_key.is_some() {
            crate::http::check_key_transport(&base_url)?;
        }
        Ok(OpenAiProvider {
            client: client(&[])?,
            base_url,
            api_key,
            model: model.into(),
            options: HttpOptions::default(),
            streaming: false,
        })
    }

    /// Trusts `roots` beside the built-in certificate authorities.
    pub fn trusting(mut self, roots: &[reqwest::Certificate]) -> Result<Self, ModelError> {
        self.client = client(roots)?;
        Ok(self)
    }

    pub fn with_options(mut self, options: HttpOptions) -> Self {
        self.options = options;
        self
    }

    /// Streams answers (`stream: true` with usage in the last chunk).
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// OpenAI's own API refuses `max_tokens` for its reasoning models (o-series, gpt-5) and takes
    /// `max_completion_tokens` for every model; compatible servers (Ollama, vLLM, llama.cpp, …)
    /// have long read `max_tokens`, and older ones know nothing else.
    fn max_tokens_field(&self) -> &'static str {
        let host = url::Url::parse(&self.base_url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase));
        if host.as_deref() == Some("api.openai.com") {
            "max_completion_tokens"
        } else {
            "max_tokens"
        }
    }

    fn body(&self, request: &Request) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert(self.max_tokens_field().into(), json!(request.max_tokens));
        body.insert("messages".into(), Value::Array(to_messages(&request.system, &request.messages)));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(schema) = &request.json_schema {
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": is_strict_compatible(schema)}}),
            );
        }
        if self.streaming {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    async fn attempt(&self, url: &str, body: &Value) -> Result<Response, Failure> {
        let mut builder = self.client.post(url).json(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = send(builder, url, &self.model, self.options.timeout).await?;
        if self.streaming {
            let mut state = ChunkState::default();
            let stopped = read_sse(response, url, self.options.timeout, |data| state.chunk(data)).await?;
            stream_result(stopped, state.finish(), url)
        } else {
            let text = read_body(response, url, self.options.timeout).await?;
            parse_completion(&parse_answer(&text, url)?)
        }
    }
}

impl Provider for OpenAiProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Openai
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(&'a self, request: &'a Request, cancel: &'a Cancel) -> BoxFuture<'a, Result<Response, ModelError>> {
        Box::pin(async move {
            let url = format!("{}/chat/completions", self.base_url);
            let body = self.body(request);
            with_retries(&self.options, cancel, || self.attempt(&url, &body)).await
        })
    }
}

/// Strict mode demands that every object lists all its properties as required and forbids
/// others; a schema that does not (an optional field) is sent with `strict: false` rather than
/// rejected by the server.
fn is_strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties") {
                let properties = map.get("properties").and_then(Value::as_object);
                let required: Vec<&str> =
                    map.get("required").and_then(Value::as_array).map_or_else(Vec::new, |r| r.iter().filter_map(Value::as_str).collect());
                let all_required = properties.is_none_or(|p| p.keys().all(|k| required.contains(&k.as_str())));
                if map.get("additionalProperties") != Some(&Value::Bool(false)) || !all_required {
                    return false;
                }
            }
            map.values().all(is_strict_compatible)
        }
        Value::Array(items) => items.iter().all(is_strict_compatible),
        _ => true,
    }
}

fn to_messages(system: &str, messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        let mut text = String::new();
        let mut calls = Vec::new();
        for block in &message.content {
            match block {
                Block::Text { text: t } => {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(t);
                }
                Block::ToolUse { id, name, input } => {
                    calls.push(json!({"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}}));
                }
                // Tool results must directly follow the assistant message that made the calls,
                // so they go out before any text of the same user turn.
                Block::ToolResult { tool_use_id, content, is_error } => {
                    let content = if *is_error { format!("Error: {content}") } else { content.clone() };
                    out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}));
                }
            }
        }
        match message.role {
            Role::User if !text.is_empty() => out.push(json!({"role": "user", "content": text})),
            Role::User => {}
            Role::Assistant => {
                let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    m["tool_calls"] = Value::Array(calls);
                }
                out.push(m);
            }
        }
    }
    out
}

fn finish_reason(reason: Option<&str>) -> StopReason {
    match reason {
        Some("stop") => StopReason::EndTurn,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

/// Tool arguments as JSON; a model that wrote broken JSON gets its raw text back as a string
/// input, so the tool's input validation can tell it what went wrong instead of the turn failing.
fn arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

fn usage(u: Option<&Value>) -> Usage {
    let n = |key: &str| u.and_then(|u| u.get(key)).and_then(Value::as_u64).unwrap_or(0);
    Usage { input_tokens: n("prompt_tokens"), output_tokens: n("completion_tokens") }
}

fn bad(what: impl Into<String>) -> Failure {
    Failure::Fatal(ModelError::BadResponse(what.into()))
}

fn parse_completion(body: &Value) -> Result<Response, Failure> {
    let choice = body.pointer("/choices/0").ok_or_else(|| bad("no `choices` in the answer"))?;
    let message = choice.get("message").ok_or_else(|| bad("no `message` in the first choice"))?;
    let mut content = Vec::new();
    if let Some(text) = message.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        content.push(Block::Text { text: text.to_string() });
    }
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let id = call.get("id").and_then(Value::as_str).ok_or_else(|| bad("a tool call without an id"))?;
        let name = call.pointer("/function/name").and_then(Value::as_str).ok_or_else(|| bad("a tool call without a name"))?;
        let args = call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("");
        content.push(Block::ToolUse { id: id.to_string(), name: name.to_string(), input: arguments(args) });
    }
    Ok(Response {
        content,
        stop_reason: finish_reason(choice.get("finish_reason").and_then(Value::as_str)),
        usage: usage(body.get("usage")),
    })
}

#[derive(Default)]
struct ToolCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
struct ChunkState {
    text: String,
    calls: Vec<(u64, ToolCall)>,
    finish: Option<String>,
    usage: Usage,
    done: bool,
}

impl ChunkState {
    fn chunk(&mut self, data: &str) -> Result<bool, Failure> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let chunk = parse_json(data)?;
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.usage = usage(Some(u));
        }
        let Some(choice) = chunk.pointer("/choices/0") else { return Ok(false) };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else { return Ok(false) };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.text.push_str(text);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let position = match self.calls.iter().position(|(i, _)| *i == index) {
                Some(p) => p,
                None => {
                    self.calls.push((index, ToolCall::default()));
                    self.calls.len() - 1
                }
            };
            let entry = &mut self.calls[position].1;
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                entry.id = id.to_string();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                entry.name.push_str(name);
            }
            if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                entry.arguments.push_str(args);
            }
        }
        Ok(false)
    }

    fn finish(self) -> Result<Response, Failure> {
        if !self.done && self.finish.is_none() {
            return Err(bad("the stream ended without a finish reason"));
        }
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(Block::Text { text: self.text });
        }
        let mut calls = self.calls;
        calls.sort_by_key(|(i, _)| *i);
        for (_, call) in calls {
            if call.id.is_empty() || call.name.is_empty() {
                return Err(bad("a streamed tool call without an id or a name"));
            }
            content.push(Block::ToolUse { id: call.id, name: call.name, input: arguments(&call.arguments) });
        }
        Ok(Response { content, stop_reason: finish_reason(self.finish.as_deref()), usage: self.usage })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_itself_gets_max_completion_tokens_and_compatible_servers_max_tokens() {
        let ask = Request { system: String::new(), messages: vec![Message::user_text("hi")], tools: vec![], max_tokens: 77, json_schema: None, thinking_disabled: false };
        let openai = OpenAiProvider::new("o4-mini", Some("sk".into()), None).unwrap().body(&ask);
        assert_eq!((openai.get("max_completion_tokens"), openai.get("max_tokens")), (Some(&json!(77)), None));
        let local = OpenAiProvider::new("llama3.1", None, Some("http://127.0.0.1:11434/v1")).unwrap().body(&ask);
        assert_eq!((local.get("max_tokens"), local.get("max_completion_tokens")), (Some(&json!(77)), None));
    }

    #[test]
    fn strict_only_when_every_object_is_closed_and_fully_required() {
        let closed = json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}},
                            "required": ["a"], "additionalProperties": false});
        assert!(is_strict_compatible(&closed));
        let optional = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                              "required": ["a"], "additionalProperties": false});
        assert!(!is_strict_compatible(&optional));
        let open_inner = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}},
                                "required": ["a"], "additionalProperties": false});
        assert!(!is_strict_compatible(&open_inner));
    }

    #[test]
    fn tool_results_precede_user_text_and_errors_are_marked() {
        let messages = vec![
            Message { role: Role::Assistant, content: vec![Block::ToolUse { id: "c1".into(), name: "f".into(), input: json!({"x": 1}) }] },
            Message {
                role: Role::User,
                content: vec![
                    Block::Text { text: "and then".into() },
                    Block::ToolResult { tool_use_id: "c1".into(), content: "boom".into(), is_error: true },
                ],
            },
        ];
        let out = to_messages("sys", &messages);
        assert_eq!(
            out,
            vec![
                json!({"role": "system", "content": "sys"}),
                json!({"role": "assistant", "content": null,
                       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]}),
                json!({"role": "tool", "tool_call_id": "c1", "content": "Error: boom"}),
                json!({"role": "user", "content": "and then"}),
            ]
        );
    }
}
