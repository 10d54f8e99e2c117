"""Chapter 4: plan parsing, Plan-and-Solve cost and carry-over, Plan-and-Execute replanning."""
import json
import re

import pytest

from agentkit.llm import Rule, ScriptedLLM
from agentkit.modes import get_llm
from agentkit.plan import (
    EXECUTOR_ROLE, PLANNER_ROLE, REPLAN_HEADER, STEP_ROLE, Executor, PlanAndExecuteAgent,
    PlanAndSolveAgent, Planner, inject_failure, parse_plan, step_failure,
)
from agentkit.scripts.plan import APPLES_QUESTION, YEARS_PLAN, YEARS_QUESTION, current_step
from agentkit.tools import ToolCall, default_executor
from agentkit.widgets.plan import FAILING_STEPS, FAILURES, REPLAN_BUDGETS, show_injection


def counting_script(steps: list[str]) -> ScriptedLLM:
    """A stand-in whose planner returns `steps` and whose executor answers with a unique marker per step."""
    return ScriptedLLM([
        Rule(PLANNER_ROLE, json.dumps(steps)),
        Rule(EXECUTOR_ROLE, lambda p: f"RESULT<{current_step(p)}>"),
    ])


def replan_prompts(llm) -> list[str]:
    return [c.prompt for c in llm.calls if PLANNER_ROLE in c.prompt and REPLAN_HEADER in c.prompt]


# --- the plan parser ------------------------------------------------------------


def test_plain_list_of_strings():
    assert parse_plan('["a", " b "]') == ["a", "b"]


def test_list_of_step_task_objects():
    raw = '[{"step": 1, "task": "look up"}, {"step": 2, "task": "add"}]'
    assert parse_plan(raw) == ["look up", "add"]


def test_fenced_json_inside_chatter():
    raw = 'Sure! [my plan] is below.\n```json\n["first", "second"]\n```\nHope that helps.'
    assert parse_plan(raw) == ["first", "second"]


def test_fenced_list_wins_over_a_list_in_the_chatter():
    assert parse_plan('I see [2] steps:\n```json\n["first", "second"]\n```') == ["first", "second"]


def test_list_inside_prose_without_fence():
    assert parse_plan('Plan: ["only step"] -- done') == ["only step"]


def test_chatty_reply_without_list_raises_with_raw_text():
    raw = "I think we should first find the numbers and then add them up."
    with pytest.raises(ValueError, match="no JSON list") as error:
        parse_plan(raw)
    assert raw in str(error.value)


def test_empty_plan_raises_quoting_reply():
    with pytest.raises(ValueError, match="0 steps") as error:
        parse_plan("Nothing to do: []")
    assert "Nothing to do: []" in str(error.value)


def test_eleven_step_plan_raises_quoting_reply():
    raw = json.dumps([f"step {i}" for i in range(11)])
    with pytest.raises(ValueError, match="11 steps; a plan needs 1 to 10") as error:
        parse_plan(raw)
    assert raw[:50] in str(error.value)


def test_ten_steps_is_the_limit_and_the_limit_is_a_setting():
    assert len(parse_plan(json.dumps(["s"] * 10))) == 10
    with pytest.raises(ValueError, match="needs 1 to 3"):
        parse_plan(json.dumps(["s"] * 4), max_steps=3)


def test_long_reply_is_quoted_only_at_its_start():
    raw = "no list here " * 100
    with pytest.raises(ValueError) as error:
        parse_plan(raw)
    assert raw[:100] in str(error.value) and len(str(error.value)) < 400


def test_deeply_nested_brackets_raise_value_error_not_recursion_error():
    with pytest.raises(ValueError, match="no JSON list"):
        parse_plan("[" * 1200)


@pytest.mark.parametrize("raw", ['["ok", 3]', '["ok", ""]', '[{"step": 1}]'])
def test_malformed_step_raises(raw):
    with pytest.raises(ValueError, match="Planner reply"):
        parse_plan(raw)


def test_planner_raises_on_a_bad_reply_after_one_call():
    llm = ScriptedLLM([Rule(PLANNER_ROLE, "I would rather not plan today.")])
    with pytest.raises(ValueError, match="rather not plan"):
        Planner(llm).plan("anything")
    assert len(llm.calls) == 1


