#!/usr/bin/env python3
"""Fixtures for the behaviours that differ between Claude Code versions (issue 10).

Usage: python3 make_cases.py ROOT        (ROOT is wiped and rebuilt; any absolute location works)

Same layout as ../conformance/make_fixtures.py, so ../conformance/capture.sh runs them:
    ROOT/<family>/home/          HOME, and home/.claude as CLAUDE_CONFIG_DIR
    ROOT/<family>/cases/*.env    CWD (relative to the family folder), EXTRA_ENV, EXTRA_ARGS,
                                 STUB_ARGS, MANAGED
    ROOT/<family>/...            the file trees
Every path written into a file or a case is derived from ROOT at build time, so the expected output
must be captured from the real binary on the same build (the memory folder name encodes the path).
What each family shows, and the first version with each behaviour: docs/claude-code-versions.md.
"""
import json
import os
import shutil
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, ".."))
from make_fixtures import w, git_repo, case, home  # noqa: E402
from sanitize16 import sanitize16  # noqa: E402


def wb(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def memdir(fx, project):
    return os.path.join(fx, "home", ".claude", "projects", sanitize16(project), "memory")


def repo_with_memory(fx, name, memory, claude_md=None):
    """A git repo fx/name whose auto-memory index is `memory` (str or bytes)."""
    r = os.path.join(fx, name)
    w(f"{r}/CLAUDE.md", claude_md or f"REPO {name}\n")
    git_repo(r)
    md = memdir(fx, r)
    if isinstance(memory, bytes):
        wb(f"{md}/MEMORY.md", memory)
    else:
        w(f"{md}/MEMORY.md", memory)
    return r


# ---------------------------------------------------------------------------
def fx_truncation(root):
    """MEMORY.md past its caps (200 lines, 25000 characters): which text is kept and the warning.
    2.1.268 changed the warning to say what was cut; these cases cover each variant of it."""
    fx = os.path.join(root, "truncation")
    home(fx)
    lines = lambda n, f=lambda i: f"- [entry {i}](e{i}.md) \u2014 note {i}": "".join(f(i) + "\n" for i in range(1, n + 1))
    cases = {
        # too many lines only; the first cut line has quotes, a backslash and a tab, quoted raw
        "lines_only": lines(250, lambda i: f"- entry {i}" if i != 201 else '- first "cut" line \\ with\ttab'),
        "lines_200": lines(200),
        "lines_201": lines(201),
        # the first dropped line is blank: no quote
        "lines_blank_cut": lines(250, lambda i: "" if i == 201 else f"- entry {i}"),
        # too many characters only: 120 lines of 300 characters
        "bytes_only": lines(120, lambda i: f"- line {i:03d} " + ("word " * 60)[:290]),
        # both caps: 300 lines of 150 characters
        "both": lines(300, lambda i: f"- line {i:03d} " + ("abc " * 40)[:140]),
        # a single line longer than the cap
        "single_line": "x" * 30000 + "\n",
        # the first line is longer than the cap, more lines follow
        "first_line_long": "y" * 26000 + "\nsecond line\nthird line\n",
        # quote lengths around the 80-character limit, and a cut word
        "quote_80": lines(201, lambda i: "q" * 80 if i == 201 else f"- e{i}"),
        "quote_81": lines(201, lambda i: ("word " * 17)[:81] if i == 201 else f"- e{i}"),
        "quote_one_word": lines(201, lambda i: "z" * 120 if i == 201 else f"- e{i}"),
        "quote_long_last_word": lines(201, lambda i: "ab cd " + "w" * 100 if i == 201 else f"- e{i}"),
        "quote_emoji_boundary": lines(201, lambda i: "e" * 78 + "\U0001F600\U0001F600 tail" if i == 201 else f"- e{i}"),
        "quote_leading_space": lines(201, lambda i: "    indented cut line  " if i == 201 else f"- e{i}"),
        # 13000 two-byte characters: 26000 bytes in UTF-8 but 13000 UTF-16 units
        "multibyte": "\u00e9" * 13000 + "\n",
        "multibyte_lines": lines(150, lambda i: f"- {i:03d} " + "\u00e9" * 200),
        "astral": lines(150, lambda i: f"- {i:03d} " + "\U0001F600" * 100),
        # leading/trailing blank lines are trimmed before counting
        "padded": "\n\n\n" + lines(200) + "\n\n\n",
    }
    for name, text in cases.items():
        repo_with_memory(fx, name, text)
        case(fx, name, CWD=name)
    crlf = "".join(f"- entry {i}\r\n" for i in range(1, 251)).encode()
    repo_with_memory(fx, "crlf_lines", crlf)
    case(fx, "crlf_lines", CWD="crlf_lines")
    repo_with_memory(fx, "bom_lines", b"\xef\xbb\xbf" + "".join(f"- entry {i}\n" for i in range(1, 251)).encode())
    case(fx, "bom_lines", CWD="bom_lines")


def fx_layers(root):
    """Every layer at start plus files attached after Reads: the wrapper of the instructions block
    (2.1.268) and of lazily attached files (2.1.307)."""
    fx = os.path.join(root, "layers")
    h = home(fx)
    w(f"{h}/.claude/CLAUDE.md", "USER-CLAUDE-MD\n")
    w(f"{h}/.claude/rules/u-rule.md", "USER-RULE\n")
    w(f"{h}/.claude/rules/u-cond.md", "---\npaths: \"**/*.ts\"\n---\nUSER-COND-RULE\n")
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "ROOT-CLAUDE-MD\n\nsecond paragraph\n")
    w(f"{r}/CLAUDE.local.md", "ROOT-LOCAL\n")
    w(f"{r}/.claude/rules/always.md", "ALWAYS-RULE\n")
    w(f"{r}/.claude/rules/cond-ts.md", "---\npaths: \"src/**/*.ts\"\n---\nCOND-TS-RULE\n")
    w(f"{r}/.claude/rules/cond-py.md", "---\npaths:\n  - \"**/*.py\"\n---\nCOND-PY-RULE\n")
    w(f"{r}/src/app.ts", "export const a = 1;\n")
    w(f"{r}/src/tool.py", "x = 1\n")
    w(f"{r}/sub/CLAUDE.md", "SUB-CLAUDE-MD\n")
    w(f"{r}/sub/CLAUDE.local.md", "SUB-LOCAL\n")
    w(f"{r}/sub/.claude/rules/sub-rule.md", "SUB-RULE\n")
    w(f"{r}/sub/.claude/rules/sub-cond.md", "---\npaths: \"deeper/**\"\n---\nSUB-COND-RULE\n")
    w(f"{r}/sub/f.txt", "f\n")
    w(f"{r}/sub/deeper/CLAUDE.md", "DEEPER-CLAUDE-MD\n")
    w(f"{r}/sub/deeper/g.txt", "g\n")
    # trailing newlines: none, several, and a file that is only a comment after stripping
    w(f"{r}/edge/CLAUDE.md", "EDGE-NO-TRAILING-NEWLINE")
    w(f"{r}/edge/.claude/rules/many.md", "EDGE-MANY-NEWLINES\n\n\n\n")
    w(f"{r}/edge/.claude/rules/crlf.md", "EDGE-CRLF\r\nline\r\n")
    w(f"{r}/edge/.claude/rules/comment-only.md", "<!-- only a comment -->\n")
    w(f"{r}/edge/.claude/rules/lead-blank.md", "\n\n  EDGE-LEADING-BLANKS\n")
    w(f"{r}/edge/h.txt", "h\n")
    w(f"{r}/.gitignore", "CLAUDE.local.md\n")
    git_repo(r)
    w(f"{memdir(fx, r)}/MEMORY.md", "- [a](a.md) \u2014 memory index\n")
    case(fx, "read_edges", CWD="repo", STUB_ARGS=f"--tool-read {r}/edge/h.txt --tool-read {r}/src/app.ts")
    case(fx, "start_in_edge", CWD="repo/edge")
    case(fx, "start", CWD="repo")
    case(fx, "read_one", CWD="repo", STUB_ARGS=f"--tool-read {r}/src/app.ts")
    case(fx, "read_many", CWD="repo",
         STUB_ARGS=f"--tool-read {r}/src/app.ts --tool-read {r}/sub/f.txt --tool-read {r}/src/tool.py "
                   f"--tool-read {r}/sub/deeper/g.txt")
    case(fx, "read_nothing_new", CWD="repo", STUB_ARGS=f"--tool-read {r}/CLAUDE.md")
    case(fx, "no_memory", CWD="repo", EXTRA_ENV="CLAUDE_CODE_DISABLE_AUTO_MEMORY=1",
         STUB_ARGS=f"--tool-read {r}/sub/f.txt")
    # With a source off (row 23: from 2.1.211 the working folder's conditional rules need the
    # project source): the nested folders' files and rules, unconditional and conditional, after
    # the same Reads.
    for sources in ("local", "user", "project"):
        case(fx, f"read_many_sources_{sources}", CWD="repo", EXTRA_ARGS=f"--setting-sources {sources}",
             STUB_ARGS=f"--tool-read {r}/src/app.ts --tool-read {r}/sub/f.txt --tool-read {r}/sub/deeper/g.txt")


