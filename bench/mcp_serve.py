#!/usr/bin/env python3
"""`toolgate serve` against the reference filesystem MCP server, in the same run.

Drives each server with raw newline-delimited JSON-RPC (no SDK: its overhead would
dominate; the request bytes are encoded once per phase): initialize, then N sequential
`tools/call`s of a small Read, then the same with 16 requests in flight. The client's own
CPU per call is reported too: it shares the cores with the server it drives. Reports calls/s, p50/p99 latency, the server's CPU time per call
(user+system of its process, so independent of this client's own speed), start-up time
(spawn → initialize response) and peak RSS (VmHWM of the server and its children), rounds
interleaved.
toolgate is also measured over Streamable HTTP (server-filesystem speaks stdio only).

Usage: python3 bench/mcp_serve.py [--toolgate target/release/toolgate] [--node node]
                                  [--calls 2000] [--rounds 3] [--no-http]
Needs: `cargo build --release -p toolgate`; `npm ci` (or `npm install --no-save`) in
bench/mcp-filesystem. Only 127.0.0.1 is contacted; every phase is bounded in count and time.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FS_SERVER = ROOT / "bench/mcp-filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
IN_FLIGHT = 16
PHASE_TIMEOUT = 120.0  # seconds: no phase may run longer


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def tree_hwm_kib(pid: int) -> int:
    """VmHWM of `pid` plus its descendants, in KiB."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_or_kill(proc: subprocess.Popen) -> None:
    """Waits for a server asked to stop; kills it if it has not after 10 s."""
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Stdio:
    """One server process spoken to over its stdin/stdout."""

    def __init__(self, argv: list[str], cwd: Path):
        self.t0 = time.perf_counter()
        # Buffered: an unbuffered pipe's readline() costs one read(2) per byte.
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, bufsize=1 << 16)
        self.out = self.proc.stdout
        self.send(INIT)
        reply = self.recv()
        assert reply.get("id") == 0 and "result" in reply, reply
        self.startup = time.perf_counter() - self.t0
        self.send(INITIALIZED)

    def send(self, msg: dict) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def send_raw(self, line: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def recv(self) -> dict:
        assert self.out
        line = self.out.readline()
        if not line:
            raise RuntimeError("server closed its output")
        return json.loads(line)

    def close(self) -> int:
        hwm = tree_hwm_kib(self.proc.pid)
        assert self.proc.stdin
        self.proc.stdin.close()
        wait_or_kill(self.proc)
        return hwm


def call(i: int, tool: str, args: dict) -> dict:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}}


def check(reply: dict, expect: str) -> None:
    result = reply.get("result") or {}
    texts = (b.get("text", "") for b in result.get("content") or () if isinstance(b, dict))
    if result.get("isError") or not any(expect in t for t in texts):
        raise AssertionError(f"bad reply: {json.dumps(reply)[:300]}")


def call_template(tool: str, args: dict) -> tuple[bytes, bytes]:
    """The bytes of a `tools/call` line around its id: encoded once per phase, so the
    client's own cost per call stays small (it is measured and reported too)."""
    params = json.dumps({"name": tool, "arguments": args}, separators=(",", ":"))
    return b'{"jsonrpc":"2.0","id":', (',"method":"tools/call","params":' + params + "}\n").encode()


def stdio_phase(s: Stdio, tool: str, args: dict, expect: str, n: int, in_flight: int) -> tuple[float, list[float]]:
    """n calls with `in_flight` outstanding; returns (seconds, latencies)."""
    sent: dict[int, float] = {}
    lat: list[float] = []
    next_id, done = 1, 0
    head, tail = call_template(tool, args)
    deadline = time.perf_counter() + PHASE_TIMEOUT
    t0 = time.perf_counter()
    while next_id <= min(in_flight, n):
        sent[next_id] = time.perf_counter()
        s.send_raw(head + str(next_id).encode() + tail)
        next_id += 1
    while done < n:
        if time.perf_counter() > deadline:
            raise TimeoutError("phase took too long")
        reply = s.recv()
        rid = reply.get("id")
        if rid not in sent:
            continue  # a notification
        lat.append(time.perf_counter() - sent.pop(rid))
        check(reply, expect)
        done += 1
        if next_id <= n:
            sent[next_id] = time.perf_counter()
            s.send_raw(head + str(next_id).encode() + tail)
            next_id += 1
    return time.perf_counter() - t0, lat


