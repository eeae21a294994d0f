//! One Tauri command per api method. Each takes one request object named `req`, shaped like
//! `mneme serve`'s JSON body for the same method (so `invoke(name, { req: body })` is the whole
//! transport), calls one [`Mneme`] method on a blocking thread (they read and write files)
//! and answers with the api's DTO or its `{code, message}` [`ApiError`].

use crate::Session;
use mneme_api::{
    ApiError, AutoMemDirChange, ContextRequest, ContextView, ErrorCode, FileText, Graph, Health, MachineSettings,
    MemoryDetail, MemoryEdit, MemoryListFilter, MemorySummary, MergeReport, Mneme, NewMemoryRequest, ProjectInfo,
    ProviderChoice, ProviderSettingsInput, ProviderTest, ProviderView, RecallQuery, RecallView, SavedFile, TouchedView,
    Trashed, TrashListing,
};
use mneme_api::{ExtractionReport, InboxItemView, InboxView, PromoteTo, ReviewModeName};
use serde::{Deserialize, Serialize};
use specta::Type;
use std::path::PathBuf;
use tauri::State;

pub type Answer<T> = Result<T, ApiError>;

/// Runs one api call off the async runtime's workers.
pub(crate) async fn engine<T: Send + 'static>(
    m: &Mneme,
    call: impl FnOnce(&Mneme) -> Answer<T> + Send + 'static,
) -> Answer<T> {
    let m = m.clone();
    tauri::async_runtime::spawn_blocking(move || call(&m))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Io, format!("The request failed inside Mneme: {e}.")))?
}

/// The folder Claude Code would start in, and the flags that change which memory it uses.
#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Folder {
    /// Absolute, or relative to the folder the app opened on.
    pub cwd: PathBuf,
    /// `--setting-sources` (comma list of user, project, local); absent = all.
    #[serde(default)]
    #[specta(optional)]
    pub setting_sources: Option<String>,
    /// `--add-dir` folders.
    #[serde(default)]
    #[specta(optional)]
    pub add_dirs: Option<Vec<PathBuf>>,
}

impl Session {
    fn request(&self, at: &Folder, date: Option<String>) -> ContextRequest {
        ContextRequest {
            cwd: self.start_dir.join(&at.cwd),
            setting_sources: at.setting_sources.clone(),
            add_dirs: at.add_dirs.clone().unwrap_or_default(),
            settings_file: None,
            date,
        }
    }
}

