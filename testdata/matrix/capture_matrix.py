#!/usr/bin/env python3
"""The version matrix's expected outputs, generated from the real Claude Code binaries.

Usage: capture_matrix.py --root ROOT --out OUT [--cache DIR] --bin VERSION=PATH [--bin ...]
                         [--random N] [--seed S] [--jobs J] [--only SET,...] [--real-corpus DIR]

Builds every fixture set under ROOT/<version>/ (the shared conformance fixtures, the extra hostile cases,
the real-world corpus, the version-difference families and a seeded random sweep of N trees
from ../differential), runs each case through each binary with ../conformance/capture.sh, and
writes what that release sent:

    OUT/<version>/<set>__<fixture>__<case>/instructions.txt   the instructions block as sent
                                                              (`<DATE>` for the date)
    OUT/<version>/<set>__<fixture>__<case>/lazy.txt           the files attached after the Reads
    OUT/<version>/<set>__<fixture>__<case>/case.json          how to run mneme for the case

Capturing costs seconds per case, so results are cached in DIR by a hash of the release, ROOT,
the case, every file of the fixture outside `.git` and every folder outside it that the case's
environment names; an unchanged case is never run twice.

The cache starts from `captures.tar.xz` next to this script (unless --no-archive): the captures the
real binaries made for the matrix as committed, about 0.4 MB for the 145 MB they unpack to. A
cold machine would otherwise spend half an hour of CI starting Claude Code 3,000 times to learn
what the repository already knows; a case whose fixture changed has a new key and is captured
live. `--save-archive` rewrites the archive from exactly the captures this run used (run it the
way the versions test does: `MNEME_MATRIX_SAVE_ARCHIVE=1 cargo test -p mneme --test versions`).
The expected text is located by what it is, not by release: the first user message's block
that carries the CLAUDE.md preamble (or the older block with `# currentDate`), the
`Contents of` attachments after the tool results, whether a system message or reminder blocks,
and the AGENTS.md plugin's `tool.call hook additional context` message after them.
Nothing here reaches beyond 127.0.0.1: capture.sh points Claude Code at a local stub.
"""
import argparse
import concurrent.futures as cf
import contextlib
import hashlib
import io
import json
import lzma
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
TD = os.path.dirname(HERE)
CAPTURE = os.path.join(TD, "conformance", "capture.sh")
ARCHIVE = os.path.join(HERE, "captures.tar.xz")
CACHE_NAME = re.compile(r"[0-9a-f]{64}\.json")

PREAMBLE = "Codebase and user instructions are shown below."
HOOK = "tool.call hook additional context: "
# How releases before 2.1.160 attach files to a Read's result: after a blank line, a reminder each.
IN_RESULT = "\n\n<system-reminder>\nContents of "
# Bumped when what is taken from a capture with reads changes (v2: the hook's message; v3: the
# attached files' system message as text blocks), so
# those cases are captured again while the others stay cached. (Reading the files appended to a
# Read's result, IN_RESULT, did not bump it: only releases before 2.1.160 send that form, and no
# capture of a newer release reads differently.)
LAZY_EXTRACTION = "system-blocks-v3"


# Sets whose generator also writes outside its own folder (the settings sweep writes the shared
# /tmp/ccdiffs-override its cases name): built for one release at a time, since every release's
# fixtures are built side by side (see main).
WRITES_OUTSIDE = {"rand_gen_settings"}
_OUTSIDE = threading.Lock()


def _empty_template(root):
    """An empty folder for `git init` to copy its template from: the fixtures' hundreds of
    repositories then hold no sample hooks, description or comment-only info/exclude (inert for
    Claude Code and Mneme, and outside every tree hash), a third fewer files to write and, on the
    next run, to remove."""
    path = os.path.join(root, ".git-template")
    os.makedirs(path, exist_ok=True)
    return path


