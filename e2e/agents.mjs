#!/usr/bin/env node
// Agent memory in the web UI, against the real `mneme serve`, in headless Chromium (the same
// tools and checks as e2e/run.mjs, kept in a file of its own so it runs without the team server
// and keyring the main run needs):
//
//   MNEME_BIN=/path/to/mneme node e2e/agents.mjs     (after `npm run build:ui`)
//   MNEME_CLAUDE_BIN=/path/to/claude …               a Claude Code for the sections' own text
//   E2E_UI_DIST=/path/to/dist …                      another UI build
//   E2E_NO_SCREENSHOTS=1 …                           does not rewrite docs/screenshots
//
// The fixture is a project with three sub-agents, one per memory scope: `reviewer` (the user's,
// `memory: user`), `planner` (the project's, `memory: project`, checked in) and
// `toolkit:auditor` (from an installed, enabled plugin, `memory: local`), each with memories.
// The run checks that the Memories screen offers each agent's folder, lists its memories, labels
// the project one as checked in, and that What Claude sees lists every agent's memory section
// with its token count, and that the Team screen says the project one is shared through git; it
// writes docs/screenshots/agent-memory-*.png.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkAccessible } from './checks.mjs';
import { SHOTS, failer, write, preflight, startServer, stop, removeUnlessKept, runMain, api as callApi } from './harness.mjs';

const fail = failer('agents');
const api = (server, method, body) => callApi(server, method, body, fail);

const TIMEOUT = 20_000;

function memory(dir, file, name, description, type, body) {
  write(path.join(dir, file), `---\nname: ${name}\ndescription: ${description}\ntype: ${type}\n---\n\n${body}\n`);
}

function buildFixture() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mneme-e2e-agents-')));
  const home = path.join(tmp, 'home');
  const config = path.join(home, '.claude');
  const repo = path.join(home, 'code', 'shop');
  const bin = path.join(tmp, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  if (process.env.MNEME_CLAUDE_BIN) fs.symlinkSync(path.resolve(process.env.MNEME_CLAUDE_BIN), path.join(bin, 'claude'));
  const env = {
    PATH: `${bin}:/usr/bin:/bin`,
    LANG: 'C.UTF-8',
    TZ: 'UTC',
    HOME: home,
    CLAUDE_CONFIG_DIR: config,
    MNEME_DATA_DIR: path.join(tmp, 'data'),
  };
  fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
  write(path.join(repo, 'CLAUDE.md'), '# Shop\n\nThe storefront service.\n');

  write(path.join(config, 'agents', 'reviewer.md'), '---\nname: reviewer\ndescription: Reviews changes before they merge\nmemory: user\n---\n\nYou review changes.\n');
  const reviewer = path.join(config, 'agent-memory', 'reviewer');
  write(path.join(reviewer, 'MEMORY.md'), '- [Naming](naming.md) — full words, no abbreviations\n- [Small diffs](small_diffs.md) — ask for splits over 400 lines\n');
  memory(reviewer, 'naming.md', 'Naming', 'full words, no abbreviations', 'feedback', 'Names are full words.');
  memory(reviewer, 'small_diffs.md', 'Small diffs', 'ask for splits over 400 lines', 'feedback', 'Ask to split a change over 400 lines.');

  write(path.join(repo, '.claude', 'agents', 'planner.md'), '---\nname: planner\ndescription: Plans work in this repository\nmemory: project\n---\n\nYou plan work.\n');
  const planner = path.join(repo, '.claude', 'agent-memory', 'planner');
  write(path.join(planner, 'MEMORY.md'), '- [Release train](release_train.md) — ships every second Tuesday\n');
  memory(planner, 'release_train.md', 'Release train', 'ships every second Tuesday', 'project', 'Releases ship every second Tuesday.');

  // A plugin from a marketplace in a folder, installed and enabled, as Claude Code records them.
  const market = path.join(tmp, 'market');
  write(path.join(market, '.claude-plugin', 'marketplace.json'),
    JSON.stringify({ name: 'tools', owner: { name: 'Shop' }, plugins: [{ name: 'toolkit', source: './toolkit', description: 'Audits' }] }));
  const install = path.join(market, 'toolkit');
  write(path.join(install, '.claude-plugin', 'plugin.json'), JSON.stringify({ name: 'toolkit', version: '1.0.0', description: 'Audits' }));
  write(path.join(install, 'agents', 'auditor.md'), '---\ndescription: Audits dependencies\nmemory: local\n---\n\nYou audit dependencies.\n');
  write(path.join(config, 'plugins', 'known_marketplaces.json'),
    JSON.stringify({ tools: { source: { source: 'directory', path: market }, installLocation: market, lastUpdated: '2026-01-01T00:00:00.000Z' } }));
  write(path.join(config, 'plugins', 'installed_plugins.json'),
    JSON.stringify({ version: 2, plugins: { 'toolkit@tools': [{ scope: 'user', installPath: install, version: '1.0.0' }] } }));
  write(path.join(config, 'settings.json'), JSON.stringify({ enabledPlugins: { 'toolkit@tools': true } }));
  const auditor = path.join(repo, '.claude', 'agent-memory-local', 'toolkit-auditor');
  write(path.join(auditor, 'MEMORY.md'), '- [Pinned versions](pinned.md) — lockfile pins left-pad 1.3.0 on purpose\n');
  memory(auditor, 'pinned.md', 'Pinned versions', 'lockfile pins left-pad 1.3.0 on purpose', 'project', 'left-pad stays at 1.3.0.');
  return { tmp, home, repo, env };
}

