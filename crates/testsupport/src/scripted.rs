//! A model provider that answers from a script, for tests that drive an agent run or a recall
//! side query without a network or a stub server.

use mneme_model::{Block, Cancel, ModelError, Provider, ProviderKind, Request, Response, StopReason, Usage};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

/// A model that answers each request with the next of its scripted responses, in order, and
/// keeps every request it was sent. Past the end of the script it answers with its closing
/// response: a plain "done" from [`Scripted::new`] (which ends an agent's turn), the same
/// text every time from [`Scripted::always`]. A response holding a tool call stops for tool
/// use; any other ends the turn.
pub struct Scripted {
    turns: Mutex<VecDeque<Vec<Block>>>,
    then: Vec<Block>,
    seen: Mutex<Vec<Request>>,
}

impl Scripted {
    /// Answers with `turns` in order, then with the text "done".
    pub fn new(turns: impl IntoIterator<Item = Vec<Block>>) -> Scripted {
        Scripted { turns: Mutex::new(turns.into_iter().collect()), then: vec![Block::Text { text: "done".into() }], seen: Mutex::new(Vec::new()) }
    }

    /// Answers every request with the same text (a recall selector's JSON answer).
    pub fn always(text: impl Into<String>) -> Scripted {
        Scripted { turns: Mutex::new(VecDeque::new()), then: vec![Block::Text { text: text.into() }], seen: Mutex::new(Vec::new()) }
    }

    /// Every request sent so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The tool results the `n`th request (from 0) carried in its last message, as
    /// (content, is_error): what the run answered to the calls of response `n - 1`.
    pub fn tool_results(&self, n: usize) -> Vec<(String, bool)> {
        let seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let last = seen[n].messages.last().expect("the request has a message");
        last.content
            .iter()
            .filter_map(|b| match b {
                Block::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
                _ => None,
            })
            .collect()
    }
}

impl Provider for Scripted {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }
    fn model(&self) -> &str {
        "scripted"
    }
    fn complete<'a>(&'a self, request: &'a Request, _: &'a Cancel) -> Pin<Box<dyn Future<Output = Result<Response, ModelError>> + Send + 'a>> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(request.clone());
        let next = self.turns.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop_front();
        let content = next.unwrap_or_else(|| self.then.clone());
        let stop_reason = if content.iter().any(|b| matches!(b, Block::ToolUse { .. })) { StopReason::ToolUse } else { StopReason::EndTurn };
        Box::pin(async move { Ok(Response { content, stop_reason, usage: Usage::default() }) })
    }
}
