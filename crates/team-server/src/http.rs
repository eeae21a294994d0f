//! The HTTP surface: Claude Code's team-memory endpoint (§8.2), the Mneme lead API, the
//! health check, and the shared pieces (bearer auth, per-token rate limit, error bodies, the
//! request log).

use crate::auth;
use crate::keys::{validate_existing_key, validate_key};
use crate::memory::{EntityTags, Memory, Op, Permission, WriteError, Written};
use crate::store::{Repo, Role, StoreError};
use crate::admin::iso as iso_ms;
use crate::{oauth, ServerConfig};
use axum::body::Body;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use governor::clock::{Clock as _, DefaultClock};
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};
use mneme_team_proto::server_wire::{
    EntryVersion, HashesWithTombstones, HistoryResponse, LatestEntry, HISTORY_PAGE, MAX_HISTORY_PAGE, LatestResponse, MeResponse, PurgeRequest, RepoAccess, RepoRole,
    RollbackRequest, SignIn, SignInsResponse,
};
use mneme_team_proto::wire::{
    ErrorBody, ErrorDetails, ErrorObject, PutResponse, TeamMemoryContent, TeamMemoryData, TeamMemoryHashes,
    INVALID_CONTENT, KEY_COLLISION, MAX_PUT_ENTRIES, TEAM_MEMORY_PATH, TOO_MANY_ENTRIES, TOO_MANY_KEYS,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Instant;

type Limiter = RateLimiter<String, DashMapStateStore<String>, DefaultClock>;

/// What every handler shares.
pub(crate) struct AppState {
    pub memory: Memory,
    pub config: ServerConfig,
    /// `public_url` or `http://<bound address>`, without a trailing slash.
    pub base_url: String,
    limiter: Option<Limiter>,
    /// Attempt limits and the hashing cap for sign-in.
    pub sign_in: crate::limits::SignInGuard,
    /// Requests whose body is held in memory at once ([`ServerConfig::max_bodies_in_memory`]).
    bodies: tokio::sync::Semaphore,
    /// Full pulls being built at once ([`ServerConfig::max_full_pulls`]).
    full_pulls: tokio::sync::Semaphore,
}

impl AppState {
    pub fn new(memory: Memory, config: ServerConfig, base_url: String) -> AppState {
        let limiter = config.rate_limit.and_then(|rl| {
            let burst = NonZeroU32::new(rl.burst)?;
            let quota = Quota::with_period(rl.period / rl.burst)?.allow_burst(burst);
            Some(RateLimiter::dashmap(quota))
        });
        let sign_in = crate::limits::SignInGuard::new(config.sign_in_limits);
        let bodies = tokio::sync::Semaphore::new(config.max_bodies_in_memory.max(1));
        let full_pulls = tokio::sync::Semaphore::new(config.max_full_pulls.max(1));
        AppState { memory, config, base_url, limiter, sign_in, bodies, full_pulls }
    }

    pub fn now_ms(&self) -> i64 {
        self.memory.now_ms()
    }

    pub fn store(&self) -> &dyn crate::store::Store {
        self.memory.store.as_ref()
    }
}

pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route(TEAM_MEMORY_PATH, get(get_team_memory).put(put_team_memory))
        .route(mneme_team_proto::server_wire::ME_PATH, get(me))
        .route(mneme_team_proto::server_wire::HISTORY_PATH, get(history))
        .route(mneme_team_proto::server_wire::LATEST_PATH, get(latest))
        .route(mneme_team_proto::server_wire::ROLLBACK_PATH, post(rollback))
        .route(mneme_team_proto::server_wire::ENTRY_PATH, delete(remove_entry))
        .route(mneme_team_proto::server_wire::PURGE_PATH, post(purge))
        .route(mneme_team_proto::server_wire::SIGN_INS_PATH, get(sign_ins))
        .route(mneme_team_proto::server_wire::HEALTH_PATH, get(healthz))
        .merge(oauth::routes())
        // Unknown paths and methods answer in the same JSON error shape as everything else.
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), read_body_in_time))
        .layer(axum::middleware::from_fn(log_request))
        .with_state(state)
}

