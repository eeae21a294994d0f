#!/usr/bin/env python3
"""Writes the licence notices of every third-party work a shipped binary contains, for the
packages `npm run dist` builds (/usr/share/doc/<package>/DEPENDENCY_NOTICES.md).

    scripts/dependency-notices.py OUT.md PACKAGE... [--ui]

PACKAGE names workspace crates (mneme-app, mneme, mneme-server's crate mneme-team-server). The
Rust side is the normal (linked) dependency closure of those crates for the build's target, from
`cargo metadata`: build scripts, proc macros' own code and dev-dependencies do not end up in the
binary, but proc macros and build dependencies are listed too, because their licences still
apply to generated code in some cases and listing them costs nothing. Each crate's licence
expression comes from its manifest and its licence texts from the LICENSE/COPYING/NOTICE files
it ships. `--ui` adds the npm packages bundled into ui/dist (the UI's `dependencies`, not its
build tools), read from ui/package-lock.json and ui/node_modules.

`cargo deny check licenses` (npm test) is what checks that each licence allows distribution;
this only collects the texts the licences ask a binary distribution to carry.
"""

import json
import os
import re
import subprocess
import sys

LICENCE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|COPYRIGHT|UNLICENSE)([-._].*)?$", re.I)


def licence_files(folder):
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for n in names:
        p = os.path.join(folder, n)
        if LICENCE_FILE.match(n) and os.path.isfile(p):
            with open(p, encoding="utf-8", errors="replace") as f:
                out.append((n, f.read().strip()))
    return out


def rust(roots):
    target = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    host = re.search(r"^host: (.+)$", target, re.M).group(1)
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", host],
        capture_output=True, text=True, check=True).stdout)
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    workspace = set(meta["workspace_members"])
    by_name = {packages[i]["name"]: i for i in workspace}
    missing = [r for r in roots if r not in by_name]
    if missing:
        sys.exit(f"dependency-notices: no workspace crate named {', '.join(missing)}")
    seen, stack = set(), [by_name[r] for r in roots]
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            # Normal and build dependencies; dev-dependencies only build tests.
            if any(k["kind"] in (None, "build") for k in dep["dep_kinds"]):
                stack.append(dep["pkg"])
    crates = sorted((packages[i] for i in seen - workspace), key=lambda p: (p["name"], p["version"]))
    return crates


def npm_ui():
    lock = json.load(open("ui/package-lock.json"))
    out = []
    for path, entry in sorted(lock["packages"].items()):
        # The bundle holds only runtime dependencies; `dev` marks build tools (vite, svelte-check…).
        if not path or entry.get("dev") or entry.get("optional") and not os.path.isdir(os.path.join("ui", path)):
            continue
        name = path.split("node_modules/")[-1]
        out.append((name, entry.get("version", "?"), entry.get("license", "see below"), os.path.join("ui", path)))
    return out


def main():
    args = sys.argv[1:]
    ui = "--ui" in args
    args = [a for a in args if a != "--ui"]
    if len(args) < 2:
        sys.exit(__doc__)
    out_path, roots = args[0], args[1:]
    crates = rust(roots)
    # Most crates ship one of a few identical texts (Apache-2.0 above all); each is printed once.
    printed = {}

    def texts(label, folder):
        found = licence_files(folder)
        if not found:
            return ["(It ships no licence file; the standard text of the licence named applies.)", ""]
        out = []
        for fname, text in found:
            if text in printed:
                out += [f"{fname}: the same text as {printed[text]}.", ""]
            else:
                printed[text] = f"{label}'s {fname}"
                out += [f"{fname}:", "", "```", text, "```", ""]
        return out

    lines = [
        "# Dependency notices",
        "",
        f"The third-party works built into {', '.join(roots)}, with the licence each is used under",
        "and the licence and notice files it ships. Mneme itself is MIT-licensed (LICENSE); works",
        "copied into Mneme's own source are in THIRD_PARTY_NOTICES.md.",
        "",
        f"## Rust crates ({len(crates)})",
        "",
    ]
    for p in crates:
        folder = os.path.dirname(p["manifest_path"])
        lines.append(f"### {p['name']} {p['version']}")
        lines.append("")
        lines.append(f"Licence: {p.get('license') or 'see the file below'}")
        if p.get("repository"):
            lines.append(f"Source: {p['repository']}")
        lines.append("")
        lines += texts(f"{p['name']} {p['version']}", folder)
        # A -sys crate that builds a C library from its own copy (libdbus-sys's `vendored`)
        # puts that library in the binary too, under the library's licence.
        vendor = os.path.join(folder, "vendor")
        for sub in sorted(os.listdir(vendor)) if os.path.isdir(vendor) else []:
            if licence_files(os.path.join(vendor, sub)):
                lines += [f"The copy of {sub} in vendor/{sub}, built into the binary:", ""]
                lines += texts(f"{p['name']}'s vendor/{sub}", os.path.join(vendor, sub))
    if ui:
        pkgs = npm_ui()
        lines += [f"## npm packages in the user interface ({len(pkgs)})", ""]
        for name, version, lic, folder in pkgs:
            lines += [f"### {name} {version}", "", f"Licence: {lic}", ""]
            lines += texts(f"{name} {version}", folder)
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    print(f"dependency-notices: {out_path}: {len(crates)} crates" + (f", {len(pkgs)} npm packages" if ui else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
