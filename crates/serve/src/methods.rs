//! `POST /api/{method}`: one api method per name, camelCase JSON in and out.
//!
//! | method | body | answer |
//! | --- | --- | --- |
//! | `context` | `{cwd, settingSources?, addDirs?, date?}` | `ContextView` |
//! | `touched` | `{cwd, files}` | `TouchedView` |
//! | `projects` | `{}` | `[ProjectInfo]` |
//! | `memories` | `{cwd, kind?, search?}` | `[MemorySummary]` |
//! | `memory` | `{cwd, memory}` | `MemoryDetail` |
//! | `manifest` | `{cwd}` | `{text}` |
//! | `createMemory` | `{cwd, name, description, kind, body, fileName?}` | `MemorySummary` |
//! | `saveMemory` | `{cwd, relPath, content, revision}` | `SavedFile` |
//! | `editMemory` | `{cwd, memory, name?, description?, kind?, body?, rename?}` | `MemorySummary` |
//! | `deleteMemory` | `{cwd, memory}` | `Trashed` |
//! | `trash` | `{cwd}` | `TrashListing` |
//! | `restoreMemory` | `{cwd, id}` | `{path}` |
//! | `health` | `{cwd}` | `Health` |
//! | `fixIndex` | `{cwd}` | `{changes}` |
//! | `graph` | `{cwd}` | `Graph` |
//! | `readFile` | `{cwd, path}` | `FileText` |
//! | `saveFile` | `{cwd, path, content, revision}` | `SavedFile` |
//! | `machineSettings` | `{}` | `MachineSettings` |
//! | `setAutoMemory` / `setAutoDream` | `{on}` | `{path}` |
//! | `home` | `{}` | `{home, configHome, cwd}` |
//! | `watch` | `{cwd}` | `{watching}` |
//! | `watching` | `{}` | `{folders: [{path, recursive, active}]}` |
//! | `mergeMemory` | `{from, cwd, dryRun?}` | `MergeReport` |
//! | `setAutoMemoryDirectory` | `{value}` (`null` clears) | `AutoMemDirChange` |
//! | `providerSettings` | `{}` | `ProviderView` |
//! | `setProviderSettings` | `{kind, model?, baseUrl?, timeoutSecs?, claudeBinary?}` | `ProviderView` |
//! | `setProviderKey` | `{key}` (`null` clears) | `ProviderView` |
//! | `testProvider` | like `setProviderSettings` | `ProviderTest` |
//! | `recall` | `{cwd, prompt, provider?}` | `RecallView` |
//! | `teamStatus` | `{cwd}` | `TeamStatus` (disk and keyring only) |
//! | `teamRemote` | `{cwd}` | `TeamRemote` (asks the team server) |
//! | `setTeamServer` | `{url}` (`null` clears) | `TeamServerSetting` |
//! | `teamPull` / `teamPush` / `teamSync` | `{cwd}` | `TeamPullResult` / `TeamPushResult` / `TeamSyncResult` |
//! | `teamHistory` | `{cwd, key}` | `TeamHistory` |
//! | `teamRollback` | `{cwd, key, version}` | `TeamLeadChange` |
//! | `teamRemove` | `{cwd, key}` | `TeamLeadChange` |
//! | `teamRestoreConflict` | `{cwd, trashId}` | `TeamRestored` |
//! | `teamSignIn` | `{server?}` | `TeamSignIn` |
//! | `teamSignInPoll` | `{id}` | `TeamSignInPoll` |
//! | `teamSignOut` | `{server?}` | `TeamSignedOut` |
//! | `inbox` | `{cwd}` | `InboxView` |
//! | `setReviewMode` | `{cwd, mode}` (`automatic`, `review`, `off`) | `InboxView` |
//! | `inboxKeep` / `inboxDiscard` | `{id}` | `InboxItemView` |
//! | `inboxEdit` | `{id, file, content, keep?}` | `InboxItemView` |
//! | `inboxPromote` | `{id, to}` (`claude-md`, `claude-local`, `team`) | `InboxItemView` |
//! | `runExtraction` | `{cwd, provider?}` (absent: offline) | `ExtractionReport` |
//! | `dreamStatus` | `{cwd}` | `DreamGates` |
//! | `setDreamMode` | `{cwd, mode}` (`automatic`, `review`, `off`) | `DreamGates` |
//! | `runDream` | `{cwd, provider?}` (absent: offline) | `DreamView` |
//! | `dreamHistory` | `{cwd}` | `DreamHistory` |
//! | `dream` / `approveDream` / `rejectDream` | `{cwd, id}` | `DreamView` |
//! | `undoDream` | `{cwd, id?, force?}` (no id: the newest applied) | `DreamView` |
//! | `dailyLog` | `{cwd, date?}` (`YYYY-MM-DD`; absent: today) | `DailyLog` |
//! | `appendDailyLog` | `{cwd, text}` | `DailyLog` |
//! | `backgroundRuns` | `{limit?, job?}` (`extraction`, `dream`, `team-sync`) | `{runs: [BackgroundRun]}` |
//!
//! Every method taking `cwd` also accepts `settingSources` and `addDirs`, because they change
//! which memory folder Claude Code uses. Errors: 400 `invalid_input`, 404 `not_found`, 409
//! `conflict` / `already_exists`, 422 `malformed`, 500 `io`, 503 `unavailable` (the OS keyring,
//! an unreachable team server), 422 `secrets_refused`, 428 `sign_in_required` and 409 `forbidden`
//! (the team server's refusals; 401 and 403 mean this page's own token was refused), each as
//! `{code, message}`. A provider that fails during `testProvider` or `recall` is not an
//! error: the answer says what failed.
//! Answers that would be a bare string or list are wrapped in an object so fields can be
//! added later without breaking the UI.

