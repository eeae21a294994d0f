// How a path is shown to a person: relative to the open folder when it is inside it, `~/…`
// under the home folder, and the home folder itself as `~`. Pure, so it is unit-tested
// (ui/tests/lib.test.mjs); `shortPath` in app.svelte.ts supplies the open folder and home.

export function shortPathIn(path: string, base: string, home: string): string {
  if (base && path.startsWith(base + '/')) return path.slice(base.length + 1);
  if (home && path === home) return '~';
  if (home && path.startsWith(home + '/')) return '~/' + path.slice(home.length + 1);
  return path;
}
