#!/usr/bin/env node
// Every screen on real folders, and a first run, in headless Debian Chromium against the real
// `mneme serve` (the same set-up as e2e/run.mjs, which checks behaviour on a synthetic fixture).
//
//   npm run e2e:screens               (after `npm run build:ui` and a debug build of mneme)
//   MNEME_BIN=/path/to/mneme node e2e/screens.mjs [owner__repo ...]
//   E2E_NO_SCREENSHOTS=1 …            does not rewrite docs/screenshots
//   E2E_UI_DIST=/path/to/dist …       another UI build (default: ui/dist)
//
// 1. A first run: an empty HOME (no ~/.claude, Claude Code never run anywhere). The page must
//    open on the welcome, never on the folder the server was started in, and say where Claude
//    Code's memory lives and whether a Claude Code was found.
// 2. Each repository of the real-world corpus (testdata/realworld/<owner>__<repo>, built with
//    build_fixtures.py into a folder of this run's own): the project is opened by typing its
//    folder, as a person would, and every screen in the sidebar is visited and screenshot into
//    docs/screenshots/realworld/<owner>__<repo>/.
// 3. A project in a deep folder, with a memory whose file name has no spaces, in 800, 1024×640 and
//    1440×900 windows: no screen may scroll sideways or run past its cards (e2e/checks.mjs).
// On every screen axe-core's WCAG 2 A/AA rules must find nothing, and the Graph's layout must use
// both axes with node centres kept apart (e2e/checks.mjs). The server is started in `/`, as a
// desktop launcher starts apps, to prove the page does not open there.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkAccessible, checkFits, checkGraphLayout } from './checks.mjs';
import { ROOT, SHOTS, preflight, homeEnv, underKeyring, startServer as serve, stop } from './harness.mjs';

const CORPUS = path.join(ROOT, 'testdata', 'realworld');
const TIMEOUT = 15_000;

// A failure stops only the part of the run it is in (see `run` in main), which reports it.
function fail(msg) {
  throw new Error(msg);
}

/** An environment whose HOME, Claude Code config home and Mneme data dir are all under `home`. */
const envFor = (home, data) => homeEnv(home, data, 'e2e-screens');

// In `/` (see the header).
const startServer = (bin, env) => serve(bin, '/', env);

const stopServer = (server) => stop(server.child);

/**
 * Fails when a `code` in running text is split between two letters or digits although it would
 * fit whole on a line of its block: it should have moved to the next line whole
 * ("http://127.0.0.1:4384" / "7", "--sch" / "eduler" were split so). Paths (PathCode), blocks
 * and commands set apart keep their own wrapping.
 */
async function checkCodeWraps(page, where) {
  const split = await page.evaluate(() => {
    const out = [];
    for (const code of document.querySelectorAll('main code')) {
      if (code.closest('.path, pre, .cmd') || code.getClientRects().length < 2) continue;
      let block = code.parentElement;
      while (block && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
      const cs = getComputedStyle(block);
      const room = block.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      const probe = code.cloneNode(true);
      Object.assign(probe.style, { whiteSpace: 'nowrap', position: 'absolute', visibility: 'hidden' });
      block.append(probe);
      const whole = probe.getBoundingClientRect().width;
      probe.remove();
      if (whole > room) continue;
      const range = document.createRange();
      const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
      let prev = null;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.length; i++) {
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const top = range.getBoundingClientRect().top;
          const ch = node.data[i];
          if (prev && top > prev.top + 2 && /[A-Za-z0-9]/.test(prev.ch) && /[A-Za-z0-9]/.test(ch)) out.push(`"${code.textContent}" between "${prev.ch}" and "${ch}"`);
          prev = { top, ch };
        }
      }
    }
    return out;
  });
  if (split.length) fail(`${where}: code split inside a word though it fits on a line: ${split.slice(0, 3).join('; ')}`);
}

