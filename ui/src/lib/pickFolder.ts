// Choosing a project folder. The desktop app asks the OS for a native folder dialog
// (tauri-plugin-dialog; the window's capability allows only `open`). A browser page cannot: a
// web folder picker hands over files, never a path on the server's disk, so there the folder is
// typed, completed by the engine (`completeFolder`) and checked before it is opened.

import { open } from '@tauri-apps/plugin-dialog';
import { inTauri } from './transport';

/** Whether a native folder dialog is available (the desktop app). */
export function hasNativePicker(): boolean {
  return inTauri();
}

/** Shows the native folder dialog; resolves to the chosen folder, or null when cancelled. */
export async function pickFolderNatively(start?: string): Promise<string | null> {
  const chosen = await open({ directory: true, multiple: false, defaultPath: start || undefined, title: 'Open a project folder' });
  return typeof chosen === 'string' ? chosen : null;
}
