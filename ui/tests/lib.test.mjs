// Unit tests for the UI's pure helpers (src/lib/frontmatter.ts, diff.ts, markdown.ts), run by
// `npm test` with node's own test runner: `node --test ui/tests/`. The helpers are TypeScript
// without imports, so each is transpiled with the TypeScript the UI already depends on and
// imported as a module; no test framework is added for three files.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const LIB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/lib');

async function load(name) {
  const source = fs.readFileSync(path.join(LIB, name), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    fileName: name,
  });
  return import(`data:text/javascript;base64,${Buffer.from(outputText).toString('base64')}`);
}

const { parseMemory, withFields, yamlScalar } = await load('frontmatter.ts');
const { lineDiff } = await load('diff.ts');
const { renderMarkdown } = await load('markdown.ts');

test('frontmatter: both generations of the type field are read', () => {
  const current = parseMemory('---\nname: Deploys\ndescription: Never on Fridays\nmetadata:\n  type: feedback\n---\nBody\n');
  assert.deepEqual(current.fields, { name: 'Deploys', description: 'Never on Fridays', type: 'feedback' });
  assert.equal(current.typeAt, 'metadata');
  assert.equal(current.body, 'Body\n');
  const older = parseMemory('---\nname: Role\ntype: user\n---\n');
  assert.deepEqual(older.fields, { name: 'Role', description: '', type: 'user' });
  assert.equal(older.typeAt, 'top');
});

test('frontmatter: quoted, block and commented scalars', () => {
  const p = parseMemory("---\nname: 'it''s'\ndescription: \"a \\\"b\\\"\"\ntype: user # a comment\n---\n");
  assert.deepEqual(p.fields, { name: "it's", description: 'a "b"', type: 'user' });
  const block = parseMemory('---\ndescription: |\n  one\n  two\nname: >\n  folded\n  text\n---\n');
  assert.equal(block.fields.description, 'one\ntwo');
  assert.equal(block.fields.name, 'folded text');
});

test('frontmatter: a file without (closed) frontmatter is all body', () => {
  for (const content of ['just text\n', '---\nname: x\nno closing fence\n']) {
    const p = parseMemory(content);
    assert.equal(p.hasFrontmatter, false);
    assert.equal(p.body, content);
    assert.equal(p.typeAt, 'none');
  }
});

test('frontmatter: only changed fields are rewritten; unknown keys, comments, CRLF survive', () => {
  const before = '---\r\nname: Deploys\r\n# kept comment\r\noriginSessionId: abc\r\ndescription: old\r\nmetadata:\r\n    type: project\r\n---\r\nBody\r\n';
  const after = withFields(before, { name: 'Deploys', description: 'new: text', type: 'feedback' }, 'Body\r\n');
  assert.equal(after, '---\r\nname: Deploys\r\n# kept comment\r\noriginSessionId: abc\r\ndescription: "new: text"\r\nmetadata:\r\n    type: feedback\r\n---\r\nBody\r\n');
  const older = withFields('---\nname: a\ntype: user\n---\nx', { name: 'b', description: '', type: 'project' }, 'x');
  assert.equal(older, '---\nname: b\ntype: project\n---\nx');
  const fresh = withFields('plain body', { name: 'n', description: 'd', type: 'user' }, 'plain body');
  assert.equal(fresh, '---\nname: n\ndescription: d\nmetadata:\n  type: user\n---\nplain body');
});

test('frontmatter: yamlScalar quotes what YAML would read differently', () => {
  for (const plain of ['Deploys', 'Never deploy on Fridays', 'a-b c']) assert.equal(yamlScalar(plain), plain);
  for (const quoted of ['', ' padded', 'yes', 'null', '1.5', '0x1f', '- item', 'key: value', 'a #b', 'two\nlines', "'q"]) {
    assert.equal(yamlScalar(quoted), JSON.stringify(quoted), quoted);
  }
});

test('diff: common lines kept, removals before additions', () => {
  assert.deepEqual(lineDiff('a\nb\nc', 'a\nx\nc'), [
    { op: ' ', text: 'a' },
    { op: '-', text: 'b' },
    { op: '+', text: 'x' },
    { op: ' ', text: 'c' },
  ]);
  assert.deepEqual(lineDiff('same', 'same'), [{ op: ' ', text: 'same' }]);
  assert.deepEqual(lineDiff('', 'new'), [{ op: '-', text: '' }, { op: '+', text: 'new' }]);
  assert.deepEqual(lineDiff('a\nb', 'b\nc'), [{ op: '-', text: 'a' }, { op: ' ', text: 'b' }, { op: '+', text: 'c' }]);
});

test('diff: very large inputs fall back to all removed then all added', () => {
  const a = Array.from({ length: 2001 }, (_, i) => `a${i}`).join('\n');
  const b = Array.from({ length: 2001 }, (_, i) => `b${i}`).join('\n');
  const d = lineDiff(a, b);
  assert.equal(d.length, 4002);
  assert.deepEqual(d[0], { op: '-', text: 'a0' });
  assert.deepEqual(d[2001], { op: '+', text: 'b0' });
});

test('markdown: blocks and inline forms', () => {
  assert.equal(
    renderMarkdown('# Title\n\nSome **bold** and *em* and `co<de>`.\n\n- one\n- two\n\n1. first\n\n> quote\n\n---\n\n```\n<raw>\n```'),
    [
      '<h1>Title</h1>',
      '<p>Some <strong>bold</strong> and <em>em</em> and <code>co&lt;de&gt;</code>.</p>',
      '<ul><li>one</li><li>two</li></ul>',
      '<ol><li>first</li></ol>',
      '<blockquote>quote</blockquote>',
      '<hr>',
      '<pre><code>&lt;raw&gt;</code></pre>',
    ].join('\n'),
  );
  assert.equal(renderMarkdown('See [[deploys]].'), '<p>See <span class="wikilink">[[deploys]]</span>.</p>');
});

test('markdown: HTML is escaped and only safe links become links', () => {
  assert.equal(renderMarkdown('<script>alert(1)</script>'), '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
  assert.equal(
    renderMarkdown('[docs](https://example.com) [topic](deploys.md) [bad](javascript:steal) [bad2](JavaScript:steal)'),
    '<p><a href="https://example.com" target="_blank" rel="noreferrer">docs</a> <a href="deploys.md" target="_blank" rel="noreferrer">topic</a> bad bad2</p>',
  );
  assert.equal(renderMarkdown('[x](" onmouseover="y)'), '<p>[x](&quot; onmouseover=&quot;y)</p>');
});
