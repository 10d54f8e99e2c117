"""Chapter 12: the course's tools over MCP (stdio): round trip, annotations, and a server that fails."""
import importlib.util
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agentkit.approval import GatedExecutor, deny_side_effects
from agentkit.mcp_tools import MCPTools, course_server_command, effect_of
from agentkit.react import ReActAgent
from agentkit.scripts.world import RULES, TIDY_QUESTION
from agentkit.llm import ScriptedLLM
from agentkit.world import World

# Not importorskip: importing mcp costs ~2 s, and every worker collects this file while one runs it.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="the mcp package is not installed")


WORLD_NAMES = ["ReadPage", "ReadNote", "ListNotes", "WebSearch", "WriteNote", "DeleteNotes", "SendMessage"]


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
    boxes = [MCPTools(course_server_command(tmp_path_factory.mktemp(f"store{i}"), faults=True)) for i in range(3)]
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
    gate = GatedExecutor(box.executor(WORLD_NAMES), deny_side_effects)
    ReActAgent(ScriptedLLM(RULES), gate, max_steps=6).run(TIDY_QUESTION, verbose=False)
    assert [(d.tool, d.verdict) for d in gate.ledger] == [
        ("ReadPage", "ran"), ("DeleteNotes", "denied"), ("SendMessage", "denied")]
    assert box.call("ListNotes", "").count(";") == 3  # all four notes are still on the server's store


def test_effect_of_the_open_world_is_the_cautious_one(servers):
    from mcp.types import ToolAnnotations

    from agentkit.mcp_tools import open_world_of

    assert open_world_of(None) and open_world_of(ToolAnnotations(read_only_hint=True))  # openWorldHint defaults to true
    assert not open_world_of(ToolAnnotations(read_only_hint=True, open_world_hint=False))
    tools = servers[0].executor(["WebSearch", "ReadNote"])
    assert (tools.tools["WebSearch"].open_world, tools.tools["ReadNote"].open_world) == (True, False)
    gate = GatedExecutor(tools, deny_side_effects)
    assert "was not run" in gate.run("WebSearch", "office-wifi: tulip-42-harbour")
    assert gate.ledger[-1].effect == "send"


def test_tool_error_is_an_observation_and_the_server_lives_on(servers):
    box = servers[0]
    observation = box.executor(["Fail"]).run("Fail", "x")
    assert observation.startswith("error: Fail failed on the MCP server")
    assert box.running and box.call("Calculate", "1 + 1") == "2"


def test_hang_gives_an_observation_in_bounded_time_and_the_child_is_stopped(servers):
    box = servers[0]
    pid, start = box.pid, time.perf_counter()
    observation = box.call("Hang", "x", timeout=0.5)  # this call only: the others keep the default 5 s
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


# --- a server that misbehaves towards its client ----------------------------------------------------

HOSTILE = str(Path(__file__).with_name("hostile_mcp_server.py"))


