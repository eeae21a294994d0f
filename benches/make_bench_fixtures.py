#!/usr/bin/env python3
"""Whole-process benchmark fixtures, the same material as crates/api/benches/engine.rs:
ROOT/{empty,big,deep,rules,includes}/ each with home/.claude and a git repo. Default ROOT /tmp/mneme-bench."""
import os, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testdata", "conformance"))
from make_fixtures import w, git_repo, sanitize  # noqa: E402

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "/tmp/mneme-bench")


def world(name):
    fx = os.path.join(ROOT, name)
    os.makedirs(os.path.join(fx, "home", ".claude"), exist_ok=True)
    return fx, os.path.join(fx, "repo")


def main():
    if os.path.exists(ROOT):
        shutil.rmtree(ROOT)
    fx, r = world("empty")
    w(f"{r}/README", "x\n")
    git_repo(r)

    fx, r = world("big")
    w(f"{r}/CLAUDE.md", "Big memory folder.\n")
    git_repo(r)
    md = os.path.join(fx, "home", ".claude", "projects", sanitize(r), "memory")
    kinds = ["user", "feedback", "project", "reference"]
    index = []
    for i in range(10_000):
        name = f"topic-{i:05}"
        w(f"{md}/{name}.md", f"---\nname: {name}\ndescription: Description of fact {i}\nmetadata:\n  type: {kinds[i % 4]}\n---\n\n"
                             f"Fact number {i}. Related: [[topic-{(i + 1) % 10000:05}]].\n\n**Why:** benchmark.\n")
        if i < 150:
            index.append(f"- [{name}]({name}.md) — fact {i}\n")
    w(f"{md}/MEMORY.md", "".join(index))

    fx, r = world("deep")
    git_repo(r)
    d = r
    for level in range(30):
        d = os.path.join(d, f"level-{level:02}")
        w(f"{d}/CLAUDE.md", f"# Level {level}\nUse the level-{level} conventions.\n")
        w(f"{d}/CLAUDE.local.md", f"Local note for level {level}.\n")
    with open(os.path.join(fx, "cwd"), "w") as f:
        f.write(d)

    fx, r = world("rules")
    for i in range(2000):
        dd = f"{r}/.claude/rules/group-{i % 40:02}"
        if i % 4 == 0:
            w(f"{dd}/rule-{i:04}.md", f"---\npaths: \"src/mod{i}/**/*.rs\"\n---\nConditional rule {i}.\n")
        else:
            w(f"{dd}/rule-{i:04}.md", f"Rule {i}: keep functions short. See @../shared.md\n")
    w(f"{r}/.claude/rules/shared.md", "Shared rule text.\n")
    git_repo(r)

    fx, r = world("includes")
    lines = ["# Project\n"]
    for i in range(500):
        w(f"{r}/docs/part-{i:03}.md", f"Part {i}: a short instruction.\n")
        lines.append(f"See @docs/part-{i:03}.md\n")
    w(f"{r}/CLAUDE.md", "".join(lines))
    git_repo(r)
    for name in ["empty", "big", "deep", "rules", "includes"]:
        print(os.path.join(ROOT, name))


if __name__ == "__main__":
    main()
