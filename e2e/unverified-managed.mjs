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
// reason), and the Managed layer's line says so too, and that a session already running keeps
// what Claude Code decided when it started (row 88: the verdict is reached once per session).
// Started without the entrypoint, the same files are the organization's, with neither.
//
// As root, a folder where only one file is unverified: root can write anything, so there the
// server runs as `nobody` on a managed folder root owns under /run (under the temporary folder,
// which everyone may write, every file would be unverified), with one rule given to `nobody`.
// The layer's line must then say which files are policy, and only that rule carries the badge
// and the note (screenshot what-claude-sees-unverified-mixed.png). As any other user that part
// says so and is skipped. No Claude Code is on PATH, so the screen renders as the newest release
// Mneme checks. A few seconds.

import fs from 'node:fs';
import path from 'node:path';
import { checkAccessible } from './checks.mjs';
import { SHOTS, failer, write, preflight, shopHome, inBrowser, startServer, stop, removeUnlessKept, runMain, keepFailure, api as callApi } from './harness.mjs';

const fail = failer('unverified-managed');
const api = (server, method, body) => callApi(server, method, body, fail);

const TIMEOUT = 10_000;
/** Claude Code's own label for such a file, as the block carries it (crates/core/src/layer.rs). */
const UNVERIFIED_LABEL = "(instructions from this machine's managed folder.";
/** The layer line's sentence on when Claude Code decides (WhatClaudeSees.svelte). */
const SESSION_NOTE = 'a session already running keeps what it decided then, and this is what a new session gets';
/** The layer line's words when only some files are unverified. */
const SOME_NOTE = 'Claude Code treats those not marked “unverified” as your organization’s policy.';
/** The `nobody` account (uid and gid). */
const NOBODY = 65534;

/**
 * The mixed fixture, as root: under /run (root's, 0755), a managed folder root owns with its
 * CLAUDE.md, and one rule in it given to `nobody`; nobody's home with the project; the binary
 * hard-linked in, since `nobody` cannot reach a build under root's home.
 */
function buildMixedFixture(bin) {
  const tmp = fs.mkdtempSync('/run/mneme-e2e-unverified-');
  fs.chmodSync(tmp, 0o755);
  const home = path.join(tmp, 'home');
  const managed = path.join(tmp, 'managed');
  const repo = path.join(home, 'src', 'shop');
  const data = path.join(tmp, 'data');
  const env = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', TZ: 'UTC', HOME: home, CLAUDE_CONFIG_DIR: path.join(home, '.claude'), MNEME_DATA_DIR: data, CLAUDE_CODE_ENTRYPOINT: 'remote_cowork' };
  fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
  fs.mkdirSync(path.join(home, '.claude'), { recursive: true });
  fs.mkdirSync(data);
  write(path.join(repo, 'CLAUDE.md'), '# Shop\n\nThe storefront service.\n');
  write(path.join(managed, 'CLAUDE.md'), '# Company policy\n\n- Never push to main directly.\n');
  const rule = path.join(managed, '.claude', 'rules', 'secrets.md');
  write(rule, '- Never print credentials.\n');
  for (const dir of [managed, path.join(managed, '.claude'), path.join(managed, '.claude', 'rules')]) fs.chmodSync(dir, 0o755);
  fs.chownSync(rule, NOBODY, NOBODY);
  const own = (p) => {
    fs.chownSync(p, NOBODY, NOBODY);
    if (fs.lstatSync(p).isDirectory()) for (const n of fs.readdirSync(p)) own(path.join(p, n));
  };
  own(home);
  own(data);
  const linked = path.join(tmp, 'mneme');
  try {
    fs.linkSync(bin, linked);
  } catch {
    fs.copyFileSync(bin, linked);
    fs.chmodSync(linked, 0o755);
  }
  return { tmp, home, managed, repo, rule, env, bin: linked };
}

/** The Managed layer's line, badges and notes as the page shows them. */
async function managedLayer(page) {
  await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'What Claude sees', exact: true }).click();
  await page.getByTestId('context-block').waitFor();
  const layer = page.locator('section[data-layer="Managed"]');
  await layer.waitFor();
  const line = await layer.locator('.layer-head .muted').first().innerText();
  // The badge's explanation is hidden text inside it (Hint `within`), so match its start.
  const badges = layer.locator('.badges .badge', { hasText: /^unverified/ });
  return { layer, line, badges, notes: layer.getByTestId('unverified-note') };
}

function buildFixture() {
  const fx = shopHome('mneme-e2e-unverified-');
  const managed = path.join(fx.tmp, 'managed');
  write(path.join(fx.config, 'CLAUDE.md'), '- Write commit messages in the imperative mood.\n');
  write(path.join(managed, 'CLAUDE.md'), '# Company policy\n\n- Never push to main directly.\n');
  write(path.join(managed, '.claude', 'rules', 'secrets.md'), '- Never print credentials.\n');
  return { ...fx, managed };
}

