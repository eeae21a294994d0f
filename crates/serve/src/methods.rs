//! `POST /api/{method}`: one route per api operation, generated from
//! [`mneme_api::operations!`] — the same list the desktop shell's commands come from. The
//! method is the operation's name in camelCase (`fix_index` → `fixIndex`), the body its
//! request type in camelCase JSON (an empty body counts as `{}`), the answer its answer type;
//! `ui/src/lib/bindings.ts` has both for every method.
//!
//! Every method taking `cwd` also accepts `settingSources` and `addDirs`, because they change
//! which memory folder Claude Code uses; a relative `cwd` is taken from the folder serve was
//! started in. Errors: 400 `invalid_input`, 404 `not_found`, 409 `conflict` /
//! `already_exists`, 422 `malformed`, 500 `io`, 503 `unavailable` (the OS keyring, an
//! unreachable team server, a `cwd` on a drive that does not answer, an operation that did not
//! finish within the server's patience: `mneme_api::drive_check`), 422 `secrets_refused`, 428 `sign_in_required` and 409 `forbidden`
//! (the team server's refusals; 401 and 403 mean this page's own token was refused), each as
//! `{code, message}`. A provider that fails during `testProvider` or `recall` is not an error:
//! the answer says what failed.

use crate::AppState;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use mneme_api::drive_check::{guarded, NamesFolder};
use mneme_api::ops::{Host, WatchedFolder};
use mneme_api::{ApiError, ErrorCode};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) async fn call(State(state): State<Arc<AppState>>, UrlPath(method): UrlPath<String>, body: Bytes) -> Response {
    let name = mneme_api::ops::snake_case(&method);
    // Only camelCase names are routes: `fix_index` itself is not.
    if method.contains('_') || !mneme_api::ops::NAMES.contains(&name.as_str()) {
        return error_response(StatusCode::NOT_FOUND, "not_found", &format!("There is no API method '{method}'."));
    }
    // Parsed, the drive of the folder it names asked, and run on a thread of its own waited for
    // at most the server's patience, as the desktop app's commands are
    // (`mneme_api::drive_check`): a project on a drive that stopped answering is told at once,
    // and one that stops answering mid-request costs a thread left behind, not the request.
    match dispatch(state, &name, body).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => api_error_response(&e),
    }
}

/// `{code, message}` with the given status.
pub(crate) fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(json!({ "code": code, "message": message }))).into_response()
}

fn api_error_response(e: &ApiError) -> Response {
    let status = match e.code {
        ErrorCode::InvalidInput => StatusCode::BAD_REQUEST,
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::Conflict | ErrorCode::AlreadyExists => StatusCode::CONFLICT,
        ErrorCode::Malformed => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::Io | ErrorCode::ReadOnly | ErrorCode::PermissionDenied => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::DiskFull => StatusCode::INSUFFICIENT_STORAGE,
        ErrorCode::TrashEntryNewer => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::SecretsRefused => StatusCode::UNPROCESSABLE_ENTITY,
        // Not 401/403: the page reads those as its own token being refused.
        ErrorCode::SignInRequired => StatusCode::PRECONDITION_REQUIRED,
        ErrorCode::Forbidden => StatusCode::CONFLICT,
    };
    (status, Json(e)).into_response()
}

/// Parses the body; an empty body counts as `{}` so argument-less methods need none.
fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) { b"{}".as_slice() } else { body };
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("The request body is not what this method takes: {e}.")))
}

fn to_json<T: serde::Serialize>(v: T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::new(ErrorCode::Io, format!("Could not encode the answer: {e}.")))
}

impl Host for AppState {
    fn start_dir(&self) -> &Path {
        &self.start_dir
    }

    fn scheduler_running(&self) -> bool {
        self.scheduler.is_some()
    }

    fn watch_project(&self, cwd: &Path, memory_dir: &Path) -> Result<Vec<PathBuf>, ApiError> {
        Ok(self.events.watch_project(cwd, memory_dir))
    }

    fn watched(&self) -> Result<Vec<WatchedFolder>, ApiError> {
        Ok(self.events.watched())
    }

    fn context_cache(&self) -> Option<&mneme_api::ContextCache> {
        Some(self.events.context_cache())
    }
}

/// One `match` arm per operation: parse the request, run the operation, encode the answer.
macro_rules! dispatch_operations {
    ($( $(#[$doc:meta])* $name:ident ($req:ty) -> $resp:ty = |$m:ident, $h:ident, $q:ident| $body:expr; )*) => {
        async fn dispatch(state: Arc<AppState>, name: &str, body: Bytes) -> Result<Value, ApiError> {
            match name {
                $( stringify!($name) => {
                    let q = parse::<$req>(&body)?;
                    let folder = q.folder().map(|cwd| state.start_dir.join(cwd));
                    let patience = state.operation_patience;
                    // Its own handle: the operation's thread takes `state` along.
                    let mneme = state.mneme.clone();
                    guarded(name, &mneme, folder, patience, move || to_json(mneme_api::ops::$name(&state.mneme, &*state, q)?)).await
                } )*
                other => Err(ApiError::not_found(format!("There is no API method '{other}'."))),
            }
        }
    };
}

mneme_api::operations!(dispatch_operations);
