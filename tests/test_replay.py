"""Record a run against the loopback server, then replay it with the server gone."""
import json
import re

import pytest

from agentkit.modes import get_llm
from agentkit.loopback import serve
from agentkit.native import NativeReActAgent
from agentkit.react import ReActAgent
from agentkit.cassette import CassetteMiss
from agentkit.recorder import Recorder
from agentkit.replay import ReplayLLM
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
    with pytest.raises(FileNotFoundError, match="Recorder"):
        ReplayLLM([])  # what AP_MODE=replay gets when no cassette ships
    with pytest.raises(CassetteMiss, match="empty"):
        ReplayLLM(cassette).think("hi")


# --- what the red team found, and a notebook's recording -------------------------------------------

import random
import threading

from agentkit.llm import CallRecord
from agentkit.cassette import CassetteError
from agentkit.replay import real_or_replay


class SharedClient:
    """A client with a ledger that two workers share: the first call lands in the ledger, then waits
    until the second call has landed too before it returns."""

    model = "shared"

    def __init__(self):
        self.calls, self.first_logged, self.second_logged = [], threading.Event(), threading.Event()

    def think(self, messages, temperature=0):
        prompt = messages[-1]["content"]
        reply = f"reply to {prompt}"
        self.calls.append(CallRecord(messages, reply, prompt_tokens=len(prompt) * 100, completion_tokens=1,
                                     temperature=temperature, latency_s=0))
        if prompt == "first":
            self.first_logged.set()
            assert self.second_logged.wait(5)
        else:
            self.second_logged.set()
        return reply


def test_each_call_keeps_its_own_usage_when_workers_share_a_client(tmp_path):
    client = SharedClient()
    recorder = Recorder(client, tmp_path / "c.jsonl")
    first = threading.Thread(target=recorder.think, args=("first",))
    first.start()
    assert client.first_logged.wait(5)
    recorder.think("second!")  # lands in the shared ledger after the first call's entry, before it returns
    first.join(5)

    lines = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    usage = {line["request"]["messages"][0]["content"]: line["usage"]["prompt_tokens"] for line in lines}
    assert usage == {"first": 500, "second!": 700}
    assert sorted(c.prompt_tokens for c in recorder.calls) == [500, 700]


def test_a_second_recorder_on_a_cassette_refuses_instead_of_erasing_it(tmp_path):
    cassette = tmp_path / "c.jsonl"
    Recorder(get_llm("fake"), cassette).think("Question: one")

    with pytest.raises(FileExistsError, match="append=True"):
        Recorder(get_llm("fake"), cassette)
    assert len(cassette.read_text().splitlines()) == 1  # still there
    Recorder(get_llm("fake"), cassette, append=True).think("Question: two")
    replay = ReplayLLM(cassette)
    assert len(replay.entries) == 2 and replay.think("Question: one") == get_llm("fake").think("Question: one")


GOOD = {"request": {"messages": [{"role": "user", "content": "hi"}], "tools": None, "tool_choice": None,
                    "temperature": 0.0}, "reply": "hello", "tool_calls": [],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "cached_tokens": 0}, "latency_s": 0.1, "model": "m"}


@pytest.mark.parametrize("field, value, says", [
    ("reply", 5, "reply is not text"),
    ("tool_calls", [{"id": "1", "name": "Search"}], "tool_calls"),
    ("tool_calls", [{"id": "1", "name": "Search", "arguments": {"q": 1}}], "tool_calls"),
    ("usage", {"prompt_tokens": "ten"}, "usage"),
    ("usage", [3, 1], "usage"),
    ("request", {"messages": "hi", "temperature": 0}, "messages"),
    ("request", {"messages": [{"role": "user", "content": "hi"}], "temperature": "0"}, "temperature"),
])
def test_a_malformed_cassette_line_is_refused_at_load_naming_its_line(tmp_path, field, value, says):
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, field: value}) + "\n")
    with pytest.raises(CassetteError, match=rf"c.jsonl, line 2: not a recorded call: .*{says}"):
        ReplayLLM(cassette)


def test_a_miss_against_long_recorded_requests_is_quick_and_short(tmp_path):
    words = "alpha beta gamma delta search page result year born answer".split()
    rng = random.Random(1)
    page = lambda: " ".join(rng.choice(words) for _ in range(200))  # noqa: E731
    recorder = Recorder(get_llm("fake"), tmp_path / "c.jsonl")
    for i in range(10):
        recorder.think([{"role": "user", "content": f"Question {i}\n{page()}"}])

    # How much work the miss does is counted in test_a_miss_compares_a_bounded_number_of_lines_...; here, its text.
    with pytest.raises(CassetteMiss) as miss:
        ReplayLLM(tmp_path / "c.jsonl").think([{"role": "user", "content": f"Question 3\n{page()}"}])
    assert "-[user] Question 3" not in str(miss.value) and "[user] Question 3" in str(miss.value)
    assert "more characters)" in str(miss.value) and "first difference is at character" in str(miss.value)
    assert len(str(miss.value)) < 2000


