//! The stub speaks both wire formats the providers (and real Claude Code) expect.

use mneme_stub_model::{Reply, StubModel, Turn};
use serde_json::{json, Value};

async fn post(url: String, body: Value) -> (u16, reqwest::header::HeaderMap, String) {
    let resp = reqwest::Client::new().post(url).header("x-api-key", "k").json(&body).send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.unwrap())
}

fn sse_data(text: &str) -> Vec<Value> {
    text.lines().filter_map(|l| l.strip_prefix("data: ")).filter(|d| *d != "[DONE]").map(|d| serde_json::from_str(d).unwrap()).collect()
}

#[tokio::test]
async fn anthropic_json_turns_come_in_queue_order_then_the_default() {
    let stub = StubModel::start().await;
    stub.push(Turn::tool_use("Write", json!({"file_path": "/a", "content": "x"})).and_text("after"));
    stub.push(Turn::json(&json!({"selected_memories": ["a.md"]})));
    let url = format!("{}/v1/messages?beta=true", stub.base_url());
    let (status, _, body) = post(url.clone(), json!({"model": "m1", "messages": []})).await;
    assert_eq!(status, 200);
    let msg: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(msg["model"], "m1");
    assert_eq!(msg["stop_reason"], "tool_use");
    assert_eq!(msg["content"][0]["name"], "Write");
    assert_eq!(msg["content"][0]["input"], json!({"file_path": "/a", "content": "x"}));
    assert!(msg["content"][0]["id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(msg["content"][1]["text"], "after");
    let (_, _, body) = post(url.clone(), json!({"model": "m1", "messages": []})).await;
    let msg: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(serde_json::from_str::<Value>(msg["content"][0]["text"].as_str().unwrap()).unwrap(), json!({"selected_memories": ["a.md"]}));
    let (_, _, body) = post(url, json!({"model": "m1", "messages": []})).await;
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["content"][0]["text"], "ok");

    let requests = stub.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].path, "/v1/messages?beta=true");
    assert_eq!(requests[0].header("X-Api-Key"), Some("k"));
    assert_eq!(requests[0].body["model"], "m1");
}