/// Where the app looks by default.
#[derive(Debug, Clone, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct HomeInfo {
    pub home: PathBuf,
    pub config_home: PathBuf,
    /// The folder the app opened on.
    pub cwd: PathBuf,
    /// Whether the background scheduler runs in this process (always, in the desktop app).
    pub scheduler: bool,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ContextQuery {
    #[serde(flatten)]
    pub at: Folder,
    /// `YYYY-MM-DD` to print; absent = today.
    #[serde(default)]
    #[specta(optional)]
    pub date: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct TouchedQuery {
    #[serde(flatten)]
    pub at: Folder,
    /// Files the model read in one turn, in order.
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct MemoriesQuery {
    #[serde(flatten)]
    pub at: Folder,
    /// `user`, `feedback`, `project` or `reference`.
    #[serde(default)]
    #[specta(optional)]
    pub kind: Option<String>,
    #[serde(default)]
    #[specta(optional)]
    pub search: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct MemoryRef {
    #[serde(flatten)]
    pub at: Folder,
    /// File name (with or without `.md`), relative path or `name:`.
    pub memory: String,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct CreateMemory {
    #[serde(flatten)]
    pub at: Folder,
    pub name: String,
    pub description: String,
    pub kind: String,
    pub body: String,
    #[serde(default)]
    #[specta(optional)]
    pub file_name: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SaveMemory {
    #[serde(flatten)]
    pub at: Folder,
    pub rel_path: String,
    pub content: String,
    /// From `memory` or the previous save; a stale one is refused with `conflict`.
    pub revision: String,
}

/// Absent parts stay as they are.
#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct EditMemory {
    #[serde(flatten)]
    pub at: Folder,
    pub memory: String,
    #[serde(default)]
    #[specta(optional)]
    pub name: Option<String>,
    #[serde(default)]
    #[specta(optional)]
    pub description: Option<String>,
    #[serde(default)]
    #[specta(optional)]
    pub kind: Option<String>,
    #[serde(default)]
    #[specta(optional)]
    pub body: Option<String>,
    /// A new file name; the index line follows.
    #[serde(default)]
    #[specta(optional)]
    pub rename: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct TrashRef {
    #[serde(flatten)]
    pub at: Folder,
    pub id: String,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct FileRef {
    #[serde(flatten)]
    pub at: Folder,
    /// A file the context of `cwd` lists, or its memory folder's MEMORY.md.
    pub path: PathBuf,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SaveFile {
    #[serde(flatten)]
    pub at: Folder,
    pub path: PathBuf,
    pub content: String,
    /// From `read_file` or the previous save (`absent` creates the file).
    pub revision: String,
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct Toggle {
    pub on: bool,
}

/// An orphan's memory, and the project (`cwd`) to merge it into.
#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct MergeQuery {
    #[serde(flatten)]
    pub at: Folder,
    /// The orphan's project folder, `<config>/projects/<name>` (relative: to the folder the
    /// app opened on).
    pub from: PathBuf,
    /// Only plan: answer what would happen and write nothing.
    #[serde(default)]
    #[specta(optional)]
    pub dry_run: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct MemoryDirValue {
    /// The new `autoMemoryDirectory`; `null` or absent removes the setting.
    #[serde(default)]
    #[specta(optional)]
    pub value: Option<String>,
}

/// Provider settings to save or test. Empty strings mean "the kind's default".
#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInput {
    pub kind: ProviderChoice,
    #[serde(default)]
    #[specta(optional)]
    pub model: Option<String>,
    #[serde(default)]
    #[specta(optional)]
    pub base_url: Option<String>,
    /// Seconds to wait for one answer (1 to 3600); absent = Claude Code's 600.
    #[serde(default)]
    #[specta(optional)]
    pub timeout_secs: Option<u64>,
    /// The `claude` binary; absent = the one on the PATH.
    #[serde(default)]
    #[specta(optional)]
    pub claude_binary: Option<String>,
}

impl ProviderInput {
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

#[derive(Debug, Clone, Deserialize, Type)]
pub struct ProviderKey {
    /// The API key to store; `null` or absent removes the stored one.
    #[serde(default)]
    #[specta(optional)]
    pub key: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct RecallAsk {
    #[serde(flatten)]
    pub at: Folder,
    /// The prompt, as typed into Claude Code.
    pub prompt: String,
    /// Who chooses; absent = the provider in the settings.
    #[serde(default)]
    #[specta(optional)]
    pub provider: Option<ProviderChoice>,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ModeChange {
    #[serde(flatten)]
    pub at: Folder,
    /// `automatic` (as Claude Code: written at once), `review` (staged) or `off`.
    pub mode: ReviewModeName,
}

/// One inbox item, by id (ids are global: they name their project themselves).
#[derive(Debug, Clone, Deserialize, Type)]
pub struct InboxRef {
    pub id: String,
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct InboxEdit {
    pub id: String,
    /// The file, by its path in the memory folder or its name.
    pub file: String,
    /// The whole new content, frontmatter included.
    pub content: String,
    /// Write the item right after the edit.
    #[serde(default)]
    #[specta(optional)]
    pub keep: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct InboxPromote {
    pub id: String,
    pub to: PromoteTo,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ExtractNow {
    #[serde(flatten)]
    pub at: Folder,
    /// Who extracts; absent = offline (explicit statements only).
    #[serde(default)]
    #[specta(optional)]
    pub provider: Option<ProviderChoice>,
}

/// One folder the live watcher covers (`mneme serve`'s `watching` entry).
#[derive(Debug, Clone, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct WatchedFolder {
    pub path: PathBuf,
    /// Sub-folders too, or only the folder's own files.
    pub recursive: bool,
    /// False while the folder does not exist yet (it is watched once it appears).
    pub active: bool,
}

#[tauri::command]
#[specta::specta]
pub fn home(m: State<'_, Mneme>, s: State<'_, Session>, bg: State<'_, crate::scheduler::Running>) -> HomeInfo {
    let env = m.environment();
    HomeInfo { home: env.home.clone(), config_home: env.config_home(), cwd: s.start_dir.clone(), scheduler: bg.is_running() }
}

#[tauri::command]
#[specta::specta]
pub async fn context(m: State<'_, Mneme>, s: State<'_, Session>, req: ContextQuery) -> Answer<ContextView> {
    let r = s.request(&req.at, req.date);
    engine(&m, move |m| m.context(&r)).await
}

#[tauri::command]
#[specta::specta]
pub async fn touched(m: State<'_, Mneme>, s: State<'_, Session>, req: TouchedQuery) -> Answer<TouchedView> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.touched(&r, &req.files)).await
}

#[tauri::command]
#[specta::specta]
pub async fn projects(m: State<'_, Mneme>) -> Answer<Vec<ProjectInfo>> {
    engine(&m, |m| Ok(m.projects())).await
}

#[tauri::command]
#[specta::specta]
pub async fn memories(m: State<'_, Mneme>, s: State<'_, Session>, req: MemoriesQuery) -> Answer<Vec<MemorySummary>> {
    let r = s.request(&req.at, None);
    let filter = MemoryListFilter { kind: req.kind, search: req.search };
    engine(&m, move |m| m.memories(&r, &filter)).await
}

#[tauri::command]
#[specta::specta]
pub async fn memory(m: State<'_, Mneme>, s: State<'_, Session>, req: MemoryRef) -> Answer<MemoryDetail> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.memory(&r, &req.memory)).await
}

/// The manifest Claude Code's recall shows the model, byte for byte.
#[tauri::command]
#[specta::specta]
pub async fn manifest(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<String> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.manifest(&r)).await
}

#[tauri::command]
#[specta::specta]
pub async fn create_memory(m: State<'_, Mneme>, s: State<'_, Session>, req: CreateMemory) -> Answer<MemorySummary> {
    let r = s.request(&req.at, None);
    let new = NewMemoryRequest {
        name: req.name,
        description: req.description,
        kind: req.kind,
        body: req.body,
        file_name: req.file_name,
    };
    engine(&m, move |m| m.create_memory(&r, &new)).await
}

#[tauri::command]
#[specta::specta]
pub async fn save_memory(m: State<'_, Mneme>, s: State<'_, Session>, req: SaveMemory) -> Answer<SavedFile> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.save_memory(&r, &req.rel_path, &req.content, &req.revision)).await
}

#[tauri::command]
#[specta::specta]
pub async fn edit_memory(m: State<'_, Mneme>, s: State<'_, Session>, req: EditMemory) -> Answer<MemorySummary> {
    let r = s.request(&req.at, None);
    let edit = MemoryEdit {
        memory: req.memory,
        name: req.name,
        description: req.description,
        kind: req.kind,
        body: req.body,
        rename: req.rename,
    };
    engine(&m, move |m| m.edit_memory(&r, &edit)).await
}

/// Moves a memory to Mneme's trash and removes its index line.
#[tauri::command]
#[specta::specta]
pub async fn delete_memory(m: State<'_, Mneme>, s: State<'_, Session>, req: MemoryRef) -> Answer<Trashed> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.delete_memory(&r, &req.memory)).await
}

#[tauri::command]
#[specta::specta]
pub async fn trash(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<TrashListing> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.trash(&r)).await
}

/// Puts a trashed memory back with its index line; answers where it is again.
#[tauri::command]
#[specta::specta]
pub async fn restore_memory(m: State<'_, Mneme>, s: State<'_, Session>, req: TrashRef) -> Answer<PathBuf> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.restore_memory(&r, &req.id)).await
}