def test_a_completion_style_client_replays_with_what_it_really_sent(tmp_path):
    class Completion:  # renders the chat as one text, as agentkit.local.CompletionLLM does
        model = "completion"

        def __init__(self):
            self.calls = []

        def think(self, messages, temperature=0):
            sent = [{"role": "prompt", "content": "EXAMPLES\n" + messages[-1]["content"] + "\nThought:"}]
            self.calls.append(CallRecord(sent, "Thought: x", 9, 2, temperature, 0))
            return "Thought: x"

    recorder = Recorder(Completion(), tmp_path / "c.jsonl", name="few-shot")
    recorder.think("Question: one")
    replay = ReplayLLM(tmp_path / "c.jsonl", name="few-shot")
    assert replay.think("Question: one") == "Thought: x"
    assert replay.calls[0].prompt == recorder.calls[0].prompt == "EXAMPLES\nQuestion: one\nThought:"
    with pytest.raises(CassetteMiss, match=r"\[llm\] few-shot"):  # another LLM's calls on the same cassette
        ReplayLLM(tmp_path / "c.jsonl").think("Question: one")


def test_a_notebook_replays_its_cassette_unless_the_mode_is_live_and_a_miss_says_how_to_record(
        tmp_path, monkeypatch, capsys):
    import agentkit.replay as replay_module

    cassette = tmp_path / "nb.jsonl"
    monkeypatch.setattr(replay_module, "cassette_path", lambda notebook: cassette)
    monkeypatch.setenv("AP_RECORD", str(cassette))
    recording = real_or_replay("nb", live=lambda: get_llm("fake"), mode="local")
    live_reply = recording.think("Question: one")
    assert isinstance(recording, Recorder) and "recording the live model" in capsys.readouterr().out
    stamp = json.loads(cassette.read_text().splitlines()[0])["stamp"]
    assert stamp["notebook"] == "nb" and stamp["model"] == "scripted-stand-in" and "llama.cpp" in stamp["server"]
    assert stamp["command"] == "make record NB=notebooks/nb.ipynb"

    monkeypatch.delenv("AP_RECORD")
    started = []
    for mode in ("local", "real"):
        assert real_or_replay("nb", live=lambda: started.append(1) or get_llm("fake"), mode=mode) is not None
    assert len(started) == 2
    for mode in ("fake", "replay"):
        replay = real_or_replay("nb", live=lambda: started.append(1), mode=mode)
        assert isinstance(replay, ReplayLLM) and replay.think("Question: one") == live_reply
    assert len(started) == 2  # replay never starts the live model
    out = capsys.readouterr().out
    assert f"replaying scripted-stand-in as recorded on {stamp['recorded']}" in out
    with pytest.raises(CassetteMiss, match="notebook nb.*AP_MODE=local.*make record NB=notebooks/nb.ipynb"):
        replay.think("Question: two")


def test_the_shipped_cassette_of_03b_is_stamped_and_answers_both_of_its_models():
    from agentkit.cassette import cassette_path

    replay = ReplayLLM(cassette_path("03b_real_model"))
    assert {"notebook", "model", "server", "recorded", "command"} <= set(replay.stamp)
    assert replay.stamp["model"] == "SmolLM2-135M-Instruct" and "llama.cpp" in replay.stamp["server"]
    names = [entry["request"].get("llm", "") for entry in replay.entries]
    assert names.count("") == 3 and names.count("few-shot") == 3
    assert all("sent" in e for e in replay.entries if e["request"].get("llm")), "the few-shot text as sent"


def test_ap_mode_replay_answers_from_the_shipped_cassettes(monkeypatch):
    from agentkit.tools import default_executor

    monkeypatch.setenv("AP_MODE", "replay")
    llm = get_llm()
    assert isinstance(llm, ReplayLLM) and llm.model == "SmolLM2-135M-Instruct"
    agent = ReActAgent(llm, default_executor(), max_steps=3)
    agent.run(CHECKPOINT_QUESTION, verbose=False)  # 03b's chat run, as SmolLM2 answered it
    assert agent.stop_reason == "max_steps" and len(llm.calls) == 3
    assert llm.calls[0].reply.startswith("There are 365 days in 2024.")
    with pytest.raises(CassetteMiss, match="03b_real_model"):
        ReActAgent(llm, default_executor(), max_steps=4).run(CHECKPOINT_QUESTION, verbose=False)


# --- hostile cassettes: every line is read back or named, never a stray exception --------------

SEPARATORS = "\u2028\u2029\x85"  # line ends to str.splitlines(), characters JSON keeps as they are