def fx_agents(root):
    """AGENTS.md as project instructions (2.1.281): which folders, next to CLAUDE.md or not,
    .claude/AGENTS.md, AGENTS.local.md, includes, sub-folders, the setting that chooses."""
    fx = os.path.join(root, "agents")
    h = home(fx)
    w(f"{h}/.claude/CLAUDE.md", "USER-CLAUDE-MD\n")
    w(f"{h}/.claude/AGENTS.md", "USER-DIR-AGENTS (in the config folder)\n")
    w(f"{fx}/AGENTS.md", "ANCESTOR-AGENTS above every repo\n")

    def repo(name, files, reads=(), **kv):
        r = f"{fx}/{name}"
        for rel, text in files.items():
            w(f"{r}/{rel}", text)
        w(f"{r}/x.txt", "x\n")
        git_repo(r)
        stub = " ".join(f"--tool-read {r}/{p}" for p in reads)
        case(fx, name.replace("/", "_"), CWD=kv.pop("cwd", name), **({"STUB_ARGS": stub} if stub else {}), **kv)
        return r

    repo("only_agents", {"AGENTS.md": "ONLY-AGENTS\n"})
    repo("both", {"AGENTS.md": "BOTH-AGENTS\n", "CLAUDE.md": "BOTH-CLAUDE\n"})
    repo("dot_claude_agents", {".claude/AGENTS.md": "DOT-CLAUDE-AGENTS\n"})
    repo("agents_and_dot", {"AGENTS.md": "AD-AGENTS\n", ".claude/AGENTS.md": "AD-DOT-AGENTS\n"})
    repo("agents_local", {"AGENTS.md": "AL-AGENTS\n", "AGENTS.local.md": "AL-AGENTS-LOCAL\n"})
    repo("claude_local_only", {"AGENTS.md": "CLO-AGENTS\n", "CLAUDE.local.md": "CLO-CLAUDE-LOCAL\n"})
    repo("dot_claude_claude", {"AGENTS.md": "DCC-AGENTS\n", ".claude/CLAUDE.md": "DCC-DOT-CLAUDE\n"})
    repo("rules_only", {"AGENTS.md": "RO-AGENTS\n", ".claude/rules/r.md": "RO-RULE\n"})
    repo("includes", {"AGENTS.md": "INC-AGENTS\nsee @docs/inc.md\n", "docs/inc.md": "INC-TARGET\n"})
    repo("same_text", {"AGENTS.md": "SAME TEXT\n", "CLAUDE.md": "SAME TEXT\n"})
    repo("empty_agents", {"AGENTS.md": "", "pkg/AGENTS.md": "EA-PKG-AGENTS\n"}, cwd="empty_agents/pkg")
    # sub-folders: from a sub-folder cwd, and lazily after a Read
    repo("nested", {"AGENTS.md": "N-ROOT-AGENTS\n", "pkg/AGENTS.md": "N-PKG-AGENTS\n",
                    "pkg/CLAUDE.md": "N-PKG-CLAUDE\n", "pkg/deep/AGENTS.md": "N-DEEP-AGENTS\n",
                    "pkg/deep/y.txt": "y\n", "other/AGENTS.md": "N-OTHER-AGENTS\n", "other/z.txt": "z\n"},
         cwd="nested/pkg")
    repo("lazy", {"CLAUDE.md": "LZ-ROOT-CLAUDE\n", "a/AGENTS.md": "LZ-A-AGENTS\n", "a/f.txt": "f\n",
                  "b/AGENTS.md": "LZ-B-AGENTS\n", "b/CLAUDE.md": "LZ-B-CLAUDE\n", "b/f.txt": "f\n",
                  "c/.claude/AGENTS.md": "LZ-C-DOT-AGENTS\n", "c/f.txt": "f\n"},
         reads=("a/f.txt", "b/f.txt", "c/f.txt"))
    repo("lazy_agents_root", {"AGENTS.md": "LA-ROOT-AGENTS\n", "a/AGENTS.md": "LA-A-AGENTS\n", "a/f.txt": "f\n",
                              "b/CLAUDE.md": "LA-B-CLAUDE\n", "b/f.txt": "f\n"},
         reads=("a/f.txt", "b/f.txt"))
    # where AGENTS.md sits among a folder's files, from a sub-folder
    repo("order", {"AGENTS.md": "O-ROOT-AGENTS\n", ".claude/AGENTS.md": "O-ROOT-DOT-AGENTS\n",
                   ".claude/rules/a.md": "O-ROOT-RULE\n", "pkg/AGENTS.md": "O-PKG-AGENTS\n",
                   "pkg/.claude/rules/p.md": "O-PKG-RULE\n", "pkg/.claude/AGENTS.md": "O-PKG-DOT-AGENTS\n"},
         cwd="order/pkg")
    # lazily, in a project without any CLAUDE.md
    repo("lazy_only_agents", {"AGENTS.md": "LO-ROOT-AGENTS\n", "a/AGENTS.md": "LO-A-AGENTS\n",
                              "a/.claude/AGENTS.md": "LO-A-DOT-AGENTS\n", "a/f.txt": "f\n",
                              "a/.claude/rules/r.md": "LO-A-RULE\n"},
         reads=("a/f.txt",))
    # a CLAUDE.md above the repo, or only below the working folder
    w(f"{fx}/above/CLAUDE.md", "ABOVE-CLAUDE (above the repo)\n")
    repo("above/repo", {"AGENTS.md": "AB-AGENTS\n"}, cwd="above/repo")
    repo("claude_below", {"AGENTS.md": "CB-AGENTS\n", "deep/CLAUDE.md": "CB-DEEP-CLAUDE\n", "deep/f.txt": "f\n"},
         reads=("deep/f.txt",))
    # the switch in the user's settings
    cfg_off = f"{fx}/cfg-plugin-off"
    w(f"{cfg_off}/settings.json", json.dumps({"enabledPlugins": {"cc-plugin-agents-md@builtin": False}}) + "\n")
    repo("user_plugin_off", {"AGENTS.md": "UPO-AGENTS\n"}, EXTRA_ENV=f"CLAUDE_CONFIG_DIR={cfg_off}")
    cfg_both = f"{fx}/cfg-both"
    w(f"{cfg_both}/settings.json", json.dumps({"pluginConfigs": {"cc-plugin-agents-md@builtin": {
        "options": {"instructionFiles": "claude-md-and-agents-md"}}}}) + "\n")
    repo("user_option_both", {"AGENTS.md": "UOB-AGENTS\n", "CLAUDE.md": "UOB-CLAUDE\n"},
         EXTRA_ENV=f"CLAUDE_CONFIG_DIR={cfg_both}")
    # a managed CLAUDE.md (organisation policy) next to a project that has only AGENTS.md
    w(f"{fx}/managed-dir/CLAUDE.md", "MANAGED-CLAUDE-MD\n")
    repo("managed_claude", {"AGENTS.md": "MC-AGENTS\n"}, MANAGED="managed-dir")
    # the same in a Cowork session run as root, whose account could have written any managed
    # file: from 2.1.304 labelled unverified and quoted, its rules and includes too (rows 87, 88)
    w(f"{fx}/managed-cowork/CLAUDE.md", "MANAGED-COWORK\n> kept quote\n- <tick> and \u200bhidden\n@inc.md\n")
    w(f"{fx}/managed-cowork/inc.md", "MANAGED-COWORK-INCLUDED\n")
    w(f"{fx}/managed-cowork/.claude/rules/r.md", "MANAGED-COWORK-RULE\n")
    repo("managed_cowork", {"AGENTS.md": "MCW-AGENTS\n"}, MANAGED="managed-cowork",
         EXTRA_ENV="CLAUDE_CODE_ENTRYPOINT=remote_cowork")
    # the user/managed layers only: AGENTS.md there is not a thing
    repo("user_claude_only", {"AGENTS.md": "UCO-AGENTS\n"}, EXTRA_ARGS="--setting-sources user")
    repo("disable_claude_mds", {"AGENTS.md": "DCM-AGENTS\n"}, EXTRA_ENV="CLAUDE_CODE_DISABLE_CLAUDE_MDS=1")
    # the choice of instruction files: 2.1.332 ships it as the built-in plugin
    # cc-plugin-agents-md@builtin with the option instructionFiles (legacy name projectInstructions)
    def opt(key, value, plugin="cc-plugin-agents-md@builtin"):
        return json.dumps({"pluginConfigs": {plugin: {"options": {key: value}}}}) + "\n"
    for mode in ["claude-md", "claude-md-or-agents-md", "claude-md-and-agents-md", "managed-only", "bogus"]:
        n = "mode_" + mode.replace("-", "_")
        repo(n, {"AGENTS.md": f"M-AGENTS {mode}\n", "CLAUDE.md": f"M-CLAUDE {mode}\n",
                 ".claude/settings.json": opt("instructionFiles", mode)})
        repo(n + "_noclaude", {"AGENTS.md": f"MN-AGENTS {mode}\n",
                               ".claude/settings.json": opt("instructionFiles", mode)})
    for mode in ["none", "claude", "agents-fallback", "both"]:
        n = "legacy_" + mode.replace("-", "_")
        repo(n, {"AGENTS.md": f"L-AGENTS {mode}\n", "CLAUDE.md": f"L-CLAUDE {mode}\n",
                 ".claude/settings.json": opt("projectInstructions", mode)})
    repo("mode_both_plain_name", {"AGENTS.md": "PN-AGENTS\n", "CLAUDE.md": "PN-CLAUDE\n",
                                  ".claude/settings.json": opt("instructionFiles", "claude-md-and-agents-md",
                                                               "cc-plugin-agents-md")})
    repo("plugin_disabled", {"AGENTS.md": "PD-AGENTS\n", ".claude/settings.json": json.dumps(
        {"enabledPlugins": {"cc-plugin-agents-md@builtin": False}}) + "\n"})
    # What the plugin's Read hook adds (a separate system message after the tool results).
    # Reads are in different folders: reads in one folder race for the same files.
    repo("hook_processing", {"AGENTS.md": "HP-ROOT\n",
                             "sub/AGENTS.md": "---\ndescription: x\n---\nHP-SUB <!-- c --> text\n@./inc.md\n"
                                              "<!-- block\ncomment -->\nend  \n",
                             "sub/inc.md": "HP-INC\n", "sub/.claude/AGENTS.md": "HP-SUB-DOT (no newline)",
                             "sub/deep/AGENTS.md": "HP-DEEP\r\nCRLF\r\n", "sub/deep/f.txt": "f\n"},
         reads=("sub/deep/f.txt",))
    repo("hook_dedupe", {"AGENTS.md": "HD-SAME\n", "a/AGENTS.md": "  HD-SAME \n\n", "a/f.txt": "f\n",
                         "b/AGENTS.md": "", "b/.claude/AGENTS.md": "HD-B-DOT\n", "b/f.txt": "f\n",
                         "c/AGENTS.md": "HD-TWIN\n", "c/f.txt": "f\n", "d/AGENTS.md": "HD-TWIN\n", "d/f.txt": "f\n"},
         reads=("a/f.txt", "b/f.txt", "c/f.txt", "d/f.txt"))
    repo("hook_self", {"AGENTS.md": "HS-ROOT\n", "c/AGENTS.md": "HS-C\n", "c/deep/AGENTS.md": "HS-DEEP\n"},
         reads=("c/deep/AGENTS.md",))
    repo("hook_sub_cwd", {"AGENTS.md": "HSC-ROOT\n", "pkg/AGENTS.md": "HSC-PKG\n", "pkg/deep/AGENTS.md": "HSC-DEEP\n",
                          "pkg/deep/f.txt": "f\n"},
         cwd="hook_sub_cwd/pkg", reads=("pkg/deep/f.txt",))
    repo("hook_chain", {"x/AGENTS.md": "HC-X\n", "x/y/.claude/AGENTS.md": "HC-Y-DOT @../inc.md\n",
                        "x/y/inc.md": "HC-INC\n", "x/y/z/f.txt": "f\n"},
         reads=("x/y/z/f.txt",))
    repo("hook_both_mode", {"CLAUDE.md": "HB-ROOT-CLAUDE\n", "a/AGENTS.md": "HB-A\n", "a/CLAUDE.md": "HB-A-CLAUDE\n",
                            "a/f.txt": "f\n", "b/AGENTS.md": "HB-B-SAME\n", "b/CLAUDE.md": "HB-B-SAME\n", "b/f.txt": "f\n"},
         reads=("a/f.txt", "b/f.txt"), EXTRA_ENV=f"CLAUDE_CONFIG_DIR={cfg_both}")
    # CLAUDE_CODE_DISABLE_ATTACHMENTS: nothing after a Read, neither the hook nor nested files
    repo("no_attachments", {"AGENTS.md": "NA-ROOT\n", "a/AGENTS.md": "NA-A\n", "a/f.txt": "f\n",
                            "b/CLAUDE.md": "NA-B-CLAUDE\n", "b/f.txt": "f\n"},
         reads=("a/f.txt", "b/f.txt"), EXTRA_ENV="CLAUDE_CODE_DISABLE_ATTACHMENTS=1")
    repo("no_attachments_settings", {"AGENTS.md": "NAS-ROOT\n", "a/AGENTS.md": "NAS-A\n", "a/f.txt": "f\n",
                                     "b/CLAUDE.md": "NAS-B-CLAUDE\n", "b/f.txt": "f\n",
                                     ".claude/settings.json": json.dumps(
                                         {"env": {"CLAUDE_CODE_DISABLE_ATTACHMENTS": "true"}}) + "\n"},
         reads=("a/f.txt", "b/f.txt"))