/// How long a request with a body waits for its turn when the server holds as many as it may.
const BODY_PERMIT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// How long a full pull waits for its turn; well inside the client's 30 s request timeout.
const FULL_PULL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads every request's body, up to the largest the server takes, within
/// `body_read_timeout`; the handlers then read it from memory. Hyper's header timeout ends
/// once the headers are in, and a client sending one byte of body every few seconds would
/// otherwise keep its connection (and a task) for as long as it liked, signed in or not.
///
/// The body is read before anyone is signed in (the handler checks the token), so how many
/// bodies are held at once is capped: past the cap a request waits a moment, then is turned
/// away (503, Retry-After), and the memory many slow or large requests could take is bounded
/// by `max_bodies_in_memory` × `max_body_bytes` whoever sends them.
async fn read_body_in_time(State(app): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let empty = axum::body::HttpBody::size_hint(&body).upper() == Some(0);
    let _permit = if empty {
        None
    } else {
        match tokio::time::timeout(BODY_PERMIT_WAIT, app.bodies.acquire()).await {
            Ok(Ok(permit)) => Some(permit),
            _ => {
                let mut res = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "busy",
                    "The server is reading as many requests as it holds at once. Try again in a moment.",
                )
                .into_response();
                res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(5));
                return res;
            }
        }
    };
    let limit = usize::try_from(app.config.max_body_bytes).unwrap_or(usize::MAX);
    match tokio::time::timeout(app.config.body_read_timeout, axum::body::to_bytes(body, limit)).await {
        // The permit is kept until the answer is made: the handler holds the body till then.
        Ok(Ok(bytes)) => next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await,
        Ok(Err(_)) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "team_memory_body_too_large",
            format!("The request body is larger than {limit} bytes. Send the entries in smaller batches."),
        )
        .into_response(),
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!("The request body did not arrive within {} seconds.", app.config.body_read_timeout.as_secs()),
        )
        .into_response(),
    }
}

/// One structured log line per request (never the query string, which names repositories
/// and keys, nor any header).
async fn log_request(req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let start = Instant::now();
    let res = next.run(req).await;
    tracing::info!(
        method = %method,
        path = %path,
        status = res.status().as_u16(),
        ms = start.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    res
}

/// An error answer: `{error:{message, details:{error_code, …}}}` like the structured 413.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    max_entries: Option<u64>,
    received_entries: Option<u64>,
    retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into(), max_entries: None, received_entries: None, retry_after: None }
    }

    fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Missing, expired or revoked access token. Sign in again (the device sign-in at /device).",
        )
    }

    fn forbidden(repo: &str) -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("You have no access to {repo:?}. Ask a team admin to grant it."),
        )
    }

    fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        tracing::error!(error = %e, "storage failure");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "The server's database failed; try again later.")
    }
}

