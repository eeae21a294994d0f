// Unit tests for src/lib/time.ts, the one relative-time wording (run with the UI's other pure
// helpers by `node --test ui/tests/`; transpiled as tests/lib.test.mjs does). The clocks that
// go wrong are the point: a time ahead of this one, a server's absurd or malformed dates.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const UI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = fs.mkdtempSync(path.join(UI, 'node_modules', '.time-tests-'));
after(() => fs.rmSync(OUT, { recursive: true, force: true }));

async function load(rel) {
  const source = fs.readFileSync(path.join(UI, rel), 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }, fileName: rel });
  const file = path.join(OUT, path.basename(rel).replace(/\.ts$/, '.mjs'));
  // Every module is written into one folder: `'../../lib/time'` becomes `'./time.mjs'`.
  fs.writeFileSync(file, outputText.replace(/from\s+'(?:\.\.?\/)+(?:lib\/)?([\w.-]+)'/g, "from './$1.mjs'"));
  return import(pathToFileURL(file).href);
}

const { ago, daysAgo, FUTURE, UNKNOWN } = await load('src/lib/time.ts');
const team = await load('src/screens/team/teamText.ts');

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const MIN = 60_000, HOUR = 60 * MIN, DAY = 24 * HOUR;

test('past times read as ages', () => {
  assert.equal(ago(NOW - 10_000, NOW), 'just now');
  assert.equal(ago(NOW - MIN, NOW), 'a minute ago');
  assert.equal(ago(NOW - 25 * MIN, NOW), '25 minutes ago');
  assert.equal(ago(NOW - HOUR, NOW), 'an hour ago');
  assert.equal(ago(NOW - 5 * HOUR, NOW), '5 hours ago');
  assert.equal(ago(NOW - 26 * HOUR, NOW), 'yesterday');
  assert.equal(ago(NOW - 12 * DAY, NOW), '12 days ago');
  assert.equal(ago(NOW - 90 * DAY, NOW), '3 months ago');
  assert.equal(ago(NOW - 3 * 365 * DAY, NOW), '3 years ago');
  assert.equal(ago(Date.UTC(1960, 0, 1), NOW), '67 years ago', 'before 1970 is a real date');
  assert.equal(ago(null, NOW), 'never');
  assert.equal(ago(undefined, NOW), 'never');
  assert.equal(ago(0, NOW), 'never');
});

test('a time ahead of the clock says so, past a minute of skew', () => {
  assert.equal(ago(NOW + 30_000, NOW), 'just now', 'two clocks a few seconds apart');
  assert.equal(ago(NOW + 3 * MIN, NOW), FUTURE);
  assert.equal(ago(NOW + 3 * DAY, NOW), FUTURE);
  assert.equal(ago(Date.parse('9999-12-31T23:59:59.999Z'), NOW), FUTURE);
  assert.match(FUTURE, /future/);
  // Shown inside a date's parentheses on the Dreams screen: none of its own to nest.
  assert.doesNotMatch(FUTURE, /[()]/);
  assert.doesNotMatch(ago(NOW + 3 * MIN, NOW), /-/);
  assert.equal(daysAgo(-2), FUTURE);
  assert.equal(daysAgo(0), 'today');
  assert.equal(daysAgo(1), 'yesterday');
  assert.equal(daysAgo(45), 'a month ago');
});

test('times no date holds are unknown, never "NaN minutes ago"', () => {
  assert.equal(ago(Date.parse('not a date'), NOW), UNKNOWN);
  assert.equal(ago(Number.MAX_SAFE_INTEGER, NOW), UNKNOWN);
  assert.equal(ago(-9.2e18, NOW), UNKNOWN, 'i64::MIN ms from a hostile server');
  assert.equal(ago(Infinity, NOW), UNKNOWN);
  assert.equal(daysAgo(NaN), UNKNOWN);
});

test('the Team screen words times the same way', () => {
  assert.equal(team.ago, ago);
  assert.equal(team.exact(Number.MAX_SAFE_INTEGER), '', 'no "Invalid Date" tooltip');
  assert.equal(team.exact(Date.parse('garbage')), '');
  assert.notEqual(team.exact(NOW), '');
});

test('sign-in countdown: the life is the engine\'s seconds, counted on the monotonic clock; no wall clock is read', async () => {
  const { codeLife, timeLeft, countdown, MAX_CODE_LIFE_MS } = await load('src/lib/time.ts');
  // The engine's `expiresInSecs` alone: a wall clock wrong when the code is shown (a day behind,
  // or stepped meanwhile) goes in nowhere.
  assert.equal(codeLife.length, 1);
  const realNow = Date.now;
  Date.now = () => { throw new Error('the countdown read the wall clock'); };
  let life;
  try {
    life = codeLife(15 * 60);
  } finally {
    Date.now = realNow;
  }
  assert.equal(life, 15 * MIN);
  // Shown at monotonic 1,000 ms; 5 minutes and a half of time waited later.
  assert.equal(countdown(timeLeft(life, 1_000, 1_000 + 5.5 * MIN)), '9:30');
  // What is left depends on time waited only (no wall-clock reading goes in), so a clock stepped
  // back an hour or on a day meanwhile neither holds it nor ends it early.
  assert.equal(timeLeft.length, 3);
  assert.equal(timeLeft(life, 1_000, 1_000 + 5.5 * MIN), 9.5 * MIN);
  assert.equal(timeLeft(life, 1_000, 1_000 + 20 * MIN), 0);
  assert.equal(timeLeft(life, 1_000, 500), life);
  // None left, absurd or missing lives, and more than the engine allows.
  assert.equal(codeLife(0), 0);
  assert.equal(codeLife(-60), 0);
  assert.equal(codeLife(10 * 86_400), MAX_CODE_LIFE_MS);
  assert.equal(codeLife(Number.NaN), 0);
  assert.equal(codeLife(undefined), 0);
  assert.equal(codeLife(Number.MAX_SAFE_INTEGER), MAX_CODE_LIFE_MS);
  // Rounded up: a code with 400 ms left has not expired yet.
  assert.equal(countdown(400), '0:01');
  assert.equal(countdown(0), '0:00');
  assert.equal(countdown(-5), '0:00');
  assert.equal(countdown(MAX_CODE_LIFE_MS), '60:00');
  assert.equal(countdown(61_000), '1:01');
});