def fx_symlinks(root):
    """Rules, CLAUDE.md and memory reached through symbolic links (2.1.232 stopped following
    links to rule files)."""
    fx = os.path.join(root, "symlinks")
    home(fx)
    r = f"{fx}/repo"
    ext = f"{fx}/ext"
    w(f"{ext}/file-rule.md", "EXT-FILE-RULE (symlinked file, outside the repo)\n")
    w(f"{ext}/cond-rule.md", "---\npaths: \"**/*.ts\"\n---\nEXT-COND-RULE\n")
    w(f"{ext}/dir/in-dir.md", "EXT-DIR-RULE (inside a symlinked folder)\n")
    w(f"{ext}/CLAUDE-target.md", "EXT-CLAUDE-MD (CLAUDE.md is a symlink)\n")
    w(f"{ext}/inc.md", "EXT-INCLUDE\n")
    w(f"{r}/.claude/rules/plain.md", "PLAIN-RULE\n")
    w(f"{r}/inside/real.md", "INSIDE-TARGET (symlink target inside the repo)\n")
    git_repo(r, commit=False)
    rules = f"{r}/.claude/rules"
    os.symlink(f"{ext}/file-rule.md", f"{rules}/file-link.md")
    os.symlink("../../inside/real.md", f"{rules}/inside-link.md")
    os.symlink(f"{ext}/cond-rule.md", f"{rules}/cond-link.md")
    os.symlink(f"{ext}/dir", f"{rules}/dir-link")
    os.symlink(f"{fx}/nowhere.md", f"{rules}/dangling.md")
    os.symlink(rules, f"{rules}/loop")
    os.symlink("self.md", f"{rules}/self.md")
    os.symlink(f"{ext}/CLAUDE-target.md", f"{r}/CLAUDE.md")
    os.symlink(f"{ext}/inc.md", f"{r}/inc-link.md")
    w(f"{r}/CLAUDE.local.md", "LOCAL include: @inc-link.md\n")
    w(f"{r}/src/a.ts", "a\n")
    # a symlinked rules folder and a symlinked .claude folder
    r2 = f"{fx}/repo2"
    w(f"{fx}/shared-rules/shared.md", "SHARED-RULES-DIR rule\n")
    w(f"{r2}/CLAUDE.md", "REPO2\n")
    os.makedirs(f"{r2}/.claude")
    os.symlink(f"{fx}/shared-rules", f"{r2}/.claude/rules")
    git_repo(r2, commit=False)
    r3 = f"{fx}/repo3"
    w(f"{fx}/shared-dotclaude/CLAUDE.md", "SHARED-DOTCLAUDE CLAUDE.md\n")
    w(f"{fx}/shared-dotclaude/rules/r.md", "SHARED-DOTCLAUDE rule\n")
    w(f"{r3}/CLAUDE.md", "REPO3\n")
    os.symlink(f"{fx}/shared-dotclaude", f"{r3}/.claude")
    git_repo(r3, commit=False)
    # the user rules folder as a link, and a MEMORY.md that is a link
    h = f"{fx}/home"
    w(f"{fx}/user-rules/u.md", "USER-RULE via linked folder\n")
    os.symlink(f"{fx}/user-rules", f"{h}/.claude/rules")
    md = memdir(fx, r)
    w(f"{ext}/memory-target.md", "- LINKED-MEMORY-INDEX\n")
    os.makedirs(md)
    os.symlink(f"{ext}/memory-target.md", f"{md}/MEMORY.md")
    case(fx, "repo", CWD="repo", STUB_ARGS=f"--tool-read {r}/src/a.ts")
    case(fx, "rules_dir_link", CWD="repo2")
    case(fx, "dot_claude_link", CWD="repo3")