impl From<WriteError> for ApiError {
    fn from(e: WriteError) -> ApiError {
        match e {
            WriteError::PreconditionFailed => {
                ApiError::new(StatusCode::PRECONDITION_FAILED, "precondition_failed", e.to_string())
            }
            WriteError::TooManyEntries { max, received } => ApiError {
                max_entries: Some(max),
                received_entries: Some(received),
                ..ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, TOO_MANY_ENTRIES, e.to_string())
            },
            WriteError::StorageFull { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, mneme_team_proto::wire::STORAGE_FULL, e.to_string())
            }
            WriteError::ContentFull { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, mneme_team_proto::wire::CONTENT_FULL, e.to_string())
            }
            WriteError::Contended => ApiError {
                retry_after: Some(1),
                ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "contended", e.to_string())
            },
            WriteError::LeadRequired { .. } | WriteError::RemovedByLead { .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "lead_required", e.to_string())
            }
            WriteError::NoSuchEntry { .. } => ApiError::new(StatusCode::NOT_FOUND, "entry_not_found", e.to_string()),
            WriteError::KeyCollision { .. } => ApiError::new(StatusCode::BAD_REQUEST, KEY_COLLISION, e.to_string()),
            WriteError::Store(s) => s.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorObject {
                message: Some(self.message),
                details: Some(ErrorDetails {
                    error_code: self.code.to_string(),
                    max_entries: self.max_entries,
                    received_entries: self.received_entries,
                }),
            },
        };
        let mut res = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            res.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(secs) = self.retry_after {
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

/// The signed-in user behind a request.
pub(crate) struct Caller {
    pub user_id: i64,
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// 429 once `token` is over its rate limit.
fn rate_limit(app: &AppState, token: &str) -> Result<(), ApiError> {
    let Some(limiter) = &app.limiter else { return Ok(()) };
    if let Err(not_until) = limiter.check_key(&auth::token_hash(token)) {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        return Err(ApiError {
            retry_after: Some(secs.max(1)),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "Too many requests with this token; wait for Retry-After seconds.",
            )
        });
    }
    // The limiter keeps one cell per token ever seen; drop the idle ones now and then.
    if limiter.len() > 10_000 {
        limiter.retain_recent();
    }
    Ok(())
}

/// 401 without a live access token; 429 once the token is over its rate limit.
async fn authenticate(app: &AppState, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let token = bearer(headers).ok_or_else(ApiError::unauthorized)?;
    let user_id = auth::authenticate(app.store(), token, app.now_ms()).await?.ok_or_else(ApiError::unauthorized)?;
    rate_limit(app, token)?;
    Ok(Caller { user_id })
}

/// [`authenticate`], then the repository and the caller's role in it, in one database round
/// trip; 403 when there is no grant (whether or not the repository is known, so that names
/// cannot be probed).
async fn authorize(app: &AppState, headers: &HeaderMap, slug: &str) -> Result<(Caller, Repo, Role), ApiError> {
    let token = bearer(headers).ok_or_else(ApiError::unauthorized)?;
    let access =
        app.store().access(&auth::token_hash(token), slug, app.now_ms()).await?.ok_or_else(ApiError::unauthorized)?;
    rate_limit(app, token)?;
    match (access.repo, access.role) {
        (Some(repo), Some(role)) => Ok((Caller { user_id: access.user_id }, repo, role)),
        _ => Err(ApiError::forbidden(slug)),
    }
}

fn permission(role: Role) -> Permission {
    match role {
        Role::Member => Permission::Member,
        Role::Lead => Permission::Lead,
    }
}

/// The query string, or the JSON error shape saying what is wrong with it (axum's own
/// rejection is plain text).
fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(q)| q).map_err(|e| ApiError::bad_request(format!("The query string is not valid: {}.", e.body_text())))
}

/// A JSON body, or the JSON error shape saying what is wrong with it.
fn json_body<T>(b: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    b.map(|Json(b)| b).map_err(|e| ApiError::bad_request(format!("The body is not valid: {}.", e.body_text())))
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "There is no such endpoint on this team memory server.")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "This endpoint does not take that method.")
}

fn require_lead(role: Role, repo: &Repo) -> Result<(), ApiError> {
    match role {
        Role::Lead => Ok(()),
        Role::Member => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "lead_required",
            format!("Only a lead of {:?} can do this. Ask a team admin for the lead role.", repo.slug),
        )),
    }
}

fn etag(checksum: &str) -> HeaderValue {
    // Checksums are `sha256:<hex>`, always a valid header value.
    HeaderValue::from_str(&format!("\"{checksum}\"")).unwrap_or(HeaderValue::from_static("\"\""))
}

fn tags(headers: &HeaderMap, name: header::HeaderName) -> Option<EntityTags> {
    let values: Vec<&str> = headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).collect();
    (!values.is_empty()).then(|| EntityTags::parse(&values.join(",")))
}

/// The `If-Match` precondition. Unlike `If-None-Match` (where an unreadable value only costs a
/// 304), a value that cannot be read must not be skipped: that would turn a conditional write
/// into an unconditional one.
fn if_match(headers: &HeaderMap) -> Result<Option<EntityTags>, ApiError> {
    if headers.get_all(header::IF_MATCH).iter().any(|v| v.to_str().is_err()) {
        return Err(ApiError::bad_request(
            "The If-Match header holds bytes outside visible ASCII, so it cannot be checked and nothing was written. Send the checksum of the last ETag in quotes, or no If-Match.",
        ));
    }
    Ok(tags(headers, header::IF_MATCH))
}

#[derive(Deserialize)]
struct RepoQuery {
    repo: Option<String>,
    view: Option<String>,
    key: Option<String>,
    /// History paging: versions older than this one.
    before: Option<u64>,
    /// History paging: at most this many versions.
    limit: Option<u64>,
}

impl RepoQuery {
    fn repo(&self) -> Result<&str, ApiError> {
        let repo = self
            .repo
            .as_deref()
            .filter(|r| !r.is_empty())
            .ok_or_else(|| ApiError::bad_request("The repo query parameter (owner/name) is required."))?;
        refuse_nul(repo, "The repo query parameter")?;
        Ok(repo)
    }

