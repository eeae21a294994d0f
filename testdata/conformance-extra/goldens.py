#!/usr/bin/env python3
"""Turn capture.sh output folders into goldens: expected/<fixture>__<case>/user_context.txt
(date normalised to <DATE>) and lazy_context.txt (the later system message carrying nested
memory, empty when none). Usage: goldens.py CAPTURES_DIR OUT_DIR"""
import json
import os
import re
import sys

cap, out = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(cap)):
    d = os.path.join(cap, name)
    first = os.path.join(d, "first_request.json")
    if not os.path.exists(first):
        continue
    body = json.load(open(first, encoding="utf-8"))
    c = body["messages"][0]["content"]
    text = c[0]["text"] if isinstance(c, list) else c
    if not text.startswith("<system-reminder>\nAs you answer"):
        text = ""
    text = re.sub(r"Today's date is \d{4}-\d{2}-\d{2}\.", "Today's date is <DATE>.", text)
    lazy = ""
    last = os.path.join(d, "last_request.json")
    if os.path.exists(last):
        for m in json.load(open(last, encoding="utf-8"))["messages"]:
            if m["role"] == "system" and isinstance(m["content"], str) and m["content"].startswith("Contents of "):
                lazy = m["content"]
    o = os.path.join(out, name)
    os.makedirs(o, exist_ok=True)
    open(os.path.join(o, "user_context.txt"), "w", encoding="utf-8").write(text)
    open(os.path.join(o, "lazy_context.txt"), "w", encoding="utf-8").write(lazy)
    print(name, len(text), len(lazy))
