#!/usr/bin/env python3
"""Differential fixtures: random CLAUDE.md trees built from hostile Markdown fragments, to be
run through real Claude Code (../conformance/capture.sh) and through mneme, and compared.

Usage: gen.py ROOT N SEED   -> ROOT/d000 … ROOT/d<N-1>, each a capture.sh fixture.
"""
import json, os, random, shutil, subprocess, sys

ROOT, N, SEED = os.path.abspath(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
NAMES = ["a.md", "b.md", "c d.md", "e.txt", "f.png", "g", ".h.md", "-i.md", "j.md,", "k.md."]

def inc(name):
    esc = name.replace(" ", "\\ ")
    return random.choice([f"@{esc}", f"@./{esc}", f"@inc/../{esc}", f"@{esc}#frag", f"@./{esc}#"])

def fragment():
    i = inc(random.choice(NAMES))
    return random.choice([
        f"plain {i} text", f"({i})", f"x{i}", f"`{i}`", f"**{i}**", f"_{i}_", f"> {i}", f"- {i}",
        f"1. item {i}", f"    {i}", f"```\n{i}\n```", f"~~~\n{i}\n~~~", f"<!-- {i} -->", f"<!--\n{i}\n-->",
        f"<!-- x --> {i}", f"# {i}", f"Title {i}\n===", f"[{i}](http://x)", f"\\{i}", f"| {i} |\n|---|",
        f"<div>\n{i}\n</div>", f"<details>\n\n{i}\n\n</details>", f"[ref]: {i}", f"@{i}", f"{i}{i}",
        "<!-- c -->", "  <!-- c -->", "    <!-- c -->", "<!-- a --><!-- b -->", "<!-- unclosed",
        "text <!-- inline --> text", "<!--\nmulti\n-->\nafter", "<!-- c -->tail", "<!---->", "<!-->",
        "---", "***", "", "", "text line", "  indented text", "\ttab text", "- [ ] task",
        f"- a\n  - nested {i}", f"<span>{i}</span>", f"<!-- c -->\n{i}", f"{i} <!-- c -->",
        # Where an emphasis closes decides whether a backtick starts a code span (and hides
        # an include) or sits in the emphasis's text.
        f"*x `{i}* y`", f"**a `{i}** b`", f"_a `{i}_ b`", f"*a **b `{i}* c** d`", f"***x `{i}* y** z`",
        f"*a*b*c `{i}*`", f"__a_ `{i}__`", f"*{i} **b*", f"a* *b `{i}* c`", f"_a_b `{i}_`",
        # Links and images side by side without spaces share one destination run.
        f"[a](b)[{i}](c)", f"[![a]({i})](c)", f"[a](b){i}(c)", f"[a]({i} \"t\")[b](c)", f"[a](<{i}>)(x)",
    ])

def doc():
    head = random.choice(["", "", "---\nx: 1\n---\n", "---\n---\n", "--- \nname: y\n---\n\n",
                          "---\npaths: \"**\"\n---\n", "---\nbad: [\n---\n", "---\ndescription: a: b\n---\n"])
    body = "\n".join(fragment() for _ in range(random.randint(1, 8)))
    text = head + body + random.choice(["\n", "", "\n\n", "\n  \n"])
    if random.random() < 0.2:
        text = text.replace("\n", "\r\n")
    return text

def w(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)

def main():
    random.seed(SEED)
    if os.path.exists(ROOT):
        shutil.rmtree(ROOT)
    for k in range(N):
        fx = os.path.join(ROOT, f"d{k:03}")
        os.makedirs(os.path.join(fx, "home", ".claude"))
        r = os.path.join(fx, "repo")
        w(f"{r}/CLAUDE.md", doc())
        if random.random() < 0.5:
            w(f"{r}/.claude/CLAUDE.md", doc())
        if random.random() < 0.5:
            w(f"{r}/CLAUDE.local.md", doc())
        for j in range(random.randint(0, 3)):
            w(f"{r}/.claude/rules/r{j}.md", doc())
        for name in NAMES:
            if random.random() < 0.8:
                w(f"{r}/{name}", random.choice([f"INC {name}\n", doc(), "  \n"]))
        if random.random() < 0.3:
            w(f"{fx}/home/.claude/CLAUDE.md", doc())
        subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", r], check=True)
        w(f"{fx}/cases/default.env", "CWD='repo'\n")
    print(ROOT)

main()
