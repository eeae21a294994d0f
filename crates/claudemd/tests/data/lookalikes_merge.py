#!/usr/bin/env python3
"""Merges the neutralizer oracle's `reading` outputs of several releases into ../../data/lookalikes.txt.

    python3 lookalikes_merge.py OLDEST.txt [LATER.txt ...] > ../../data/lookalikes.txt

Each input is `bun neutralizer_oracle.mjs CLAUDE reading` of one release, oldest first. A bracket
or a reading that a later release added carries that release; one a later release dropped or
changed stops the merge (the format has no way to say so yet: extend it then).
"""
import sys

HEADER = """\
# What Claude Code's MEMORY.md tag neutralizer (2.1.284 on) reads as a bracket and as a letter.
# Made by tests/data/lookalikes_merge.py from tests/data/neutralizer_oracle.mjs's `reading` output
# of {releases}: Claude Code's own code run on every code point.
#
# `open RELEASE CODEPOINTS` / `close RELEASE CODEPOINTS`: the characters read as `<` / `>` from
# that release on. Then one line per non-ASCII character not read as itself: its code point, what
# it reads as, and the release it is read so from when that is not 2.1.284. A reading is ASCII
# letters, digits, `-` and `_` (the character stands for them in turn, so `FB01 fi`), `[nv]` or
# `[uy]` (either of two letters), `=` (a sign read as `-`, `_` or `=`) or `~` (a private-use
# character of the matcher's own ranges, read as U+FFFD).
"""


def parse(path):
    version, brackets, reading = None, {}, {}
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("# Claude Code "):
            version = line.split()[-1]
        elif line.startswith(("open ", "close ")):
            kind, *cps = line.split()
            brackets[kind] = cps
        elif line:
            cp, r = line.split(" ")
            reading[cp] = r
    return version, brackets, reading


def main():
    runs = [parse(p) for p in sys.argv[1:]]
    first_version, first_brackets, first_reading = runs[0]
    since = {cp: first_version for cp in first_reading}
    reading = dict(first_reading)
    bracket_lines = {k: [(first_version, list(v))] for k, v in first_brackets.items()}
    for version, brackets, rd in runs[1:]:
        for kind, cps in brackets.items():
            known = [c for _, group in bracket_lines[kind] for c in group]
            gone = [c for c in known if c not in cps]
            if gone:
                sys.exit(f"{version} no longer reads {gone} as {kind}")
            new = [c for c in cps if c not in known]
            if new:
                bracket_lines[kind].append((version, new))
        for cp, r in reading.items():
            if rd.get(cp) != r:
                sys.exit(f"{version} reads U+{cp} as {rd.get(cp)!r}, not {r!r}")
        for cp, r in rd.items():
            if cp not in reading:
                reading[cp], since[cp] = r, version
    out = [HEADER.format(releases=", ".join(v for v, _, _ in runs))]
    for kind in ("open", "close"):
        for version, cps in bracket_lines[kind]:
            out.append(f"{kind} {version} {' '.join(cps)}\n")
    for cp in sorted(reading, key=lambda c: int(c, 16)):
        tail = "" if since[cp] == first_version else f" {since[cp]}"
        out.append(f"{cp} {reading[cp]}{tail}\n")
    sys.stdout.write("".join(out))


main()
