#!/usr/bin/env node
// The Memories screen's health panel after a rename that stopped half-way, in headless Chromium
// against the real `mneme serve` (the same tools as e2e/run.mjs, in a file of its own so it runs
// without the team server and keyring):
//
//   MNEME_BIN=/path/to/mneme node e2e/stopped-rename.mjs     (after `npm run build:ui`)
//   E2E_UI_DIST=/path/to/dist …            another UI build
//   E2E_SHOTS_DIR=/tmp/shots …             writes the screenshot there (default docs/screenshots)
//   E2E_NO_SCREENSHOTS=1 …                 takes none
//   E2E_KEEP=1 …                           keeps the temporary home
//
// A rename moves the file, then points its index line at the new name; before the move it leaves
// a note in the memory folder (`.mneme-index-sync-<pid>-<n>.json`, `renamedTo`), removed once the
// index follows (crates/store/src/memdir/pending.rs). Stopped in between (a crash, a kill: what
// crates/cli/tests/crash_rename.rs does to the real command), the folder holds the file at its new
// name, the note, and an index line still naming the old file. The fixture is that folder, as the
// engine leaves it. The panel must say in plain words that the line still points to the old name
// and what the file is called now, open the memory from there, and Fix index must point the line
// at the new name where it stands, keeping its title and hook written by hand. The engine's report
// names the problem once (no line to a missing file, no memory with no line), and the Memories list
// does not flag the moved memory "unindexed". A few seconds.

import fs from 'node:fs';
import path from 'node:path';
import { checkAccessible } from './checks.mjs';
import { SHOTS, failer, write, preflight, shopHome, startServer, stop, removeUnlessKept, runMain, keepFailure, api as callApi } from './harness.mjs';

const fail = failer('stopped-rename');
const api = (server, method, body) => callApi(server, method, body, fail);

const TIMEOUT = 10_000;

/** A topic file as Claude Code writes one. */
const topic = (name, description, body) => `---\nname: ${name}\ndescription: ${description}\nmetadata:\n  type: user\n---\n\n${body}\n`;

/** The index: the memory's line, second of three, still names `rel`; its title and hook are the user's own. */
const indexFor = (rel) => `- [First](z1.md) — one\n- [Alpha, by hand](${rel}) — a hook of my own\n- [Last](z2.md) — two\n`;

function buildFixture() {
  const { tmp, home, config, repo, env } = shopHome('mneme-e2e-rename-');
  // Claude Code's folder for the project: every character but a letter or digit becomes "-".
  const mem = path.join(config, 'projects', repo.replace(/[^a-zA-Z0-9]/g, '-'), 'memory');
  write(path.join(mem, 'z1.md'), topic('Zed one', 'one', 'z1'));
  write(path.join(mem, 'z2.md'), topic('Zed two', 'two', 'z2'));
  // Renamed from a.md to alpha-first.md: the file moved, the index did not follow.
  write(path.join(mem, 'alpha-first.md'), topic('Alpha', 'the first letter', "Alpha's body."));
  write(path.join(mem, 'MEMORY.md'), indexFor('a.md'));
  const note = path.join(mem, '.mneme-index-sync-4242-0.json');
  write(note, JSON.stringify({ relPath: 'a.md', oldName: 'Alpha', oldDescription: 'the first letter', renamedTo: 'alpha-first.md' }));
  return { tmp, home, repo, mem, note, env };
}