def build(root, random_n, seed, only=None, real_corpus=None):
    """Builds every fixture set (or those named in `only`); answers {set name: folder}."""
    sets = {
        "shared": ([os.path.join(TD, "conformance", "make_fixtures.py")], None),
        "extra": ([os.path.join(TD, "conformance-extra", "make_extra.py")], None),
        "versions": ([os.path.join(TD, "conformance-versions", "make_cases.py")], None),
        "real": ([os.path.join(TD, "realworld", "build_fixtures.py"), "--root"], None),
    }
    if random_n > 0:
        # The sweep: Markdown fragments, settings and environment, locations.
        per = {"gen": random_n * 2 // 5, "gen_settings": random_n * 2 // 5}
        per["gen_paths"] = random_n - sum(per.values())
        for gen, n in per.items():
            sets[f"rand_{gen}"] = ([os.path.join(TD, "differential", f"{gen}.py")], [str(n), str(seed)])
    if real_corpus:
        # Repositories outside the corpus, laid out like it (scripts/sweep-real.sh).
        sets["sweep"] = ([os.path.join(TD, "realworld", "build_fixtures.py"), "--corpus", real_corpus, "--root"], None)
    if only:
        unknown = set(only) - set(sets)
        if unknown:
            sys.exit(f"capture_matrix: no fixture set {', '.join(sorted(unknown))}; the sets are {', '.join(sets)}")
        sets = {k: v for k, v in sets.items() if k in only}
    out = {}
    for name, (cmd, extra) in sets.items():
        folder = os.path.join(root, name)
        if os.path.exists(folder):
            shutil.rmtree(folder)
        with _OUTSIDE if name in WRITES_OUTSIDE else contextlib.nullcontext():
            subprocess.run([sys.executable, *cmd, folder, *(extra or [])], check=True,
                           stdout=subprocess.DEVNULL, env={**os.environ, "GIT_TEMPLATE_DIR": _empty_template(root)})
        out[name] = folder
    return out


def parse_case(text):
    """A case file: shell assignments KEY='value' (the `'"'"'` escape) or KEY=value."""
    out = {}
    for line in text.splitlines():
        if "=" not in line or not line.strip():
            continue
        k, v = line.split("=", 1)
        try:
            parts = shlex.split(v)
            v = parts[0] if len(parts) == 1 else v
        except ValueError:
            pass
        out[k.strip()] = v
    return out


def tree_hash(folder):
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            p = os.path.join(dirpath, name)
            h.update(os.path.relpath(p, folder).encode("utf-8", "surrogateescape") + b"\0")
            if os.path.islink(p):
                h.update(b"L" + os.readlink(p).encode("utf-8", "surrogateescape"))
            elif os.path.isfile(p):
                st = os.stat(p)
                h.update(b"F%o:" % (st.st_mode & 0o777))
                with open(p, "rb") as f:
                    h.update(f.read())
        for d in dirnames:
            h.update(b"D" + os.path.relpath(os.path.join(dirpath, d), folder).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def blocks_of(content):
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if b.get("type") == "text"]


def expected_from(cap_dir):
    """(instructions, lazy, read order) from a capture folder; None when Claude Code sent nothing."""
    first = os.path.join(cap_dir, "first_request.json")
    if not os.path.exists(first):
        return None
    body = json.load(open(first, encoding="utf-8"))
    instructions = ""
    msgs = body["messages"]
    if msgs and msgs[0]["role"] == "user":
        for text in blocks_of(msgs[0]["content"]):
            if text.startswith("<system-reminder>\n" + PREAMBLE) or (
                    text.startswith("<system-reminder>\nAs you answer") and "\n# currentDate\n" in text):
                instructions = re.sub(r"Today's date is \d{4}-\d{2}-\d{2}\.", "Today's date is <DATE>.", text)
                break
    lazy, reads = "", []
    last = os.path.join(cap_dir, "last_request.json")
    if os.path.exists(last):
        parts, hooks, in_result = [], [], []
        for m in json.load(open(last, encoding="utf-8"))["messages"][1:]:
            content = m["content"]
            if m["role"] == "system" and any(t.startswith("Contents of ") for t in blocks_of(content)):
                # A string, or (when it is the request's last message, some releases between
                # 2.1.197 and 2.1.307) one text block; 2.1.233-2.1.306 append a context-budget
                # note to the same message.
                parts += [re.sub(r"\n\n<total_tokens>[^<]*</total_tokens>$", "", t)
                          for t in blocks_of(content) if t.startswith("Contents of ")]
            elif m["role"] == "system" and any(t.startswith(HOOK) for t in blocks_of(content)):
                # The AGENTS.md plugin's hook output (2.1.281+; a string or text blocks);
                # up to 2.1.312 with the note too.
                hooks += [re.sub(r"\n\n<total_tokens>[^<]*</total_tokens>$", "", t)
                          for t in blocks_of(content) if t.startswith(HOOK)]
            elif m["role"] == "assistant" and isinstance(content, list):
                reads += [b["input"].get("file_path") for b in content if b.get("type") == "tool_use"]
            elif m["role"] == "user" and isinstance(content, list):
                for text in blocks_of(content):
                    if text.startswith("<system-reminder>\nContents of "):
                        # The last block of a request loses its trailing newline in transit.
                        parts.append(text if text.endswith("\n") else text + "\n")
                for block in content:
                    # Releases before 2.1.160 append the files to the Read's own result, each
                    # in a reminder, after a blank line.
                    if block.get("type") == "tool_result":
                        result = "".join(blocks_of(block.get("content") or ""))
                        at = result.find(IN_RESULT)
                        if at >= 0:
                            in_result.append(result[at + 2:])
        old_style = any(not p.startswith("<system-reminder>") for p in parts) or bool(in_result)
        lazy = "\n\n".join(parts + in_result) if old_style else "".join(parts)
        # As `mneme touched` prints it: after the attached files, the hook's message.
        hook = "\n\n".join(hooks)
        if hook:
            lazy = hook if not lazy else (lazy + "\n\n" + hook if old_style else lazy + hook)
    return {"instructions": instructions, "lazy": lazy, "reads": reads}


class Refused(Exception):
    """Claude Code answered a case itself without sending a request (some releases refuse a
    prompt they judge too long before sending it): nothing to compare, so the case is reported
    and skipped rather than failed."""


def refused_locally(cap_dir):
    """The text Claude Code answered with when it ended with an error and sent no request."""
    try:
        out = json.load(open(os.path.join(cap_dir, "claude_stdout.json"), encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(out, dict) and out.get("is_error") and isinstance(out.get("result"), str):
        return out["result"]
    # Releases up to 2.1.81 on Node end this way on a file nested far too deep (14,000 quote
    # levels): the stack overflows outside what drops a file, and the run fails as a whole.
    if isinstance(out, dict) and out.get("is_error") and out.get("subtype") == "error_during_execution":
        return "(error_during_execution, no message)"
    return None


def did_not_start(cap_dir):
    """Why Claude Code did not start in the case's working folder, or None: it asked the API
    nothing (the stub's HEAD probe aside) and either ended with status 0 without a word
    (2.1.122-2.1.142) or said it cannot access the folder (2.1.143-2.1.159). Both happen where
    the folder's name is in Unicode's decomposed form and only the composed spelling is looked
    for (row 29 of docs/claude-code-versions.md)."""
    def text(f):
        p = os.path.join(cap_dir, f)
        return open(p, encoding="utf-8", errors="replace").read() if os.path.exists(p) else ""
    if not all(json.loads(line).get("method") == "HEAD" for line in text("requests.jsonl").splitlines() if line):
        return None
    stderr = text("claude_stderr.txt")
    if "Can't access working directory" in stderr:
        return stderr.strip().splitlines()[-1]
    if text("claude_rc").strip() == "0" and not text("claude_stdout.json") and not stderr:
        return "it exited 0 without a word"
    return None


# The Read tool's own notice for a file over its token cap. Recent releases merge consecutive
# system messages, so it can end up inside the text of the memory or hook message before it; it
# is the Read's result, not memory. Removed when a capture is used (not when it is cached), so
# captures cached before this stay valid.
READ_TRUNCATED = re.compile(r"\n\n\[Truncated: PARTIAL view \u2014 [^\n]*\]")


# The skills a sub-folder's `.claude/skills` offers, announced after a Read into that folder,
# next to the files the Read attached: in its own reminder in the Read's result (2.1.100), or in
# the same system message after them (2.1.197: the list; 2.1.285: "New skills discovered in …").
# It is Claude Code's skills feature, not memory, and `mneme touched` does not print it. Cut
# when a capture is used, like the notice above: a reminder whole, a paragraph up to the next
# attached file (or the end).
SKILLS_REMINDER = "\n\n<system-reminder>\nThe following skills are available for use with the Skill tool:\n"
SKILLS_PARAGRAPHS = ("\n\nThe following skills are available for use with the Skill tool:\n",
                     "\n\nNew skills discovered in ")


def without_skills(lazy):
    while (at := lazy.find(SKILLS_REMINDER)) >= 0 and (end := lazy.find("</system-reminder>", at)) >= 0:
        lazy = lazy[:at] + lazy[end + len("</system-reminder>"):]
    for marker in SKILLS_PARAGRAPHS:
        while (at := lazy.find(marker)) >= 0:
            end = lazy.find("\n\nContents of /", at + len(marker))
            lazy = lazy[:at] + (lazy[end:] if end >= 0 else "")
    return lazy


def comparable(got):
    """What is compared of a capture: its text less the Read's notices and the skills announced."""
    return dict(got, lazy=without_skills(READ_TRUNCATED.sub("", got["lazy"])))


def capture_one(job):
    version, binary, fixture, case_name, cache_file = job
    if os.path.exists(cache_file):
        return job, comparable(json.load(open(cache_file, encoding="utf-8"))), True
    with tempfile.TemporaryDirectory(prefix="mneme-cap-") as tmp:
        env = dict(os.environ, CLAUDE_BIN=binary, OUT_ROOT=tmp)
        r = subprocess.run(["bash", CAPTURE, fixture, case_name], env=env, capture_output=True, text=True)
        name = f"{os.path.basename(fixture)}__{case_name}"
        got = expected_from(os.path.join(tmp, name)) if r.returncode == 0 else None
        if got is None:
            refusal = refused_locally(os.path.join(tmp, name))
            if refusal:
                raise Refused(f"{version} {name}: Claude Code sent no request and answered {refusal!r} itself")
            why = did_not_start(os.path.join(tmp, name)) if r.returncode == 0 else None
            if why:
                # Claude Code does not run there: Mneme must say so for this release.
                got = {"instructions": "", "lazy": "", "reads": [], "not_started": why}
        if got is None:
            stderr = ""
            p = os.path.join(tmp, name, "claude_stderr.txt")
            if os.path.exists(p):
                stderr = open(p, encoding="utf-8", errors="replace").read()[-2000:]
            raise RuntimeError(f"{version} {name}: no request captured (capture rc={r.returncode}) {r.stderr[-1000:]} {stderr}")
    tmpf = cache_file + ".tmp"
    with open(tmpf, "w", encoding="utf-8") as f:
        json.dump(got, f)
    os.replace(tmpf, cache_file)
    return job, comparable(got), False


def fill_cache(cache, archive):
    """Copies into the cache the committed captures it lacks; returns how many. Only plain
    files named as cache entries are taken, so the archive cannot write anywhere else."""
    if not os.path.exists(archive):
        return 0
    added = 0
    with tarfile.open(archive, "r:xz") as t:
        for m in t:
            name = os.path.basename(m.name)
            dest = os.path.join(cache, name)
            if not m.isfile() or not CACHE_NAME.fullmatch(name) or os.path.exists(dest):
                continue
            data = t.extractfile(m).read()
            # Another run (the versions test's two tests) may be filling the same cache.
            tmp = f"{dest}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, dest)
            added += 1
    return added


def save_archive(archive, cache_files):
    """Writes the captures used by this run as the committed archive, byte-for-byte reproducible
    (sorted names, no owner, a fixed time) so an unchanged matrix rewrites the same archive."""
    tmp = archive + ".tmp"
    with tarfile.open(tmp, "w:xz", preset=9 | lzma.PRESET_EXTREME, format=tarfile.GNU_FORMAT) as t:
        for path in sorted(set(cache_files)):
            info = tarfile.TarInfo(os.path.basename(path))
            data = open(path, "rb").read()
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            t.addfile(info, io.BytesIO(data))
    os.replace(tmp, archive)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/mneme/matrix-captures"))
    ap.add_argument("--bin", action="append", required=True, help="VERSION=PATH")
    ap.add_argument("--random", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--only", help="comma list of fixture sets to capture (shared, extra, versions, real, sweep, rand_*)")
    ap.add_argument("--real-corpus", help="a folder of <owner>__<repo>/tree entries to capture as the set 'sweep'")
    ap.add_argument("--no-archive", action="store_true", help="do not start the cache from the committed captures.tar.xz")
    ap.add_argument("--save-archive", action="store_true", help="rewrite captures.tar.xz from the captures this run used")
    ap.add_argument("--allow-refusals", action="store_true",
                    help="skip, instead of failing, cases a release answers itself without a request")
    a = ap.parse_args()
    if a.save_archive and (a.only or a.real_corpus):
        # The archive is the whole matrix's: a run over some sets would drop the others' captures.
        sys.exit("--save-archive writes the whole matrix's captures: run it without --only and --real-corpus "
                 "(MNEME_MATRIX_SAVE_ARCHIVE=1 cargo test -p mneme --test versions)")
    root = os.path.abspath(a.root)
    bins = dict(b.split("=", 1) for b in a.bin)
    os.makedirs(a.cache, exist_ok=True)
    try:
        from_archive = 0 if a.no_archive else fill_cache(a.cache, ARCHIVE)
    except (OSError, EOFError, tarfile.TarError, lzma.LZMAError) as e:
        sys.exit(f"{ARCHIVE} cannot be read ({e}): restore it with `git checkout -- {os.path.relpath(ARCHIVE)}`, "
                 "or run with --no-archive (MNEME_MATRIX_NO_ARCHIVE=1) to capture everything live")
    managed_free = not os.path.exists("/etc/claude-code")
    jobs, cases, cases_by_job = [], {}, {}
    # Each release gets its own copy of every fixture: Claude Code writes into the config
    # folder it runs with (.claude.json, plugin state), which the next release must not see.
    # The copies are built side by side: removing the last run's trees and writing new ones
    # (some 25,000 files a release) mostly waits on the disk, and one release after another
    # made this the longest part of a run with everything cached. Every build ends before any
    # tree is hashed.
    only = a.only.split(",") if a.only else None
    corpus = os.path.abspath(a.real_corpus) if a.real_corpus else None
    with cf.ThreadPoolExecutor(max_workers=len(bins)) as pool:
        built = list(pool.map(lambda v: build(os.path.join(root, v), a.random, a.seed, only=only, real_corpus=corpus), bins))
    for version, binary, set_name, folder in [(v, b, s, f) for (v, b), sets in zip(bins.items(), built) for s, f in sets.items()]:
        for fx_name in sorted(os.listdir(folder)):
            fixture = os.path.join(folder, fx_name)
            if not os.path.isdir(os.path.join(fixture, "cases")):
                continue
            th = tree_hash(fixture)
            for case_file in sorted(os.listdir(os.path.join(fixture, "cases"))):
                if not case_file.endswith(".env"):
                    continue
                case_name = case_file[:-4]
                text = open(os.path.join(fixture, "cases", case_file), encoding="utf-8").read()
                case = parse_case(text)
                # A managed-policy case installs /etc/claude-code for the run; never over a real one.
                if case.get("MANAGED") and not (managed_free and os.geteuid() == 0):
                    print(f"skipped {set_name}/{fx_name}/{case_name}: needs to install /etc/claude-code", file=sys.stderr)
                    continue
                label = f"{version}/{set_name}__{fx_name}__{case_name}"
                cases[label] = {
                    "fixture": fixture,
                    "cwd": os.path.join(fixture, case.get("CWD", "")),
                    "env": dict(kv.split("=", 1) for kv in case.get("EXTRA_ENV", "").split()),
                    "args": case.get("EXTRA_ARGS", "").split(),
                    "managed": os.path.join(fixture, case["MANAGED"]) if case.get("MANAGED") else None,
                    "reads": [x for x in case.get("STUB_ARGS", "").split() if x != "--tool-read"],
                }
                key_parts = [version, root, set_name, fx_name, case_name, text, th]
                # A folder the case names by absolute path outside the fixture (the random
                # settings sweep's shared CLAUDE_COWORK_MEMORY_PATH_OVERRIDE folder, which the
                # last tree generated writes) is part of what the capture saw.
                for value in sorted(cases[label]["env"].values()):
                    if value.startswith("/") and not value.startswith(fixture) and os.path.isdir(value):
                        key_parts.append(value + "=" + tree_hash(value))
                if cases[label]["reads"]:
                    key_parts.append(LAZY_EXTRACTION)
                key = hashlib.sha256("\0".join(key_parts).encode()).hexdigest()
                job = (version, binary, fixture, case_name, os.path.join(a.cache, key + ".json"))
                jobs.append(job)
                cases_by_job[job] = bool(case.get("MANAGED"))
    failures, refused, fresh = [], [], 0
    results = {}
    # A managed-policy case installs /etc/claude-code for its run, so those run one at a time.
    managed = [j for j in jobs if cases_by_job[j]]
    parallel = [j for j in jobs if not cases_by_job[j]]
    # The managed ones run after everything else, one at a time: while /etc/claude-code
    # exists, every Claude Code on the machine reads it.
    for batch, workers in ((parallel, a.jobs), (managed, 1)):
        with cf.ThreadPoolExecutor(max_workers=workers) as pool:
            for fut in cf.as_completed([pool.submit(capture_one, j) for j in batch]):
                try:
                    job, got, cached = fut.result()
                except Refused as e:
                    refused.append(str(e))
                    continue
                except RuntimeError as e:
                    failures.append(str(e))
                    continue
                fresh += 0 if cached else 1
                results[job] = got
    for job, got in results.items():
        version, _, fixture, case_name, _ = job
        set_name = os.path.basename(os.path.dirname(fixture))
        label = f"{version}/{set_name}__{os.path.basename(fixture)}__{case_name}"
        d = os.path.join(a.out, label)
        os.makedirs(d, exist_ok=True)
        if got.get("not_started"):
            # Nothing was sent: the release did not start in this folder (see did_not_start).
            open(os.path.join(d, "not-started.txt"), "w", encoding="utf-8").write(got["not_started"])
        else:
            open(os.path.join(d, "instructions.txt"), "w", encoding="utf-8").write(got["instructions"])
            open(os.path.join(d, "lazy.txt"), "w", encoding="utf-8").write(got["lazy"])
        json.dump(cases[label], open(os.path.join(d, "case.json"), "w", encoding="utf-8"), indent=1)
    not_started = sum(1 for g in results.values() if g.get("not_started"))
    print(f"{len(results)} captures ({fresh} new, {len(results) - fresh} cached; {from_archive} cache entries from {os.path.basename(ARCHIVE)}) for {len(bins)} releases; {len(failures)} failed, {len(refused)} answered by Claude Code itself, {not_started} where it did not start")
    for r in refused:
        print(f"REFUSED {r}" + ("" if a.allow_refusals else " (a failure: pass --allow-refusals to skip such cases)"))
    if not a.allow_refusals:
        failures += refused
    if a.save_archive and not failures:
        save_archive(ARCHIVE, [job[4] for job in results])
        print(f"wrote {len(results)} captures to {ARCHIVE} ({os.path.getsize(ARCHIVE):,} bytes)")
    for f in failures:
        print("FAILED", f, file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
