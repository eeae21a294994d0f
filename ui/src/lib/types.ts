// Typed DTOs of Mneme's engine API (crates/api), exactly as `mneme serve` sends them (camelCase).

export type Layer = 'Managed' | 'User' | 'Project' | 'Local' | 'AutoMem' | 'TeamMem';
export type MemoryType = 'user' | 'feedback' | 'project' | 'reference';
export type Scope = 'private' | 'team';
export type ErrorCode =
  | 'not_found' | 'invalid_input' | 'conflict' | 'already_exists' | 'malformed' | 'io' | 'unavailable'
  | 'secrets_refused' | 'sign_in_required' | 'forbidden';

export interface HomeInfo {
  home: string;
  configHome: string;
  cwd: string;
  /** Whether the background scheduler runs in the process the page talks to. */
  scheduler: boolean;
}

export interface ContextRequest {
  cwd: string;
  settingSources?: string;
  addDirs?: string[];
  date?: string;
}

export interface ContextFile {
  path: string;
  layer: Layer;
  parent: string | null;
  globs: string[] | null;
  isRule: boolean;
  bytes: number;
  chars: number;
  tokens: number;
  truncated: boolean;
  large: boolean;
  transformed: boolean;
}

export interface SkippedEntry {
  path: string;
  layer: Layer;
  parent: string | null;
  /** A sentence. */
  reason: string;
  detail: { kind: string; [key: string]: unknown };
}

export interface ConditionalRule {
  path: string;
  layer: Layer;
  globs: string[];
  baseDir: string;
  parent: string | null;
}

export interface AutoMemoryInfo {
  enabled: boolean;
  reason: string;
  dir: string;
  source: string;
  entrypointExists: boolean;
}

export interface ContextView {
  cwd: string;
  block: string;
  files: ContextFile[];
  skipped: SkippedEntry[];
  conditional: ConditionalRule[];
  nestedCandidates: string[];
  autoMemory: AutoMemoryInfo;
  totalChars: number;
  totalTokens: number;
  settingsProblems: string[];
}

export interface TouchedView {
  block: string;
  files: ContextFile[];
}

export interface FileText {
  path: string;
  content: string;
  revision: string;
}

export interface Saved {
  path: string;
  revision: string;
}

export interface ProjectInfo {
  folderName: string;
  folder: string;
  projectPath: string | null;
  projectExists: boolean;
  orphaned: boolean;
  memoryDir: string;
  hasMemoryIndex: boolean;
  topicCount: number;
  transcriptCount: number;
  lastModifiedMs: number | null;
}

export interface MemorySummary {
  relPath: string;
  path: string;
  name: string;
  description: string | null;
  memoryType: MemoryType | null;
  scope: Scope;
  modifiedMs: number;
  ageDays: number;
  links: string[];
  indexed: boolean;
}

export interface MemoryDetail extends MemorySummary {
  /** The whole file. */
  content: string;
  revision: string;
  problems: string[];
}

export interface NewMemoryRequest {
  cwd: string;
  name: string;
  description: string;
  kind: MemoryType;
  body: string;
  fileName?: string;
}

export interface MemoryEditRequest {
  cwd: string;
  memory: string;
  name?: string;
  description?: string;
  kind?: MemoryType;
  body?: string;
  rename?: string;
}

export interface TrashEntry {
  id: string;
  originalRelPath: string;
  deletedAtMs: number;
  size: number;
}

export interface Trashed {
  id: string;
  original: string;
  entry: TrashEntry;
}

export interface TrashListing {
  entries: TrashEntry[];
  damaged: unknown;
}

export interface IndexEntryRef {
  line: number;
  relPath: string;
  text: string;
}

export interface IndexHealth {
  relPath: string;
  exists: boolean;
  lineCount: number;
  unitCount: number;
  maxLines: number;
  maxUnits: number;
  truncated: boolean;
  lineTruncated: boolean;
  unitTruncated: boolean;
  loadedThroughLine: number;
  entryCount: number;
  pastCap: IndexEntryRef[];
  missingTargets: IndexEntryRef[];
  duplicates: { relPath: string; lines: number[] }[];
  longLines: { line: number; units: number }[];
}

