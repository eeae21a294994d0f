#!/usr/bin/env node
// End-to-end test of the web UI against the real `mneme serve`, in headless Debian Chromium
// driven by playwright-core (no Playwright test runner, no downloaded browsers).
//
//   npm run e2e                      (after `npm run build:ui` and a debug build of mneme)
//   MNEME_BIN=/path/to/mneme node e2e/run.mjs
//   E2E_KEEP=1 …                     keeps the temporary HOME and prints where it is
//   E2E_NO_SCREENSHOTS=1 …           does not rewrite docs/screenshots
//   E2E_SHOTS_DIR=/tmp/shots …       writes the screenshots there instead
//   E2E_UI_DIST=/path/to/dist …      another UI build (default: ui/dist)
//   MNEME_SERVER_BIN=/path/to/mneme-server …   the team server (default: beside the mneme binary)
//
// It builds a throwaway HOME (HOME, CLAUDE_CONFIG_DIR and MNEME_DATA_DIR all inside it) with a
// git repository (CLAUDE.md, an @include, a rule, a conditional rule, CLAUDE.local.md) and an
// auto-memory folder (MEMORY.md and topic files in both frontmatter generations), starts
// `mneme serve --port 0 --ui-dir ui/dist` on it, and checks the screens against the API, the
// CLI and the files on disk. Screenshots of every screen go to docs/screenshots/.
//
// Near the end, e2e/keyboard.mjs drives the app by keyboard alone (Tab through every screen with a
// visible ring, each screen opening with focus on its title, the memory, inbox, merge, settings and
// team-address flows with focus checked after each key).
//
// The fixture also holds a Claude Code session transcript of the repository, which the Inbox
// runs offline extraction over (review mode, keep, discard), and the model-provider settings
// talk to a stub OpenAI-compatible endpoint on 127.0.0.1 started by this script.
//
// The Team screen is checked against a real team server: `mneme-server` (cargo build -p
// mneme-team-server) on a throwaway SQLite database with a team, a lead and a grant, which the
// fixture reaches through TEAM_MEMORY_SYNC_URL; the fixture repository's `origin` is on
// github.com. Signing in stores a token in the OS keyring, so the whole run re-executes itself
// under scripts/with-keyring.sh: a private D-Bus session with a fresh, unlocked gnome-keyring
// that is thrown away afterwards (a person's own keyring is never touched). It needs the
// packages dbus, gnome-keyring and libsecret-tools (with-keyring.sh installs them as root).

import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { checkAccessible, checkFits, checkGraphLayout } from './checks.mjs';
import { keyboardPass } from './keyboard.mjs';
import { ROOT, SHOTS, failer, write, preflight, homeEnv, underKeyring, startServer, stop, api as callApi, waitFor as poll } from './harness.mjs';

const TIMEOUT = 10_000;

const fail = failer();
const api = (server, method, body) => callApi(server, method, body, fail);
const waitFor = (what, fn, timeout = TIMEOUT) => poll(what, fn, timeout, fail);

function findServerBinary(bin) {
  if (process.env.MNEME_SERVER_BIN) return path.resolve(process.env.MNEME_SERVER_BIN);
  return path.join(path.dirname(bin), 'mneme-server');
}

// ---------------------------------------------------------------- fixture

/** Every file under `dir` (none when it does not exist). */
function walkFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath ?? e.path, e.name));
}

function buildFixture(bin) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mneme-e2e-')));
  const home = path.join(tmp, 'home');
  const config = path.join(home, '.claude');
  const data = path.join(tmp, 'data');
  const repo = path.join(home, 'code', 'shop');
  // TZ is passed on so that the run can be made in another time zone.
  const env = { ...homeEnv(home, data, 'e2e'), TZ: process.env.TZ ?? 'UTC' };
  fs.mkdirSync(data, { recursive: true });
  write(path.join(config, 'CLAUDE.md'), '# My preferences\n\n- Write commit messages in the imperative mood.\n- Explain trade-offs before large refactors.\n');
  write(path.join(repo, 'CLAUDE.md'),
    '# Shop\n\nThe storefront service. Follow @docs/conventions.md for style.\n\n## Commands\n- `npm test` runs every test.\n- `npm run dev` starts the server on port 3000.\n');
  write(path.join(repo, 'docs', 'conventions.md'), '# Conventions\n\n- Prefer small pure functions.\n- Name files in kebab-case.\n');
  write(path.join(repo, '.claude', 'rules', 'testing.md'), '# Testing\n\n- Every bug fix gets a regression test.\n');
  write(path.join(repo, '.claude', 'rules', 'api.md'), '---\npaths:\n  - "src/api/**"\n---\n# API rules\n\n- Validate every request body.\n');
  write(path.join(repo, 'CLAUDE.local.md'), '- My local database runs on port 5433.\n');
  write(path.join(repo, 'src', 'api', 'orders.ts'), 'export const orders = [];\n');
  write(path.join(repo, 'packages', 'web', 'CLAUDE.md'), '# Web package\n\n- Components live in src/components.\n');
  execFileSync('git', ['init', '-q', repo], { env });
  // Team memory is shared per github.com repository.
  execFileSync('git', ['-C', repo, 'remote', 'add', 'origin', 'https://github.com/acme/shop.git'], { env });

  const ctx = JSON.parse(execFileSync(bin, ['context', '--json', '--cwd', repo], { env, encoding: 'utf8' }));
  const mem = ctx.autoMemory.dir;
  write(path.join(mem, 'MEMORY.md'),
    '- [Testing policy](testing-policy.md) — every bug fix gets a regression test\n' +
    '- [User role](user_role.md) — senior backend engineer, new to the frontend\n' +
    '- [Deploy notes](deploy-notes.md) — how we deployed before the move to CI\n');
  // Current generation: metadata.type, [[links]], an unknown key that must survive edits.
  write(path.join(mem, 'testing-policy.md'),
    '---\nname: testing-policy\ndescription: Every bug fix gets a regression test\nmetadata:\n  type: feedback\noriginSessionId: 6f1c2a9e-0b7d-4a51-9d3e-2c8f4b1a7e55\n---\n\n' +
    'When fixing a bug, first write a test that fails, then fix it.\n\n**Why:** two regressions shipped in March.\n\nSee [[user-role]] for who reviews tests.\n');
  // Older generation: top-level type.
  write(path.join(mem, 'user_role.md'),
    '---\nname: user-role\ndescription: Senior backend engineer, new to the frontend\ntype: user\n---\n\n' +
    'The user has ten years of Go and is learning React. Explain frontend choices in backend terms.\n');
  // Not indexed, and links to a memory nobody wrote yet.
  write(path.join(mem, 'api-gateway.md'),
    '---\nname: api-gateway\ndescription: The API gateway config lives in services/gateway\nmetadata:\n  type: reference\n---\n\n' +
    '- Routes: `services/gateway/routes.yaml`\n- Rate limits are set per tenant. See [[deploy-runbook]].\n');
  const day = 86_400_000;
  const now = Date.now();
  const age = (f, days) => fs.utimesSync(path.join(mem, f), new Date(now - days * day), new Date(now - days * day));
  age('user_role.md', 40);
  age('testing-policy.md', 3);
  age('api-gateway.md', 1);
  const session = buildSession(config, repo);
  const big = buildBigProject(bin, home, env);
  const orphan = buildOrphan(config, home);
  return { tmp, home, config, data, repo, mem, env, big, orphan, session };
}

// A Claude Code session in the shop, as Claude Code writes its transcript: one user prompt with
// two explicit statements (what the offline extractor keeps) and the answer. `say` appends a
// turn later, as the session goes on.
function buildSession(config, repo) {
  const id = '5b7c1d2e-3f40-4a51-8b62-7c83d94e0f15';
  const file = path.join(config, 'projects', repo.replace(/[^a-zA-Z0-9]/g, '-'), `${id}.jsonl`);
  let turn = 0;
  const say = (prompt) => {
    turn++;
    const common = (uuid, parentUuid) => ({ uuid, parentUuid, isSidechain: false, cwd: repo, sessionId: id, version: '2.1.197',
      timestamp: new Date(Date.UTC(2026, 2, 2, 10, turn)).toISOString() });
    const user = { ...common(`u${turn}`, turn === 1 ? null : `a${turn - 1}`), type: 'user', message: { role: 'user', content: prompt } };
    const answer = { ...common(`a${turn}`, `u${turn}`), type: 'assistant',
      message: { id: `msg_${turn}`, role: 'assistant', content: [{ type: 'text', text: 'Noted.' }], stop_reason: 'end_turn' } };
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.appendFileSync(file, `${JSON.stringify(user)}\n${JSON.stringify(answer)}\n`);
  };
  say('Remember that the staging database is shared with the QA team. Never run migrations on staging without telling QA first.');
  return { id, file, say };
}

// An orphaned memory folder: keyed to a worktree that no longer exists, with a transcript
// that names it, two topic files (one clashing with the shop's testing-policy.md) and an index.
function buildOrphan(config, home) {
  const gone = path.join(home, 'code', 'shop-old-worktree');
  const folder = path.join(config, 'projects', gone.replace(/[^a-zA-Z0-9]/g, '-'));
  const mem = path.join(folder, 'memory');
  write(path.join(folder, '3f2b8c1d-5e6a-4b7c-8d9e-0a1b2c3d4e5f.jsonl'),
    JSON.stringify({ type: 'user', cwd: gone, sessionId: '3f2b8c1d-5e6a-4b7c-8d9e-0a1b2c3d4e5f', message: { role: 'user', content: 'hi' } }) + '\n');
  write(path.join(mem, 'release-checklist.md'),
    '---\nname: release-checklist\ndescription: Tag, changelog, then deploy from the release branch\nmetadata:\n  type: project\n---\n\n' +
    '1. Tag the release.\n2. Update CHANGELOG.md.\n3. Deploy from the release branch.\n');
  write(path.join(mem, 'testing-policy.md'),
    '---\nname: testing-policy-worktree\ndescription: In the old worktree, integration tests ran nightly\nmetadata:\n  type: feedback\n---\n\n' +
    'Integration tests ran nightly on the old worktree.\n');
  write(path.join(mem, 'MEMORY.md'),
    '- [Release checklist](release-checklist.md) — tag, changelog, deploy from the release branch\n' +
    '- [Nightly tests](testing-policy.md) — integration tests ran nightly in the old worktree\n');
  return { gone, folder, mem };
}

// A second project with ~5,000 memories in 50 clusters, linked with [[links]] (some dangling),
// and a MEMORY.md that indexes the first entries: the Graph screen must stay fluid on it.
function buildBigProject(bin, home, env) {
  const repo = path.join(home, 'code', 'atlas');
  write(path.join(repo, 'CLAUDE.md'), '# Atlas\n\nA large monorepo with a long memory.\n');
  execFileSync('git', ['init', '-q', repo], { env });
  const mem = JSON.parse(execFileSync(bin, ['context', '--json', '--cwd', repo], { env, encoding: 'utf8' })).autoMemory.dir;
  let seed = 42;
  const rnd = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const COUNT = 4950, CLUSTERS = 50, types = ['user', 'feedback', 'project', 'reference'];
  const name = (i) => `note-${String(i).padStart(4, '0')}`;
  const index = [];
  for (let i = 0; i < COUNT; i++) {
    const c = i % CLUSTERS;
    const links = new Set();
    if (i >= CLUSTERS) links.add(name(i - CLUSTERS)); // chain inside the cluster
    if (rnd() < 0.6) links.add(name(c + CLUSTERS * Math.floor(rnd() * (COUNT / CLUSTERS))));
    if (rnd() < 0.05) links.add(name(Math.floor(rnd() * COUNT))); // across clusters
    if (i % 250 === 7) links.add(`missing-topic-${Math.floor(i / 250)}`); // dangling: a ghost node
    links.delete(name(i));
    const type = i % 23 === 0 ? null : types[c % 4];
    write(path.join(mem, `${name(i)}.md`),
      `---\nname: ${name(i)}\ndescription: Note ${i} of topic ${c}\n${type ? `metadata:\n  type: ${type}\n` : ''}---\n\n` +
      `Something learned about topic ${c}. ${[...links].map((l) => `[[${l}]]`).join(' ')}\n`);
    if (i < 150) index.push(`- [Note ${i}](${name(i)}.md) — topic ${c}`);
  }
  write(path.join(mem, 'MEMORY.md'), index.join('\n') + '\n');
  return { repo, mem, count: COUNT };
}

// A second, small home for `mneme serve --scheduler`: a project with auto dream on, two
// near-duplicate memories and five finished Claude Code sessions, so the scheduler's first
// gate check dreams; `say` ends one more turn later, which its extraction loop picks up.
function buildSchedulerFixture(bin, base) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mneme-e2e-sched-')));
  const home = path.join(tmp, 'home');
  const config = path.join(home, '.claude');
  const repo = path.join(home, 'code', 'notes');
  // The main run's keyring service and time zone; not its team server.
  const env = { ...homeEnv(home, path.join(tmp, 'data'), 'e2e'), TZ: base.env.TZ };
  write(path.join(repo, 'CLAUDE.md'), '# Notes\n');
  execFileSync('git', ['init', '-q', repo], { env });
  write(path.join(config, 'settings.json'), '{\n  "autoDreamEnabled": true\n}\n');
  const mem = JSON.parse(execFileSync(bin, ['context', '--json', '--cwd', repo], { env, encoding: 'utf8' })).autoMemory.dir;
  const topic = (name, desc, body) => `---\nname: ${name}\ndescription: ${desc}\nmetadata:\n  type: feedback\n---\n\n${body}\n`;
  write(path.join(mem, 'tabs-old.md'), topic('Prefers tabs', 'Use tabs for indentation', 'Always indent with tabs.\n**Why:** team style.'));
  write(path.join(mem, 'tabs-new.md'), topic('Tabs preference', 'Use tabs for indentation in code', 'Always indent with tabs, never spaces.\n**Why:** team style.'));
  const old = new Date(Date.now() - 3 * 86_400_000);
  fs.utimesSync(path.join(mem, 'tabs-old.md'), old, old);
  write(path.join(mem, 'MEMORY.md'), '- [Tabs](tabs-old.md) — tabs\n- [Tabs too](tabs-new.md) — tabs\n');
  const dir = path.join(config, 'projects', repo.replace(/[^a-zA-Z0-9]/g, '-'));
  const line = (id, uuid, parentUuid, message) => JSON.stringify({ type: message.role, uuid, parentUuid, isSidechain: false, cwd: repo,
    sessionId: id, version: '2.1.197', timestamp: new Date().toISOString(), message }) + '\n';
  const turn = (id, n, prompt) => line(id, `u${n}`, n === 1 ? null : `a${n - 1}`, { role: 'user', content: prompt }) +
    line(id, `a${n}`, `u${n}`, { id: `m${n}`, role: 'assistant', content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn' });
  const ids = [1, 2, 3, 4, 5].map((i) => `${String(i).repeat(8)}-1111-4111-8111-111111111111`);
  for (const id of ids) write(path.join(dir, `${id}.jsonl`), turn(id, 1, 'Tidy up the notes folder.'));
  const say = (prompt) => fs.appendFileSync(path.join(dir, `${ids[0]}.jsonl`), turn(ids[0], 2, prompt));
  return { tmp, home, config, repo, mem, env, say };
}

// ---------------------------------------------------------------- server

// The team server: a real `mneme-server` on a throwaway SQLite database, with team acme, the
// lead lena and her grant on acme/shop, made with its own admin command line.
const TEAM = { repo: 'acme/shop', user: 'lena', password: 'correct horse battery staple' };

function startTeamServer(serverBin, fx) {
  const db = `sqlite:${path.join(fx.tmp, 'team.db')}`;
  const admin = (args, input) => execFileSync(serverBin, ['--db', db, 'admin', ...args], { env: fx.env, input, encoding: 'utf8' });
  admin(['create-team', 'acme']);
  admin(['create-user', TEAM.user, '--password-stdin'], `${TEAM.password}\n`);
  admin(['grant', TEAM.user, TEAM.repo, '--lead', '--team', 'acme']);
  return new Promise((resolve, reject) => {
    const child = spawn(serverBin, ['--db', db, 'serve', '--listen', '127.0.0.1:0'], { env: fx.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    const timer = setTimeout(() => reject(new Error(`mneme-server did not start listening within 20 s.\n${err}`)), 20_000);
    child.stderr.on('data', (d) => {
      err += d;
      for (const line of err.split('\n')) {
        try {
          const log = JSON.parse(line);
          if (log.message === 'listening') {
            clearTimeout(timer);
            resolve({ child, url: `http://${log.addr}`, logs: () => err, token: () => admin(['token', TEAM.user]).trim() });
            return;
          }
        } catch { /* a partial line */ }
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`mneme-server exited with ${code} before listening.\n${err}`));
    });
  });
}

/** What the team server holds for the repository, read the way Claude Code reads it. */
async function teamEntries(team) {
  const res = await fetch(`${team.url}/api/claude_code/team_memory?repo=${encodeURIComponent(TEAM.repo)}`, {
    headers: { Authorization: `Bearer ${team.token()}` },
  });
  if (res.status === 404) return {};
  if (!res.ok) fail(`the team server answered ${res.status}`);
  return (await res.json()).content.entries;
}

/** The secret Secret Service holds for an account of this run's keyring service, if any. */
function keyringLookup(fx, account) {
  try {
    return execFileSync('secret-tool', ['lookup', 'service', fx.env.MNEME_KEYRING_SERVICE, 'username', account], { env: fx.env, encoding: 'utf8' });
  } catch {
    return null;
  }
}

// An OpenAI-compatible model endpoint on 127.0.0.1 for the provider settings: it answers chat
// completions with "ok", or with the error `fail` is set to (401 = a refused key).
function startModelStub() {
  const stub = { fail: 0, requests: [] };
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      stub.requests.push({ path: req.url, auth: req.headers.authorization ?? null, body: body ? JSON.parse(body) : null });
      res.setHeader('Content-Type', 'application/json');
      if (stub.fail) {
        res.statusCode = stub.fail;
        res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }));
        return;
      }
      res.end(JSON.stringify({ id: 'chatcmpl-e2e', object: 'chat.completion', created: 0, model: 'e2e-model',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }));
    });
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => {
    stub.url = `http://127.0.0.1:${srv.address().port}/v1`;
    stub.close = () => new Promise((r) => srv.close(() => r()));
    resolve(stub);
  }));
}