class Http:
    """toolgate over Streamable HTTP: one legacy session, one keep-alive connection per worker."""

    def __init__(self, argv: list[str], cwd: Path, port: int):
        self.port = port
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.perf_counter() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                if time.perf_counter() > deadline:
                    raise
                time.sleep(0.002)
        self.session = None
        conn = self.conn()
        reply, headers = self.post(conn, INIT)
        assert "result" in reply, reply
        self.startup = time.perf_counter() - self.t0
        self.session = headers.get("mcp-session-id")
        self.post(conn, INITIALIZED)
        conn.close()

    def conn(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def post(self, conn: http.client.HTTPConnection, msg: dict) -> tuple[dict, dict]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-06-18"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        conn.request("POST", "/mcp", body=json.dumps(msg), headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
        if resp.status == 202:
            return {}, hdrs
        if resp.status != 200:
            raise AssertionError(f"HTTP {resp.status}: {body[:200]!r}")
        if hdrs.get("content-type", "").startswith("text/event-stream"):
            for line in body.decode().splitlines():
                if line.startswith("data:") and line[5:].strip():
                    data = json.loads(line[5:])
                    if data.get("id") == msg.get("id"):
                        return data, hdrs
            raise AssertionError(f"no reply in the event stream: {body[:200]!r}")
        return json.loads(body), hdrs

    def phase(self, tool: str, args: dict, expect: str, n: int, in_flight: int) -> tuple[float, list[float]]:
        lat: list[float] = []
        lock = threading.Lock()
        counter = iter(range(1, n + 1))
        errors: list[BaseException] = []

        def worker():
            conn = self.conn()
            try:
                while True:
                    with lock:
                        i = next(counter, None)
                    if i is None:
                        return
                    t = time.perf_counter()
                    reply, _ = self.post(conn, call(i, tool, args))
                    d = time.perf_counter() - t
                    check(reply, expect)
                    with lock:
                        lat.append(d)
            except BaseException as e:  # noqa: BLE001 - reported by the caller
                errors.append(e)
            finally:
                conn.close()

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker) for _ in range(in_flight)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(PHASE_TIMEOUT)
        if errors:
            raise errors[0]
        return time.perf_counter() - t0, lat

    def close(self) -> int:
        hwm = tree_hwm_kib(self.proc.pid)
        self.proc.terminate()
        wait_or_kill(self.proc)
        return hwm


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolgate", default=str(ROOT / "target/release/toolgate"))
    ap.add_argument("--node", default=shutil.which("node") or "node")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-http", action="store_true")
    ap.add_argument("--no-audit", action="store_true", help="run toolgate without its audit log")
    a = ap.parse_args()
    if not FS_SERVER.exists():
        print(f"missing {FS_SERVER}: run `npm ci` in bench/mcp-filesystem", file=sys.stderr)
        return 2

    ws = Path(tempfile.mkdtemp(prefix="toolgate-mcp-bench-"))
    small = ws / "small.txt"
    small.write_text("".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(20)))
    tg_args = ["serve", "--workspace", str(ws)] + (["--no-audit"] if a.no_audit else [])
    servers = {
        "toolgate": ([a.toolgate, *tg_args], "Read", {"file_path": str(small)}),
        "server-filesystem": ([a.node, str(FS_SERVER), str(ws)], "read_text_file", {"path": str(small)}),
    }
    expect = "lazy dog"
    rows: dict[str, dict[str, list]] = {}

    def record(name: str, key: str, value) -> None:
        rows.setdefault(name, {}).setdefault(key, []).append(value)

    for r in range(a.rounds):
        for name, (argv, tool, args) in servers.items():
            s = Stdio(argv, ws)
            # Warm up (JIT, page cache, first-call setup) before measuring.
            stdio_phase(s, tool, args, expect, 50, 1)
            for key, in_flight in (("seq", 1), ("conc", IN_FLIGHT)):
                cpu0, own0 = cpu_seconds(s.proc.pid), time.process_time()
                secs, lat = stdio_phase(s, tool, args, expect, a.calls, in_flight)
                cpu_us = (cpu_seconds(s.proc.pid) - cpu0) / a.calls * 1e6
                own_us = (time.process_time() - own0) / a.calls * 1e6
                record(name + " stdio", key, (a.calls / secs, pct(lat, 50), pct(lat, 99), cpu_us))
                record(name + " stdio", key + "_client", own_us)
            record(name + " stdio", "startup", s.startup)
            record(name + " stdio", "rss", s.close())
        if not a.no_http:
            argv, tool, args = servers["toolgate"]
            port = free_port()
            h = Http([*argv, "--http", f"127.0.0.1:{port}"], ws, port)
            h.phase(tool, args, expect, 50, 1)
            for key, in_flight in (("seq", 1), ("conc", IN_FLIGHT)):
                cpu0 = cpu_seconds(h.proc.pid)
                secs, lat = h.phase(tool, args, expect, a.calls, in_flight)
                cpu_us = (cpu_seconds(h.proc.pid) - cpu0) / a.calls * 1e6
                record("toolgate http", key, (a.calls / secs, pct(lat, 50), pct(lat, 99), cpu_us))
            record("toolgate http", "startup", h.startup)
            record("toolgate http", "rss", h.close())
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)

    def med(name: str, key: str, idx: int | None = None) -> float:
        vals = rows[name][key]
        return statistics.median(v[idx] if idx is not None else v for v in vals)

    print(f"{a.calls} calls per phase, {a.rounds} rounds interleaved, medians of the rounds; "
          f"small Read = {small.stat().st_size} bytes; audit log {'off' if a.no_audit else 'on'}")
    print(f"{'server':28} {'seq calls/s':>11} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs':>7} | "
          f"{'16-way calls/s':>14} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs':>7} | {'startup ms':>10} "
          f"{'peak RSS MiB':>12}")
    for name in rows:
        print(f"{name:28} {med(name, 'seq', 0):11.0f} {med(name, 'seq', 1) * 1e3:7.3f} "
              f"{med(name, 'seq', 2) * 1e3:7.3f} {med(name, 'seq', 3):7.0f} | "
              f"{med(name, 'conc', 0):14.0f} {med(name, 'conc', 1) * 1e3:7.3f} "
              f"{med(name, 'conc', 2) * 1e3:7.3f} {med(name, 'conc', 3):7.0f} | "
              f"{med(name, 'startup') * 1e3:10.1f} {med(name, 'rss') / 1024:12.1f}")
    print("(CPU µs: the server process's user+system CPU time per call, all threads — independent "
          "of how fast this Python client is)")
    for name in rows:
        if "seq_client" in rows[name]:
            print(f"this client's own CPU per call, {name}: sequential {med(name, 'seq_client'):.0f} µs, "
                  f"16-way {med(name, 'conc_client'):.0f} µs (it shares the machine's cores with the server)")
    tg, fs = "toolgate stdio", "server-filesystem stdio"
    print("\ntoolgate stdio vs server-filesystem (target: >= 5x throughput, <= 0.25x memory):")
    print(f"  sequential throughput {med(tg, 'seq', 0) / med(fs, 'seq', 0):.2f}x, "
          f"16-way throughput {med(tg, 'conc', 0) / med(fs, 'conc', 0):.2f}x, "
          f"startup {med(tg, 'startup') / med(fs, 'startup'):.2f}x, "
          f"peak RSS {med(tg, 'rss') / med(fs, 'rss'):.2f}x")
    print(f"  server CPU per call: sequential {med(tg, 'seq', 3) / med(fs, 'seq', 3):.2f}x, "
          f"16-way {med(tg, 'conc', 3) / med(fs, 'conc', 3):.2f}x")
    shutil.rmtree(ws, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
