#!/usr/bin/env python3
"""Big-folder API latency: `memoryPage` page after page (the first call reads the folder, the
next ones only what changed), a search, `memory` (one old memory), `health` and `manifest`, over
one keep-alive connection on `mneme serve`; every time in ms and the last answer's size.
Usage: big_folder_latency.py MNEME_BIN FIXTURE_DIR CWD [N]   (fixtures: benches/make_bench_fixtures.py)"""
import http.client, json, os, re, statistics, subprocess, sys, time
mneme, fx, cwd = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 5
env = dict(os.environ, HOME=f"{fx}/home", CLAUDE_CONFIG_DIR=f"{fx}/home/.claude", MNEME_DATA_DIR="/tmp/mneme-bench-data", PATH="/usr/bin:/bin")
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
    cases = [("memoryPage", {"cwd": cwd, "offset": 100 * i, "limit": 100}) for i in range(n)]
    cases += [("memoryPage search", {"cwd": cwd, "offset": 0, "limit": 100, "search": "zzz-nothing"})] * 2
    cases += [("memory", {"cwd": cwd, "memory": "topic-00001.md"})] * n
    cases += [("health", {"cwd": cwd})] * 3 + [("manifest", {"cwd": cwd})] * 3
    out = {}
    for name, body in cases:
        ms, data = call(name.split()[0], body)
        out.setdefault(name, []).append((ms, len(data)))
    for name, v in out.items():
        times = [t for t, _ in v]
        print(f"{name:18} {' '.join(f'{t:7.0f}' for t in times)} ms   median {statistics.median(times):7.0f} ms  ({v[-1][1]} bytes)")
finally:
    p.terminate()
