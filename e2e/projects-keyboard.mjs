#!/usr/bin/env node
// The Projects screen by keyboard alone, in headless Chromium against the real `mneme serve`
// (the same tools as e2e/run.mjs, in a file of its own so it runs without the team server and
// keyring):
//
//   MNEME_BIN=/path/to/mneme node e2e/projects-keyboard.mjs     (after `npm run build:ui`)
//   E2E_UI_DIST=/path/to/dist …                                 another UI build
//   E2E_KEEP=1 …                                                keeps the temporary home
//
// A home with a project, forty more, and an orphaned memory folder (a worktree deleted, its
// memory left behind) that is the oldest, so the last row. The run goes from the first row to
// the last by End, opens its "Merge into…" panel by Enter, asks for the plan, and checks that
// the plan holds Tab until it is answered (Tab and Shift+Tab wrap between its two buttons),
// that Escape and its Cancel each put away the plan alone and give the keyboard back to Review,
// that Escape then closes the panel with the keyboard back on the row, and finally merges by
// keyboard. About 10 s.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkAccessible } from './checks.mjs';
import { failer, preflight, keepFailure, stop, removeUnlessKept, runMain, write, startServer, api as callApi, waitFor as poll } from './harness.mjs';

const fail = failer('projects-keyboard');
const api = (server, method, body) => callApi(server, method, body, fail);
const waitFor = (what, fn, timeout = TIMEOUT) => poll(what, fn, timeout, fail);

const TIMEOUT = 15_000;
const OTHERS = 40;

/** Claude Code's project folder name for a short path. */
const folderOf = (p) => p.replace(/[^a-zA-Z0-9]/g, '-');

/** A transcript naming `cwd`, last written `hoursAgo` hours ago: what makes Claude Code's
 *  projects folder list a project. */
function session(config, cwd, id, hoursAgo) {
  const file = path.join(config, 'projects', folderOf(cwd), `${id}.jsonl`);
  write(file, JSON.stringify({ type: 'user', cwd, sessionId: id, message: { role: 'user', content: 'hi' } }) + '\n');
  const t = new Date(Date.now() - hoursAgo * 3_600_000);
  fs.utimesSync(file, t, t);
}

function buildFixture() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mneme-e2e-projects-keyboard-')));
  const home = path.join(tmp, 'home');
  const config = path.join(home, '.claude');
  const env = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', TZ: 'UTC', HOME: home, CLAUDE_CONFIG_DIR: config, MNEME_DATA_DIR: path.join(tmp, 'data') };
  const repo = path.join(home, 'code', 'shop');
  fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
  const mem = path.join(config, 'projects', folderOf(repo), 'memory');
  write(path.join(mem, 'MEMORY.md'), '- [Deploy](deploy.md) — ships on Tuesdays\n');
  write(path.join(mem, 'deploy.md'), '---\nname: deploy\ndescription: ships on Tuesdays\nmetadata:\n  type: project\n---\n\nReleases ship on Tuesdays.\n');
  session(config, repo, '00000000-1111-4111-8111-111111111111', 0);
  for (let p = 1; p <= OTHERS; p++) {
    const dir = path.join(home, 'code', `service-${String(p).padStart(2, '0')}`);
    fs.mkdirSync(dir, { recursive: true });
    session(config, dir, `${String(p).padStart(8, '0')}-1111-4111-8111-111111111111`, p);
  }
  // The orphan: its worktree is gone, its memory is not; the oldest, so the last row.
  const gone = path.join(home, 'code', 'shop-old-worktree');
  const orphan = path.join(config, 'projects', folderOf(gone));
  write(path.join(orphan, 'memory', 'release-checklist.md'),
    '---\nname: release-checklist\ndescription: Tag, changelog, then deploy\nmetadata:\n  type: project\n---\n\nTag, changelog, deploy.\n');
  write(path.join(orphan, 'memory', 'MEMORY.md'), '- [Release checklist](release-checklist.md) — tag, changelog, deploy\n');
  session(config, gone, '0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f', OTHERS + 5);
  // The memory folder's own time counts too: older than every other project.
  const old = new Date(Date.now() - (OTHERS + 5) * 3_600_000);
  for (const f of ['memory/release-checklist.md', 'memory/MEMORY.md', 'memory', '']) fs.utimesSync(path.join(orphan, f), old, old);
  return { tmp, home, repo, mem, gone, orphan, env };
}