// ---------------------------------------------------------------- checks

function firstDiff(a, b) {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `first difference at character ${i}: ${JSON.stringify(a.slice(i, i + 60))} vs ${JSON.stringify(b.slice(i, i + 60))}`;
}

async function main() {
  if (!process.env.MNEME_E2E_KEYRING) {
    process.exitCode = await underKeyring(import.meta.url);
    return;
  }
  const { bin, launch } = preflight(fail);
  const serverBin = findServerBinary(bin);
  if (!fs.existsSync(serverBin)) fail(`no mneme-server binary at ${serverBin}. Build it with \`cargo build -p mneme-team-server\` or set MNEME_SERVER_BIN.`);
  if (!process.env.DBUS_SESSION_BUS_ADDRESS) fail('no D-Bus session: run this script directly (it starts one with scripts/with-keyring.sh)');

  const fx = buildFixture(bin);
  const shots = !process.env.E2E_NO_SCREENSHOTS;
  if (shots) fs.mkdirSync(SHOTS, { recursive: true });
  console.log(`fixture: ${fx.tmp}\nbinary:  ${bin}`);

  const team = await startTeamServer(serverBin, fx);
  fx.env.TEAM_MEMORY_SYNC_URL = team.url;
  console.log(`team:    ${team.url}`);
  const server = await startServer(bin, fx.repo, fx.env).catch((e) => {
    team.child.kill('SIGTERM');
    throw e;
  });
  console.log(`server:  ${server.url.replace(/token=.*/, 'token=…')}`);
  const model = await startModelStub();
  const browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const pageErrors = [];
  let current = 'start';
  /** An API path a step expects to answer 404 (a file it removed on purpose). */
  let expectedMissing = null;
  /** An API path a step expects to answer 422 (a restore the team's secrets policy refuses). */
  let expectedRefused = null;
  page.on('pageerror', (e) => pageErrors.push(`${e.message} (during "${current}")`));
  // Only errors the run causes on purpose pass: the live-update stream (`/api/events`) breaking
  // off when a test stops the server, and the 400/409 answers the error checks ask for. Anything
  // else in the console fails the run.
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const from = m.location()?.url ?? '';
    const at = new URL(from, 'http://x').pathname;
    if (at === '/api/events' || /status of 40[09]/.test(m.text()) || (at === expectedMissing && /status of 404/.test(m.text()))
      || (at === expectedRefused && /status of 422/.test(m.text()))) return;
    pageErrors.push(`${m.text()} (${from}, during "${current}")`);
  });
  // What an API call that failed asked for: the console names only the URL.
  page.on('response', (r) => {
    const at = new URL(r.url()).pathname;
    if (r.status() >= 404 && at.startsWith('/api/') && r.status() !== 409 && !(r.status() === 404 && at === expectedMissing)
      && !(r.status() === 422 && at === expectedRefused)) {
      pageErrors.push(`  ${r.status()} for ${r.request().method()} ${at} ${r.request().postData() ?? ''} (during "${current}")`);
    }
  });

  // A step's page errors fail that step, not the last one (which is where they used to be found).
  const step = async (name, fn) => {
    current = name;
    const t = Date.now();
    const errorsBefore = pageErrors.length;
    await fn();
    if (pageErrors.length > errorsBefore) fail(`the page reported errors:\n  ${pageErrors.slice(errorsBefore).join('\n  ')}`);
    console.log(`  ok  ${name} (${Date.now() - t} ms)`);
  };
  // Every screen the run screenshots is also checked with axe-core's WCAG 2 A/AA rules.
  const shot = async (name, top = true) => {
    await checkAccessible(page, `the screen of ${name}.png`, fail);
    if (!shots) return;
    if (top) await page.evaluate(() => window.scrollTo(0, 0));
    await page.waitForTimeout(150);
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
  };
  const nav = async (label) => {
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: label, exact: true }).click();
    // A new screen opens at its top with the focus on its title (focusing it must not scroll
    // the title up under the folder bar).
    await waitFor(`${label} to open at its top, its title focused`, async () =>
      page.evaluate(() => !!document.activeElement?.matches('#main .screen-head h1') && window.scrollY === 0));
  };

  try {
    await step('page loads on Projects (not the server\'s folder), token leaves the address bar; the shop opens from its row', async () => {
      await page.goto(server.url);
      // Nothing was opened before in this home: the Projects list, not the folder serve started in.
      await page.locator('table.projects').waitFor();
      if (await page.locator('#folder').inputValue()) fail('the folder box names a folder before any was opened');
      if (page.url().includes('token=')) fail(`the token is still in the address bar: ${page.url()}`);
      await waitFor('the live indicator', async () => (await page.getByTestId('live-status').getAttribute('class'))?.split(' ').includes('state-live'));
      await page.locator('table.projects tr', { hasText: 'code/shop' }).filter({ hasNotText: 'worktree' })
        .getByRole('button', { name: 'What Claude sees' }).click();
      await page.getByTestId('context-block').waitFor();
      const home = await api(server, 'home', {});
      if (home.lastProject !== fx.repo) fail(`opening the shop did not make it the project opened last: ${home.lastProject}`);
    });

    await step('What Claude sees: block equals the context API and `mneme context`', async () => {
      const shown = await page.getByTestId('context-block').textContent();
      const view = await api(server, 'context', { cwd: fx.repo });
      const cli = execFileSync(bin, ['context', '--cwd', fx.repo], { env: fx.env, encoding: 'utf8' });
      if (shown !== view.block) fail(`the block on screen differs from the context API's block; ${firstDiff(shown, view.block)}`);
      if (cli !== view.block) fail(`\`mneme context\` differs from the context API's block; ${firstDiff(cli, view.block)}`);
      for (const f of ['CLAUDE.md', 'conventions.md', 'testing.md', 'CLAUDE.local.md']) {
        if (!(await page.locator('.file-row .fname', { hasText: f }).count())) fail(`${f} is not listed on What Claude sees`);
      }
      if (!(await page.locator('.file-row .incl').count())) fail('the @include is not nested under its parent');
      const later = page.locator('section.later');
      if (!(await later.locator('code', { hasText: '.claude/rules/api.md' }).count()) || !(await later.locator('code.glob', { hasText: 'src/api' }).count()))
        fail('the conditional rule and its glob are not shown under "Attached later"');
      if (!(await later.getByText('packages/web/CLAUDE.md').count())) fail('the sub-folder CLAUDE.md is not shown under "Attached later"');
      const status = await page.getByTestId('automem-status').textContent();
      if (!/Auto memory is on/.test(status ?? '')) fail(`auto-memory status line says: ${status}`);
      await shot('what-claude-sees');
    });

    await step("What Claude sees: an index a host hands over (CLAUDE_COWORK_MEMORY_INDEX_CONTENT) stands in for MEMORY.md, and says so", async () => {
      const settings = path.join(fx.config, 'settings.json');
      const before = fs.existsSync(settings) ? fs.readFileSync(settings, 'utf8') : null;
      const json = before ? JSON.parse(before) : {};
      fs.writeFileSync(settings, JSON.stringify({ ...json, env: { ...(json.env ?? {}), CLAUDE_COWORK_MEMORY_INDEX_CONTENT: '- HOST-GIVEN-INDEX' } }, null, 2));
      const note = page.getByTestId('index-note');
      try {
        // The watcher sees the settings file change and the screen follows.
        await note.waitFor({ timeout: 15_000 });
        if (!/CLAUDE_COWORK_MEMORY_INDEX_CONTENT/.test((await note.textContent()) ?? '')) fail(`the index note says: ${await note.textContent()}`);
        const view = await api(server, 'context', { cwd: fx.repo });
        if (!view.block.includes('- HOST-GIVEN-INDEX')) fail('the context block does not carry the given index');
      } finally {
        if (before === null) fs.rmSync(settings);
        else fs.writeFileSync(settings, before);
      }
      await note.waitFor({ state: 'detached', timeout: 15_000 });
    });

    await step('What Claude sees: edit a file in place; a change on disk meanwhile asks Reload/Overwrite/Compare', async () => {
      const file = path.join(fx.repo, 'CLAUDE.md');
      await page.locator(`.file-row[data-path="${file}"]`).click();
      const editor = page.getByRole('region', { name: `Edit ${file}` });
      const ta = editor.getByRole('textbox', { name: 'File text' });
      await ta.waitFor();
      const mine = (await ta.inputValue()) + '- Never commit directly to main.\n';
      await ta.fill(mine);
      fs.appendFileSync(file, '- Someone else wrote this line.\n');
      await editor.getByRole('button', { name: 'Save' }).click();
      await editor.getByRole('alertdialog').waitFor();
      // It takes focus as it appears, so it is read out before its choices.
      await waitFor('focus on the conflict', async () => editor.getByRole('alertdialog').evaluate((d) => d === document.activeElement));
      await editor.getByRole('button', { name: 'Compare' }).click();
      await editor.locator('.dl.add', { hasText: 'Never commit directly to main.' }).waitFor();
      await editor.scrollIntoViewIfNeeded();
      await page.evaluate(() => window.scrollBy(0, -120));
      await shot('what-claude-sees-conflict', false);
      await editor.getByRole('button', { name: /Overwrite/ }).click();
      await editor.getByText('Saved.').waitFor();
      if (fs.readFileSync(file, 'utf8') !== mine) fail('Overwrite did not write the edited text to CLAUDE.md');
      await waitFor('the block to show the saved line', async () =>
        (await page.getByTestId('context-block').textContent())?.includes('Never commit directly to main.'));
      await editor.getByRole('button', { name: 'Close' }).click();
    });

    await step('What Claude sees: a conflict with a 4,500-line change draws 2,000 lines until asked for more', async () => {
      const file = path.join(fx.repo, 'CLAUDE.md');
      const before = fs.readFileSync(file, 'utf8');
      await page.locator(`.file-row[data-path="${file}"]`).click();
      const editor = page.getByRole('region', { name: `Edit ${file}` });
      const ta = editor.getByRole('textbox', { name: 'File text' });
      await ta.waitFor();
      // Under load Save was found disabled when clicked: Save is off while the file is read, and a
      // late live event (the previous step's restore of CLAUDE.md) can make an unedited editor read
      // it again. Type once the box holds the file as read, click once Save is enabled.
      await waitFor('the editor to hold CLAUDE.md as read from disk', async () => (await ta.inputValue()) === before);
      await ta.fill(before + '- One more line of mine.\n');
      fs.writeFileSync(file, before + Array.from({ length: 4_500 }, (_, i) => `- generated line ${i}\n`).join(''));
      const save = editor.getByRole('button', { name: 'Save' });
      await waitFor('Save to be enabled by the typed line', () => save.isEnabled());
      await save.click();
      await editor.getByRole('alertdialog').waitFor();
      await editor.getByRole('button', { name: 'Compare' }).click();
      const more = editor.getByTestId('diff-more');
      await more.waitFor();
      const drawn = await editor.locator('[data-testid="diff-view"] .dl:not([data-testid="diff-more"])').count();
      if (drawn !== 2000) fail(`the diff drew ${drawn} rows before asked for more, not 2,000`);
      const says = (await more.textContent()) ?? '';
      const total = before.split('\n').length - 1 + 4_501;
      if (!says.includes((total - 2000).toLocaleString('en-US'))) fail(`the diff does not say how many lines are left: ${says}`);
      await more.getByRole('button').click();
      await more.waitFor({ state: 'detached' });
      const all = await editor.locator('[data-testid="diff-view"] .dl').count();
      if (all !== total) fail(`after Show more the diff drew ${all} rows, not all ${total}`);
      await editor.getByRole('button', { name: 'Reload' }).click();
      fs.writeFileSync(file, before);
      await waitFor('the editor to show the file again', async () => (await ta.inputValue()) === before);
      await editor.getByRole('button', { name: 'Close' }).click();
    });

    await step('What Claude sees: typing survives the file being rewritten in place (its row gone for a moment)', async () => {
      const file = path.join(fx.repo, 'CLAUDE.md');
      const before = fs.readFileSync(file, 'utf8');
      const row = page.locator(`.file-row[data-path="${file}"]`);
      await row.click();
      const editor = page.getByRole('region', { name: `Edit ${file}` });
      const ta = editor.getByRole('textbox', { name: 'File text' });
      await ta.waitFor();
      const mine = before + '- Typed before the file was rewritten.\n';
      await ta.fill(mine);
      // Emptied on disk (as a write in place does first): an empty CLAUDE.md is skipped, so its
      // row, and the editor under it, leave the page.
      fs.writeFileSync(file, '');
      await row.waitFor({ state: 'detached' });
      fs.writeFileSync(file, before + '- Written by someone else.\n');
      await row.waitFor();
      if ((await ta.inputValue()) !== mine) fail('the text typed before the row left the page was lost');
      await editor.getByText('Unsaved changes').waitFor();
      await editor.getByRole('button', { name: 'Save' }).click();
      await editor.getByRole('alertdialog').waitFor();
      await editor.getByRole('button', { name: 'Reload' }).click();
      await waitFor('the editor to show the file on disk', async () => (await ta.inputValue()).includes('Written by someone else.'));
      fs.writeFileSync(file, before);
      await waitFor('the editor to show the file again', async () => (await ta.inputValue()) === before);
      await editor.getByRole('button', { name: 'Close' }).click();
    });

    await step('What Claude sees: a file that is not UTF-8 is shown read-only and says how to convert it', async () => {
      const file = path.join(fx.repo, '.claude', 'rules', 'legacy-latin1.md');
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, Buffer.from('Caf\xe9 au lait is the team drink.\n', 'latin1'));
      try {
        const row = page.locator(`.file-row[data-path="${file}"]`);
        await row.click();
        const editor = page.getByRole('region', { name: `Edit ${file}` });
        await editor.getByTestId('file-not-utf8').waitFor();
        const text = await editor.getByTestId('file-not-utf8').textContent();
        if (!text.includes('not valid UTF-8') || !text.includes('iconv')) fail(`the not-UTF-8 banner says: ${text}`);
        // The engine's word on this file (which byte, on which line) and its command, apart, naming it.
        if (!text.includes('byte 0xE9 on line 1')) fail(`the not-UTF-8 banner does not say which byte: ${text}`);
        const cmd = ((await editor.getByTestId('problem-command').locator('code').textContent()) ?? '').trim();
        if (!/^cd \S.* && iconv -f WINDOWS-1252 -t UTF-8 legacy-latin1\.md > legacy-latin1\.md\.new$/.test(cmd)) fail(`the file editor's command reads "${cmd}"`);
        const box = editor.getByRole('textbox', { name: 'File text' });
        if (!(await box.inputValue()).includes('Caf\ufffd au lait')) fail('the unreadable byte is not shown as U+FFFD');
        // Shown, never saved back: saving would write U+FFFD over the byte for good.
        if (!(await box.evaluate((el) => el.readOnly))) fail('a file that is not UTF-8 opens for editing');
        await box.focus();
        await page.keyboard.type('typed');
        if ((await box.inputValue()).includes('typed') || (await editor.getByRole('button', { name: 'Save' }).isEnabled())) {
          fail('a file that is not UTF-8 takes typing and offers Save');
        }
        await editor.getByRole('button', { name: 'Close' }).click();
      } finally {
        fs.rmSync(file);
      }
    });

    await step('What Claude sees: a save refused because the file became not UTF-8 shows its command apart, to copy', async () => {
      // Opened as UTF-8 and edited, then rewritten as Windows-1252 by another program: Overwrite
      // is refused (saving would write U+FFFD over its bytes), and the error banner sets the
      // engine's command apart, naming this file, with a Copy button, between two whole sentences.
      const file = path.join(fx.repo, '.claude', 'rules', 'later-latin1.md');
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, 'Cafe au lait is the team drink.\n');
      try {
        const row = page.locator(`.file-row[data-path="${file}"]`);
        await row.click();
        const editor = page.getByRole('region', { name: `Edit ${file}` });
        const ta = editor.getByRole('textbox', { name: 'File text' });
        await ta.waitFor();
        await ta.fill('Cafe au lait is the team drink. Mine.\n');
        const bytes = Buffer.from('Caf\xe9 au lait is the team drink.\n', 'latin1');
        fs.writeFileSync(file, bytes);
        await editor.getByRole('button', { name: 'Save' }).click();
        await editor.getByRole('alertdialog').waitFor();
        await editor.getByRole('button', { name: /^Overwrite/ }).click();
        const banner = editor.locator('.banner.error');
        const cmd = banner.getByTestId('problem-command');
        await cmd.waitFor();
        const shown = ((await cmd.locator('code').textContent()) ?? '').trim();
        if (!/^cd \S.* && iconv -f WINDOWS-1252 -t UTF-8 later-latin1\.md > later-latin1\.md\.new$/.test(shown)) fail(`the error banner's command reads "${shown}"`);
        const said = ((await banner.textContent()) ?? '').replace(/\s+/g, ' ');
        if (!said.includes('is not UTF-8 text: byte 0xE9 on line 1') || !said.includes('Then move later-latin1.md.new over later-latin1.md and open it again.')) fail(`the error banner says: ${said}`);
        if (said.includes('`')) fail(`the error banner shows backticks: ${said}`);
        await checkAccessible(page, 'the error banner with a command', fail);
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(server.url).origin });
        await cmd.getByRole('button', { name: /^Copy the command/ }).click();
        await cmd.getByRole('button', { name: /^Copy the command/ }).getByText('Copied').waitFor();
        const pasted = await page.evaluate(() => navigator.clipboard.readText());
        if (pasted !== shown) fail(`Copy put "${pasted}" on the clipboard`);
        execFileSync('sh', ['-c', shown], { env: fx.env, cwd: os.tmpdir() });
        if (fs.readFileSync(`${file}.new`, 'utf8') !== bytes.toString('latin1')) fail('the command the error banner shows did not convert the file');
        if (!fs.readFileSync(file).equals(bytes)) fail('the refused save changed the file');
        await banner.getByRole('button', { name: 'Dismiss' }).click();
        await editor.getByRole('button', { name: 'Close' }).click();
      } finally {
        fs.rmSync(file, { force: true });
        fs.rmSync(`${file}.new`, { force: true });
      }
    });

    await step('Projects lists the fixture project', async () => {
      await nav('Projects');
      await page.locator('table.projects').getByText('shop').first().waitFor();
      // A plain name for MEMORY.md's column, with a tooltip saying what it is (not "Index").
      const head = page.getByTestId('projects-index-head');
      if ((await head.textContent())?.trim() !== 'Contents list') fail(`the MEMORY.md column is headed "${await head.textContent()}"`);
      const headHint = await head.evaluate((el) => document.getElementById(el.getAttribute('aria-describedby') ?? '')?.textContent ?? '');
      if (!/MEMORY\.md.*start of every session/.test(headHint)) fail(`the MEMORY.md column's explanation reads "${headHint}"`);
      if (await page.locator('table.projects th', { hasText: /^Index$/ }).count()) fail('the Projects table still has a column called "Index"');
      await shot('projects');
    });

    await step('Memories: list newest first, both frontmatter generations', async () => {
      await nav('Memories');
      const list = page.getByTestId('memory-list');
      await list.locator('[data-relpath="user_role.md"]').waitFor();
      const order = await list.locator('[data-relpath]').evaluateAll((els) => els.map((e) => e.getAttribute('data-relpath')));
      if (order.join(',') !== 'api-gateway.md,testing-policy.md,user_role.md') fail(`memories are not newest first: ${order.join(', ')}`);
      if (!(await list.locator('[data-relpath="user_role.md"] .badge.type-user').count())) fail('the older generation (top-level type:) lost its type');
      if (!(await list.locator('[data-relpath="testing-policy.md"] .badge.type-feedback').count())) fail('the current generation (metadata.type) lost its type');
      // A badge with an explanation ("unindexed") sits on the row's first line like the type badge,
      // so the row's first line is as tall as in a row without one and its description is not cut
      // off (the explanation's term took the small-print class's top margin and pushed it down).
      const tops = await list.locator('[data-relpath] .mem-top').evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().height)));
      if (Math.max(...tops) - Math.min(...tops) > 1) fail(`the memory rows' first lines are ${tops.join(', ')} px tall`);
    });

    await step('Memories: edit the description in the form, save, the file on disk changes', async () => {
      await page.locator('[data-relpath="testing-policy.md"]').click();
      const desc = page.getByTestId('memory-description');
      await desc.waitFor();
      if ((await desc.inputValue()) !== 'Every bug fix gets a regression test') fail(`the form shows description ${await desc.inputValue()}`);
      await desc.fill('Every bug fix ships with a failing-first regression test');
      await page.getByTestId('save-memory').click();
      await page.getByTestId('memory-editor').getByText('Saved.').waitFor();
      const text = fs.readFileSync(path.join(fx.mem, 'testing-policy.md'), 'utf8');
      if (!text.includes('description: Every bug fix ships with a failing-first regression test\n')) fail(`the description did not reach the file:\n${text}`);
      if (!text.includes('originSessionId: 6f1c2a9e-0b7d-4a51-9d3e-2c8f4b1a7e55')) fail('saving dropped the unknown key originSessionId');
      if (!text.includes('metadata:\n  type: feedback')) fail('saving changed the frontmatter generation');
      // Its index line says the same in other words (a lower-case "every"): a hand-written
      // hook is the user's, so it stays.
      if (!fs.readFileSync(path.join(fx.mem, 'MEMORY.md'), 'utf8').includes('(testing-policy.md) — every bug fix gets a regression test\n')) fail('saving rewrote an index line written in its own words');
      await shot('memories');
    });

    await step('Memories: fix the index health, undo it, fix it again', async () => {
      const original = fs.readFileSync(path.join(fx.mem, 'MEMORY.md'), 'utf8');
      await page.getByTestId('health-issues').waitFor();
      // The fix drops the line of a missing file, which may be the only copy of what it
      // says: Undo puts the index back byte for byte.
      await page.getByTestId('fix-index').click();
      await page.getByTestId('fix-result').waitFor();
      await page.getByTestId('health-ok').waitFor();
      await page.getByTestId('undo-fix').click();
      await page.getByTestId('health-issues').waitFor();
      if (fs.readFileSync(path.join(fx.mem, 'MEMORY.md'), 'utf8') !== original) fail('Undo did not put the index back as it was');
      if (await page.getByTestId('undo-fix').count()) fail('Undo is still offered after undoing');
      await page.getByTestId('fix-index').click();
      await page.getByTestId('health-ok').waitFor();
      const index = fs.readFileSync(path.join(fx.mem, 'MEMORY.md'), 'utf8');
      if (!index.includes('api-gateway.md')) fail(`Fix index did not add the unindexed file:\n${index}`);
      if (index.includes('deploy-notes.md')) fail(`Fix index kept the line pointing at a missing file:\n${index}`);
      const h = await api(server, 'health', { cwd: fx.repo });
      if (h.unindexed.length || h.index.missingTargets.length) fail(`health still reports problems: ${JSON.stringify(h)}`);
      await shot('memories-health-fixed');
    });

    await step('Memories: long health lists show five until asked; HTML comments do not count', async () => {
      const file = path.join(fx.mem, 'MEMORY.md');
      const before = fs.readFileSync(file, 'utf8');
      // 210 comment lines push the raw file past 200 lines; Claude Code strips them first.
      const comment = `<!--\n${'A note for whoever edits this index, not for Claude.\n'.repeat(210)}-->\n`;
      const long = Array.from({ length: 8 }, (_, i) => `Note ${i + 1}: ${'detail that belongs in a topic file, not in the index; '.repeat(5)}`);
      write(file, comment + before + long.join('\n') + '\n');
      await nav('Projects');
      await nav('Memories');
      const health = page.getByTestId('health');
      // Nine entries (eight long lines, the dangling link) are more than the panel opens by
      // itself: it starts folded, its counts in one line, and the memory list stays in view.
      const summary = health.getByTestId('health-summary');
      await summary.waitFor();
      const counts = (await summary.textContent()) ?? '';
      if (!counts.includes('8 long index lines') || !/links? to (a memory|memories) not written yet/.test(counts)) fail(`the folded health panel reads "${counts}"`);
      if (await health.locator('.issues').count()) fail('a health panel of nine entries opened by itself, pushing the memories down');
      const listTop = (await page.getByTestId('memory-list').boundingBox())?.y ?? Infinity;
      if (listTop > 800 - 100) fail(`the memory list starts at ${listTop} px, below the fold of an 800 px window`);
      const details = health.getByTestId('health-details');
      await details.click();
      await health.getByTestId('health-details').getByText('Hide details').waitFor();
      if (await health.getByTestId('health-summary').count()) fail('the one-line counts stay once the lists are open');
      const items = health.locator('.issues > div', { has: page.getByRole('heading', { name: 'Long index lines' }) }).locator('li');
      await waitFor('five long lines', async () => (await items.count()) === 5);
      const lines = Number(await health.getByRole('meter', { name: 'Index lines' }).getAttribute('aria-valuenow'));
      if (lines >= 200 || lines !== before.trim().split('\n').length + 8) fail(`the meter counts ${lines} lines: it measured the comment`);
      if (await health.getByText('Claude Code cuts this index').count()) fail('an index within the caps once its comments are stripped shows as cut');
      await health.getByTestId('show-all-long').click();
      await waitFor('all eight long lines', async () => (await items.count()) === 8);
      await shot('memories-health-long-lines');
      await health.getByTestId('show-all-long').click();
      await waitFor('five long lines again', async () => (await items.count()) === 5);
      await health.getByTestId('health-details').click();
      await summary.waitFor();
      write(file, before);
      await nav('Projects');
      await nav('Memories');
      await page.getByTestId('health-ok').waitFor();
    });

    await step('Memories: delete to the trash, then restore', async () => {
      const file = path.join(fx.mem, 'user_role.md');
      const before = fs.readFileSync(file, 'utf8');
      await page.locator('[data-relpath="user_role.md"]').click();
      await page.getByTestId('memory-editor').getByRole('heading', { name: 'user-role' }).waitFor();
      await page.getByTestId('delete-memory').click();
      await page.getByTestId('deleted-note').waitFor();
      await waitFor('user_role.md to leave the list', async () => (await page.locator('[data-relpath="user_role.md"]').count()) === 0);
      if (fs.existsSync(file)) fail('Delete left user_role.md in the memory folder');
      await page.getByTestId('open-trash').click();
      await page.getByTestId('trash').getByText('user_role.md').waitFor();
      await shot('memories-trash');
      await page.getByTestId('trash').getByTestId('restore').first().click();
      await page.locator('[data-relpath="user_role.md"]').waitFor();
      if (!fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== before) fail('Restore did not bring user_role.md back unchanged');
      if (!fs.readFileSync(path.join(fx.mem, 'MEMORY.md'), 'utf8').includes('user_role.md')) fail('Restore did not bring back the index line');
    });

    await step('Memories: delete for good from the trash, after asking', async () => {
      const file = path.join(fx.mem, 'scratch-note.md');
      write(file, '---\nname: scratch-note\ndescription: A note to throw away\ntype: project\n---\n\nThrow me away.\n');
      await page.locator('[data-relpath="scratch-note.md"]').click({ timeout: 15_000 });
      await page.getByTestId('memory-editor').getByRole('heading', { name: 'scratch-note' }).waitFor();
      await page.getByTestId('delete-memory').click();
      await waitFor('scratch-note.md to leave the list', async () => (await page.locator('[data-relpath="scratch-note.md"]').count()) === 0);
      const inTrash = () => walkFiles(fx.data).filter((f) => f.endsWith('scratch-note.md'));
      if (inTrash().length !== 1) fail(`the deleted note is not in Mneme's trash: ${inTrash()}`);
      await page.getByTestId('open-trash').click();
      const row = page.getByTestId('trash').locator('li', { hasText: 'scratch-note.md' });
      await row.getByTestId('purge').click();
      await page.getByTestId('trash').getByRole('alertdialog').waitFor();
      if (inTrash().length !== 1) fail('asking to delete for good deleted before the answer');
      await shot('memories-trash-purge');
      await page.getByTestId('purge-confirm').click();
      await waitFor('scratch-note.md to leave the trash', async () => (await page.getByTestId('trash').getByText('scratch-note.md').count()) === 0);
      if (inTrash().length !== 0) fail(`delete for good left the note in Mneme's trash: ${inTrash()}`);
    });

    await step('Memories: a file written on disk appears without a reload', async () => {
      const marker = await page.evaluate(() => ((window).__e2eMarker = Math.random()));
      write(path.join(fx.mem, 'release-train.md'),
        '---\nname: release-train\ndescription: Releases leave on Tuesdays; freeze on Monday noon\nmetadata:\n  type: project\n---\n\nThe release train leaves every Tuesday.\n');
      await page.locator('[data-relpath="release-train.md"]').waitFor({ timeout: 15_000 });
      if ((await page.evaluate(() => (window).__e2eMarker)) !== marker) fail('the page reloaded instead of updating live');
    });

    await step('Memories: the preview renders off the page; one that would take marked seconds is shown as written, the window never stalls', async () => {
      await page.locator('[data-relpath="release-train.md"]').click();
      const preview = page.getByTestId('memory-preview');
      await preview.locator('p', { hasText: 'The release train leaves every Tuesday.' }).waitFor();
      // The longest the page's thread goes without running a timer, from here on.
      await page.evaluate(() => {
        const w = window;
        w.__e2eMaxGap = 0;
        let last = performance.now();
        w.__e2eGapTimer = setInterval(() => {
          const now = performance.now();
          w.__e2eMaxGap = Math.max(w.__e2eMaxGap, now - last);
          last = now;
        }, 20);
      });
      // A paragraph of `**a b* ` is quadratic for marked's emphasis matching: 56 KB of it takes
      // node ~18 s, time the page's thread would be frozen if it rendered there.
      write(path.join(fx.mem, 'slow-preview.md'),
        '---\nname: slow-preview\ndescription: A body that marked renders slowly\nmetadata:\n  type: project\n---\n\n' + '**a b* '.repeat(8000) + '\n');
      await page.locator('[data-relpath="slow-preview.md"]').click({ timeout: 15_000 });
      await preview.locator('.preview-note').waitFor({ timeout: 10_000 });
      const shown = (await preview.locator('pre.preview-raw').textContent()) ?? '';
      if (!shown.startsWith('**a b* **a b* ')) fail(`the slow body is not shown as written: ${shown.slice(0, 60)}`);
      // One link reference with a 100 KB address used 2,000 times: marked is quick, but its
      // 200 MB of HTML would freeze the page while sanitised and drawn.
      write(path.join(fx.mem, 'vast-preview.md'),
        '---\nname: vast-preview\ndescription: A body whose HTML is vast\nmetadata:\n  type: project\n---\n\n[a]: http://x/' + 'y'.repeat(100_000) + '\n\n' + '[a] '.repeat(2000) + '\n');
      await page.locator('[data-relpath="vast-preview.md"]').click({ timeout: 15_000 });
      await preview.locator('.preview-note', { hasText: 'far more HTML' }).waitFor({ timeout: 15_000 });
      const gap = await page.evaluate(() => { clearInterval((window).__e2eGapTimer); return (window).__e2eMaxGap; });
      if (gap > 1000) fail(`the page's thread stalled for ${Math.round(gap)} ms while the preview rendered`);
      // Removed while open: if its live event comes before the next memory opens, the editor asks
      // for it again and is told it is gone (the 404 the step "deleted on disk" checks on purpose).
      expectedMissing = '/api/memory';
      fs.rmSync(path.join(fx.mem, 'vast-preview.md'));
      // The next memory renders again (a fresh worker replaced the one that was stopped).
      await page.locator('[data-relpath="release-train.md"]').click();
      await preview.locator('p', { hasText: 'The release train leaves every Tuesday.' }).waitFor();
      fs.rmSync(path.join(fx.mem, 'slow-preview.md'));
      await waitFor('slow-preview.md to leave the list', async () => (await page.locator('[data-relpath="slow-preview.md"]').count()) === 0);
      // Both removals' events have come (the list dropped the later one): no re-read is left to answer.
      expectedMissing = null;
    });

    await step('Memories: a memory of over a million characters opens read-only at once, and can still be edited here', async () => {
      const lines = Array.from({ length: 12_000 }, (_, i) => `Step ${i}: check the dashboards before and after every release.`).join('\n');
      write(path.join(fx.mem, 'huge-runbook.md'),
        '---\nname: huge-runbook\ndescription: A runbook far longer than a text box handles\nmetadata:\n  type: reference\n---\n\n' + lines.repeat(2) + '\n');
      await page.locator('[data-relpath="huge-runbook.md"]').click({ timeout: 15_000 });
      await page.getByTestId('memory-large').waitFor({ timeout: 10_000 });
      const start = (await page.getByTestId('memory-large-start').textContent()) ?? '';
      if (!start.startsWith('---\nname: huge-runbook') || start.length !== 100_000) fail(`the read-only start holds ${start.length} characters`);
      if ((await page.getByTestId('memory-raw').count()) + (await page.getByLabel('Body (Markdown)').count()) !== 0) fail('a text box opened for the huge memory');
      await page.getByTestId('memory-edit-large').click();
      await page.getByLabel('Body (Markdown)').waitFor({ timeout: 20_000 });
      // Away from it before it goes, as in the step before.
      await page.locator('[data-relpath="release-train.md"]').click();
      await page.getByTestId('memory-preview').locator('p', { hasText: 'The release train leaves every Tuesday.' }).waitFor();
      fs.rmSync(path.join(fx.mem, 'huge-runbook.md'));
      await waitFor('huge-runbook.md to leave the list', async () => (await page.locator('[data-relpath="huge-runbook.md"]').count()) === 0);
    });

    await step('Memories: malformed frontmatter shows the problem and the raw text', async () => {
      write(path.join(fx.mem, 'broken.md'), '---\nname: broken\ndescription: "unclosed\ntype: project\n---\n\nBody text.\n');
      // The list's own summary flags the frontmatter: with the health report's list of problems
      // kept from the page, the row still says something is wrong, and why.
      const listed = await api(server, 'memories', { cwd: fx.repo });
      const entry = listed.find((m) => m.relPath === 'broken.md');
      if (!entry?.frontmatterProblem) fail(`the memory list does not flag broken.md: ${JSON.stringify(entry)}`);
      if (listed.some((m) => m.relPath !== 'broken.md' && m.frontmatterProblem !== null)) fail('a readable memory is flagged as broken');
      // A load the screen drops (a newer one replaces it) may end the request first: then there
      // is nothing to answer.
      await page.route('**/api/health', async (r) => {
        try {
          const res = await r.fetch();
          await r.fulfill({ response: res, json: { ...(await res.json()), problems: [] } });
        } catch {
          await r.abort().catch(() => {});
        }
      });
      try {
        await nav('Projects');
        await nav('Memories');
        const badge = page.locator('[data-relpath="broken.md"]').getByTestId('memory-problem');
        await badge.waitFor({ timeout: 15_000 });
        // The row is a button: the badge's explanation is read with it (hidden text in the badge).
        const said = (await badge.textContent()) ?? '';
        if (!said.includes(entry.frontmatterProblem)) fail(`the problem badge's explanation reads "${said}"`);
      } finally {
        await page.unroute('**/api/health');
      }
      await nav('Projects');
      await nav('Memories');
      // Its row says something is wrong before it is opened, and the health list opens it.
      await page.locator('[data-relpath="broken.md"]').getByTestId('memory-problem').waitFor({ timeout: 15_000 });
      await page.getByTestId('health-problems').getByRole('button', { name: 'broken.md', exact: true }).click();
      const probs = page.getByTestId('memory-problems');
      const raw = page.getByTestId('memory-raw');
      await raw.waitFor();
      if (!(await raw.inputValue()).includes('description: "unclosed')) fail('the raw text of the malformed memory is not shown');
      if (!/malformed frontmatter/.test((await probs.textContent()) ?? '')) fail('the frontmatter problem is not shown');
      await shot('memories-malformed');
    });

    await step('Memories: a memory deleted on disk while it is open says so', async () => {
      // The editor asks for the file again and is told it is gone: that 404 is the point here.
      expectedMissing = '/api/memory';
      try {
        fs.rmSync(path.join(fx.mem, 'broken.md'));
        await page.getByTestId('memory-gone').waitFor();
        await waitFor('broken.md to leave the list', async () => (await page.locator('[data-relpath="broken.md"]').count()) === 0);
      } finally {
        expectedMissing = null;
      }
    });

    await step('Memories: a memory that is not UTF-8 is shown read-only and says how to convert it', async () => {
      const file = path.join(fx.mem, 'cafe-latin1.md');
      const bytes = Buffer.from('---\nname: cafe-latin1\ndescription: The team drink\nmetadata:\n  type: user\n---\n\nCaf\xe9 au lait every day.\n', 'latin1');
      fs.writeFileSync(file, bytes);
      try {
        // The Health card lists it across the card's whole width (not in one narrow column of the
        // lists' grid), its command on a line of its own, naming this file: run as shown, by a
        // real shell from anywhere, it converts the file.
        const health = page.getByTestId('health');
        const item = page.getByTestId('health-problems').locator('li', { hasText: 'cafe-latin1.md' });
        if ((await health.getByTestId('health-details').getAttribute('aria-expanded')) === 'false') await health.getByTestId('health-details').click();
        await item.waitFor({ timeout: 15_000 });
        const [listW, gridW] = await page.getByTestId('health-problems').evaluate((ul) => [ul.getBoundingClientRect().width, ul.closest('.issues').getBoundingClientRect().width]);
        if (listW < gridW * 0.95) fail(`the files with a problem take ${listW} px of the ${gridW} px the health lists have`);
        const shown = ((await item.getByTestId('problem-command').locator('code').textContent()) ?? '').trim();
        if (!/^cd \S.* && iconv -f WINDOWS-1252 -t UTF-8 cafe-latin1\.md > cafe-latin1\.md\.new$/.test(shown)) fail(`the Health card's command reads "${shown}"`);
        execFileSync('sh', ['-c', shown], { env: fx.env, cwd: os.tmpdir() });
        if (fs.readFileSync(`${file}.new`, 'utf8') !== bytes.toString('latin1')) fail('the command the Health card shows did not convert the file');
        fs.rmSync(`${file}.new`);
        // Two whole sentences around the command: the text before it ends asking to run it, the text
        // after it starts a sentence of its own naming the file (it once began ", then move …").
        const [before, after] = await item.locator('.problem-text').evaluate((el) => {
          const cmd = el.querySelector('[data-testid="problem-command"]');
          const text = (nodes) => nodes.filter((n) => n.nodeType !== Node.COMMENT_NODE).map((n) => n.textContent).join('').trim();
          const kids = [...el.childNodes];
          return [text(kids.slice(0, kids.indexOf(cmd))), text(kids.slice(kids.indexOf(cmd) + 1))];
        });
        if (!/run this in a terminal:$/.test(before)) fail(`the Health card's text before the command reads "${before}"`);
        if (!/^Then move cafe-latin1\.md\.new over cafe-latin1\.md and open it again\./.test(after)) fail(`the Health card's text after the command reads "${after}"`);
        await page.locator('[data-relpath="cafe-latin1.md"]').click({ timeout: 15_000 });
        const banner = page.getByTestId('memory-not-utf8');
        await banner.waitFor();
        const said = (await banner.textContent()) ?? '';
        if (!said.includes('not valid UTF-8') || !said.includes('iconv') || !said.includes('byte 0xE9 on line 8')) fail(`the not-UTF-8 banner says: ${said}`);
        // The same command in the editor's banner, and its Copy puts exactly it on the clipboard.
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(server.url).origin });
        const cmd = banner.getByTestId('problem-command');
        if (((await cmd.locator('code').textContent()) ?? '').trim() !== shown) fail(`the editor's command reads "${await cmd.locator('code').textContent()}", the Health card's "${shown}"`);
        await cmd.getByRole('button', { name: /^Copy the command/ }).click();
        await cmd.getByRole('button', { name: /^Copy the command/ }).getByText('Copied').waitFor();
        const pasted = await page.evaluate(() => navigator.clipboard.readText());
        if (pasted !== shown) fail(`Copy put "${pasted}" on the clipboard`);
        // A window that may not use the clipboard either way: Copy says so and what to do, rather
        // than nothing happening.
        await page.evaluate(() => {
          navigator.clipboard.writeText = () => Promise.reject(new DOMException('denied', 'NotAllowedError'));
          document.execCommand = () => false;
        });
        try {
          await cmd.getByRole('button', { name: /^Copy the command/ }).click();
          const said = (await banner.getByTestId('copy-failed').textContent()) ?? '';
          if (!/Select the text and copy it by hand/.test(said)) fail(`a Copy that failed says "${said}"`);
        } finally {
          await page.evaluate(() => {
            delete navigator.clipboard.writeText;
            delete document.execCommand;
          });
        }
        const raw = page.getByTestId('memory-raw');
        if (!(await raw.inputValue()).includes('Caf\ufffd au lait')) fail('the unreadable byte is not shown as U+FFFD');
        // Shown, never saved back: saving would write U+FFFD over the byte for good.
        const save = page.getByTestId('save-memory');
        for (const box of [raw, null]) {
          const target = box ?? (await page.getByRole('tab', { name: 'Form' }).click(), page.getByLabel('Body (Markdown)'));
          if (!(await target.evaluate((el) => el.readOnly))) fail('a memory that is not UTF-8 opens for editing');
          await target.focus();
          await page.keyboard.type('typed');
          if ((await target.inputValue()).includes('typed') || (await save.isEnabled())) fail('a memory that is not UTF-8 takes typing and offers Save');
        }
        await page.keyboard.press('Control+s');
        if (!fs.readFileSync(file).equals(bytes)) fail('the memory that is not UTF-8 changed on disk');
        // Away from it before it goes, so the editor does not report it deleted.
        await page.locator('[data-relpath="release-train.md"]').click();
        await page.getByTestId('memory-preview').locator('p', { hasText: 'The release train leaves every Tuesday.' }).waitFor();
      } finally {
        fs.rmSync(file);
      }
      await waitFor('cafe-latin1.md to leave the list', async () => (await page.locator('[data-relpath="cafe-latin1.md"]').count()) === 0);
    });

    await step('Memories: new memory', async () => {
      await page.getByTestId('new-memory').click();
      await page.getByLabel('Name', { exact: true }).fill('code-review');
      await page.getByLabel('Description', { exact: true }).fill('Reviews need one approval from the owning team');
      await page.getByLabel('Type', { exact: true }).selectOption('project');
      await page.getByLabel('Body (Markdown)').fill('Every pull request needs an approval from the team that owns the code.');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.getByTestId('memory-editor').getByRole('heading', { name: 'code-review' }).waitFor();
      const created = fs.readdirSync(fx.mem).find((f) => f.startsWith('code-review') || f.startsWith('code_review'));
      if (!created) fail(`New memory wrote no file: ${fs.readdirSync(fx.mem).join(', ')}`);
    });

    await step('Inbox: review mode stages an offline extraction of the newest session; nothing is written before Keep', async () => {
      await nav('Inbox');
      await page.getByTestId('inbox-empty').waitFor();
      await page.getByTestId('newest-transcript').getByText('Over the newest session of this folder').waitFor();
      await page.getByTestId('mode-review').click();
      await waitFor('review mode to be saved', async () => (await api(server, 'inbox', { cwd: fx.repo })).mode === 'review');
      const filesBefore = fs.readdirSync(fx.mem).sort().join(',');
      const indexBefore = fs.readFileSync(path.join(fx.mem, 'MEMORY.md'), 'utf8');
      await page.getByTestId('extract-now').click();
      await page.getByTestId('extract-result').getByText('2 memories waiting for review in the inbox').waitFor();
      const item = page.getByTestId('inbox-item');
      await item.waitFor();
      if (fs.readdirSync(fx.mem).sort().join(',') !== filesBefore) fail('review mode wrote to the memory folder');
      if (fs.readFileSync(path.join(fx.mem, 'MEMORY.md'), 'utf8') !== indexBefore) fail('review mode changed MEMORY.md');
      const view = await api(server, 'inbox', { cwd: fx.repo });
      if (view.pending.length !== 1 || view.pending[0].files.filter((f) => !f.isIndex).length !== 2) fail(`the inbox holds ${JSON.stringify(view.pending)}`);
      // The heading counts what the banner counts: memories, not runs.
      await page.getByTestId('inbox-pending-h').getByText('2 memories waiting for review', { exact: true }).waitFor();
      await item.locator('.dl.add', { hasText: 'Never run migrations on staging without telling QA first.' }).first().waitFor();
      await item.getByText('feedback', { exact: true }).waitFor();
      await shot('inbox');
      // Keep, Promote…, Discard, each file's Edit and its diff stay inside the card in a narrow window.
      await page.setViewportSize({ width: 800, height: 800 });
      await checkFits(page, 'Inbox at 800 px with a staged run', fail);
      await page.setViewportSize({ width: 1280, height: 800 });
    });

    await step('Inbox: edit a proposal inline and keep; the memory appears in Memories with its index line', async () => {
      const indexFile = path.join(fx.mem, 'MEMORY.md');
      const indexBefore = fs.readFileSync(indexFile, 'utf8');
      const staged = (await api(server, 'inbox', { cwd: fx.repo })).pending[0];
      const memories = staged.files.filter((f) => !f.isIndex);
      const item = page.getByTestId('inbox-item');
      await item.getByTestId('inbox-edit').first().click();
      const ta = item.getByTestId('inbox-edit-text');
      const edited = (await ta.inputValue()).replace(/\n*$/, '\n') + '\nAsk in #qa before any schema change.\n';
      await ta.fill(edited);
      await item.getByTestId('inbox-edit-keep').click();
      await page.getByTestId('inbox-done').getByText('Kept with your edits').waitFor();
      if (fs.readFileSync(memories[0].path, 'utf8') !== edited) fail(`the kept file is not the edited text:\n${fs.readFileSync(memories[0].path, 'utf8')}`);
      if (fs.readFileSync(memories[1].path, 'utf8') !== memories[1].after) fail('the second memory is not what was staged');
      const index = fs.readFileSync(indexFile, 'utf8');
      if (!index.startsWith(indexBefore)) fail(`keeping rewrote existing index lines:\n${index}`);
      for (const m of memories) {
        if (!index.includes(`](${m.relPath}) — ${m.description}`)) fail(`MEMORY.md has no line for ${m.relPath}:\n${index}`);
      }
      await page.getByTestId('inbox-empty').waitFor();
      await page.getByTestId('inbox-open-memory').click();
      await page.getByTestId('memory-editor').getByRole('heading', { name: memories[0].name }).waitFor();
      const row = page.locator(`[data-relpath="${memories[0].relPath}"]`);
      await row.waitFor();
      if (await row.locator('.badge.warn', { hasText: 'unindexed' }).count()) fail('the kept memory shows as unindexed');
    });

    await step('Inbox: the next turn, staged and discarded, writes nothing', async () => {
      fx.session.say('Remember that the QA team owns the staging seed data.');
      await nav('Inbox');
      await page.getByTestId('extract-now').click();
      const item = page.getByTestId('inbox-item');
      await item.waitFor();
      const staged = (await api(server, 'inbox', { cwd: fx.repo })).pending[0];
      const file = staged.files.find((f) => !f.isIndex).path;
      await item.getByTestId('inbox-discard').click();
      await item.getByTestId('inbox-discard-confirm').click();
      await page.getByTestId('inbox-done').getByText('Discarded: nothing was written.').waitFor();
      if (fs.existsSync(file)) fail(`discard wrote ${file}`);
      await page.getByTestId('inbox-decided').getByText('discarded', { exact: true }).waitFor();
      const runs = page.getByTestId('extract-runs').locator('.run');
      if ((await runs.count()) !== 2) fail(`the run list shows ${await runs.count()} runs`);
    });

    await step('Inbox: a run over a conversation longer than one run holds says how many earlier messages it did not read, and why', async () => {
      // A newer session of the shop: a first turn, some 36 MiB of long answers, a last turn. One
      // run holds the newest 32 MiB of a transcript's entries, so the first turn is not read.
      const id = '9c1e2d3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f';
      const file = path.join(path.dirname(fx.session.file), `${id}.jsonl`);
      const long = 'The long answer goes on. '.repeat(40_000);
      const out = [];
      const turn = (n, prompt, answer) => {
        const common = (uuid, parentUuid) => ({ uuid, parentUuid, isSidechain: false, cwd: fx.repo, sessionId: id, version: '2.1.197',
          timestamp: new Date(Date.UTC(2026, 2, 3, 9, 0, n)).toISOString() });
        out.push(JSON.stringify({ ...common(`u${n}`, n === 1 ? null : `a${n - 1}`), type: 'user', message: { role: 'user', content: prompt } }) + '\n');
        out.push(JSON.stringify({ ...common(`a${n}`, `u${n}`), type: 'assistant',
          message: { id: `msg_${n}`, role: 'assistant', content: [{ type: 'text', text: answer }], stop_reason: 'end_turn' } }) + '\n');
      };
      turn(1, 'From now on, always sign commits with gpg.', 'Noted.');
      for (let n = 2; n < 38; n++) turn(n, `Go on with part ${n}.`, long);
      turn(38, 'Remember that I prefer short answers in the afternoon.', 'Noted.');
      fs.writeFileSync(file, out.join(''));
      try {
        await nav('Inbox');
        await page.getByTestId('extract-now').click();
        const said = page.getByTestId('extract-result').getByTestId('extract-left-out');
        await said.waitFor();
        const run = (await api(server, 'inbox', { cwd: fx.repo })).runs[0];
        if (!run.leftOut || run.leftOut.messages < 2 || run.leftOut.limitBytes !== 32 << 20) fail(`the run says it left out ${JSON.stringify(run.leftOut)}`);
        const want = `${run.leftOut.messages} earlier messages of this very long conversation were not read: one run reads at most the newest 32.0 MB of a session`;
        if (!(await said.innerText()).startsWith(want)) fail(`the result says: ${await said.innerText()}`);
        // The list of past runs says it too, on the newest run.
        const listed = page.getByTestId('extract-runs').locator('.run').first().getByTestId('run-left-out');
        if (!(await listed.innerText()).startsWith(want)) fail(`the run list says: ${await listed.innerText()}`);
        // What was read is staged; what was not is not.
        const staged = (await api(server, 'inbox', { cwd: fx.repo })).pending;
        const text = JSON.stringify(staged.map((i) => i.files.map((f) => f.after)));
        if (staged.length !== 1 || !text.includes('afternoon') || text.includes('gpg')) fail(`staged: ${text.slice(0, 400)}`);
        await checkFits(page, 'Inbox with a run that left messages out', fail);
        // Discarded, so the steps after this one find the inbox as before.
        const item = page.getByTestId('inbox-item');
        await item.getByTestId('inbox-discard').click();
        await item.getByTestId('inbox-discard-confirm').click();
        await page.getByTestId('inbox-done').getByText('Discarded: nothing was written.').waitFor();
      } finally {
        fs.rmSync(file, { force: true });
      }
    });

    // Every file of the memory folder, byte for byte, but the dream lock (its mtime is the
    // record of the last consolidation, which an undo keeps on purpose).
    const memSnapshot = () => {
      const out = {};
      for (const f of fs.readdirSync(fx.mem, { recursive: true })) {
        const full = path.join(fx.mem, String(f));
        if (fs.statSync(full).isFile() && path.basename(full) !== '.consolidate-lock') out[String(f)] = fs.readFileSync(full).toString('base64');
      }
      return out;
    };
    const sameTree = (a, b) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

    await step('Dreams: the gates say why no dream runs; one click turns auto dream on, the session gate blocks next', async () => {
      // A run a newer Mneme recorded with an outcome this build does not know is listed by that name.
      fs.appendFileSync(path.join(fx.data, 'runs.jsonl'),
        '{"id":"0000000000001-newer","job":"dream","target":"/m/memory","startedMs":1,"finishedMs":2,"outcome":{"status":"deferred","until":3}}\n');
      await nav('Dreams');
      const gates = page.getByTestId('dream-gates');
      await gates.getByTestId('gate-enabled').and(page.locator('[data-state="blocks"]')).waitFor();
      if (!(await gates.getByTestId('gate-enabled').textContent())?.includes('autoDreamEnabled is not set')) fail('the enabled gate does not say autoDreamEnabled is unset');
      await page.getByTestId('dream-history-empty').waitFor();
      await page.getByTestId('scheduler-not-here').waitFor();
      const newer = page.getByTestId('background-runs').locator('[data-outcome="newer"]');
      await newer.waitFor();
      if ((await newer.textContent())?.trim() !== "finished (a newer Mneme's outcome: 'deferred')") fail(`a newer Mneme's outcome shows as ${await newer.textContent()}`);
      await gates.getByTestId('dream-enable').click();
      await waitFor('settings.json to hold autoDreamEnabled', async () => {
        const p = path.join(fx.config, 'settings.json');
        return fs.existsSync(p) && JSON.parse(fs.readFileSync(p, 'utf8')).autoDreamEnabled === true;
      });
      await gates.getByTestId('gate-enabled').and(page.locator('[data-state="open"]')).waitFor();
      const want = await api(server, 'dreamStatus', { cwd: fx.repo });
      if (want.blockedBy !== 'sessions' || want.sessionsSince !== 1 || want.minSessions !== 5) fail(`dreamStatus says ${JSON.stringify(want)}`);
      await gates.getByTestId('gate-sessions').and(page.locator('[data-state="blocks"]')).waitFor();
      if ((await gates.getByTestId('gate-sessions-value').textContent())?.replace(/\s+/g, ' ') !== '1 of 5') fail(`the session gate shows ${await gates.getByTestId('gate-sessions-value').textContent()}`);
      if ((await gates.getByTestId('gate-time').getAttribute('data-state')) !== 'open') fail('the time gate is not open although the folder never dreamed');
      if (!(await gates.getByTestId('gate-lock-detail').textContent())?.includes('never been consolidated')) fail('the lock gate does not say there is no lock yet');
      if (!(await page.getByTestId('dream-blocked').textContent())?.includes('1 of 5 sessions')) fail(`the summary reads: ${await page.getByTestId('dream-blocked').textContent()}`);
    });

    let dreamId = '';
    let beforeDream = null;
    await step('Dreams: an offline dream in review mode waits; its changeset shows the merge and the dated note with diffs', async () => {
      const day = 86_400_000;
      const topic = (name, desc, type, body) => `---\nname: ${name}\ndescription: ${desc}\nmetadata:\n  type: ${type}\n---\n\n${body}\n`;
      write(path.join(fx.mem, 'tabs-old.md'), topic('Prefers tabs', 'Use tabs for indentation', 'feedback', 'Always indent with tabs.\n**Why:** team style.'));
      write(path.join(fx.mem, 'tabs-new.md'), topic('Tabs preference', 'Use tabs for indentation in code', 'feedback', 'Always indent with tabs, never spaces.\n**Why:** team style.'));
      write(path.join(fx.mem, 'deploy-freeze.md'), topic('Deploy freeze', 'The release freeze', 'project', 'Froze deploys yesterday for the release.'));
      fs.utimesSync(path.join(fx.mem, 'tabs-old.md'), new Date(Date.now() - 3 * day), new Date(Date.now() - 3 * day));
      fs.utimesSync(path.join(fx.mem, 'deploy-freeze.md'), new Date(Date.now() - 2 * day), new Date(Date.now() - 2 * day));
      await page.getByTestId('dream-mode-review').click();
      await waitFor('the dream mode to be saved', async () => (await api(server, 'dreamStatus', { cwd: fx.repo })).mode === 'review');
      beforeDream = memSnapshot();
      await page.getByTestId('dream-now').click();
      await page.getByTestId('dream-done').getByText('Dream ready for review').waitFor();
      if (!sameTree(memSnapshot(), beforeDream)) fail('a dream held for review wrote to the memory folder');
      const detail = page.getByTestId('dream-detail');
      await detail.and(page.locator('[data-state="pending"]')).waitFor();
      dreamId = await detail.getAttribute('data-id');
      const want = await api(server, 'dream', { cwd: fx.repo, id: dreamId });
      if (want.state !== 'pending' || want.provider !== 'offline') fail(`the dream API says ${want.state} by ${want.provider}`);
      const shown = await detail.getByTestId('dream-file').evaluateAll((els) => els.map((e) => `${e.getAttribute('data-action')}:${e.getAttribute('data-relpath')}`));
      if (shown.join(',') !== want.files.map((f) => `${f.action}:${f.relPath}`).join(',')) fail(`the changeset shows ${shown} but the API has ${want.files.map((f) => f.relPath)}`);
      const merged = detail.locator('[data-testid="dream-file"][data-relpath="tabs-old.md"]');
      if ((await merged.getAttribute('data-action')) !== 'merged' || !(await merged.textContent())?.includes('into tabs-new.md')) fail('tabs-old.md is not shown as merged into tabs-new.md');
      await merged.getByTestId('dream-reason').getByText('duplicate of tabs-new.md').waitFor();
      const dated = detail.locator('[data-testid="dream-file"][data-relpath="deploy-freeze.md"]');
      await dated.locator('.dl.del', { hasText: 'Froze deploys yesterday for the release.' }).waitFor();
      await dated.locator('.dl.add', { hasText: /Froze deploys on \d{4}-\d{2}-\d{2} for the release\./ }).waitFor();
      await detail.locator('[data-testid="dream-file"][data-relpath="MEMORY.md"]').waitFor();
      // What moved where, line by line: the merged-away file's lines are in the survivor, and
      // an offline dream loses nothing.
      await detail.getByTestId('dream-moved').locator('[data-testid="dream-moved-line"]', { hasText: 'Always indent with tabs.' })
        .filter({ hasText: 'tabs-new.md' }).first().waitFor({ state: 'attached' });
      if (await detail.getByTestId('dream-lost').count()) fail('an offline dream lists lines that would be lost');
      const row = page.locator(`[data-testid="dream-row"][data-id="${dreamId}"]`);
      if ((await row.getAttribute('data-state')) !== 'pending') fail('the history does not list the dream as pending');
      await page.getByTestId('dream-pending-count').getByText('1 waiting for review').waitFor();
      await shot('dreams');
      await page.evaluate(() => document.querySelector('[data-testid="dream-detail"]')?.scrollIntoView({ block: 'start' }));
      await page.evaluate(() => window.scrollBy(0, -76));
      await shot('dreams-changeset', false);
      // The gates, the history and the open changeset with its diffs fit an 800 px window.
      await page.setViewportSize({ width: 800, height: 800 });
      await checkFits(page, 'Dreams at 800 px with a changeset open', fail);
      await page.setViewportSize({ width: 1280, height: 800 });
    });

    await step('Dreams: approve writes the changeset; undo is refused after an edit, then undone anyway byte for byte', async () => {
      const detail = page.getByTestId('dream-detail');
      const want = await api(server, 'dream', { cwd: fx.repo, id: dreamId });
      await detail.getByTestId('dream-approve').click();
      await detail.and(page.locator('[data-state="applied"]')).waitFor();
      await page.getByTestId('dream-done').getByText('Approved').waitFor();
      // Approve is gone with the decision: the keyboard is on the result, not lost.
      await waitFor('focus in the result', async () => page.getByTestId('dream-done').evaluate((d) => d.contains(document.activeElement)));
      if (fs.existsSync(path.join(fx.mem, 'tabs-old.md'))) fail('approving left the merged-away tabs-old.md in place');
      for (const f of want.files.filter((f) => f.after !== null)) {
        if (fs.readFileSync(f.path, 'utf8') !== f.after) fail(`${f.relPath} is not what the dream proposed`);
      }
      if ((await api(server, 'dreamHistory', { cwd: fx.repo })).dreams[0].state !== 'applied') fail('the history does not say applied');
      // Someone edits a file the dream wrote, and an editor saves the index as Windows-1252: a
      // plain undo is refused and says which files.
      fs.appendFileSync(path.join(fx.mem, 'tabs-new.md'), 'Edited after the dream.\n');
      const cp1252 = Buffer.from('- [Tabs](tabs-new.md) \x97 caf\xe9\n', 'latin1');
      fs.writeFileSync(path.join(fx.mem, 'MEMORY.md'), cp1252);
      await detail.getByTestId('dream-undo').click();
      const conflict = page.getByTestId('dream-undo-conflict');
      const refusal = await conflict.getByText(/changed since dream/).textContent();
      if (!refusal.includes('tabs-new.md') || !refusal.includes('MEMORY.md')) fail(`the refused undo names: ${refusal}`);
      if (!fs.readFileSync(path.join(fx.mem, 'tabs-new.md'), 'utf8').endsWith('Edited after the dream.\n')) fail('a refused undo changed tabs-new.md');
      // The question takes the keyboard, on the choice that changes nothing.
      await waitFor('focus on “Keep the files as they are”', async () =>
        conflict.getByRole('button', { name: 'Keep the files as they are' }).evaluate((e) => e === document.activeElement));
      await conflict.getByTestId('dream-undo-force').click();
      await detail.and(page.locator('[data-state="undone"]')).waitFor();
      await page.getByTestId('dream-done').getByText('Undone anyway').waitFor();
      if (!sameTree(memSnapshot(), beforeDream)) fail('the memory folder is not byte-identical to before the dream after undo');
      await detail.getByTestId('dream-undo-replaced').getByText('kept here').waitFor();
      // The index was not UTF-8 text: its exact bytes are in the trash, and the view says so
      // (with the entry to restore) instead of showing the lossy text as what it held.
      const undone = await api(server, 'dream', { cwd: fx.repo, id: dreamId });
      const trashId = undone.undoReplaced.find((f) => f.relPath === 'MEMORY.md')?.keptBytes?.trashId;
      if (!trashId) fail(`the dream API keeps no bytes for MEMORY.md: ${JSON.stringify(undone.undoReplaced)}`);
      const kept = detail.locator('[data-testid="dream-undo-kept"][data-relpath="MEMORY.md"]');
      await kept.getByText(`kept in Mneme's trash as entry ${trashId}`).waitFor();
      if ((await detail.getByTestId('dream-undo-replaced').textContent()).includes('\uFFFD')) fail('the undo view shows the index\'s lossy text');
      await kept.scrollIntoViewIfNeeded();
      await shot('dreams-undo-kept', false);
      if (await detail.getByTestId('dream-undo').count()) fail('an undone dream still offers Undo');
      await page.locator(`[data-testid="dream-row"][data-id="${dreamId}"][data-state="undone"]`).waitFor();
    });

    await step('Dreams: a line appended to today\'s daily log lands in logs/YYYY/MM/YYYY-MM-DD.md', async () => {
      const log = page.getByTestId('daily-log');
      await log.getByTestId('daily-log-empty').waitFor();
      await log.getByTestId('daily-log-input').fill('I prefer squash merges for feature branches');
      await log.getByTestId('daily-log-add').click();
      await log.getByTestId('daily-log-text').getByText('I prefer squash merges for feature branches').waitFor();
      const want = await api(server, 'dailyLog', { cwd: fx.repo });
      if (!/^logs\/\d{4}\/\d{2}\/\d{4}-\d{2}-\d{2}\.md$/.test(want.relPath) || want.path !== path.join(fx.mem, want.relPath)) fail(`the log is at ${want.path}`);
      if (!/^- \d{2}:\d{2} I prefer squash merges for feature branches\n$/.test(fs.readFileSync(want.path, 'utf8'))) fail(`the log file holds ${fs.readFileSync(want.path, 'utf8')}`);
    });

    await step('Dreams: sessions that ran under another organization are said to keep auto dream away (the organization gate)', async () => {
      const theirs = '0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b';
      const configFile = path.join(fx.env.CLAUDE_CONFIG_DIR, '.claude.json');
      const saved = fs.existsSync(configFile) ? fs.readFileSync(configFile) : null;
      fs.writeFileSync(configFile, JSON.stringify({ ...(saved ? JSON.parse(saved.toString('utf8')) : {}),
        oauthAccount: { accountUuid: 'acc-e2e', organizationUuid: '5b7c9f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f' } }));
      // A sub-agent's transcript of the shop's session holding Claude Code's record (2.1.331)
      // of a session run under another organization than the one signed in.
      const sessionDir = path.join(path.dirname(fx.session.file), fx.session.id);
      const hadSessionDir = fs.existsSync(sessionDir);
      const agent = path.join(sessionDir, 'subagents', 'agent-e2e.jsonl');
      write(agent, `${JSON.stringify({ type: 'hybrid-organization', organizationUuid: theirs })}\n`);
      try {
        const want = await api(server, 'dreamStatus', { cwd: fx.repo });
        if (want.organization?.code !== 'other_hybrid_organization' || want.organization.organization !== theirs) fail(`dreamStatus says ${JSON.stringify(want.organization)}`);
        await nav('Memories');
        await nav('Dreams');
        // An earlier gate still shuts first here (the dream a moment ago): the organization gate
        // is closed, and the note under the gates says why and what to do.
        const gate = page.getByTestId('gate-organization');
        const state = want.blockedBy === 'organization' ? 'blocks' : 'closed';
        await waitFor(`the organization gate to read ${state}`, async () => (await gate.getAttribute('data-state')) === state);
        await page.getByTestId(state === 'blocks' ? 'dream-blocked' : 'dream-organization-note').getByText(theirs).waitFor();
        await shot('dreams-organization');
      } finally {
        if (hadSessionDir) fs.rmSync(agent, { force: true });
        else fs.rmSync(sessionDir, { recursive: true, force: true });
        if (saved) fs.writeFileSync(configFile, saved);
        else fs.rmSync(configFile, { force: true });
      }
      await nav('Memories');
      await nav('Dreams');
      await waitFor('the organization gate to open again', async () => (await page.getByTestId('gate-organization').getAttribute('data-state')) === 'open');
      if (await page.getByTestId('dream-organization-note').count()) fail('the organization note stays once the sessions are gone');
      // This release looks (the fixture's Claude Code is 2.1.331 or later), so the gate may say the folder is clear.
      const orgGate = page.getByTestId('gate-organization');
      if ((await orgGate.locator('.gate-value').textContent())?.trim() !== 'clear') fail(`the open organization gate reads ${await orgGate.locator('.gate-value').textContent()}`);
    });

    await step('Dreams with `mneme serve --scheduler`: the scheduler dreams by itself, its runs are listed, a turn end shows live', async () => {
      const sfx = buildSchedulerFixture(bin, fx);
      const sched = await startServer(bin, sfx.repo, sfx.env, ['--scheduler']);
      const tab = await context.newPage();
      tab.on('pageerror', (e) => pageErrors.push(e.message));
      try {
        // The first gate check runs as the scheduler starts: every gate is open, so it dreams
        // (automatic mode: applied at once) and records the run.
        await waitFor('the scheduler\'s dream', async () =>
          (await api(sched, 'backgroundRuns', { job: 'dream' })).runs.some((r) => r.outcome === 'done'), 30_000);
        if (fs.existsSync(path.join(sfx.mem, 'tabs-old.md'))) fail('the scheduler\'s dream did not merge tabs-old.md');
        // The app opens on the project opened last (never on serve's own folder).
        await api(sched, 'openProject', { cwd: sfx.repo });
        await tab.goto(`${sched.url}#/dreams`);
        await tab.getByTestId('scheduler-running').waitFor();
        const row = tab.getByTestId('dream-row').first();
        await row.and(tab.locator('[data-state="applied"]')).waitFor();
        if (!(await row.textContent())?.includes('auto')) fail('the history does not say the scheduler started the dream');
        await tab.getByTestId('background-runs').locator('[data-job="dream"]').first().getByText(/Dream: Merged 1 duplicate memory/).waitFor();
        await tab.getByTestId('gate-time').and(tab.locator('[data-state="blocks"]')).waitFor();
        // A lock stamped ahead of this clock (a folder from another machine, a clock set back)
        // reads as hours in the future, not as "-72.0 h of 24 h".
        const lock = path.join(sfx.mem, '.consolidate-lock');
        const stamped = fs.statSync(lock);
        fs.utimesSync(lock, stamped.atime, new Date(Date.now() + 72 * 3_600_000));
        await tab.reload();
        await tab.getByTestId('gate-time-future').getByText(/^7[12]\.\d h in the future$/).waitFor();
        fs.utimesSync(lock, stamped.atime, stamped.mtime);
        await tab.reload();
        await tab.getByTestId('gate-time').and(tab.locator('[data-state="blocks"]')).waitFor();
        if (await tab.getByTestId('gate-time-future').count()) fail('the time gate still reads "in the future" once the lock is stamped in the past');
        // A Claude Code turn ends: the extraction loop runs, and the page shows it as it happens.
        sfx.say('Remember that release notes are written in the past tense.');
        const live = tab.getByTestId('scheduler-events');
        await live.getByText(/^Extraction started/).waitFor({ timeout: 30_000 });
        await live.getByText(/^Extraction done: .*Saved 1 memory/).waitFor({ timeout: 30_000 });
        await tab.getByTestId('background-runs').locator('[data-job="extraction"]').getByText(/Saved 1 memory/).first().waitFor();
        if (shots) {
          await tab.evaluate(() => document.querySelector('[data-testid="background"]')?.scrollIntoView({ block: 'start' }));
          await tab.evaluate(() => window.scrollBy(0, -76));
          await tab.waitForTimeout(150);
          await tab.screenshot({ path: path.join(SHOTS, 'dreams-scheduler.png') });
        }
      } catch (e) {
        console.error(`mneme serve --scheduler stderr:\n${sched.stderr()}`);
        await tab.screenshot({ path: path.join(fx.tmp, 'scheduler-failure.png') }).catch(() => {});
        throw e;
      } finally {
        await tab.close();
        await stop(sched.child, 'SIGINT', 15_000);
        if (!process.env.E2E_KEEP) fs.rmSync(sfx.tmp, { recursive: true, force: true });
      }
    });

    await step('Recall bench: offline results for a prompt, in the API\'s order, with the exact injected text', async () => {
      await nav('Recall bench');
      await page.getByTestId('recall-intro').waitFor();
      const prompt = 'fix the bug in the staging database migration, add a test, and explain it to the user in backend terms';
      await page.getByTestId('recall-prompt').fill(prompt);
      await page.getByTestId('recall-run').click();
      const results = page.getByTestId('recall-results');
      await results.waitFor();
      const want = await api(server, 'recall', { cwd: fx.repo, prompt, provider: 'offline' });
      const shown = await results.locator('[data-relpath]').evaluateAll((els) => els.map((e) => e.getAttribute('data-relpath')));
      if (shown.join(',') !== want.selected.map((m) => m.relPath).join(',')) fail(`the bench shows ${shown} but the API recalls ${want.selected.map((m) => m.relPath)}`);
      const chosen = want.selected.map((m) => m.relPath);
      if (!chosen.includes('testing-policy.md') || !chosen.includes('user_role.md') || !chosen.some((r) => r.includes('staging'))) fail(`offline recall chose ${chosen}`);
      // user_role.md is 40 days old: Claude Code's staleness warning leads its header, on screen too.
      const old = want.selected.find((m) => m.relPath === 'user_role.md');
      if (!old.header.startsWith('This memory is 40 days old.')) fail(`user_role.md's header reads: ${old.header}`);
      await results.locator('[data-relpath="user_role.md"] .header-text', { hasText: 'This memory is 40 days old.' }).waitFor();
      await shot('recall');
      if (!(await page.getByTestId('recall-summary').textContent())?.includes('chosen by the offline ranker')) fail('the summary does not say who chose');
      const sure = await page.getByTestId('recall-confidence').textContent();
      if (typeof want.confidence !== 'number' || !sure?.includes(`about ${Math.round(want.confidence * 100)}% sure`)) fail(`the summary shows "${sure}" for the API's confidence ${want.confidence}`);
      const reasons = await results.getByTestId('recall-reason').allTextContents();
      if (reasons.join('|') !== want.selected.map((m) => m.reason).join('|')) fail(`the reasons read ${reasons}`);
      const first = results.locator('[data-relpath]').first();
      await first.getByText('Exact text Claude Code injects').click();
      if ((await first.getByTestId('recall-injected').textContent()) !== want.selected[0].injected) fail('the injected text differs from the API');
      if (!want.selected[0].injected.startsWith('<system-reminder>\nRetrieved for possible relevance')) fail('the first reminder lacks the relevance preamble');
      const release = await page.getByTestId('recall-release').textContent();
      if (!release?.includes(`Claude Code ${want.claudeCode.version}`) || !release.includes(want.claudeCode.note)) fail(`the bench names the release as "${release}"`);
      await page.getByTestId('recall-wire').locator('summary').click();
      if ((await page.getByTestId('recall-wire').locator('pre').textContent()) !== want.apiText) fail('the wire text differs from the API');
    });

    await step('Projects: merge an orphaned memory folder into the project', async () => {
      const indexFile = path.join(fx.mem, 'MEMORY.md');
      const indexBefore = fs.readFileSync(indexFile, 'utf8');
      await nav('Projects');
      const row = page.locator('table.projects tr.orphan', { hasText: 'shop-old-worktree' });
      await row.getByTestId('merge-open').click();
      const panel = page.getByTestId('merge-panel');
      await panel.getByTestId('merge-target').selectOption(fx.repo);
      await panel.getByTestId('merge-review').click();
      const plan = panel.getByTestId('merge-plan');
      await plan.waitFor();
      const text = (await plan.textContent()) ?? '';
      for (const want of ['Move 2 topic files', 'release-checklist.md', 'testing-policy-merged.md', 'Add 2 lines', 'trash']) {
        if (!text.includes(want)) fail(`the confirmation does not say "${want}": ${text}`);
      }
      if (!fs.existsSync(path.join(fx.orphan.mem, 'release-checklist.md'))) fail('Review moved files before the merge was confirmed');
      await plan.scrollIntoViewIfNeeded();
      await shot('projects-merge', false);
      await panel.getByTestId('merge-confirm').click();
      const report = page.getByTestId('merge-report');
      await report.waitFor();
      if (!/1 moved\s*·\s*1 kept/.test((await report.textContent()) ?? '')) fail(`the report reads: ${await report.textContent()}`);
      for (const f of ['release-checklist.md', 'testing-policy-merged.md']) {
        if (!fs.existsSync(path.join(fx.mem, f))) fail(`${f} did not arrive in the project's memory folder`);
      }
      if (!fs.readFileSync(path.join(fx.mem, 'testing-policy.md'), 'utf8').includes('name: testing-policy\n')) fail('the merge overwrote the project\'s testing-policy.md');
      if (fs.existsSync(fx.orphan.mem)) fail('the orphan\'s memory folder is still in place');
      const trashed = path.join(fx.data, 'trash', 'merged');
      const entries = fs.existsSync(trashed) ? fs.readdirSync(trashed) : [];
      if (entries.length !== 1 || !fs.existsSync(path.join(trashed, entries[0], 'memory', 'MEMORY.md'))) fail(`the orphan folder is not in Mneme's trash: ${entries}`);
      const index = fs.readFileSync(indexFile, 'utf8');
      if (!index.startsWith(indexBefore)) fail(`the merge changed existing index lines:\n${index}`);
      const added = index.slice(indexBefore.length).split('\n').filter(Boolean);
      if (added.join('\n') !== '- [Release checklist](release-checklist.md) — tag, changelog, deploy from the release branch\n' +
        '- [Nightly tests](testing-policy-merged.md) — integration tests ran nightly in the old worktree') fail(`the index grew by:\n${added.join('\n')}`);
      await waitFor('the orphan row to lose its Merge button', async () => (await row.getByTestId('merge-open').count()) === 0);
      await shot('projects');
    });

    await step('Graph: every node and edge of the graph API, drawn with WebGL', async () => {
      await nav('Graph');
      const want = await api(server, 'graph', { cwd: fx.repo });
      const caption = page.getByTestId('graph-caption');
      await waitFor('the graph caption', async () => +(await caption.getAttribute('data-node-count')) === want.nodes.length);
      if (!want.nodes.some((n) => n.kind === 'ghost' && n.label === 'deploy-runbook')) fail('the dangling [[deploy-runbook]] is not a ghost node in the graph API');
      for (const kind of ['memory', 'index', 'claudeMd', 'rule']) {
        if (!want.nodes.some((n) => n.kind === kind)) fail(`the graph API has no ${kind} node`);
      }
      const text = await caption.textContent();
      if (!text.includes(`${want.nodes.length} nodes · ${want.edges.length} edges`)) fail(`the caption reads "${text}"`);
      await page.locator('[data-testid="graph-canvas"] canvas').first().waitFor();
      await waitFor('the layout to settle', () => page.evaluate(() => window.__mnemeGraph?.settled()), 30_000);
      await checkGraphLayout(page, 'the shop', fail);
      await page.waitForTimeout(300);
      await shot('graph');
    });

    await step('Graph: clicking a memory node opens it in Memories', async () => {
      const box = await page.getByTestId('graph-canvas').boundingBox();
      const at = await page.evaluate(() => window.__mnemeGraph.viewportOf('memory:api-gateway.md'));
      if (!at) fail('api-gateway.md has no position in the graph');
      await page.mouse.move(box.x + at.x, box.y + at.y);
      await page.getByTestId('graph-tooltip').getByText('api-gateway.md').waitFor();
      await page.mouse.click(box.x + at.x, box.y + at.y);
      await page.getByTestId('memory-editor').getByRole('heading', { name: 'api-gateway' }).waitFor();
      if (!page.url().endsWith('#/memories')) fail(`clicking the node went to ${page.url()}`);
    });

    await step('Graph: search highlights matches; a result opens its memory', async () => {
      await nav('Graph');
      await page.getByTestId('graph-search').fill('testing');
      const results = page.getByTestId('graph-results');
      await results.locator('[data-node-id="memory:testing-policy.md"]').waitFor();
      await results.locator('[data-node-id="memory:testing-policy.md"]').click();
      await page.getByTestId('memory-editor').getByRole('heading', { name: 'testing-policy' }).waitFor();
    });

    await step('Graph: a project of a few files sits in the middle at a readable size, not in the corners', async () => {
      const lone = path.join(fx.home, 'code', 'lone');
      fs.mkdirSync(path.join(lone, '.claude', 'rules'), { recursive: true });
      fs.writeFileSync(path.join(lone, 'CLAUDE.md'), '# Lone\n\n- One rule.\n');
      fs.writeFileSync(path.join(lone, '.claude', 'rules', 'style.md'), '- Short names.\n');
      await page.locator('#folder').fill(lone);
      await page.locator('#folder').press('Enter');
      await nav('Graph');
      const want = await api(server, 'graph', { cwd: lone });
      if (want.nodes.length < 2 || want.nodes.length >= 10) fail(`the small project has ${want.nodes.length} nodes, not 2 to 9`);
      const caption = page.getByTestId('graph-caption');
      await waitFor('the graph caption', async () => +(await caption.getAttribute('data-node-count')) === want.nodes.length);
      await page.locator('[data-testid="graph-canvas"] canvas').first().waitFor();
      await waitFor('the layout to settle', () => page.evaluate(() => window.__mnemeGraph?.settled()), 30_000);
      const { pts, width, height } = await page.evaluate(() => window.__mnemeGraph.positions());
      // Fitted to the whole canvas, a few nodes end on its edges with labels cut off.
      for (let i = 0; i < pts.length; i += 2) {
        const [x, y] = [pts[i] / width, pts[i + 1] / height];
        if (x < 0.2 || x > 0.8 || y < 0.15 || y > 0.85) fail(`a node of the small graph sits at ${(x * 100).toFixed(0)}% × ${(y * 100).toFixed(0)}% of the canvas`);
      }
      await shot('graph-small');
      await page.locator('#folder').fill(fx.repo);
      await page.locator('#folder').press('Enter');
    });

    await step('Settings: toggles write Claude Code user settings', async () => {
      await nav('Settings');
      const t = page.getByTestId('toggle-auto-dream');
      await t.waitFor();
      await t.check();
      await waitFor('settings.json to hold autoDreamEnabled', async () => {
        const p = path.join(fx.config, 'settings.json');
        return fs.existsSync(p) && JSON.parse(fs.readFileSync(p, 'utf8')).autoDreamEnabled === true;
      });
    });

    await step('Settings: memory folder refuses an invalid value, saves a valid one, clears', async () => {
      const settingsFile = path.join(fx.config, 'settings.json');
      const readSettings = () => JSON.parse(fs.readFileSync(settingsFile, 'utf8'));
      const input = page.getByTestId('memory-dir-input');
      await input.fill('~/..');
      await page.getByTestId('memory-dir-save').click();
      const err = page.getByTestId('memory-dir-error');
      await err.waitFor();
      if (!/home folder/.test((await err.textContent()) ?? '')) fail(`the refusal reads: ${await err.textContent()}`);
      if ('autoMemoryDirectory' in readSettings()) fail('a refused value reached settings.json');
      await input.fill('~/claude-memory');
      await page.getByTestId('memory-dir-save').click();
      const ok = page.getByTestId('memory-dir-resolved');
      await ok.waitFor();
      if (!(await ok.textContent())?.includes(path.join(fx.home, 'claude-memory'))) fail(`the resolved folder reads: ${await ok.textContent()}`);
      const saved = readSettings();
      if (saved.autoMemoryDirectory !== '~/claude-memory' || saved.autoDreamEnabled !== true) fail(`settings.json holds ${JSON.stringify(saved)}`);
      await waitFor('the current project to use the new folder', async () =>
        (await page.getByTestId('memory-dir-current').textContent())?.includes('~/claude-memory'));
      const watching = page.getByTestId('watching');
      await watching.locator('code', { hasText: /^~\/\.claude$/ }).waitFor();
      await watching.locator('code', { hasText: '~/.claude/projects' }).first().waitFor();
      await shot('settings');
      await watching.scrollIntoViewIfNeeded();
      await shot('settings-watching', false);
      await page.getByTestId('memory-dir-clear').click();
      await waitFor('autoMemoryDirectory to leave settings.json', async () => !('autoMemoryDirectory' in readSettings()));
      if (readSettings().autoDreamEnabled !== true) fail('Clear removed other keys from settings.json');
      await page.getByText('Cleared.').waitFor();
    });

    await step('Settings: a damaged settings file is reported once, its switches locked, and never rewritten', async () => {
      const settingsFile = path.join(fx.config, 'settings.json');
      const good = fs.readFileSync(settingsFile, 'utf8');
      const damaged = '{\n  "autoDreamEnabled": tru\n}\n';
      fs.writeFileSync(settingsFile, damaged);
      try {
        const problem = page.getByTestId('settings-problem');
        await problem.waitFor({ timeout: 15_000 });
        const text = (await problem.textContent()) ?? '';
        if (!text.includes('settings.json') || !/line \d+, column \d+/.test(text)) fail(`the problem does not say which file and where: ${text}`);
        // The engine's sentence already says Mneme leaves the file alone; the screen does not say it twice.
        if ((text.match(/Mneme will not/g) ?? []).length !== 1) fail(`the promise to leave the file alone is not said exactly once: ${text}`);
        if (!(await page.getByTestId('toggle-auto-memory').isDisabled()) || !(await page.getByTestId('toggle-auto-dream').isDisabled())) {
          fail('a switch stays usable while Claude Code ignores the settings file');
        }
        // Not "not set": the key may well be in the file; Claude Code just cannot read it.
        await page.getByText('Until the file is fixed Claude Code uses its default (on).').waitFor();
        if (!(await page.getByTestId('memory-dir-input').isDisabled())) fail('the memory folder can be typed in while the settings file is damaged');
        if (fs.readFileSync(settingsFile, 'utf8') !== damaged) fail('the damaged settings file was rewritten');
      } finally {
        fs.writeFileSync(settingsFile, good);
      }
      await page.getByTestId('settings-problem').waitFor({ state: 'detached', timeout: 15_000 });
    });

    await step('Settings: model provider — an OpenAI-compatible endpoint tested, saved, its key in the keyring only', async () => {
      const providersFile = path.join(fx.data, 'providers.json');
      const sec = page.getByTestId('provider-settings');
      await sec.scrollIntoViewIfNeeded();
      await sec.getByTestId('provider-kind-offline').locator('.badge', { hasText: 'saved' }).waitFor();
      await sec.getByTestId('provider-kind-openai').click();
      await sec.getByTestId('provider-model').fill('e2e-model');
      await sec.getByTestId('provider-url').fill(model.url);
      await sec.getByTestId('provider-timeout').fill('30');
      await sec.getByTestId('provider-test').click();
      await sec.getByTestId('provider-test-result').getByText('Connected: e2e-model answered.').waitFor();
      if (fs.existsSync(providersFile)) fail('Test connection saved the settings');
      await sec.getByTestId('provider-save').click();
      await waitFor('providers.json to hold the endpoint', async () => {
        const p = fs.existsSync(providersFile) && JSON.parse(fs.readFileSync(providersFile, 'utf8'));
        return p && p.kind === 'openai' && p.model === 'e2e-model' && p.base_url === model.url && p.timeout_secs === 30;
      });
      const key = 'sk-e2e-0123456789abcdef';
      await sec.getByTestId('provider-key-state').getByText('No key').waitFor();
      await sec.getByTestId('provider-key-input').fill(key);
      await sec.getByTestId('provider-key-save').click();
      await sec.getByTestId('provider-key-state').getByText('Key set').waitFor();
      if (keyringLookup(fx, `openai-api-key:${model.url}`)?.trim() !== key) fail('the key is not in the OS keyring (Secret Service)');
      for (const f of fs.readdirSync(fx.tmp, { recursive: true })) {
        const full = path.join(fx.tmp, String(f));
        if (fs.statSync(full).isFile() && fs.statSync(full).size < 1_000_000 && fs.readFileSync(full, 'utf8').includes(key)) fail(`the key was written to ${f}`);
      }
      if ((await page.content()).includes(key)) fail('the page shows the key after it was stored');
      // The endpoint now refuses the key: the test names the failure, and the key was sent.
      model.fail = 401;
      await sec.getByTestId('provider-test').click();
      await sec.getByTestId('provider-test-failure').getByText('Bad key').waitFor();
      if (model.requests.at(-1).auth !== `Bearer ${key}`) fail(`the test sent ${model.requests.at(-1).auth}`);
      await sec.scrollIntoViewIfNeeded();
      await page.evaluate(() => window.scrollBy(0, -70));
      await shot('settings-provider', false);
    });

    await step('Recall bench: a provider that fails shows why, as Claude Code would recall nothing', async () => {
      await nav('Recall bench');
      await page.getByTestId('recall-provider').selectOption('openai');
      await page.getByTestId('recall-prompt').fill('fix the bug in the staging database migration, add a test, and explain it to the user in backend terms');
      await page.getByTestId('recall-run').click();
      await page.getByTestId('recall-error').getByText('the API key was refused').waitFor();
      if (await page.getByTestId('recall-results').count()) fail('results shown although the provider failed');
      model.fail = 0;
      await nav('Settings');
      const sec = page.getByTestId('provider-settings');
      await sec.getByTestId('provider-key-clear').click();
      await sec.getByTestId('provider-key-clear-confirm').click();
      await sec.getByTestId('provider-key-state').getByText('No key').waitFor();
      if (keyringLookup(fx, `openai-api-key:${model.url}`)) fail('Clear left the key in the OS keyring');
    });

    await step('Settings: a key refused because the saved provider signs in by itself shows `claude auth login` apart, to copy', async () => {
      const sec = page.getByTestId('provider-settings');
      // Saved as the Claude Code CLI elsewhere (`mneme`, another window) while this form still
      // shows the endpoint and its key box: the key is refused with the command to run.
      const saved = await api(server, 'providerSettings', {});
      await api(server, 'setProviderSettings', { kind: 'claude-cli' });
      try {
        await sec.getByTestId('provider-key-input').fill('sk-e2e-not-taken');
        await sec.getByTestId('provider-key-save').click();
        const err = sec.getByTestId('provider-key-error');
        await err.getByTestId('problem-command').locator('code', { hasText: /^claude auth login$/ }).waitFor();
        const text = (await err.textContent()) ?? '';
        if (!text.includes('uses its own sign-in') || !text.includes('Then test the provider again.') || text.includes('`')) fail(`the key error reads "${text}"`);
        await err.getByRole('button', { name: 'Copy the command claude auth login' }).waitFor();
        await err.scrollIntoViewIfNeeded();
        await shot('settings-provider-key-error', false);
      } finally {
        await api(server, 'setProviderSettings', { kind: saved.kind, model: saved.model, baseUrl: saved.baseUrl, timeoutSecs: saved.timeoutSecs });
      }
      await nav('Memories');
      await nav('Settings');
      await page.getByTestId('provider-settings').getByTestId('provider-key-state').getByText('No key').waitFor();
    });

    await step('Team: repository and server; sign in through the device flow in a second tab', async () => {
      await nav('Team');
      await page.getByTestId('team-repo').getByText(TEAM.repo).waitFor();
      if (!(await page.getByTestId('team-server-env').textContent())?.includes(team.url)) fail('the Team screen does not say TEAM_MEMORY_SYNC_URL sets the server');
      await page.getByTestId('team-empty').waitFor();
      // The page's wall clock is a day ahead when the code is shown and is stepped back an hour
      // while it counts down: the count is the engine's (the code's life in seconds), run on
      // performance.now(), so neither moves it; a count from Date.now against the code's expiry
      // would start at zero (expired) and then jump up by an hour.
      await page.evaluate(() => {
        const wall = Date.now;
        window.__realDateNow = wall;
        Date.now = () => wall() + 86_400_000;
      });
      let code;
      try {
        await page.getByTestId('team-sign-in').click();
        code = (await page.getByTestId('team-user-code').textContent())?.trim();
        if (!code || !/^[A-Z-]{8,9}$/.test(code)) fail(`the sign-in code reads "${code}"`);
        // How long the code has left (the server gives it 15 minutes), counted in time waited.
        const left = page.getByTestId('team-code-left');
        const secs = async () => {
          const m = /^The code expires in (\d+):(\d\d)\.$/.exec(((await left.textContent()) ?? '').replace(/\s+/g, ' ').trim());
          if (!m) fail(`the code's time left reads "${await left.textContent()}"`);
          return Number(m[1]) * 60 + Number(m[2]);
        };
        const before = await secs();
        if (before > 15 * 60 || before < 14 * 60) fail(`a fresh 15-minute code reads ${before} s left with the wall clock a day ahead`);
        await page.evaluate(() => {
          const wall = window.__realDateNow;
          Date.now = () => wall() - 3_600_000;
        });
        const shown = ((await left.textContent()) ?? '').trim();
        await page.waitForFunction((was) => document.querySelector('[data-testid="team-code-left"]')?.textContent?.trim() !== was, shown);
        const after = await secs();
        if (after > before || after < before - 30) fail(`with the wall clock stepped back an hour the code's time left went from ${before} s to ${after} s`);
      } finally {
        await page.evaluate(() => { Date.now = window.__realDateNow; });
      }
      const link = await page.getByTestId('team-verify-link').getAttribute('href');
      if (!link?.startsWith(`${team.url}/device`)) fail(`the sign-in link is ${link}`);
      await shot('team-sign-in');
      // The person opens the link in another tab, signs in and approves, as in any browser.
      const tab = await context.newPage();
      await tab.goto(link);
      if ((await tab.getByLabel('Code').inputValue()).replace(/-/g, '') !== code.replace(/-/g, '')) fail('the sign-in page did not fill in the code');
      await tab.getByLabel('User name').fill(TEAM.user);
      await tab.getByLabel('Password').fill(TEAM.password);
      await tab.getByRole('button', { name: 'Approve' }).click();
      await tab.getByRole('heading', { name: 'Device signed in' }).waitFor();
      await tab.close();
      // The app polls at the server's interval (5 s by default).
      await page.getByTestId('team-signed-in').getByText(TEAM.user).waitFor({ timeout: 30_000 });
      await page.getByTestId('team-signed-in').getByText('lead').waitFor();
      const stored = keyringLookup(fx, `team-token:${team.url}`);
      if (!stored?.includes('accessToken')) fail('the token is not in the OS keyring (Secret Service)');
      for (const f of fs.readdirSync(fx.data, { recursive: true })) {
        if (String(f).endsWith('.json') && fs.readFileSync(path.join(fx.data, String(f)), 'utf8').includes(JSON.parse(stored).accessToken)) fail(`the token was written to ${f}`);
      }
    });

    const teamDir = path.join(fx.mem, 'team');
    const fakeToken = `ghp_${'nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd'}`;
    const deploys = '---\nname: deploys\ndescription: How the shop deploys\nmetadata:\n  type: project\n---\n\nDeploy from main only.\n';
    const sha = (text) => createHash('sha256').update(text).digest('hex');

    await step('Team: push; the file is listed with author and hash, the one holding a secret is held back', async () => {
      write(path.join(teamDir, 'deploys.md'), deploys);
      write(path.join(teamDir, 'ci-notes.md'), `CI deploys with the token ${fakeToken}\n`);
      await page.getByTestId('team-push').click();
      const result = page.getByTestId('team-result');
      await result.getByText('Pushed:').waitFor();
      if (!(await result.textContent())?.includes('ci-notes.md — it looks like it holds a GitHub PAT')) fail(`the push result reads: ${await result.textContent()}`);
      const row = page.locator('[data-testid="team-files"] tr[data-key="deploys.md"]');
      await row.getByTestId('team-file-author').getByText(TEAM.user).waitFor();
      if ((await row.getByTestId('team-file-status').textContent()) !== 'synced') fail(`deploys.md is ${await row.getByTestId('team-file-status').textContent()}`);
      if ((await row.getByTestId('team-file-hash').textContent()) !== sha(deploys).slice(0, 12)) fail(`the hash shown is ${await row.getByTestId('team-file-hash').textContent()}`);
      // The column has a plain name and says what the short code is (not "Hash").
      const hashHead = page.getByTestId('team-hash-head');
      if ((await hashHead.textContent())?.trim() !== 'Fingerprint') fail(`the checksum column is headed "${await hashHead.textContent()}"`);
      const hashHint = await hashHead.evaluate((el) => document.getElementById(el.getAttribute('aria-describedby') ?? '')?.textContent ?? '');
      if (!/same fingerprint are the same text/.test(hashHint)) fail(`the checksum column's explanation reads "${hashHint}"`);
      if (await page.locator('[data-testid="team-files"] th', { hasText: /^Hash$/ }).count()) fail('the team files table still has a column called "Hash"');
      // Each heading on one line in a 1024×640 window, beside a lead's buttons ("Last change on
      // the server" took four).
      await page.setViewportSize({ width: 1024, height: 640 });
      try {
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        // The lines a heading's own words take (its explanation, shown on hover, and words only
        // for screen readers are not on the line).
        const lines = await page.locator('[data-testid="team-files"] th').evaluateAll((ths) => ths.map((th) => {
          const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
          const tops = new Set();
          let words = '';
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            if (node.parentElement.closest('.hint-tip, .sr-only') || !node.data.trim()) continue;
            words += node.data;
            const range = document.createRange();
            range.selectNodeContents(node);
            for (const r of range.getClientRects()) if (r.width > 0) tops.add(Math.round(r.top));
          }
          return [words.trim(), tops.size];
        }));
        const wrapped = lines.filter(([, n]) => n > 1);
        if (wrapped.length) fail(`at 1024 px team file headings wrap: ${wrapped.map(([t, n]) => `"${t}" on ${n} lines`).join(', ')}`);
        const changeHint = await page.getByTestId('team-change-head').evaluate((el) => document.getElementById(el.getAttribute('aria-describedby') ?? '')?.textContent ?? '');
        if (!/on the team server/.test(changeHint)) fail(`the last-change column's explanation reads "${changeHint}"`);
      } finally {
        await page.setViewportSize({ width: 1280, height: 800 });
      }
      const held = page.locator('[data-testid="team-files"] tr[data-key="ci-notes.md"]');
      if ((await held.getByTestId('team-file-secret').textContent()) !== 'GitHub PAT') fail('ci-notes.md does not show the rule that held it back');
      await page.getByTestId('team-held').getByText('ci-notes.md').waitFor();
      if ((await page.content()).includes(fakeToken)) fail('the page shows the secret itself');
      const entries = await teamEntries(team);
      if (Object.keys(entries).join(',') !== 'deploys.md' || entries['deploys.md'] !== deploys) fail(`the server holds ${JSON.stringify(Object.keys(entries))}`);
    });

    await step('Team: an unreadable sync state file is named on the screen with what to do, not shown as never synced', async () => {
      const dir = path.join(fx.data, 'team-sync');
      const files = fs.readdirSync(dir).filter((n) => n.endsWith('.json'));
      if (files.length !== 1) fail(`team-sync holds ${JSON.stringify(files)}`);
      const file = path.join(dir, files[0]);
      const kept = fs.readFileSync(file);
      fs.writeFileSync(file, 'not json {');
      try {
        await nav('Memories');
        await nav('Team');
        const problem = page.getByTestId('team-state-problem');
        await problem.waitFor();
        const text = (await problem.textContent()) ?? '';
        if (!text.includes(file) || !/delete/i.test(text)) fail(`the sync state problem reads "${text}"`);
        // Not "never": nothing about the last pull or push can be told from an unreadable file.
        const lastPush = (await page.getByTestId('team-last-push').textContent())?.trim();
        if (lastPush !== 'unknown') fail(`with an unreadable state the last push reads "${lastPush}"`);
      } finally {
        fs.writeFileSync(file, kept);
      }
      await nav('Memories');
      await nav('Team');
      await page.locator('[data-testid="team-files"] tr[data-key="deploys.md"]').waitFor();
      if (await page.getByTestId('team-state-problem').count()) fail('the sync state problem stays after the file reads again');
    });

    await step('Team: a second version, its history and the diff between versions', async () => {
      const second = deploys.replace('main only.', 'main only, after CI is green.\nTag every release.');
      write(path.join(teamDir, 'deploys.md'), second);
      await page.getByTestId('team-push').click();
      await page.getByTestId('team-result').getByText('Pushed: uploaded 1 file.').waitFor();
      const row = page.locator('[data-testid="team-files"] tr[data-key="deploys.md"]');
      await row.getByText('2 versions').waitFor();
      // The server counts both versions against the repository's storage cap (1 GiB by default).
      const stored = Buffer.byteLength(deploys) + Buffer.byteLength(second);
      await page.getByTestId('team-storage').getByText(`${stored} B of 1.0 GB, every version kept`).waitFor({ timeout: 10_000 });
      await row.getByTestId('team-open-history').click();
      const hist = page.getByTestId('team-history');
      await hist.locator('[data-version]').nth(1).waitFor();
      await hist.locator('.dl.add', { hasText: 'Tag every release.' }).waitFor();
      await hist.locator('.dl.del', { hasText: 'Deploy from main only.' }).waitFor();
      await hist.getByTestId('team-rollback').waitFor({ state: 'detached' });
      await hist.locator('[data-version]').nth(1).click();
      await hist.getByTestId('team-rollback').waitFor();
      await hist.locator('[data-version]').nth(0).click();
      // The whole screen in one picture: a window tall enough for the files and the history.
      await page.setViewportSize({ width: 1280, height: 1400 });
      await shot('team');
      // A lead's row holds three buttons; in a narrow window they stack in their cell instead of
      // being scrolled off the table, and the history's diff stays inside its card.
      await page.setViewportSize({ width: 800, height: 800 });
      await row.getByTestId('team-purge').waitFor();
      await checkFits(page, 'Team at 800 px with the history open', fail);
      await page.setViewportSize({ width: 1280, height: 800 });
      // By keyboard: Escape closes the history and gives focus back to the row's History button
      // (it had it from the click); Enter opens it again with focus inside.
      const opener = row.getByTestId('team-open-history');
      await hist.locator('[data-version]').nth(0).focus();
      await page.keyboard.press('Escape');
      await hist.waitFor({ state: 'detached' });
      await waitFor('focus back on the row\'s History button', async () => opener.evaluate((e) => e === document.activeElement));
      await page.keyboard.press('Enter');
      await hist.waitFor();
      await waitFor('focus in the history', async () => hist.evaluate((h) => h.contains(document.activeElement)));
    });

    await step('Team: a file with more versions than a page holds shows the newest and says the older are kept', async () => {
      // A teammate's Claude Code wrote the file 101 times; the screen's history shows a page.
      const token = team.token();
      for (let i = 1; i <= 101; i++) {
        const res = await fetch(`${team.url}/api/claude_code/team_memory?repo=${encodeURIComponent(TEAM.repo)}`, {
          method: 'PUT',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ entries: { 'changelog.md': `# Changelog\n\nRelease ${i} is out.\n` } }),
        });
        if (!res.ok) fail(`writing version ${i} of changelog.md: the team server answered ${res.status} ${await res.text()}`);
      }
      await page.getByTestId('team-pull').click();
      const row = page.locator('[data-testid="team-files"] tr[data-key="changelog.md"]');
      await row.getByText('101 versions').waitFor();
      await row.getByTestId('team-open-history').click();
      const hist = page.getByTestId('team-history');
      await hist.getByTestId('team-history-older').getByText('The newest 100 versions are listed').waitFor();
      const shown = await hist.locator('[data-version]').count();
      if (shown !== 100) fail(`the history lists ${shown} versions, not the newest 100`);
      await hist.scrollIntoViewIfNeeded();
      await shot('team-history-older', false);
    });

    await step('Team: a replaced local edit holding a secret is not restored; the refusal shows at its conflict, nothing moved', async () => {
      // This machine's Claude Code wrote a token into its copy; a teammate's change then wins
      // the pull, and the local edit goes to the trash.
      const file = path.join(teamDir, 'changelog.md');
      write(file, `# Changelog\n\nRelease 101 is out. Publish with ${fakeToken}\n`);
      const theirs = '# Changelog\n\nRelease 102 is out.\n';
      const res = await fetch(`${team.url}/api/claude_code/team_memory?repo=${encodeURIComponent(TEAM.repo)}`, {
        method: 'PUT',
        headers: { Authorization: `Bearer ${team.token()}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ entries: { 'changelog.md': theirs } }),
      });
      if (!res.ok) fail(`writing the teammate's version: the team server answered ${res.status} ${await res.text()}`);
      await page.getByTestId('team-pull').click();
      await page.getByTestId('team-result').getByText('Pulled:').waitFor();
      const conflict = page.getByTestId('team-conflicts').locator('li', { hasText: 'changelog.md' });
      const trashBefore = (await api(server, 'trash', { cwd: fx.repo })).entries.map((e) => e.id).sort();
      expectedRefused = '/api/teamRestoreConflict';
      await conflict.getByTestId('team-restore').click();
      const err = conflict.getByTestId('team-restore-error');
      await err.getByText('Not restored: your version of team/changelog.md appears to contain secrets (GitHub PAT)', { exact: false }).waitFor();
      expectedRefused = null;
      if (!(await err.textContent())?.includes('without the secret, then push')) fail(`the refusal reads "${await err.textContent()}"`);
      if ((await page.content()).includes(fakeToken)) fail('the page shows the secret itself');
      if (fs.readFileSync(file, 'utf8') !== theirs) fail('the refused restore changed the file');
      const trashAfter = (await api(server, 'trash', { cwd: fx.repo })).entries.map((e) => e.id).sort();
      if (JSON.stringify(trashAfter) !== JSON.stringify(trashBefore)) fail(`the refused restore changed the trash: ${JSON.stringify(trashBefore)} → ${JSON.stringify(trashAfter)}`);
      await conflict.scrollIntoViewIfNeeded();
      await shot('team-restore-refused', false);
      await err.getByRole('button', { name: 'Dismiss' }).click();
      await err.waitFor({ state: 'detached' });
    });

    await step('Team: remove a file for everyone (a tombstone); the local copy goes to the trash', async () => {
      const row = page.locator('[data-testid="team-files"] tr[data-key="deploys.md"]');
      await row.getByTestId('team-remove').click();
      const dialog = page.getByTestId('team-remove-dialog');
      if (!(await dialog.textContent())?.includes('tombstone')) fail('the removal does not explain the tombstone');
      await dialog.getByTestId('team-remove-confirm').click();
      await page.getByTestId('team-result').getByText('Removed deploys.md for everyone').waitFor();
      await waitFor('deploys.md to leave the team folder', async () => !fs.existsSync(path.join(teamDir, 'deploys.md')));
      await row.getByTestId('team-file-status').getByText('removed by a lead').waitFor();
      const trash = await api(server, 'trash', { cwd: fx.repo });
      if (!trash.entries.some((e) => e.originalRelPath === 'team/deploys.md')) fail('the removed file is not in Mneme\'s trash');
      if ('deploys.md' in (await teamEntries(team))) fail('the server still lists deploys.md');
      await page.getByTestId('team-conflicts').getByText('A lead removed this file for everyone').waitFor();
    });

    await step('Team: a lead purges the removed file from history (typed confirmation) and sees everyone\'s sign-ins', async () => {
      const row = page.locator('[data-testid="team-files"] tr[data-key="deploys.md"]');
      await row.getByTestId('team-purge').click();
      const dialog = page.getByTestId('team-purge-dialog');
      if (!(await dialog.textContent())?.includes('erased from the server’s history')) fail('the purge does not say it erases history');
      const confirm = dialog.getByTestId('team-purge-confirm');
      if (!(await confirm.isDisabled())) fail('the purge can be confirmed without typing the file name');
      await dialog.getByTestId('team-purge-typed').fill('deploys');
      if (!(await confirm.isDisabled())) fail('the purge can be confirmed with the wrong name typed');
      await dialog.getByTestId('team-purge-typed').fill('deploys.md');
      await confirm.click();
      await page.getByTestId('team-result').getByText('Purged deploys.md').waitFor();
      await row.getByText('1 version', { exact: false }).waitFor();
      const hist = await api(server, 'teamHistory', { cwd: fx.repo, key: 'deploys.md' });
      if (hist.versions.length !== 1 || !hist.versions[0].deleted || hist.versions[0].content !== '') {
        fail(`after the purge the history holds ${JSON.stringify(hist.versions)}`);
      }
      const signIns = page.getByTestId('team-sign-ins');
      const mine = signIns.locator('tr[data-user="lena"]', { hasText: 'mneme' });
      await mine.first().waitFor();
      if ((await mine.first().getAttribute('data-state')) !== 'active') fail(`lena's sign-in reads ${await mine.first().textContent()}`);
      // Each `admin token` this script minted is a sign-in too: after a refresh the page lists
      // exactly what the server reports.
      const listed = await api(server, 'teamSignIns', { cwd: fx.repo });
      await signIns.getByTestId('team-sign-ins-refresh').click();
      await waitFor('every sign-in on the page', async () => (await signIns.locator('tbody tr').count()) === listed.signIns.length);
      if (listed.signIns.filter((x) => x.clientId === 'admin-token').length < 1) fail(`the server reports ${JSON.stringify(listed.signIns)}`);
    });

    await step('Team: sign out removes the token from the keyring', async () => {
      await page.getByTestId('team-sign-out').click();
      await page.getByTestId('team-sign-in').waitFor();
      if (keyringLookup(fx, `team-token:${team.url}`)) fail('the token is still in the OS keyring after signing out');
    });

    // The app by keyboard alone (e2e/keyboard.mjs): every screen, the memory flows, the switches.
    await keyboardPass({ page, fx, step, fail, waitFor });

    await step('Dark theme', async () => {
      await page.emulateMedia({ colorScheme: 'dark' });
      await nav('Memories');
      await page.locator('[data-relpath="testing-policy.md"]').click();
      await page.getByTestId('memory-description').waitFor();
      await shot('memories-dark');
      await nav('What Claude sees');
      await page.getByTestId('context-block').waitFor();
      await shot('what-claude-sees-dark');
      await nav('Graph');
      await page.locator('[data-testid="graph-canvas"] canvas').first().waitFor();
      await waitFor('the layout to settle', () => page.evaluate(() => window.__mnemeGraph?.settled()), 30_000);
      await page.waitForTimeout(300);
      await shot('graph-dark');
      await page.emulateMedia({ colorScheme: 'light' });
    });

    await step('Graph: 5,000 nodes render and stay fluid while panning and zooming', async () => {
      await page.locator('#folder').fill(fx.big.repo);
      await page.locator('#folder').press('Enter');
      await nav('Graph');
      const want = await api(server, 'graph', { cwd: fx.big.repo });
      if (want.nodes.length < 4900 || want.nodes.length > 5100) fail(`the big fixture has ${want.nodes.length} nodes, not about 5,000`);
      const caption = page.getByTestId('graph-caption');
      const t0 = Date.now();
      await waitFor('the 5,000-node caption', async () => +(await caption.getAttribute('data-node-count')) === want.nodes.length, 60_000);
      // The canvas comes with the first layout, which a loaded machine (two cores shared with a
      // build) took over 10 s to hand back; the layout's own bound is the 120 s below.
      await page.locator('[data-testid="graph-canvas"] canvas').first().waitFor({ timeout: 60_000 });
      await waitFor('the layout to settle', () => page.evaluate(() => window.__mnemeGraph?.settled()), 120_000);
      const settleMs = Date.now() - t0;
      const layout = await page.evaluate(() => window.__mnemeGraph.layoutStats());
      console.log(`      layout: ${await checkGraphLayout(page, 'the 5,000-node project', fail)}`);
      await page.waitForTimeout(300);
      await shot('graph-5000');
      const box = await page.getByTestId('graph-canvas').boundingBox();
      // Frames the graph actually drew: an animation frame counts only when WebGL draw calls ran
      // in it (the prototypes are wrapped for this measurement), since sigma draws only when the
      // camera or the graph changes; counting animation callbacks would count idle frames too.
      await page.evaluate(() => {
        const w = window;
        const d = (w.__drawn = { frames: 0, calls: 0, pending: false, run: true, restore: [] });
        for (const proto of [WebGLRenderingContext.prototype, WebGL2RenderingContext.prototype]) {
          for (const name of ['drawArrays', 'drawElements', 'drawArraysInstanced', 'drawElementsInstanced']) {
            const orig = proto[name];
            if (typeof orig !== 'function') continue;
            proto[name] = function (...args) { d.calls++; d.pending = true; return orig.apply(this, args); };
            d.restore.push(() => { proto[name] = orig; });
          }
        }
        const tick = () => {
          if (d.pending) { d.frames++; d.pending = false; }
          if (d.run) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        d.start = performance.now();
      });
      const cx = box.x + box.width / 2, cy = box.y + box.height / 2;
      // Drawing alone is not enough (hovering redraws too): the first drag must move the view.
      const probe = want.nodes[0].id;
      const at = () => page.evaluate((id) => window.__mnemeGraph.viewportOf(id), probe);
      const before = await at();
      let moved = null;
      const until = Date.now() + 2000;
      let k = 0;
      while (Date.now() < until) {
        await page.mouse.move(cx, cy);
        await page.mouse.down();
        await page.mouse.move(cx + (k % 2 ? -120 : 120), cy + (k % 2 ? 60 : -60), { steps: 8 });
        await page.mouse.up();
        if (k === 0) moved = await at();
        await page.mouse.wheel(0, k % 2 ? 240 : -240);
        k++;
      }
      const { frames, calls, ms } = await page.evaluate(() => {
        const d = window.__drawn;
        d.run = false;
        d.restore.forEach((undo) => undo());
        return { frames: d.frames, calls: d.calls, ms: performance.now() - d.start };
      });
      const fps = (frames * 1000) / ms;
      console.log(`      graph at ${want.nodes.length} nodes / ${want.edges.length} edges: on screen and laid out in ${(settleMs / 1000).toFixed(1)} s ` +
        `(ForceAtlas2 in a worker: ${layout.iterations} iterations, ${(layout.ms / 1000).toFixed(1)} s); ` +
        `${fps.toFixed(1)} frames drawn per second while panning and zooming (${frames} frames, ${calls} WebGL draw calls in ${(ms / 1000).toFixed(1)} s, headless software WebGL)`);
      // The floor measured on the test machine (docs/benchmarks.md), with room for a loaded one.
      const FPS_FLOOR = 2;
      if (!before || !moved || (Math.abs(moved.x - before.x) < 1 && Math.abs(moved.y - before.y) < 1)) {
        fail(`dragging did not move the graph: ${probe} stayed at ${JSON.stringify(before)}`);
      }
      if (!(fps >= FPS_FLOOR)) fail(`the graph drew ${fps.toFixed(1)} frames per second while panning and zooming; the floor is ${FPS_FLOOR} (docs/benchmarks.md)`);
    });

    if (pageErrors.length) fail(`the page reported errors:\n  ${pageErrors.join('\n  ')}`);
    console.log('\ne2e passed' + (shots ? `; screenshots in ${path.relative(ROOT, SHOTS)}/` : ''));
  } catch (e) {
    process.exitCode = 1;
    console.error(`\ne2e FAILED in step "${current}": ${e.message}`);
    const failShot = path.join(fx.tmp, 'failure.png');
    await page.screenshot({ path: failShot }).then(() => console.error(`screenshot of the failure: ${failShot}`), () => {});
    if (pageErrors.length) console.error(`page errors:\n  ${pageErrors.join('\n  ')}`);
    const err = server.stderr();
    if (err) console.error(`mneme serve stderr:\n${err}`);
    if (/Team/.test(current)) console.error(`mneme-server log:\n${team.logs()}`);
  } finally {
    await browser.close().catch(() => {});
    await model.close();
    await stop(server.child);
    await stop(team.child, 'SIGTERM');
    if (process.env.E2E_KEEP || process.exitCode) console.log(`kept the fixture: ${fx.tmp}`);
    else fs.rmSync(fx.tmp, { recursive: true, force: true });
  }
}

main().catch((e) => {
  if (!process.exitCode) console.error(`\ne2e FAILED: ${e.message}`);
  process.exitCode = 1;
});
