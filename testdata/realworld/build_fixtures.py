#!/usr/bin/env python3
"""Build the Claude Code fixtures for the real-world memory corpus (testdata/realworld).

Usage: build_fixtures.py [--root DIR] [--corpus DIR] [NAME ...]
       (default: /tmp/ccreal, every <owner>__<repo>/ with a tree/ in this folder)

--corpus reads the entries from another folder laid out the same way (scripts/sweep-real.sh runs
repositories that are not in the corpus through real Claude Code releases this way). An entry's
optional cases.json adds cases: {"name": ["cwd relative to the fixture", "stub args"]}, with
{repo} in the stub args standing for the fixture's repository.

For each corpus entry testdata/realworld/<owner>__<repo>/ it (re)creates
    /tmp/ccreal/<owner>__<repo>/repo/     git repo: tree/ copied in, one commit
    /tmp/ccreal/<owner>__<repo>/home/     HOME; home/.claude is CLAUDE_CONFIG_DIR (empty)
    .../home/.claude/projects/<sanitize(repo)>/memory/   copy of tree/.claude/memory/ (auto-memory)
    /tmp/ccreal/<owner>__<repo>/cases/<case>.env        CWD=... (+ STUB_ARGS)
The committed goldens were captured at /tmp/ccreal: the auto-memory dir name and every path in
the captures derive from it. The version matrix builds elsewhere (--root) and captures there. Files are written in sorted path order; rules-dir readdir order is recorded
because Claude Code loads rules in readdir order.
"""
import json, os, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from make_fixtures import sanitize  # noqa: E402  (Claude Code 2.1.197 algorithm)

ROOT = "/tmp/ccreal"

# extra cases beyond "root" (cwd = repo root). Values: (cwd relative to fixture, stub args or "")
EXTRA = {
    "Tresjs__tres": {"nested_core": ("repo/packages/core", ""),
                     "nested_leches": ("repo/packages/leches", "")},
    "bytedance__deer-flow": {"nested_backend": ("repo/backend", ""),
                             "read_backend": ("repo", "--tool-read {repo}/backend/ruff.toml")},
    "cesar-carlos__dart_odbc_fast": {
        "read_dart": ("repo", "--tool-read {repo}/lib/domain/types/param_direction.dart"),
        "read_rust": ("repo", "--tool-read {repo}/native/odbc_engine/src/security/mod.rs")},
    "davidleathers113__dependable-call-exchange-backend": {
        "nested_api": ("repo/internal/api", ""),
        "read_domain": ("repo", "--tool-read {repo}/internal/domain/compliance/tcpa.go")},
}


def git(cwd, *args):
    # fixed dates -> the same commit hash on every rebuild (the hash shows up in the request's gitStatus)
    env = dict(os.environ, GIT_AUTHOR_DATE="2026-01-01T00:00:00+0000",
               GIT_COMMITTER_DATE="2026-01-01T00:00:00+0000")
    subprocess.run(["git", "-c", "user.email=fixture@example.com", "-c", "user.name=fixture",
                    "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def copytree_sorted(src, dst):
    # Symbolic links stay links (a repository's `CLAUDE.md -> AGENTS.md`, a linked `.claude`,
    # links that point nowhere): Claude Code's handling of them is part of what is compared.
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        rel = os.path.relpath(dirpath, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for fn in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            source = os.path.join(dirpath, fn)
            if os.path.islink(source):
                os.symlink(os.readlink(source), os.path.join(dst, rel, fn))
            else:
                shutil.copyfile(source, os.path.join(dst, rel, fn))


def build(name, corpus=HERE):
    tree = os.path.join(corpus, name, "tree")
    fx = os.path.join(ROOT, name)
    if os.path.exists(fx):
        shutil.rmtree(fx)
    repo = os.path.join(fx, "repo")
    copytree_sorted(tree, repo)
    git(repo, "init", "-q", ".")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fixture", "--allow-empty")
    os.makedirs(os.path.join(fx, "home", ".claude"))
    mem_src = os.path.join(tree, ".claude", "memory")
    md = os.path.join(fx, "home", ".claude", "projects", sanitize(repo), "memory")
    if os.path.isdir(mem_src):
        copytree_sorted(mem_src, md)
    cases = {"root": ("repo", "")}
    cases.update(EXTRA.get(name, {}))
    extra_cases = os.path.join(corpus, name, "cases.json")
    if os.path.exists(extra_cases):
        with open(extra_cases, encoding="utf-8") as f:
            cases.update({c: tuple(v) for c, v in json.load(f).items()})
    os.makedirs(os.path.join(fx, "cases"))
    for c, (cwd, stub) in cases.items():
        with open(os.path.join(fx, "cases", c + ".env"), "w") as f:
            f.write(f"CWD='{cwd}'\n")
            if stub:
                f.write(f"STUB_ARGS='{stub.format(repo=repo)}'\n")
    print(f"{fx}  memdir={md if os.path.isdir(mem_src) else '-'}  cases={','.join(cases)}")


def main():
    global ROOT
    args = sys.argv[1:]
    corpus = HERE
    while args[:1] in (["--root"], ["--corpus"]):
        if args[0] == "--root":
            ROOT = os.path.abspath(args[1])
        else:
            corpus = os.path.abspath(args[1])
        args = args[2:]
    names = args or sorted(d for d in os.listdir(corpus)
                                   if os.path.isdir(os.path.join(corpus, d, "tree")))
    for n in names:
        build(n, corpus)


if __name__ == "__main__":
    main()