async function main() {
  const { bin, launch } = preflight(fail);
  const fx = buildFixture();
  const server = await startServer(bin, fx.home, fx.env);
  const browser = await launch();
  let page;
  try {
    await api(server, 'openProject', { cwd: fx.repo });
    const listed = await api(server, 'projects', {});
    const last = listed.length - 1;
    if (listed[last].folderName !== folderOf(fx.gone) || !listed[last].orphaned) fail(`the fixture's orphan is not the last project: ${listed.map((p) => p.folderName).join(', ')}`);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' })).newPage();
    page.setDefaultTimeout(TIMEOUT);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error' && !/\/api\/events/.test(m.location()?.url ?? '')) errors.push(m.text()); });

    /** Fails unless focus is on `loc` (once the page settles), with a ring that shows it. */
    const expectOn = async (loc, when) => {
      await waitFor(`focus on ${loc} ${when}`, () => loc.evaluate((el) => el === document.activeElement));
      const ring = await page.evaluate(() => {
        const s = getComputedStyle(document.activeElement);
        return s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
      });
      // The plan is read out whole as it takes focus: a region, not a control, and drawn as one.
      if (!ring && !(await loc.evaluate((el) => el.getAttribute('role') === 'alertdialog'))) fail(`${when}, the focused ${loc} shows no focus ring`);
    };

    await page.goto(server.url);
    // The open project's screen first; then Projects, from the navigation.
    await page.locator('#main .screen-head h1').waitFor();
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Projects', exact: true }).click();
    const table = page.locator('table.projects');
    await table.locator('tbody tr[data-folder]').first().waitFor();
    if ((await table.getAttribute('aria-rowcount')) !== String(listed.length + 1)) fail(`the table says it has ${await table.getAttribute('aria-rowcount')} rows, not ${listed.length + 1}`);
    const rowOf = (p) => table.locator(`tr[data-folder="${p.folderName}"]`);

    // From the first row's button to the last row by End: the orphan, numbered as the last row.
    await rowOf(listed[0]).getByRole('button', { name: 'Memories', exact: true }).focus();
    await page.keyboard.press('ArrowDown');
    await expectOn(rowOf(listed[1]), 'after ↓ from the first row\'s Memories');
    await page.keyboard.press('End');
    const orphanRow = rowOf(listed[last]);
    await expectOn(orphanRow, 'after End');
    if ((await orphanRow.getAttribute('aria-rowindex')) !== String(listed.length + 1)) fail(`the last row says it is row ${await orphanRow.getAttribute('aria-rowindex')}`);

    // Enter on the row does what its button does: the merge panel opens on the project picker,
    // and the table counts the panel's row.
    await page.keyboard.press('Enter');
    const panel = page.getByTestId('merge-panel');
    const target = panel.getByTestId('merge-target');
    await expectOn(target, 'after Enter on the orphan\'s row');
    if ((await target.inputValue()) !== fx.repo) fail(`the merge panel starts on ${await target.inputValue()}, not the open project`);
    if ((await table.getAttribute('aria-rowcount')) !== String(listed.length + 2)) fail('the table does not count the merge panel\'s row');
    if ((await page.locator('tr.merge-row').getAttribute('aria-rowindex')) !== String(listed.length + 2)) fail('the merge panel\'s row is not numbered after its project');

    // The plan: it takes focus, and Tab and Shift+Tab go round its two buttons only.
    const review = panel.getByTestId('merge-review');
    const plan = panel.getByTestId('merge-plan');
    const confirm = plan.getByTestId('merge-confirm');
    const cancel = plan.getByRole('button', { name: 'Cancel', exact: true });
    const askForPlan = async (when) => {
      await page.keyboard.press('Tab');
      await expectOn(review, `Tab from the project picker (${when})`);
      await page.keyboard.press('Enter');
      await expectOn(plan, `after Enter on Review (${when})`);
    };
    await askForPlan('first');
    await checkAccessible(page, 'the merge plan', fail);
    await page.keyboard.press('Tab');
    await expectOn(confirm, 'Tab from the plan');
    await page.keyboard.press('Tab');
    await expectOn(cancel, 'Tab from Merge');
    await page.keyboard.press('Tab');
    await expectOn(confirm, 'Tab from the plan\'s Cancel (the plan keeps the keyboard until it is answered)');
    await page.keyboard.press('Shift+Tab');
    await expectOn(cancel, 'Shift+Tab from Merge (round to the plan\'s last button)');
    await page.keyboard.press('Shift+Tab');
    await expectOn(confirm, 'Shift+Tab from the plan\'s Cancel');

    // Escape puts the plan away, not the panel: the keyboard is back on Review.
    await page.keyboard.press('Escape');
    await plan.waitFor({ state: 'detached' });
    if (!(await panel.isVisible())) fail('Escape in the merge plan closed the whole merge panel');
    await expectOn(review, 'after Escape in the merge plan');
    if (fs.existsSync(path.join(fx.mem, 'release-checklist.md'))) fail('putting the plan away merged');

    // So does the plan's Cancel.
    await page.keyboard.press('Enter');
    await expectOn(plan, 'after Enter on Review again');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await expectOn(cancel, 'Tab twice from the plan');
    await page.keyboard.press('Enter');
    await plan.waitFor({ state: 'detached' });
    await expectOn(review, 'after Enter on the plan\'s Cancel');

    // Escape in the panel closes it, and the keyboard goes back to the row it was opened from.
    await page.keyboard.press('Escape');
    await panel.waitFor({ state: 'detached' });
    await expectOn(orphanRow, 'after Escape in the merge panel');
    if ((await table.getAttribute('aria-rowcount')) !== String(listed.length + 1)) fail('the table still counts the closed merge panel\'s row');

    // And the merge itself, by keyboard: the report takes the keyboard.
    await page.keyboard.press('Enter');
    await expectOn(target, 'after Enter on the orphan\'s row again');
    await askForPlan('to merge');
    await page.keyboard.press('Tab');
    await expectOn(confirm, 'Tab from the plan, to merge');
    await page.keyboard.press('Enter');
    const report = page.getByTestId('merge-report');
    await expectOn(report.getByRole('button', { name: 'Dismiss' }), 'after Enter on Merge');
    if (!fs.existsSync(path.join(fx.mem, 'release-checklist.md'))) fail('the merge by keyboard did not move release-checklist.md into the project');

    if (errors.length) fail(`page errors: ${errors.join('; ')}`);
    console.log(`e2e (projects-keyboard): ok (${listed.length} projects)`);
  } catch (e) {
    await keepFailure(page, fx.tmp);
    throw e;
  } finally {
    await browser.close();
    await stop(server.child);
    removeUnlessKept(fx.tmp);
  }
}

runMain(main);
