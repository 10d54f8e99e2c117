"""Chapter 12: the course's tools over MCP (stdio): round trip, annotations, and a server that fails.

Every server that imports the SDK costs about a second of CPU to start, so servers are shared (module fixtures) and
each test that ends one comes after the tests that use it: the course's server twice (one ends by a hang, one by a
crash), the poisoned one once (its last test closes it), the hostile one (no SDK, tests/hostile_mcp_server.py)
twice. No assertion reads the clock against a limit: what the client did is read from what it reports, and
`DEADLOCK_S` only turns a client that never returns into a failure instead of a hung test run."""
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
DEADLOCK_S = 120  # far beyond any limit under test (0.5 s to 5 s): only a client that never returns reaches it


def finishes(work):
    """`work()`'s result (or its exception), run on a thread; fails, rather than hangs the test run, if it never
    returns."""
    done = []

    def run():
        try:
            done.append((True, work()))
        except BaseException as e:  # noqa: BLE001 - raised again below, in the test's thread
            done.append((False, e))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLOCK_S)
    assert done, f"the client did not return within {DEADLOCK_S} s"
    returned, value = done[0]
    if not returned:
        raise value
    return value


def eventually(check, within: float = 30.0) -> bool:
    """Whether `check()` holds within `within` seconds (something another thread writes: a log line)."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def gone(pid: int, within: float = 30.0) -> bool:
    """The process has exited (and is not a zombie) within `within` seconds (a bound for a loaded machine)."""
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
    """Two fault-capable servers, one per way to end that needs a live server (hang, crash), started in parallel:
    each start costs an `import mcp` in a child process. (A clean close is tested on the poisoned server.)"""
    boxes = [MCPTools(course_server_command(tmp_path_factory.mktemp(f"store{i}"), faults=True)) for i in range(2)]
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


def test_server_store_is_the_world_store(servers):
    box = servers[0]
    store = box.command[box.command.index("--store") + 1]
    assert box.call("DeleteNotes", "Reading list").startswith("done: delete 1 note(s)")
    assert "Reading list" not in World(store).notes() and len(World(store).notes()) == 3


def test_hang_gives_an_observation_at_its_timeout_and_the_child_is_stopped(servers):
    box = servers[0]
    pid, start = box.pid, time.perf_counter()
    observation = finishes(lambda: box.call("Hang", "x", timeout=0.5))  # this call only: the others keep 5 s
    assert "did not answer Hang within 0.5 s" in observation  # written only when the SDK's read timed out
    assert time.perf_counter() - start >= 0.5  # it did wait the limit (a lower bound: no machine is too fast)
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
    with pytest.raises(RuntimeError, match="is not available: it did not start within 0.5 s"):
        finishes(silent.start)
    assert silent.pid is None or gone(silent.pid)
    dead = MCPTools([sys.executable, "-c", "import sys; sys.stderr.write('no such tool server'); sys.exit(2)"],
                    start_timeout=5.0)
    with pytest.raises(RuntimeError, match="no such tool server"):  # the log's tail is in the message
        dead.start()


def test_effect_of_missing_annotations_is_the_cautious_one():
    from mcp.types import ToolAnnotations

    assert effect_of(None) == "delete"
    assert effect_of(ToolAnnotations(read_only_hint=False)) == "delete"  # destructiveHint defaults to true
    assert effect_of(ToolAnnotations(read_only_hint=False, destructive_hint=False)) == "write"


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
    """Two hostile servers (no SDK: cheap), started in parallel; `.warned` holds what was logged meanwhile (a
    notebook shows it)."""
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


def test_a_chatty_servers_log_is_bounded_and_its_tail_is_read_alone(hostile):
    from agentkit.mcp_stdio import MAX_LOG_BYTES

    box = hostile[0]
    assert box.call("Chatter", str(3 * MAX_LOG_BYTES)).startswith("wrote")  # three times what the log keeps
    last = int(box.call("Chatter", "1000").split()[1])  # its lines are numbered anew: the last one is known
    # The reply comes on stdout, the log on stderr, which the client reads on its own: wait for the line.
    assert eventually(lambda: box.log_tail(1).startswith(f"chatter line {last}: "))
    assert box.log_path.stat().st_size <= MAX_LOG_BYTES and "log cut" in box.log_path.read_text()


def test_the_log_tail_reads_only_the_end_of_a_huge_log(tmp_path):
    import tracemalloc

    from agentkit.mcp_stdio import TAIL_BYTES

    box = MCPTools([sys.executable, "-c", "pass"])  # never started: only its log is read
    with box.log_path.open("wb") as log:  # 100 MB of holes (no disk), then a line: a log nobody bounded
        log.truncate(100_000_000)
        log.seek(0, 2)
        log.write(b"\nthe last line\n")
    tracemalloc.start()
    try:
        assert box.log_tail(1) == "the last line"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        box.close()
    assert peak < 8 * TAIL_BYTES  # the old log_tail read all of it: 150 MB took the client from 24 to 375 MB


def test_close_kills_what_the_server_started_and_not_the_pid_it_claims(hostile, victim):
    box = hostile[0]
    helper, log_folder = int(box.call("Helper", "x")), box.log_path.parent
    daemon, orphan = int(box.call("Daemon", "x")), int(box.call("Orphan", "x"))  # out of its process group
    assert box.pid != victim.pid and log_folder.is_dir()
    server = box.pid
    box.close(kill=True)
    assert victim.poll() is None  # the process the server named is untouched
    assert gone(server) and gone(helper) and not log_folder.exists()
    assert gone(daemon) and gone(orphan)  # a session of their own: the group's kill missed them
    assert "not running" in box.call("Echo", "hi")


def test_a_flood_ends_the_connection_after_a_bounded_read_and_the_helpers_die(hostile):
    from agentkit.mcp_stdio import CHUNK, MAX_MESSAGE_BYTES

    box = hostile[1]
    helper, daemon = int(box.call("Helper", "x")), int(box.call("Daemon", "x"))
    link = box._link
    observation = finishes(lambda: box.call("Flood", "x"))
    assert observation.startswith("error: the MCP server stopped while running Flood")
    assert "longer than 2,000,000 bytes" in observation
    assert link.bytes_read <= MAX_MESSAGE_BYTES + 2 * CHUNK  # of the 32 MB it was sent: the limit, and one chunk
    assert gone(helper) and gone(daemon) and not box.running and not box.log_path.parent.exists()


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


def test_close_stops_the_server_and_removes_its_log(poisoned):  # the last test of the poisoned server
    pid, log_folder = poisoned.pid, poisoned.log_path.parent
    assert poisoned.running and log_folder.is_dir()
    poisoned.close()
    assert gone(pid) and not poisoned.running and not log_folder.exists()
    assert "not running" in poisoned.call("ListNotes", "")
