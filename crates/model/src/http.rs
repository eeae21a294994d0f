//! What the Anthropic and OpenAI providers share on the wire: the client, error classification
//! and Server-Sent Events framing.

use crate::retry::{retry_after, status_is_retryable, transport_failure, Failure};
use crate::ModelError;
use futures_util::StreamExt;
use serde_json::Value;
use std::time::Duration;

/// The largest answer read from a model endpoint. A real one is a few hundred KB at most; a
/// broken or hostile endpoint could otherwise send gigabytes (or stream forever) into memory.
pub(crate) const MAX_BODY_BYTES: usize = 32 << 20;
/// The most of an error body read for its message.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;
/// The most of an endpoint's error message that is kept (it reaches the terminal, run logs
/// and dream records).
const MAX_ERROR_MESSAGE_CHARS: usize = 300;

/// One client per provider: rustls (no OpenSSL to install), connection reuse across requests.
/// The per-attempt timeout is applied around the whole attempt by `with_retries`, not here,
/// so that a streamed answer is bounded too. Redirects are not followed: the key (`x-api-key`,
/// which reqwest does not strip) and the prompt would go to whatever host the endpoint names,
/// over plain http too.
/// `extra_roots` are trusted beside the built-in certificate authorities (a company's own, or
/// the one a TLS-inspecting proxy signs with: `NODE_EXTRA_CA_CERTS`, as Claude Code takes it).
pub(crate) fn client(extra_roots: &[reqwest::Certificate]) -> Result<reqwest::Client, ModelError> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("mneme/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none());
    for root in extra_roots {
        builder = builder.add_root_certificate(root.clone());
    }
    builder
        .build()
        .map_err(|e| ModelError::Network(format!("the HTTP client could not start ({e})")))
}

/// Refuses to send an API key to `base_url` over plain http unless the server is on this
/// machine or on a local network: anyone on the path between would read the key. A keyless
/// endpoint (a local model server) may use http anywhere.
pub(crate) fn check_key_transport(base_url: &str) -> Result<(), ModelError> {
    let Ok(url) = url::Url::parse(base_url) else { return Ok(()) };
    if url.scheme() != "http" || is_local(&url) {
        return Ok(());
    }
    Err(ModelError::NotConfigured(format!(
        "{base_url} is a plain http:// address on another network, and the API key would cross it unencrypted: use its https:// address, or a server on this machine or your local network"
    )))
}

/// Whether `url` names this machine (a loopback address or `localhost`).
pub(crate) fn is_this_machine(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        None => false,
    }
}

/// Whether `url` names this machine or a host on a private network: loopback, private and
/// link-local addresses, and names only a local resolver answers (one label, `.local`,
/// `.lan`, `.internal`, `.home.arpa`).
pub(crate) fn is_local(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        // fc00::/7 (unique local) and fe80::/10 (link-local).
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00 || (ip.segments()[0] & 0xffc0) == 0xfe80,
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            !d.contains('.') || [".localhost", ".local", ".lan", ".internal", ".home.arpa"].iter().any(|s| d.ends_with(s))
        }
        None => false,
    }
}

/// Sends one request and returns the successful response, or the classified failure.
pub(crate) async fn send(
    builder: reqwest::RequestBuilder,
    url: &str,
    model: &str,
    timeout: Duration,
) -> Result<reqwest::Response, Failure> {
    let response = builder.send().await.map_err(|e| transport_failure(&e, timeout, url))?;
    let status = response.status().as_u16();
    if response.status().is_success() {
        return Ok(response);
    }
    if response.status().is_redirection() {
        let to = response.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok()).unwrap_or("another address");
        return Err(Failure::Fatal(ModelError::Api(format!(
            "{url} redirected to {}; Mneme does not follow redirects with your key. If you trust that address, set it as the base URL.",
            printable(to, MAX_ERROR_MESSAGE_CHARS)
        ))));
    }
    let headers = response.headers().clone();
    let (bytes, _) = read_limited(response, MAX_ERROR_BODY_BYTES).await.unwrap_or_default();
    Err(classify_status(status, &headers, &String::from_utf8_lossy(&bytes), model, url))
}

/// A successful answer's body, refused when it is larger than [`MAX_BODY_BYTES`].
pub(crate) async fn read_body(response: reqwest::Response, url: &str, timeout: Duration) -> Result<String, Failure> {
    let declared = response.content_length();
    let too_large = || {
        Failure::Fatal(ModelError::BadResponse(format!(
            "{url} sent an answer larger than {} MiB; a model's answer is far smaller, so it was not read",
            MAX_BODY_BYTES >> 20
        )))
    };
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    match read_limited(response, MAX_BODY_BYTES).await {
        Ok((_, true)) => Err(too_large()),
        Ok((bytes, false)) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => Err(transport_failure(&e, timeout, url)),
    }
}

/// Up to `limit` bytes of a body, and whether there was more (the rest is not read).
async fn read_limited(response: reqwest::Response, limit: usize) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut stream = response.bytes_stream();
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if out.len() + chunk.len() > limit {
            out.extend_from_slice(&chunk[..limit - out.len()]);
            return Ok((out, true));
        }
        out.extend_from_slice(&chunk);
    }
    Ok((out, false))
}

