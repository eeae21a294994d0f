// Typed DTOs of Mneme's engine API (crates/api), exactly as `mneme serve` sends them (camelCase).

export type Layer = 'Managed' | 'User' | 'Project' | 'Local' | 'AutoMem' | 'TeamMem';
export type MemoryType = 'user' | 'feedback' | 'project' | 'reference';
export type Scope = 'private' | 'team';
export type ErrorCode = 'not_found' | 'invalid_input' | 'conflict' | 'already_exists' | 'malformed' | 'io';

export interface HomeInfo {
  home: string;
  configHome: string;
  cwd: string;
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
