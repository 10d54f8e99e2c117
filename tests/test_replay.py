"""Record a run against the loopback server, then replay it with the server gone."""
import json

import pytest

from agentkit.modes import get_llm
from agentkit.loopback import serve
from agentkit.native import NativeReActAgent
from agentkit.react import ReActAgent
from agentkit.replay import CassetteMiss, Recorder, ReplayLLM
from agentkit.scripts.react import CHECKPOINT_QUESTION

SECRET = "sk-test-do-not-write-me"


def summary(agent):
    return [(s.action, s.argument, s.observation) for s in agent.trace], agent.answer, agent.stop_reason


@pytest.mark.parametrize("agent_class", [ReActAgent, NativeReActAgent])
def test_a_recorded_run_replays_offline_with_the_same_trace_and_usage(tmp_path, agent_class):
    cassette = tmp_path / "run.jsonl"
    with serve(latency_s=0.01) as server:
        recorder = Recorder(server.client(api_key=SECRET), cassette)
        live = agent_class(recorder, max_steps=4)
        live.run(CHECKPOINT_QUESTION, verbose=False)
    assert len(server.requests) == 3

    text = cassette.read_text()
    assert SECRET not in text and "127.0.0.1" not in text  # never the key, never where it came from
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 3 and all(line["model"] == "loopback" for line in lines)
    assert all(line["latency_s"] >= 0.01 for line in lines)
    assert [c.prompt_tokens for c in recorder.calls] == [line["usage"]["prompt_tokens"] for line in lines]
    assert [c.prompt_tokens for c in recorder.calls] == [c.prompt_tokens for c in recorder.llm.calls]  # the server's

    replay = ReplayLLM(cassette)
    again = agent_class(replay, max_steps=4)
    again.run(CHECKPOINT_QUESTION, verbose=False)  # the server is stopped: only the cassette can answer
    assert summary(again) == summary(live) and again.answer == "25185"
    assert [c.prompt_tokens for c in replay.calls] == [c.prompt_tokens for c in recorder.calls]
    assert [c.tool_calls for c in replay.calls] == [c.tool_calls for c in recorder.calls]
    assert all("replayed from run.jsonl" in c.note for c in replay.calls)


def test_replay_answers_by_content_not_by_order(tmp_path):
    cassette = tmp_path / "c.jsonl"
    recorder = Recorder(get_llm("fake"), cassette)
    replies = {q: recorder.think(q) for q in ("Question: one", "Question: two")}

    replay = ReplayLLM(cassette)
    assert replay.think("Question: two") == replies["Question: two"]
    assert replay.think("Question: one") == replies["Question: one"]
    assert replay.think("Question: two") == replies["Question: two"]  # as often as asked


def test_a_request_not_on_the_cassette_names_it_and_shows_the_closest(tmp_path):
    cassette = tmp_path / "run.jsonl"
    ReActAgent(Recorder(get_llm("fake"), cassette), max_steps=4).run(CHECKPOINT_QUESTION, verbose=False)
    changed = CHECKPOINT_QUESTION.replace("2024", "2030")

    with pytest.raises(CassetteMiss) as miss:
        ReActAgent(ReplayLLM(cassette), max_steps=4).run(changed, verbose=False)

    message = str(miss.value)
    assert str(cassette) in message and "3 recorded requests" in message
    assert f"-[user] Question: {CHECKPOINT_QUESTION}" in message  # the closest: the first recorded prompt
    assert f"+[user] Question: {changed}" in message


def test_temperature_and_tools_are_part_of_the_request(tmp_path):
    cassette = tmp_path / "c.jsonl"
    Recorder(get_llm("fake"), cassette).think("Question: one", temperature=0)
    replay = ReplayLLM(cassette)

    assert replay.think("Question: one", temperature=0.0) == replay.think("Question: one")
    with pytest.raises(CassetteMiss, match=r"\[temperature\] 0.7"):
        replay.think("Question: one", temperature=0.7)
    with pytest.raises(CassetteMiss, match=r"\[tools\] Search"):
        replay.act("Question: one", [{"type": "function", "function": {"name": "Search"}}])


def test_a_failed_call_writes_nothing_and_a_missing_cassette_says_how_to_make_one(tmp_path):
    class Down:
        def think(self, messages, temperature=0):
            raise ConnectionError("no route")

    cassette = tmp_path / "c.jsonl"
    with pytest.raises(ConnectionError):
        Recorder(Down(), cassette).think("hi")
    assert cassette.read_text() == ""
    with pytest.raises(FileNotFoundError, match="Recorder"):
        ReplayLLM(tmp_path / "absent.jsonl")
    with pytest.raises(CassetteMiss, match="empty"):
        ReplayLLM(cassette).think("hi")
