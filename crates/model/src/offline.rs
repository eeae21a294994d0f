//! Offline mode: no model at all. Recall, extraction and dream have deterministic fallbacks of
//! their own (BM25 ranking, explicit statements, rule-based consolidation), so this provider only
//! has to say clearly that there is nothing to ask.

use crate::{Cancel, ModelError, Provider, ProviderKind, Request, Response};
use futures_util::future::BoxFuture;

/// What every `complete` call in offline mode answers.
pub const OFFLINE_MESSAGE: &str = "offline mode has no model to ask: recall ranks memories by keywords, extraction keeps only explicit statements and dream consolidates by rules; choose a model provider in Settings → Model provider to use a model";

#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineProvider;

impl Provider for OfflineProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Offline
    }

    fn model(&self) -> &str {
        "offline"
    }

    fn complete<'a>(&'a self, _request: &'a Request, _cancel: &'a Cancel) -> BoxFuture<'a, Result<Response, ModelError>> {
        Box::pin(async { Err(ModelError::NotConfigured(OFFLINE_MESSAGE.to_string())) })
    }
}
