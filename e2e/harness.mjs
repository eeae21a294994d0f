// What the smaller browser runs (agents.mjs, scale.mjs, vanish.mjs) share: where things are, how
// Chromium is started, a file writer, `mneme serve` started on a free port, its API called with
// the page's token, and a polling wait. Each run keeps its own `fail` (its name in the message)
// and hands it in.

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** `require` as the UI's package sees it: playwright-core is the UI's dev dependency. */
export const requireUi = createRequire(path.join(ROOT, 'ui', 'package.json'));
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--password-store=basic'];
export const SHOTS = path.join(ROOT, 'docs', 'screenshots');
export const UI_DIST = process.env.E2E_UI_DIST || path.join(ROOT, 'ui', 'dist');

/** A `fail` that names the run: marks the process failed and stops the step. */
export function failer(run) {
  return (msg) => {
    console.error(`\ne2e (${run}) FAILED: ${msg}`);
    process.exitCode = 1;
    throw new Error(msg);
  };
}

export function write(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** `mneme serve` on a free port, started in `cwd` with `env`; resolves once it prints its URL. */
export function startServer(bin, cwd, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--port', '0', '--ui-dir', UI_DIST], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`mneme serve printed no URL within 20 s.\n${out}\n${err}`)), 20_000);
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
      reject(new Error(`mneme serve exited with ${code}.\n${out}\n${err}`));
    });
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
