#!/usr/bin/env node
// The Dreams and Inbox screens when the mode they show cannot be read, in headless Chromium
// against the real `mneme serve` (the same tools as e2e/run.mjs, in a file of its own so it runs
// without the team server and keyring):
//
//   MNEME_BIN=/path/to/mneme node e2e/mode-unread.mjs     (after `npm run build:ui`)
//   E2E_UI_DIST=/path/to/dist …                           another UI build
//   E2E_KEEP=1 …                                          keeps the temporary home (with a
//                                                         screenshot of each screen's error)
//
// A damaged dream mode file, or a project's review mode a newer Mneme saved, makes the screen's
// load fail with an error that says to choose the mode again on that screen. The screen must
// show the error and keep its mode chooser (no mode shown as in force); choosing one rewrites
// the mode, the error goes and the screen loads. The other projects' review modes stay as they
// were. A few seconds.

import fs from 'node:fs';
import path from 'node:path';
import { checkAccessible } from './checks.mjs';
import { failer, write, preflight, shopHome, inBrowser, runMain, api as callApi } from './harness.mjs';

const fail = failer('mode-unread');
const api = (server, method, body) => callApi(server, method, body, fail);

const TIMEOUT = 10_000;

function buildFixture() {
  const fx = shopHome('mneme-e2e-mode-unread-');
  const memory = path.join(fx.config, 'projects', fx.repo.replace(/[^a-zA-Z0-9]/g, '-'), 'memory');
  write(path.join(memory, 'MEMORY.md'), '- [Deploy](deploy.md) — ships on Tuesdays\n');
  write(path.join(memory, 'deploy.md'), '---\nname: Deploy\ndescription: ships on Tuesdays\ntype: project\n---\n\nReleases ship on Tuesdays.\n');
  return fx;
}

/** The one file named `name` under `dir`. */
function findFile(dir, name) {
  const found = fs.readdirSync(dir, { recursive: true }).filter((f) => path.basename(f) === name).map((f) => path.join(dir, f));
  if (found.length !== 1) fail(`expected one ${name} under ${dir}, found ${found.length}: ${found.join(', ')}`);
  return found[0];
}

async function main() {
  const { bin, launch } = preflight(fail);
  const fx = buildFixture();
  await inBrowser(bin, launch, fx, async (session) => {
    const server = await session.serve();
    await api(server, 'openProject', { cwd: fx.repo });
    const page = await session.newPage({ width: 1280, height: 900 }, TIMEOUT);
    const nav = (label) => page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: label, exact: true }).click();
    const alert = page.locator('#main [role="alert"]');
    const checked = async (name) => page.locator(`input[name="${name}"]:checked`).evaluateAll((rs) => rs.map((r) => r.value));
    /** The error shows with the chooser beside it, no mode in force; answers the error's text. */
    const errorWithChooser = async (screen, card, radios, says) => {
      await alert.filter({ hasText: says }).waitFor().catch(() => fail(`${screen} does not show the error saying "${says}": ${fx.tmp}`));
      await page.getByTestId(card).waitFor().catch(() => fail(`${screen} shows no mode chooser beside the error`));
      if ((await checked(radios)).length) fail(`${screen} shows ${await checked(radios)} as the mode in force although it cannot be read`);
      await checkAccessible(page, `${screen} with its mode unread`, fail);
      if (process.env.E2E_KEEP) await page.screenshot({ path: path.join(fx.tmp, `${screen.toLowerCase()}-mode-unread.png`), fullPage: true });
      return alert.innerText();
    };

    // Dreams: the folder's mode file, damaged.
    await api(server, 'setDreamMode', { cwd: fx.repo, mode: 'review' });
    const dreamModes = findFile(path.join(fx.data, 'dreams'), 'settings.json');
    fs.writeFileSync(dreamModes, '{"modes": {');
    await page.goto(server.url);
    await nav('Dreams');
    const dreamError = await errorWithChooser('Dreams', 'dream-mode', 'dream-mode', 'choose the mode again on this screen');
    if (!dreamError.includes(dreamModes)) fail(`the Dreams error does not name the mode file: ${dreamError}`);
    await page.getByTestId('dream-mode-off').click();
    await alert.waitFor({ state: 'detached' }).catch(() => fail('the Dreams error stays after choosing a mode'));
    await page.getByTestId('dream-history-empty').waitFor().catch(() => fail('the Dreams history does not load after choosing a mode'));
    await page.getByTestId('dream-mode-unread').waitFor({ state: 'detached' });
    if (String(await checked('dream-mode')) !== 'off') fail(`Dreams shows ${await checked('dream-mode')} in force after choosing Off`);
    if ((await api(server, 'dreamStatus', { cwd: fx.repo })).mode !== 'off') fail('the dream mode chosen on the screen was not saved');
    if (await page.getByTestId('dream-now').isDisabled()) fail('Dream now stays disabled after the mode is mended');

    // Inbox: this project's review mode saved by a newer Mneme; another project's mode beside it.
    await api(server, 'setReviewMode', { cwd: fx.repo, mode: 'review' });
    const reviewModes = path.join(fx.data, 'extract', 'modes.json');
    const [key] = Object.keys(JSON.parse(fs.readFileSync(reviewModes, 'utf8')));
    fs.writeFileSync(reviewModes, JSON.stringify({ [key]: 'held', '/other/memory': 'off' }));
    await nav('Inbox');
    const inboxError = await errorWithChooser('Inbox', 'review-mode', 'review-mode', 'choose the mode again on this screen');
    if (!inboxError.includes(reviewModes)) fail(`the Inbox error does not name the modes file: ${inboxError}`);
    await page.getByTestId('mode-review').click();
    await alert.waitFor({ state: 'detached' }).catch(() => fail('the Inbox error stays after choosing a mode'));
    await page.getByTestId('inbox-empty').getByText('Each extraction run').waitFor().catch(() => fail('the Inbox does not load in Review mode after choosing it'));
    await page.getByTestId('review-mode-unread').waitFor({ state: 'detached' });
    if (String(await checked('review-mode')) !== 'review') fail(`Inbox shows ${await checked('review-mode')} in force after choosing Review`);
    const modes = JSON.parse(fs.readFileSync(reviewModes, 'utf8'));
    if (Object.keys(modes).length !== 2 || modes[key] !== 'review' || modes['/other/memory'] !== 'off') fail(`the modes file after choosing: ${JSON.stringify(modes)}`);

    if (page.errors.length) fail(`page errors: ${page.errors.join('; ')}`);
    console.log('e2e (mode-unread): ok');
  });
}

runMain(main);