# --- Plan-and-Solve ---------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 10])
def test_cost_is_one_plus_n_calls(n):
    steps = [f"step number {i}" for i in range(1, n + 1)]
    llm = counting_script(steps)
    agent = PlanAndSolveAgent(llm)
    answer = agent.run("q", verbose=False)
    assert agent.plan == steps
    assert len(llm.calls) == 1 + len(agent.plan)
    assert answer == f"RESULT<step number {n}>"


def test_executor_prompt_carries_question_plan_and_every_earlier_result():
    steps = ["alpha", "beta", "gamma"]
    llm = counting_script(steps)
    PlanAndSolveAgent(llm).run("the original question", verbose=False)
    first, second, third = (c.prompt for c in llm.calls[1:])
    for prompt in (first, second, third):
        assert "the original question" in prompt and all(s in prompt for s in steps)
    assert "Results of earlier steps:\n(none)" in first
    assert llm.calls[2].reply in third  # step 2's result reaches step 3
    assert llm.calls[1].reply in third and llm.calls[1].reply in second
    assert third.rstrip().endswith("gamma")


class ForgetfulExecutor(Executor):
    """The executor with the carry-over line deleted: nothing crashes."""

    def prompt(self, question, plan, done, index):
        return super().prompt(question, plan, [], index)


def carried_over(llm) -> bool:
    """Does every executor prompt hold every earlier executor reply?"""
    executor_calls = [c for c in llm.calls if EXECUTOR_ROLE in c.prompt]
    return all(earlier.reply in later.prompt
               for i, later in enumerate(executor_calls) for earlier in executor_calls[:i])


def test_the_carry_over_check_catches_a_forgetful_executor():
    good, bad = counting_script(["a", "b", "c"]), counting_script(["a", "b", "c"])
    PlanAndSolveAgent(good).run("q", verbose=False)
    PlanAndSolveAgent(bad, executor_class=ForgetfulExecutor).run("q", verbose=False)
    assert carried_over(good)
    assert not carried_over(bad)


def test_apples_checkpoint_with_the_course_stand_in():
    llm = get_llm(mode="fake")
    agent = PlanAndSolveAgent(llm)
    answer = agent.run(APPLES_QUESTION, verbose=False)
    assert re.search(r"\b9 apples", answer)
    assert len(llm.calls) == 4 == 1 + len(agent.plan)


def test_forgetful_executor_gets_the_apples_silently_wrong():
    llm = get_llm(mode="fake")
    answer = PlanAndSolveAgent(llm, executor_class=ForgetfulExecutor).run(APPLES_QUESTION, verbose=False)
    assert "9 apples" not in answer and len(llm.calls) == 4


# --- Plan-and-Execute ---------------------------------------------------------------


def years_agent(trigger=None, failures=1, tool="Search", **settings):
    tools = default_executor()
    if trigger:
        inject_failure(tools, tool, trigger, failures)
    return PlanAndExecuteAgent(get_llm(mode="fake"), tools, **settings)


def test_each_step_is_a_react_run_with_real_tools():
    agent = years_agent()
    answer = agent.run(YEARS_QUESTION, verbose=False)
    assert "97 years" in answer and agent.stop_reason == "finished"
    assert [(c.tool, c.argument) for c in agent.tools.log] == [
        ("Search", "Ada Lovelace"), ("Search", "Alan Turing"), ("Calculate", "1912 - 1815")]
    assert all(STEP_ROLE in c.prompt for c in agent.llm.calls[1:])
    assert len(agent.llm.calls) == 1 + 2 * len(YEARS_PLAN) and agent.replans == 0


def test_one_transient_failure_is_retried_without_replanning():
    agent = years_agent("Alan Turing", failures=1)
    assert "97 years" in agent.run(YEARS_QUESTION, verbose=False)
    assert [c.ok for c in agent.tools.log].count(False) == 1
    assert agent.replans == 0 and replan_prompts(agent.llm) == []
    assert [(a.step_number, bool(a.failure)) for a in agent.attempts] == [
        (1, False), (2, True), (2, False), (3, False)]


def test_a_step_failing_twice_triggers_exactly_one_replan_with_context():
    agent = years_agent("Alan Turing", failures=2)
    answer = agent.run(YEARS_QUESTION, verbose=False)
    prompts = replan_prompts(agent.llm)
    assert len(prompts) == 1 and agent.replans == 1
    assert "Search for Ada Lovelace's birth year. -> Ada Lovelace was born in 1815." in prompts[0]
    assert "Failed step: Search for Alan Turing's birth year." in prompts[0]
    assert "injected failure #2" in prompts[0]  # the reason of the last failed try
    # Completed work is kept, not redone: Ada Lovelace is searched exactly once.
    assert [c.argument for c in agent.tools.log].count("Ada Lovelace") == 1
    assert agent.plans[1][0] == YEARS_PLAN[0] and agent.plans[1][1] != YEARS_PLAN[1]
    assert "97 years" in answer and agent.stop_reason == "finished"


