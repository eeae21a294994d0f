#!/usr/bin/env python3
"""Run mneme over differential fixtures and compare with what Claude Code sent.
Usage: compare.py MNEME_BIN FIXTURES_ROOT EXPECTED_DIR"""
import os, shlex, subprocess, sys

mneme, root, expected = sys.argv[1:4]
fails = 0
for fx in sorted(os.listdir(root)):
    d = os.path.join(root, fx)
    case = {}
    for line in open(os.path.join(d, "cases", "default.env")):
        k, v = line.rstrip("\n").split("=", 1)
        case[k] = shlex.split(v)[0] if v else ""
    env = {"PATH": "/usr/bin:/bin", "HOME": f"{d}/home", "CLAUDE_CONFIG_DIR": f"{d}/home/.claude",
           "MNEME_DATA_DIR": "/tmp/mneme-diff-data"}
    for kv in case.get("EXTRA_ENV", "").split():
        k, v = kv.split("=", 1)
        env[k] = v
    base = [mneme, "--managed-dir", "/nonexistent-managed"]
    tail = ["--cwd", os.path.join(d, case["CWD"])] + case.get("EXTRA_ARGS", "").split()
    gold = os.path.join(expected, f"{fx}__default")
    runs = [(["context", "--date", "<DATE>"], "user_context.txt")]
    reads = [a for a in case.get("STUB_ARGS", "").split() if a != "--tool-read"]
    if reads:
        runs.append((["touched", *reads], "lazy_context.txt"))
    for args, golden in runs:
        out = subprocess.run(base + args + tail, env=env, capture_output=True, text=True)
        want = open(os.path.join(gold, golden), encoding="utf-8").read()
        if out.stdout != want:
            fails += 1
            print(f"DIFF {fx} {golden} {case}\n{out.stderr}")
            import difflib
            for l in list(difflib.unified_diff(want.splitlines(), out.stdout.splitlines(), "claude", "mneme", lineterm=""))[:14]:
                print("   ", l)
print("failures:", fails)
sys.exit(1 if fails else 0)