def test_json_lines_end_at_newlines_only_and_name_a_line_that_is_not_utf8(tmp_path):
    from agentkit.text import json_lines

    path = tmp_path / "x.jsonl"
    path.write_bytes(f'{{"a": "1{SEPARATORS}2"}}\r\n\n  \n{{"b": 2}}\n'.encode())
    assert [(n, json.loads(line)) for n, line in json_lines(path)] == [(1, {"a": f"1{SEPARATORS}2"}), (4, {"b": 2})]
    path.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    with pytest.raises(ValueError, match=r"x.jsonl, line 2: not UTF-8 text \(invalid start byte\)"):
        json_lines(path)


def test_a_reply_and_a_prompt_with_line_separators_replay(tmp_path):
    recorder = Recorder(get_llm("fake"), tmp_path / "c.jsonl")
    prompt = f"Question: one{SEPARATORS}page text"
    recorder.llm.think = lambda messages, temperature=0: f"Final Answer: 42{SEPARATORS}"
    reply = recorder.think(prompt)
    assert len((tmp_path / "c.jsonl").read_text(encoding="utf-8").splitlines()) > 1  # what broke the old reader
    assert ReplayLLM(tmp_path / "c.jsonl").think(prompt) == reply == f"Final Answer: 42{SEPARATORS}"


def test_a_saved_ledger_and_a_task_file_with_line_separators_read_back(tmp_path):
    from agentkit.approval import Decision, GatedExecutor, Replayed, deny_side_effects
    from agentkit.tasks import load_tasks
    from agentkit.tools import ToolExecutor

    tools = ToolExecutor()
    tools.register("Send", lambda text: "sent", "send a message", effect="send")
    gate = GatedExecutor(tools, deny_side_effects)
    gate.run("Send", f"hi{SEPARATORS}there")
    assert Replayed(gate.save(tmp_path / "decisions.jsonl")).recorded == gate.ledger
    assert isinstance(gate.ledger[0], Decision) and gate.ledger[0].argument == f"hi{SEPARATORS}there"

    task = {"id": "a", "category": "lookup", "question": f"Who{SEPARATORS}?", "gold": "Ana", "checker": "exact",
            "key_path": ["Search[Ana]"]}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task, ensure_ascii=False) + "\n", encoding="utf-8")
    assert load_tasks(tmp_path / "tasks.jsonl")[0].question == f"Who{SEPARATORS}?"


def test_a_cassette_without_a_model_loads_and_replays(tmp_path):
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(json.dumps({k: v for k, v in GOOD.items() if k != "model"}) + "\n")
    replay = ReplayLLM(cassette)
    assert replay.model == "" and replay.think([{"role": "user", "content": "hi"}]) == "hello"
    assert replay.calls[0].model == ""


@pytest.mark.parametrize("line2, says", [
    (b'{"request": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    (json.dumps({**GOOD, "reply": "caf\u00e9"}, ensure_ascii=False).encode("latin-1"), "not UTF-8 text"),
    (json.dumps({**GOOD, "request": {**GOOD["request"], "messages": [{"role": "assistant", "content": None,
                                                                       "tool_calls": [{}]}]}}).encode(),
     "its request cannot be read back"),
    (json.dumps({**GOOD, "request": {**GOOD["request"], "tools": ["Search"]}}).encode(),
     "its request cannot be read back"),
])
def test_a_hostile_cassette_line_is_a_cassette_error_naming_its_line(tmp_path, line2, says):
    cassette = tmp_path / "c.jsonl"
    cassette.write_bytes(json.dumps(GOOD).encode() + b"\n" + line2 + b"\n")
    with pytest.raises(CassetteError, match=rf"c.jsonl, line 2: .*{says}"):
        ReplayLLM(cassette)


def test_a_miss_compares_a_bounded_number_of_lines_however_long_the_requests(tmp_path, monkeypatch):
    import difflib

    compared = []

    class Counting(difflib.SequenceMatcher):
        def set_seqs(self, a, b):
            compared.append(len(a) * len(b))
            super().set_seqs(a, b)

    monkeypatch.setattr(difflib, "SequenceMatcher", Counting)
    page = lambda n: "\n".join(f"{i % n} line" for i in range(3000))  # noqa: E731 (repeated lines: the worst case)
    recorder = Recorder(get_llm("fake"), tmp_path / "c.jsonl")
    recorder.think(f"Question: one\n{page(7)}")
    with pytest.raises(CassetteMiss) as miss:
        ReplayLLM(tmp_path / "c.jsonl").think(f"Question: one\nchanged\n{page(5)}")
    assert compared and max(compared) < 300 * 300  # of 3001 and 3002 lines: the whole texts were compared
    assert "\n@@ -1,201 +1,201 @@\n [user] Question: one\n-[user] 0 line\n" in str(miss.value)
    assert re.search(r"the diff compares the first \d+ lines of each where they differ", str(miss.value))