#[tauri::command]
#[specta::specta]
pub async fn health(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<Health> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.health(&r)).await
}

/// Applies every index fix; one sentence per change.
#[tauri::command]
#[specta::specta]
pub async fn fix_index(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<Vec<String>> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.fix_index(&r)).await
}

#[tauri::command]
#[specta::specta]
pub async fn graph(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<Graph> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.graph(&r)).await
}

#[tauri::command]
#[specta::specta]
pub async fn read_file(m: State<'_, Mneme>, s: State<'_, Session>, req: FileRef) -> Answer<FileText> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.read_file(&r, &req.path)).await
}

#[tauri::command]
#[specta::specta]
pub async fn save_file(m: State<'_, Mneme>, s: State<'_, Session>, req: SaveFile) -> Answer<SavedFile> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.save_file(&r, &req.path, &req.content, &req.revision)).await
}

#[tauri::command]
#[specta::specta]
pub async fn machine_settings(m: State<'_, Mneme>) -> Answer<MachineSettings> {
    engine(&m, |m| m.machine_settings()).await
}

/// Writes `autoMemoryEnabled` to the user settings file; answers the file's path.
#[tauri::command]
#[specta::specta]
pub async fn set_auto_memory(m: State<'_, Mneme>, req: Toggle) -> Answer<PathBuf> {
    engine(&m, move |m| m.set_auto_memory(req.on)).await
}

