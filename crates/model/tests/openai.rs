//! The OpenAI-compatible provider against the stub server.

mod common;

use common::{options, RecordingSleeper};
use mneme_model::{Block, Cancel, Message, ModelError, OpenAiProvider, Provider, ProviderKind, Request, Role, StopReason, ToolDef, Usage};
use mneme_stub_model::{StubModel, Turn};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

fn provider(stub: &StubModel, key: Option<&str>, max_retries: u32) -> (OpenAiProvider, Arc<RecordingSleeper>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    let p = OpenAiProvider::new("local-model", key.map(str::to_string), Some(&stub.openai_base_url()))
        .unwrap()
        .with_options(options(max_retries, Duration::from_secs(30), sleeper.clone()));
    (p, sleeper)
}

fn lookup_tool() -> ToolDef {
    ToolDef {
        name: "lookup".into(),
        description: "Finds a memory".into(),
        input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
    }
}

#[tokio::test]
async fn text_answer_with_and_without_a_key() {
    let stub = StubModel::start().await;
    stub.push(Turn::text("hi back").with_usage(7, 2));
    let (p, _) = provider(&stub, Some("sk-local"), 0);
    assert_eq!(p.kind(), ProviderKind::Openai);
    let request = Request { system: "sys".into(), messages: vec![Message::user_text("hi")], tools: vec![], max_tokens: 100, json_schema: None, thinking_disabled: false };
    let r = p.complete(&request, &Cancel::new()).await.unwrap();
    assert_eq!(r.content, vec![Block::Text { text: "hi back".into() }]);
    assert_eq!((r.stop_reason, r.usage), (StopReason::EndTurn, Usage { input_tokens: 7, output_tokens: 2 }));
    let sent = &stub.model_requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-local"));
    assert_eq!(
        sent.body,
        json!({"model": "local-model", "max_tokens": 100,
               "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]})
    );

    let (keyless, _) = provider(&stub, None, 0);
    keyless.complete(&request, &Cancel::new()).await.unwrap();
    assert_eq!(stub.model_requests()[1].header("authorization"), None);
}

#[tokio::test]
async fn tool_calls_round_trip_as_functions() {
    let stub = StubModel::start().await;
    stub.push(Turn::tool_use("lookup", json!({"q": "tests"})));
    stub.push(Turn::text("run cargo test"));
    let (p, _) = provider(&stub, None, 0);
    let mut request = Request {
        system: String::new(),
        messages: vec![Message::user_text("how do I test?")],
        tools: vec![lookup_tool()],
        max_tokens: 100,
        json_schema: None,
        thinking_disabled: false,
    };
    let first = p.complete(&request, &Cancel::new()).await.unwrap();
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let Some(Block::ToolUse { id, name, input }) = first.content.first().cloned() else { panic!("{first:?}") };
    assert_eq!((name.as_str(), input), ("lookup", json!({"q": "tests"})));
    request.messages.push(Message { role: Role::Assistant, content: first.content.clone() });
    request.messages.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult { tool_use_id: id.clone(), content: "feedback_tests.md".into(), is_error: false }],
    });
    assert_eq!(p.complete(&request, &Cancel::new()).await.unwrap().first_text(), Some("run cargo test"));

    let sent = stub.model_requests();
    assert_eq!(
        sent[0].body["tools"],
        json!([{"type": "function", "function": {"name": "lookup", "description": "Finds a memory",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}])
    );
    assert_eq!(
        sent[1].body["messages"],
        json!([
            {"role": "user", "content": "how do I test?"},
            {"role": "assistant", "content": null,
             "tool_calls": [{"id": id, "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"tests\"}"}}]},
            {"role": "tool", "tool_call_id": id, "content": "feedback_tests.md"},
        ])
    );
}

#[tokio::test]
async fn structured_output_uses_response_format() {
    let stub = StubModel::start().await;
    stub.push(Turn::json(&json!({"selected_memories": []})));
    let (p, _) = provider(&stub, None, 0);
    let schema = json!({"type": "object", "properties": {"selected_memories": {"type": "array", "items": {"type": "string"}}},
                        "required": ["selected_memories"], "additionalProperties": false});
    let request =
        Request { system: "pick".into(), messages: vec![Message::user_text("q")], tools: vec![], max_tokens: 256, json_schema: Some(schema.clone()), thinking_disabled: false };
    let r = p.complete(&request, &Cancel::new()).await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(r.first_text().unwrap()).unwrap(), json!({"selected_memories": []}));
    assert_eq!(
        stub.model_requests()[0].body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "response", "schema": schema, "strict": true}})
    );
}

#[tokio::test]
async fn streaming_assembles_content_and_tool_calls() {
    let stub = StubModel::start().await;
    stub.push(Turn::text("thinking aloud").and_tool_use("lookup", json!({"q": "naïve"})).with_usage(30, 5));
    let (p, _) = provider(&stub, None, 0);
    let p = p.with_streaming(true);
    let request =
        Request { system: String::new(), messages: vec![Message::user_text("q")], tools: vec![lookup_tool()], max_tokens: 100, json_schema: None, thinking_disabled: false };
    let r = p.complete(&request, &Cancel::new()).await.unwrap();
    assert_eq!(r.content[0], Block::Text { text: "thinking aloud".into() });
    assert!(matches!(&r.content[1], Block::ToolUse { name, input, .. } if name == "lookup" && *input == json!({"q": "naïve"})));
    assert_eq!((r.stop_reason, r.usage), (StopReason::ToolUse, Usage { input_tokens: 30, output_tokens: 5 }));
    let body = &stub.model_requests()[0].body;
    assert_eq!((&body["stream"], &body["stream_options"]), (&json!(true), &json!({"include_usage": true})));
}

#[tokio::test]
async fn errors_map_and_only_transient_ones_retry() {
    let stub = StubModel::start().await;
    let (p, sleeper) = provider(&stub, Some("bad"), 3);
    let request = Request { system: String::new(), messages: vec![Message::user_text("q")], tools: vec![], max_tokens: 10, json_schema: None, thinking_disabled: false };
    stub.push_status(401);
    assert!(matches!(p.complete(&request, &Cancel::new()).await.unwrap_err(), ModelError::BadKey(m) if m.contains("Incorrect API key")));
    stub.push_status(404);
    assert_eq!(p.complete(&request, &Cancel::new()).await.unwrap_err(), ModelError::ModelNotFound("local-model".into()));
    assert_eq!(stub.model_requests().len(), 2);
    assert!(sleeper.waits().is_empty());

    stub.push_rate_limit(3);
    stub.push_status(502);
    stub.push(Turn::text("fine"));
    assert_eq!(p.complete(&request, &Cancel::new()).await.unwrap().first_text(), Some("fine"));
    let waits = sleeper.waits();
    assert_eq!(waits[0], Duration::from_secs(3));
    assert!((1000..=1250).contains(&waits[1].as_millis()), "{waits:?}");

    stub.push_error(429, json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}));
    let before = stub.model_requests().len();
    assert!(matches!(p.complete(&request, &Cancel::new()).await.unwrap_err(), ModelError::RateLimited(m) if m.contains("quota")));
    assert_eq!(stub.model_requests().len(), before + 1, "a spent quota is not retried");
}
