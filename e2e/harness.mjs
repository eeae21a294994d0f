// What every browser run (run.mjs, screens.mjs, agents.mjs, scale.mjs, vanish.mjs) shares, one
// definition each: where things are, how Chromium is started, the checks made before a fixture is
// built, a file writer, an environment that sees only a throwaway home, `mneme serve` started on a
// free port and stopped, its API called with the page's token, a polling wait, the re-run under a
// private keyring, and for the small runs of one screen each a throwaway home with a project and
// the browser-and-server session around their steps. Each run keeps its own `fail` (its name in
// the message) and hands it in.

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** `require` as the UI's package sees it: playwright-core and axe-core are the UI's dev dependencies. */
export const requireUi = createRequire(path.join(ROOT, 'ui', 'package.json'));
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--password-store=basic'];
// E2E_SHOTS_DIR: screenshots somewhere else than docs/screenshots, to look at a run's pictures
// without rewriting the committed ones.
export const SHOTS = process.env.E2E_SHOTS_DIR ? path.resolve(process.env.E2E_SHOTS_DIR) : path.join(ROOT, 'docs', 'screenshots');
// Helpers sharing one checkout each build the UI into a folder of their own.
export const UI_DIST = process.env.E2E_UI_DIST ? path.resolve(process.env.E2E_UI_DIST) : path.join(ROOT, 'ui', 'dist');

/** A `fail` that names the run (none for the main run): marks the process failed and stops the step. */
export function failer(run) {
  return (msg) => {
    console.error(`\ne2e${run ? ` (${run})` : ''} FAILED: ${msg}`);
    process.exitCode = 1;
    throw new Error(msg);
  };
}

export function write(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** The mneme binary: MNEME_BIN, else the first debug build in CARGO_TARGET_DIR, this checkout's target/ or the shared cache. */
export function findBinary() {
  if (process.env.MNEME_BIN) return path.resolve(process.env.MNEME_BIN);
  const candidates = [process.env.CARGO_TARGET_DIR && path.join(process.env.CARGO_TARGET_DIR, 'debug', 'mneme'),
    path.join(ROOT, 'target', 'debug', 'mneme'), path.join(os.homedir(), '.cache', 'mneme', 'target', 'debug', 'mneme')].filter(Boolean);
  return candidates.find((c) => fs.existsSync(c)) ?? candidates[0];
}

/**
 * Checks, before any fixture is built, that the binary, the UI build, Chromium and playwright-core
 * are there, each failure saying how to get it; answers the binary and how to start the browser.
 */
export function preflight(fail) {
  const bin = findBinary();
  if (!fs.existsSync(bin)) fail(`no mneme binary at ${bin}. Build it with \`cargo build -p mneme\` or set MNEME_BIN.`);
  if (!fs.existsSync(path.join(UI_DIST, 'index.html'))) fail(`no UI build in ${UI_DIST}. Build it first (npm run build:ui) or set E2E_UI_DIST.`);
  if (!fs.existsSync(CHROMIUM)) fail(`no Chromium at ${CHROMIUM}. Install it: apt-get install -y chromium (or set CHROMIUM=/path).`);
  let chromium;
  try {
    ({ chromium } = requireUi('playwright-core'));
  } catch {
    fail('playwright-core is not installed. Run: npm ci --prefix ui');
  }
  return { bin, launch: () => chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true }) };
}

/**
 * An environment in which mneme, git and Claude Code see only `home`: its config home and XDG
 * folders are in it, Mneme's data in `data`, no system git config; the private keyring session
 * (see `underKeyring`) is passed on, with a keyring service of this run's own so nothing it
 * stores can meet a person's own entries.
 */
export function homeEnv(home, data, service) {
  return {
    PATH: process.env.PATH,
    LANG: 'C.UTF-8',
    TZ: 'UTC',
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    MNEME_DATA_DIR: data,
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    GIT_CONFIG_NOSYSTEM: '1',
    ...Object.fromEntries(['DBUS_SESSION_BUS_ADDRESS', 'GNOME_KEYRING_CONTROL', 'XDG_RUNTIME_DIR']
      .filter((k) => process.env[k]).map((k) => [k, process.env[k]])),
    MNEME_KEYRING_SERVICE: `mneme-${service}-${process.pid}`,
  };
}

/**
 * Runs the script at `scriptUrl` (its `import.meta.url`) again, with this run's arguments, inside
 * scripts/with-keyring.sh: a private D-Bus session with a fresh, unlocked gnome-keyring thrown away
 * afterwards, so signing in never touches a person's own keyring. Resolves to its exit code.
 */
export function underKeyring(scriptUrl) {
  return new Promise((resolve) => {
    const child = spawn(path.join(ROOT, 'scripts', 'with-keyring.sh'), [process.execPath, fileURLToPath(scriptUrl), ...process.argv.slice(2)], {
      stdio: 'inherit',
      env: { ...process.env, MNEME_E2E_KEYRING: '1' },
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.on('error', (e) => {
      console.error(`e2e: could not start scripts/with-keyring.sh: ${e.message}`);
      resolve(1);
    });
  });
}

/**
 * `mneme serve` on a free port with `extra` arguments, started in `cwd` with `env`; resolves once it
 * prints its URL. `as` ({ uid, gid }) runs it as another account, which must be able to read the
 * UI build.
 */
export function startServer(bin, cwd, env, extra = [], as = null) {
  const who = as ? ` (as uid ${as.uid})` : '';
  const hint = as ? ` (the UI build in ${UI_DIST} must be readable by others)` : '';
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--port', '0', '--ui-dir', UI_DIST, ...extra], { cwd, env, ...(as ? { uid: as.uid, gid: as.gid } : {}), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`mneme serve${who} printed no URL within 20 s.\nstdout: ${out}\nstderr: ${err}`)), 20_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /Mneme is running at (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], stderr: () => err });
      }
    });
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`mneme serve${who} exited with ${code} before printing its URL${hint}.\nstdout: ${out}\nstderr: ${err}`));
    });
  });
}