/// Writes `autoDreamEnabled` to the user settings file; answers the file's path.
#[tauri::command]
#[specta::specta]
pub async fn set_auto_dream(m: State<'_, Mneme>, req: Toggle) -> Answer<PathBuf> {
    engine(&m, move |m| m.set_auto_dream(req.on)).await
}

/// Moves an orphan's topic files into the memory of the project at `cwd` (never overwriting),
/// adds their index lines and puts the emptied folder in Mneme's trash; with `dryRun`, only
/// answers what it would do.
#[tauri::command]
#[specta::specta]
pub async fn merge_memory(m: State<'_, Mneme>, s: State<'_, Session>, req: MergeQuery) -> Answer<MergeReport> {
    let r = s.request(&req.at, None);
    let from = s.start_dir.join(&req.from);
    if req.dry_run.unwrap_or(false) {
        engine(&m, move |m| m.plan_merge_memory(&from, &r)).await
    } else {
        engine(&m, move |m| m.merge_memory(&from, &r)).await
    }
}

/// What `merge_memory` would do right now; writes nothing.
#[tauri::command]
#[specta::specta]
pub async fn plan_merge_memory(m: State<'_, Mneme>, s: State<'_, Session>, req: MergeQuery) -> Answer<MergeReport> {
    let r = s.request(&req.at, None);
    let from = s.start_dir.join(&req.from);
    engine(&m, move |m| m.plan_merge_memory(&from, &r)).await
}

/// Sets (or, with no value, removes) `autoMemoryDirectory` in the user settings file, checked
/// with Claude Code's rules; a value it would ignore is refused with the reason.
#[tauri::command]
#[specta::specta]
pub async fn set_auto_memory_directory(m: State<'_, Mneme>, req: MemoryDirValue) -> Answer<AutoMemDirChange> {
    engine(&m, move |m| m.set_auto_memory_directory(req.value.as_deref())).await
}

/// The saved model provider (offline when none was saved) and whether its key is set.
#[tauri::command]
#[specta::specta]
pub async fn provider_settings(m: State<'_, Mneme>) -> Answer<ProviderView> {
    engine(&m, |m| m.provider_settings()).await
}

/// Checks and saves the provider settings (never the key).
#[tauri::command]
#[specta::specta]
pub async fn set_provider_settings(m: State<'_, Mneme>, req: ProviderInput) -> Answer<ProviderView> {
    let input = req.input();
    engine(&m, move |m| m.set_provider_settings(&input)).await
}

/// Stores (or, with no key, removes) the saved provider's API key in the OS keyring.
#[tauri::command]
#[specta::specta]
pub async fn set_provider_key(m: State<'_, Mneme>, req: ProviderKey) -> Answer<ProviderView> {
    engine(&m, move |m| m.set_provider_key(req.key.as_deref())).await
}

/// Sends one tiny completion with these settings (saved or not) and says how it went.
#[tauri::command]
#[specta::specta]
pub async fn test_provider(m: State<'_, Mneme>, req: ProviderInput) -> Answer<ProviderTest> {
    let input = req.input();
    engine(&m, move |m| m.test_provider(&input)).await
}

/// Which memories Claude Code would recall for a prompt typed in `cwd`, in order, with why.
#[tauri::command]
#[specta::specta]
pub async fn recall(m: State<'_, Mneme>, s: State<'_, Session>, req: RecallAsk) -> Answer<RecallView> {
    let r = s.request(&req.at, None);
    let query = RecallQuery { prompt: req.prompt, provider: req.provider };
    engine(&m, move |m| m.recall(&r, &query)).await
}

