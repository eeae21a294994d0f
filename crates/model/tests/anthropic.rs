//! The Anthropic provider against the stub server: wire format, streaming, errors, retries,
//! timeouts and cancellation.

mod common;

use common::{options, refused_url, ForeverSleeper, RecordingSleeper};
use mneme_model::{
    AnthropicProvider, Block, Cancel, Message, ModelError, Provider, Request, Role, StopReason, ToolDef, Usage, STRUCTURED_OUTPUTS_BETA,
};
use mneme_stub_model::{StubModel, Turn};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

fn provider(stub: &StubModel, max_retries: u32) -> (AnthropicProvider, Arc<RecordingSleeper>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    let p = AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url()))
        .unwrap()
        .with_options(options(max_retries, Duration::from_secs(30), sleeper.clone()));
    (p, sleeper)
}

fn ask(text: &str) -> Request {
    Request { system: "be brief".into(), messages: vec![Message::user_text(text)], tools: vec![], max_tokens: 1024, json_schema: None, thinking_disabled: false }
}

#[tokio::test]
async fn text_answer_and_the_headers_claude_code_sends() {
    let stub = StubModel::start().await;
    stub.push(Turn::text("hello there").with_usage(12, 3));
    let (p, _) = provider(&stub, 0);
    let r = p.complete(&ask("hi"), &Cancel::new()).await.unwrap();
    assert_eq!(r.content, vec![Block::Text { text: "hello there".into() }]);
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    assert_eq!(r.usage, Usage { input_tokens: 12, output_tokens: 3 });

    let sent = &stub.model_requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("anthropic-beta"), None);
    assert_eq!(
        sent.body,
        json!({"model": "claude-test-model", "max_tokens": 1024, "system": [{"type": "text", "text": "be brief"}],
               "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})
    );
}

#[tokio::test]
async fn tool_use_round_trip() {
    let stub = StubModel::start().await;
    stub.push(Turn::text("let me look").and_tool_use("read_memory", json!({"name": "user_role.md"})));
    stub.push(Turn::text("you are a data scientist"));
    let (p, _) = provider(&stub, 0);
    let tool = ToolDef {
        name: "read_memory".into(),
        description: "Reads one memory file".into(),
        input_schema: json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    };
    let mut request = Request { tools: vec![tool], ..ask("what is my role?") };
    let first = p.complete(&request, &Cancel::new()).await.unwrap();
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let Some(Block::ToolUse { id, name, input }) = first.content.get(1).cloned() else { panic!("no tool call: {first:?}") };
    assert_eq!((name.as_str(), &input), ("read_memory", &json!({"name": "user_role.md"})));

    request.messages.push(Message { role: Role::Assistant, content: first.content.clone() });
    request.messages.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult { tool_use_id: id.clone(), content: "Data scientist.".into(), is_error: false }],
    });
    let second = p.complete(&request, &Cancel::new()).await.unwrap();
    assert_eq!(second.first_text(), Some("you are a data scientist"));

    let sent = stub.model_requests();
    assert_eq!(sent[0].body["tools"], json!([{"name": "read_memory", "description": "Reads one memory file",
        "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}]));
    assert_eq!(
        sent[1].body["messages"][1],
        json!({"role": "assistant", "content": [{"type": "text", "text": "let me look"},
               {"type": "tool_use", "id": id, "name": "read_memory", "input": {"name": "user_role.md"}}]})
    );
    assert_eq!(
        sent[1].body["messages"][2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "Data scientist."}]})
    );
}

