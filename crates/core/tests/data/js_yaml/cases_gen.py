#!/usr/bin/env python3
"""Frontmatter blocks for the YAML reading test (crates/core/tests/bun_yaml.rs).

Usage: python3 cases_gen.py > cases.json   (then regenerate the oracle files: oracle.js)

Three kinds, all as the text between the fences that Claude Code hands to its YAML reader:
every frontmatter block of a Markdown file under testdata/ (real repositories' memories, rules
and skills, and the conformance fixtures), a hand-picked list of awkward ones, and blocks drawn
at random (seeded, so the file is reproducible) from awkward keys, values and line shapes: tabs
as indentation and after colons, explicit keys, anchors, tags, flow and block collections,
numbers in every spelling, comments, repeated keys, CRLF.
"""
import json
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", ".."))
FENCE = re.compile(r"^---\s*\n([\s\S]*?)---\s*\n?")

KEYS = ["name", "description", "type", "paths", "globs", "owner", "Paths", "my key", "'quoted'", '"dq"',
        "x-y", "_k", "1", "true", "null", "a.b"]
VALUES = [
    "hello world", "src/**", "**/*.ts", "src/*.{ts,js}", "a: b", "a:b", "#hash", "x # comment", "x #comment",
    "x#y", "@scope/pkg", "`code`", "%percent", "!tag x", "!!str 12", "!!int 7", "&anchor v", "*alias", "|", ">",
    "? what", "? src/**", "- item", "-item", "[a, b]", "[src/**, lib/**]", "[a, b", "{a: 1}", "{a", "{}", "[]",
    '"quoted"', "'single'", '"unterminated', "'it''s'", '"esc \\" q"', '"\\u00e9 \\t x"', "'a # b'",
    "yes", "no", "on", "off", "true", "True", "TRUE", "false", "null", "~", "Null", "NULL",
    "123", "-45", "+12", "0x1F", "0o17", "017", "08", "1_000", "1e3", "1E-7", "1e21", ".inf", "-.Inf", ".nan",
    "-0", "0.1", ".5", "5.", "12345678901234567890123", "9007199254740993", "2024-01-01",
    "2024-01-01T10:00:00Z", "12:30:00", "1:30", "", '""', "''", "~/path", "C:\\path\\x", "a, b", "a,b*",
    "<!-- x -->", "caf\u00e9 \u2014 \U0001F600", "a\tb", "trailing   ", "value:", "http://x.y/z?q=1#f",
    "a - b", "--- x", "... x", "=", "a: b: c", "'a': b", "\"a\": b", "[a, {b: c}]", "{a: [b, c]}",
    "key with ' quote", 'key with " quote', "a \\ backslash", "\\\\server\\share", "%YAML", "!", "&", "*",
    "@", "`", "?", "-", ":", "#", "a  #  b", "  leading", "\u00a0nbsp", "multi word value, with comma",
]
SHAPES = [
    "{k}: {v}", "{k}:\t{v}", "{k}:{v}", "{k}:  {v}", "{k}: {v}  ", "\t{k}: {v}", " {k}: {v}",
    "{k}:\n  {k2}: {v}", "{k}:\n\t{k2}: {v}", "{k}:\n  - {v}\n  - {v2}", "{k}:\n\t- {v}", "{k}:\n- {v}",
    "{k}: |\n  {v}\n  {v2}", "{k}: >-\n  {v}", "{k}: |\n\t{v}", "{k}:\n \t{k2}: {v}", "{k}:\n\t\t{k2}: {v}",
    "{k}:\n  {k2}:\n    {k3}: {v}", "{k}:\n  {k2}: {v}\n\t{k3}: {v2}", "# {v}", "", "{k}: {v} # {v2}",
    "{k}: &a {v}\n{k2}: *a", "<<: {{{k}: {v}}}", "? {k}\n: {v}", "- {v}", "{k}: [{v}, {v2}]", "{k}: {{x: {v}}}",
    "{k}:\n  - {k2}: {v}", "...", "{k}: '{v}'", '{k}: "{v}"',
]
CURATED = [
    "paths: src/**\nmeta:\n\towner: me\n", "meta:\n\towner: me\npaths: src/**\n", "paths: ? src/**\n",
    "paths: src/**\nnote: ? what\n", "paths:\n\t- src/**\n", "description: ? what\n", "metadata:\n\ttype: user\n",
    "name: x\ndescription: d\nmetadata:\n\ttype: feedback\n", "a: 1\na: 2\n", "description: ends:\ndescription: second\n",
    "paths: [src/**, lib/**]\ndescription: a: b\n", "paths: [src/**, lib/**]\nmeta:\n\tx: y\n",
    "description: value # comment\nmeta:\n\tx: y\n", "description: >\n  folded\ndescription: >\n  again\n",
    "type: User\n", "description: !tag x\n", "description: 12345\n", "description: 1e21\n",
    "description: 123456789012345678901\n", "description: .inf\n", "description:\n", "description: ~\n",
    "paths:\r\n  - src/**\r\n", "description: a: b\r\nname: n\r\n", "description: x\r\n\tname: y\r\n",
    "paths:\t\"src/**\"\n", "paths: \"nomatch/**\"\npaths: \"src/**\"\n", "x: &a src/**\npaths: *a\n",
    "paths: >\n  src/**\n", "paths: src/**\n...\n", "paths: [src/**\nfoo: : :\n", "- a\n- b\n", "just text\n",
    "# only a comment\n", "\n\n", "description: \"a\" b\n", "description: 'a' b\n", "description: [a] b\n",
    "description: {a} b\n", "name: \tx\n", "description: a\tb: c\n", "? a\n? b\n", "description: |\n\ttabbed\n",
    # What people who indent with tabs write.
    "name: x\ndescription: y\nmetadata:\n\ttype: user\n\tcreated: 2024-01-01\n",
    "metadata:\n\ttype: project\nname: x\ndescription: y\n",
    "paths:\n\t- \"src/**\"\n\t- \"lib/**\"\n", "description: d\npaths:\n\t- src/**\n\t- lib/**\n",
    "paths:\n\t- src/**\ndescription: d\n", "name: n\r\nmetadata:\r\n\ttype: feedback\r\n",
    "description: d\nmetadata:\n\ttype: reference\n\towner:\n\t\tname: me\n",
    "paths:\n    - src/**\n\t- lib/**\n", "description: >\n\tfolded with a tab\n", "description: |\n  ok\n\tthen a tab\n",
    "name: 'quoted'\nmetadata:\n\ttype: user\n", "description: \"quoted\"\n\tname: x\n",
    "description: a long line\n\tthat continues\n", "description: a long line\n \tthat continues\n",
    "paths: [src/**,\n\tlib/**]\n", "metadata:\n  type: user\n\tname: x\n", "metadata:\n\t\ttype: user\n",
    "paths:\n- src/**\n\t- lib/**\n", "type: user\n\t\nname: x\n", "name: x\n\t# a comment\ndescription: y\n",
    "description: 2024-01\n", "description: -.5\n", "description: !\nname: x\n", "description: &a\nname: *a\n",
    "<<: {description: merged}\nname: x\n", "description: 0x1F\n", "description: 017\n", "description: !!int 12\n",
]


