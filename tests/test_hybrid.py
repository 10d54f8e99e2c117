"""Act-only drops thoughts; the hybrid replans at once from what is done; Reflection + ReAct carries facts."""
import json
import re

import pytest

import agentkit.hybrid as hybrid
from agentkit.act import ACT_MARKER, ActOnlyAgent
from agentkit.hybrid import (
    FACTS_HEADER, PLANNER_MARKER, REPLAN_MARKER, REVIEW_MARKER, STEP_MARKER, HybridAgent, ReflectiveReActAgent,
)
from agentkit.llm import Rule, ScriptedLLM
from agentkit.plan import inject_failure
from agentkit.react import FALLBACK_MARKER, REACT_MARKER, ReActAgent
from agentkit.runtime import CHECKPOINT_MARKER, Runtime
from agentkit.tools import default_executor

# --- Act-only ------------------------------------------------------------------


def test_act_only_asks_for_actions_only_and_never_resends_a_thought():
    llm = ScriptedLLM([Rule(lambda p: "Observation:" in p, "Action: Finish[1955]"),
                       Rule(ACT_MARKER, "Thought: SECRET PLAN\nAction: Search[Steve Jobs]")])
    agent = ActOnlyAgent(llm, default_executor(), max_steps=3)
    assert agent.run("When was Steve Jobs born?", verbose=False) == "1955"
    first, second = (c.prompt for c in llm.calls)
    assert first.startswith(ACT_MARKER) and REACT_MARKER not in first and "Thought:" not in first
    assert "Action: Search[Steve Jobs]\nObservation: Steve Jobs" in second and "SECRET PLAN" not in second
    assert agent.dropped_thoughts == 1 and agent.trace[0].thought == ""


def test_act_only_on_a_bridge_searches_the_question_until_the_fuse():
    question = "In what year was the person born who co-founded Apple with Steve Wozniak?"
    agent = ActOnlyAgent(max_steps=5)
    agent.run(question, verbose=False)
    assert [c.argument for c in agent.tools.log] == ["Steve Wozniak", question.rstrip("?")]
    assert agent.stop_reason == "repeat_fuse" and len(agent.llm.calls) == 3


# --- the hybrid ------------------------------------------------------------------


def current(prompt):
    return re.findall(r"Current step \(\d+ of \d+\): (.*)", prompt)[-1]


def hybrid_llm(plan, replan, step_replies):
    """Planner, replanner and one ReAct reply per sub-goal (a function of the prompt's history)."""
    return ScriptedLLM([
        Rule(lambda p: REPLAN_MARKER in p, json.dumps(replan)),
        Rule(PLANNER_MARKER, json.dumps(plan)),
        Rule(STEP_MARKER, lambda p: step_replies[current(p)](p)),
    ])


def search_then_finish(query):
    return lambda p: (f"Action: Finish[{p.rsplit('Observation: ', 1)[1][:40]}]" if "Observation:" in p
                      else f"Action: Search[{query}]")


def test_a_failed_sub_goal_is_replanned_at_once_from_what_is_done():
    replies = {"Find Ada Lovelace": search_then_finish("Ada Lovelace"),
               "Find Alan Turing": search_then_finish("Alan Turing"),
               "Find Turing another way": search_then_finish("Turing")}
    tools = default_executor()
    inject_failure(tools, "Search", "Alan Turing", failures=None)
    agent = HybridAgent(hybrid_llm(["Find Ada Lovelace", "Find Alan Turing"], ["Find Turing another way"], replies),
                        tools)
    answer = agent.run("q", verbose=False)
    assert agent.stop_reason == "finished" and answer.startswith("Alan Turing (June 23, 1912")
    assert agent.plans == [["Find Ada Lovelace", "Find Alan Turing"], ["Find Ada Lovelace", "Find Turing another way"]]
    assert [a.step for a in agent.attempts] == ["Find Ada Lovelace", "Find Alan Turing", "Find Turing another way"]
    replan = next(c.prompt for c in agent.llm.calls if REPLAN_MARKER in c.prompt)
    assert "1. Find Ada Lovelace -> Ada Lovelace (December 10, 1815" in replan  # the completed work, with its result
    assert "Failed sub-goal: Find Alan Turing" in replan and "Why it failed: tool error:" in replan
    assert [c.argument for c in tools.log] == ["Ada Lovelace", "Alan Turing", "Turing"]  # no blind retry


def test_the_replan_budget_ends_the_run_and_says_why():
    replies = {"Find Alan Turing": search_then_finish("Alan Turing")}
    tools = default_executor()
    inject_failure(tools, "Search", "Alan Turing", failures=None)
    agent = HybridAgent(hybrid_llm(["Find Alan Turing"], ["Find Alan Turing"], replies), tools, max_replans=1)
    answer = agent.run("q", verbose=False)
    assert agent.stop_reason == "replan_budget" and agent.replans == 1 and len(agent.attempts) == 2
    assert "sub-goal 1 ('Find Alan Turing') failed (tool error:" in answer


