#!/usr/bin/env python3
"""Keeps the shared cargo target dir small: every test run rebuilds the workspace's own crates
under new hashes (a change of features, a fresh clone), and the old artifacts stay behind
until the folder is tens of gigabytes. This removes, under <target>/<profile>/deps, every
artifact of a workspace crate or test binary except the newest one of each name and kind, and
the incremental caches. Third-party crates are left alone (rebuilding them is the slow part).

Usage: prune-target.py TARGET_DIR [LIMIT_GB]   (does nothing while the folder is under LIMIT_GB, 8)
"""
import collections
import fcntl
import glob
import os
import re
import shutil
import subprocess
import sys

target = sys.argv[1]
limit_gb = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def size_gb(path):
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()
    return int(out[0]) / 1e9 if out else 0.0


if not os.path.isdir(target) or size_gb(target) < limit_gb:
    sys.exit(0)

# The workspace's crate names and the names of its test, bench, example and binary targets.
names = {"mneme", "mneme_app", "mneme_server", "bindings"}
for manifest in glob.glob(os.path.join(root, "**", "Cargo.toml"), recursive=True):
    if "node_modules" in manifest:
        continue
    crate = os.path.dirname(manifest)
    m = re.search(r'^name\s*=\s*"([^"]+)"', open(manifest, encoding="utf-8").read(), re.M)
    if m:
        names.add(m.group(1).replace("-", "_"))
    for kind in ("tests", "benches", "examples", "src/bin"):
        for f in glob.glob(os.path.join(crate, kind, "*.rs")):
            names.add(os.path.basename(f)[:-3].replace("-", "_"))

def crate_of(deps, name, hash):
    """The crate folder an artifact was built from, read from cargo's dep-info file: test
    targets share names across crates (`hostile`, `cli`), and keeping only the newest of a
    name deleted other crates' test binaries, which a running `cargo test` then could not
    execute. Newest per crate and name is what can go."""
    try:
        with open(os.path.join(deps, f"{name}-{hash}.d"), encoding="utf-8", errors="replace") as d:
            first = d.readline()
    except OSError:
        return None
    sources = first.split(": ", 1)[1].split() if ": " in first else []
    for src in sources:
        # The folder inside the repository: a clone elsewhere (CI's) builds the same crate.
        m = re.search(r"(?:^|/)(crates/[^/]+|src-tauri)/", src)
        if m:
            return m.group(1)
    return sources[0] if sources else None


freed = 0
for profile in ("debug", "release"):
    deps = os.path.join(target, profile, "deps")
    if not os.path.isdir(deps):
        continue
    # Cargo holds an flock on <profile>/.cargo-lock while it builds; pruning under a build of
    # another test run (two `npm test` runs share this folder) would delete its inputs. Take
    # the same lock, without waiting: a busy profile is left for the next run to prune.
    lock = open(os.path.join(target, profile, ".cargo-lock"), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"prune-target: {profile} is being built by another cargo; not pruned this time")
        lock.close()
        continue
    groups = collections.defaultdict(list)
    for f in os.listdir(deps):
        m = re.match(r"(lib)?(.+?)-([0-9a-f]{16})(\..*)?$", f)
        if m and m.group(2) in names:
            groups[(m.group(1), m.group(2), m.group(4), crate_of(deps, m.group(2), m.group(3)))].append(f)
    mtime = lambda f: os.path.getmtime(os.path.join(deps, f))
    # An artifact whose dep-info file is gone (an older prune took it) belongs to no known
    # crate: it goes when any artifact of its name and kind is newer.
    newest_of_name = collections.defaultdict(float)
    for (lib, name, ext, crate), files in groups.items():
        if crate is not None:
            newest_of_name[(lib, name, ext)] = max(newest_of_name[(lib, name, ext)], max(map(mtime, files)))
    for (lib, name, ext, crate), files in groups.items():
        files.sort(key=mtime)
        stale = files[:-1] if crate is not None else [f for f in files if mtime(f) < newest_of_name[(lib, name, ext)]]
        for f in stale:
            p = os.path.join(deps, f)
            freed += os.path.getsize(p)
            os.remove(p)
    incremental = os.path.join(target, profile, "incremental")
    if os.path.isdir(incremental):
        freed += int(size_gb(incremental) * 1e9)
        shutil.rmtree(incremental, ignore_errors=True)
    lock.close()
print(f"prune-target: freed {freed / 1e9:.1f} GB of old workspace build artifacts in {target}")
