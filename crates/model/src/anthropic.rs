//! The Anthropic Messages API (`POST /v1/messages`), spoken the way Claude Code 2.1.197's side
//! queries speak it: `x-api-key`, `anthropic-version: 2023-06-01`, the system prompt as text
//! blocks, and structured output as `output_config.format` with the
//! `structured-outputs-2025-12-15` beta on `/v1/messages?beta=true`.

use crate::http::{classify_status, client, parse_answer, parse_json, read_body, read_sse, send, stream_result};
use crate::retry::{with_retries, Failure, HttpOptions};
use crate::{Block, Cancel, ModelError, Provider, ProviderKind, Request, Response, StopReason, Usage};
use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The beta Claude Code adds to a side query that asks for structured output.
pub const STRUCTURED_OUTPUTS_BETA: &str = "structured-outputs-2025-12-15";
/// The Anthropic SDK refuses a non-streaming request expected to run past ten minutes
/// (`3600 s × max_tokens / 128000 > 600 s`), so larger answers are streamed.
const NON_STREAMING_MAX_TOKENS: u32 = 21_333;

pub struct AnthropicProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: String,
    model: String,
    options: HttpOptions,
    streaming: Option<bool>,
}

impl AnthropicProvider {
    /// `base_url` without `/v1` (like `ANTHROPIC_BASE_URL`); `None` is the public API.
    pub fn new(model: impl Into<String>, api_key: impl Into<String>, base_url: Option<&str>) -> Result<Self, ModelError> {
        let base_url = base_url.unwrap_or(ANTHROPIC_DEFAULT_BASE_URL).trim_end_matches('/').to_string();
        crate::http::check_key_transport(&base_url)?;
        Ok(AnthropicProvider {
            client: client(&[])?,
            base_url,
            api_key: api_key.into(),
            model: model.into(),
            options: HttpOptions::default(),
            streaming: None,
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

    /// Forces streaming on or off; by default only answers too long for one response stream.
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = Some(streaming);
        self
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn body(&self, request: &Request, stream: bool) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("max_tokens".into(), json!(request.max_tokens));
        if !request.system.is_empty() {
            body.insert("system".into(), json!([{"type": "text", "text": request.system}]));
        }
        body.insert("messages".into(), json!(request.messages));
        if !request.tools.is_empty() {
            body.insert("tools".into(), json!(request.tools));
        }
        if request.thinking_disabled {
            body.insert("thinking".into(), json!({"type": "disabled"}));
        }
        if let Some(schema) = &request.json_schema {
            body.insert("output_config".into(), json!({"format": {"type": "json_schema", "schema": schema}}));
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    async fn attempt(&self, url: &str, body: &Value, beta: bool, stream: bool) -> Result<Response, Failure> {
        let mut builder = self
            .client
            .post(url)
            .header("x-api-key", &self.api_key)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(body);
        if beta {
            builder = builder.header("anthropic-beta", STRUCTURED_OUTPUTS_BETA);
        }
        let response = send(builder, url, &self.model, self.options.timeout).await?;
        if stream {
            let mut state = StreamState::default();
            let stopped = read_sse(response, url, self.options.timeout, |data| state.event(data, &self.model, url)).await?;
            stream_result(stopped, state.finish(), url)
        } else {
            let text = read_body(response, url, self.options.timeout).await?;
            parse_message(&parse_answer(&text, url)?)
        }
    }
}

impl Provider for AnthropicProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(&'a self, request: &'a Request, cancel: &'a Cancel) -> BoxFuture<'a, Result<Response, ModelError>> {
        Box::pin(async move {
            let stream = self.streaming.unwrap_or(request.max_tokens > NON_STREAMING_MAX_TOKENS);
            let beta = request.json_schema.is_some();
            // Claude Code's client is the SDK's beta client, which marks beta calls in the query.
            let url = if beta { format!("{}/v1/messages?beta=true", self.base_url) } else { format!("{}/v1/messages", self.base_url) };
            let body = self.body(request, stream);
            with_retries(&self.options, cancel, || self.attempt(&url, &body, beta, stream)).await
        })
    }
}

fn stop_reason(s: Option<&str>) -> StopReason {
    match s {
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        _ => StopReason::Other,
    }
}

fn bad(what: impl Into<String>) -> Failure {
    Failure::Fatal(ModelError::BadResponse(what.into()))
}

/// Text and tool calls; other block kinds (thinking, server tools) carry nothing Mneme uses.
fn parse_block(block: &Value) -> Result<Option<Block>, Failure> {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Some(Block::Text { text: block.get("text").and_then(Value::as_str).unwrap_or("").to_string() })),
        Some("tool_use") => {
            let id = block.get("id").and_then(Value::as_str).ok_or_else(|| bad("a tool_use block without an id"))?;
            let name = block.get("name").and_then(Value::as_str).ok_or_else(|| bad("a tool_use block without a name"))?;
            let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
            Ok(Some(Block::ToolUse { id: id.to_string(), name: name.to_string(), input }))
        }
        _ => Ok(None),
    }
}

fn parse_usage(usage: Option<&Value>) -> Usage {
    let n = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64).unwrap_or(0);
    Usage { input_tokens: n("input_tokens"), output_tokens: n("output_tokens") }
}

fn parse_message(message: &Value) -> Result<Response, Failure> {
    let blocks = message.get("content").and_then(Value::as_array).ok_or_else(|| bad("no `content` in the message"))?;
    let mut content = Vec::new();
    for block in blocks {
        content.extend(parse_block(block)?);
    }
    Ok(Response {
        content,
        stop_reason: stop_reason(message.get("stop_reason").and_then(Value::as_str)),
        usage: parse_usage(message.get("usage")),
    })
}

/// A content block being streamed: text grows by `text_delta`, tool input by `input_json_delta`.
enum Partial {
    Text(String),
    Tool { id: String, name: String, json: String },
    Skipped,
}

#[derive(Default)]
struct StreamState {
    blocks: Vec<(u64, Partial)>,
    stop_reason: Option<String>,
    usage: Usage,
    finished: bool,
}

impl StreamState {
    fn block(&mut self, index: u64) -> Option<&mut Partial> {
        self.blocks.iter_mut().find(|(i, _)| *i == index).map(|(_, b)| b)
    }

