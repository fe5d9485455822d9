#!/usr/bin/env python3
"""webfetch.py -- WebFetch through `toolgate call` against `curl`, interleaved, on loopback.

A local HTTP server (this script, a thread) serves a ~100 KiB HTML page; each round fetches
it once with `toolgate call WebFetch` (allowPrivate/allowHttp for the server, a fresh query
string so the cache never answers) and once with `curl -s`. Both sides are whole processes.
Prints the medians and their ratio; toolgate also converts the HTML to Markdown and checks
every address, which curl does not.

Usage: python3 bench/webfetch.py [ROUNDS]   (TOOLGATE=path, default target/release/toolgate)
"""
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLGATE = os.environ.get("TOOLGATE", os.path.join(ROOT, "target/release/toolgate"))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
PAGE = ("<html><body><h1>Bench</h1>" + "<p>Some <b>text</b> with <a href='/x'>a link</a>.</p>\n" * 1800
        + "</body></html>").encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


def timed(argv):
    start = time.perf_counter()
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"failed: {argv}\n{out.stdout.decode()}\n{out.stderr.decode()}")
    return elapsed


def main():
    if not os.access(TOOLGATE, os.X_OK):
        sys.exit(f"no {TOOLGATE}; build it (cargo build --release -p toolgate) or set TOOLGATE")
    curl = shutil.which("curl") or sys.exit("curl is not installed")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    addr = f"127.0.0.1:{server.server_port}"
    settings = json.dumps({"webFetch": {"allowPrivate": [addr], "allowHttp": ["127.0.0.1"]}})
    ws = tempfile.mkdtemp()
    env_home = tempfile.mkdtemp()
    os.environ["XDG_CONFIG_HOME"] = env_home
    tg, cu = [], []
    for i in range(ROUNDS + 1):
        url = f"http://{addr}/page?round={i}"
        call = [TOOLGATE, "call", "--no-audit", "--json", "--workspace", ws, "--settings", settings,
                "--allow", "WebFetch", "WebFetch", json.dumps({"url": url, "prompt": "p"})]
        a = timed(call)
        b = timed([curl, "-s", "-o", os.devnull, url])
        if i:  # the first round warms the page cache and the server
            tg.append(a)
            cu.append(b)
    server.shutdown()
    shutil.rmtree(ws, ignore_errors=True)
    shutil.rmtree(env_home, ignore_errors=True)
    m_tg, m_cu = statistics.median(tg) * 1000, statistics.median(cu) * 1000
    print(f"page {len(PAGE)} bytes, {ROUNDS} rounds, interleaved")
    print(f"toolgate call WebFetch  median {m_tg:7.2f} ms  (p90 {sorted(tg)[int(len(tg) * .9)] * 1000:.2f})")
    print(f"curl -s                 median {m_cu:7.2f} ms  (p90 {sorted(cu)[int(len(cu) * .9)] * 1000:.2f})")
    print(f"ratio {m_tg / m_cu:.2f}x")


if __name__ == "__main__":
    main()