/// Claude Code 2.1.197's recall side query (`sideQuery` from the relevance selector): the
/// Sonnet default, `max_tokens: 256`, the schema in `output_config.format`, the structured
/// outputs beta, and the SDK's beta path.
#[tokio::test]
async fn structured_output_is_sent_as_claude_codes_recall_sends_it() {
    let stub = StubModel::start().await;
    stub.push(Turn::json(&json!({"selected_memories": ["user_role.md"]})));
    let sleeper = Arc::new(RecordingSleeper::default());
    let p = AnthropicProvider::new("claude-sonnet-4-6", "sk-ant-test", Some(&stub.base_url()))
        .unwrap()
        .with_options(options(0, Duration::from_secs(30), sleeper));
    let schema = json!({"type": "object",
        "properties": {"selected_memories": {"type": "array", "items": {"type": "string"}},
                       "selected_knowledge_ids": {"type": "array", "items": {"type": "string"}}},
        "required": ["selected_memories"], "additionalProperties": false});
    let request = Request {
        system: "You are selecting memories that will be useful to Claude Code".into(),
        messages: vec![Message::user_text("Select memories relevant to:\nwhat is my role?")],
        tools: vec![],
        max_tokens: 256,
        json_schema: Some(schema.clone()),
        thinking_disabled: false,
    };
    let r = p.complete(&request, &Cancel::new()).await.unwrap();
    let parsed: Value = serde_json::from_str(r.first_text().unwrap()).unwrap();
    assert_eq!(parsed, json!({"selected_memories": ["user_role.md"]}));

    let sent = &stub.model_requests()[0];
    assert_eq!(sent.path, "/v1/messages?beta=true");
    assert_eq!(sent.header("anthropic-beta"), Some(STRUCTURED_OUTPUTS_BETA));
    assert_eq!(STRUCTURED_OUTPUTS_BETA, "structured-outputs-2025-12-15");
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-sonnet-4-6",
            "max_tokens": 256,
            "system": [{"type": "text", "text": "You are selecting memories that will be useful to Claude Code"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Select memories relevant to:\nwhat is my role?"}]}],
            "output_config": {"format": {"type": "json_schema", "schema": schema}},
        })
    );
}

#[tokio::test]
async fn streaming_assembles_text_and_tool_input_from_deltas() {
    let stub = StubModel::start().await;
    stub.push(Turn::text("héllo wörld").and_tool_use("write", json!({"path": "a.md", "body": "ünïcode"})).with_usage(40, 9));
    let (p, _) = provider(&stub, 0);
    let p = p.with_streaming(true);
    let r = p.complete(&ask("hi"), &Cancel::new()).await.unwrap();
    assert_eq!(r.content[0], Block::Text { text: "héllo wörld".into() });
    let Block::ToolUse { name, input, id } = &r.content[1] else { panic!("{r:?}") };
    assert_eq!((name.as_str(), input), ("write", &json!({"path": "a.md", "body": "ünïcode"})));
    assert!(id.starts_with("toolu_"));
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    assert_eq!(r.usage, Usage { input_tokens: 40, output_tokens: 9 });
    assert_eq!(stub.model_requests()[0].body["stream"], json!(true));
}

#[tokio::test]
async fn long_answers_stream_by_default_and_short_ones_do_not() {
    let stub = StubModel::start().await;
    let (p, _) = provider(&stub, 0);
    p.complete(&ask("short"), &Cancel::new()).await.unwrap();
    let long = Request { max_tokens: 32_000, ..ask("long") };
    assert_eq!(p.complete(&long, &Cancel::new()).await.unwrap().first_text(), Some("ok"));
    let sent = stub.model_requests();
    assert_eq!(sent[0].body.get("stream"), None);
    assert_eq!(sent[1].body["stream"], json!(true));
}

#[tokio::test]
async fn error_statuses_map_to_error_classes_without_retrying() {
    let stub = StubModel::start().await;
    let (p, sleeper) = provider(&stub, 5);
    type Check = fn(&ModelError) -> bool;
    let cases: [(u16, Check); 4] = [
        (401, |e| matches!(e, ModelError::BadKey(m) if m.contains("invalid x-api-key"))),
        (403, |e| matches!(e, ModelError::BadKey(_))),
        (404, |e| *e == ModelError::ModelNotFound("claude-test-model".into())),
        (400, |e| matches!(e, ModelError::Api(m) if m.contains("400"))),
    ];
    for (status, check) in cases {
        stub.push_status(status);
        let before = stub.model_requests().len();
        let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
        assert!(check(&e), "{status}: {e:?}");
        assert_eq!(stub.model_requests().len(), before + 1, "{status} must not be retried");
    }
    assert!(sleeper.waits().is_empty());
    assert!(ModelError::BadKey("x".into()).to_string().contains("check the key"));
}

