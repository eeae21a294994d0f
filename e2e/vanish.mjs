#!/usr/bin/env node
// The open project's folder going away while the app is open, in headless Chromium against the
// real `mneme serve` (the same tools as e2e/run.mjs, in a file of its own so it runs without the
// team server and keyring):
//
//   MNEME_BIN=/path/to/mneme node e2e/vanish.mjs     (after `npm run build:ui`)
//   E2E_UI_DIST=/path/to/dist …                      another UI build
//   E2E_NO_SCREENSHOTS=1 …                           does not rewrite docs/screenshots
//   E2E_KEEP=1 …                                     keeps the temporary home and prints where
//
// People keep the app open for hours: a `git checkout`, an `rm -rf`, a rename or an unmounted
// drive takes the project folder away under it. The run opens a project on What Claude sees,
// then removes the folder, renames it away and back, and (as root) puts it on a tmpfs that is
// unmounted and mounted again. Each time every project screen must say the folder is not there
// and what to do, instead of an engine error meant for the command line, and come back by itself
// with the folder; nothing may be written where the folder was while it is gone. A drive mounted
// inside the project (rules shared in .claude/rules) shows its rules by itself and, unmounted,
// takes them away. About 30 s.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkAccessible } from './checks.mjs';
import { SHOTS, failer, write, preflight, startServer, stop, removeUnlessKept, runMain, api as callApi } from './harness.mjs';

const fail = failer('vanish');
const api = (server, method, body) => callApi(server, method, body, fail);

const TIMEOUT = 10_000;

/** The project's files, as a checkout of its branch would make them again. */
function makeProject(repo) {
  fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
  write(path.join(repo, 'CLAUDE.md'), '# Shop\n\nThe storefront service.\n');
  write(path.join(repo, '.claude', 'rules', 'style.md'), 'Use tabs.\n');
}

function buildFixture() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mneme-e2e-vanish-')));
  const home = path.join(tmp, 'home');
  const config = path.join(home, '.claude');
  const repo = path.join(home, 'src', 'shop');
  const env = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', TZ: 'UTC', HOME: home, CLAUDE_CONFIG_DIR: config, MNEME_DATA_DIR: path.join(tmp, 'data') };
  makeProject(repo);
  const memory = path.join(config, 'projects', repo.replace(/[^a-zA-Z0-9]/g, '-'), 'memory');
  write(path.join(memory, 'MEMORY.md'), '- [Deploy](deploy.md) — ships on Tuesdays\n');
  write(path.join(memory, 'deploy.md'), '---\nname: Deploy\ndescription: ships on Tuesdays\ntype: project\n---\n\nReleases ship on Tuesdays.\n');
  return { tmp, home, repo, env };
}