def test_replan_budget_stops_the_run_and_the_answer_says_so():
    # "Ada" matches the first query and its detour: the replanned step fails too.
    agent = years_agent("Ada", failures=None, max_replans=1)
    answer = agent.run(YEARS_QUESTION, verbose=False)
    assert agent.stop_reason == "replan_budget" and agent.replans == 1
    assert len(replan_prompts(agent.llm)) == 1
    assert "replan budget (1) ran out" in answer
    assert len(agent.llm.calls) == 1 + 2 * 2 + 1 + 2 * 2  # plan, 2 tries, replan, 2 tries
    assert not any("Turing" in c.argument for c in agent.tools.log)


def test_zero_replan_budget_stops_at_the_first_failed_step():
    agent = years_agent("1912 - 1815", failures=None, tool="Calculate", max_replans=0)
    answer = agent.run(YEARS_QUESTION, verbose=False)
    assert agent.stop_reason == "replan_budget" and replan_prompts(agent.llm) == []
    assert "Alan Turing was born in 1912." in answer  # completed steps are reported, not lost


def test_step_failure_reasons():
    ok = ToolCall("Search", "x", "some text", True, 0.0)
    miss = ToolCall("Search", "x", "No information about 'x' in the knowledge base.", True, 0.0)
    broken = ToolCall("Search", "x", "error: boom", False, 0.0)
    assert step_failure("fine", [ok], "finished") == ""
    assert step_failure("fine", [broken, ok], "finished").startswith("tool error: boom")
    assert step_failure("fine", [miss], "finished").startswith("no information")
    assert step_failure("No information found", [], "finished").startswith("no information")
    assert step_failure("  ", [], "finished") == "the step returned an empty result"
    assert "cannot" in step_failure("I cannot do that.", [], "finished")
    assert "max_steps" in step_failure("Stopped", [ok], "max_steps")


def test_a_chatty_step_that_never_finishes_is_bounded_by_react_steps():
    llm = ScriptedLLM([Rule(PLANNER_ROLE, '["one step"]'), Rule(STEP_ROLE, "Let me think about it.")])
    agent = PlanAndExecuteAgent(llm, default_executor(), react_steps=2, max_attempts=2, max_replans=0)
    answer = agent.run("q", verbose=False)
    assert agent.stop_reason == "replan_budget" and "max_steps" in answer
    assert len(llm.calls) == 1 + 2 * 2


# --- the panel ----------------------------------------------------------------------


@pytest.mark.parametrize("failing_step", FAILING_STEPS)
@pytest.mark.parametrize("failures", list(FAILURES))
@pytest.mark.parametrize("max_replans", REPLAN_BUDGETS)
def test_panel_callback_over_its_whole_range(failing_step, failures, max_replans, capsys):
    text = show_injection(failing_step, failures, max_replans)
    assert capsys.readouterr().out.strip() == text
    calls = int(re.search(r"LLM calls: (\d+)", text).group(1))
    if failing_step == 0 or failures == "once":
        assert "97 years" in text and "replans: 0" in text
        assert calls == 7 + (2 if failing_step else 0)
    elif max_replans == 0:
        assert "replan budget (0) ran out" in text and "Plan after replan" not in text
    else:
        assert "97 years" in text and "Plan after replan 1:" in text and "replans: 1" in text


def test_panel_rejects_values_outside_its_range():
    with pytest.raises(ValueError, match="failing_step"):
        show_injection(4)
    with pytest.raises(ValueError, match="failures"):
        show_injection(1, "sometimes")


def test_flaky_tool_fails_only_on_its_trigger_and_only_so_often():
    tools = default_executor()
    inject_failure(tools, "Calculate", "1 + 1", failures=2)
    outputs = [tools.run("Calculate", arg) for arg in ("1 + 1", "2 + 2", "1 + 1", "1 + 1")]
    assert [c.ok for c in tools.log] == [False, True, False, True]
    assert outputs[1] == "4" and outputs[3] == "2" and "injected failure #2" in outputs[2]