#[tokio::test]
async fn server_errors_are_retried_with_claude_codes_backoff() {
    let stub = StubModel::start().await;
    stub.push_status(500);
    stub.push_status(529);
    stub.push_status(503);
    stub.push(Turn::text("finally"));
    let (p, sleeper) = provider(&stub, 10);
    let r = p.complete(&ask("hi"), &Cancel::new()).await.unwrap();
    assert_eq!(r.first_text(), Some("finally"));
    assert_eq!(stub.model_requests().len(), 4);
    let waits = sleeper.waits();
    assert_eq!(waits.len(), 3);
    for (wait, base_ms) in waits.iter().zip([500u64, 1000, 2000]) {
        let ms = wait.as_millis() as u64;
        assert!((base_ms..=base_ms + base_ms / 4).contains(&ms), "wait {ms} ms for base {base_ms} ms");
    }
}

#[tokio::test]
async fn retries_run_out_with_the_last_error() {
    let stub = StubModel::start().await;
    for _ in 0..3 {
        stub.push_status(429);
    }
    let (p, sleeper) = provider(&stub, 2);
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(e, ModelError::RateLimited(_)), "{e:?}");
    assert_eq!(stub.model_requests().len(), 3);
    assert_eq!(sleeper.waits().len(), 2);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let stub = StubModel::start().await;
    stub.push_rate_limit(7);
    stub.push(Turn::text("ok now"));
    let (p, sleeper) = provider(&stub, 3);
    assert_eq!(p.complete(&ask("hi"), &Cancel::new()).await.unwrap().first_text(), Some("ok now"));
    assert_eq!(sleeper.waits(), vec![Duration::from_secs(7)]);
}

#[tokio::test]
async fn no_network_is_a_network_error_after_retries() {
    let sleeper = Arc::new(RecordingSleeper::default());
    let (_held, url) = refused_url();
    let p = AnthropicProvider::new("m", "k", Some(&url))
        .unwrap()
        .with_options(options(2, Duration::from_secs(30), sleeper.clone()));
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::Network(m) if m.contains("127.0.0.1")), "{e:?}");
    assert_eq!(sleeper.waits().len(), 2);
}

#[tokio::test]
async fn a_hung_request_times_out_and_a_timeout_is_retried() {
    let stub = StubModel::start().await;
    stub.push_hang();
    let sleeper = Arc::new(RecordingSleeper::default());
    let p = AnthropicProvider::new("m", "k", Some(&stub.base_url()))
        .unwrap()
        .with_options(options(0, Duration::from_millis(200), sleeper.clone()));
    assert_eq!(p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err(), ModelError::Timeout(0));

    stub.push_hang();
    stub.push(Turn::text("second try"));
    let p = p.with_options(options(1, Duration::from_millis(200), sleeper.clone()));
    assert_eq!(p.complete(&ask("hi"), &Cancel::new()).await.unwrap().first_text(), Some("second try"));
    assert_eq!(sleeper.waits().len(), 1);
}

#[tokio::test]
async fn cancel_stops_a_request_in_flight() {
    let stub = StubModel::start().await;
    stub.push_hang();
    let (p, _) = provider(&stub, 3);
    let cancel = Cancel::new();
    let request = ask("hi");
    let call = p.complete(&request, &cancel);
    let canceller = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while stub.model_requests().is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "the request never reached the stub within 30 s");
            tokio::task::yield_now().await;
        }
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, canceller);
    assert_eq!(result.unwrap_err(), ModelError::Cancelled);
    assert_eq!(stub.model_requests().len(), 1);
}