    fn key(&self) -> Result<&str, ApiError> {
        let key =
            self.key.as_deref().filter(|k| !k.is_empty()).ok_or_else(|| ApiError::bad_request("The key query parameter is required."))?;
        refuse_nul(key, "The key query parameter")?;
        Ok(key)
    }
}

/// PostgreSQL's text cannot hold U+0000 (SQLite's can): a NUL that reached a query would fail
/// it with a 500 there and, inside a group commit, fail the teammates' writes committed with
/// it. So it is refused here, before the database, alike on both backends.
pub(crate) fn has_nul(value: &str) -> bool {
    value.contains('\0')
}

fn refuse_nul(value: &str, what: &str) -> Result<(), ApiError> {
    if has_nul(value) {
        return Err(ApiError::bad_request(format!(
            "{what} holds a NUL character (U+0000), which no repository name or key can hold. Remove it and send the request again."
        )));
    }
    Ok(())
}

fn not_found_yet() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "team_memory_not_found", "This repository has no team memory yet.")
}

async fn get_team_memory(
    State(app): State<Arc<AppState>>,
    q: Result<Query<RepoQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let (_, repo, _) = authorize(&app, &headers, q.repo()?).await?;
    if repo.version == 0 {
        return Err(not_found_yet());
    }
    let hashes_only = match q.view.as_deref() {
        None => false,
        Some("hashes") => true,
        Some(other) => return Err(ApiError::bad_request(format!("Unknown view {other:?}; the only view is \"hashes\"."))),
    };
    // The repository row was read just now: a matching ETag answers without loading entries.
    if !hashes_only {
        if let Some(inm) = tags(&headers, header::IF_NONE_MATCH) {
            if inm.matches_weak(&repo.checksum) {
                return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag(&repo.checksum))]).into_response());
            }
        }
    }
    // A full pull holds every live entry's content while it reads it and again as JSON, so
    // only so many are built at once (a repository may hold up to its storage cap); the
    // permit is held until the answer is made. The body then belongs to the connection.
    let _permit = if hashes_only {
        None
    } else {
        match tokio::time::timeout(FULL_PULL_WAIT, app.full_pulls.acquire()).await {
            Ok(Ok(permit)) => Some(permit),
            _ => {
                return Err(ApiError {
                    retry_after: Some(5),
                    ..ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "busy",
                        "The server is building as many full pulls as it builds at once. Try again in a moment.",
                    )
                });
            }
        }
    };
    let snap = app.memory.snapshot(&repo, !hashes_only).await?.ok_or_else(not_found_yet)?;
    if snap.repo.version == 0 {
        return Err(not_found_yet());
    }
    let mut entries = BTreeMap::new();
    let mut entry_checksums = BTreeMap::new();
    let mut deleted = BTreeMap::new();
    for e in snap.entries {
        if e.deleted {
            deleted.insert(e.key, e.changed_ms);
        } else {
            entry_checksums.insert(e.key.clone(), e.checksum);
            entries.insert(e.key, e.content);
        }
    }
    let version = u64::try_from(snap.repo.version).unwrap_or(0);
    let tag = etag(&snap.repo.checksum);
    let body = if hashes_only {
        Json(HashesWithTombstones {
            hashes: TeamMemoryHashes { version, checksum: snap.repo.checksum, entry_checksums: Some(entry_checksums) },
            deleted_entries: Some(deleted),
        })
        .into_response()
    } else {
        Json(TeamMemoryData {
            organization_id: snap.repo.team,
            repo: snap.repo.slug,
            version,
            last_modified: iso_ms(snap.repo.last_modified_ms),
            checksum: snap.repo.checksum,
            content: TeamMemoryContent {
                entries,
                entry_checksums: Some(entry_checksums),
                deleted_entries: Some(deleted),
            },
        })
        .into_response()
    };
    Ok(([(header::ETAG, tag)], body).into_response())
}

fn written(w: Written) -> Response {
    let tag = etag(&w.checksum);
    let body = PutResponse {
        checksum: w.checksum,
        last_modified: iso_ms(w.last_modified_ms),
        version: Some(u64::try_from(w.version).unwrap_or(0)),
    };
    ([(header::ETAG, tag)], Json(body)).into_response()
}

