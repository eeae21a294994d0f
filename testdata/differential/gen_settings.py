#!/usr/bin/env python3
"""Differential fixtures for settings, environment, MEMORY.md and lazy attachments: random
combinations run through real Claude Code and mneme. Usage: gen_settings.py ROOT N SEED"""
import json, os, random, shutil, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sanitize16 import sanitize16  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT, N, SEED = os.path.abspath(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

def w(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)

MEMDIRS = ["~/m1", "~", "~/", "~/..", "~/./m2", "relative/dir", "/", "//unc/x", "~/m1/../m3", "", None, None]
ENV = ["", "", "CLAUDE_CODE_DISABLE_AUTO_MEMORY=0", "CLAUDE_CODE_DISABLE_AUTO_MEMORY=TRUE",
       "CLAUDE_CODE_DISABLE_AUTO_MEMORY=maybe", "CLAUDE_CODE_SIMPLE=1", "CLAUDE_CODE_DISABLE_CLAUDE_MDS=1",
       "CLAUDE_CODE_REMOTE=1", "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE=/tmp/ccdiffs-override"]
# The last ones lean on picomatch's own rules: a leading `!` negates, `[!s]` is a class of `!` and
# `s`, `{sub}` is literal, groups and extglobs alternate, `X/**` also matches X.
EXCLUDES = [["**/sub/CLAUDE.md"], ["**/CLAUDE.local.md"], ["*.md"], ["**/.claude/rules/**"], ["/nonexistent/**"], [],
            ["!**/sub/**"], ["**/[!s]ub/CLAUDE.md"], ["**/@(sub|x)/**"], ["**/{sub}/CLAUDE.md"],
            ["**/(sub|zz)/CLAUDE.local.md"], ["**/.claude/rules/!(a*)"], ["**/sub/CLAUDE.md/**"]]

def memory_md():
    kind = random.choice(["small", "lines", "units", "uni", "fm", "empty", "none", "crlf"])
    if kind == "small": return "- [A](a.md) — x\n"
    if kind == "lines": return "".join(f"- l{i}\n" for i in range(random.choice([199, 200, 201, 250])))
    if kind == "units":
        n = random.choice([24_999, 25_000, 25_001, 25_002])
        return ("x" * 100 + "\n") * (n // 101) + "y" * (n % 101)
    if kind == "uni": return ("é😀" * 50 + "\n") * random.choice([150, 170, 200])
    if kind == "fm": return "---\nname: x\n---\n<!-- c -->\n- [A](a.md)\n"
    if kind == "crlf": return "- a\r\n- b\r\n"
    if kind == "empty": return "\n  \n"
    return None

def main():
    random.seed(SEED)
    if os.path.exists(ROOT):
        shutil.rmtree(ROOT)
    for k in range(N):
        fx = os.path.join(ROOT, f"s{k:03}")
        h = os.path.join(fx, "home")
        os.makedirs(os.path.join(h, ".claude"))
        r = os.path.join(fx, "repo")
        w(f"{r}/CLAUDE.md", "ROOT\n")
        w(f"{r}/CLAUDE.local.md", "ROOT LOCAL\n")
        w(f"{r}/sub/CLAUDE.md", "SUB\n")
        w(f"{r}/sub/deep/CLAUDE.local.md", "DEEP LOCAL\n")
        w(f"{r}/.claude/rules/u.md", "RULE\n")
        w(f"{r}/.claude/rules/c.md", random.choice(["---\npaths: sub/**\n---\nCOND SUB\n",
                                                   "---\npaths:\n  - \"**/*.py\"\n  - \"*.txt\"\n---\nCOND PY\n",
                                                   "---\npaths: \"{sub,other}/*.py\"\n---\nCOND BRACE\n",
                                                   "---\npaths: \"**\"\n---\nCOND ALL\n"]))
        w(f"{r}/sub/.claude/rules/s.md", "---\npaths: \"*.py\"\n---\nSUB COND\n")
        w(f"{r}/sub/deep/x.py", "x\n")
        w(f"{r}/sub/y.txt", "y\n")
        w(f"{h}/.claude/rules/uc.md", "---\npaths: \"**/*.py\"\n---\nUSER COND\n")
        subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", r], check=True)
        settings = {}
        md = random.choice(MEMDIRS)
        if md is not None:
            settings["autoMemoryDirectory"] = md
        if random.random() < 0.3:
            settings["autoMemoryEnabled"] = random.choice([True, False])
        ex = random.choice(EXCLUDES)
        if ex:
            settings["claudeMdExcludes"] = ex
        where = random.choice(["user", "user", "project", "local"])
        target = {"user": f"{h}/.claude/settings.json", "project": f"{r}/.claude/settings.json",
                  "local": f"{r}/.claude/settings.local.json"}[where]
        if settings:
            w(target, json.dumps(settings))
        mem = memory_md()
        default_md = os.path.join(h, ".claude", "projects", sanitize16(r), "memory")
        for d in [default_md, f"{h}/m1", f"{h}/m3", f"{h}/m2", "/tmp/ccdiffs-override"]:
            if mem is not None:
                w(f"{d}/MEMORY.md", mem.replace("- l0", f"- l0 {os.path.basename(d)}"))
        cwd = random.choice(["repo", "repo", "repo/sub"])
        env = random.choice(ENV)
        lines = [f"CWD='{cwd}'"]
        if env:
            lines.append(f"EXTRA_ENV='{env}'")
        if random.random() < 0.5:
            lines.append(f"STUB_ARGS='--tool-read {r}/{random.choice(['sub/deep/x.py', 'sub/y.txt', 'sub/deep/CLAUDE.local.md'])}'")
        if random.random() < 0.15:
            lines.append(f"EXTRA_ARGS='--setting-sources {random.choice(['user', 'project', 'local', 'user,local', 'project,local'])}'")
        w(f"{fx}/cases/default.env", "\n".join(lines) + "\n")
    print(ROOT)

main()