def real_blocks():
    blocks = set()
    for dp, _dn, fn in os.walk(os.path.join(ROOT, "testdata")):
        for f in fn:
            if not f.endswith(".md"):
                continue
            try:
                t = open(os.path.join(dp, f), encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            m = FENCE.match(t.lstrip("\ufeff"))
            if m:
                blocks.add(m.group(1))
    return sorted(blocks)


def generated(n, seed):
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        lines = []
        for _ in range(rnd.randint(1, 4)):
            shape = rnd.choice(SHAPES)
            lines.append(shape.format(k=rnd.choice(KEYS), k2=rnd.choice(KEYS), k3=rnd.choice(KEYS),
                                      v=rnd.choice(VALUES), v2=rnd.choice(VALUES)))
        text = "\n".join(lines) + "\n"
        if rnd.random() < 0.08:
            text = text.replace("\n", "\r\n")
        out.append(text)
    return out


def main():
    cases = []
    for c in CURATED + real_blocks():
        if c not in cases:
            cases.append(c)
    picked = len(cases)
    for c in generated(2500, 20261205):
        if c not in cases:
            cases.append(c)
    # `picked`: the real and hand-picked blocks come first, and Mneme must read each of them
    # exactly as every release does.
    print(json.dumps({"picked": picked, "cases": cases}, ensure_ascii=False, indent=0))


if __name__ == "__main__":
    main()
