// Unit tests for src/lib/commands.ts: an engine problem or error laid out as the sentences before
// the command it gives as a field of its own (its `command`), the command, and the sentences after
// it, FILE made the file itself so a command can be copied and run as shown (the Health card's,
// the editors' and the error banner's text for a file that is not UTF-8).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const UI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = fs.mkdtempSync(path.join(UI, 'node_modules', '.commands-tests-'));
after(() => fs.rmSync(OUT, { recursive: true, force: true }));

async function load(rel) {
  const source = fs.readFileSync(path.join(UI, rel), 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }, fileName: rel });
  const file = path.join(OUT, path.basename(rel).replace(/\.ts$/, '.mjs'));
  fs.writeFileSync(file, outputText);
  return import(pathToFileURL(file).href);
}

const { messageParts, shellWord, inFolder } = await load('src/lib/commands.ts');

// The engine's wording for a memory saved as Windows-1252 (crates/store/src/text_form.rs,
// NotUtf8::fix), as the Health card lists it: the message for the command line, and the command
// as a field of its own with whole sentences before and after it.
const ICONV = 'iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new';
const BEFORE = 'This file is not valid UTF-8, so Mneme will not save over it: byte 0xE9 on line 7 is not UTF-8, so the file was probably '
  + 'saved as Windows-1252 or Latin-1. To convert it to UTF-8, run this in a terminal:';
const AFTER = 'Then move FILE.new over FILE and open it again. Or, instead of the command, save it in your editor with "Save with encoding: UTF-8".';
const LATIN1 = {
  message: 'This file is not valid UTF-8, so Mneme will not save over it: byte 0xE9 on line 7 is not UTF-8, so the file was probably '
    + 'saved as Windows-1252 or Latin-1. Convert it to UTF-8 (for example `iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new`, then move '
    + 'FILE.new over FILE, or "Save with encoding: UTF-8" in your editor) and open it again.',
  command: { before: BEFORE, line: ICONV, after: AFTER },
};

test('commands: the engine\'s command is set apart between its sentences before and after, each whole', () => {
  const parts = messageParts(LATIN1.message, LATIN1.command);
  assert.deepEqual(parts, [{ text: BEFORE }, { code: ICONV }, { text: AFTER }]);
  // The text after the command is a sentence of its own, not the rest of one cut at the
  // command (it read ", then move FILE.new over FILE, …" when the message was split).
  assert.match(parts[2].text, /^Then move /);
});

test('commands: only the engine\'s command is offered to run; other backticks stay prose', () => {
  // Paths and names in backticks are not commands: no Copy for them, and no command at all
  // when the engine gave none (the text was cut on backticks before, making each a command).
  const said = 'Could not read `MEMORY.md` in `~/.claude/projects/x/memory`; fix its permissions.';
  assert.deepEqual(messageParts(said), [{ text: said }]);
  assert.deepEqual(messageParts(said, null), [{ text: said }]);
  const named = { before: 'The file `a.md` is UTF-16 text. To convert it to UTF-8, run this in a terminal:', line: 'iconv -f UTF-16 -t UTF-8 FILE > FILE.new', after: 'Then open it again.' };
  const parts = messageParts('The file `a.md` is not UTF-8; run `iconv -f UTF-16 -t UTF-8 FILE > FILE.new` and open it again.', named);
  assert.deepEqual(parts.map((p) => ('code' in p ? 'code' : 'text')), ['text', 'code', 'text']);
  assert.ok(parts[0].text.includes('`a.md`'));
});