def fx_encoding(root):
    """A UTF-8 byte-order mark and CRLF line ends in CLAUDE.md, rules and MEMORY.md
    (2.1.239: a BOM before frontmatter)."""
    fx = os.path.join(root, "encoding")
    home(fx)
    BOM = b"\xef\xbb\xbf"
    r = f"{fx}/repo"
    wb(f"{r}/CLAUDE.md", BOM + b"---\ndescription: bom frontmatter\n---\nBOM-CLAUDE-MD body\n")
    wb(f"{r}/.claude/CLAUDE.md", BOM + b"BOM-DOT-CLAUDE no frontmatter\n")
    wb(f"{r}/CLAUDE.local.md", b"---\r\ndescription: crlf\r\n---\r\nCRLF-LOCAL body\r\nline 2\r\n")
    rules = f"{r}/.claude/rules"
    wb(f"{rules}/bom-cond.md", BOM + b"---\npaths: \"src/**\"\n---\nBOM-COND-RULE\n")
    wb(f"{rules}/bom-plain.md", BOM + b"BOM-PLAIN-RULE\n")
    wb(f"{rules}/bom-desc.md", BOM + b"---\ndescription: d\n---\nBOM-DESC-RULE\n")
    wb(f"{rules}/crlf-cond.md", b"---\r\npaths: \"src/**\"\r\n---\r\nCRLF-COND-RULE\r\n")
    wb(f"{rules}/crlf-desc.md", b"---\r\ndescription: d\r\n---\r\nCRLF-DESC-RULE\r\nsecond\r\n")
    wb(f"{rules}/cr-only.md", b"---\rpaths: \"src/**\"\r---\rCR-ONLY-RULE\r")
    wb(f"{rules}/bom-crlf.md", BOM + b"---\r\npaths: \"src/**\"\r\n---\r\nBOM-CRLF-RULE\r\n")
    wb(f"{rules}/double-bom.md", BOM + BOM + b"---\npaths: \"src/**\"\n---\nDOUBLE-BOM-RULE\n")
    wb(f"{rules}/utf16.md", "UTF16-RULE\n".encode("utf-16"))
    wb(f"{rules}/latin1.md", "LATIN1-RULE caf\u00e9\n".encode("latin-1"))
    wb(f"{rules}/nul.md", b"NUL-RULE a\x00b\n")
    wb(f"{rules}/ls.md", "LS-RULE a\u2028b\u2029c\n".encode())
    w(f"{r}/src/a.ts", "a\n")
    git_repo(r)
    md = memdir(fx, r)
    wb(f"{md}/MEMORY.md", BOM + b"---\nname: x\n---\n- BOM-MEMORY\r\n- second\r\n")
    case(fx, "start", CWD="repo")
    case(fx, "read_src", CWD="repo", STUB_ARGS=f"--tool-read {r}/src/a.ts")


def fx_yaml_paths(root):
    """Lenient YAML in a rule's `paths:` frontmatter. Each rule names the file it should match;
    reading src/a.ts and lib/b.py shows which rules attach."""
    fx = os.path.join(root, "yaml_paths")
    home(fx)
    r = f"{fx}/repo"
    rules = {
        "unquoted-star": "paths: src/**/*.ts",
        "unquoted-leading-star": "paths: **/*.ts",
        "quoted-star": "paths: \"**/*.ts\"",
        "brace": "paths: \"src/*.{ts,js}\"",
        "brace-unquoted": "paths: src/*.{ts,js}",
        "comma-string": "paths: \"lib/**, src/**\"",
        "comma-unquoted": "paths: lib/**, src/**",
        "flow-list": "paths: [\"src/**\", \"lib/**\"]",
        "flow-unquoted": "paths: [src/**, lib/**]",
        "block-list": "paths:\n  - src/**\n  - \"lib/**\"",
        "block-list-tab": "paths:\n\t- src/**",
        "tab-after-colon": "paths:\t\"src/**\"",
        "dup-key": "paths: \"nomatch/**\"\npaths: \"src/**\"",
        "invalid-yaml": "paths: [src/**\nfoo: : :",
        "empty-paths": "paths:",
        "empty-list": "paths: []",
        "null-paths": "paths: null",
        "number": "paths: 42",
        "bool": "paths: true",
        "nested-map": "paths:\n  a: src/**",
        "globs-key": "globs: src/**",
        "Paths-caps": "Paths: src/**",
        "dot-slash": "paths: ./src/**",
        "abs-path": f"paths: {r}/src/**",
        "leading-slash": "paths: /src/**",
        "negation": "paths: \"!src/**\"",
        "double-star-only": "paths: \"**\"",
        "star-only": "paths: \"*\"",
        "space-in-list": "paths: [ \" src/** \" ]",
        "trailing-comment": "paths: src/** # comment",
        "anchor": "x: &a src/**\npaths: *a",
        "multiline-folded": "paths: >\n  src/**",
        "yaml-doc-end": "paths: src/**\n...",
        "dir-only": "paths: src",
        "dir-slash": "paths: src/",
        "ext-only": "paths: \"*.ts\"",
        "case-mismatch": "paths: SRC/**",
        # A tab before a nested key, and a value that starts with YAML's explicit-key mark.
        "tab-before-key": "paths: src/**\nmeta:\n\towner: me",
        "tab-before-key-first": "meta:\n\towner: me\npaths: src/**",
        "explicit-key": "paths: ? src/**",
        "explicit-key-other": "paths: src/**\nnote: ? what",
        # A block only the retry reads: the list stays a list from 2.1.146, and a tab-indented
        # key is untabbed from 2.1.163.
        "list-then-bad-value": "paths: [src/**, lib/**]\nnote: a: b",
        "tab-key-then-bad-value": "description: d\npaths:\n\t- src/**\nnote: a: b",
    }
    for name, fm in rules.items():
        w(f"{r}/.claude/rules/{name}.md", f"---\n{fm}\n---\nRULE {name}\n")
    w(f"{r}/src/a.ts", "a\n")
    w(f"{r}/lib/b.py", "b\n")
    w(f"{r}/CLAUDE.md", "YAML-REPO\n")
    git_repo(r)
    case(fx, "start", CWD="repo")
    case(fx, "read_ts", CWD="repo", STUB_ARGS=f"--tool-read {r}/src/a.ts")
    case(fx, "read_py", CWD="repo", STUB_ARGS=f"--tool-read {r}/lib/b.py")