async function main() {
  const { bin, launch } = preflight(fail);
  const fx = buildFixture();
  await inBrowser(bin, launch, fx, async (session) => {
    for (const cowork of [true, false]) {
      const env = cowork ? { ...fx.env, CLAUDE_CODE_ENTRYPOINT: 'remote_cowork' } : fx.env;
      const server = await session.serve(env, ['--managed-dir', fx.managed]);
      await api(server, 'openProject', { cwd: fx.repo });
      const view = await api(server, 'context', { cwd: fx.repo });
      const managedFiles = view.files.filter((f) => f.layer === 'Managed');
      if (managedFiles.length !== 2) fail(`expected the managed CLAUDE.md and its rule, the API lists ${JSON.stringify(managedFiles.map((f) => f.path))}`);
      if (managedFiles.some((f) => Boolean(f.unverified) !== cowork)) fail(`unverified as the API reports it (Cowork: ${cowork}): ${JSON.stringify(managedFiles)}`);
      if (view.files.some((f) => f.layer !== 'Managed' && f.unverified)) fail('a file outside the managed layer is reported unverified');
      if (view.block.includes(UNVERIFIED_LABEL) !== cowork) fail(`the block ${cowork ? 'lacks' : 'carries'} the unverified label`);

      const page = await session.newPage({ width: 1280, height: 800 }, TIMEOUT);
      await page.goto(server.url);
      const { layer, line, badges, notes } = await managedLayer(page);
      if (cowork) {
        if (/policy set by/i.test(line)) fail(`the Managed layer still calls every file policy: "${line}"`);
        if (!line.includes(SESSION_NOTE)) fail(`the Managed layer does not say that a running session keeps what it saw at its start: "${line}"`);
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
        if (!/policy set by/i.test(line) || line.includes(SESSION_NOTE)) fail(`outside a Cowork session the Managed layer should read as policy: "${line}"`);
        if ((await badges.count()) || (await notes.count())) fail('outside a Cowork session a managed file is marked unverified');
      }
      if (page.errors.length) fail(`page errors: ${page.errors.join('; ')}`);
      await session.closePage();
      await session.stopServer();
    }
    if (process.getuid?.() === 0) {
      // Its own home and server (as nobody, which inBrowser's serve cannot start): only the
      // browser is the session's.
      const mixed = buildMixedFixture(bin);
      let server;
      try {
        server = await startServer(mixed.bin, mixed.home, mixed.env, ['--managed-dir', mixed.managed], { uid: NOBODY, gid: NOBODY });
        await api(server, 'openProject', { cwd: mixed.repo });
        const view = await api(server, 'context', { cwd: mixed.repo });
        const managedFiles = view.files.filter((f) => f.layer === 'Managed');
        const marked = managedFiles.filter((f) => f.unverified).map((f) => f.path);
        if (managedFiles.length !== 2 || marked.length !== 1 || marked[0] !== mixed.rule) {
          fail(`as nobody, only the rule nobody owns should be unverified; the API marks ${JSON.stringify(marked)} of ${JSON.stringify(managedFiles.map((f) => f.path))}`);
        }
        const page = await session.newPage({ width: 1280, height: 800 }, TIMEOUT);
        await page.goto(server.url);
        const { layer, line, badges, notes } = await managedLayer(page);
        if (!line.includes(SOME_NOTE)) fail(`with one file of two unverified, the Managed layer should say which are policy: "${line}"`);
        if (!line.includes(SESSION_NOTE)) fail(`the Managed layer does not say that a running session keeps what it saw at its start: "${line}"`);
        if ((await badges.count()) !== 1 || (await notes.count()) !== 1) fail(`expected one "unverified" badge and one note, found ${await badges.count()} and ${await notes.count()}`);
        const ruleRow = layer.locator(`li:has(button[data-path="${mixed.rule}"])`);
        const note = await ruleRow.getByTestId('unverified-note').innerText();
        const reason = managedFiles.find((f) => f.unverified).unverified.reason;
        if (!note.includes(reason)) fail(`the rule's note does not give the API's reason "${reason}": "${note}"`);
        const policyRow = layer.locator(`li:has(button[data-path="${path.join(mixed.managed, 'CLAUDE.md')}"])`);
        if ((await policyRow.count()) !== 1 || (await policyRow.getByTestId('unverified-note').count())) fail('the CLAUDE.md root owns is missing or marked unverified');
        await checkAccessible(page, 'What Claude sees with one unverified managed file', fail);
        if (!process.env.E2E_NO_SCREENSHOTS) {
          fs.mkdirSync(SHOTS, { recursive: true });
          await layer.scrollIntoViewIfNeeded();
          await page.screenshot({ path: path.join(SHOTS, 'what-claude-sees-unverified-mixed.png') });
        }
        if (page.errors.length) fail(`page errors: ${page.errors.join('; ')}`);
        await session.closePage();
        await stop(server.child);
        server = undefined;
      } catch (e) {
        await keepFailure(session.page, mixed.tmp);
        throw e;
      } finally {
        if (server) await stop(server.child);
        server = undefined;
        removeUnlessKept(mixed.tmp);
      }
    } else {
      console.log('e2e (unverified-managed): skipped the folder with one unverified file of two: it needs root (to run the server as nobody)');
    }
    console.log('e2e (unverified-managed): ok');
  });
}

runMain(main);
