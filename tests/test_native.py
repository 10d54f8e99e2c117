"""Native tool calling: schemas from the registry, every bad call fed back, the same fuses and ledger."""
import json

import pytest

from agentkit.llm import AssistantTurn, FunctionCall, Rule, ScriptedLLM
from agentkit.modes import get_llm
from agentkit.channels import channel_totals, compare_channels
from agentkit.native import NOT_RUN, NativeReActAgent, format_failures, read_turn, tool_schemas
from agentkit.react import ReActAgent
from agentkit.scripts.native import DISEASES, TASKS, sick_tool_caller
from agentkit.scripts.react import CHECKPOINT_QUESTION
from agentkit.tools import default_executor

SCHEMAS = tool_schemas(default_executor())


def turn(name, arguments):
    return AssistantTurn("", [FunctionCall("c1", name, arguments)])


def test_schemas_come_from_the_registry_plus_finish():
    tools = default_executor()
    tools.register("Shout", str.upper, "say it louder")
    schemas = tool_schemas(tools)

    assert [s["function"]["name"] for s in schemas] == ["Search", "Calculate", "Shout", "Finish"]
    shout = schemas[2]["function"]
    assert shout["description"] == "say it louder"
    assert shout["parameters"]["required"] == ["input"] and shout["parameters"]["additionalProperties"] is False
    assert schemas[3]["function"]["parameters"]["required"] == ["answer"]
    json.dumps(schemas)  # what goes over the wire must be plain JSON


@pytest.mark.parametrize("name, arguments, expected", [
    ("Search", '{"input": "Ada"}', ("Search", "Ada", "")),
    ("search", '{"input": "Ada"}', ("Search", "Ada", "")),  # names match up to case, as in the text protocol
    ("Finish", '{"answer": "42"}', ("Finish", "42", "")),
    ("WebSearch", '{"input": "Ada"}', ("", "", "unknown tool 'WebSearch'. Known tools: Search, Calculate, Finish")),
    ("Search", "{'input': 'Ada'}", ("", "", "not JSON")),
    ("Search", "", ("", "", "must be a JSON object, got NoneType")),
    ("Search", '["Ada"]', ("", "", "must be a JSON object, got list")),
    ("Search", '{"query": "Ada"}', ("", "", "required field 'input' is missing")),
    ("Search", '{"input": 1955}', ("", "", "'input' must be a string, got int 1955")),
    ("Search", '{"input": "Ada", "limit": "3"}', ("", "", "'limit' is not in the schema")),
])
def test_every_call_is_checked_against_its_schema(name, arguments, expected):
    parsed = read_turn(turn(name, arguments), SCHEMAS)
    action, argument, problem = expected
    assert (parsed.action, parsed.argument) == (action, argument)
    if problem:
        assert problem in parsed.problem and parsed.problem.startswith("error:")
    else:
        assert parsed.problem == ""


def test_a_reply_without_a_call_keeps_its_text_as_the_thought_and_asks_for_a_call():
    parsed = read_turn(AssistantTurn("I think it is 1955."), SCHEMAS)
    assert parsed.action == "" and parsed.thought == "I think it is 1955."
    assert "called no tool" in parsed.problem and "Search, Calculate, Finish" in parsed.problem


@pytest.mark.parametrize("disease", [d for d in DISEASES if d not in ("none", "three calls at once")])
def test_a_bad_call_is_fed_back_like_a_format_error_and_the_run_recovers(disease):
    llm = sick_tool_caller(disease)
    agent = NativeReActAgent(llm, max_steps=5)

    assert agent.run(CHECKPOINT_QUESTION, verbose=False) == "25185"
    first = agent.trace[0]
    assert first.action == "" and not first.executed
    assert [t.tool for t in agent.run_tool_calls] == ["Search", "Calculate"]  # the bad call never ran
    second_prompt = llm.calls[1].messages
    fed_back = second_prompt[-1]
    assert fed_back["content"] == first.observation
    if DISEASES[disease].tool_calls:  # the API wants the result under the same call id
        assert fed_back["role"] == "tool" and fed_back["tool_call_id"] == DISEASES[disease].tool_calls[0].id
    else:
        assert fed_back["role"] == "user"
    assert format_failures(llm.calls, "native") == [True, False, False, False]