    fn event(&mut self, data: &str, model: &str, url: &str) -> Result<bool, Failure> {
        let event = parse_json(data)?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                self.usage = parse_usage(event.pointer("/message/usage"));
            }
            Some("content_block_start") => {
                let block = event.get("content_block").ok_or_else(|| bad("content_block_start without a block"))?;
                let partial = match parse_block(block)? {
                    Some(Block::Text { text }) => Partial::Text(text),
                    Some(Block::ToolUse { id, name, .. }) => Partial::Tool { id, name, json: String::new() },
                    _ => Partial::Skipped,
                };
                self.blocks.push((index, partial));
            }
            Some("content_block_delta") => {
                let delta = event.get("delta").ok_or_else(|| bad("content_block_delta without a delta"))?;
                match (self.block(index), delta.get("type").and_then(Value::as_str)) {
                    (Some(Partial::Text(text)), Some("text_delta")) => {
                        text.push_str(delta.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                    (Some(Partial::Tool { json, .. }), Some("input_json_delta")) => {
                        json.push_str(delta.get("partial_json").and_then(Value::as_str).unwrap_or(""));
                    }
                    (None, _) => return Err(bad(format!("a delta for block {index}, which never started"))),
                    _ => {}
                }
            }
            Some("message_delta") => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(out) = event.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = out;
                }
                if let Some(input) = event.pointer("/usage/input_tokens").and_then(Value::as_u64) {
                    self.usage.input_tokens = input;
                }
            }
            Some("message_stop") => {
                self.finished = true;
                return Ok(true);
            }
            Some("error") => {
                // An error after the 200 (overloaded mid-stream): classify it like the same error
                // arriving as a status, so an overload is retried and a bad request is not.
                let status = match event.pointer("/error/type").and_then(Value::as_str) {
                    Some("overloaded_error") => 529,
                    Some("rate_limit_error") => 429,
                    Some("api_error") => 500,
                    Some("authentication_error") => 401,
                    Some("permission_error") => 403,
                    Some("not_found_error") => 404,
                    _ => 400,
                };
                return Err(classify_status(status, &reqwest::header::HeaderMap::new(), data, model, url));
            }
            _ => {}
        }
        Ok(false)
    }

    fn finish(self) -> Result<Response, Failure> {
        if !self.finished {
            return Err(bad("the stream ended without message_stop"));
        }
        let mut blocks = self.blocks;
        blocks.sort_by_key(|(i, _)| *i);
        let mut content = Vec::new();
        for (_, partial) in blocks {
            match partial {
                Partial::Text(text) => content.push(Block::Text { text }),
                Partial::Tool { id, name, json } => {
                    let input = if json.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(&json).map_err(|e| bad(format!("tool input for `{name}` is not JSON ({e})")))?
                    };
                    content.push(Block::ToolUse { id, name, input });
                }
                Partial::Skipped => {}
            }
        }
        Ok(Response { content, stop_reason: stop_reason(self.stop_reason.as_deref()), usage: self.usage })
    }
}