test('commands: with the file known, FILE is its path in the command and its name in the prose', () => {
  const parts = messageParts(LATIN1.message, LATIN1.command, { path: '/home/me/.claude/projects/-home-me-app/memory/cafe.md', name: 'cafe.md', home: '/home/me' });
  assert.equal(parts[1].code, 'cd ~/.claude/projects/-home-me-app/memory && iconv -f WINDOWS-1252 -t UTF-8 cafe.md > cafe.md.new');
  assert.ok(parts[2].text.startsWith('Then move cafe.md.new over cafe.md and open it again.'));
  assert.ok(!parts.some((p) => (p.text ?? p.code).includes('FILE')));
  const fix = (line) => ({ before: 'Run:', line, after: 'Then open it again.' });
  // Names the shell would read otherwise: quoted, and one starting with `-` kept from being an option.
  assert.equal(messageParts('m', fix('iconv FILE > FILE.new'), { path: '/m/my notes.md', name: 'my notes.md' })[1].code,
    "cd /m && iconv 'my notes.md' > 'my notes.md.new'");
  assert.equal(messageParts('m', fix('iconv FILE > FILE.new'), { path: '/m/-x.md', name: '-x.md' })[1].code, 'cd /m && iconv ./-x.md > ./-x.md.new');
  assert.equal(messageParts('m', fix('iconv FILE'), { path: '/x.md', name: 'x.md' })[1].code, 'cd / && iconv x.md');
  // No file to name (a problem about the folder itself, an error banner): FILE stays as the engine wrote it.
  assert.equal(messageParts('m', fix('iconv FILE'), { path: '/m/', name: '' })[1].code, 'iconv FILE');
  assert.deepEqual(messageParts(LATIN1.message, LATIN1.command)[1], { code: ICONV });
  // A command that does not name FILE is left as written.
  assert.equal(messageParts('m', fix('iconv -l'), { path: '/m/a.md', name: 'a.md' })[1].code, 'iconv -l');
});

test('commands: the command shown converts the very file, run by a real shell and iconv', (t) => {
  if (!fs.existsSync('/usr/bin/iconv')) return t.skip('no iconv on this machine');
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'commands-run-'));
  try {
    const dir = path.join(home, '.claude', 'projects', "-it's a project", 'memory');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'café notes.md'), Buffer.from('Caf\xe9\n', 'latin1'));
    const file = path.join(dir, 'café notes.md');
    const [, cmd] = messageParts(LATIN1.message, LATIN1.command, { path: file, name: 'café notes.md', home });
    execFileSync('sh', ['-c', cmd.code], { env: { HOME: home, PATH: process.env.PATH }, cwd: os.tmpdir() });
    assert.equal(fs.readFileSync(`${file}.new`, 'utf8'), 'Café\n');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('commands: a message with no command, or a blank one, is all prose', () => {
  assert.deepEqual(messageParts('it ends in the middle of a UTF-8 character', null), [{ text: 'it ends in the middle of a UTF-8 character' }]);
  assert.deepEqual(messageParts('a ` alone', { before: 'b', line: '  ', after: 'a' }), [{ text: 'a ` alone' }]);
  assert.deepEqual(messageParts(''), []);
});

test('commands: a path becomes one shell word whatever it holds, and the shell reads it back exactly', () => {
  assert.equal(shellWord('/home/me/notes.md'), '/home/me/notes.md');
  assert.equal(shellWord('/home/me/my notes.md'), "'/home/me/my notes.md'");
  assert.equal(shellWord('/home/me/it\'s.md'), "'/home/me/it'\\''s.md'");
  assert.equal(shellWord('/home/me/a b.md', '/home/me'), "~/'a b.md'");
  assert.equal(shellWord('/home/meg/a.md', '/home/me'), '/home/meg/a.md');
  assert.equal(shellWord('/home/me', '/home/me'), '/home/me');
  // The real shell is the judge: each word, echoed by sh with HOME set, gives the path back.
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'commands-home-'));
  try {
    for (const p of [`${home}/plain.md`, `${home}/with space.md`, `${home}/it's $HOME; rm -rf \`x\`.md`, '/elsewhere/"q"\\.md', `${home}/ünï/*.md`]) {
      const said = execFileSync('sh', ['-c', `printf %s ${shellWord(p, home)}`], { env: { HOME: home, PATH: process.env.PATH }, encoding: 'utf8' });
      assert.equal(said, p);
    }
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('commands: a relative path is joined to its folder once, whatever the folder ends with', () => {
  assert.equal(inFolder('/m/memory', 'a.md'), '/m/memory/a.md');
  assert.equal(inFolder('/m/memory/', 'team/a.md'), '/m/memory/team/a.md');
  assert.equal(inFolder('C:\\Users\\me\\memory', 'team/a.md'), 'C:\\Users\\me\\memory\\team\\a.md');
});