/// `text` cut to `max` characters with control characters (a terminal's escape sequences in an
/// endpoint's error page) written as escapes, so printing it cannot retitle or clear a terminal.
pub(crate) fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() && c != '\n' && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The `(type or code, message)` of an error body in either API's shape:
/// Anthropic `{"type":"error","error":{"type","message"}}`, OpenAI `{"error":{"message","type","code"}}`.
pub(crate) fn error_detail(text: &str) -> (String, String) {
    let parsed: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let error = parsed.get("error").unwrap_or(&parsed);
    let message = match error {
        Value::String(s) => s.as_str(),
        _ => error.get("message").and_then(Value::as_str).unwrap_or_else(|| text.trim()),
    };
    let message = printable(message, MAX_ERROR_MESSAGE_CHARS);
    let kind = error
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str))
        .unwrap_or("")
        .to_string();
    (kind, message)
}

pub(crate) fn classify_status(
    status: u16,
    headers: &reqwest::header::HeaderMap,
    text: &str,
    model: &str,
    url: &str,
) -> Failure {
    let (kind, message) = error_detail(text);
    let detail = if message.is_empty() { format!("HTTP {status}") } else { format!("HTTP {status}: {message}") };
    let error = match status {
        401 | 403 => ModelError::BadKey(detail),
        404 if kind.contains("model") || message.to_ascii_lowercase().contains("model") => {
            ModelError::ModelNotFound(model.to_string())
        }
        404 => ModelError::Api(format!("{url} answered {detail}; check the endpoint URL")),
        // A spent quota is not a burst limit: waiting seconds will not help.
        429 if kind == "insufficient_quota" => return Failure::Fatal(ModelError::RateLimited(detail)),
        429 => ModelError::RateLimited(detail),
        _ => ModelError::Api(detail),
    };
    if status_is_retryable(status, headers) {
        Failure::Retry { error, retry_after: retry_after(headers) }
    } else {
        Failure::Fatal(error)
    }
}

/// Reads a Server-Sent Events body and hands each event's `data` to `on_data` (the event name
/// is not needed: both APIs repeat the kind inside the JSON). Stops early when `on_data` says so
/// (`true`); `false` when the body ended first, which the caller's own state judges (some
/// OpenAI-compatible servers end after the finish reason without `[DONE]`).
pub(crate) async fn read_sse(
    response: reqwest::Response,
    url: &str,
    timeout: Duration,
    mut on_data: impl FnMut(&str) -> Result<bool, Failure>,
) -> Result<bool, Failure> {
    let mut stream = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    // How much of `buffer` is known to hold no line end: a line arriving in many chunks is
    // scanned once, not again with every chunk.
    let mut scanned = 0;
    let mut data = String::new();
    // The whole stream is bounded like a whole answer: a server sending endless small events
    // would otherwise grow the answer being assembled until the timeout.
    let mut received = 0usize;
    let too_large = || {
        Failure::Fatal(ModelError::BadResponse(format!(
            "{url} sent a streamed answer larger than {} MiB; a model's answer is far smaller, so the rest was not read",
            MAX_BODY_BYTES >> 20
        )))
    };
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| transport_failure(&e, timeout, url))?;
        received += chunk.len();
        if received > MAX_BODY_BYTES {
            return Err(too_large());
        }
        buffer.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(offset) = buffer[scanned..].iter().position(|b| *b == b'\n') {
            let end = scanned + offset;
            scanned = end + 1;
            let line = String::from_utf8_lossy(&buffer[start..end]);
            start = end + 1;
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !data.is_empty() {
                    let done = on_data(&data)?;
                    data.clear();
                    if done {
                        return Ok(true);
                    }
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value.strip_prefix(' ').unwrap_or(value));
            }
        }
        buffer.drain(..start);
        scanned -= start;
    }
    Ok(!data.is_empty() && on_data(&data)?)
}

/// A streamed answer's end: `finished` is the stream state's verdict. A body that ended
/// before the stream said it was done, and that the state cannot use, was cut off on the way
/// (a dropped connection) and is worth another attempt.
pub(crate) fn stream_result<T>(stopped: bool, finished: Result<T, Failure>, url: &str) -> Result<T, Failure> {
    match finished {
        Err(_) if !stopped => {
            Err(Failure::Retry { error: ModelError::Network(format!("{url} (the answer stopped before it was complete)")), retry_after: None })
        }
        other => other,
    }
}

/// A JSON body, or a `BadResponse` naming what was wrong.
/// A whole (non-streamed) answer from `url`. A base URL that points at a web page or the wrong
/// path answers 200 with HTML, and some gateways answer 200 with an error object: both say
/// what came back and where to look, instead of a bare parser message.
pub(crate) fn parse_answer(text: &str, url: &str) -> Result<Value, Failure> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Failure::Fatal(ModelError::BadResponse(format!(
            "{url} answered with something other than JSON ({e}), beginning \"{}\"; check that the base URL is the API's address (for OpenAI-compatible servers it usually ends in /v1)",
            printable(text.trim(), 120)
        )))
    })?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        let (kind, message) = error_detail(text);
        let kind = if kind.is_empty() { String::new() } else { format!("{kind}: ") };
        return Err(Failure::Fatal(ModelError::Api(format!("{url} answered with an error: {kind}{message}"))));
    }
    Ok(value)
}

pub(crate) fn parse_json(text: &str) -> Result<Value, Failure> {
    serde_json::from_str(text).map_err(|e| Failure::Fatal(ModelError::BadResponse(format!("not JSON ({e})"))))
}
