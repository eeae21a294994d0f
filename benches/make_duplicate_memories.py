#!/usr/bin/env python3
"""A project whose memory folder holds N copies of one memory, for timing the offline dream
(docs/benchmarks.md, "A dream over thousands of copies").

    python3 benches/make_duplicate_memories.py ROOT N [--own-line]
    HOME=ROOT/home CLAUDE_CONFIG_DIR=ROOT/home/.claude MNEME_DATA_DIR=ROOT/data \\
        mneme dream run --cwd ROOT/proj --offline --yes

Each copy has its own name and an index line in MEMORY.md; with --own-line each also ends
with a line no other copy has. ROOT is emptied first.
"""
import os
import shutil
import sys


def main():
    args = [a for a in sys.argv[1:] if a != "--own-line"]
    if len(args) != 2:
        sys.exit(__doc__)
    root, n = os.path.abspath(args[0]), int(args[1])
    own = "--own-line" in sys.argv
    shutil.rmtree(root, ignore_errors=True)
    proj = os.path.join(root, "proj")
    os.makedirs(proj)
    # Claude Code's folder name for a project: every character that is not a letter or digit
    # becomes '-'.
    key = "".join(c if c.isalnum() else "-" for c in proj)
    mem = os.path.join(root, "home", ".claude", "projects", key, "memory")
    os.makedirs(mem)
    body = ("Always run the full test suite before pushing to main, because the staging deploy "
            "picks up whatever lands there within minutes and nobody watches it.")
    lines = []
    for i in range(n):
        extra = f"\nNote {i}: seen on run {i * 7}." if own else ""
        with open(os.path.join(mem, f"dup_{i}.md"), "w") as f:
            f.write(f"---\nname: Test before push {i}\ndescription: Run the tests before pushing to main\n"
                    f"type: feedback\n---\n\n{body}{extra}\n")
        lines.append(f"- [Test before push {i}](dup_{i}.md) — run tests first")
    with open(os.path.join(mem, "MEMORY.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(mem)


if __name__ == "__main__":
    main()