/// The project's review inbox: its mode, pending and decided items, recent runs, newest transcript.
#[tauri::command]
#[specta::specta]
pub async fn inbox(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<InboxView> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.inbox(&r)).await
}

/// Sets what happens to what extraction finds in the project.
#[tauri::command]
#[specta::specta]
pub async fn set_review_mode(m: State<'_, Mneme>, s: State<'_, Session>, req: ModeChange) -> Answer<InboxView> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.set_review_mode(&r, req.mode)).await
}

/// Writes the item to the memory folder: every memory with its index line, or nothing.
#[tauri::command]
#[specta::specta]
pub async fn inbox_keep(m: State<'_, Mneme>, req: InboxRef) -> Answer<InboxItemView> {
    engine(&m, move |m| m.inbox_keep(&req.id)).await
}

/// Replaces one proposed file of the item; with `keep`, then writes the item.
#[tauri::command]
#[specta::specta]
pub async fn inbox_edit(m: State<'_, Mneme>, req: InboxEdit) -> Answer<InboxItemView> {
    engine(&m, move |m| m.inbox_edit(&req.id, &req.file, &req.content, req.keep.unwrap_or(false))).await
}

/// Drops the item; nothing is written.
#[tauri::command]
#[specta::specta]
pub async fn inbox_discard(m: State<'_, Mneme>, req: InboxRef) -> Answer<InboxItemView> {
    engine(&m, move |m| m.inbox_discard(&req.id)).await
}

/// Sends the item's memories to CLAUDE.md, CLAUDE.local.md or team memory instead.
#[tauri::command]
#[specta::specta]
pub async fn inbox_promote(m: State<'_, Mneme>, req: InboxPromote) -> Answer<InboxItemView> {
    engine(&m, move |m| m.inbox_promote(&req.id, req.to)).await
}

/// Runs extraction now over the project's newest session transcript.
#[tauri::command]
#[specta::specta]
pub async fn run_extraction(m: State<'_, Mneme>, s: State<'_, Session>, req: ExtractNow) -> Answer<ExtractionReport> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.run_extraction(&r, req.provider)).await
}

/// Every folder the live watcher covers now or waits for, in the order they were added.
#[tauri::command]
#[specta::specta]
pub fn watching(s: State<'_, Session>) -> Answer<Vec<WatchedFolder>> {
    let live = s.live.as_ref().ok_or_else(live_off)?;
    Ok(live
        .events
        .watched()
        .into_iter()
        .map(|f| WatchedFolder { path: f.path, recursive: f.recursive, active: f.active })
        .collect())
}

fn live_off() -> ApiError {
    ApiError::new(ErrorCode::Io, "Live updates are off: the file watcher could not start.")
}

/// Adds the folder's memory folder, CLAUDE.md files and `.claude` to the live watcher (see
/// `FilesChanged`); answers every folder watched or waiting to exist.
#[tauri::command]
#[specta::specta]
pub async fn watch(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<Vec<PathBuf>> {
    let r = s.request(&req, None);
    let view = engine(&m, move |m| m.context(&r)).await?;
    match &s.live {
        Some(live) => Ok(live.events.watch_project(&view.cwd, &view.auto_memory.dir)),
        None => Err(live_off()),
    }
}

// Team memory (`<memory>/team/`): the Team screen's commands, shaped like `mneme serve`'s
// team methods.

/// One team file, by its path relative to `team/`.
#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct TeamKeyRef {
    #[serde(flatten)]
    pub at: Folder,
    pub key: String,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct TeamRollbackQuery {
    #[serde(flatten)]
    pub at: Folder,
    pub key: String,
    /// A version from the key's history.
    pub version: u64,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct TeamConflictRef {
    #[serde(flatten)]
    pub at: Folder,
    /// The trash entry holding the replaced local version.
    pub trash_id: String,
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct TeamServerValue {
    /// The team server's address; `null` or absent forgets the saved one.
    #[serde(default)]
    #[specta(optional)]
    pub url: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct TeamServerRef {
    /// Absent: the configured server.
    #[serde(default)]
    #[specta(optional)]
    pub server: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct TeamSignInRef {
    /// From `team_sign_in`.
    pub id: String,
}

/// Repository, server, sign-in, sync state and team files of `cwd`; disk and keyring only.
#[tauri::command]
#[specta::specta]
pub async fn team_status(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<mneme_api::TeamStatus> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.team_status(&r)).await
}

/// Who is signed in, their role here, and each key's newest change on the team server.
#[tauri::command]
#[specta::specta]
pub async fn team_remote(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<mneme_api::TeamRemote> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.team_remote(&r)).await
}

/// Saves (or, with no url, forgets) the team server's address.
#[tauri::command]
#[specta::specta]
pub async fn set_team_server(m: State<'_, Mneme>, req: TeamServerValue) -> Answer<mneme_api::TeamServerSetting> {
    engine(&m, move |m| m.set_team_server(req.url.as_deref())).await
}

#[tauri::command]
#[specta::specta]
pub async fn team_pull(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<mneme_api::TeamPullResult> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.team_pull(&r)).await
}

#[tauri::command]
#[specta::specta]
pub async fn team_push(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<mneme_api::TeamPushResult> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.team_push(&r)).await
}

/// A full pull, then a push.
#[tauri::command]
#[specta::specta]
pub async fn team_sync(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<mneme_api::TeamSyncResult> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.team_sync(&r)).await
}

