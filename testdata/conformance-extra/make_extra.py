#!/usr/bin/env python3
"""Extra conformance fixtures: hostile and edge-case inputs, captured from real Claude Code
2.1.197 with ../conformance/capture.sh, beyond the shared goldens.

Usage: python3 make_extra.py [ROOT]   (default /tmp/ccextra; wiped and rebuilt)
Same layout as ../conformance/make_fixtures.py: ROOT/<name>/{home,cases,...}.
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from make_fixtures import w, git_repo, case, home, sanitize  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sanitize16 import sanitize16  # noqa: E402

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ccextra")


def wb(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def memdir(fx, repo):
    return os.path.join(fx, "home", ".claude", "projects", sanitize16(repo), "memory")


def fx_crlf():
    fx = os.path.join(ROOT, "crlf")
    home(fx)
    r = f"{fx}/repo"
    wb(f"{r}/CLAUDE.md", b"CRLF-ROOT line 1\r\n\r\n<!-- a comment -->\r\n\r\nline after comment\r\n@inc/crlf-inc.md\r\n")
    wb(f"{r}/inc/crlf-inc.md", b"CRLF-INC\r\nsecond line\r\n")
    wb(f"{r}/.claude/CLAUDE.md", b"---\r\ndescription: crlf frontmatter\r\n---\r\nDOT-CLAUDE CRLF no comment\r\nline two\r\n")
    wb(f"{r}/.claude/rules/crlf-rule.md", b"---\r\npaths: \"**\"\r\n---\r\nCRLF RULE\r\n\r\nend\r\n")
    git_repo(r)
    md = memdir(fx, r)
    wb(f"{md}/MEMORY.md", b"- [A](a.md) \xe2\x80\x94 crlf index\r\n- [B](b.md) \xe2\x80\x94 second\r\n")
    case(fx, "default", CWD="repo")


def fx_unicode():
    fx = os.path.join(ROOT, "unicode")
    home(fx)
    r = f"{fx}/caf\u00e9 \U0001F600 d\u00efr/repo"
    w(f"{r}/CLAUDE.md", "UNICODE-PATH-REPO \u00e9\u00e8 \U0001F680\nInclude: @with\\ \u00fcml\u00e4ut.md\n")
    w(f"{r}/with \u00fcml\u00e4ut.md", "UMLAUT-INCLUDE \u4e2d\u6587\n")
    git_repo(r)
    w(f"{memdir(fx, r)}/MEMORY.md", "- [\u00c9t\u00e9](ete.md) \u2014 emoji \U0001F389 index\n")
    case(fx, "default", CWD="caf\u00e9 \U0001F600 d\u00efr/repo")


def fx_symlinks():
    fx = os.path.join(ROOT, "symlinks")
    home(fx)
    r = f"{fx}/repo"
    rules = f"{r}/.claude/rules"
    w(f"{rules}/a-real.md", "RULE a-real\n")
    w(f"{fx}/shared-rules/shared.md", "RULE shared (symlinked dir target)\n")
    w(f"{fx}/outside-rule.md", "RULE outside (symlinked file target)\n")
    w(f"{r}/CLAUDE.md", "SYMLINK-REPO\n")
    git_repo(r)
    os.symlink(f"{fx}/shared-rules", f"{rules}/linked-dir")
    os.symlink(f"{fx}/outside-rule.md", f"{rules}/linked-file.md")
    os.symlink(rules, f"{rules}/loop")          # a directory loop
    os.symlink(f"{rules}/nowhere.md", f"{rules}/dangling.md")
    case(fx, "default", CWD="repo")


def fx_includes_edge():
    fx = os.path.join(ROOT, "incedge")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", """# Heading with @inc/heading.md