async function main() {
  const { bin, launch } = preflight(fail);
  const fx = buildFixture();
  const shots = !process.env.E2E_NO_SCREENSHOTS;
  const server = await startServer(bin, fx.repo, fx.env);
  const browser = await launch();
  try {
    // The engine first: three agents, one per scope, each folder with its memories.
    const listed = await api(server, 'agents', { cwd: fx.repo });
    const got = listed.agents.map((a) => `${a.agentType}:${a.scope}:${a.memories}`).join(' ');
    if (got !== 'planner:project:1 reviewer:user:2 toolkit:auditor:local:1') fail(`agents: ${got}`);
    await api(server, 'openProject', { cwd: fx.repo });

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' })).newPage();
    page.setDefaultTimeout(TIMEOUT);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const shot = async (name) => {
      await checkAccessible(page, `the screen of ${name}.png`, fail);
      if (!shots) return;
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.waitForTimeout(200);
      await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
    };
    const nav = (label) => page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: label, exact: true }).click();

    await page.goto(server.url);
    await nav('Memories');
    const picker = page.getByTestId('memory-folder');
    await picker.waitFor();
    const options = await picker.locator('option').allTextContents();
    for (const want of ['reviewer (user', 'planner (project', 'toolkit:auditor (local, plugin toolkit@tools']) {
      if (!options.some((o) => o.includes(want))) fail(`the folder picker lacks ${want}: ${options.join(' | ')}`);
    }
    await picker.selectOption('planner|project');
    await page.getByTestId('checked-in-note').waitFor();
    await page.locator('[data-relpath="release_train.md"]').waitFor();
    await page.locator('[data-relpath="release_train.md"]').click();
    await shot('agent-memory-memories');
    await picker.selectOption('reviewer|user');
    await page.locator('[data-relpath="small_diffs.md"]').waitFor();
    if (await page.getByTestId('checked-in-note').count()) fail('user-scope agent memory is labelled as checked in');

    // Dreams work on the folder chosen on Memories: the reviewer's, under the project's gates.
    await nav('Dreams');
    const lede = page.locator('.screen-head .lede');
    await page.waitForFunction(() => /agent-memory\/reviewer/.test(document.querySelector('.screen-head .lede')?.textContent ?? ''));
    if (!/sub-agent reviewer \(user scope/.test(await lede.textContent())) fail(`Dreams does not name the agent: ${await lede.textContent()}`);
    await shot('agent-memory-dreams');

    await nav('What Claude sees');
    const section = page.getByTestId('agent-memory');
    await section.waitFor({ timeout: 60_000 });
    for (const agent of ['planner', 'reviewer', 'toolkit:auditor']) {
      const row = section.locator(`[data-agent="${agent}"]`);
      await row.waitFor();
      if (process.env.MNEME_CLAUDE_BIN && !/≈[\d,]+ tok/.test(await row.textContent())) fail(`no token count for ${agent}`);
    }
    await section.scrollIntoViewIfNeeded();
    if (shots) {
      await checkAccessible(page, 'the screen of agent-memory-context.png', fail);
      await page.waitForTimeout(200);
      await section.screenshot({ path: path.join(SHOTS, 'agent-memory-context.png') });
    }
    // The Team screen says project-scope agent memory travels through git, not team sync.
    await nav('Team');
    const note = page.getByTestId('team-agent-memory');
    await note.waitFor();
    if (!/planner/.test(await note.textContent()) || /reviewer/.test(await note.textContent())) fail(`team note: ${await note.textContent()}`);
    if (errors.length) fail(`page errors: ${errors.join('; ')}`);
    console.log('e2e (agents): ok');
  } finally {
    await browser.close();
    await stop(server.child);
    removeUnlessKept(fx.tmp);
  }
}

runMain(main);