export interface Health {
  topicCount: number;
  index: IndexHealth;
  teamIndex: IndexHealth | null;
  unindexed: string[];
  danglingLinks: { from: string; link: string }[];
  problems: { relPath: string; kind: string; message: string }[];
}

export interface GraphNode {
  id: string;
  kind: 'memory' | 'index' | 'claudeMd' | 'rule' | 'ghost';
  label: string;
  path: string | null;
  memoryType: MemoryType | null;
  scope: Scope | null;
  layer: Layer | null;
}

export interface Graph {
  nodes: GraphNode[];
  edges: { source: string; target: string; kind: 'link' | 'indexPointer' | 'include' }[];
}

export interface MachineSettings {
  userSettingsPath: string;
  autoMemoryEnabled: boolean | null;
  autoDreamEnabled: boolean | null;
  autoMemoryDirectory: string | null;
  problems: string[];
}

export interface MergedFile {
  fromRelPath: string;
  toRelPath: string;
}

export interface SkippedFile {
  relPath: string;
  reason: string;
}

export interface AddedIndexLine {
  indexRelPath: string;
  text: string;
}

/** `mergeMemory`: what merging an orphaned memory folder did (or, with dryRun, would do). */
export interface MergeReport {
  dryRun: boolean;
  from: string;
  into: string;
  moved: MergedFile[];
  renamed: MergedFile[];
  skipped: SkippedFile[];
  indexLinesAdded: AddedIndexLine[];
  trashedTo: string | null;
  trashProblem: string | null;
}

/** `setAutoMemoryDirectory`: what was written. */
export interface AutoMemDirChange {
  settingsPath: string;
  value: string | null;
  resolved: string | null;
  defaultBase: string;
  note: string | null;
}

/** `watching`: one folder the live-update watcher covers. */
export interface WatchedFolder {
  path: string;
  recursive: boolean;
  active: boolean;
}

// ---------------------------------------------------------------- model providers and recall

export type ProviderKind = 'offline' | 'claude-cli' | 'anthropic' | 'openai';
export type KeyState = 'notNeeded' | 'set' | 'notSet' | 'fromEnvironment' | 'unavailable';
export type ProviderFailure =
  | 'badKey' | 'network' | 'rateLimited' | 'modelNotFound' | 'timeout' | 'cancelled' | 'api' | 'badResponse' | 'notConfigured';

/** Where the provider's API key stands; the key itself never reaches the UI. */
export interface KeyStatus {
  state: KeyState;
  account: string | null;
  /** What to do (the keyring's advice, the variable used). */
  message: string | null;
}

/** `providerSettings`: the saved provider, as `providers.json` holds it. */
export interface ProviderView {
  kind: ProviderKind;
  model: string | null;
  defaultModel: string | null;
  /** The Anthropic API's default model, whatever kind is saved. */
  anthropicDefaultModel: string;
  baseUrl: string | null;
  effectiveBaseUrl: string | null;
  timeoutSecs: number;
  claudeBinary: string | null;
  detectedClaudeBinary: string | null;
  key: KeyStatus;
  settingsPath: string;
  keyringService: string;
  /** Providers that can answer now (offline always). */
  usable: ProviderKind[];
}

/** `setProviderSettings` / `testProvider` input; empty strings mean the kind's default. */
export interface ProviderInput {
  kind: ProviderKind;
  model?: string;
  baseUrl?: string;
  timeoutSecs?: number;
  claudeBinary?: string;
}

/** `testProvider`: one tiny completion and what happened. */
export interface ProviderTest {
  ok: boolean;
  kind: ProviderKind;
  model: string | null;
  message: string;
  failure: ProviderFailure | null;
  reply: string | null;
  elapsedMs: number;
}

