#!/usr/bin/env python3
"""A loopback stub of the Anthropic Messages API for scripts/memory-agent-rules.sh.

stdlib only; listens on 127.0.0.1, port 0 (the port is written to PORT_FILE).

    memory-agent-stub.py LOG PORT_FILE CALLS_JSON

Every request body is appended to LOG (JSON lines). The first request of Claude Code's memory
extraction agent (recognised by its task text, before any tool result) is answered with the
tool calls of CALLS_JSON ([[name, input], ...], ids toolu_0, toolu_1, ...); every other model
request, the main conversation's included, gets a short text answer that ends the turn.
"""
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The conformance stub's reading of a request (whether a tool result came back yet), not a copy.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "testdata" / "conformance"))
from stub_api import has_tool_result  # noqa: E402

LOG, PORT_FILE, CALLS = sys.argv[1:4]
LOCK = threading.Lock()
EXTRACTION_MARK = "memory extraction subagent"




class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply_json(self, data):
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        self.reply_json({"data": []})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        with LOCK, open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if "count_tokens" in self.path:
            return self.reply_json({"input_tokens": 10})
        if not self.path.split("?")[0].endswith("/v1/messages"):
            return self.reply_json({})
        blocks, stop = [{"type": "text", "text": "Noted."}], "end_turn"
        if EXTRACTION_MARK in json.dumps(body) and not has_tool_result(body):
            with open(CALLS, encoding="utf-8") as f:
                calls = json.load(f)
            blocks = [{"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": inp} for i, (n, inp) in enumerate(calls)]
            stop = "tool_use"
        msg = {
            "id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant",
            "model": body.get("model", "claude"), "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }
        if not body.get("stream"):
            return self.reply_json(msg)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()

        def event(name, data):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        event("message_start", {"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}})
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                event("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
                event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}})
            else:
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})
                event("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}})
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 1}})
        event("message_stop", {"type": "message_stop"})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