/** Fails when a meter reading 0 draws any fill: "Sessions 0 of 5" showed a sliver of progress. */
async function checkEmptyMeters(page, where) {
  const drawn = await page.evaluate(() => [...document.querySelectorAll('main [role="meter"][aria-valuenow="0"]')]
    .map((m) => [m.getAttribute('aria-label'), Math.max(0, ...[...m.children].map((c) => c.getBoundingClientRect().width))])
    .filter(([, w]) => w > 0));
  if (drawn.length) fail(`${where}: meters at 0 draw a fill: ${drawn.map(([l, w]) => `${l} ${w.toFixed(1)} px`).join(', ')}`);
}

/** The open memory's title is below the sticky folder bar, not under it. */
async function checkTitleBelowBar(page, where) {
  const { title, bar } = await page.evaluate(() => ({
    title: document.querySelector('[data-testid="memory-editor"] h2')?.getBoundingClientRect().top ?? NaN,
    bar: document.querySelector('.topbar')?.getBoundingClientRect().bottom ?? NaN,
  }));
  if (!(title >= bar - 1)) fail(`${where}: the open memory's title is at ${title.toFixed(0)} px, under the folder bar (down to ${bar.toFixed(0)} px)`);
}

/**
 * A disabled primary button looks disabled, not like a faded live one: it has lost the accent
 * (in the dark theme half its opacity left the accent a bright blue on the dark page).
 */