#[tauri::command]
#[specta::specta]
pub async fn team_history(m: State<'_, Mneme>, s: State<'_, Session>, req: TeamKeyRef) -> Answer<mneme_api::TeamHistory> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.team_history(&r, &req.key)).await
}

/// Makes a key what it was at a version, for everyone (lead only).
#[tauri::command]
#[specta::specta]
pub async fn team_rollback(
    m: State<'_, Mneme>,
    s: State<'_, Session>,
    req: TeamRollbackQuery,
) -> Answer<mneme_api::TeamLeadChange> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.team_rollback(&r, &req.key, req.version)).await
}

/// Removes a key for everyone (lead only): a tombstone every client honours.
#[tauri::command]
#[specta::specta]
pub async fn team_remove(m: State<'_, Mneme>, s: State<'_, Session>, req: TeamKeyRef) -> Answer<mneme_api::TeamLeadChange> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.team_remove(&r, &req.key)).await
}

/// Puts back a local version a pull replaced; the version it replaces goes to the trash.
#[tauri::command]
#[specta::specta]
pub async fn team_restore_conflict(
    m: State<'_, Mneme>,
    s: State<'_, Session>,
    req: TeamConflictRef,
) -> Answer<mneme_api::TeamRestored> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.team_restore_conflict(&r, &req.trash_id)).await
}

/// Starts a device sign-in: the code to show and the page to approve it on.
#[tauri::command]
#[specta::specta]
pub async fn team_sign_in(m: State<'_, Mneme>, req: TeamServerRef) -> Answer<mneme_api::TeamSignIn> {
    engine(&m, move |m| m.team_sign_in(req.server.as_deref())).await
}

#[tauri::command]
#[specta::specta]
pub async fn team_sign_in_poll(m: State<'_, Mneme>, req: TeamSignInRef) -> Answer<mneme_api::TeamSignInPoll> {
    engine(&m, move |m| m.team_sign_in_poll(&req.id)).await
}

/// Signs out: the token leaves the OS keyring.
#[tauri::command]
#[specta::specta]
pub async fn team_sign_out(m: State<'_, Mneme>, req: TeamServerRef) -> Answer<mneme_api::TeamSignedOut> {
    engine(&m, move |m| m.team_sign_out(req.server.as_deref())).await
}