async fn put_team_memory(
    State(app): State<Arc<AppState>>,
    q: Result<Query<RepoQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let (caller, repo, role) = authorize(&app, &headers, q.repo()?).await?;
    let limit = usize::try_from(app.config.max_body_bytes).unwrap_or(usize::MAX);
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "team_memory_body_too_large",
            format!("The request body is larger than {limit} bytes. Send the entries in smaller batches."),
        )
    })?;
    let put: StrictPut = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "The body is not {{\"entries\": {{key: content}}, \"soft_delete_keys\": [key]}}: {e}."
        ))
    })?;
    // Every key a write names is read and written under the repository's lock (on SQLite the
    // database's only write lock), so how many one request may name is capped here, before it
    // queues: no client's batch comes near either cap.
    if put.entries.0.len() > MAX_PUT_ENTRIES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            TOO_MANY_KEYS,
            format!(
                "This request writes {} entries; one request may write at most {MAX_PUT_ENTRIES} (what a 200,000-byte batch, as Claude Code and Mneme send them, can hold). Send the entries in smaller batches.",
                put.entries.0.len()
            ),
        ));
    }
    // A client names for removal only keys the server listed as live, so never more than the
    // repository may hold.
    let removable = app.memory.max_entries(&repo).max(u64::try_from(repo.live_entries).unwrap_or(0));
    if put.soft_delete_keys.len() as u64 > removable {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            TOO_MANY_KEYS,
            format!(
                "This request removes {} keys, more than {:?} can hold ({removable}). Name only keys the repository has.",
                put.soft_delete_keys.len(),
                repo.slug
            ),
        ));
    }
    let mut ops = Vec::with_capacity(put.entries.0.len() + put.soft_delete_keys.len());
    for (key, content) in put.entries.0 {
        validate_key(&key).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "team_memory_invalid_key", e.to_string()))?;
        let size = content.len() as u64;
        if size > app.config.max_entry_bytes {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "team_memory_entry_too_large",
                format!("{key:?} is {size} bytes; entries may be at most {} bytes.", app.config.max_entry_bytes),
            ));
        }
        ops.push(Op::Upsert { key, content });
    }
    refuse_secrets(&ops).await?;
    // After the secret check, whose answer matters more: a UTF-16 file read as UTF-8 (as
    // Claude Code reads it) has a NUL after every ASCII letter, a token's included.
    if let Some(key) = ops.iter().find_map(|op| match op {
        Op::Upsert { key, content } if has_nul(content) => Some(key),
        _ => None,
    }) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            INVALID_CONTENT,
            format!(
                "{key:?} holds a NUL character (U+0000), which the server cannot store (a file saved as UTF-16 has one after every letter). Save it as UTF-8 without NUL characters and push again."
            ),
        ));
    }
    let written_keys: std::collections::HashSet<&str> = ops.iter().map(Op::key).collect();
    let mut deletes = Vec::with_capacity(put.soft_delete_keys.len());
    for key in put.soft_delete_keys {
        validate_existing_key(&key).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "team_memory_invalid_key", e.to_string()))?;
        if written_keys.contains(key.as_str()) {
            return Err(ApiError::bad_request(format!("{key:?} is both written and deleted in one request.")));
        }
        deletes.push(Op::Delete { key });
    }
    ops.extend(deletes);
    let precondition = if_match(&headers)?;
    // The repository row read with the token already says whether If-Match still holds; a
    // stale one is answered now, without queueing for the write lock. (Checksums never repeat,
    // so a tag that is not current now cannot become current later.)
    if precondition.as_ref().is_some_and(|t| !t.matches_strong(&repo.checksum, repo.version > 0)) {
        return Err(WriteError::PreconditionFailed.into());
    }
    // Soft deletes change what every teammate gets: a member's that would take effect is
    // refused (403 lead_required) and nothing in the request is written.
    let w = app.memory.write(&repo, Some(caller.user_id), permission(role), precondition.as_ref(), &ops).await?;
    Ok(written(w))
}

