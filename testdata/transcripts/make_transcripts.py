#!/usr/bin/env python3
"""Generates the real Claude Code transcripts vendored in this folder.

Runs the real Claude Code 2.1.197 binary in print mode against a scripted stub of the Anthropic
Messages API on 127.0.0.1 (the conformance stub, `../conformance/stub_api.py`, with a FIFO of
main-loop turns added), in a throwaway HOME, and copies the session transcripts it writes
(`<CLAUDE_CONFIG_DIR>/projects/<sanitized cwd>/<session>.jsonl`) here unchanged. The fixture
always lives at `/tmp/mneme-tx` (wiped first), because absolute paths are part of the transcripts
and the tests that read them.

    python3 make_transcripts.py [--claude BIN]

Sessions (one `.jsonl` each; see README.md for what each exercises):
  plain          one prompt, text answer
  tools          Read + Bash in parallel, tool results, text answer; then a second prompt
                 appended with --resume (a "from now on" correction)
  memory-write   the main agent Writes a topic file and MEMORY.md in the auto-memory folder
  subagent       the main agent delegates to a sub-agent (Task/Agent tool); the sub-agent's own
                 transcript lands under <session>/subagents/
"""
import argparse
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import uuid
from http.server import ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = "/tmp/mneme-tx"
DEFAULT_BIN = "/tmp/cc/node_modules/@anthropic-ai/claude-code-linux-x64/claude"

spec = importlib.util.spec_from_file_location("stub_api", os.path.join(HERE, "..", "conformance", "stub_api.py"))
stub_api = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stub_api)

# Main-loop turns still to answer, in order: each is (blocks, stop_reason).
SCRIPT = []
SCRIPT_LOCK = threading.Lock()


def sse_payload(model, blocks, stop_reason):
    events = [("message_start", {"type": "message_start", "message": {
        "id": "msg_stub_" + uuid.uuid4().hex[:16], "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": stub_api.usage(1200, 30)}})]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            events += [
                ("content_block_start", {"type": "content_block_start", "index": i,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": i,
                                         "delta": {"type": "text_delta", "text": b["text"]}}),
            ]
        else:
            events += [
                ("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": "toolu_stub_" + uuid.uuid4().hex[:16], "name": b["name"], "input": {}}}),
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(b["input"])}}),
            ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events += [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                           "usage": {"output_tokens": 30}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events)


class ScriptedHandler(stub_api.Handler):
    def _handle(self):
        body = self._read_body() if self.command in ("POST", "PUT", "PATCH") else None
        self._log(body)
        path = self.path.split("?")[0]
        if path.endswith("/v1/messages") and isinstance(body, dict) and body.get("stream") \
                and stub_api.is_main_loop(body):
            with SCRIPT_LOCK:
                turn = SCRIPT.pop(0) if SCRIPT else None
            if turn is not None:
                payload = sse_payload(body.get("model", "claude-stub"), *turn)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
        # Everything else (side calls, unscripted turns): the conformance stub's answers.
        return self._answer_plain(body, path)

    def _answer_plain(self, body, path):
        model = (body or {}).get("model", "claude-stub") if isinstance(body, dict) else "claude-stub"
        if path.endswith("/v1/messages/count_tokens"):
            return self._json(200, {"input_tokens": 1})
        if path.endswith("/v1/messages"):
            if isinstance(body, dict) and body.get("stream"):
                return self._sse(model)
            return self._json(200, self._message(model))
        return self._json(200, {})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


def text(t):
    return {"type": "text", "text": t}


def tool(name, **inp):
    return {"type": "tool_use", "name": name, "input": inp}


def run_claude(bin_path, port, cwd, prompt, extra=()):
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "dumb", "LANG": "C.UTF-8",
        "HOME": f"{ROOT}/home", "CLAUDE_CONFIG_DIR": f"{ROOT}/home/.claude",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "sk-test",
        "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    out = subprocess.run([bin_path, "-p", prompt, "--output-format", "json", *extra], cwd=cwd, env=env,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    if out.returncode != 0:
        sys.exit(f"claude failed ({out.returncode}): {out.stderr}\n{out.stdout}")
    return json.loads(out.stdout)


