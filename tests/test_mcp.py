"""Chapter 12: the course's tools over MCP (stdio): round trip, annotations, and a server that fails."""
import importlib.util
import os
import sys
import threading
import time

import pytest

from agentkit.approval import GatedExecutor, deny_side_effects
from agentkit.mcp_tools import MCPTools, course_server_command, effect_of
from agentkit.react import ReActAgent
from agentkit.scripts.world import RULES, TIDY_QUESTION
from agentkit.llm import ScriptedLLM
from agentkit.world import World

# Not importorskip: importing mcp costs ~2 s, and every worker collects this file while one runs it.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="the mcp package is not installed")


def gone(pid: int, within: float = 5.0) -> bool:
    """The process has exited (and is not a zombie) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # Linux: a zombie waits for its parent to reap it; it runs nothing
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[1].startswith("Z"):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """Three fault-capable servers, one per way to end (hang, crash, close), started in parallel:
    each start costs an `import mcp` in a child process."""
    boxes = [MCPTools(course_server_command(tmp_path_factory.mktemp(f"store{i}"), faults=True), call_timeout=0.5)
             for i in range(3)]
    threads = [threading.Thread(target=box.start) for box in boxes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    yield boxes
    for box in boxes:
        box.close()


def test_round_trip_and_annotations_feed_the_gate(servers):
    box = servers[0]
    effects = {t.name: effect_of(t.annotations) for t in box.tools}
    assert effects["ReadNote"] == effects["Search"] == "read"
    assert (effects["WriteNote"], effects["DeleteNotes"], effects["SendMessage"]) == ("write", "delete", "send")
    assert box.call("Calculate", "(2024 - 1955) * 365") == "25185"
    world_names = ["ReadPage", "ReadNote", "ListNotes", "WebSearch", "WriteNote", "DeleteNotes", "SendMessage"]
    gate = GatedExecutor(box.executor(world_names), deny_side_effects)
    ReActAgent(ScriptedLLM(RULES), gate, max_steps=6).run(TIDY_QUESTION, verbose=False)
    assert [(d.tool, d.verdict) for d in gate.ledger] == [
        ("ReadPage", "ran"), ("DeleteNotes", "denied"), ("SendMessage", "denied")]
    assert box.call("ListNotes", "").count(";") == 3  # all four notes are still on the server's store


def test_tool_error_is_an_observation_and_the_server_lives_on(servers):
    box = servers[0]
    observation = box.executor(["Fail"]).run("Fail", "x")
    assert observation.startswith("error: Fail failed on the MCP server")
    assert box.running and box.call("Calculate", "1 + 1") == "2"


def test_hang_gives_an_observation_in_bounded_time_and_the_child_is_stopped(servers):
    box = servers[0]
    pid, start = box.pid, time.perf_counter()
    observation = box.call("Hang", "x")
    waited = time.perf_counter() - start
    assert "did not answer Hang within 0.5 s" in observation and waited < 4
    assert not box.running and gone(pid)
    assert box.call("Calculate", "1 + 1").startswith("error: the MCP server is not running")


def test_crash_gives_an_observation_and_the_child_is_gone(servers):
    box = servers[1]
    pid = box.pid
    observation = box.call("Crash", "x")
    assert observation.startswith("error: the MCP server stopped while running Crash")
    assert gone(pid) and not box.running
    assert "not running" in box.call("Calculate", "1 + 1")


def test_server_that_never_answers_or_exits_fails_start_clearly():
    silent = MCPTools([sys.executable, "-c", "import sys; sys.stdin.read()"], start_timeout=0.5)  # reads, never answers
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="is not available"):
        silent.start()
    assert time.perf_counter() - start < 5
    dead = MCPTools([sys.executable, "-c", "import sys; sys.stderr.write('no such tool server'); sys.exit(2)"],
                    start_timeout=5.0)
    with pytest.raises(RuntimeError, match="no such tool server"):  # the log's tail is in the message
        dead.start()


def test_effect_of_missing_annotations_is_the_cautious_one():
    from mcp.types import ToolAnnotations

    assert effect_of(None) == "delete"
    assert effect_of(ToolAnnotations(read_only_hint=False)) == "delete"  # destructiveHint defaults to true
    assert effect_of(ToolAnnotations(read_only_hint=False, destructive_hint=False)) == "write"


def test_server_store_is_the_world_store_and_close_stops_the_child(servers):
    box = servers[2]
    store, pid = box.command[box.command.index("--store") + 1], box.pid
    assert box.call("DeleteNotes", "Reading list").startswith("done: delete 1 note(s)")
    assert "Reading list" not in World(store).notes() and len(World(store).notes()) == 3
    box.close()
    assert gone(pid) and not box.running