export interface RecalledMemory {
  relPath: string;
  path: string;
  name: string;
  reason: string;
  score: number | null;
  /** `Memory: <path>:`, after the staleness warning for a memory over a day old. */
  header: string;
  content: string;
  truncated: 'lines' | 'bytes' | null;
  modifiedMs: number;
  /** The `<system-reminder>` Claude Code adds for it, byte for byte. */
  injected: string;
}

/** `recall`: the recall bench's answer. */
export interface RecallView {
  memoryDir: string;
  autoMemoryEnabled: boolean;
  autoMemoryReason: string;
  provider: ProviderKind;
  model: string | null;
  selected: RecalledMemory[];
  skipped: string | null;
  error: string | null;
  /** The one system message on the wire after a tool result. */
  apiSystemText: string | null;
}

// ---------------------------------------------------------------- team memory

/** `teamStatus` / `setTeamServer`: the team server's address as set and as used. */
export interface TeamServerSetting {
  serverUrl: string | null;
  /** `environment`: TEAM_MEMORY_SYNC_URL, which wins over Mneme's setting. */
  source: 'environment' | 'setting' | null;
  savedServerUrl: string | null;
}

export interface TeamOutcome {
  atMs: number;
  ok: boolean;
  summary: string;
  errorClass: string | null;
}

export interface TeamSuppression {
  /** `no_oauth`, `no_repo`, `http_<status>` or the server's error code. */
  reason: string;
  atMs: number;
  recovery: string;
}

/** A file held back for a secret: the rule's label, never the secret. */
export interface TeamSecretHold {
  path: string;
  ruleId: string;
  label: string;
}

export type TeamConflictKind = 'pulledOverLocalEdit' | 'pushedOverTeammate' | 'deletedByTeammate';

export interface TeamConflict {
  key: string;
  atMs: number;
  kind: TeamConflictKind;
  trashId: string | null;
}

export interface TeamSyncState {
  lastPull: TeamOutcome | null;
  lastPush: TeamOutcome | null;
  suppressed: TeamSuppression | null;
  serverMaxEntries: number | null;
  skippedForSecrets: TeamSecretHold[];
  skippedOverCap: string[];
  /** Newest first. */
  conflicts: TeamConflict[];
}

export type TeamFileStatus =
  | 'synced' | 'modified' | 'new' | 'stale' | 'serverOnly' | 'secret' | 'tooLarge' | 'overCap' | 'removed' | 'unknown';

export interface TeamFile {
  key: string;
  path: string | null;
  size: number | null;
  modifiedMs: number | null;
  localHash: string | null;
  serverHash: string | null;
  status: TeamFileStatus;
  secretLabel: string | null;
}

/** `teamStatus`: team memory seen from a folder, without asking the server. */
export interface TeamStatus {
  memoryDir: string;
  teamDir: string;
  repo: string | null;
  repoProblem: string | null;
  remoteUrl: string | null;
  server: TeamServerSetting;
  signedIn: boolean;
  user: string | null;
  keyringProblem: string | null;
  sync: TeamSyncState;
  files: TeamFile[];
}

export interface TeamRemoteEntry {
  key: string;
  version: number;
  checksum: string;
  author: string | null;
  /** ISO 8601. */
  time: string;
  deleted: boolean;
  versions: number;
}

/** `teamRemote`: who you are on the server and each key's newest change. */
export interface TeamRemote {
  user: string;
  role: 'member' | 'lead' | null;
  team: string | null;
  maxEntries: number | null;
  entries: TeamRemoteEntry[];
}

export interface TeamVersion {
  version: number;
  checksum: string;
  author: string | null;
  time: string;
  deleted: boolean;
  content: string;
}

export interface TeamHistory {
  key: string;
  /** Newest first. */
  versions: TeamVersion[];
  local: string | null;
}

export interface TeamPullResult {
  summary: string;
  notModified: boolean;
  serverEmpty: boolean;
  entryCount: number;
  written: string[];
  trashed: string[];
  skipped: { key: string; reason: string }[];
  conflicts: TeamConflict[];
}

