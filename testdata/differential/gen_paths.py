#!/usr/bin/env python3
"""Differential fixtures for locations: long, unicode and emoji paths, symlinked working
folders, worktrees (sibling and nested), external includes with and without approval in the
global config, includes from the user layer. Usage: gen_paths.py ROOT N SEED"""
import json, os, random, shutil, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sanitize16 import sanitize16  # noqa: E402

ROOT, N, SEED = os.path.abspath(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

def w(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)

def git(cwd, *args):
    subprocess.run(["git", "-c", "user.email=f@e", "-c", "user.name=f", "-c", "init.defaultBranch=main", *args],
                   cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

SEGMENTS = ["plain", "with space", "caf\u00e9", "\U0001F600 emoji", "d.o.t", "UPPER", "x" * 60, "\u4e2d\u6587"]

def main():
    random.seed(SEED)
    if os.path.exists(ROOT):
        shutil.rmtree(ROOT)
    for k in range(N):
        fx = os.path.join(ROOT, f"p{k:03}")
        h = os.path.join(fx, "home")
        os.makedirs(os.path.join(h, ".claude"))
        segs = [random.choice(SEGMENTS) for _ in range(random.randint(1, 4))]
        r = os.path.join(fx, *segs, "repo")
        out = os.path.join(fx, "outside")
        w(f"{out}/ext.md", "EXTERNAL\n")
        w(f"{h}/home-inc.md", "HOME INC\n")
        w(f"{r}/CLAUDE.md", "REPO\nExt: @" + out + "/ext.md\nHome: @~/home-inc.md\nUp: @../sibling.md\nIn: @docs/in.md\n")
        w(os.path.join(os.path.dirname(r), "sibling.md"), "SIBLING (outside cwd)\n")
        w(f"{r}/docs/in.md", "IN\n")
        w(f"{r}/sub/CLAUDE.md", "SUB\nUp: @../docs/in.md\n")
        w(f"{r}/CLAUDE.local.md", "LOCAL\n")
        if random.random() < 0.4:
            w(f"{h}/.claude/CLAUDE.md", "USER\nExt: @" + out + "/ext.md\n")
        git(r, "init", "-q")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", "x")
        cwd = r
        kind = random.choice(["plain", "plain", "sub", "symlink", "sibling_wt", "nested_wt"])
        if kind == "sub":
            cwd = f"{r}/sub"
        elif kind == "symlink":
            link = os.path.join(fx, "link-to-repo")
            os.symlink(r, link)
            cwd = link
        elif kind == "sibling_wt":
            cwd = os.path.join(fx, "wt")
            git(r, "worktree", "add", "-q", "-b", "wt", cwd)
        elif kind == "nested_wt":
            cwd = os.path.join(r, ".claude", "worktrees", "n")
            git(r, "worktree", "add", "-q", "-b", "n", cwd)
        canonical = r
        if random.random() < 0.5:
            cfg = {"projects": {canonical: {"hasClaudeMdExternalIncludesApproved": True}}}
            w(f"{h}/.claude/.claude.json", json.dumps(cfg))
        w(os.path.join(h, ".claude", "projects", sanitize16(canonical), "memory", "MEMORY.md"), f"- MEM {kind}\n")
        w(f"{fx}/cases/default.env", f"CWD='{os.path.relpath(cwd, fx)}'\n")
    print(ROOT)

main()
