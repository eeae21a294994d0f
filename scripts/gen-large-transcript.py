#!/usr/bin/env python3
"""Writes a large, realistic Claude Code session transcript for measuring extraction's memory.

    scripts/gen-large-transcript.py OUT.jsonl --cwd /tmp/s53/project [--mb 200] [--seed 1] [--huge-mb N]

Long sessions are mostly tool results (file reads, command output), so that is what the size
is made of: turns of a user prompt, an assistant response split into text and tool_use entries,
tool results (strings and arrays of blocks, some errors, a few several-MiB ones), a thinking
block, attachments, metadata entries, a sub-agent's sidechain entries, and a compaction boundary
partway through. A few prompts state preferences ("From now on, …") so the offline extractor
has something to save. Deterministic for a given seed.

--huge-mb N adds one line of N MiB early on (turn 5): a tool result holding a file read whole
and a pasted screenshot's base64, half each, as one entry (the rest of the file is unchanged).

--tiny-lines N adds N tiny entries in turn 2, right after its prompt, each chained to the one
before (the shape of the progress entries older versions wrote while a tool ran), and makes
the session at least 3 turns long: a transcript whose line count, not its size, is large
(`--mb 3 --tiny-lines 1000000` is some 170 MB). The rest of the file is unchanged.
"""
import argparse
import json
import random

SESSION = "5b1f3c2e-9a47-4c8e-8d7b-2f6a1e0c9d35"
WORDS = ("the of and to in is that for it as with was on be by this are from at or an have not but "
         "function return value struct impl match let mut self error result option string vec path "
         "file line read write test build cargo crate module config memory session transcript").split()
REMEMBER = [
    "From now on, never use semicolons in JavaScript.",
    "I prefer tabs over spaces in every file.",
    "Always run the tests before committing.",
]


def text(rng, n):
    """About n bytes of code-ish text."""
    out, size = [], 0
    while size < n:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
        if rng.random() < 0.3:
            line = "    " + line + ";"
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cwd", required=True)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--huge-mb", type=int, default=0)
    ap.add_argument("--tiny-lines", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    target = a.mb << 20
    written = 0
    n = 0
    parent = None
    turn = 0
    huge_every = 150  # a several-MiB line every so often (a big file or log read whole)

    def uid():
        nonlocal n
        n += 1
        return "%08x-0000-4000-8000-%012x" % (a.seed, n)

    with open(a.out, "w") as f:
        def put(obj):
            nonlocal written
            line = json.dumps(obj, separators=(",", ":")) + "\n"
            f.write(line)
            written += len(line)

        def conv(kind, **kw):
            nonlocal parent
            u = uid()
            obj = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": a.cwd,
                   "sessionId": SESSION, "version": "2.1.197", "gitBranch": "main", "type": kind,
                   "uuid": u, "timestamp": "2026-11-29T10:%02d:%02d.000Z" % (turn // 60 % 60, turn % 60)}
            obj.update(kw)
            put(obj)
            parent = u
            return u

        put({"type": "file-history-snapshot", "messageId": uid(), "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": False})
        while written < target or (a.tiny_lines and turn < 3):
            turn += 1
            if turn == 40:
                # A compaction: the chain restarts at a boundary whose parentUuid is null.
                parent = None
                conv("system", subtype="compact_boundary", content="Conversation compacted", isMeta=False,
                     compactMetadata={"trigger": "auto", "preTokens": 160000})
                conv("user", isCompactSummary=True, message={"role": "user", "content": "Summary: " + text(rng, 3000)})
            prompt = REMEMBER[turn // 50 % len(REMEMBER)] if turn % 50 == 7 else "Please look at " + text(rng, rng.randint(40, 400))
            conv("user", message={"role": "user", "content": prompt})
            if a.tiny_lines and turn == 2:
                for _ in range(a.tiny_lines):
                    # Written by hand: json.dumps a million times is most of the run.
                    u = uid()
                    f.write('{"type":"progress","uuid":"%s","parentUuid":"%s","sessionId":"%s"}\n' % (u, parent, SESSION))
                    parent = u
            if rng.random() < 0.3:
                conv("attachment", attachment={"type": "edited_text_file", "filename": a.cwd + "/src/lib.rs", "snippet": text(rng, 800)})
            for step in range(rng.randint(1, 4)):
                mid = "msg_%d_%d" % (turn, step)
                usage = {"input_tokens": 10, "cache_creation_input_tokens": 500, "cache_read_input_tokens": 20000 + turn, "output_tokens": 300}
                if step == 0 and rng.random() < 0.5:
                    conv("assistant", message={"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                                               "content": [{"type": "thinking", "thinking": text(rng, 600), "signature": "sig"}],
                                               "stop_reason": None, "usage": usage})
                calls = rng.randint(1, 3)
                ids = []
                for c in range(calls):
                    tid = "toolu_%d_%d_%d" % (turn, step, c)
                    ids.append(tid)
                    tool = rng.choice(["Read", "Bash", "Grep", "Edit"])
                    inp = ({"file_path": a.cwd + "/src/f%d.rs" % rng.randint(0, 99)} if tool == "Read"
                           else {"command": "cargo test " + text(rng, 40)} if tool == "Bash"
                           else {"pattern": "fn ", "path": a.cwd} if tool == "Grep"
                           else {"file_path": a.cwd + "/src/f1.rs", "old_string": text(rng, 200), "new_string": text(rng, 300)})
                    conv("assistant", message={"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                                               "content": [{"type": "tool_use", "id": tid, "name": tool, "input": inp}],
                                               "stop_reason": "tool_use", "usage": usage})
                tool_parent = parent
                for c, tid in enumerate(ids):
                    # Parallel calls' results hang off the tool_use entry as siblings.
                    parent = tool_parent
                    size = rng.choice([2_000, 8_000, 30_000, 60_000, 120_000])
                    if turn % huge_every == 0 and step == 0 and c == 0:
                        size = rng.choice([4, 8, 12]) << 20
                    body = text(rng, size)
                    if rng.random() < 0.25:
                        content = [{"type": "text", "text": body}, {"type": "text", "text": "exit 0"}]
                    else:
                        content = body
                    if a.huge_mb and turn == 5 and step == 0 and c == 0:
                        half = a.huge_mb << 19
                        line = "    let value = read(path)?; // a file read whole\n"
                        content = [{"type": "text", "text": (line * (half // len(line) + 1))[:half]},
                                   {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ("iVBORw0KGgo" * (half // 11 + 1))[:half]}}]
                    conv("user", message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": content,
                                                                        "is_error": rng.random() < 0.05}]},
                         toolUseResult={"stdout": body[:2000], "stderr": "", "interrupted": False})
            if rng.random() < 0.1:
                # A sub-agent's entries, written into the main file (older versions did).
                side = uid()
                put({"parentUuid": None, "isSidechain": True, "agentId": "a1b2c3", "cwd": a.cwd, "sessionId": SESSION,
                     "type": "user", "uuid": side, "message": {"role": "user", "content": text(rng, 20_000)}})
            conv("assistant", message={"id": "msg_%d_end" % turn, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                                       "content": [{"type": "text", "text": "Done. " + text(rng, 600)}],
                                       "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 200}})
            if turn % 10 == 0:
                put({"type": "last-prompt", "lastPrompt": prompt[:200], "sessionId": SESSION})
        put({"type": "summary", "summary": "A long session", "leafUuid": parent})


if __name__ == "__main__":
    main()