export interface TeamPushResult {
  summary: string;
  uploaded: string[];
  batches: number;
  skippedSecrets: TeamSecretHold[];
  skippedOverCap: string[];
  oversized: string[];
  tombstoned: string[];
  conflictRetries: number;
  conflicts: TeamConflict[];
}

export interface TeamSyncResult {
  pull: TeamPullResult;
  push: TeamPushResult;
}

export interface TeamLeadChange {
  key: string;
  version: number | null;
  checksum: string;
  pull: TeamPullResult | null;
  pullError: string | null;
}

export interface TeamSignIn {
  id: string;
  server: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string;
  intervalSecs: number;
  expiresAtMs: number;
}

export interface TeamSignInPoll {
  state: 'pending' | 'slowDown' | 'signedIn';
  user: string | null;
  intervalSecs: number;
}

export interface TeamRestored {
  path: string;
  replacedTrashId: string | null;
}

// ---------------------------------------------------------------- review inbox and extraction

export type ReviewMode = 'automatic' | 'review' | 'off';
export type PromoteTo = 'claude-md' | 'claude-local' | 'team';
export type InboxState = 'pending' | 'kept' | 'discarded' | 'promoted';
export type RunResult = 'saved' | 'staged' | 'nothingToSave' | 'skipped' | 'disabled' | 'failed';

/** One file an inbox item would write or remove. */
export interface InboxFile {
  relPath: string;
  path: string;
  action: 'new' | 'update' | 'remove';
  /** The index (MEMORY.md), which follows its memories. */
  isIndex: boolean;
  /** On disk when staged; null for a new file. */
  before: string | null;
  /** What would be written; null when the file would go to the trash. */
  after: string | null;
  name: string | null;
  description: string | null;
  memoryType: MemoryType | null;
  reason: string;
}

/** One staged extraction run. */
export interface InboxItemView {
  id: string;
  createdMs: number;
  createdAt: string;
  source: string;
  sessionId: string | null;
  transcript: string | null;
  projectRoot: string;
  memoryDir: string;
  state: InboxState;
  decidedMs: number | null;
  promotedTo: PromoteTo | null;
  promotedPaths: string[];
  /** Memories first, then the index. */
  files: InboxFile[];
}

/** One extraction run from the run log. */
export interface ExtractionRun {
  id: string;
  startedMs: number;
  startedAt: string;
  trigger: string;
  engine: string;
  model: string | null;
  transcript: string;
  result: RunResult;
  /** A sentence: "Saved 2 memories", "Skipped: …", "Failed: …". */
  summary: string;
  /** Claude Code's own "● Saved N memories" line and files. */
  message: string | null;
  memoryFiles: string[];
  inboxId: string | null;
  notSaved: { sentence: string; rule: string }[];
  refused: { tool: string; message: string }[];
}

/** `inbox`: one project's review inbox. */
export interface InboxView {
  projectRoot: string;
  memoryDir: string;
  mode: ReviewMode;
  autoMemoryEnabled: boolean;
  autoMemoryReason: string;
  pending: InboxItemView[];
  decided: InboxItemView[];
  runs: ExtractionRun[];
  newestTranscript: { path: string; modifiedMs: number; bytes: number } | null;
}

/** `runExtraction`: what one run over the newest transcript did. */
export interface ExtractionReport {
  transcript: string;
  runs: ExtractionRun[];
}

// Auto dream (the Dreams screen) and the background scheduler: the generated bindings are
// these DTOs exactly (`mneme serve` sends the same serde output), so they are used as they are.
export type {
  BackgroundRun, DailyLog, DreamFile, DreamFileAction, DreamGate, DreamGates, DreamHistory, DreamListItem, DreamLock,
  DreamModeName, DreamOffReason, DreamRefusal, DreamState, DreamTrashed, DreamTrigger, DreamView, JobName, RunOutcome,
  SchedulerEvent,
} from './bindings';
