#!/usr/bin/env python3
"""`mneme serve` API latency: starts the server on a bench fixture, calls methods over one
keep-alive connection and prints median / p95 per method.
Usage: serve_latency.py MNEME_BIN FIXTURE_DIR CWD [N]   (fixtures: benches/make_bench_fixtures.py)"""
import http.client, json, os, re, statistics, subprocess, sys, time

mneme, fx, cwd = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 50
env = dict(os.environ, HOME=f"{fx}/home", CLAUDE_CONFIG_DIR=f"{fx}/home/.claude", MNEME_DATA_DIR="/tmp/mneme-bench-data")
p = subprocess.Popen([mneme, "serve", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
try:
    m = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\w+)", p.stdout.readline())
    port, token = int(m.group(1)), m.group(2)
    conn = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for method, body in [("home", {}), ("context", {"cwd": cwd}), ("memories", {"cwd": cwd}),
                         ("health", {"cwd": cwd}), ("graph", {"cwd": cwd})]:
        times = []
        for _ in range(n):
            t = time.perf_counter()
            conn.request("POST", f"/api/{method}", json.dumps(body), headers)
            r = conn.getresponse()
            data = r.read()
            times.append((time.perf_counter() - t) * 1000)
            assert r.status == 200, (method, r.status, data[:200])
        times.sort()
        print(f"{method:10} median {statistics.median(times):8.2f} ms   p95 {times[int(len(times) * 0.95) - 1]:8.2f} ms   ({len(data)} bytes)")
finally:
    p.terminate()