#[tokio::test]
async fn cancel_stops_a_backoff_wait_and_a_cancelled_call_sends_nothing() {
    let stub = StubModel::start().await;
    stub.push_status(500);
    let p = AnthropicProvider::new("m", "k", Some(&stub.base_url()))
        .unwrap()
        .with_options(options(3, Duration::from_secs(30), Arc::new(ForeverSleeper)));
    let cancel = Cancel::new();
    let request = ask("hi");
    let call = p.complete(&request, &cancel);
    let canceller = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while stub.model_requests().is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "the request never reached the stub within 30 s");
            tokio::task::yield_now().await;
        }
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, canceller);
    assert_eq!(result.unwrap_err(), ModelError::Cancelled);

    let before = stub.requests().len();
    assert_eq!(p.complete(&ask("again"), &cancel).await.unwrap_err(), ModelError::Cancelled);
    assert_eq!(stub.requests().len(), before);
}

#[tokio::test]
async fn an_overload_inside_the_stream_is_retried_and_a_bad_request_is_not() {
    let stub = StubModel::start().await;
    stub.push_stream_error("overloaded_error", "Overloaded");
    stub.push(Turn::text("recovered"));
    let (p, sleeper) = provider(&stub, 2);
    let p = p.with_streaming(true);
    assert_eq!(p.complete(&ask("hi"), &Cancel::new()).await.unwrap().first_text(), Some("recovered"));
    assert_eq!(sleeper.waits().len(), 1);

    stub.push_stream_error("invalid_request_error", "prompt is too long");
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::Api(m) if m.contains("prompt is too long")), "{e:?}");
    assert_eq!(sleeper.waits().len(), 1);
}

/// A loopback server that answers every connection with `reply(n)` (n counts connections) and
/// then closes it; the count tells whether anything came at all.
fn raw_server(reply: impl Fn(usize) -> Vec<u8> + Send + 'static) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 65536];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(300)));
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(&reply(n));
        }
    });
    (url, hits)
}

#[tokio::test]
async fn a_redirect_is_not_followed_so_the_key_and_prompt_stay_home() {
    // reqwest strips Authorization on a cross-host redirect but not x-api-key, and follows
    // https → http: a redirecting endpoint would receive the key elsewhere, in clear.
    let (elsewhere, elsewhere_hits) = raw_server(|_| b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_vec());
    for status in ["301 Moved Permanently", "307 Temporary Redirect"] {
        let location = format!("{elsewhere}/v1/messages");
        let (url, _) = raw_server(move |_| format!("HTTP/1.1 {status}\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n").into_bytes());
        let sleeper = Arc::new(RecordingSleeper::default());
        let p = AnthropicProvider::new("m", "sk-ant-secret", Some(&url)).unwrap().with_options(options(3, Duration::from_secs(30), sleeper.clone()));
        let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
        assert!(matches!(&e, ModelError::Api(m) if m.contains("redirected to") && m.contains(&elsewhere)), "{e:?}");
        assert!(sleeper.waits().is_empty(), "a redirect is not retried");
    }
    assert_eq!(elsewhere_hits.load(std::sync::atomic::Ordering::SeqCst), 0, "the redirect target was contacted");
}

/// A stream of endless small events is bounded like a whole answer, not only each event:
/// 40 MiB of one-megabyte text deltas is refused at 32 MiB.
#[tokio::test]
async fn a_streamed_answer_is_bounded_as_a_whole() {
    let (url, _) = raw_server(|_| {
        let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        let mut events = String::from("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
        let delta = format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{}\"}}}}\n\n", "y".repeat(1 << 20));
        for _ in 0..40 {
            events.push_str(&delta);
        }
        out.extend_from_slice(format!("{:x}\r\n", events.len()).as_bytes());
        out.extend_from_slice(events.as_bytes());
        out.extend_from_slice(b"\r\n0\r\n\r\n");
        out
    });
    let p = AnthropicProvider::new("m", "k", Some(&url)).unwrap().with_streaming(true).with_options(options(0, Duration::from_secs(30), Arc::new(RecordingSleeper::default())));
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::BadResponse(m) if m.contains("streamed answer larger than 32 MiB")), "{e:?}");
}