def test_a_model_that_never_learns_is_stopped_by_max_steps():
    llm = sick_tool_caller("arguments not JSON", recovers=False)
    agent = NativeReActAgent(llm, max_steps=3)
    agent.run(CHECKPOINT_QUESTION, verbose=False)

    assert agent.stop_reason == "max_steps"
    assert len(llm.calls) == 3 and agent.run_tool_calls == []


def test_the_repeat_fuse_works_on_tool_calls_and_extra_calls_are_not_run():
    llm = sick_tool_caller("three calls at once", recovers=False)
    agent = NativeReActAgent(llm, max_steps=5)
    agent.run(CHECKPOINT_QUESTION, verbose=False)

    assert agent.stop_reason == "repeat_fuse"
    assert len(llm.calls) == 2 and [t.tool for t in agent.run_tool_calls] == ["Search"]
    history = llm.calls[1].messages
    sent = history[2]["tool_calls"]
    results = [m for m in history if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == [c["id"] for c in sent]  # every call id answered
    assert [r["content"] for r in results[1:]] == [NOT_RUN, NOT_RUN]


def test_the_fallback_offers_only_finish():
    llm = sick_tool_caller("no tool call", recovers=False)
    agent = NativeReActAgent(llm, max_steps=2, finish_fallback=True)
    answer = agent.run(CHECKPOINT_QUESTION, verbose=False)

    assert agent.unverified and answer.startswith("Unknown")
    assert len(llm.calls) == 3
    assert "Only the Finish tool is left" in llm.calls[-1].messages[0]["content"]
    assert llm.calls[-1].tool_calls[0].name == "Finish"


def test_steps_left_reaches_the_native_prompt():
    llm = get_llm("fake")
    NativeReActAgent(llm, max_steps=3, show_steps_left=True).run(CHECKPOINT_QUESTION, verbose=False)
    assert llm.calls[0].messages[-1]["content"] == "Steps left (including this one): 3."


def test_an_llm_without_act_is_refused_with_a_clear_error():
    class ThinkOnly:
        def think(self, messages, temperature=0):
            return "Action: Finish[x]"

    with pytest.raises(TypeError, match="has no act"):
        NativeReActAgent(ThinkOnly())
    assert ReActAgent(ThinkOnly()).run("q", verbose=False) == "x"  # the text protocol takes any LLM


def test_text_replies_count_as_format_failures_only_without_a_known_action():
    llm = ScriptedLLM([Rule("q1", "Thought: x\nAction: Search[Ada]"), Rule("q2", "I just know it."),
                       Rule("q3", "Action: ToolName[input]"), Rule("q4", "Action: Finish[3]")])
    for prompt in ("q1", "q2", "q3", "q4"):
        llm.think(prompt)
    assert format_failures(llm.calls, "text") == [False, True, True, False]
    with pytest.raises(ValueError, match="channel"):
        format_failures(llm.calls, "smoke signals")


def test_both_channels_answer_the_same_questions_with_the_stand_in():
    llm = get_llm("fake")
    rows = compare_channels(llm, [t.question for t in TASKS], gold={t.question: t.answer for t in TASKS})
    totals = channel_totals(rows)

    same = {"runs": 4, "LLM calls": 11, "format failures": 0, "finished": 4, "correct": 4}
    assert totals["text"] == {**same, "replies with tool calls": 0}
    assert totals["native"] == {**same, "replies with tool calls": 11}
    native_calls = [c for c in llm.calls if c.tool_calls]
    assert len(native_calls) == 11 and len(llm.calls) == 22


def test_a_runtime_intervention_reaches_the_next_native_prompt_and_context_is_refused():
    class Nudge:
        """A runtime that hints after every step and never stops the run."""

        def begin(self, question):
            pass

        def review(self, agent, question, step):
            step.intervention = "Runtime hint: you are doing fine."
            return ""

    llm = get_llm("fake")
    agent = NativeReActAgent(llm, max_steps=4, runtime=Nudge())
    assert agent.run(CHECKPOINT_QUESTION, verbose=False) == "25185"
    assert llm.calls[1].messages[-1]["content"].endswith("\nRuntime hint: you are doing fine.")
    with pytest.raises(ValueError, match="context"):
        NativeReActAgent(llm, context=object())