/** Runs a command; false when it could not (not root, no tmpfs). */
function run(cmd, args) {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function main() {
  const { bin, launch } = preflight(fail);
  const fx = buildFixture();
  const shots = !process.env.E2E_NO_SCREENSHOTS;
  const server = await startServer(bin, fx.home, fx.env);
  const browser = await launch();
  /** Drives still mounted, unmounted at the end whatever happened. */
  const mounted = [];
  try {
    await api(server, 'openProject', { cwd: fx.repo });
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' })).newPage();
    page.setDefaultTimeout(TIMEOUT);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const nav = (label) => page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: label, exact: true }).click();
    const gone = page.getByTestId('folder-gone');
    const context = async () => {
      await page.getByText('The storefront service.').or(page.getByText('Shop again')).first().waitFor().catch(() => {});
      await page.locator('#main').getByText('CLAUDE.md', { exact: true }).first().waitFor();
    };
    /** Every project screen says the folder is gone, none shows an engine error. */
    const saysGone = async (when, folder = fx.repo, shown = '~/src/shop') => {
      for (const s of ['Memories', 'Dreams', 'Recall bench', 'Team', 'What Claude sees']) {
        await nav(s);
        await gone.waitFor().catch(() => fail(`${s} does not say the folder is gone (${when})`));
        const text = await page.locator('#main').innerText();
        if (/Pass --cwd|is not a folder/.test(text)) fail(`${s} shows the command line's error (${when}): ${text}`);
        if (!text.includes(shown) || !/comes? back|is back/.test(text)) fail(`${s} does not say which folder or what to do (${when}): ${text}`);
        const title = await page.locator('#main .screen-head h1').innerText();
        if (title !== s) fail(`the notice on ${s} is titled ${title}`);
      }
      if (fs.existsSync(folder)) fail(`something made ${folder} again while it was gone (${when}): ${fs.readdirSync(folder).join(', ')}`);
    };
    const comesBack = async (when) => {
      await gone.waitFor({ state: 'detached' }).catch(() => fail(`What Claude sees did not come back by itself (${when})`));
      await context();
    };

    await page.goto(server.url);
    await nav('What Claude sees');
    await context();

    // rm -rf, then the checkout that makes it again.
    fs.rmSync(fx.repo, { recursive: true, force: true });
    await gone.waitFor().catch(() => fail('What Claude sees does not notice its folder was removed'));
    await checkAccessible(page, 'the folder-gone notice', fail);
    if (shots) await page.screenshot({ path: path.join(SHOTS, 'project-folder-gone.png') });
    await saysGone('removed');
    // Settings does not depend on the project: it stays.
    await nav('Settings');
    if (await gone.count()) fail('Settings gives way to the folder-gone notice');
    await nav('What Claude sees');
    makeProject(fx.repo);
    write(path.join(fx.repo, 'CLAUDE.md'), '# Shop again\n');
    await comesBack('made again');

    // The button leads to the other projects.
    fs.renameSync(fx.repo, `${fx.repo}-old`);
    await gone.waitFor().catch(() => fail('What Claude sees does not notice its folder was renamed'));
    await saysGone('renamed');
    await page.getByTestId('folder-gone-projects').click();
    await page.locator('#main .screen-head h1', { hasText: 'Projects' }).waitFor();
    await nav('What Claude sees');
    fs.renameSync(`${fx.repo}-old`, fx.repo);
    await comesBack('renamed back');

    // Rules shared from a drive mounted inside the project's .claude (root only): no watch hears
    // of a mount, so the watcher must notice the drive's rules coming and going by itself.
    const shared = path.join(fx.repo, '.claude', 'rules', 'shared');
    fs.mkdirSync(shared, { recursive: true });
    if (run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', shared])) {
      mounted.push(shared);
      write(path.join(shared, 'team.md'), 'Team rule from the drive.\n');
      await page.getByText('Team rule from the drive.').first().waitFor().catch(() => fail('a rule on a drive mounted in .claude/rules does not show'));
      if (!run('umount', [shared])) fail('the tmpfs in .claude/rules could not be unmounted');
      mounted.pop();
      await page.getByText('Team rule from the drive.').first().waitFor({ state: 'detached' }).catch(() => fail('the rule of a drive unmounted from .claude/rules still shows'));
      await context();
    } else {
      console.log('e2e (vanish): skipped the drive in .claude/rules: mounting a tmpfs needs root');
    }

    // A project on a drive that is unmounted and mounted again (root only): the kernel ends the
    // watches with no event the watcher hears, so it must notice by itself.
    const drive = path.join(fx.tmp, 'drive');
    fs.mkdirSync(drive);
    if (run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', drive])) {
      mounted.push(drive);
      const onDrive = path.join(drive, 'shop');
      makeProject(onDrive);
      await page.locator('#folder').fill(onDrive);
      await page.locator('#folder').press('Enter');
      await page.locator('#main .lede code', { hasText: 'drive/shop' }).first().waitFor();
      await context();
      if (!run('umount', [drive])) fail('the tmpfs could not be unmounted');
      await gone.waitFor().catch(() => fail('What Claude sees does not notice its drive was unmounted'));
      await saysGone('unmounted', onDrive, 'drive/shop');
      if (fs.readdirSync(drive).length) fail(`something was written where the drive was mounted: ${fs.readdirSync(drive).join(', ')}`);
      if (!run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', drive])) fail('the tmpfs could not be mounted again');
      makeProject(onDrive);
      await comesBack('mounted again');
      // The watches are those of the drive mounted now: an edit there shows.
      write(path.join(onDrive, 'CLAUDE.md'), '# Shop on the drive\n');
      await page.getByText('Shop on the drive').first().waitFor().catch(() => fail('an edit on the drive mounted again does not show'));
    } else {
      console.log('e2e (vanish): skipped the unmounted drive: mounting a tmpfs needs root');
    }
    if (errors.length) fail(`page errors: ${errors.join('; ')}`);
    console.log('e2e (vanish): ok');
  } finally {
    await browser.close();
    await stop(server.child);
    for (const m of mounted.reverse()) run('umount', ['-l', m]);
    removeUnlessKept(fx.tmp);
  }
}

runMain(main);
