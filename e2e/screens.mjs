#!/usr/bin/env node
// Every screen on real folders, and a first run, in headless Debian Chromium against the real
// `mneme serve` (the same set-up as e2e/run.mjs, which checks behaviour on a synthetic fixture).
//
//   npm run e2e:screens               (after `npm run build:ui` and a debug build of mneme)
//   MNEME_BIN=/path/to/mneme node e2e/screens.mjs [owner__repo ...]
//   E2E_NO_SCREENSHOTS=1 …            does not rewrite docs/screenshots
//
// 1. A first run: an empty HOME (no ~/.claude, Claude Code never run anywhere). The page must
//    open on the welcome, never on the folder the server was started in, and say where Claude
//    Code's memory lives and whether a Claude Code was found.
// 2. Each repository of the real-world corpus (testdata/realworld/<owner>__<repo>, built with
//    build_fixtures.py into a folder of this run's own): the project is opened by typing its
//    folder, as a person would, and every screen in the sidebar is visited and screenshot into
//    docs/screenshots/realworld/<owner>__<repo>/.
// On every screen axe-core's WCAG 2 A/AA rules must find nothing, and the Graph's layout must use
// both axes with node centres kept apart (e2e/checks.mjs). The server is started in `/`, as a
// desktop launcher starts apps, to prove the page does not open there.

import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkAccessible, checkGraphLayout } from './checks.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(ROOT, 'ui', 'package.json'));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--password-store=basic'];
const SHOTS = path.join(ROOT, 'docs', 'screenshots');
const UI_DIST = path.join(ROOT, 'ui', 'dist');
const CORPUS = path.join(ROOT, 'testdata', 'realworld');
const TIMEOUT = 15_000;

function fail(msg) {
  throw new Error(msg);
}

function findBinary() {
  if (process.env.MNEME_BIN) return path.resolve(process.env.MNEME_BIN);
  const candidates = [process.env.CARGO_TARGET_DIR && path.join(process.env.CARGO_TARGET_DIR, 'debug', 'mneme'),
    path.join(ROOT, 'target', 'debug', 'mneme'), path.join(os.homedir(), '.cache', 'mneme', 'target', 'debug', 'mneme')].filter(Boolean);
  return candidates.find((c) => fs.existsSync(c)) ?? candidates[0];
}

/** An environment whose HOME, Claude Code config home and Mneme data dir are all under `home`. */
function envFor(home, data) {
  return {
    PATH: process.env.PATH, LANG: 'C.UTF-8', TZ: 'UTC', HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'), MNEME_DATA_DIR: data,
    XDG_DATA_HOME: path.join(home, '.local', 'share'), XDG_CONFIG_HOME: path.join(home, '.config'),
    GIT_CONFIG_NOSYSTEM: '1',
    ...Object.fromEntries(['DBUS_SESSION_BUS_ADDRESS', 'GNOME_KEYRING_CONTROL', 'XDG_RUNTIME_DIR']
      .filter((k) => process.env[k]).map((k) => [k, process.env[k]])),
    MNEME_KEYRING_SERVICE: `mneme-e2e-screens-${process.pid}`,
  };
}

function startServer(bin, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--port', '0', '--ui-dir', UI_DIST], { cwd: '/', env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    const timer = setTimeout(() => reject(new Error(`mneme serve printed no URL within 20 s.\n${out}\n${err}`)), 20_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /Mneme is running at (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1], stderr: () => err }); }
    });
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`mneme serve exited with ${code}.\n${out}\n${err}`)); });
  });
}

async function stopServer(server) {
  server.child.kill('SIGINT');
  await new Promise((r) => {
    const t = setTimeout(() => { server.child.kill('SIGKILL'); r(); }, 3000);
    server.child.on('exit', () => { clearTimeout(t); r(); });
  });
}