/// Refuses the whole write when an entry, or its key (the file's name on every teammate's
/// disk), holds a token the newest Claude Code would not push (`mneme_secrets::scan_pushed`):
/// every teammate's pull would write it to their disk. Every way text gets published goes
/// through here, a lead's rollback to an old version included (it may predate the check, or a
/// rule added since). Run off the async workers: a body is up to megabytes of text for the
/// rules to read.
async fn refuse_secrets(ops: &[Op]) -> Result<(), ApiError> {
    let entries: Vec<(String, String)> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Upsert { key, content } => Some((key.clone(), content.clone())),
            _ => None,
        })
        .collect();
    let labels = |text: &str| {
        let findings = mneme_secrets::scan_pushed(text);
        (!findings.is_empty()).then(|| findings.into_iter().map(|f| f.label).collect::<Vec<_>>().join(", "))
    };
    let found = tokio::task::spawn_blocking(move || {
        entries.into_iter().find_map(|(key, content)| {
            if let Some(found) = labels(&key) {
                return Some((key, true, found));
            }
            labels(&content).map(|found| (key, false, found))
        })
    })
    .await
    .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "The secret check failed; try again."))?;
    match found {
        None => Ok(()),
        Some((key, in_key, labels)) => {
            let (what, fix) =
                if in_key { (format!("The file name {key:?}"), "rename the file") } else { (format!("{key:?}"), "remove the secret") };
            Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "team_memory_contains_secret",
                format!("{what} appears to hold a secret ({labels}), and everyone on the repository would get it on their next pull. Nothing in this request was written: {fix} and push again."),
            ))
        }
    }
}

async fn me(State(app): State<Arc<AppState>>, headers: HeaderMap) -> Result<Json<MeResponse>, ApiError> {
    let caller = authenticate(&app, &headers).await?;
    // The repository routes join on live users; this one reads the user itself.
    let user = app.store().user_by_id(caller.user_id).await?.filter(|u| u.disabled_ms.is_none()).ok_or_else(ApiError::unauthorized)?;
    let repos = app
        .store()
        .repos_for_user(caller.user_id)
        .await?
        .into_iter()
        .map(|(repo, role)| RepoAccess {
            max_entries: app.memory.max_entries(&repo),
            stored_bytes: Some(u64::try_from(repo.history_bytes).unwrap_or(0)),
            max_bytes: Some(app.memory.max_bytes(&repo)),
            version: u64::try_from(repo.version).unwrap_or(0),
            repo: repo.slug,
            team: repo.team,
            role: match role {
                Role::Member => RepoRole::Member,
                Role::Lead => RepoRole::Lead,
            },
        })
        .collect();
    Ok(Json(MeResponse { user: user.name, repos }))
}

async fn history(
    State(app): State<Arc<AppState>>,
    q: Result<Query<RepoQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Json<HistoryResponse>, ApiError> {
    let q = query(q)?;
    let (_, repo, _) = authorize(&app, &headers, q.repo()?).await?;
    let key = q.key()?;
    let limit = q.limit.unwrap_or(HISTORY_PAGE);
    if limit == 0 || limit > MAX_HISTORY_PAGE {
        return Err(ApiError::bad_request(format!("limit must be from 1 to {MAX_HISTORY_PAGE}; page with before=VERSION for more.")));
    }
    let before = q.before.map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX));
    // One more than asked for, to know whether older versions remain.
    let mut rows = app.store().history(repo.id, key, before, (limit + 1) as i64).await?;
    let more = rows.len() as u64 > limit;
    rows.truncate(limit as usize);
    let more_before = more.then(|| rows.last().map(|h| u64::try_from(h.version).unwrap_or(0))).flatten();
    let versions = rows
        .into_iter()
        .map(|h| EntryVersion {
            version: u64::try_from(h.version).unwrap_or(0),
            checksum: h.checksum,
            author: h.author,
            time: iso_ms(h.at_ms),
            deleted: h.deleted,
            content: h.content,
        })
        .collect();
    Ok(Json(HistoryResponse { repo: repo.slug, key: key.to_string(), versions, more_before }))
}