#[tokio::test]
async fn anthropic_stream_splits_text_and_tool_input_into_deltas() {
    let stub = StubModel::start().await;
    stub.push(Turn::text("hello world").and_tool_use("Read", json!({"file_path": "/x"})));
    let (status, headers, body) =
        post(format!("{}/v1/messages", stub.base_url()), json!({"model": "m", "stream": true, "messages": []})).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/event-stream");
    let names: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    let events = sse_data(&body);
    let text: String = events.iter().filter_map(|e| e.pointer("/delta/text").and_then(Value::as_str)).collect();
    assert_eq!(text, "hello world");
    let partial: Vec<&str> = events.iter().filter_map(|e| e.pointer("/delta/partial_json").and_then(Value::as_str)).collect();
    assert!(partial.len() > 1, "the tool input arrives in more than one delta");
    assert_eq!(serde_json::from_str::<Value>(&partial.concat()).unwrap(), json!({"file_path": "/x"}));
    let stop = events.iter().find(|e| e["type"] == "message_delta").unwrap();
    assert_eq!(stop["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn openai_json_and_stream_use_tool_calls() {
    let stub = StubModel::start().await;
    stub.push(Turn::tool_use("lookup", json!({"q": "x"})));
    stub.push(Turn::text("streamed text").and_tool_use("lookup", json!({"q": "y"})));
    let url = format!("{}/chat/completions", stub.openai_base_url());
    let (_, _, body) = post(url.clone(), json!({"model": "gpt", "messages": []})).await;
    let msg: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(msg["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(msg["choices"][0]["message"]["content"], Value::Null);
    let call = &msg["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "lookup");
    assert_eq!(serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(), json!({"q": "x"}));

    let (_, _, body) =
        post(url, json!({"model": "gpt", "stream": true, "stream_options": {"include_usage": true}, "messages": []})).await;
    assert!(body.trim_end().ends_with("data: [DONE]"));
    let chunks = sse_data(&body);
    let text: String = chunks.iter().filter_map(|c| c.pointer("/choices/0/delta/content").and_then(Value::as_str)).collect();
    assert_eq!(text, "streamed text");
    let args: String =
        chunks.iter().filter_map(|c| c.pointer("/choices/0/delta/tool_calls/0/function/arguments").and_then(Value::as_str)).collect();
    assert_eq!(serde_json::from_str::<Value>(&args).unwrap(), json!({"q": "y"}));
    assert!(chunks.iter().any(|c| c.pointer("/usage/total_tokens").is_some()));
}

#[tokio::test]
async fn errors_render_in_each_apis_shape() {
    let stub = StubModel::start().await;
    stub.push_rate_limit(7);
    stub.push_status(404);
    stub.push_error(500, json!({"custom": true}));
    let anthropic = format!("{}/v1/messages", stub.base_url());
    let (status, headers, body) = post(anthropic.clone(), json!({"model": "nope"})).await;
    assert_eq!((status, headers["retry-after"].to_str().unwrap()), (429, "7"));
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["type"], "rate_limit_error");
    let (status, _, body) = post(format!("{}/chat/completions", stub.openai_base_url()), json!({"model": "nope"})).await;
    assert_eq!(status, 404);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], "model_not_found");
    let (status, _, body) = post(anthropic, json!({"model": "nope"})).await;
    assert_eq!((status, body.as_str()), (500, r#"{"custom":true}"#));
}

#[tokio::test]
async fn conditional_replies_skip_requests_that_do_not_match() {
    let stub = StubModel::start().await;
    stub.push_when(|r| r.has_tool("Write"), Turn::text("main loop"));
    let url = format!("{}/v1/messages", stub.base_url());
    let (_, _, side) = post(url.clone(), json!({"model": "m", "messages": []})).await;
    assert_eq!(serde_json::from_str::<Value>(&side).unwrap()["content"][0]["text"], "ok");
    assert_eq!(stub.pending(), 1);
    let (_, _, main) = post(url, json!({"model": "m", "tools": [{"name": "Write"}], "messages": []})).await;
    assert_eq!(serde_json::from_str::<Value>(&main).unwrap()["content"][0]["text"], "main loop");
    assert_eq!(stub.pending(), 0);
}

#[tokio::test]
async fn count_tokens_and_other_paths_do_not_consume_the_queue() {
    let stub = StubModel::start().await;
    stub.push(Reply::Hang);
    let (status, _, body) = post(format!("{}/v1/messages/count_tokens", stub.base_url()), json!({"messages": []})).await;
    assert_eq!(status, 200);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["input_tokens"].as_u64().unwrap() >= 1);
    let models = reqwest::get(format!("{}/v1/models", stub.base_url())).await.unwrap().text().await.unwrap();
    assert!(models.contains("claude-sonnet"));
    assert_eq!(stub.pending(), 1);
    assert_eq!(stub.model_requests().len(), 0);
    assert_eq!(stub.requests().len(), 2);
}

#[tokio::test]
async fn a_hang_never_answers_until_the_stub_is_dropped() {
    let stub = StubModel::start().await;
    stub.push_hang();
    let url = format!("{}/v1/messages", stub.base_url());
    let request = tokio::spawn(async move { post(url, json!({"model": "m"})).await });
    // The request must have arrived (and be hanging) before the drop releases it.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while stub.model_requests().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "the request never reached the stub within 30 s");
        tokio::task::yield_now().await;
    }
    assert!(!request.is_finished());
    drop(stub);
    let (status, _, _) = request.await.unwrap();
    assert_eq!(status, 503);
}

#[tokio::test]
async fn a_stream_error_starts_the_answer_then_fails() {
    let stub = StubModel::start().await;
    stub.push_stream_error("overloaded_error", "Overloaded");
    stub.push_stream_error("overloaded_error", "Overloaded");
    let url = format!("{}/v1/messages", stub.base_url());
    let (status, _, body) = post(url.clone(), json!({"model": "m", "stream": true})).await;
    assert_eq!(status, 200);
    let events = sse_data(&body);
    assert_eq!(events[0]["type"], "message_start");
    assert_eq!(events[1]["error"]["type"], "overloaded_error");
    let (status, _, _) = post(url, json!({"model": "m"})).await;
    assert_eq!(status, 529);
}