def test_a_sub_goal_stopped_by_its_step_budget_counts_as_failed():
    replies = {"Loop": lambda p: f"Action: Calculate[{p.count('Observation:')} + 1]", "Give up": lambda p:
               "Action: Finish[Unknown: no way]"}
    agent = HybridAgent(hybrid_llm(["Loop"], ["Give up"], replies), default_executor(), react_steps=3)
    assert agent.run("q", verbose=False) == "Unknown: no way"
    assert agent.attempts[0].failure == "the step stopped without finishing (max_steps)"
    assert agent.steps == 3 + 1


def test_each_sub_goal_gets_a_fresh_runtime_from_the_factory(monkeypatch):
    """The wiring for chapter 08's runtime: one new runtime per inner ReAct, passed as runtime=."""
    received = []

    class RecordingReAct(ReActAgent):
        def __init__(self, *args, runtime=None, **kwargs):
            received.append(runtime)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(hybrid, "ReActAgent", RecordingReAct)
    made = []
    replies = {"A": search_then_finish("Ada Lovelace"), "B": search_then_finish("Alan Turing")}
    agent = HybridAgent(hybrid_llm(["A", "B"], [], replies), default_executor(),
                        runtime_factory=lambda: made.append(object()) or made[-1])
    agent.run("q", verbose=False)
    assert len(made) == 2 and received == made


def test_on_the_real_runtime_a_stuck_sub_goal_is_stopped_and_replanned():
    queries = ["Alan Turing birth", "Alan Turing birth year", "Alan Turing year of birth", "birth year Alan Turing"]
    replies = {"Find Turing's birth year": lambda p: f"Action: Search[{queries[min(p.count('Observation:'), 3)]}]",
               "Say it cannot be found": lambda p: "Action: Finish[Unknown: the search kept repeating itself]"}
    llm = hybrid_llm(["Find Turing's birth year"], ["Say it cannot be found"], replies)
    llm.add(FALLBACK_MARKER, "Action: Finish[no answer]")
    agent = HybridAgent(llm, default_executor(), runtime_factory=Runtime)
    assert agent.run("q", verbose=False) == "Unknown: the search kept repeating itself"
    assert agent.attempts[0].failure == "the step stopped without finishing (runtime: repeated parameters)"
    assert [(n, i.kind) for n, i in agent.interventions] == [(1, "hint"), (1, "redirect"), (1, "stop")]
    assert agent.replans == 1 and agent.stop_reason == "finished"


def test_the_course_hybrid_checkpoints_its_long_sub_goal_with_the_runtime():
    from agentkit.paradigms import make_hybrid

    agent = make_hybrid()
    assert agent.run("What is the sum of the birth years of Bill Gates, Steve Jobs, Steve Wozniak and Linus "
                     "Torvalds?", verbose=False) == "7829"
    checkpoints = [c for c in agent.llm.calls if CHECKPOINT_MARKER in c.prompt]
    assert len(checkpoints) == 1 and agent.interventions == []
    assert "Found: Search[Bill Gates]; Search[Steve Jobs]; Search[Steve Wozniak]" in checkpoints[0].reply
    assert checkpoints[0].reply.endswith("Missing: Search[Linus Torvalds]")


# --- Reflection + ReAct ----------------------------------------------------------------


def test_a_revise_verdict_starts_a_round_with_the_review_and_the_facts():
    llm = ScriptedLLM([
        Rule(lambda p: REVIEW_MARKER in p and "Final answer: 1955" in p, "Supported.\nVERDICT: PASS"),
        Rule(REVIEW_MARKER, "No answer yet: the run stopped.\nVERDICT: REVISE"),
        Rule(lambda p: FACTS_HEADER in p, "Action: Finish[1955]"),
        Rule(REACT_MARKER, lambda p: f"Action: Search[Steve Jobs {p.count('Observation:')}]"),
    ])
    agent = ReflectiveReActAgent(llm, default_executor(), max_steps=2)
    assert agent.run("When was Steve Jobs born?", verbose=False) == "1955"
    assert [(r.stop_reason, r.verdict) for r in agent.rounds] == [("max_steps", "revise"), ("finished", "pass")]
    second_round = [c.prompt for c in llm.calls if REACT_MARKER in c.prompt][-1]
    assert "No answer yet: the run stopped." in second_round and "VERDICT" not in second_round
    assert "- Search[Steve Jobs 0] -> Steve Jobs (February 24, 1955" in second_round
    assert agent.stop_reason == "finished" and agent.steps == 3 and len(llm.calls) == 2 + 1 + 1 + 1


@pytest.mark.parametrize("review", ["This cannot pass.\nVERDICT: REVISE", "VERDICT: PASS? no.", "Looks fine."])
def test_only_an_exact_pass_line_passes_and_max_rounds_is_a_stop(review):
    llm = ScriptedLLM([Rule(REVIEW_MARKER, review), Rule(REACT_MARKER, "Action: Finish[42]")])
    agent = ReflectiveReActAgent(llm, default_executor(), max_rounds=3)
    assert agent.run("q", verbose=False) == "42"
    assert agent.stop_reason == "max_rounds" and len(agent.rounds) == 3 and not agent.passed