Punctuation after: @inc/punct.md, and @inc/dot.md.
*Emphasis @inc/em.md* and **strong @inc/strong.md**
Escaped underscore @inc/a\\_b.md here
[link text @inc/linktext.md](http://example.com)
<div>html @inc/html.md</div>

<!-- leading comment --> @inc/residue.md

  <!-- indented comment (2 spaces) -->
Text after indented comment

<!-- unclosed comment @inc/unclosed.md
""")
    w(f"{r}/LIST.md", "x\n")
    for n in ["heading", "em", "strong", "a_b", "linktext", "html", "residue", "unclosed"]:
        w(f"{r}/inc/{n}.md", f"INC-{n.upper()}\n")
    w(f"{r}/inc/punct.md,", "INC-PUNCT-WITH-COMMA (file name ends with a comma)\n")
    w(f"{r}/inc/punct.md", "INC-PUNCT\n")
    w(f"{r}/inc/dot.md.", "INC-DOT-WITH-DOT\n")
    w(f"{r}/inc/dot.md", "INC-DOT\n")
    w(f"{r}/.claude/CLAUDE.md", """Dir include: @../inc
No extension: @../inc/NOEXT
Globbed include: @../inc/globbed.md
- tight list `@../inc/listcode.md` item
- second item @../inc/item2.md
""")
    w(f"{r}/inc/NOEXT", "INC-NOEXT (no extension)\n")
    w(f"{r}/inc/globbed.md", "---\npaths: \"src/**\"\n---\nINC-GLOBBED (has paths frontmatter)\n")
    w(f"{r}/inc/listcode.md", "INC-LISTCODE (codespan inside a tight list item)\n")
    w(f"{r}/inc/item2.md", "INC-ITEM2\n")
    w(f"{r}/CLAUDE.local.md", "---\n---\nEMPTY-FRONTMATTER local\n")
    git_repo(r)
    case(fx, "default", CWD="repo")


def fx_settings():
    fx = os.path.join(ROOT, "settings")
    h = home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "SETTINGS-REPO\n")
    w(f"{r}/pkg/CLAUDE.md", "SETTINGS-PKG (excluded by glob)\n")
    w(f"{r}/pkg/CLAUDE.local.md", "SETTINGS-PKG-LOCAL (excluded by absolute path)\n")
    w(f"{r}/pkg/.claude/rules/r.md", "SETTINGS-PKG-RULE\n")
    # project settings may not move the memory folder; local settings may.
    w(f"{r}/pkg/.claude/settings.json", json.dumps({"autoMemoryDirectory": "~/evil-memdir"}))
    w(f"{r}/pkg/.claude/settings.local.json", json.dumps({"autoMemoryDirectory": "~/local-memdir"}))
    w(f"{h}/.claude/settings.json", json.dumps({"claudeMdExcludes": ["**/pkg/CLAUDE.md", f"{r}/pkg/CLAUDE.local.md"]}, indent=2))
    w(f"{h}/evil-memdir/MEMORY.md", "- EVIL (project settings must not choose the memory dir)\n")
    w(f"{h}/local-memdir/MEMORY.md", "- LOCAL-SETTINGS MEMORY.md\n")
    git_repo(r)
    case(fx, "default", CWD="repo/pkg")
    case(fx, "project_only", CWD="repo/pkg", EXTRA_ARGS="--setting-sources project")
    case(fx, "local_only", CWD="repo/pkg", EXTRA_ARGS="--setting-sources local")


def fx_projdir():
    # Claude Code 2.1.197 honours autoMemoryDirectory from project settings once the folder is
    # trusted (always so with -p), below local settings and above user settings.
    fx = os.path.join(ROOT, "projdir")
    h = home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "PROJDIR-REPO\n")
    w(f"{r}/.claude/settings.json", json.dumps({"autoMemoryDirectory": "~/proj-memdir"}))
    w(f"{h}/.claude/settings.json", json.dumps({"autoMemoryDirectory": "~/user-memdir"}))
    w(f"{h}/proj-memdir/MEMORY.md", "- PROJECT-SETTINGS MEMDIR\n")
    w(f"{h}/user-memdir/MEMORY.md", "- USER-SETTINGS MEMDIR\n")
    git_repo(r)
    case(fx, "default", CWD="repo")


def fx_optout():
    fx = os.path.join(ROOT, "optout")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "OPTOUT-REPO\n")
    w(f"{r}/.claude/settings.json", json.dumps({"autoMemoryEnabled": False}))
    git_repo(r)
    w(f"{memdir(fx, r)}/MEMORY.md", "- SHOULD NOT LOAD (project opted out)\n")
    case(fx, "default", CWD="repo")


def fx_memsize(name, text):
    fx = os.path.join(ROOT, name)
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", name.upper() + "\n")
    git_repo(r)
    w(f"{memdir(fx, r)}/MEMORY.md", text)
    case(fx, "default", CWD="repo")


def fx_adddir():
    fx = os.path.join(ROOT, "adddir")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "ADDDIR-REPO\n")
    git_repo(r)
    w(f"{fx}/extra/CLAUDE.md", "ADDDIR-EXTRA CLAUDE.md\n")
    w(f"{fx}/extra/.claude/rules/x.md", "ADDDIR-EXTRA rule\n")
    case(fx, "env_on", CWD="repo", EXTRA_ARGS=f"--add-dir {fx}/extra",
         EXTRA_ENV="CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD=1")
    case(fx, "env_off", CWD="repo", EXTRA_ARGS=f"--add-dir {fx}/extra")


def fx_bare():
    # --bare (CLAUDE_CODE_SIMPLE) loads no CLAUDE.md unless --add-dir is given, and never
    # attaches nested memory after a read.
    fx = os.path.join(ROOT, "bare")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "BARE-REPO\n")
    w(f"{r}/sub/CLAUDE.md", "BARE-SUB (would attach lazily)\n")
    w(f"{r}/sub/f.txt", "f\n")
    w(f"{fx}/extra/CLAUDE.md", "BARE-EXTRA\n")
    git_repo(r)
    case(fx, "plain", CWD="repo", EXTRA_ENV="CLAUDE_CODE_SIMPLE=1", STUB_ARGS=f"--tool-read {r}/sub/f.txt")
    case(fx, "add_dir", CWD="repo", EXTRA_ARGS=f"--add-dir {fx}/extra",
         EXTRA_ENV="CLAUDE_CODE_SIMPLE=1 CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD=1",
         STUB_ARGS=f"--tool-read {r}/sub/f.txt")


def fx_large():
    fx = os.path.join(ROOT, "large")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "".join(f"Line {i}: " + "z" * 90 + "\n" for i in range(500)))
    git_repo(r)
    case(fx, "default", CWD="repo")


def fx_lazy_single():
    fx = os.path.join(ROOT, "lazy")
    h = home(fx)
    r = f"{fx}/repo"
    w(f"{h}/.claude/rules/py.md", "---\npaths:\n  - \"**/*.py\"\n---\nUSER PY RULE\n")
    w(f"{r}/CLAUDE.md", "LAZY-REPO\n")
    w(f"{r}/.claude/rules/deep.md", "---\npaths: a/b/**\n---\nPROJECT RULE for a/b (trailing /** stripped)\n")
    w(f"{r}/a/CLAUDE.md", "A-CLAUDE\n@../shared.md\n")
    w(f"{r}/shared.md", "SHARED (include from a lazily attached file)\n")
    w(f"{r}/a/.claude/rules/a-cond.md", "---\npaths: \"*.py\"\n---\nA COND (relative to a/)\n")
    w(f"{r}/a/.claude/rules/a-plain.md", "A PLAIN RULE\n")
    w(f"{r}/a/b/CLAUDE.local.md", "AB-LOCAL\n")
    w(f"{r}/a/b/c.py", "print(1)\n")
    git_repo(r)
    case(fx, "read_one", CWD="repo", STUB_ARGS=f"--tool-read {r}/a/b/c.py")


def fx_pathsneg():
    # A conditional rule's `paths:` go through npm `ignore`: the folders on the way are asked
    # first, and an ignored folder decides for everything in it (`!src/x.ts` cannot bring the
    # file back); `*/` matches folders only, so it attaches for `src/x.ts` and not for `x.ts`.
    fx = os.path.join(ROOT, "pathsneg")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "PATHSNEG-REPO\n")
    w(f"{r}/.claude/rules/neg.md", "---\npaths:\n  - src\n  - \"!src/x.ts\"\n---\nNEG RULE (src, then !src/x.ts)\n")
    w(f"{r}/.claude/rules/dirs.md", "---\npaths: \"*/\"\n---\nDIRS RULE (*/)\n")
    w(f"{r}/.claude/rules/plain-neg.md", "---\npaths:\n  - \"*.ts\"\n  - \"!x.ts\"\n---\nPLAIN NEG RULE (*.ts, then !x.ts)\n")
    w(f"{r}/src/x.ts", "export {}\n")
    w(f"{r}/x.ts", "export {}\n")
    git_repo(r)
    case(fx, "read_src", CWD="repo", STUB_ARGS=f"--tool-read {r}/src/x.ts")
    case(fx, "read_top", CWD="repo", STUB_ARGS=f"--tool-read {r}/x.ts")


def fx_globs(name, patterns):
    # claudeMdExcludes goes through picomatch, whose rules are its own: `[!a]` is a class of
    # `!` and `a`, a bracket expression also matches itself literally, `{a}` is literal,
    # `@(x|y)`/`!(keep|q)`/`+(a)` are extglobs, `(zz|qq)` is a group, a leading `!` negates.
    fx = os.path.join(ROOT, name)
    h = home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "GLOBS-REPO\n")
    w(f"{r}/CLAUDE.local.md", "GLOBS-REPO-LOCAL\n")
    w(f"{h}/.claude/CLAUDE.md", "GLOBS-USER\n")
    for rule in ["a.md", "b.md", "!.md", "{a}.md", "x.md", "y.md", "z.md", "aa.md", "ab.md", "aab.md",
                 "zz.md", "keep/k.md", "drop/d.md", "q/[ab].md", "q/a.md", "q/c.md"]:
        w(f"{r}/.claude/rules/{rule}", f"GLOBS-RULE {rule}\n")
    w(f"{h}/.claude/settings.json", json.dumps({"claudeMdExcludes": patterns}))
    git_repo(r)
    case(fx, "default", CWD="repo")


def fx_deep():
    # Deep block nesting, which Claude Code lexes until JavaScript runs out of stack (11,562 to
    # 13,750 quote levels under an 8 MiB stack, by release): 10,000 quotes, 2,000 list levels and
    # 1,500 quote-and-item pairs, each with an include at the bottom and a comment that sends the
    # file through the lexer.
    fx = os.path.join(ROOT, "deep")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "<!-- c -->\nDEEP-QUOTES\n\n" + ">" * 10000 + " bottom @inc/q.md\n")
    w(f"{r}/.claude/CLAUDE.md", "<!-- c -->\nDEEP-LIST\n\n" + "- " * 2000 + "bottom @../inc/l.md\n")
    w(f"{r}/.claude/rules/pairs.md", "<!-- c -->\nDEEP-PAIRS\n\n" + "> - " * 1500 + "bottom @../../inc/p.md\n")
    for name in ["q", "l", "p"]:
        w(f"{r}/inc/{name}.md", f"INCLUDED FROM THE BOTTOM OF {name}\n")
    git_repo(r)
    case(fx, "default", CWD="repo")


def fx_deep_plain():
    # A file nested past every release's limit (14,000 quote levels) with no `@` and no comment:
    # releases up to 2.1.241 lex it anyway and drop it; from 2.1.242 a file with neither is not
    # lexed, so it loads whole.
    fx = os.path.join(ROOT, "deep_plain")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "DEEP-PLAIN\n\n" + ">" * 14000 + " bottom\n")
    w(f"{r}/.claude/rules/shallow.md", "SHALLOW RULE\n")
    git_repo(r)
    case(fx, "default", CWD="repo")


def main():
    if os.path.exists(ROOT):
        shutil.rmtree(ROOT)
    os.makedirs(ROOT)
    fx_crlf()
    fx_unicode()
    fx_symlinks()
    fx_includes_edge()
    fx_settings()
    fx_optout()
    fx_projdir()
    fx_memsize("mem25000", "a" * 12000 + "\n" + "b" * 12999 + "\n")
    fx_memsize("mem25001", "a" * 12000 + "\n" + "b" * 13000 + "\n")
    fx_memsize("mem201", "".join(f"- line {i}\n" for i in range(1, 202)))
    fx_memsize("memnonl", "q" * 30000)
    fx_memsize("memfm", "---\nname: x\n---\n<!-- c -->\n- [A](a.md) — after frontmatter and comment\n")
    fx_adddir()
    fx_deep_plain()
    fx_large()
    fx_bare()
    fx_lazy_single()
    fx_globs("globs", ["**/rules/[!a].md", "**/rules/{a}.md", "**/rules/@(x|y).md", "**/rules/!(keep|q)/*.md",
                       "**/rules/+(a)b.md", "**/rules/(zz|qq).md", "**/q/[ab].md"])
    fx_globs("globsneg", ["!**/keep/**"])
    fx_pathsneg()
    fx_deep()
    for d in sorted(os.listdir(ROOT)):
        print(os.path.join(ROOT, d))


if __name__ == "__main__":
    main()