use crate::AppState;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use mneme_api::{DreamModeName, JobName};
use mneme_api::{
    ApiError, ContextRequest, ErrorCode, MemoryEdit, MemoryListFilter, Mneme, NewMemoryRequest, ProviderChoice,
    ProviderSettingsInput, PromoteTo, RecallQuery, ReviewModeName,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The engine methods, run on a blocking thread because they read and write files.
const ENGINE_METHODS: &[&str] = &[
    "context",
    "touched",
    "projects",
    "memories",
    "memory",
    "manifest",
    "createMemory",
    "saveMemory",
    "editMemory",
    "deleteMemory",
    "trash",
    "restoreMemory",
    "health",
    "fixIndex",
    "graph",
    "readFile",
    "saveFile",
    "machineSettings",
    "setAutoMemory",
    "setAutoDream",
    "mergeMemory",
    "setAutoMemoryDirectory",
    "providerSettings",
    "setProviderSettings",
    "setProviderKey",
    "testProvider",
    "recall",
    "teamStatus",
    "teamRemote",
    "setTeamServer",
    "teamPull",
    "teamPush",
    "teamSync",
    "teamHistory",
    "teamRollback",
    "teamRemove",
    "teamRestoreConflict",
    "teamSignIn",
    "teamSignInPoll",
    "teamSignOut",
    "inbox",
    "setReviewMode",
    "inboxKeep",
    "inboxEdit",
    "inboxDiscard",
    "inboxPromote",
    "runExtraction",
    "dreamStatus",
    "setDreamMode",
    "runDream",
    "dreamHistory",
    "dream",
    "approveDream",
    "rejectDream",
    "undoDream",
    "dailyLog",
    "appendDailyLog",
    "backgroundRuns",
];

pub(crate) async fn call(State(state): State<Arc<AppState>>, UrlPath(method): UrlPath<String>, body: Bytes) -> Response {
    let result = match method.as_str() {
        "home" => Ok(json!({
            "home": state.mneme.environment().home,
            "configHome": state.mneme.environment().config_home(),
            "cwd": state.start_dir,
            "scheduler": state.scheduler.is_some(),
        })),
        "watch" => watch(state.clone(), &body).await,
        "watching" => Ok(json!({ "folders": state.events.watched() })),
        m if ENGINE_METHODS.contains(&m) => {
            let state = state.clone();
            match tokio::task::spawn_blocking(move || dispatch(&state.mneme, &state.start_dir, &method, &body)).await {
                Ok(r) => r,
                Err(e) => Err(ApiError::new(ErrorCode::Io, format!("The request failed inside Mneme: {e}."))),
            }
        }
        _ => {
            return error_response(
                StatusCode::NOT_FOUND,
                "not_found",
                &format!("There is no API method '{method}'."),
            )
        }
    };
    match result {
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
        ErrorCode::Io => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::SecretsRefused => StatusCode::UNPROCESSABLE_ENTITY,
        // Not 401/403: the page reads those as its own token being refused.
        ErrorCode::SignInRequired => StatusCode::PRECONDITION_REQUIRED,
        ErrorCode::Forbidden => StatusCode::CONFLICT,
    };
    (status, Json(e)).into_response()
}

/// Which folder to look from; shared by every method that takes `cwd`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Where {
    cwd: PathBuf,
    #[serde(default)]
    setting_sources: Option<String>,
    #[serde(default)]
    add_dirs: Vec<PathBuf>,
}

