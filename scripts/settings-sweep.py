#!/usr/bin/env python3
"""Checks Mneme's settings rules against real Claude Code releases, one file per rule.

    scripts/settings-sweep.py [--mneme BIN] [--only KEY,...] [--scalars] [VERSION ...]   default: the matrix

For each release, reads its settings schema with crates/store/data/extract-settings-schema.mjs
and makes, for every object setting with fields (sandbox, voice, spinnerVerbs, sshConfigs' items,
records such as skillOverrides), small user settings files holding `"autoMemoryEnabled": false`:
one that is valid (only the required fields), and one per way to break it — a field of the wrong
type, a field set to null, a required field left out, a record value or an array item of the wrong
kind. With --scalars, every other key too: a value it accepts and one of the wrong type. Each file
is run through `mneme verify` against that release (offline, on a stub API):
Claude Code either ignores the file (auto memory stays on) or uses it, and verify says whether
Mneme predicted the same. Prints every file where they differ (and where the release departs
from its schema with Mneme's agreement), and how many were checked; exits 1 when any differ.

Run it after scripts/settings-schema.sh reads new releases: the rules are the releases' own, but
a release may mend a value before its check (it turns `env` values into strings; it drops
managed-only keys), which only running it shows. About 3 s a file; the matrix is about 900 files.
Needs Node, the releases (scripts/claude-code.sh installs them) and a built `mneme`.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTRACTOR = os.path.join(ROOT, "crates/store/data/extract-settings-schema.mjs")


def valid(rule):
    """A value the rule accepts, or None when this script cannot be sure of one."""
    kind = rule["type"]
    if rule.get("more") and kind != "object":
        return None
    if kind == "boolean":
        return True
    if kind == "string":
        n = max(rule.get("minLength", 1), 1)
        return "a" * min(n, rule.get("maxLength", n))
    if kind == "number":
        for x in [1, 2, 10, 100, 1000, 0, 0.5, -1]:
            if rule.get("int") and x != int(x):
                continue
            if ("gt" in rule and not x > rule["gt"]) or ("gte" in rule and not x >= rule["gte"]):
                continue
            if ("lt" in rule and not x < rule["lt"]) or ("lte" in rule and not x <= rule["lte"]):
                continue
            return x
        return None
    if kind == "enum":
        return rule["values"][0]
    if kind == "array":
        n = rule.get("minLength", 0)
        item = valid(rule["items"]) if n and "items" in rule else None
        return [] if n == 0 else (None if item is None else [item] * n)
    if kind == "object":
        out = {}
        for name in rule.get("required", []):
            value = valid(rule["fields"][name])
            if value is None:
                return None
            out[name] = value
        return out
    return None


WRONG = {"boolean": "x", "string": 5, "number": "x", "enum": "not-a-choice", "array": "x", "object": 5}


def scalar_cases(rule, key):
    """(name, value, Claude Code should ignore the file) for a top-level key whose rule is not an
    object: a value it accepts, one of the wrong type, and for an array one wrong item."""
    base = valid(rule)
    if base is None or rule["type"] == "object":
        return []
    out = [(f"{key} (valid)", base, False), (f"{key} = {json.dumps(WRONG[rule['type']])}", WRONG[rule["type"]], True)]
    items = rule.get("items")
    if rule["type"] == "array" and items and items["type"] != "object" and rule.get("maxLength", 1) >= 1:
        out.append((f"{key} = [{json.dumps(WRONG[items['type']])}]", [WRONG[items["type"]]], True))
    return out


def cases(rule, path):
    """(name, value, Claude Code should ignore the file) for the object rule at `path`."""
    out = []
    if rule["type"] == "array" and rule.get("items", {}).get("type") == "object":
        return [(name, [value], ignored) for name, value, ignored in cases(rule["items"], path + "[0]")]
    if rule["type"] != "object" or not ("fields" in rule or "each" in rule):
        return out
    base = valid(rule)
    if base is None:
        return out
    out.append((path + " (valid)", base, False))
    for name, field in rule.get("fields", {}).items():
        def with_(value, name=name):
            return {**base, name: value}
        out.append((f"{path}.{name} = {json.dumps(WRONG[field['type']])}", with_(WRONG[field["type"]]), True))
        if not field.get("nullable"):
            out.append((f"{path}.{name} = null", with_(None), True))
        items = field.get("items")
        if field["type"] == "array" and items and items["type"] != "object":
            out.append((f"{path}.{name} = [{json.dumps(WRONG[items['type']])}]", with_([WRONG[items["type"]]]), True))
        for sub_name, sub_value, ignored in cases(field, f"{path}.{name}"):
            if ignored:
                out.append((sub_name, with_(sub_value), True))
    for name in rule.get("required", []):
        out.append((f"{path}.{name} left out", {k: v for k, v in base.items() if k != name}, True))
    if "each" in rule:
        out.append((f"{path}.someName = {json.dumps(WRONG[rule['each']['type']])}", {**base, "someName": WRONG[rule["each"]["type"]]}, True))
    return out


def verify(mneme, binary, settings):
    """Runs `mneme verify` with `settings` as the user settings file: (Claude Code ignored the
    file, Mneme agreed, the memory's text differed), or a string saying why the run told nothing.
    Whether Mneme agreed is whether it loaded the marker line as the release did: a release
    that words the loaded memory in a way Mneme does not follow yet (2.1.337 quotes MEMORY.md
    under a preamble of its own) makes verify differ on every file, which says nothing about
    the settings."""
    with tempfile.TemporaryDirectory(prefix="mneme-sweep-") as tmp:
        home, config, project = (os.path.join(tmp, d) for d in ("home", "config", "project"))
        for d in (home, config, project):
            os.makedirs(d)
        with open(os.path.join(config, "settings.json"), "w") as f:
            json.dump(settings, f)
        subprocess.run(["git", "init", "-q", project], check=True)
        memory = os.path.join(config, "projects", re.sub(r"[^A-Za-z0-9]", "-", project), "memory")
        os.makedirs(memory)
        with open(os.path.join(memory, "MEMORY.md"), "w") as f:
            f.write("- [Probe](probe.md) - the sweep's marker line\n")
        env = {**os.environ, "HOME": home, "CLAUDE_CONFIG_DIR": config}
        try:
            run = subprocess.run([mneme, "verify", "--cwd", project, "--claude-bin", binary, "--timeout", "60", "--json"],
                                 env=env, capture_output=True, text=True, timeout=180)
        except subprocess.TimeoutExpired:
            return "mneme verify did not finish in 3 minutes"
        try:
            report = json.loads(run.stdout)
        except json.JSONDecodeError:
            return f"mneme verify printed no report (exit {run.returncode}): {run.stderr.strip()[:300]}"
        if report.get("status") not in ("match", "differ"):
            return f"the check could not run ({report.get('status')}): {str(report.get('summary') or '')[:300]}"
        if report.get("status") == "match":
            # Identical blocks; verify leaves them out when there is nothing to show.
            loaded = "the sweep's marker line" in (report.get("claudeBlock") or report.get("mnemeBlock") or "")
            return loaded, True, False
        loaded = "the sweep's marker line" in (report.get("claudeBlock") or "")
        return loaded, loaded == ("the sweep's marker line" in (report.get("mnemeBlock") or "")), True


def output(command):
    """The standard output of a helper command, or the whole run stopped with what it said."""
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {run.returncode}): {run.stderr.strip()[:500]}")
    return run.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*")
    parser.add_argument("--mneme", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "debug", "mneme"))
    parser.add_argument("--only", help="only these top-level keys (comma-separated)")
    parser.add_argument("--scalars", action="store_true",
                        help="also top-level keys that are not objects: a value each accepts and one of the wrong type "
                             "(about 2 files a key; use with --only, all keys take hours)")
    args = parser.parse_args()
    if not os.access(args.mneme, os.X_OK):
        raise SystemExit(f"no mneme at {args.mneme}: build it (cargo build -p mneme) or pass --mneme")
    script = os.path.join(ROOT, "scripts/claude-code.sh")
    if args.versions:
        bins = {v: output([script, v]).strip().splitlines()[-1] for v in args.versions}
    else:
        bins = dict(pair.split("=", 1) for pair in output([script, "--matrix"]).strip().split(",") if "=" in pair)
        if not bins:
            raise SystemExit("scripts/claude-code.sh --matrix named no release")
    checked, differ, inconclusive, worded = 0, [], 0, 0
    for version, binary in bins.items():
        read = json.loads(output(["node", EXTRACTOR, binary]))
        for key, rule in read["keys"].items():
            if args.only and key not in args.only.split(","):
                continue
            for name, value, should_ignore in cases(rule, key) + (scalar_cases(rule, key) if args.scalars else []):
                result = verify(args.mneme, binary, {"autoMemoryEnabled": False, key: value})
                if isinstance(result, str):
                    inconclusive += 1
                    print(f"{version}  {name}: nothing learnt, {result}", flush=True)
                    continue
                ignored, agreed, text_differs = result
                checked += 1
                worded += agreed and text_differs
                if name.endswith("(valid)") and ignored:
                    # The release ignores even the file that keeps every rule read (a field the
                    # extractor cannot read is required): breaking the others tells nothing.
                    print(f"{version}  {key}: Claude Code ignores the valid file too (a rule the schema read does not show); its other files are skipped", flush=True)
                    if not agreed:
                        differ.append(f"{version}  {name}: Claude Code ignores the file and Mneme says otherwise")
                    break
                if not agreed:
                    differ.append(f"{version}  {name}: Claude Code {'ignores' if ignored else 'uses'} the file and Mneme says otherwise")
                    print(differ[-1], flush=True)
                elif ignored != should_ignore:
                    # Agreed, through a rule the release's schema does not show (a mend, or a
                    # check written by hand such as shapes.rs's): worth knowing, not a failure.
                    print(f"{version}  {name}: Claude Code {'ignores' if ignored else 'uses'} the file, unlike its schema; Mneme agrees", flush=True)
    print(f"{checked} files checked on {len(bins)} releases; Mneme disagreed with the release on {len(differ)}"
          + (f"; {inconclusive} runs told nothing" if inconclusive else "")
          + (f"; on {worded} both loaded the same but verify found the text of what was loaded differs (not a settings matter: run mneme verify on one)" if worded else ""))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