async fn latest(
    State(app): State<Arc<AppState>>,
    q: Result<Query<RepoQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Json<LatestResponse>, ApiError> {
    let q = query(q)?;
    let (_, repo, _) = authorize(&app, &headers, q.repo()?).await?;
    let entries = app
        .store()
        .latest(repo.id)
        .await?
        .into_iter()
        .map(|l| LatestEntry {
            key: l.key,
            version: u64::try_from(l.version).unwrap_or(0),
            checksum: l.checksum,
            author: l.author,
            time: iso_ms(l.at_ms),
            deleted: l.deleted,
            versions: u64::try_from(l.versions).unwrap_or(0),
        })
        .collect();
    Ok(Json(LatestResponse { repo: repo.slug, entries }))
}

async fn rollback(
    State(app): State<Arc<AppState>>,
    q: Result<Query<RepoQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Result<Json<RollbackRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let (caller, repo, role) = authorize(&app, &headers, q.repo()?).await?;
    require_lead(role, &repo)?;
    let req = json_body(body)?;
    refuse_nul(&req.key, "The key")?;
    let version = i64::try_from(req.version).unwrap_or(i64::MAX);
    let Some(target) = app.store().history_version(repo.id, &req.key, version).await? else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "version_not_found",
            format!("{:?} has no version {} in {:?}; pick one from its history.", req.key, req.version, repo.slug),
        ));
    };
    let op = if target.deleted { Op::Delete { key: req.key } } else { Op::Upsert { key: req.key, content: target.content } };
    // A rollback publishes old text again, which pushes today would refuse.
    refuse_secrets(std::slice::from_ref(&op)).await?;
    let w = app.memory.write(&repo, Some(caller.user_id), Permission::Lead, None, &[op]).await?;
    Ok(written(w))
}

async fn remove_entry(
    State(app): State<Arc<AppState>>,
    q: Result<Query<RepoQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let (caller, repo, role) = authorize(&app, &headers, q.repo()?).await?;
    require_lead(role, &repo)?;
    let key = q.key()?.to_string();
    if app.store().entry(repo.id, &key).await?.is_none_or(|e| e.deleted) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "entry_not_found",
            format!("{:?} has no entry {key:?} to remove.", repo.slug),
        ));
    }
    let w = app.memory.write(&repo, Some(caller.user_id), Permission::Lead, None, &[Op::Delete { key }]).await?;
    Ok(written(w))
}

async fn purge(
    State(app): State<Arc<AppState>>,
    q: Result<Query<RepoQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Result<Json<PurgeRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let (caller, repo, role) = authorize(&app, &headers, q.repo()?).await?;
    require_lead(role, &repo)?;
    let req = json_body(body)?;
    refuse_nul(&req.key, "The key")?;
    let w = app.memory.write(&repo, Some(caller.user_id), Permission::Lead, None, &[Op::Purge { key: req.key.clone() }]).await?;
    tracing::warn!(repo = %repo.slug, user_id = caller.user_id, "an entry was purged from history");
    Ok(written(w))
}

async fn sign_ins(
    State(app): State<Arc<AppState>>,
    q: Result<Query<RepoQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Json<SignInsResponse>, ApiError> {
    let q = query(q)?;
    let (_, repo, role) = authorize(&app, &headers, q.repo()?).await?;
    require_lead(role, &repo)?;
    let sign_ins = app.store().sign_ins(None, Some(repo.id)).await?.into_iter().map(sign_in_wire).collect();
    Ok(Json(SignInsResponse { repo: repo.slug, sign_ins }))
}

pub(crate) fn sign_in_wire(s: crate::store::SignInRow) -> SignIn {
    SignIn {
        user: s.user,
        client_id: s.client_id,
        created: iso_ms(s.created_ms),
        last_used: iso_ms(s.last_used_ms),
        expires: iso_ms(s.expires_ms),
        revoked: s.revoked_ms.map(iso_ms),
    }
}

/// Claude Code's PUT body, read strictly: exactly `entries` and the optional
/// `soft_delete_keys` (a misspelled field is an error, not silently dropped), and no key twice
/// in `entries` (JSON allows it; which copy would win is the parser's accident).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrictPut {
    entries: UniqueEntries,
    #[serde(default)]
    soft_delete_keys: Vec<String>,
}

struct UniqueEntries(Vec<(String, String)>);

impl<'de> Deserialize<'de> for UniqueEntries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = UniqueEntries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of key: content strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<UniqueEntries, A::Error> {
                let mut seen = std::collections::HashSet::new();
                let mut out = Vec::new();
                while let Some((key, content)) = map.next_entry::<String, String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(serde::de::Error::custom(format!("the key {key:?} appears twice in entries")));
                    }
                    out.push((key, content));
                }
                Ok(UniqueEntries(out))
            }
        }
        d.deserialize_map(Visitor)
    }
}

async fn healthz(State(app): State<Arc<AppState>>) -> Result<&'static str, ApiError> {
    // Touch the database so a replica whose database is gone leaves the load balancer.
    app.store().ping().await?;
    Ok("ok")
}
