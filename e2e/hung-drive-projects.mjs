#!/usr/bin/env node
// The Projects screen while one project's drive stops answering (a network share whose server
// went away, a USB stick whose FUSE daemon hangs), in headless Chromium against the real
// `mneme serve` (the same tools as e2e/run.mjs):
//
//   MNEME_BIN=/path/to/mneme node e2e/hung-drive-projects.mjs     (after `npm run build:ui`)
//   E2E_UI_DIST=/path/to/dist …                                   another UI build
//   E2E_KEEP=1 …                                                  keeps the temporary home
//
// As root only (mounting a drive needs it; as any other user the run says so and passes): a
// project on a real exFAT drive (an image formatted by mkfs.exfat on a loop device, mounted by
// mount.exfat-fuse, as crates/testsupport/src/exfat.rs does) whose FUSE daemon is then stopped
// with SIGSTOP, beside a healthy project and an orphan. The list must come, the hung project
// must say "drive not answering" and be offered neither the orphan's badge nor its merge, nor
// buttons that would open it; the others are as usual. Once the daemon is continued (SIGCONT)
// the mark must go away by itself, without a reload. The daemon is continued and the drive
// unmounted whatever happens, and a watchdog continues it in any case. About 15 s.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkAccessible } from './checks.mjs';
import { failer, preflight, keepFailure, stop, removeUnlessKept, runMain, write, startServer } from './harness.mjs';

const fail = failer('hung-drive-projects');
const TIMEOUT = 15_000;
/** Longer than any wait the fix needs (each drive gets 3 s): reaching it is the failure (a hang). */
const GIVE_UP = 30_000;

/** Claude Code's project folder name for a short path. */
const folderOf = (p) => p.replace(/[^a-zA-Z0-9]/g, '-');

function session(config, cwd, id) {
  write(path.join(config, 'projects', folderOf(cwd), `${id}.jsonl`), JSON.stringify({ type: 'user', cwd, sessionId: id, message: { role: 'user', content: 'hi' } }) + '\n');
}

/** Runs a command to the end, failing the run with what to install when it cannot. */
function must(cmd, args, what) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    fail(`${what} failed (${cmd}: ${e.message.trim()}). Install exfatprogs and exfat-fuse (apt-get install -y exfatprogs exfat-fuse).`);
  }
}

/** The `mount.exfat-fuse` process serving the drive mounted on `at`. */
function daemonOf(at) {
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let args;
    try {
      args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (args[0]?.includes('mount.exfat') && args.includes(at)) return Number(pid);
  }
  fail(`no mount.exfat-fuse process serves ${at}`);
}