impl Where {
    /// A relative `cwd` is taken from the folder serve was started in, like the CLI does.
    fn request(&self, start: &Path, date: Option<String>) -> ContextRequest {
        ContextRequest {
            cwd: start.join(&self.cwd),
            setting_sources: self.setting_sources.clone(),
            add_dirs: self.add_dirs.clone(),
            settings_file: None,
            date,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContextBody {
    #[serde(flatten)]
    at: Where,
    #[serde(default)]
    date: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TouchedBody {
    #[serde(flatten)]
    at: Where,
    files: Vec<PathBuf>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MemoriesBody {
    #[serde(flatten)]
    at: Where,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    search: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MemoryBody {
    #[serde(flatten)]
    at: Where,
    memory: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    #[serde(flatten)]
    at: Where,
    name: String,
    description: String,
    kind: String,
    body: String,
    #[serde(default)]
    file_name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SaveMemoryBody {
    #[serde(flatten)]
    at: Where,
    rel_path: String,
    content: String,
    revision: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EditBody {
    #[serde(flatten)]
    at: Where,
    memory: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    rename: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RestoreBody {
    #[serde(flatten)]
    at: Where,
    id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadFileBody {
    #[serde(flatten)]
    at: Where,
    path: PathBuf,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SaveFileBody {
    #[serde(flatten)]
    at: Where,
    path: PathBuf,
    content: String,
    revision: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MergeBody {
    #[serde(flatten)]
    at: Where,
    /// The orphan's project folder, `<config>/projects/<name>`.
    from: PathBuf,
    #[serde(default)]
    dry_run: bool,
}

#[derive(Deserialize)]
struct MemoryDirBody {
    /// `null` (or absent) removes the setting.
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize)]
struct Toggle {
    on: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderBody {
    kind: ProviderChoice,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
    #[serde(default)]
    claude_binary: Option<String>,
}

impl ProviderBody {
    fn input(self) -> ProviderSettingsInput {
        ProviderSettingsInput {
            kind: self.kind,
            model: self.model,
            base_url: self.base_url,
            timeout_secs: self.timeout_secs,
            claude_binary: self.claude_binary,
        }
    }
}

#[derive(Deserialize)]
struct KeyBody {
    /// `null` (or absent) removes the stored key.
    #[serde(default)]
    key: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecallBody {
    #[serde(flatten)]
    at: Where,
    prompt: String,
    /// Absent: the provider in the settings.
    #[serde(default)]
    provider: Option<ProviderChoice>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TeamKeyBody {
    #[serde(flatten)]
    at: Where,
    /// The path relative to `team/`.
    key: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TeamRollbackBody {
    #[serde(flatten)]
    at: Where,
    key: String,
    version: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TeamConflictBody {
    #[serde(flatten)]
    at: Where,
    trash_id: String,
}

#[derive(Deserialize)]
struct TeamServerBody {
    /// `null` (or absent) forgets the saved address.
    #[serde(default)]
    url: Option<String>,
}

#[derive(Deserialize)]
struct TeamSignInBody {
    /// Absent: the configured server.
    #[serde(default)]
    server: Option<String>,
}

#[derive(Deserialize)]
struct TeamPollBody {
    id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModeBody {
    #[serde(flatten)]
    at: Where,
    mode: ReviewModeName,
}

#[derive(Deserialize)]
struct ItemBody {
    id: String,
}

#[derive(Deserialize)]
struct ItemEditBody {
    id: String,
    /// The file, by its path in the memory folder or its name.
    file: String,
    content: String,
    /// Write the item right after the edit.
    #[serde(default)]
    keep: bool,
}

#[derive(Deserialize)]
struct PromoteBody {
    id: String,
    to: PromoteTo,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExtractBody {
    #[serde(flatten)]
    at: Where,
    /// Absent: offline.
    #[serde(default)]
    provider: Option<ProviderChoice>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DreamModeBody {
    #[serde(flatten)]
    at: Where,
    mode: DreamModeName,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DreamRef {
    #[serde(flatten)]
    at: Where,
    id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UndoBody {
    #[serde(flatten)]
    at: Where,
    /// Absent: the newest applied dream that changed something.
    #[serde(default)]
    id: Option<String>,
    /// Undo even though files changed since the dream.
    #[serde(default)]
    force: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogBody {
    #[serde(flatten)]
    at: Where,
    #[serde(default)]
    date: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogAppendBody {
    #[serde(flatten)]
    at: Where,
    text: String,
}

#[derive(Deserialize)]
struct RunsBody {
    #[serde(default = "default_runs")]
    limit: usize,
    #[serde(default)]
    job: Option<JobName>,
}

fn default_runs() -> usize {
    20
}

/// Parses the body; an empty body counts as `{}` so argument-less methods need none.
fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) { b"{}".as_slice() } else { body };
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("The request body is not what this method takes: {e}.")))
}

fn to_json<T: serde::Serialize>(v: T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::new(ErrorCode::Io, format!("Could not encode the answer: {e}.")))
}

pub(crate) fn dispatch(m: &Mneme, start: &Path, method: &str, body: &[u8]) -> Result<Value, ApiError> {
    match method {
        "context" => {
            let b: ContextBody = parse(body)?;
            to_json(m.context(&b.at.request(start, b.date))?)
        }
        "touched" => {
            let b: TouchedBody = parse(body)?;
            to_json(m.touched(&b.at.request(start, None), &b.files)?)
        }
        "projects" => to_json(m.projects()),
        "memories" => {
            let b: MemoriesBody = parse(body)?;
            to_json(m.memories(&b.at.request(start, None), &MemoryListFilter { kind: b.kind, search: b.search })?)
        }
        "memory" => {
            let b: MemoryBody = parse(body)?;
            to_json(m.memory(&b.at.request(start, None), &b.memory)?)
        }
        "manifest" => {
            let b: Where = parse(body)?;
            Ok(json!({ "text": m.manifest(&b.request(start, None))? }))
        }
        "createMemory" => {
            let b: CreateBody = parse(body)?;
            let new = NewMemoryRequest {
                name: b.name,
                description: b.description,
                kind: b.kind,
                body: b.body,
                file_name: b.file_name,
            };
            to_json(m.create_memory(&b.at.request(start, None), &new)?)
        }
        "saveMemory" => {
            let b: SaveMemoryBody = parse(body)?;
            to_json(m.save_memory(&b.at.request(start, None), &b.rel_path, &b.content, &b.revision)?)
        }
        "editMemory" => {
            let b: EditBody = parse(body)?;
            let edit = MemoryEdit {
                memory: b.memory,
                name: b.name,
                description: b.description,
                kind: b.kind,
                body: b.body,
                rename: b.rename,
            };
            to_json(m.edit_memory(&b.at.request(start, None), &edit)?)
        }
        "deleteMemory" => {
            let b: MemoryBody = parse(body)?;
            to_json(m.delete_memory(&b.at.request(start, None), &b.memory)?)
        }
        "trash" => {
            let b: Where = parse(body)?;
            to_json(m.trash(&b.request(start, None))?)
        }
        "restoreMemory" => {
            let b: RestoreBody = parse(body)?;
            Ok(json!({ "path": m.restore_memory(&b.at.request(start, None), &b.id)? }))
        }
        "health" => {
            let b: Where = parse(body)?;
            to_json(m.health(&b.request(start, None))?)
        }
        "fixIndex" => {
            let b: Where = parse(body)?;
            Ok(json!({ "changes": m.fix_index(&b.request(start, None))? }))
        }
        "graph" => {
            let b: Where = parse(body)?;
            to_json(m.graph(&b.request(start, None))?)
        }
        "readFile" => {
            let b: ReadFileBody = parse(body)?;
            to_json(m.read_file(&b.at.request(start, None), &b.path)?)
        }
        "saveFile" => {
            let b: SaveFileBody = parse(body)?;
            to_json(m.save_file(&b.at.request(start, None), &b.path, &b.content, &b.revision)?)
        }
        "machineSettings" => to_json(m.machine_settings()?),
        "setAutoMemory" => {
            let b: Toggle = parse(body)?;
            Ok(json!({ "path": m.set_auto_memory(b.on)? }))
        }
        "setAutoDream" => {
            let b: Toggle = parse(body)?;
            Ok(json!({ "path": m.set_auto_dream(b.on)? }))
        }
        "mergeMemory" => {
            let b: MergeBody = parse(body)?;
            let req = b.at.request(start, None);
            let from = start.join(&b.from);
            to_json(if b.dry_run { m.plan_merge_memory(&from, &req)? } else { m.merge_memory(&from, &req)? })
        }
        "setAutoMemoryDirectory" => {
            let b: MemoryDirBody = parse(body)?;
            to_json(m.set_auto_memory_directory(b.value.as_deref())?)
        }
        "providerSettings" => to_json(m.provider_settings()?),
        "setProviderSettings" => {
            let b: ProviderBody = parse(body)?;
            to_json(m.set_provider_settings(&b.input())?)
        }
        "setProviderKey" => {
            let b: KeyBody = parse(body)?;
            to_json(m.set_provider_key(b.key.as_deref())?)
        }
        "testProvider" => {
            let b: ProviderBody = parse(body)?;
            to_json(m.test_provider(&b.input())?)
        }
        "recall" => {
            let b: RecallBody = parse(body)?;
            to_json(m.recall(&b.at.request(start, None), &RecallQuery { prompt: b.prompt, provider: b.provider })?)
        }
        "inbox" => {
            let b: Where = parse(body)?;
            to_json(m.inbox(&b.request(start, None))?)
        }
        "setReviewMode" => {
            let b: ModeBody = parse(body)?;
            to_json(m.set_review_mode(&b.at.request(start, None), b.mode)?)
        }
        "inboxKeep" => {
            let b: ItemBody = parse(body)?;
            to_json(m.inbox_keep(&b.id)?)
        }
        "inboxEdit" => {
            let b: ItemEditBody = parse(body)?;
            to_json(m.inbox_edit(&b.id, &b.file, &b.content, b.keep)?)
        }
        "inboxDiscard" => {
            let b: ItemBody = parse(body)?;
            to_json(m.inbox_discard(&b.id)?)
        }
        "inboxPromote" => {
            let b: PromoteBody = parse(body)?;
            to_json(m.inbox_promote(&b.id, b.to)?)
        }
        "runExtraction" => {
            let b: ExtractBody = parse(body)?;
            to_json(m.run_extraction(&b.at.request(start, None), b.provider)?)
        }
        "dreamStatus" => {
            let b: Where = parse(body)?;
            to_json(m.dream_status(&b.request(start, None))?)
        }
        "setDreamMode" => {
            let b: DreamModeBody = parse(body)?;
            to_json(m.set_dream_mode(&b.at.request(start, None), b.mode)?)
        }
        "runDream" => {
            let b: ExtractBody = parse(body)?;
            to_json(m.run_dream(&b.at.request(start, None), b.provider)?)
        }
        "dreamHistory" => {
            let b: Where = parse(body)?;
            to_json(m.dream_history(&b.request(start, None))?)
        }
        "dream" => {
            let b: DreamRef = parse(body)?;
            to_json(m.dream(&b.at.request(start, None), &b.id)?)
        }
        "approveDream" => {
            let b: DreamRef = parse(body)?;
            to_json(m.approve_dream(&b.at.request(start, None), &b.id)?)
        }
        "rejectDream" => {
            let b: DreamRef = parse(body)?;
            to_json(m.reject_dream(&b.at.request(start, None), &b.id)?)
        }
        "undoDream" => {
            let b: UndoBody = parse(body)?;
            to_json(m.undo_dream(&b.at.request(start, None), b.id.as_deref(), b.force)?)
        }
        "dailyLog" => {
            let b: LogBody = parse(body)?;
            to_json(m.daily_log(&b.at.request(start, None), b.date.as_deref())?)
        }
        "appendDailyLog" => {
            let b: LogAppendBody = parse(body)?;
            to_json(m.append_daily_log(&b.at.request(start, None), &b.text)?)
        }
        "backgroundRuns" => {
            let b: RunsBody = parse(body)?;
            Ok(json!({ "runs": m.background_runs(b.limit, b.job)? }))
        }
        "teamStatus" => {
            let b: Where = parse(body)?;
            to_json(m.team_status(&b.request(start, None))?)
        }
        "teamRemote" => {
            let b: Where = parse(body)?;
            to_json(m.team_remote(&b.request(start, None))?)
        }
        "setTeamServer" => {
            let b: TeamServerBody = parse(body)?;
            to_json(m.set_team_server(b.url.as_deref())?)
        }
        "teamPull" => {
            let b: Where = parse(body)?;
            to_json(m.team_pull(&b.request(start, None))?)
        }
        "teamPush" => {
            let b: Where = parse(body)?;
            to_json(m.team_push(&b.request(start, None))?)
        }
        "teamSync" => {
            let b: Where = parse(body)?;
            to_json(m.team_sync(&b.request(start, None))?)
        }
        "teamHistory" => {
            let b: TeamKeyBody = parse(body)?;
            to_json(m.team_history(&b.at.request(start, None), &b.key)?)
        }
        "teamRollback" => {
            let b: TeamRollbackBody = parse(body)?;
            to_json(m.team_rollback(&b.at.request(start, None), &b.key, b.version)?)
        }
        "teamRemove" => {
            let b: TeamKeyBody = parse(body)?;
            to_json(m.team_remove(&b.at.request(start, None), &b.key)?)
        }
        "teamRestoreConflict" => {
            let b: TeamConflictBody = parse(body)?;
            to_json(m.team_restore_conflict(&b.at.request(start, None), &b.trash_id)?)
        }
        "teamSignIn" => {
            let b: TeamSignInBody = parse(body)?;
            to_json(m.team_sign_in(b.server.as_deref())?)
        }
        "teamSignInPoll" => {
            let b: TeamPollBody = parse(body)?;
            to_json(m.team_sign_in_poll(&b.id)?)
        }
        "teamSignOut" => {
            let b: TeamSignInBody = parse(body)?;
            to_json(m.team_sign_out(b.server.as_deref())?)
        }
        other => Err(ApiError::not_found(format!("There is no API method '{other}'."))),
    }
}

/// `watch {cwd}`: adds the folder's memory folder (recursively) and the folder itself (its
/// CLAUDE.md files, not the whole tree) to the live-update watcher.
async fn watch(state: Arc<AppState>, body: &[u8]) -> Result<Value, ApiError> {
    let b: Where = parse(body)?;
    let st = state.clone();
    let view = tokio::task::spawn_blocking(move || st.mneme.context(&b.request(&st.start_dir, None)))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Io, format!("The request failed inside Mneme: {e}.")))??;
    let watching = state.events.watch_project(&view.cwd, &view.auto_memory.dir);
    Ok(json!({ "watching": watching }))
}
