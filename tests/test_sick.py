"""Sick stand-ins answer by prompt content, keep ledgers, and each shows its one disease."""
import pytest

from agentkit.react import ReActAgent
from agentkit.sick import (
    DISEASES, MAX_QUERY_CHARS, QUESTION, DirtyReaderLLM, InventorLLM, StuckLLM, WandererLLM,
    length_limited_search,
)


@pytest.mark.parametrize("name", list(DISEASES))
def test_same_prompt_same_reply_and_a_ledger(name):
    llm = DISEASES[name].make_llm()
    agent = ReActAgent(llm, DISEASES[name].make_tools(), 3)
    prompt = agent.messages(QUESTION)
    assert llm.think(prompt) == llm.think(prompt)
    assert len(llm.calls) == 2 and llm.calls[0].prompt_tokens > 0


def test_two_agents_sharing_one_stand_in_behave_alike():
    shared = WandererLLM()
    first, second = ReActAgent(shared, None, 3), ReActAgent(shared, None, 3)
    first.run(QUESTION, verbose=False)
    second.run(QUESTION, verbose=False)
    assert [c.argument for c in first.tools.log] == [c.argument for c in second.tools.log]
    assert len(shared.calls) == 6


def test_inventor_writes_a_long_fake_continuation():
    reply = InventorLLM().think(ReActAgent(InventorLLM(), None, 3).messages(QUESTION))
    assert reply.count("Observation:") > 20 and len(reply) > MAX_QUERY_CHARS


def test_length_limited_search_rejects_long_queries_only():
    assert length_limited_search("x" * 1501) == "error: Query is too long. Max query length is 1500 characters."
    assert "1955" in length_limited_search("x" * 1489 + " Steve Jobs")  # exactly 1500: accepted
    assert "1955" in length_limited_search("Steve Jobs")


def test_dirty_output_is_not_caught_by_the_repeat_fuse():
    counts = {}
    for fuse in (False, True):
        agent = ReActAgent(DirtyReaderLLM(), DISEASES["dirty tool output"].make_tools(), 6, repeat_fuse=fuse)
        agent.run(QUESTION, verbose=False)
        counts[fuse] = (len(agent.llm.calls), len(agent.tools.log), agent.stop_reason)
        assert all("<div" in c.output for c in agent.tools.log)
    assert counts[False] == counts[True] == (6, 6, "max_steps")


def test_stuck_repeats_whatever_it_is_shown():
    llm = StuckLLM()
    agent = ReActAgent(llm, None, 3)
    assert llm.think(agent.messages(QUESTION)) == llm.think(agent.messages(QUESTION, hints="try harder"))