// Auto dream: the Dreams screen's commands, shaped like `mneme serve`'s dream methods.

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct DreamModeChange {
    #[serde(flatten)]
    pub at: Folder,
    /// `automatic` (applied at once), `review` (held for approval) or `off` (no automatic dreams).
    pub mode: mneme_api::DreamModeName,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct DreamNow {
    #[serde(flatten)]
    pub at: Folder,
    /// Who dreams; absent = the offline dream.
    #[serde(default)]
    #[specta(optional)]
    pub provider: Option<ProviderChoice>,
}

/// One dream of the folder's memory, by id.
#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct DreamRef {
    #[serde(flatten)]
    pub at: Folder,
    pub id: String,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct DreamUndo {
    #[serde(flatten)]
    pub at: Folder,
    /// Absent: the newest applied dream that changed something.
    #[serde(default)]
    #[specta(optional)]
    pub id: Option<String>,
    /// Undo even though files changed since the dream (their newer text stays in its record).
    #[serde(default)]
    #[specta(optional)]
    pub force: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct DailyLogQuery {
    #[serde(flatten)]
    pub at: Folder,
    /// `YYYY-MM-DD`; absent = today.
    #[serde(default)]
    #[specta(optional)]
    pub date: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct DailyLogAppend {
    #[serde(flatten)]
    pub at: Folder,
    /// One entry; line breaks become spaces.
    pub text: String,
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct RunsQuery {
    /// At most this many (default 20).
    #[serde(default)]
    #[specta(optional)]
    pub limit: Option<u32>,
    /// One job's runs only.
    #[serde(default)]
    #[specta(optional)]
    pub job: Option<mneme_api::JobName>,
}

/// The gates of the folder's memory as they stand, its dream mode and pending dreams.
#[tauri::command]
#[specta::specta]
pub async fn dream_status(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<mneme_api::DreamGates> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.dream_status(&r)).await
}

#[tauri::command]
#[specta::specta]
pub async fn set_dream_mode(m: State<'_, Mneme>, s: State<'_, Session>, req: DreamModeChange) -> Answer<mneme_api::DreamGates> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.set_dream_mode(&r, req.mode)).await
}

/// Dreams now (the lock is honoured); the folder's mode decides apply or review.
#[tauri::command]
#[specta::specta]
pub async fn run_dream(m: State<'_, Mneme>, s: State<'_, Session>, req: DreamNow) -> Answer<mneme_api::DreamView> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.run_dream(&r, req.provider)).await
}

#[tauri::command]
#[specta::specta]
pub async fn dream_history(m: State<'_, Mneme>, s: State<'_, Session>, req: Folder) -> Answer<mneme_api::DreamHistory> {
    let r = s.request(&req, None);
    engine(&m, move |m| m.dream_history(&r)).await
}

/// One dream with its whole changeset.
#[tauri::command]
#[specta::specta]
pub async fn dream(m: State<'_, Mneme>, s: State<'_, Session>, req: DreamRef) -> Answer<mneme_api::DreamView> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.dream(&r, &req.id)).await
}

#[tauri::command]
#[specta::specta]
pub async fn approve_dream(m: State<'_, Mneme>, s: State<'_, Session>, req: DreamRef) -> Answer<mneme_api::DreamView> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.approve_dream(&r, &req.id)).await
}

#[tauri::command]
#[specta::specta]
pub async fn reject_dream(m: State<'_, Mneme>, s: State<'_, Session>, req: DreamRef) -> Answer<mneme_api::DreamView> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.reject_dream(&r, &req.id)).await
}

/// Undoes an applied dream in one step; `conflict` when files changed since, unless forced.
#[tauri::command]
#[specta::specta]
pub async fn undo_dream(m: State<'_, Mneme>, s: State<'_, Session>, req: DreamUndo) -> Answer<mneme_api::DreamView> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.undo_dream(&r, req.id.as_deref(), req.force.unwrap_or(false))).await
}

#[tauri::command]
#[specta::specta]
pub async fn daily_log(m: State<'_, Mneme>, s: State<'_, Session>, req: DailyLogQuery) -> Answer<mneme_api::DailyLog> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.daily_log(&r, req.date.as_deref())).await
}

#[tauri::command]
#[specta::specta]
pub async fn append_daily_log(m: State<'_, Mneme>, s: State<'_, Session>, req: DailyLogAppend) -> Answer<mneme_api::DailyLog> {
    let r = s.request(&req.at, None);
    engine(&m, move |m| m.append_daily_log(&r, &req.text)).await
}

/// The newest background runs from the run log the app, `mneme serve --scheduler` and
/// `mneme daemon` share.
#[tauri::command]
#[specta::specta]
pub async fn background_runs(m: State<'_, Mneme>, req: RunsQuery) -> Answer<Vec<mneme_api::BackgroundRun>> {
    engine(&m, move |m| m.background_runs(req.limit.map_or(20, |l| l as usize), req.job)).await
}