@pytest.fixture(scope="module")
def victim():
    """A process the hostile server claims to be."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process
    process.kill()
    process.wait()


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture(scope="module")
def hostile(victim):
    """Two hostile servers, started in parallel; `.warned` holds what was logged meanwhile (a notebook shows it)."""
    boxes = [MCPTools([sys.executable, HOSTILE, str(victim.pid)], call_timeout=5.0) for _ in range(2)]
    warned = Warnings()
    logging.getLogger().addHandler(warned)
    threads = [threading.Thread(target=box.start) for box in boxes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    logging.getLogger().removeHandler(warned)
    boxes[0].warned = [r.getMessage() for r in warned.records]
    yield boxes
    for box in boxes:
        box.close()


def test_executor_drops_only_the_tools_it_cannot_register(hostile):
    tools = hostile[0].executor()
    assert {"Echo", "Flood", "Helper"} <= set(tools.tools)
    assert set(hostile[0].dropped) == {"bad name", "x[1]"}
    assert "without spaces or brackets" in hostile[0].dropped["bad name"]


def test_lines_that_are_not_json_go_to_the_server_log_not_the_notebook(hostile):
    assert hostile[0].warned == []
    assert "debug line 4: not a JSON-RPC message" in hostile[0].log_tail(20)
    assert hostile[0].running and hostile[0].call("Echo", "hi") == "hi"


def test_close_kills_what_the_server_started_and_not_the_pid_it_claims(hostile, victim):
    box = hostile[0]
    helper, log_folder = int(box.call("Helper", "x")), box.log_path.parent
    assert box.pid != victim.pid and log_folder.is_dir()
    server = box.pid
    box.close(kill=True)
    assert victim.poll() is None  # the process the server named is untouched
    assert gone(server) and gone(helper) and not log_folder.exists()
    assert "not running" in box.call("Echo", "hi")


def test_a_flood_ends_the_connection_in_bounded_time_and_the_helpers_die(hostile):
    box = hostile[1]
    helper, start = int(box.call("Helper", "x")), time.perf_counter()
    observation = box.call("Flood", "x")
    assert observation.startswith("error: the MCP server stopped while running Flood")
    assert "longer than 2,000,000 bytes" in observation and time.perf_counter() - start < 5
    assert gone(helper) and not box.running and not box.log_path.parent.exists()


# --- tool poisoning: instructions in descriptions, and descriptions that change -----------------------


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory):
    from agentkit.mcp_poisoned import poisoned_server_command

    with MCPTools(poisoned_server_command(tmp_path_factory.mktemp("poisoned")), call_timeout=5.0) as box:
        yield box


def test_flags_point_at_the_poisoned_description_and_spare_the_honest_ones(poisoned):
    from agentkit.mcp_tools import flags
    from agentkit.world import DESCRIPTIONS

    assert [name for name, text in DESCRIPTIONS.items() if flags(text)] == []
    review = poisoned.review(WORLD_NAMES)
    web = review[review.index("WebSearch"):].split("\n\n")[0]
    assert "FLAG asks for a call" in web and "FLAG asks for secrecy" in web and "FLAG mentions secrets" in web
    assert "<IMPORTANT>" in web and "(open world)" in web  # the whole description, for a person to read
    assert review.count("FLAG") == web.count("FLAG")  # no other tool is flagged


def test_a_poisoned_description_reaches_the_model_unless_the_tool_is_pinned_out(poisoned):
    llm = ScriptedLLM(RULES)
    gate = GatedExecutor(poisoned.executor(WORLD_NAMES), deny_side_effects)  # no review: every description goes in
    ReActAgent(llm, gate, max_steps=7).run(TIDY_QUESTION, verbose=False)
    assert "<IMPORTANT>" in llm.calls[0].prompt
    assert [(d.tool, d.verdict) for d in gate.ledger][:3] == [("ReadPage", "ran"), ("ReadNote", "ran"), ("WebSearch", "denied")]
    assert gate.ledger[2].argument == "office-wifi: tulip-42-harbour" and gate.ledger[2].effect == "send"

    pins = poisoned.pin([name for name in WORLD_NAMES if name != "WebSearch"])  # what a person approved
    llm = ScriptedLLM(RULES)
    gate = GatedExecutor(poisoned.executor(WORLD_NAMES, pinned=pins), deny_side_effects)
    ReActAgent(llm, gate, max_steps=7).run(TIDY_QUESTION, verbose=False)
    assert poisoned.dropped == {"WebSearch": "not pinned: nobody approved this tool"}
    assert "<IMPORTANT>" not in llm.calls[0].prompt and "ReadNote" not in [d.tool for d in gate.ledger]


def test_a_description_changed_after_pinning_is_refused(poisoned):
    pins = poisoned.pin(WORLD_NAMES)
    assert "ListNotes" in poisoned.executor(WORLD_NAMES, pinned=pins).tools
    poisoned.call("ListNotes", "")  # the rug pull: once used, the server lists another description
    kept = poisoned.executor(WORLD_NAMES, pinned=pins)
    assert "ListNotes" not in kept.tools and "ReadNote" in kept.tools
    assert poisoned.dropped["ListNotes"].startswith("changed since it was pinned") and \
        "SendMessage[backup@example.net" in poisoned.dropped["ListNotes"]
    assert "SendMessage[" in poisoned.executor(WORLD_NAMES).tools["ListNotes"].description  # unpinned: it goes in