def fx_size(root):
    """Instruction files around Claude Code's size limit: from 2.1.196 a file of more than 4 MiB
    (4194304 bytes) is left out without a word, one of exactly 4 MiB is sent whole; 2.1.195 and
    older send every one whole."""
    fx = os.path.join(root, "size")
    home(fx)
    mib4 = 4 * 1024 * 1024

    def body(tag, n, unit="x"):
        head, tail = f"SIZE-{tag} start\n", f"\nSIZE-{tag} end\n"
        fill = n - len(head.encode()) - len(tail.encode())
        per = len(unit.encode())
        text = (unit * 63 + "\n") * (fill // ((63 * per) + 1))
        text += "z" * (fill - len(text.encode()))
        return head + text + tail

    for name, n, unit in [("k40", 40001, "x"), ("exact_4mib", mib4, "x"), ("over_4mib", mib4 + 1, "x"),
                          ("multibyte_over_bytes", mib4 + 2, "\u00e9")]:
        r = f"{fx}/{name}"
        w(f"{r}/CLAUDE.md", body(name, n, unit))
        w(f"{r}/CLAUDE.local.md", f"LOCAL {name} @small.md\n")
        w(f"{r}/small.md", "SMALL include\n")
        git_repo(r)
        w(f"{memdir(fx, r)}/MEMORY.md", "- MEMORY of " + name + "\n")
        case(fx, name, CWD=name)
    r = f"{fx}/big_rule_and_include"
    w(f"{r}/CLAUDE.md", "RULE-INCLUDE repo @big-include.md\n")
    w(f"{r}/big-include.md", body("include", mib4 + 1))
    w(f"{r}/.claude/rules/big.md", body("rule", mib4 + 1))
    w(f"{r}/.claude/rules/small.md", "SMALL-RULE\n")
    git_repo(r)
    w(f"{memdir(fx, r)}/MEMORY.md", body("memory", mib4 + 1))
    case(fx, "big_rule_and_include", CWD="big_rule_and_include")


def fx_memory_env(root):
    """Environment overrides of the memory folder and its index."""
    fx = os.path.join(root, "memory_env")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "MEMENV-REPO\n")
    git_repo(r)
    w(f"{memdir(fx, r)}/MEMORY.md", "- DEFAULT-MEMORY\n")
    w(f"{fx}/cowork/MEMORY.md", "- COWORK-MEMORY\n")
    w(f"{fx}/cowork-trailing/MEMORY.md", "- COWORK-TRAILING\n")
    w(f"{fx}/remote/projects/{sanitize16(r)}/memory/MEMORY.md", "- REMOTE-MEMORY\n")
    w(f"{fx}/settings-dir/MEMORY.md", "- SETTING-DIR-MEMORY\n")
    w(f"{fx}/home/.claude/settings.json", "{}\n")
    os.makedirs(f"{fx}/empty-cowork", exist_ok=True)
    case(fx, "default", CWD="repo")
    case(fx, "cowork", CWD="repo", EXTRA_ENV=f"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE={fx}/cowork")
    case(fx, "cowork_slash", CWD="repo", EXTRA_ENV=f"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE={fx}/cowork/")
    case(fx, "cowork_relative", CWD="repo", EXTRA_ENV="CLAUDE_COWORK_MEMORY_PATH_OVERRIDE=../cowork")
    case(fx, "cowork_missing", CWD="repo", EXTRA_ENV=f"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE={fx}/nope")
    case(fx, "cowork_empty_dir", CWD="repo", EXTRA_ENV=f"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE={fx}/empty-cowork")
    case(fx, "cowork_tilde", CWD="repo", EXTRA_ENV="CLAUDE_COWORK_MEMORY_PATH_OVERRIDE=~/x")
    case(fx, "remote_dir", CWD="repo", EXTRA_ENV=f"CLAUDE_CODE_REMOTE=1 CLAUDE_CODE_REMOTE_MEMORY_DIR={fx}/remote")
    case(fx, "remote_dir_only", CWD="repo", EXTRA_ENV=f"CLAUDE_CODE_REMOTE_MEMORY_DIR={fx}/remote")
    case(fx, "remote_only", CWD="repo", EXTRA_ENV="CLAUDE_CODE_REMOTE=1")
    case(fx, "remote_and_cowork", CWD="repo",
         EXTRA_ENV=f"CLAUDE_CODE_REMOTE=1 CLAUDE_CODE_REMOTE_MEMORY_DIR={fx}/remote CLAUDE_COWORK_MEMORY_PATH_OVERRIDE={fx}/cowork")
    case(fx, "cowork_and_setting", CWD="repo", EXTRA_ENV=f"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE={fx}/cowork",
         EXTRA_ARGS=f"--settings {fx}/setting-dir.json")
    w(f"{fx}/setting-dir.json", json.dumps({"autoMemoryDirectory": f"{fx}/settings-dir"}) + "\n")
    case(fx, "setting_dir_flag", CWD="repo", EXTRA_ARGS=f"--settings {fx}/setting-dir.json")
    w(f"{fx}/setting-dir-tilde.json", json.dumps({"autoMemoryDirectory": "~/tilde-mem"}) + "\n")
    w(f"{fx}/home/tilde-mem/MEMORY.md", "- TILDE-SETTING-MEMORY\n")
    case(fx, "setting_dir_tilde", CWD="repo", EXTRA_ARGS=f"--settings {fx}/setting-dir-tilde.json")
    case(fx, "disable_0", CWD="repo", EXTRA_ENV="CLAUDE_CODE_DISABLE_AUTO_MEMORY=0")
    case(fx, "disable_true", CWD="repo", EXTRA_ENV="CLAUDE_CODE_DISABLE_AUTO_MEMORY=true")
    case(fx, "disable_yes", CWD="repo", EXTRA_ENV="CLAUDE_CODE_DISABLE_AUTO_MEMORY=yes")
    case(fx, "simple_add_dir", CWD="repo", EXTRA_ENV="CLAUDE_CODE_SIMPLE=1", EXTRA_ARGS=f"--add-dir {fx}/cowork")


def fx_unicode(root):
    """NFC and NFD spellings of the same folder name on Linux (two different folders there)."""
    fx = os.path.join(root, "unicode")
    home(fx)
    nfc = unicodedata.normalize("NFC", "caf\u00e9-repo")
    nfd = unicodedata.normalize("NFD", "caf\u00e9-repo")
    for form, name in [("NFC", nfc), ("NFD", nfd)]:
        r = f"{fx}/{name}"
        w(f"{r}/CLAUDE.md", f"{form}-REPO-CLAUDE-MD\n")
        w(f"{r}/.claude/rules/r.md", f"{form}-RULE\n")
        git_repo(r)
        w(f"{memdir(fx, r)}/MEMORY.md", f"- {form}-MEMORY (folder named from the {form} path)\n")
        case(fx, f"cwd_{form.lower()}", CWD=name)
    # the memory folder of the NFD repo spelled in NFC, and vice versa
    nfc_spelled = os.path.join(fx, unicodedata.normalize("NFC", "only\u00e9-nfd"))
    w(os.path.join(memdir(fx, nfc_spelled), "MEMORY.md"),
      "- NFC-SPELLED-MEMORY for an NFD repo\n")
    r = f"{fx}/" + unicodedata.normalize("NFD", "only\u00e9-nfd")
    w(f"{r}/CLAUDE.md", "ONLY-NFD-REPO\n")
    git_repo(r)
    case(fx, "nfd_repo_nfc_memory", CWD=os.path.basename(r))
    # a config folder with an NFD name
    cfg = f"{fx}/" + unicodedata.normalize("NFD", "conf\u00efg")
    w(f"{cfg}/CLAUDE.md", "NFD-CONFIG-DIR USER CLAUDE.md\n")
    w(f"{cfg}/projects/{sanitize16(os.path.join(fx, nfc))}/memory/MEMORY.md", "- MEMORY under the NFD config folder\n")
    case(fx, "config_dir_nfd", CWD=nfc, EXTRA_ENV=f"CLAUDE_CONFIG_DIR={cfg}")
    # includes spelled in the other form
    r = f"{fx}/inc"
    w(f"{r}/CLAUDE.md", "INC-REPO nfc->nfd: @" + unicodedata.normalize("NFC", "d\u00e9j\u00e0.md") + "\n")
    w(f"{r}/" + unicodedata.normalize("NFD", "d\u00e9j\u00e0.md"), "NFD-NAMED-INCLUDE\n")
    git_repo(r)
    case(fx, "include_other_form", CWD="inc")


