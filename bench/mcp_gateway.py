#!/usr/bin/env python3
"""The gateway's cost: `@modelcontextprotocol/server-filesystem` called directly and through
`toolgate serve` (gateway mode: the same server as an upstream), in the same run.

Both are driven with raw newline-delimited JSON-RPC over stdio (the client of
bench/mcp_serve.py): initialize, warm-up, then N sequential `read_text_file` calls and N with
16 in flight, rounds interleaved. The gateway is measured with its audit log on (the
target's condition) and, for reference, off. Reports calls/s, p50/p99 latency and what the
gateway adds: p50 sequential latency (target <= 150 µs) and 16-way throughput as a fraction
of direct (target >= 0.8x).

Then ToolSearch over 1,000 synthetic deferred tool definitions (an upstream offering
them, tests/mcp/fixtures/upstream.py --tools), through `toolgate exec`: keyword queries and
`select:`, the gate's own duration per call (target p50 <= 1 ms). The search alone, without
the gate, is the criterion bench `cargo bench -p toolgate-tools --bench tool_search`.

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
        # The upstream outside its sandbox room: what the room's own relaying costs.
        "gateway (no sandbox)": ([*gateway, "--no-sandbox"], GATEWAY_TOOL),
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
    for name in ("gateway (audit on)", "gateway (audit off)", "gateway (no sandbox)"):
        added = (med(name, "seq", 1) - med("direct", "seq", 1)) * 1e6
        ratio = med(name, "conc", 0) / med("direct", "conc", 0)
        print(f"{name}: adds {added:.0f} µs at p50 sequential (target <= 150); "
              f"16-way throughput {ratio:.2f}x direct (target >= 0.8x)")
    tool_search(a.toolgate, ws)
    shutil.rmtree(ws, ignore_errors=True)
    return 0


FIXTURE = ROOT / "tests/mcp/fixtures/upstream.py"
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "query", "report", "ticket", "invoice",
         "deploy", "metric", "cluster", "bucket", "repo", "issue", "channel", "calendar", "vault"]


def tool_search(toolgate: str, ws: Path, n_tools: int = 1000, n_calls: int = 300) -> None:
    """p50/p99 of the gate's duration for ToolSearch calls over `n_tools` deferred tools."""
    import random
    import subprocess
    rng = random.Random(7)
    tools = []
    for i in range(n_tools):
        w = rng.sample(WORDS, 3)
        tools.append({"name": f"{w[0]}_{w[1]}_{i}", "description": f"Does {w[0]} things with {w[1]} and {w[2]}.",
                      "inputSchema": {"type": "object", "properties": {
                          f"{w[2]}_id": {"type": "string", "description": f"the {w[2]} to act on"}}}})
    defs = ws / "search-tools.json"
    defs.write_text(json.dumps(tools))
    settings = ws / "search-settings.json"
    settings.write_text(json.dumps({
        "toolgate": {"toolSearch": {"mode": "always"}},
        "mcpServers": {"big": {"command": sys.executable, "args": [str(FIXTURE), "--tools", str(defs)],
                               "sandbox": False}},
    }))
    queries = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(n_calls // 2)]
    queries += [f"select:mcp__big__{tools[rng.randrange(n_tools)]['name']}" for _ in range(n_calls // 2)]
    lines = "".join(json.dumps({"type": "tool_use", "id": f"s{i}", "name": "ToolSearch",
                                "input": {"query": q, "max_results": 5}}) + "\n"
                    for i, q in enumerate(queries))
    out = subprocess.run([toolgate, "exec", "--workspace", str(ws), "--settings", str(settings),
                          "--no-audit"], input=lines, capture_output=True, text=True, timeout=300)
    results = [json.loads(l) for l in out.stdout.splitlines() if l.strip()]
    bad = [r for r in results if r.get("is_error")]
    if bad or len(results) != len(queries):
        print(f"ToolSearch: {len(bad)} errors of {len(results)}: {json.dumps(bad[:1])[:300]}")
        return
    ms = sorted(r["toolgate"]["duration_ms"] for r in results)
    kw = sorted(r["toolgate"]["duration_ms"] for r in results[: n_calls // 2])
    print(f"ToolSearch over {n_tools} deferred tools, {len(ms)} calls through the gate: "
          f"p50 {pct(ms, 50):.3f} ms, p99 {pct(ms, 99):.3f} ms (keyword queries p50 {pct(kw, 50):.3f} ms; "
          f"target p50 <= 1 ms)")


if __name__ == "__main__":
    sys.exit(main())
