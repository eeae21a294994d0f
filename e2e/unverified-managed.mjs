#!/usr/bin/env node
// "What Claude sees" in a Cowork session, in headless Chromium against the real `mneme serve`
// (the same tools as e2e/run.mjs, in a file of its own so it runs without the team server and
// keyring):
//
//   MNEME_BIN=/path/to/mneme node e2e/unverified-managed.mjs     (after `npm run build:ui`)
//   E2E_UI_DIST=/path/to/dist …            another UI build
//   E2E_SHOTS_DIR=/tmp/shots …             writes the screenshot there (default docs/screenshots)
//   E2E_NO_SCREENSHOTS=1 …                 takes none
//   E2E_KEEP=1 …                           keeps the temporary home
//
// From Claude Code 2.1.304 a Cowork session (CLAUDE_CODE_ENTRYPOINT=remote_cowork) does not send a
// managed file its own account could have written as the organization's policy
// (docs/claude-code-versions.md, rows 87 and 88). The screen must not call such a file policy: each
// one carries an "unverified" badge and a note saying who could have changed it (the API's
// reason), and the Managed layer's line says so too. Started without the entrypoint, the same
// files are the organization's, with neither. No Claude Code is on PATH, so the screen renders
// as the newest release Mneme checks. A few seconds.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkAccessible } from './checks.mjs';
import { SHOTS, failer, write, preflight, startServer, stop, removeUnlessKept, runMain, keepFailure, api as callApi } from './harness.mjs';

const fail = failer('unverified-managed');
const api = (server, method, body) => callApi(server, method, body, fail);

const TIMEOUT = 10_000;
/** Claude Code's own label for such a file, as the block carries it (crates/core/src/layer.rs). */
const UNVERIFIED_LABEL = "(instructions from this machine's managed folder.";

function buildFixture() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mneme-e2e-unverified-')));
  const home = path.join(tmp, 'home');
  const config = path.join(home, '.claude');
  const data = path.join(tmp, 'data');
  const managed = path.join(tmp, 'managed');
  const repo = path.join(home, 'src', 'shop');
  const env = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', TZ: 'UTC', HOME: home, CLAUDE_CONFIG_DIR: config, MNEME_DATA_DIR: data };
  fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
  write(path.join(repo, 'CLAUDE.md'), '# Shop\n\nThe storefront service.\n');
  write(path.join(config, 'CLAUDE.md'), '- Write commit messages in the imperative mood.\n');
  write(path.join(managed, 'CLAUDE.md'), '# Company policy\n\n- Never push to main directly.\n');
  write(path.join(managed, '.claude', 'rules', 'secrets.md'), '- Never print credentials.\n');
  return { tmp, home, repo, managed, env };
}

async function main() {
  const { bin, launch } = preflight(fail);
  const fx = buildFixture();
  const browser = await launch();
  let page;
  let server;
  try {
    for (const cowork of [true, false]) {
      const env = cowork ? { ...fx.env, CLAUDE_CODE_ENTRYPOINT: 'remote_cowork' } : fx.env;
      server = await startServer(bin, fx.home, env, ['--managed-dir', fx.managed]);
      await api(server, 'openProject', { cwd: fx.repo });
      const view = await api(server, 'context', { cwd: fx.repo });
      const managedFiles = view.files.filter((f) => f.layer === 'Managed');
      if (managedFiles.length !== 2) fail(`expected the managed CLAUDE.md and its rule, the API lists ${JSON.stringify(managedFiles.map((f) => f.path))}`);
      if (managedFiles.some((f) => Boolean(f.unverified) !== cowork)) fail(`unverified as the API reports it (Cowork: ${cowork}): ${JSON.stringify(managedFiles)}`);
      if (view.files.some((f) => f.layer !== 'Managed' && f.unverified)) fail('a file outside the managed layer is reported unverified');
      if (view.block.includes(UNVERIFIED_LABEL) !== cowork) fail(`the block ${cowork ? 'lacks' : 'carries'} the unverified label`);

      page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' })).newPage();
      page.setDefaultTimeout(TIMEOUT);
      const errors = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(server.url);
      await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'What Claude sees', exact: true }).click();
      await page.getByTestId('context-block').waitFor();
      const layer = page.locator('section[data-layer="Managed"]');
      await layer.waitFor();
      const line = await layer.locator('.layer-head .muted').first().innerText();
      const notes = layer.getByTestId('unverified-note');
      // The badge's explanation is hidden text inside it (Hint `within`), so match its start.
      const badges = layer.locator('.badges .badge', { hasText: /^unverified/ });
      if (cowork) {
        if (/policy set by/i.test(line)) fail(`the Managed layer still calls every file policy: "${line}"`);
        if ((await badges.count()) !== 2) fail(`expected an "unverified" badge on each managed file, found ${await badges.count()}`);
        if ((await notes.count()) !== 2) fail(`expected a note under each managed file, found ${await notes.count()}`);
        for (const [i, f] of managedFiles.entries()) {
          const note = await layer.locator(`li:has(button[data-path="${f.path}"])`).getByTestId('unverified-note').innerText();
          if (!note.includes(f.unverified.reason)) fail(`file ${i + 1}'s note does not give the API's reason "${f.unverified.reason}": "${note}"`);
        }
        await checkAccessible(page, 'What Claude sees with unverified managed files', fail);
        if (!process.env.E2E_NO_SCREENSHOTS) {
          fs.mkdirSync(SHOTS, { recursive: true });
          await layer.scrollIntoViewIfNeeded();
          await page.screenshot({ path: path.join(SHOTS, 'what-claude-sees-unverified.png') });
        }
      } else {
        if (!/policy set by/i.test(line)) fail(`outside a Cowork session the Managed layer should read as policy: "${line}"`);
        if ((await badges.count()) || (await notes.count())) fail('outside a Cowork session a managed file is marked unverified');
      }
      if (errors.length) fail(`page errors: ${errors.join('; ')}`);
      await page.context().close();
      page = undefined;
      await stop(server.child);
      server = undefined;
    }
    console.log('e2e (unverified-managed): ok');
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