def fx_markdown(root):
    """Text handling that a random differential run showed to differ: Markdown link reference
    definitions (2.1.197 drops them from the text, 2.1.332 keeps them) and CRLF bodies after a
    frontmatter opener with trailing blanks."""
    fx = os.path.join(root, "markdown")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "[ref]: http://example.com\nROOT after a definition on line 1\n\n"
                        "middle text\n[other]: @inc.md \"title\"\n\nafter\n"
                        "  [indented]: /x\n[^note]: footnote\n\n[used][ref] and [other]\n<!-- comment -->\nend\n")
    w(f"{r}/inc.md", "INC\n")
    wb(f"{r}/.claude/rules/def-crlf.md", b"[ref]: @./x.md#\r\n<!-->\r\n\ttab text\r\nDEF-CRLF-RULE\r\n")
    wb(f"{r}/.claude/rules/fm-def.md", b"---\n---\n[ref]: @./e.txt#\n\n\ttab text\nFM-DEF-RULE\n")
    wb(f"{r}/.claude/rules/fm-space-crlf.md", b"--- \r\nname: y\r\n---\r\n\r\nFM-SPACE-CRLF line 1\r\nline 2\r\n")
    wb(f"{r}/.claude/rules/fm-tab-crlf.md", b"---\t\r\nname: y\r\n---\r\nFM-TAB-CRLF line 1\r\nline 2\r\n")
    wb(f"{r}/.claude/rules/fm-crlf.md", b"---\r\nname: y\r\n---\r\nFM-CRLF line 1\r\nline 2\r\n")
    wb(f"{r}/.claude/rules/fm-close-space.md", b"---\nname: y\n--- \nFM-CLOSE-SPACE\n")
    wb(f"{r}/.claude/rules/crlf-comment.md", b"CRLF-COMMENT a\r\n<!-- c -->\r\nb\r\n")
    wb(f"{r}/.claude/rules/inline-crlf.md", b"INLINE-CRLF <!-- inline --> text\r\nsecond\r\n")
    wb(f"{r}/.claude/rules/def-inline.md", b"[ref]: http://x\nDEF-INLINE <!-- inline --> more\n")
    wb(f"{r}/.claude/rules/def-block-crlf.md", b"[ref]: http://x\r\nDEF-BLOCK-CRLF\r\n<!-- c -->\r\nend\r\n")
    git_repo(r)
    case(fx, "start", CWD="repo")


def fx_reads_again(root):
    """What a Read attaches that was already loaded at start (row 41): up to 2.1.280 the
    `.claude` folder on the way to a file inside it gives its CLAUDE.md again, and a sub-folder's
    CLAUDE.md brings a start-up include again; from 2.1.281 neither."""
    fx = os.path.join(root, "reads_again")
    home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "AGAIN-ROOT\n\nSee @shared.md\n")
    w(f"{r}/shared.md", "AGAIN-SHARED\n")
    w(f"{r}/.claude/CLAUDE.md", "AGAIN-DOT-CLAUDE\n")
    w(f"{r}/.claude/rules/always.md", "AGAIN-RULE\n")
    w(f"{r}/.claude/rules/pkg.md", "---\npaths: \"pkg/**\"\n---\nAGAIN-PKG-RULE\n")
    w(f"{r}/.claude/sub/x.txt", "x\n")
    w(f"{r}/pkg/CLAUDE.md", "AGAIN-PKG\n\nSee @../shared.md and @../.claude/rules/always.md\n")
    w(f"{r}/pkg/x.txt", "y\n")
    git_repo(r)
    case(fx, "read_dot_claude", CWD="repo", STUB_ARGS=f"--tool-read {r}/.claude/sub/x.txt")
    case(fx, "read_pkg", CWD="repo", STUB_ARGS=f"--tool-read {r}/pkg/x.txt")


def fx_settings_invalid(root):
    """A settings file with one invalid value: 2.1.197 drops the whole file (its claudeMdExcludes
    too), later versions drop only the bad key. Each repo excludes sub/CLAUDE.md and a rule."""
    fx = os.path.join(root, "settings_invalid")
    home(fx)
    variants = {
        "valid": {},
        "relative_dir": {"autoMemoryDirectory": "relative/dir"},
        "tilde_dotdot_dir": {"autoMemoryDirectory": "~/m1/../m3"},
        "enabled_string": {"autoMemoryEnabled": "yes"},
        "excludes_string": {"claudeMdExcludes": "**/sub/CLAUDE.md"},
        "unknown_key": {"noSuchSetting": 1},
        "env_number": {"env": {"X": 1}},
    }
    for name, extra in variants.items():
        for where in ["project", "local"]:
            r = f"{fx}/{where}_{name}"
            w(f"{r}/CLAUDE.md", f"ROOT {where} {name}\n")
            w(f"{r}/sub/CLAUDE.md", "SUB-CLAUDE-MD (excluded when the file is read)\n")
            w(f"{r}/.claude/rules/x.md", "RULE-X (excluded when the file is read)\n")
            obj = {"claudeMdExcludes": ["**/sub/CLAUDE.md", "**/.claude/rules/x.md"], **extra}
            if "claudeMdExcludes" in extra:
                obj["claudeMdExcludes"] = extra["claudeMdExcludes"]
            fname = "settings.json" if where == "project" else "settings.local.json"
            w(f"{r}/.claude/{fname}", json.dumps(obj) + "\n")
            git_repo(r)
            case(fx, f"{where}_{name}", CWD=f"{where}_{name}/sub")


def settings(path, env=None, **extra):
    obj = dict(extra)
    if env is not None:
        obj["env"] = env
    w(path, json.dumps(obj, indent=2) + "\n")