async function main() {
  const { bin, launch } = preflight(fail);
  const fx = buildFixture();
  const browser = await launch();
  let page;
  let server;
  try {
    server = await startServer(bin, fx.home, fx.env);
    await api(server, 'openProject', { cwd: fx.repo });
    const health = await api(server, 'health', { cwd: fx.repo });
    const stale = health.staleIndexLines;
    if (stale.length !== 1 || stale[0].field !== 'path' || stale[0].indexShows !== 'a.md' || stale[0].relPath !== 'alpha-first.md' || stale[0].line !== 2) {
      fail(`the engine should report line 2 of MEMORY.md as still naming a.md: ${JSON.stringify(stale)}`);
    }
    // The engine reports the one problem once, as the rename: not again as a line pointing at a
    // missing file and a memory with no line (crates/store/src/memdir/health.rs folds them), so
    // the panel, the CLI and the memory list need no filter of their own.
    const echoes = health.index.missingTargets.map((e) => e.relPath).concat(health.unindexed);
    if (echoes.length || health.unindexedCount !== 0) fail(`the engine reports the stopped rename again: ${JSON.stringify({ missingTargets: health.index.missingTargets, unindexed: health.unindexed, unindexedCount: health.unindexedCount })}`);

    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' })).newPage();
    page.setDefaultTimeout(TIMEOUT);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(server.url);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Memories', exact: true }).click();
    const panel = page.getByTestId('health');
    await panel.getByTestId('health-issues').waitFor();
    // One entry: the lists open by themselves.
    const list = panel.locator('.issues > div', { has: page.getByRole('heading', { name: 'A rename that did not finish' }) });
    if ((await list.count()) !== 1) fail(`no list headed "A rename that did not finish" in the health panel: "${await panel.innerText()}"`);
    const item = (await list.locator('li').innerText()).replace(/\s+/g, ' ').trim();
    const said = 'MEMORY.md line 2 still points to “a.md”, but the memory is now called alpha-first.md';
    if (!item.startsWith(said)) fail(`the stopped rename reads "${item}", not "${said}…"`);
    if (!/Fix index/.test(item)) fail(`the entry does not say what mends it: "${item}"`);
    if (/\b(rel_?path|renamedTo|field|path)\b/.test(item)) fail(`the entry shows the engine's words: "${item}"`);
    const badge = await panel.getByTestId('health-issues').innerText();
    if (!badge.startsWith('1 to fix')) fail(`one stopped rename counts as "${badge}"`);
    for (const heading of ['Index lines pointing at missing files', 'Topic files with no index line', 'Index lines an unfinished edit left behind']) {
      if (await panel.getByRole('heading', { name: heading }).count()) fail(`the stopped rename (${echoes.join(', ')}) is listed again under "${heading}"`);
    }
    // The memory list: the moved memory has its line (the one the rename left, which Fix index
    // points at it), so it carries no "unindexed" badge.
    const row = page.getByTestId('memory-list').locator('button.mem-row[data-relpath="alpha-first.md"]');
    await row.waitFor();
    if (await row.locator('.badge', { hasText: /^unindexed\b/ }).count()) fail(`the Memories list calls the moved memory unindexed: "${await row.innerText()}"`);
    await checkAccessible(page, 'Memories with a stopped rename', fail);
    if (!process.env.E2E_NO_SCREENSHOTS) {
      fs.mkdirSync(SHOTS, { recursive: true });
      await panel.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(SHOTS, 'memories-health-stopped-rename.png') });
    }

    // The new name opens the memory where it is now, which is not called missing from MEMORY.md.
    await list.getByRole('button', { name: 'alpha-first.md' }).click();
    const editor = page.getByTestId('memory-editor');
    await editor.waitFor();
    if (await editor.getByText('not in MEMORY.md').count()) fail('the editor calls the moved memory not in MEMORY.md');

    // Fix index points the line at the new name where it stands, title and hook kept, and the note goes.
    await panel.getByTestId('fix-index').click();
    await panel.getByTestId('health-ok').waitFor();
    const index = fs.readFileSync(path.join(fx.mem, 'MEMORY.md'), 'utf8');
    if (index !== indexFor('alpha-first.md')) fail(`Fix index did not point the line at the new name in place:\n${index}`);
    if (fs.existsSync(fx.note)) fail('Fix index left the rename note behind');
    if ((await panel.locator('.issues > div', { has: page.getByRole('heading', { name: 'A rename that did not finish' }) }).count())) fail('the stopped rename is still listed after Fix index');
    if (errors.length) fail(`page errors: ${errors.join('; ')}`);
    console.log('e2e (stopped-rename): ok');
  } catch (e) {
    await keepFailure(page, fx.tmp);
    throw e;
  } finally {
    await browser.close();
    if (server) await stop(server.child);
    removeUnlessKept(fx.tmp);
  }
}

runMain(main);
