// Unsaved work kept outside the editors that hold it, so switching memory, opening New memory
// or another screen never drops what was typed: an editor opened again on the same memory or
// file starts from its draft. Save, Revert or Discard ends a draft. While any is left, closing
// or reloading the page asks first (App.svelte's beforeunload).

import { SvelteMap } from 'svelte/reactivity';
import type { MemoryDetail, MemoryType, Problem } from './bindings';
import { memoryFolder } from './app.svelte';

/** A memory's editor as it was left: the memory as read, and the form or raw text typed. */
export interface MemoryDraft {
  detail: MemoryDetail;
  name: string;
  description: string;
  type: string;
  body: string;
  bodyLead: string;
  raw: string;
  mode: 'form' | 'raw';
  readsDifferently: string[];
  editLarge: boolean;
}

/** Memory drafts by folder and file (memoryDraftKey). */
export const memoryDrafts = new SvelteMap<string, MemoryDraft>();

/** The key of a memory of the folder the Memories screen works on now. */
export function memoryDraftKey(relPath: string): string {
  const f = memoryFolder();
  return JSON.stringify([f.cwd, f.agent ?? '', f.agentScope ?? '', relPath]);
}

/** Unsaved text of CLAUDE.md files, rules and includes by path (FileEditor). */
export const fileDrafts = new Map<string, { content: string; original: string; revision: string; notUtf8: boolean; problem: Problem | null }>();

/** The New memory form as it was left. */
export const newMemoryDraft = $state({ name: '', description: '', kind: 'project' as MemoryType, body: '', fileName: '' });

export function newMemoryStarted(): boolean {
  const d = newMemoryDraft;
  return !!(d.name.trim() || d.description.trim() || d.body.trim() || d.fileName.trim());
}

export function clearNewMemoryDraft() {
  Object.assign(newMemoryDraft, { name: '', description: '', kind: 'project', body: '', fileName: '' });
}

/** Whether anything typed is unsaved anywhere in the page. */
export function anyUnsaved(): boolean {
  return memoryDrafts.size > 0 || fileDrafts.size > 0 || newMemoryStarted();
}
