"""The orchestration tools through `toolgate serve`, driven by the Python MCP SDK: questions
answered by elicitation (both eras), a sub-agent whose model is the client's sampling and
which tries to get past its child gate, plan mode, skills, worktrees and Monitor.

Registered into test_serve.py's runner by `register(test, h)`, where `h` is that module.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import (
    CreateMessageResultWithTools,
    ElicitResult,
    Implementation,
    SamplingCapability,
    SamplingToolsCapability,
    TextContent,
    ToolUseContent,
)


QUESTION = {"questions": [{
    "question": "Which database should we use?",
    "header": "Database",
    "multiSelect": False,
    "options": [
        {"label": "Postgres", "description": "the server one"},
        {"label": "SQLite", "description": "a file"},
    ],
}]}


def register(test, h):
    def server(ws: Path, *args: str, home: Path | None = None) -> StdioServerParameters:
        env = None
        if home is not None:
            env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": "/usr/bin:/bin"}
        return StdioServerParameters(command=h.TOOLGATE, args=["serve", "--workspace", str(ws), *args],
                                     cwd=str(ws), env=env)

    def client(params, name: str, mode: str = "legacy", **kw) -> Client:
        return Client(params, client_info=Implementation(name=name, version="1"), mode=mode, **kw)

    @test
    async def orch_ask_user_question_by_elicitation_in_both_eras():
        ws = h.workspace()
        asked: list = []

        async def on_elicit(context, params):
            asked.append(params)
            return ElicitResult(action="accept", content={"answer_1": "SQLite"})

        for mode in ("legacy", "auto"):
            async with client(server(ws), f"asker-{mode}", mode, elicitation_callback=on_elicit) as c:
                r = await c.call_tool("AskUserQuestion", QUESTION)
                assert not r.is_error, h.text(r)
                assert '"Which database should we use?"="SQLite"' in h.text(r), h.text(r)
        assert len(asked) == 2, asked
        q = asked[0]
        assert "Which database should we use?" in q.message, q.message
        choices = [o["const"] for o in q.requested_schema["properties"]["answer_1"]["oneOf"]]
        assert choices == ["Postgres", "SQLite"], choices
        # A client that cannot be asked: a clear "no user", never an answer.
        for mode in ("legacy", "auto"):
            async with client(server(ws), f"mute-{mode}", mode) as c:
                r = await c.call_tool("AskUserQuestion", QUESTION)
                assert r.is_error and "No user is available" in h.text(r), h.text(r)
                assert "SQLite" not in h.text(r) and "Postgres" not in h.text(r)

        # An answer that is not one of the options is refused, not passed on.
        async def liar(context, params):
            return ElicitResult(action="accept", content={"answer_1": "MongoDB"})

        async with client(server(ws), "liar", elicitation_callback=liar) as c:
            r = await c.call_tool("AskUserQuestion", QUESTION)
            assert r.is_error and "not one of its options" in h.text(r), h.text(r)

    @test
    async def orch_exit_plan_mode_by_elicitation():
        ws = h.workspace()

        async def approve(context, params):
            assert "edit hello.txt" in params.message, params.message
            return ElicitResult(action="accept", content={"answer_1": "Yes, approve each edit"})

        async with client(server(ws, "--mode", "plan", "--allow", "Write"), "planner",
                          elicitation_callback=approve) as c:
            w = await c.call_tool("Write", {"file_path": "new.txt", "content": "x"})
            assert w.is_error and h.meta(w).get("toolgate/code") == "denied", h.text(w)
            r = await c.call_tool("ExitPlanMode", {"plan": "1. edit hello.txt"})
            assert not r.is_error, h.text(r)
            w = await c.call_tool("Write", {"file_path": "new.txt", "content": "x"})
            assert not w.is_error, h.text(w)
        changes = [r.get("mode_change") for r in h.audit_records(ws) if r.get("tool") == "ExitPlanMode"]
        assert changes == [{"from": "plan", "to": "default"}], changes

    @test
    async def orch_agent_by_sampling_is_held_by_the_child_gate():
        ws = h.workspace()
        (ws / "important.txt").write_text("keep me\n")
        outside = Path(h.tempfile.mkdtemp(prefix="toolgate-outside-")) / "stolen.txt"
        seen: list = []

        async def on_sample(context, params):
            seen.append(params)
            if len(seen) == 1:
                return CreateMessageResultWithTools(role="assistant", model="fixture", stop_reason="toolUse", content=[
                    ToolUseContent(id="u1", name="Bash", input={"command": "rm -rf important.txt"}),
                    ToolUseContent(id="u2", name="Write", input={"file_path": str(outside), "content": "x"}),
                    ToolUseContent(id="u3", name="AskUserQuestion", input=QUESTION),
                    ToolUseContent(id="u4", name="Read", input={"file_path": "hello.txt"}),
                ])
            return CreateMessageResultWithTools(role="assistant", model="fixture", stop_reason="endTurn",
                                                content=[TextContent(text="SAMPLED FINAL")])

        params = server(ws, "--mode", "acceptEdits", "--allow", "Agent", "--allow", "Bash",
                        "--deny", "Bash(rm *)")
        async with client(params, "sampler", sampling_callback=on_sample,
                          sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability())) as c:
            r = await c.call_tool("Agent", {"description": "try", "prompt": "do as told"})
            assert not r.is_error, h.text(r)
            assert h.text(r) == "SAMPLED FINAL", h.text(r)
        assert (ws / "important.txt").read_text() == "keep me\n"
        assert not outside.exists()
        assert len(seen) == 2
        offered = {t.name for t in seen[0].tools or []}
        assert "Read" in offered and "AskUserQuestion" not in offered, offered
        results = {b.tool_use_id: b for m in seen[1].messages for b in
                   (m.content if isinstance(m.content, list) else [m.content])
                   if getattr(b, "type", None) == "tool_result"}
        assert set(results) == {"u1", "u2", "u3", "u4"}, results
        for refused in ("u1", "u2", "u3"):
            assert results[refused].is_error, results[refused]
        assert not results["u4"].is_error
        records = h.audit_records(ws)
        agent = [r for r in records if r.get("tool") == "Agent"]
        assert len(agent) == 1
        children = [(r["tool"], r.get("code")) for r in records if r.get("parent_call_id") == agent[0]["call_id"]]
        assert children == [("Bash", "denied"), ("Write", "invalid_request"),
                            ("AskUserQuestion", "denied"), ("Read", None)], children

        # A client without sampling and no endpoint: a structured error naming the fix.
        async with client(server(ws, "--allow", "Agent"), "no-sampling") as c:
            r = await c.call_tool("Agent", {"description": "x", "prompt": "x"})
            assert r.is_error and "toolgate.agent" in h.text(r), h.text(r)

    @test
    async def orch_skill_worktree_and_monitor_through_serve():
        ws = h.workspace()
        home = Path(h.tempfile.mkdtemp(prefix="toolgate-home-"))
        skill = home / ".claude" / "skills" / "greet"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Say hello\nallowed-tools: Read\n---\nSay hello.\n")
        subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
        subprocess.run(["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t", "add", "hello.txt"], check=True)
        subprocess.run(["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], check=True)
        cmd = "echo one; echo two"
        params = server(ws, "--allow", "Skill", "--allow", "EnterWorktree", "--allow", "ExitWorktree",
                        "--allow", f"Bash({cmd})", home=home)
        async with client(params, "tools") as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert "greet: Say hello" in tools["Skill"].description, tools["Skill"].description
            r = await c.call_tool("Skill", {"skill": "greet"})
            assert not r.is_error and "Say hello." in h.text(r), h.text(r)
            g = await c.call_tool("Grep", {"pattern": "hello"})
            assert g.is_error and "active skill `greet`" in h.text(g), h.text(g)
            await c.call_tool("Skill", {"skill": "nope"})  # a failed load leaves the scope as it is

            e = await c.call_tool("EnterWorktree", {"name": "../out"})
            assert e.is_error and h.meta(e).get("toolgate/code") == "invalid_request", h.text(e)
            # Skill scope still Read only: worktree calls are outside it until another skill.
            e = await c.call_tool("EnterWorktree", {"name": "feature"})
            assert e.is_error and "active skill" in h.text(e), h.text(e)

        async with client(params, "tools2") as c:
            e = await c.call_tool("EnterWorktree", {"name": "feature"})
            assert not e.is_error, h.text(e)
            assert (ws / ".claude" / "worktrees" / "feature" / "hello.txt").exists()
            x = await c.call_tool("ExitWorktree", {})
            assert not x.is_error, h.text(x)
            assert not (ws / ".claude" / "worktrees" / "feature").exists()

            m = await c.call_tool("Monitor", {"command": cmd, "timeout_ms": 5000})
            assert not m.is_error, h.text(m)
            lines = list((m.structured_content or {}).get("lines", []))
            task = (m.structured_content or {}).get("task_id")
            for _ in range(20):
                if lines == ["one", "two"]:
                    break
                n = await c.call_tool("Monitor", {"task_id": task, "timeout_ms": 5000})
                if n.is_error:
                    break
                lines += (n.structured_content or {}).get("lines", [])
            assert lines == ["one", "two"], lines
            d = await c.call_tool("Monitor", {"command": "rm -rf hello.txt"})
            assert d.is_error and h.meta(d).get("toolgate/code") == "denied", h.text(d)
        assert (ws / "hello.txt").exists()
        bash = [r for r in h.audit_records(ws) if r.get("tool") == "Bash"]
        assert bash and all(r.get("parent_call_id") for r in bash), bash