async function checkDisabledPrimary(page, button, where) {
  const { bg, accent } = await button.evaluate((el) => {
    const probe = document.createElement('div');
    probe.style.background = 'var(--accent)';
    document.body.append(probe);
    const accent = getComputedStyle(probe).backgroundColor;
    probe.remove();
    return { bg: getComputedStyle(el).backgroundColor, accent };
  });
  if (!(await button.isDisabled())) fail(`${where}: the button checked is not disabled`);
  if (bg === accent) fail(`${where}: a disabled primary button keeps the accent ${accent}`);
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
    process.exitCode = await underKeyring(import.meta.url);
    return;
  }
  const { bin, launch } = preflight(fail);
  const shots = !process.env.E2E_NO_SCREENSHOTS;
  const names = process.argv.slice(2).length ? process.argv.slice(2)
    : fs.readdirSync(CORPUS).filter((d) => fs.existsSync(path.join(CORPUS, d, 'tree'))).sort();

  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mneme-e2e-screens-')));
  const browser = await launch();
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
    // A moment for transitions to finish, so a picture never catches one half way; a run that
    // takes no pictures (CI) does not wait for them (about 30 s over every screen).
    await page.waitForTimeout(200);
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
        // A screen of one project, picked before any is open: the Projects list says why it is
        // shown instead, and the folder opened next goes straight to the screen asked for.
        await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Memories', exact: true }).click();
        const needs = page.getByTestId('needs-project');
        await needs.waitFor();
        if (!/Memories/.test(await needs.innerText())) fail(`the notice does not name the screen asked for: ${await needs.innerText()}`);
        await welcome.waitFor();
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
        await page.getByTestId('new-memory').waitFor();
        if (!/#\/memories$/.test(page.url())) fail(`opening a folder after picking Memories went to ${page.url()}, not Memories`);
        if (await needs.count()) fail('the notice asking for a project stays once one is open');
        // No Claude Code here: the check against it is offered only once there is one, and
        // "Show" waits for a file to be typed (a click on either did nothing visible).
        await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'What Claude sees', exact: true }).click();
        await page.getByTestId('context-block').waitFor();
        await page.getByTestId('claude-code').getByText('no Claude Code here to check with yet').waitFor();
        if (await page.getByTestId('verify').isEnabled()) fail('"Check with my Claude Code" is offered with no Claude Code installed');
        if (await page.getByTestId('touched-show').isEnabled()) fail('"Show" is offered with no file typed');
        await page.locator('#touched-path').fill('src/main.ts');
        if (!(await page.getByTestId('touched-show').isEnabled())) fail('"Show" stays disabled once a file is typed');
        // With no Claude Code the release badge says whose behaviour is shown, and never that
        // a release was verified beside "No Claude Code was found".
        const notVerified = async (where, badge) => {
          const text = ((await badge.textContent()) ?? '').trim();
          if (/verified/i.test(text) || !/^showing \d+\.\d+\.\d+’s behaviour$/.test(text)) fail(`${where}: with no Claude Code the release badge reads "${text}"`);
          const hint = await badge.evaluate((el) => document.getElementById(el.getAttribute('aria-describedby') ?? '')?.textContent ?? '');
          if (!/Nothing on this machine was checked/.test(hint)) fail(`${where}: the badge's explanation reads "${hint}"`);
        };
        await notVerified('What Claude sees', page.getByTestId('claude-code').getByTestId('fidelity'));
        await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Settings', exact: true }).click();
        const install = page.getByTestId('claude-code-install');
        await install.getByText('No Claude Code found').waitFor();
        await notVerified('Settings', install.getByTestId('fidelity'));
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

    await run('a deep project folder in 800, 1024×640 and 1440×900 windows: nothing runs off the page', async () => {
      const home = path.join(tmp, 'deep', 'home');
      const env = envFor(home, path.join(tmp, 'deep', 'data'));
      const repo = path.join(home, 'code', 'customer-facing-platform-services', 'backend-monorepo-with-a-deliberately-long-name',
        'packages', 'billing-and-invoicing-reconciliation-service');
      fs.mkdirSync(path.join(repo, '.claude', 'rules'), { recursive: true });
      execFileSync('git', ['init', '-q', repo], { env });
      fs.writeFileSync(path.join(repo, 'CLAUDE.md'), '# Billing\n\n- Money is integer cents.\n');
      fs.writeFileSync(path.join(repo, '.claude', 'rules', 'tests.md'), '- Every fix gets a regression test.\n');
      const mem = JSON.parse(execFileSync(bin, ['context', '--json', '--cwd', repo], { env, encoding: 'utf8' })).autoMemory.dir;
      fs.mkdirSync(mem, { recursive: true });
      const long = 'reconciliation-runs-nightly-against-the-ledger-export-and-never-during-business-hours';
      fs.writeFileSync(path.join(mem, `${long}.md`), `---\nname: ${long}\ndescription: When the reconciliation job may run\ntype: project\n---\nNightly only.\n`);
      fs.writeFileSync(path.join(mem, 'cents.md'), '---\nname: Integer cents\ndescription: Money is never a float\ntype: feedback\n---\nUse integer cents.\n');
      // A dozen more, all in the index, so the graph fills its canvas and some of its labels start
      // near the right edge, where the long name above would run out of it.
      const more = ['Database operations should be transactional', 'Shared types audit (mostly done)', 'feedback_react19_event_types',
        'Standardize null vs undefined', 'useChat URL conversation loading', 'Metadata route follow-ups', 'feedback_encryption_cache',
        'Future Feature Ideas', 'feedback_lint_patterns', 'feedback_e2e_patterns', 'project_status', 'feedback_zod_mini'];
      more.forEach((name, i) => fs.writeFileSync(path.join(mem, `more${i}.md`), `---\nname: ${name}\ndescription: Note ${i}\ntype: feedback\n---\nNote ${i}.\n`));
      fs.writeFileSync(path.join(mem, 'MEMORY.md'), '- [Integer cents](cents.md) — money is never a float\n'
        + more.map((name, i) => `- [${name}](more${i}.md) — note ${i}\n`).join(''));
      const server = await startServer(bin, env);
      let context;
      try {
        let page;
        ({ page, context } = await openPage(server, 'deep folder'));
        await page.setViewportSize({ width: 800, height: 800 });
        await page.locator('#folder').fill(repo);
        await page.locator('#folder').press('Enter');
        await page.getByTestId('context-block').waitFor();
        const nav = page.getByRole('navigation', { name: 'Screens' });
        // The sizes people use too: a 1024 px window keeps the sidebar, leaving the page less
        // room than an 800 px one (where the sidebar becomes a bar on top).
        for (const [width, height] of [[800, 800], [1024, 640], [1440, 900]]) {
          await page.setViewportSize({ width, height });
          // The 1024×640 pass in the dark theme, where faint states are hardest to tell apart.
          const dark = width === 1024;
          await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
          for (const label of await nav.getByRole('link').allInnerTexts()) {
            await nav.getByRole('link', { name: label, exact: true }).click();
            await screenReady(page, label);
            if (label === 'Memories') {
              await page.getByTestId('memory-list').getByText(long).first().waitFor();
              // Cut with an ellipsis in its one-line row, the whole name shows on hover.
              const title = await page.getByTestId('memory-list').locator('.mem-name', { hasText: long }).first().getAttribute('title');
              if (title !== long) fail(`the long memory name's row offers "${title}" on hover, not the whole name`);
            }
            const id = label.toLowerCase().replace(/[^a-z]+/g, '-');
            if (width === 800) await shoot(page, path.join(SHOTS, 'narrow', `${id}.png`));
            await checkFits(page, `${label} at ${width}×${height} with a deep project folder`, fail);
            await checkCodeWraps(page, `${label} at ${width}×${height}`);
            await checkEmptyMeters(page, `${label} at ${width}×${height}`);
            if (dark) await checkAccessible(page, `${label} at ${width}×${height} in the dark theme`, fail);
            if (label === 'What Claude sees' && width === 800) {
              // Copy in a window that may not use the clipboard either way says so, with what to do.
              await page.evaluate(() => {
                navigator.clipboard.writeText = () => Promise.reject(new DOMException('denied', 'NotAllowedError'));
                document.execCommand = () => false;
              });
              try {
                await page.getByTestId('copy-block').click();
                const said = (await page.getByTestId('copy-failed').textContent()) ?? '';
                if (!/Select the text and copy it by hand/.test(said)) fail(`the exact block's Copy that failed says "${said}"`);
              } finally {
                await page.evaluate(() => {
                  delete navigator.clipboard.writeText;
                  delete document.execCommand;
                });
              }
            }
            if (label === 'Memories') {
              // The memory with the long name open, and the new-memory form (whose type menu is
              // wider than the column beside the list at 1024 px), fit as well.
              await page.getByTestId('memory-list').getByText(long).first().click();
              await page.getByTestId('memory-raw').or(page.getByLabel('Body (Markdown)')).first().waitFor();
              await checkFits(page, `a memory open at ${width}×${height}`, fail);
              // Save, disabled until something is typed, looks disabled.
              await checkDisabledPrimary(page, page.getByTestId('save-memory'), `Save with nothing typed at ${width}×${height}${dark ? ' (dark)' : ''}`);
              if (dark) await checkAccessible(page, `a memory open at ${width}×${height} in the dark theme`, fail);
              // The list scrolled past its end with the wheel leaves the page (and the open
              // memory's title) where it was; another memory opened from its end shows its title.
              await page.getByTestId('memory-list').hover();
              await page.mouse.wheel(0, 4000);
              await page.waitForFunction(() => {
                const el = document.querySelector('.mem-scroll');
                return el && el.scrollTop + el.clientHeight >= el.scrollHeight - 2;
              });
              await page.mouse.wheel(0, 2000);
              await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
              await checkTitleBelowBar(page, `the memory list scrolled past its end at ${width}×${height}`);
              await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
              const lastRow = page.locator('.mem-row:not(.selected)').last();
              const lastRel = await lastRow.getAttribute('data-relpath');
              await lastRow.click();
              await page.locator(`[data-testid="memory-editor"][aria-label="Memory ${lastRel}"] h2`).waitFor();
              await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
              await checkTitleBelowBar(page, `another memory opened with the page scrolled down at ${width}×${height}`);
              // Its Markdown and preview each get a readable width, side by side or one above the other.
              const panes = await page.locator('.split-pane').evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().width)));
              if (panes.length !== 2 || panes.some((w) => w < 250)) fail(`at ${width}×${height} the memory's Markdown and preview are ${panes.join(' and ')} px wide`);
              await page.getByTestId('new-memory').click();
              await page.locator('#nm-type').waitFor();
              await checkFits(page, `the new-memory form at ${width}×${height}`, fail);
              await page.getByRole('button', { name: 'Cancel', exact: true }).click();
            }
            if (label === 'Graph') {
              // Every label drawn stays inside the canvas (the memory named without spaces is wider
              // than the room right of its node): moved left of the node or cut with an ellipsis.
              const { labels, width: canvas } = await page.evaluate(() => window.__mnemeGraph.labels());
              if (!labels.length) fail(`the graph at ${width} px draws no labels`);
              const past = labels.filter((l) => l.x0 < 0 || l.x1 > canvas);
              if (past.length) fail(`graph labels run past the ${canvas} px canvas: ${past.map((l) => `"${l.text}" ${l.x0.toFixed(0)}–${l.x1.toFixed(0)}`).join(', ')}`);
            }
          }
        }
        // Opened again (a start opens on the project opened last), the folder box shows the end
        // of the deep path (the project's own folder), not the start every project shares.
        const again = await openPage(server, 'deep folder again');
        try {
          await again.page.getByTestId('context-block').waitFor();
          await again.page.waitForFunction(() => {
            const el = document.getElementById('folder');
            return el && el.scrollWidth > el.clientWidth && el.scrollLeft + el.clientWidth >= el.scrollWidth - 2;
          }, null, { timeout: 5_000 }).catch(async () => {
            const box = await again.page.locator('#folder').evaluate((el) => `${el.scrollLeft} of ${el.scrollWidth - el.clientWidth} px`);
            fail(`the folder box shows the start of the deep path, not its end (scrolled ${box})`);
          });
        } finally {
          await again.context.close().catch(() => {});
        }
        // The server goes away: the live dot stops being green, and Memories says the engine is
        // not answering rather than "No memories yet" over a folder that holds two.
        const live = page.getByTestId('live-status');
        if (!(await live.getAttribute('class'))?.includes('state-live')) fail(`the live indicator is not live: ${await live.getAttribute('class')}`);
        page.removeAllListeners('console');
        await stopServer(server);
        await page.waitForFunction(() => !document.querySelector('[data-testid="live-status"]')?.classList.contains('state-live'));
        if (!/Connecting|Offline/.test(await live.innerText())) fail(`the live indicator reads ${await live.innerText()} with the server gone`);
        await nav.getByRole('link', { name: 'Projects', exact: true }).click();
        await nav.getByRole('link', { name: 'Memories', exact: true }).click();
        await page.locator('main [role="alert"]').first().waitFor();
        if (await page.getByText('No memories yet').count()) fail('Memories says "No memories yet" when the engine did not answer');
        if (await page.getByText('Write the first one').count()) fail('Memories invites a first memory when the engine did not answer');
        // Settings asks the engine once per section; with it gone the screen says so once, not
        // once a section. Every call the screen makes is waited for, then the banners counted.
        const calls = new Set();
        const track = (r) => { if (new URL(r.url()).pathname.startsWith('/api/')) calls.add(r); };
        const done = (r) => calls.delete(r);
        page.on('request', track);
        page.on('requestfailed', done);
        page.on('requestfinished', done);
        await nav.getByRole('link', { name: 'Settings', exact: true }).click();
        await page.locator('main [role="alert"]').first().waitFor();
        await page.getByTestId('claude-code-install').waitFor();
        const until = Date.now() + TIMEOUT;
        while (calls.size && Date.now() < until) await page.waitForTimeout(50);
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        const said = await page.locator('main [role="alert"]', { hasText: 'Mneme is not answering' }).count();
        if (said !== 1) fail(`Settings shows "Mneme is not answering" ${said} times with the engine gone; once is enough`);
        page.off('request', track);
        page.off('requestfailed', done);
        page.off('requestfinished', done);
      } finally {
        await context?.close().catch(() => {});
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
            const id = label.toLowerCase().replace(/[^a-z]+/g, '-');
            await shoot(page, path.join(SHOTS, 'realworld', name, `${id}.png`));
            if (label === 'Memories' && !fs.existsSync(path.join(CORPUS, name, 'tree', '.claude', 'memory'))) {
              // No auto memory in this repository: an empty folder is not a broken index.
              await page.getByTestId('health-empty').waitFor();
              if (await page.getByTestId('fix-index').isEnabled()) fail(`${name}: Fix index is offered for a folder with nothing saved`);
              // Nor Details, which had nothing to open and, once pressed, no way to fold again.
              if (await page.getByTestId('health-details').count()) fail(`${name}: the Health card offers Details for a folder with nothing saved`);
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