/// Some OpenAI-compatible servers end a stream after the finish reason without `[DONE]`: the
/// answer is complete and taken; a stream cut before any finish reason is retried.
#[tokio::test]
async fn an_openai_stream_without_its_done_marker_is_judged_by_its_finish_reason() {
    let stream = |events: &'static str| {
        move |_| format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{events}", events.len()).into_bytes()
    };
    let complete = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi there\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    let (url, _) = raw_server(stream(complete));
    let p = mneme_model::OpenAiProvider::new("m", None, Some(&url)).unwrap().with_streaming(true).with_options(options(0, Duration::from_secs(30), Arc::new(RecordingSleeper::default())));
    assert_eq!(p.complete(&ask("hi"), &Cancel::new()).await.unwrap().first_text(), Some("hi there"));
    let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi th\"}}]}\n\n";
    let (url, hits) = raw_server(stream(cut));
    let p = mneme_model::OpenAiProvider::new("m", None, Some(&url)).unwrap().with_streaming(true).with_options(options(1, Duration::from_secs(30), Arc::new(RecordingSleeper::default())));
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::Network(m) if m.contains("stopped before it was complete")), "{e:?}");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 2, "a cut stream is tried again");
}

/// A base URL pointing at a web page, or a gateway answering 200 with an error object: the
/// message says what came back and where to look.
#[tokio::test]
async fn a_200_that_is_not_a_model_answer_says_what_came_back() {
    let (url, _) = raw_server(|_| b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 26\r\n\r\n<!doctype html><title>x</t".to_vec());
    let p = AnthropicProvider::new("m", "k", Some(&url)).unwrap().with_options(options(0, Duration::from_secs(30), Arc::new(RecordingSleeper::default())));
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::BadResponse(m) if m.contains(&url) && m.contains("<!doctype html>") && m.contains("base URL")), "{e:?}");
    let body = r#"{"error":{"code":"quota","message":"monthly budget spent"}}"#;
    let (url, _) = raw_server(move |_| format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()).into_bytes());
    let p = AnthropicProvider::new("m", "k", Some(&url)).unwrap().with_options(options(0, Duration::from_secs(30), Arc::new(RecordingSleeper::default())));
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::Api(m) if m.contains("quota: monthly budget spent")), "{e:?}");
}

#[tokio::test]
async fn an_answer_too_large_for_a_model_is_refused_unread() {
    // Declared too large: refused before reading.
    let (url, _) = raw_server(|_| b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 524288000\r\n\r\n{".to_vec());
    let p = AnthropicProvider::new("m", "k", Some(&url)).unwrap().with_options(options(0, Duration::from_secs(30), Arc::new(RecordingSleeper::default())));
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::BadResponse(m) if m.contains("larger than 32 MiB")), "{e:?}");
    // Chunked with no length: read up to the limit, then refused.
    let (url, _) = raw_server(|_| {
        let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        let chunk = vec![b'A'; 1 << 20];
        for _ in 0..40 {
            out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            out.extend_from_slice(&chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    });
    let p = AnthropicProvider::new("m", "k", Some(&url)).unwrap().with_options(options(0, Duration::from_secs(30), Arc::new(RecordingSleeper::default())));
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::BadResponse(m) if m.contains("larger than 32 MiB")), "{e:?}");
}

#[tokio::test]
async fn a_retry_after_longer_than_a_minute_is_answered_at_once() {
    let stub = StubModel::start().await;
    stub.push_rate_limit(99_999_999);
    let (p, sleeper) = provider(&stub, 3);
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::RateLimited(m) if m.contains("asks to wait 99999999 s")), "{e:?}");
    assert!(sleeper.waits().is_empty());
    assert_eq!(stub.model_requests().len(), 1);
}

