#!/usr/bin/env python3
"""Big-folder API latency: `memoryPage` page after page (each page reads its own rows once), a
search, `memory` (one old memory), `health` (the first reads every file, the next ones only what
changed; then once after one memory is rewritten) and `manifest`, over one keep-alive connection
on `mneme serve`; every time in ms and the last answer's size.
Usage: big_folder_latency.py MNEME_BIN FIXTURE_DIR CWD [N]   (fixtures: benches/make_bench_fixtures.py)"""
import http.client, json, os, re, statistics, subprocess, sys, time
mneme, fx, cwd = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 5
env = dict(os.environ, HOME=f"{fx}/home", CLAUDE_CONFIG_DIR=f"{fx}/home/.claude", MNEME_DATA_DIR=f"{fx}/mneme-data", PATH="/usr/bin:/bin")
p = subprocess.Popen([mneme, "serve", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
try:
    m = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)", p.stdout.readline())
    conn = http.client.HTTPConnection("127.0.0.1", int(m.group(1)))
    headers = {"Authorization": f"Bearer {m.group(2)}", "Content-Type": "application/json"}
    def call(method, body):
        t = time.perf_counter()
        conn.request("POST", f"/api/{method}", json.dumps(body), headers)
        r = conn.getresponse(); data = r.read()
        assert r.status == 200, (method, r.status, data[:300])
        return (time.perf_counter() - t) * 1000, data
    # In the order the Memories screen asks: its first pages, the health card, then a search.
    cases = [("memoryPage", {"cwd": cwd, "offset": 100 * i, "limit": 100}) for i in range(n)]
    cases += [("health", {"cwd": cwd})] * 3 + [("health one changed", {"cwd": cwd})]
    cases += [("memoryPage search", {"cwd": cwd, "offset": 0, "limit": 100, "search": "zzz-nothing"})] * 2
    cases += [("memory", {"cwd": cwd, "memory": "topic-00001.md"})] * n
    cases += [("manifest", {"cwd": cwd})] * 3
    out = {}
    for name, body in cases:
        if name == "health one changed":
            # The same text written again: a new change time, so this one file is read again.
            one = next(os.path.join(d, f) for d, _, fs in os.walk(f"{fx}/home/.claude/projects") for f in sorted(fs) if f.startswith("topic-"))
            with open(one, "rb") as fh: text = fh.read()
            with open(one, "wb") as fh: fh.write(text)
        ms, data = call(name.split()[0], body)
        out.setdefault(name, []).append((ms, len(data)))
    for name, v in out.items():
        times = [t for t, _ in v]
        print(f"{name:18} {' '.join(f'{t:7.0f}' for t in times)} ms   median {statistics.median(times):7.0f} ms  ({v[-1][1]} bytes)")
finally:
    p.terminate()