async function main() {
  if (process.getuid?.() !== 0) {
    console.log('e2e (hung-drive-projects): skipped: mounting a drive needs root');
    return;
  }
  const { bin, launch } = preflight(fail);
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mneme-e2e-hung-drive-')));
  const home = path.join(tmp, 'home');
  const config = path.join(home, '.claude');
  const env = { PATH: '/usr/bin:/bin:/usr/sbin:/sbin', LANG: 'C.UTF-8', TZ: 'UTC', HOME: home, CLAUDE_CONFIG_DIR: config, MNEME_DATA_DIR: path.join(tmp, 'data') };
  const stick = path.join(tmp, 'drives', 'stick');
  const image = `${stick}.img`;
  fs.mkdirSync(stick, { recursive: true });
  let device = null;
  let mounted = false;
  let daemon = null;
  let watchdog = null;
  let server = null;
  let browser = null;
  let page = null;
  try {
    fs.writeFileSync(image, '');
    fs.truncateSync(image, 64 << 20);
    must('mkfs.exfat', [image], 'formatting the drive');
    device = must('losetup', ['--find', '--show', image], 'attaching the drive to a loop device').trim();
    must('mount.exfat-fuse', [device, stick], 'mounting the drive');
    mounted = true;

    const onStick = path.join(stick, 'proj');
    fs.mkdirSync(onStick);
    session(config, onStick, '5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b');
    write(path.join(config, 'projects', folderOf(onStick), 'memory', 'MEMORY.md'), '- [Build](build.md) — how to build\n');
    const shop = path.join(home, 'code', 'shop');
    fs.mkdirSync(shop, { recursive: true });
    session(config, shop, '6c2d0f2f-3044-4e8b-8b62-1d2e3f4a5b6c');
    const gone = path.join(home, 'code', 'shop-old-worktree');
    write(path.join(config, 'projects', folderOf(gone), 'memory', 'MEMORY.md'), '- [Old](old.md) — left behind\n');
    session(config, gone, '7d3e1a3a-4155-4f9c-9c73-2e3f4a5b6c7d');

    server = await startServer(bin, home, env);
    daemon = daemonOf(stick);
    process.kill(daemon, 'SIGSTOP');
    // Whatever hangs, the drive answers again in the end, so nothing is left blocked.
    watchdog = setTimeout(() => process.kill(daemon, 'SIGCONT'), 90_000);
    watchdog.unref();

    // The list as the page gets it, bounded: a list that waits for the drive fails here.
    const u = new URL(server.url);
    const res = await fetch(`${u.origin}/api/projects`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${u.searchParams.get('token')}`, 'Content-Type': 'application/json' },
      body: '{}',
      signal: AbortSignal.timeout(GIVE_UP),
    }).catch((e) => fail(`the project list did not come within 30 s while a drive hangs (${e.message})`));
    const listed = await res.json();
    if (!res.ok) fail(`API projects answered ${res.status}: ${JSON.stringify(listed)}`);
    const by = (p) => listed.find((x) => x.folderName === folderOf(p)) ?? fail(`${p} is not listed: ${JSON.stringify(listed)}`);
    if (!by(onStick).driveNotAnswering || by(onStick).orphaned) fail(`the hung project is not listed as not answering: ${JSON.stringify(by(onStick))}`);
    if (by(shop).driveNotAnswering || !by(shop).projectExists) fail(`the healthy project is not listed as usual: ${JSON.stringify(by(shop))}`);
    if (!by(gone).orphaned) fail(`the orphan is not listed as orphaned: ${JSON.stringify(by(gone))}`);

    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' })).newPage();
    page.setDefaultTimeout(TIMEOUT);
    await page.goto(server.url);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Projects', exact: true }).click();
    const table = page.locator('table.projects');
    const rowOf = (p) => table.locator(`tr[data-folder="${folderOf(p)}"]`);
    await rowOf(onStick).waitFor().catch(() => fail('the Projects screen does not show the project on the hung drive'));
    const hungRow = rowOf(onStick);
    if (!(await hungRow.getByText('drive not answering', { exact: true }).isVisible())) fail('the hung project\'s row does not say "drive not answering"');
    if (await hungRow.getByText('orphaned', { exact: true }).count()) fail('the hung project is called orphaned');
    if (await hungRow.getByRole('button').count()) fail(`the hung project's row offers ${await hungRow.getByRole('button').allTextContents()}: neither merging its memory nor opening it`);
    if (!(await rowOf(shop).getByRole('button', { name: 'Memories', exact: true }).isVisible())) fail('the healthy project cannot be opened');
    if (!(await rowOf(gone).getByRole('button', { name: 'Merge into…', exact: true }).isVisible())) fail('the orphan is not offered its merge');
    await checkAccessible(page, 'the Projects screen with a hung drive', fail);

    // The drive answers again: the mark goes away by itself (the screen looks again every few
    // seconds while a drive does not answer), with no reload and no change on disk.
    process.kill(daemon, 'SIGCONT');
    await hungRow.getByText('drive not answering', { exact: true }).waitFor({ state: 'detached', timeout: GIVE_UP })
      .catch(() => fail('the "drive not answering" mark stayed 30 s after the drive answered again'));
    await hungRow.getByRole('button', { name: 'Memories', exact: true }).waitFor({ timeout: TIMEOUT })
      .catch(() => fail('the project whose drive answers again cannot be opened'));
    console.log('e2e (hung-drive-projects): passed');
  } catch (e) {
    await keepFailure(page, tmp);
    throw e;
  } finally {
    if (daemon) process.kill(daemon, 'SIGCONT');
    if (watchdog) clearTimeout(watchdog);
    await browser?.close();
    if (server) await stop(server.child);
    if (mounted) {
      try {
        execFileSync('umount', [stick], { stdio: 'ignore' });
      } catch {
        execFileSync('umount', ['-l', stick], { stdio: 'ignore' });
      }
    }
    if (device) execFileSync('losetup', ['-d', device], { stdio: 'ignore' });
    removeUnlessKept(tmp);
  }
}

runMain(main);