/// A 503 "back in an hour" stays a server error (not relabelled a rate limit), and its
/// message says the wait once, without advice that contradicts it.
#[tokio::test]
async fn a_long_retry_after_keeps_the_kind_of_failure_and_says_the_wait_once() {
    let stub = StubModel::start().await;
    stub.push(mneme_stub_model::Reply::Error { status: 503, headers: vec![("retry-after".into(), "3600".into())], body: None });
    let (p, sleeper) = provider(&stub, 3);
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::Api(_)), "{e:?}");
    let text = e.to_string();
    assert_eq!(text.matches("asks to wait 3600 s").count(), 1, "{text}");
    assert!(!text.contains("a minute"), "{text}");
    assert!(sleeper.waits().is_empty());
}

/// A key that cannot be a header value fails at once, saying where to look, instead of
/// minutes of retries ending in "could not reach".
#[tokio::test]
async fn a_request_that_cannot_be_built_is_not_retried_or_blamed_on_the_network() {
    let stub = StubModel::start().await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let p = AnthropicProvider::new("m", "sk-ant-\u{1b}[A", Some(&stub.base_url())).unwrap().with_options(options(3, Duration::from_secs(30), sleeper.clone()));
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::NotConfigured(m) if m.contains("API key again")), "{e:?}");
    assert!(sleeper.waits().is_empty());
    assert!(stub.model_requests().is_empty());
}

#[tokio::test]
async fn an_error_message_cannot_drive_the_terminal_and_is_kept_short() {
    let stub = StubModel::start().await;
    let long = format!("\u{1b}]0;pwned\u{7}\u{1b}[2J{}", "x".repeat(5000));
    stub.push_error(400, json!({"type": "error", "error": {"type": "invalid_request_error", "message": long}}));
    let (p, _) = provider(&stub, 0);
    let e = p.complete(&ask("hi"), &Cancel::new()).await.unwrap_err().to_string();
    assert!(!e.contains('\u{1b}') && !e.contains('\u{7}'), "{e:?}");
    assert!(e.contains("\\u{1b}]0;pwned"), "{e}");
    assert!(e.len() < 600, "{} characters", e.len());
}

/// A server signed by an authority the built-in list does not hold (a company's own, a
/// TLS-inspecting proxy's) is trusted once NODE_EXTRA_CA_CERTS names it, as Claude Code
/// trusts it; until then the failure says so at once instead of retrying.
#[tokio::test]
async fn a_company_certificate_authority_is_trusted_through_node_extra_ca_certs() {
    let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "over tls"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 2}}).to_string();
    let url = mneme_testsupport::tls::https_server(move |_| mneme_testsupport::tls::json_response(&body));
    let home = mneme_testsupport::TestHome::new();
    let keychain = mneme_keychain::Keychain::new(format!("mneme-model-tls-test-{}", std::process::id()));
    let settings = mneme_model::ProviderSettings { kind: mneme_model::ProviderKind::Anthropic, base_url: Some(url.clone()), model: Some("m".into()), ..Default::default() };
    let env = home.env.clone().set_var("ANTHROPIC_API_KEY", "sk-ant-test").set_var("ANTHROPIC_BASE_URL", &url);

    let untrusted = mneme_model::build_provider(&settings, &env, &keychain).unwrap();
    let e = untrusted.complete(&ask("hi"), &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::NotConfigured(m) if m.contains("does not trust") && m.contains("NODE_EXTRA_CA_CERTS")), "{e:?}");

    let ca = mneme_testsupport::tls::test_ca();
    let trusting = env.clone().set_var("NODE_EXTRA_CA_CERTS", ca.to_str().unwrap());
    let p = mneme_model::build_provider(&settings, &trusting, &keychain).unwrap();
    assert_eq!(p.complete(&ask("hi"), &Cancel::new()).await.unwrap().first_text(), Some("over tls"));

    let not_pem = home.root.join("not-a-bundle.txt");
    std::fs::write(&not_pem, "hello").unwrap();
    let broken = env.clone().set_var("NODE_EXTRA_CA_CERTS", not_pem.to_str().unwrap());
    let e = mneme_model::build_provider(&settings, &broken, &keychain).err().expect("an unusable bundle is named");
    assert!(matches!(&e, ModelError::NotConfigured(m) if m.contains("not-a-bundle.txt") && m.contains("unset it")), "{e:?}");
}