def sanitize(p):
    return "".join(c if c.isalnum() and c.isascii() else "-" for c in p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--claude", default=DEFAULT_BIN)
    a = ap.parse_args()

    shutil.rmtree(ROOT, ignore_errors=True)
    project = f"{ROOT}/project"
    os.makedirs(f"{ROOT}/home/.claude")
    os.makedirs(project)
    subprocess.run(["git", "init", "-q", project], check=True)
    with open(f"{project}/notes.txt", "w") as f:
        f.write("hi from notes\n")
    memdir = f"{ROOT}/home/.claude/projects/{sanitize(project)}/memory"

    stub_api.LOG_PATH = f"{ROOT}/requests.jsonl"
    srv = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedHandler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()

    sessions = {}

    sessions["plain"] = run_claude(a.claude, port, project, "hello")["session_id"]

    SCRIPT[:] = [
        ([text("Let me look at the notes first."), tool("Read", file_path=f"{project}/notes.txt"),
          tool("Bash", command="ls", description="List files")], "tool_use"),
        ([text("notes.txt says: hi from notes. I'll use tabs.")], "end_turn"),
    ]
    sid = run_claude(a.claude, port, project,
                     "Remember that I prefer tabs over spaces. What is in notes.txt?")["session_id"]
    SCRIPT[:] = [([text("Understood: no semicolons from now on.")], "end_turn")]
    resumed = run_claude(a.claude, port, project, "From now on, never use semicolons in JavaScript.",
                         ["--resume", sid])["session_id"]
    sessions["tools"] = sid
    if resumed != sid:
        sessions["tools-resumed"] = resumed

    SCRIPT[:] = [
        ([tool("Write", file_path=f"{memdir}/project_deploys.md",
               content="---\nname: Deploy day\ndescription: Deploys go out on Fridays\ntype: project\n---\n\n"
                       "Deploys happen on Fridays.\n"),
          tool("Write", file_path=f"{memdir}/MEMORY.md",
               content="- [Deploy day](project_deploys.md) — Deploys go out on Fridays\n")], "tool_use"),
        ([text("Saved to memory.")], "end_turn"),
    ]
    sessions["memory-write"] = run_claude(a.claude, port, project, "Please remember that deploys happen on Fridays.",
                                          ["--permission-mode", "acceptEdits"])["session_id"]

    SCRIPT[:] = [
        ([tool("Agent", description="Count files", prompt="Count the files in the project.",
               subagent_type="general-purpose")], "tool_use"),
        ([text("There is one file.")], "end_turn"),  # the sub-agent's own turn
        ([text("The sub-agent counted one file.")], "end_turn"),
    ]
    sessions["subagent"] = run_claude(a.claude, port, project, "How many files are there? Use a sub-agent.")["session_id"]

    srv.shutdown()
    if SCRIPT:
        sys.exit(f"unused scripted turns: {SCRIPT}")

    tdir = f"{ROOT}/home/.claude/projects/{sanitize(project)}"
    for old in glob.glob(os.path.join(HERE, "*.jsonl")):
        os.remove(old)
    shutil.rmtree(os.path.join(HERE, "subagent"), ignore_errors=True)
    for name, sid in sessions.items():
        copy(f"{tdir}/{sid}.jsonl", os.path.join(HERE, f"{name}.jsonl"))
        for sub in glob.glob(f"{tdir}/{sid}/subagents/*"):
            copy(sub, os.path.join(HERE, name, os.path.basename(sub)))
    print(json.dumps(sessions, indent=1))


def copy(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(src, encoding="utf-8") as f:
        data = f.read()
    with open(dst, "w", encoding="utf-8") as f:
        f.write(trim(data))


def trim(data):
    """Replaces the agent and skill descriptions (Anthropic's prose, which the parser tests do
    not read) with a short placeholder; every other line stays byte for byte."""
    out = []
    for line in data.split("\n"):
        entry = json.loads(line) if line else None
        a = entry.get("attachment") if isinstance(entry, dict) else None
        if isinstance(a, dict) and a.get("type") == "agent_listing_delta":
            a["addedLines"] = [f"- {t}: (description trimmed from the vendored copy)" for t in a.get("addedTypes", [])]
            line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        elif isinstance(a, dict) and a.get("type") == "skill_listing":
            a["content"] = "(skill listing trimmed from the vendored copy)"
            line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        out.append(line)
    return "\n".join(out)


if __name__ == "__main__":
    main()
