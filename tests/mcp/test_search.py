"""`toolgate serve --tools=search` driven by the Python MCP SDK: the two meta-tools
`search_tools` and `call_tool` instead of the full list, policy applied to what a search
finds and to every call, and clear errors for malformed requests.

Registered into test_serve.py's runner by `register(test, h)`, where `h` is that module.
"""
from __future__ import annotations

import subprocess


def register(test, h):
    def search_client(ws, *extra):
        return h.stdio(ws, "pytest", "--tools", "search", *extra)

    def names(result) -> list[str]:
        assert not result.is_error, h.text(result)
        return [t["name"] for t in result.structured_content["tools"]]

    @test
    async def search_mode_lists_only_the_meta_tools():
        ws = h.workspace()
        async with search_client(ws) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == {"search_tools", "call_tool"}, sorted(tools)
            assert tools["search_tools"].annotations.read_only_hint is True
            assert "query" in tools["search_tools"].input_schema["properties"]

    @test
    async def search_mode_finds_tools_and_calls_them_through_the_gate():
        ws = h.workspace()
        async with search_client(ws) as c:
            found = await c.call_tool("search_tools", {"query": "regular expression search file contents"})
            assert "Grep" in names(found), names(found)
            grep = next(t for t in found.structured_content["tools"] if t["name"] == "Grep")
            assert "pattern" in grep["inputSchema"]["properties"], grep
            assert names(await c.call_tool("search_tools", {"query": "select:Read,Edit"})) == ["Read", "Edit"]
            capped = await c.call_tool("search_tools", {"query": "file", "max_results": 2})
            assert len(names(capped)) == 2, names(capped)

            r = await c.call_tool("call_tool", {"name": "Read", "arguments": {"file_path": "hello.txt"}})
            assert not r.is_error, h.text(r)
            assert "hello world" in h.text(r)
            # The same gate: a deny rule on the path still applies.
            d = await c.call_tool("call_tool", {"name": "Read", "arguments": {"file_path": "secret.txt"}})
            assert d.is_error and h.meta(d).get("toolgate/code") == "denied", h.meta(d)
            assert h.meta(d).get("toolgate/layer") == "rule", h.meta(d)
            assert "do not read" not in h.text(d)
            bad = await c.call_tool("call_tool", {"name": "Read", "arguments": {"file_path": 42}})
            assert bad.is_error and h.meta(bad).get("toolgate/code") == "invalid_input", h.meta(bad)
        reads = [r for r in h.audit_records(ws) if "Read" in list(h.find_key(r, "tool"))]
        assert len(reads) >= 3, reads

    @test
    async def search_mode_never_finds_what_policy_hides():
        ws = h.workspace()
        async with search_client(ws, "--deny", "Bash") as c:
            found = await c.call_tool("search_tools", {"query": "bash shell command run", "max_results": 50})
            assert "Bash" not in names(found), names(found)
            sel = await c.call_tool("search_tools", {"query": "select:Bash,Read"})
            assert names(sel) == ["Read"], names(sel)
            unavailable = sel.structured_content["unavailable"]
            assert unavailable[0]["name"] == "Bash" and "Bash" in unavailable[0]["reason"], unavailable
            assert "inputSchema" not in str(unavailable)
            r = await c.call_tool("call_tool", {"name": "Bash", "arguments": {"command": "echo hi"}})
            assert r.is_error and h.meta(r).get("toolgate/code") == "denied", h.meta(r)

    @test
    async def search_mode_refuses_malformed_requests_clearly():
        ws = h.workspace()
        async with search_client(ws) as c:
            cases = [
                ("search_tools", {"query": "   "}, "invalid_request", "empty"),
                ("search_tools", {"query": "select:"}, "invalid_request", "names no tools"),
                ("search_tools", {"query": "+"}, "invalid_request", "`+`"),
                ("search_tools", {"query": "x" * 600}, "invalid_request", "600 characters"),
                ("search_tools", {"query": "read", "max_results": 0}, "invalid_request", "max_results"),
                ("search_tools", {}, "invalid_input", "query"),
                ("call_tool", {}, "invalid_input", "name"),
                ("call_tool", {"name": "Read", "arguments": "hello.txt"}, "invalid_input", "object"),
                ("call_tool", {"name": "Read", "extra": 1}, "invalid_input", "extra"),
                ("call_tool", {"name": "NoSuchTool", "arguments": {}}, "unknown_tool", "NoSuchTool"),
            ]
            for tool, args, code, says in cases:
                r = await c.call_tool(tool, args)
                assert r.is_error, (tool, args, h.text(r))
                assert h.meta(r).get("toolgate/code") == code, (tool, args, h.meta(r))
                assert says in h.text(r), (tool, args, h.text(r))
            # Still serving.
            assert "Read" in names(await c.call_tool("search_tools", {"query": "select:Read"}))
        p = subprocess.run([h.TOOLGATE, "serve", "--workspace", str(ws), "--tools", "some"],
                           capture_output=True, text=True, timeout=10)
        assert p.returncode == 64 and "possible values: all, search" in p.stderr, (p.returncode, p.stderr)

    @test
    async def search_mode_over_http_in_both_eras():
        ws = h.workspace()
        with h.HttpServer(ws, "--tools", "search") as srv:
            for mode in ("legacy", "auto"):
                async with h.http_client(srv.url, f"s-{mode}", mode=mode) as c:
                    tools = [t.name for t in (await c.list_tools()).tools]
                    assert sorted(tools) == ["call_tool", "search_tools"], (mode, tools)
                    found = await c.call_tool("search_tools", {"query": "+notebook cell"})
                    assert names(found)[:1] == ["NotebookEdit"], (mode, names(found))
                    r = await c.call_tool("call_tool", {"name": "Grep", "arguments": {"pattern": "needle"}})
                    assert not r.is_error, (mode, h.text(r))
                    d = await c.call_tool("call_tool", {"name": "Read", "arguments": {"file_path": "secret.txt"}})
                    assert h.meta(d).get("toolgate/code") == "denied", (mode, h.meta(d))