def fx_settings_env(root):
    """Claude Code copies the `env` block of settings files into its own environment.
    Which sources count, in which order, against the real process environment, and which memory
    switches are read from it. CLAUDE_COWORK_MEMORY_PATH_OVERRIDE points each source at its own
    memory folder, so the MEMORY.md that gets loaded names the source that won."""
    fx = os.path.join(root, "settings_env")
    h = home(fx)
    w(f"{h}/.claude/CLAUDE.md", "USER-CLAUDE-MD\n")
    # one memory folder per source; each MEMORY.md says which one it is
    ov = {}
    for src in ["user", "project", "local", "flag", "managed", "process", "claudejson"]:
        ov[src] = f"{fx}/override-{src}"
        w(f"{ov[src]}/MEMORY.md", f"- OVERRIDE-{src.upper()} memory index\n")
    dis = {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}
    cow = lambda s: {"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": ov[s]}

    def cfg(name, env=None, claude_json=None, **extra):
        c = f"{fx}/cfg-{name}"
        w(f"{c}/CLAUDE.md", f"USER-CLAUDE-MD cfg-{name}\n")
        if env is not None or extra:
            settings(f"{c}/settings.json", env, **extra)
        if claude_json is not None:
            w(f"{c}/.claude.json", json.dumps(claude_json) + "\n")
        return c

    def repo(name, project=None, local=None):
        r = f"{fx}/{name}"
        w(f"{r}/CLAUDE.md", f"PROJECT-CLAUDE-MD {name}\n")
        if project is not None:
            settings(f"{r}/.claude/settings.json", project)
        if local is not None:
            settings(f"{r}/.claude/settings.local.json", local)
        git_repo(r)
        w(f"{memdir(fx, r)}/MEMORY.md", f"- DEFAULT-MEMORY of {name}\n")
        return r

    def add(name, cwd, cfgdir=None, env="", args="", managed=None):
        e = (f"CLAUDE_CONFIG_DIR={cfgdir} " if cfgdir else "") + env
        if cfgdir:
            # the default memory folder lives under the config folder
            md = os.path.join(cfgdir, "projects", sanitize16(os.path.join(fx, cwd)), "memory")
            w(f"{md}/MEMORY.md", f"- CFG-MEMORY {os.path.basename(cfgdir)}\n")
        kv = {"CWD": cwd}
        if e.strip():
            kv["EXTRA_ENV"] = e.strip()
        if args:
            kv["EXTRA_ARGS"] = args
        if managed:
            kv["MANAGED"] = managed
        case(fx, name, **kv)

    def flagfile(name, env):
        p = f"{fx}/flag-{name}.json"
        settings(p, env)
        return p

    def managed(name, env):
        settings(f"{fx}/managed-{name}/managed-settings.json", env)
        return f"managed-{name}"

    repo("plain")
    # each source alone turns auto memory off
    add("baseline", "plain")
    add("user_disable_automem", "plain", cfg("u-dis", dis))
    repo("p-dis", project=dis)
    add("project_disable_automem", "p-dis")
    repo("l-dis", local=dis)
    add("local_disable_automem", "l-dis")
    add("flag_disable_automem", "plain", args=f"--settings {flagfile('dis', dis)}")
    add("managed_disable_automem", "plain", managed=managed("dis", dis))
    add("claudejson_disable_automem", "plain", cfg("cj-dis", claude_json={"env": dis}))
    add("user_disable_claude_mds", "plain", cfg("u-dmd", {"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1"}))
    repo("p-dmd", project={"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1"})
    add("project_disable_claude_mds", "p-dmd")
    add("user_simple", "plain", cfg("u-simple", {"CLAUDE_CODE_SIMPLE": "1"}))
    add("user_cowork", "plain", cfg("u-cow", cow("user")))
    add("user_remote_memory_dir", "plain",
        cfg("u-remote", {"CLAUDE_CODE_REMOTE": "1", "CLAUDE_CODE_REMOTE_MEMORY_DIR": f"{fx}/remote-base"}))
    add("user_remote_only", "plain", cfg("u-remote-only", {"CLAUDE_CODE_REMOTE": "1"}))
    w(f"{fx}/added/CLAUDE.md", "ADDED-DIR-CLAUDE-MD\n")
    add("user_additional_dirs", "plain", cfg("u-add", {"CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD": "1"}),
        args=f"--add-dir {fx}/added")
    add("additional_dirs_no_env", "plain", args=f"--add-dir {fx}/added")
    other = cfg("other")
    add("user_config_dir", "plain", cfg("u-cfgdir", {"CLAUDE_CONFIG_DIR": other}))
    # automemory setting vs env
    add("user_automem_false_env_0", "plain",
        cfg("u-am0", {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "0"}, autoMemoryEnabled=False))
    # the process environment against settings env
    add("process_1_user_0", "plain", cfg("u-zero", {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "0"}),
        env="CLAUDE_CODE_DISABLE_AUTO_MEMORY=1")
    add("process_0_user_1", "plain", cfg("u-dis"), env="CLAUDE_CODE_DISABLE_AUTO_MEMORY=0")
    add("process_cowork_user_cowork", "plain", cfg("u-cow"),
        env=f"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE={ov['process']}")
    # precedence between sources: every pair of neighbours, each naming its own memory folder
    repo("p-cow", project=cow("project"))
    repo("pl-cow", project=cow("project"), local=cow("local"))
    repo("l-cow", local=cow("local"))
    add("user_vs_project", "p-cow", cfg("u-cow"))
    add("project_vs_local", "pl-cow")
    add("user_vs_local", "l-cow", cfg("u-cow"))
    add("local_vs_flag", "pl-cow", args=f"--settings {flagfile('cow', cow('flag'))}")
    add("flag_vs_managed", "plain", args=f"--settings {flagfile('cow', cow('flag'))}",
        managed=managed("cow", cow("managed")))
    add("local_vs_managed", "pl-cow", managed=managed("cow", cow("managed")))
    add("claudejson_vs_user", "plain", cfg("cj-cow", cow("user"), claude_json={"env": cow("claudejson")}))
    add("claudejson_only", "plain", cfg("cj-only", claude_json={"env": cow("claudejson")}))
    # which variables project and local settings may set
    repo("p-cow1", project=cow("project"))
    add("project_cowork", "p-cow1")
    repo("l-cow1", local=cow("local"))
    add("local_cowork", "l-cow1")
    repo("p-remote", project={"CLAUDE_CODE_REMOTE": "1", "CLAUDE_CODE_REMOTE_MEMORY_DIR": f"{fx}/remote-base"})
    add("project_remote_memory_dir", "p-remote")
    repo("p-cfgdir", project={"CLAUDE_CONFIG_DIR": other})
    add("project_config_dir", "p-cfgdir")
    repo("p-add", project={"CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD": "1"})
    add("project_additional_dirs", "p-add", args=f"--add-dir {fx}/added")
    repo("p-simple", project={"CLAUDE_CODE_SIMPLE": "1"})
    add("project_simple", "p-simple")
    add("flag_cowork", "plain", args=f"--settings {flagfile('cow', cow('flag'))}")
    add("managed_cowork", "plain", managed=managed("cow", cow("managed")))
    add("process_remote_only", "plain", env="CLAUDE_CODE_REMOTE=1")
    add("user_automem_false", "plain", cfg("u-amf", autoMemoryEnabled=False))
    add("process_1_user_empty", "plain", cfg("u-empty", {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": ""}),
        env="CLAUDE_CODE_DISABLE_AUTO_MEMORY=1")
    # --setting-sources limits which files are read; does it limit their env too?
    add("sources_user_project_env", "p-dis", args="--setting-sources user")
    add("sources_project_user_env", "plain", cfg("u-dis"), args="--setting-sources project")
    add("sources_user_local_env", "l-dis", args="--setting-sources user")
    add("sources_user_flag_env", "plain", args=f"--setting-sources user --settings {flagfile('dis', dis)}")


def fx_foreign(root):
    """Files from other systems: lone CR (classic Mac) and mixed line ends around comments and
    includes, Windows-1252 bytes in CLAUDE.md, frontmatter and MEMORY.md, a rule whose file name
    is not UTF-8 at all, one named in Latin-1 and one in NFD, and an include spelled with a
    byte that is not UTF-8."""
    fx = os.path.join(root, "foreign")
    home(fx)
    r = f"{fx}/repo"
    wb(f"{r}/CLAUDE.md", b"LONE-CR line 1\rline 2\r<!-- c -->\r@inc-cr.md\rafter\r\r@inc-cr2.md\n"
                         b"bad include @bad\xff.md end\n")
    wb(f"{r}/inc-cr.md", b"INC-CR a\rb\r")
    wb(f"{r}/inc-cr2.md", b"INC-CR2\n")
    wb(f"{r}/" + os.fsdecode(b"bad\xff.md"), b"BAD-BYTE-NAMED-INCLUDE\n")
    wb(f"{r}/CLAUDE.local.md", b"MIXED a\r\nb\nc\rd\r\n<!-- c -->\r\n@inc-mixed.md\n\r\nend\r")
    wb(f"{r}/inc-mixed.md", b"INC-MIXED\r\n")
    wb(f"{r}/.claude/CLAUDE.md", b"---\ndescription: caf\xe9\n---\nCP1252-DOT-CLAUDE caf\xe9 \x93quoted\x94\n"
                                 b"<!-- caf\xe9 -->\n@inc-cp1252.md\n")
    wb(f"{r}/.claude/inc-cp1252.md", b"INC-CP1252 \xe0 la\n")
    rules = f"{r}/.claude/rules"
    wb(f"{rules}/cp1252-cond.md", b"---\npaths: \"src/**\"\ndescription: caf\xe9\n---\nCP1252-COND-RULE caf\xe9\n")
    wb(f"{rules}/cp1252-paths.md", b"---\npaths: \"caf\xe9/**\"\n---\nCP1252-PATHS-RULE\n")
    wb(f"{rules}/" + os.fsdecode(b"bad\xffname.md"), b"BAD-NAME-RULE\n")
    wb(f"{rules}/" + os.fsdecode(b"caf\xe9-latin1name.md"), b"LATIN1-NAME-RULE\n")
    w(f"{rules}/" + unicodedata.normalize("NFD", "caf\u00e9-nfd.md"), "NFD-NAME-RULE\n")
    wb(f"{rules}/cr-comment.md", b"CR-COMMENT a\r<!-- c -->\rb\r")
    wb(f"{rules}/cr-cond.md", b"---\r\npaths: \"src/**\"\r---\nCR-MIXED-FM-RULE\n")
    wb(f"{rules}/" + os.fsdecode(b"sub\xfe/inner.md"), b"BAD-NAMED-FOLDER-RULE\n")
    w(f"{r}/src/a.ts", "a\n")
    git_repo(r)
    wb(f"{memdir(fx, r)}/MEMORY.md", b"- [Caf\xe9](cafe.md) \x96 cp1252 index\r- CR-LINE 2\r- line 3\n")
    case(fx, "start", CWD="repo")
    case(fx, "read_src", CWD="repo", STUB_ARGS=f"--tool-read {r}/src/a.ts")
    repo_with_memory(fx, "cr_lines", "".join(f"- entry {i}\r" for i in range(1, 251)).encode())
    case(fx, "cr_lines", CWD="cr_lines")
    repo_with_memory(fx, "mixed_lines", "".join(f"- entry {i}" + ("\r\n", "\n", "\r")[i % 3] for i in range(1, 251)).encode())
    case(fx, "mixed_lines", CWD="mixed_lines")


def fx_foreign_index(root):
    """The memory index given as text (CLAUDE_COWORK_MEMORY_INDEX_CONTENT in the user's settings)
    with a lone CR and CRLF, over 200 lines: where the cut falls and what the CR becomes."""
    fx = os.path.join(root, "foreign_index")
    h = home(fx)
    r = f"{fx}/repo"
    w(f"{r}/CLAUDE.md", "FOREIGN-INDEX-REPO\n")
    git_repo(r)
    w(f"{memdir(fx, r)}/MEMORY.md", "- FILE-INDEX not used\n")
    index = "- a\r- b\r\n- c\n" + "".join(f"- l{i}\n" for i in range(205))
    w(f"{h}/.claude/settings.json", json.dumps({"env": {"CLAUDE_COWORK_MEMORY_INDEX_CONTENT": index}}))
    case(fx, "start", CWD="repo")


def main():
    root = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    if not root:
        print(__doc__)
        sys.exit(2)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    for fx in FAMILIES:
        fx(root)
    for d in sorted(os.listdir(root)):
        print(os.path.join(root, d))



def fx_quoting(root):
    """MEMORY.md's text as 2.1.337 quotes it: a preamble, every line behind one "> " (leading "> "s
    folded), invisible and control characters dropped, request-like tags neutralized, look-alike
    spellings of them too."""
    fx = os.path.join(root, "quoting")
    home(fx)
    cases = {
        "nested": "> > already quoted\n>no space after\n > space first\n\n\nafter blank lines\n>> two\n",
        "tags": "- see <system-reminder> here\n- close </system-reminder>\n- spaced < / System_Reminder >\n"
                "- escaped <\\system-reminder>\n- longer <system-reminders>\n- <tick> and <ticket> and <TICK/>\n"
                "- <invoke> and <channel source=\"x\"> and <channel>\n- <b>bold</b> <function_results>\n"
                "- <<system-reminder> and <-system-reminder> and <1tick>\n- <channel\n  source = \"y\">\n"
                "- <user-prompt-submit_hook> <bash-stdout> <untrusted-widget-state>\n"
                "- <" + "antml:thing> and <" + "antml thing> and <x:system-reminder>\n",
        "invisible": "a\u200bb\u00adc\ufeffd\u200de\u2028f\u2029g\x0bh\x0ci\x7fj\x85k\ue000l\U000E0041m\ufe0fn\ufe01o\u061cp\tq\n",
        "emoji": "- \U0001F469\u200d\U0001F4BB works \u2764\ufe0f\n- \u0301accent first\n",
        "only_invisible": "\u200b\n",
        "only_blank": "   \n\n \t \n",
        "blank_and_invisible": "\u00ad \u2028\ufeff\n\x0b\n",
        "channel_far": "- <channel " + "a" * 130 + " source=\"z\">\n- <channel " + "b" * 100 + " source=\"z\">\n",
        "lone_cr": b"one\rtwo\r\nthree\n> > four\r".decode(),
        # Look-alike brackets and letters, joiners and combining marks between letters, and near
        # misses (row 85).
        "lookalikes": "- brackets \uff1csystem-reminder> \ufe64tick> \u2329tick\u232a \u27e8channel source=\"x\"> \u2039tick\u203a\n"
                      "- letters <\uff53\uff59stem-reminder> <\U0001d42dick> <ti\u0441k> <artifact-\ufb01le-content> <\u24e3ick>\n"
                      "- between <ti\u200dc\u0301k> <sy\u200cstem-reminder> <system\u2010reminder> <tool\uff3fuse_error>\n"
                      "- near <tickets> <\\\uff54ick> <tack> <\uff58tick> <tick\uff58> <tick\u00e9s> <arti\ufb01le-content>\n"
                      "- tails <channel source\uff1d\"x\"> <channel source\u2e40\"x\"> <antml\uff1ainvoke> <antml\u02d0x> <channel \u33b3ource=\"x\">\n"
                      "- either <cha\u03bdnel source=1> <\u03c5ser-prompt-submit-hook> <\u03bdick>\n",
        # The table's two steps: more brackets (two outside the BMP) from 2.1.314, subscript w, y
        # and z from 2.1.315.
        "lookalikes_steps": "- \U0001d236tick> \u226atick> \u16b2tick> \ufe3dsystem-reminder>\n"
                            "- <fetched-\u209deb-content> <s\u209estem-reminder> \uff1c\U0001d237 <tick\U0001d237\n",
    }
    for name, text in cases.items():
        repo_with_memory(fx, name, text)
        case(fx, name, CWD=name)


def fx_server_flags(root):
    """The cached server flag that rewords MEMORY.md's label from 2.1.337 (tengu_woolly_harp), used
    only where the session reads cached flags: the capture turns telemetry off, which keeps them
    out unless CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF is set in the shell."""
    fx = os.path.join(root, "server_flags")
    h = home(fx)
    w(f"{h}/.claude/.claude.json", json.dumps({"cachedGrowthBookFeatures": {"tengu_woolly_harp": True}, "hasCompletedOnboarding": True}) + "\n")
    repo_with_memory(fx, "repo", "- [A](a.md) \u2014 a note\n")
    off = "DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"
    case(fx, "disk_cache", CWD="repo", EXTRA_ENV=f"{off} CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1")
    case(fx, "telemetry_off", CWD="repo", EXTRA_ENV=off)
    case(fx, "growthbook_off", CWD="repo", EXTRA_ENV=f"{off} CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1 DISABLE_GROWTHBOOK=1")
    case(fx, "disk_cache_0", CWD="repo", EXTRA_ENV=f"{off} CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=0")


FAMILIES = [fx_layers, fx_truncation, fx_settings_env, fx_agents, fx_symlinks, fx_encoding,
            fx_yaml_paths, fx_size, fx_memory_env, fx_unicode, fx_markdown, fx_settings_invalid,
            fx_reads_again, fx_foreign, fx_foreign_index, fx_quoting, fx_server_flags]

if __name__ == "__main__":
    main()
