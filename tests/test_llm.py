"""The stand-in, the ledger and the factory. The real client is in test_real_client.py."""
import re
import threading

import pytest

from agentkit import tokens
from agentkit.llm import (
    NO_SCRIPT,
    MissingSettingError,
    Rule,
    ScriptedLLM,
    ledger_totals,
)
from agentkit.modes import get_llm


def test_answers_by_content_not_by_order():
    llm = ScriptedLLM([Rule("apples", "9"), Rule("Paris", "France")])
    assert llm.think("Where is Paris?") == "France"
    assert llm.think("How many apples?") == "9"
    assert llm.think("Where is Paris?") == "France"


def test_first_matching_rule_wins_and_add_goes_first_by_default():
    llm = ScriptedLLM([Rule("x", "old")])
    llm.add("x", "new")
    assert llm.think("x") == "new"
    llm.add("x", "last", first=False)
    assert [r.reply for r in llm.rules] == ["new", "old", "last"]


def test_regex_and_callable_matchers_and_callable_replies():
    llm = ScriptedLLM(
        [
            Rule(re.compile(r"Observation: (\d+)"), lambda p: "Finish[" + re.search(r"Observation: (\d+)", p)[1] + "]"),
            Rule(lambda p: p.count("Thought") > 1, "many thoughts"),
        ]
    )
    assert llm.think("Thought: a\nObservation: 42") == "Finish[42]"
    assert llm.think("Thought: a\nThought: b") == "many thoughts"


def test_rule_matches_anywhere_in_the_re_sent_history():
    llm = ScriptedLLM([Rule("secret=7", "seven")])
    messages = [
        {"role": "system", "content": "You are helpful. secret=7"},
        {"role": "user", "content": "what is it?"},
    ]
    assert llm.think(messages) == "seven"


def test_unscripted_prompt_gets_an_explicit_reply_visible_in_the_ledger():
    llm = ScriptedLLM([Rule("known", "yes")])
    reply = llm.think("something nobody scripted")
    assert reply.startswith(NO_SCRIPT)
    assert "something nobody scripted" in reply
    assert llm.calls[-1].note == "no script"
    assert llm.calls[-1].reply == reply


def test_ledger_records_what_was_sent_and_exact_token_counts():
    llm = ScriptedLLM([Rule("hi", "hello there")])
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    llm.think(messages, temperature=0.3)
    messages[1]["content"] = "mutated after the call"
    record = llm.calls[0]
    assert record.messages[1]["content"] == "hi"
    assert record.reply == "hello there"
    assert record.temperature == 0.3
    assert record.prompt_tokens == tokens.count_messages(record.messages)
    assert record.completion_tokens == tokens.count_tokens("hello there")
    assert record.latency_s >= 0
    assert ledger_totals(llm.calls) == {
        "calls": 1,
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "total_tokens": record.total_tokens,
    }


def test_shared_between_threads_every_caller_gets_its_own_answer():
    llm = ScriptedLLM([Rule(f"q{i}?", f"a{i}") for i in range(20)])
    results = {}

    def ask(i):
        results[i] = llm.think(f"q{i}?")

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: f"a{i}" for i in range(20)}
    assert len(llm.calls) == 20


def test_get_llm_default_is_the_stand_in_with_the_course_script(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AP_MODE", raising=False)
    llm = get_llm()
    assert isinstance(llm, ScriptedLLM)
    assert "Paris" in llm.think("What is the capital of France?")


def test_get_llm_script_replaces_the_default_rules(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AP_MODE", raising=False)
    llm = get_llm(script=[Rule("ping", "pong")])
    assert llm.think("ping") == "pong"
    assert llm.think("What is the capital of France?").startswith(NO_SCRIPT)


def test_get_llm_rejects_unknown_modes_listing_valid_ones(monkeypatch):
    monkeypatch.setenv("AP_MODE", "bogus")
    with pytest.raises(ValueError) as err:
        get_llm()
    for mode in ("fake", "real", "local"):
        assert mode in str(err.value)


def test_real_mode_without_key_fails_at_once_naming_the_variable(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LLM_API_KEY", raising=False)
    monkeypatch.setenv("AP_MODE", "real")
    with pytest.raises(MissingSettingError, match="LLM_API_KEY"):
        get_llm()