/**
 * Sends `signal` (SIGINT: `mneme serve` shuts down as on Ctrl-C) and waits for the process to
 * exit, killing it after `grace` ms, so no server outlives the run or holds its folder.
 */
export function stop(child, signal = 'SIGINT', grace = 3000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  child.kill(signal);
  return new Promise((r) => {
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      r();
    }, grace);
    child.on('exit', () => {
      clearTimeout(t);
      r();
    });
  });
}

/**
 * After a failure: a screenshot of what the page looked like is saved in the run's temporary
 * folder, and the folder is kept (E2E_KEEP) so the fixture can be looked at.
 */
export async function keepFailure(page, tmp) {
  await page?.screenshot({ path: path.join(tmp, 'failure.png') }).then(() => console.error(`screenshot of the failure: ${path.join(tmp, 'failure.png')}`), () => {});
  process.env.E2E_KEEP = '1';
}

/** Removes a run's temporary folder, or with E2E_KEEP set keeps it and says where. */
export function removeUnlessKept(tmp) {
  if (!process.env.E2E_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
  else console.log(`kept ${tmp}`);
}

/** Runs a script's `main`; an error `fail` has not already reported is printed, and the run fails. */
export function runMain(main) {
  main().catch((e) => {
    if (!process.exitCode) console.error(e);
    process.exitCode = 1;
  });
}

/** Calls one API method as the page does; an error answer fails the run. */
export async function api(server, method, body, fail) {
  const u = new URL(server.url);
  const res = await fetch(`${u.origin}/api/${method}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${u.searchParams.get('token')}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) fail(`API ${method} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Polls `fn` every 50 ms until it answers something truthy (returned), or fails after `timeout`. */
export async function waitFor(what, fn, timeout, fail) {
  const until = Date.now() + timeout;
  let last;
  while (Date.now() < until) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  fail(`timed out waiting for ${what}${last instanceof Error ? ` (${last.message})` : ''}`);
}

/**
 * A throwaway home for a run of one screen: `<tmp>/home` is HOME with its `.claude` config home,
 * Mneme's data in `<tmp>/data`, and a project `home/src/shop` (a `.git` folder and a CLAUDE.md)
 * to open; `env` is what `mneme serve` runs with there: the system's PATH only (so no Claude Code
 * is found and the screens render as the newest release Mneme checks), no keyring, UTC.
 */
export function shopHome(prefix) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  const home = path.join(tmp, 'home');
  const config = path.join(home, '.claude');
  const data = path.join(tmp, 'data');
  const repo = path.join(home, 'src', 'shop');
  const env = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', TZ: 'UTC', HOME: home, CLAUDE_CONFIG_DIR: config, MNEME_DATA_DIR: data };
  fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
  write(path.join(repo, 'CLAUDE.md'), '# Shop\n\nThe storefront service.\n');
  return { tmp, home, config, data, repo, env };
}

/**
 * Runs `steps(session)` with a browser and `mneme serve` in the home `fx` (from `shopHome`), and
 * whatever happens cleans up after it: a failure keeps a screenshot of the open page and the
 * home (E2E_KEEP); the browser is closed, the server stopped and the home removed unless kept.
 * The session:
 *   serve(env = fx.env, extra = [])  starts the server (stopping one started before) and answers it
 *   stopServer()                     stops it now (to start another in another environment)
 *   newPage(viewport, timeout)       a page in a fresh light-scheme context, its uncaught errors
 *                                    collected in `page.errors`; the one a failure screenshots
 *   closePage()                      closes that page's context
 */
export async function inBrowser(bin, launch, fx, steps) {
  const browser = await launch();
  const session = {
    browser,
    page: undefined,
    server: undefined,
    async serve(env = fx.env, extra = []) {
      await session.stopServer();
      session.server = await startServer(bin, fx.home, env, extra);
      return session.server;
    },
    async stopServer() {
      const server = session.server;
      session.server = undefined;
      if (server) await stop(server.child);
    },
    async newPage(viewport, timeout) {
      const page = await (await browser.newContext({ viewport, colorScheme: 'light' })).newPage();
      page.setDefaultTimeout(timeout);
      page.errors = [];
      page.on('pageerror', (e) => page.errors.push(e.message));
      session.page = page;
      return page;
    },
    async closePage() {
      const page = session.page;
      session.page = undefined;
      await page?.context().close();
    },
  };
  try {
    return await steps(session);
  } catch (e) {
    await keepFailure(session.page, fx.tmp);
    throw e;
  } finally {
    await browser.close();
    await session.stopServer();
    removeUnlessKept(fx.tmp);
  }
}