/** Runs this script again inside scripts/with-keyring.sh (the Team screen reads the keyring). */
function underKeyring() {
  return new Promise((resolve) => {
    const child = spawn(path.join(ROOT, 'scripts', 'with-keyring.sh'), [process.execPath, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
      { stdio: 'inherit', env: { ...process.env, MNEME_E2E_KEYRING: '1' } });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.on('error', (e) => { console.error(`e2e: could not start scripts/with-keyring.sh: ${e.message}`); resolve(1); });
  });
}

/** Waits until the screen has drawn its content: its heading, no "Loading…" left, the graph settled. */
async function screenReady(page, label) {
  await page.locator('main h1').first().waitFor({ timeout: TIMEOUT });
  const until = Date.now() + TIMEOUT;
  while (Date.now() < until) {
    const busy = await page.evaluate(() => {
      const main = document.querySelector('main');
      if (!main) return true;
      if (/\b(Loading|Starting)\b[^.]*…/.test(main.innerText)) return true;
      const g = window.__mnemeGraph;
      return document.querySelector('[data-testid="graph-canvas"]') ? !(g && g.settled()) : false;
    });
    if (!busy) return;
    await page.waitForTimeout(150);
  }
  fail(`${label} did not finish loading within ${TIMEOUT / 1000} s`);
}

async function main() {
  if (!process.env.MNEME_E2E_KEYRING) {
    process.exitCode = await underKeyring();
    return;
  }
  const bin = findBinary();
  if (!fs.existsSync(bin)) fail(`no mneme binary at ${bin}. Build it with \`cargo build -p mneme\` or set MNEME_BIN.`);
  if (!fs.existsSync(path.join(UI_DIST, 'index.html'))) fail('ui/dist is missing. Build the UI first: npm run build:ui');
  if (!fs.existsSync(CHROMIUM)) fail(`no Chromium at ${CHROMIUM}. Install it: apt-get install -y chromium (or set CHROMIUM=/path).`);
  const { chromium } = require('playwright-core');
  const shots = !process.env.E2E_NO_SCREENSHOTS;
  const names = process.argv.slice(2).length ? process.argv.slice(2)
    : fs.readdirSync(CORPUS).filter((d) => fs.existsSync(path.join(CORPUS, d, 'tree'))).sort();

  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mneme-e2e-screens-')));
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  let failed = false;
  const errors = [];
  const run = async (title, fn) => {
    const t = Date.now();
    try {
      await fn();
      console.log(`  ok  ${title} (${Date.now() - t} ms)`);
    } catch (e) {
      failed = true;
      console.error(`  FAILED  ${title}: ${e.message}`);
    }
  };
  /** A fresh page on `env`'s server; page errors are collected and fail the run at the end. */
  const openPage = async (server, title) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    const page = await context.newPage();
    page.setDefaultTimeout(TIMEOUT);
    page.on('pageerror', (e) => errors.push(`${title}: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error' && !/EventSource|events|status of 40[049]/.test(m.text())) errors.push(`${title}: ${m.text()}`); });
    await page.goto(server.url);
    return { page, context };
  };
  const shoot = async (page, file) => {
    if (!shots) return;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    await page.screenshot({ path: file });
  };

  try {
    await run('first run on an empty home: the welcome, not the server\'s folder', async () => {
      const home = path.join(tmp, 'empty', 'home');
      fs.mkdirSync(home, { recursive: true });
      const env = envFor(home, path.join(tmp, 'empty', 'data'));
      // No Claude Code on PATH: the welcome must say none was found.
      env.PATH = '/usr/bin:/bin';
      const server = await startServer(bin, env);
      const contexts = [];
      try {
        const { page, context } = await openPage(server, 'first run');
        contexts.push(context);
        const welcome = page.getByTestId('welcome');
        await welcome.waitFor();
        if (!/#\/projects$/.test(page.url())) fail(`the first run opened on ${page.url()}, not the Projects list`);
        if (await page.locator('#folder').inputValue()) fail('the folder box is filled on a first run; it must start empty');
        // The search for Claude Code answers after the welcome is drawn; read the text once it has.
        await page.getByTestId('welcome-claude').filter({ hasNotText: 'Looking for Claude Code' }).waitFor();
        const text = await welcome.innerText();
        for (const want of ['.claude/CLAUDE.md', '.claude/projects/', 'does not exist yet', 'No Claude Code found']) {
          if (!text.includes(want)) fail(`the welcome does not say "${want}":\n${text}`);
        }
        await checkAccessible(page, 'the welcome', fail);
        await shoot(page, path.join(SHOTS, 'first-run.png'));
        // "Open a project folder…" in a browser: the folder box, completing what is typed.
        await page.getByTestId('welcome-open').click();
        const proj = path.join(home, 'code', 'first');
        fs.mkdirSync(proj, { recursive: true });
        await page.locator('#folder').fill('~/co');
        await page.locator('#folder').press('End');
        await page.locator('#folder').pressSequentially('d');
        await page.waitForFunction((want) => [...document.querySelectorAll('#project-list option')].some((o) => o.value === want), path.join(home, 'code'));
        await page.locator('#folder').fill('~/code/nope');
        await page.locator('#folder').press('Enter');
        await page.getByRole('alert').filter({ hasText: 'does not exist' }).waitFor();
        await page.locator('#folder').fill('~/code/first');
        await page.locator('#folder').press('Enter');
        await page.getByTestId('context-block').waitFor();
        // The next start opens on the project opened last.
        const again = await openPage(server, 'second start');
        contexts.push(again.context);
        await again.page.getByTestId('context-block').waitFor();
        const shown = await again.page.locator('#folder').inputValue();
        if (shown !== proj) fail(`the second start opened on ${shown}, not the project opened last (${proj})`);
      } finally {
        for (const c of contexts) await c.close().catch(() => {});
        await stopServer(server);
      }
    });

    const fixtures = path.join(tmp, 'real');
    execFileSync('python3', [path.join(CORPUS, 'build_fixtures.py'), '--root', fixtures, ...names], { stdio: 'ignore' });
    for (const name of names) {
      const fx = path.join(fixtures, name);
      const home = path.join(fx, 'home');
      const repo = path.join(fx, 'repo');
      const server = await startServer(bin, envFor(home, path.join(fx, 'data')));
      let context;
      try {
        let page;
        ({ page, context } = await openPage(server, name));
        await run(`${name}: opens on Projects, the project opened by typing its folder`, async () => {
          await page.locator('main h1', { hasText: 'Projects' }).waitFor();
          await page.locator('#folder').fill(repo);
          await page.locator('#folder').press('Enter');
          await page.getByTestId('context-block').waitFor();
        });
        const nav = page.getByRole('navigation', { name: 'Screens' });
        const labels = await nav.getByRole('link').allInnerTexts();
        for (const label of labels) {
          await run(`${name}: ${label}`, async () => {
            await nav.getByRole('link', { name: label, exact: true }).click();
            await screenReady(page, label);
            await page.waitForTimeout(200);
            const id = label.toLowerCase().replace(/[^a-z]+/g, '-');
            await shoot(page, path.join(SHOTS, 'realworld', name, `${id}.png`));
            if (label === 'Memories' && !fs.existsSync(path.join(CORPUS, name, 'tree', '.claude', 'memory'))) {
              // No auto memory in this repository: an empty folder is not a broken index.
              await page.getByTestId('health-empty').waitFor();
              if (await page.getByTestId('fix-index').isEnabled()) fail(`${name}: Fix index is offered for a folder with nothing saved`);
            }
            if (await page.getByTestId('graph-canvas').count()) {
              const q = await checkGraphLayout(page, name, fail);
              console.log(`      graph: ${q}`);
            }
            await checkAccessible(page, `${label} (${name})`, fail);
          });
        }
      } finally {
        await context?.close().catch(() => {});
        await stopServer(server);
      }
    }
    if (errors.length) {
      failed = true;
      console.error(`the page reported errors:\n  ${errors.join('\n  ')}`);
    }
  } finally {
    await browser.close().catch(() => {});
    if (failed) console.log(`kept the fixtures: ${tmp}`);
    else fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (failed) {
    process.exitCode = 1;
    console.error('\ne2e screens FAILED');
  } else {
    console.log('\ne2e screens passed' + (shots ? '; screenshots in docs/screenshots/' : ''));
  }
}

main().catch((e) => {
  console.error(`\ne2e screens FAILED: ${e.message}`);
  process.exitCode = 1;
});
