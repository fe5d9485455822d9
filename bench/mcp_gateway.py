#!/usr/bin/env python3
"""The gateway's cost: `@modelcontextprotocol/server-filesystem` called directly and through
`toolgate serve` (gateway mode: the same server as an upstream), in the same run.

Both are driven with raw newline-delimited JSON-RPC over stdio (the client of
bench/mcp_serve.py): initialize, warm-up, then N sequential `read_text_file` calls and N with
16 in flight, rounds interleaved. The gateway is measured with its audit log on (the
target's condition) and, for reference, off. Reports calls/s, p50/p99 latency and what the
gateway adds: p50 sequential latency (target <= 150 µs) and 16-way throughput as a fraction
of direct (target >= 0.8x).

Also times ToolSearch over 1,000 synthetic deferred tool definitions through `toolgate
call`-free library code: that part is the criterion bench
`cargo bench -p toolgate-tools --bench tool_search` (target p50 <= 1 ms).

Usage: python3 bench/mcp_gateway.py [--toolgate target/release/toolgate] [--node node]
                                    [--calls 2000] [--rounds 3]
Needs: `cargo build --release -p toolgate`; `npm ci` in bench/mcp-filesystem. Only loopback
and child processes are used; every phase is bounded in count and time.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_serve import FS_SERVER, IN_FLIGHT, ROOT, Stdio, pct, stdio_phase  # noqa: E402

TOOL = "read_text_file"
GATEWAY_TOOL = f"mcp__fs__{TOOL}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolgate", default=str(ROOT / "target/release/toolgate"))
    ap.add_argument("--node", default=shutil.which("node") or "node")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not FS_SERVER.exists():
        print(f"missing {FS_SERVER}: run `npm ci` in bench/mcp-filesystem", file=sys.stderr)
        return 2
    ws = Path(tempfile.mkdtemp(prefix="toolgate-gateway-bench-"))
    small = ws / "small.txt"
    small.write_text("".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(20)))
    settings = ws / "gateway-settings.json"
    settings.write_text(json.dumps({
        "permissions": {"allow": [GATEWAY_TOOL]},
        "mcpServers": {"fs": {"command": a.node, "args": [str(FS_SERVER), str(ws)]}},
    }))
    gateway = [a.toolgate, "serve", "--workspace", str(ws), "--settings", str(settings)]
    servers = {
        "direct": ([a.node, str(FS_SERVER), str(ws)], TOOL),
        "gateway (audit on)": (gateway, GATEWAY_TOOL),
        "gateway (audit off)": ([*gateway, "--no-audit"], GATEWAY_TOOL),
    }
    args = {"path": str(small)}
    expect = "lazy dog"
    rows: dict[str, dict[str, list]] = {}
    for r in range(a.rounds):
        for name, (argv, tool) in servers.items():
            s = Stdio(argv, ws)
            stdio_phase(s, tool, args, expect, 50, 1)
            for key, in_flight in (("seq", 1), ("conc", IN_FLIGHT)):
                secs, lat = stdio_phase(s, tool, args, expect, a.calls, in_flight)
                rows.setdefault(name, {}).setdefault(key, []).append(
                    (a.calls / secs, pct(lat, 50), pct(lat, 99)))
            s.close()
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)

    def med(name: str, key: str, idx: int) -> float:
        return statistics.median(v[idx] for v in rows[name][key])

    print(f"{a.calls} `{TOOL}` calls per phase, {a.rounds} rounds interleaved, medians of the rounds")
    print(f"{'path':22} {'seq calls/s':>11} {'p50 µs':>8} {'p99 µs':>8} | {'16-way calls/s':>14} {'p50 µs':>8} {'p99 µs':>8}")
    for name in rows:
        print(f"{name:22} {med(name, 'seq', 0):11.0f} {med(name, 'seq', 1) * 1e6:8.0f} {med(name, 'seq', 2) * 1e6:8.0f} | "
              f"{med(name, 'conc', 0):14.0f} {med(name, 'conc', 1) * 1e6:8.0f} {med(name, 'conc', 2) * 1e6:8.0f}")
    for name in ("gateway (audit on)", "gateway (audit off)"):
        added = (med(name, "seq", 1) - med("direct", "seq", 1)) * 1e6
        ratio = med(name, "conc", 0) / med("direct", "conc", 0)
        print(f"{name}: adds {added:.0f} µs at p50 sequential (target <= 150); "
              f"16-way throughput {ratio:.2f}x direct (target >= 0.8x)")
    shutil.rmtree(ws, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
