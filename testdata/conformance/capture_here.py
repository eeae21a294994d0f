#!/usr/bin/env python3
"""What the real Claude Code sends for one case on this machine, as JSON on stdout.

Usage: capture_here.py CLAUDE_BIN FIXTURE_DIR CASE

Runs ./capture.sh for the case into a temporary folder (the stub API on 127.0.0.1) and prints
{"instructions": ..., "lazy": ..., "reads": [...]} as the version matrix reads a capture
(../matrix/capture_matrix.py). crates/cli/tests/conformance.rs uses it where this machine lists
a rules folder in another order than the machine the goldens were captured on: Mneme must then
follow the order Claude Code follows here.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "matrix"))
from capture_matrix import expected_from  # noqa: E402

binary, fixture, case = sys.argv[1:4]
with tempfile.TemporaryDirectory(prefix="mneme-capture-") as tmp:
    r = subprocess.run(["bash", os.path.join(HERE, "capture.sh"), fixture, case],
                       env=dict(os.environ, CLAUDE_BIN=binary, OUT_ROOT=tmp), capture_output=True, text=True)
    got = expected_from(os.path.join(tmp, f"{os.path.basename(fixture)}__{case}")) if r.returncode == 0 else None
    if got is None:
        sys.exit(f"no request captured for {fixture} {case} (capture.sh exit {r.returncode}): {r.stderr[-2000:]}")
    json.dump(got, sys.stdout)
