"""Chapters 04-06 off the stand-in's script: a real model's replies never crash a panel, runs are
capped for a real model, and what the chapters claim about re-sent state and charts holds."""
import re

import pytest

from agentkit.llm import LedgerLLM
from agentkit.modes import get_llm
from agentkit.react import ReActAgent
from agentkit.scripts.plan import YEARS_QUESTION
from agentkit.tools import default_executor
from agentkit.widgets.plan import REAL_MODEL_LIMITS, injected_run, report
from agentkit.widgets.reflection import REAL_MODEL_MAX_ITERATIONS, reviewer_run, what_revisions_carry
from agentkit.widgets.reflexion import REAL_MODEL_LIMITS as REFLEXION_LIMITS
from agentkit.widgets.reflexion import plot_run, polluted_run


class ChattyModel(LedgerLLM):
    """One disease: answers every prompt with the same prose (no JSON plan, no verdict, no lesson, no action)."""

    model = "chatty"

    def _complete(self, messages, temperature):
        return "The answer is 42, I think.", {"prompt_tokens": 10, "completion_tokens": 7}


def test_plain_react_on_the_years_question_searches_twice_subtracts_and_finishes():
    agent = ReActAgent(get_llm(mode="fake"), default_executor())
    answer = agent.run(YEARS_QUESTION, verbose=False)
    assert answer == "Alan Turing was born 97 years after Ada Lovelace." and agent.stop_reason == "finished"
    assert [(c.tool, c.argument) for c in agent.tools.log] == [
        ("Search", "Ada Lovelace"), ("Search", "Alan Turing"), ("Calculate", "1912 - 1815")]
    assert len(agent.llm.calls) == 4


def test_a_reply_with_no_plan_ends_the_injected_run_without_raising_after_one_call():
    agent = injected_run(2, None, llm=ChattyModel())
    assert agent.stop_reason == "no_plan" and agent.plans == [] and agent.attempts == []
    assert len(agent.llm.calls) == 1 and agent.tools.log == []
    assert "The answer is 42" in agent.answer  # the parser's message quotes the reply
    text = report(agent)
    assert text.startswith("Answer [no_plan]: Stopped before any step") and "capped at" in text


def test_a_real_model_gets_the_capped_settings_and_the_stand_in_does_not():
    real = injected_run(0, llm=ChattyModel())
    assert real.react_steps == REAL_MODEL_LIMITS["react_steps"]
    assert real.planner.max_steps == REAL_MODEL_LIMITS["max_plan_steps"]
    offline = injected_run(0)
    assert offline.react_steps == 4 and offline.planner.max_steps == 10 and "capped" not in report(offline)


@pytest.mark.parametrize("rounds", [1, 2, 5])
def test_each_revision_carries_only_the_latest_draft_and_review(rounds):
    result = reviewer_run("never satisfied", rounds, llm=get_llm(mode="fake"))
    rows = what_revisions_carry(result)
    assert [row["writes_draft"] for row in rows] == list(range(2, rounds + 1))
    for row in rows:
        latest = row["writes_draft"] - 1
        assert row["drafts_carried"] == [latest] and row["reviews_carried"] == [latest]
        assert row["prompt_tokens"] == result["calls"][2 * latest].prompt_tokens  # the revision's ledger entry
    # Left-out history only grows: re-sending it would grow faster than what is sent.
    gaps = [row["if_all_resent"] - row["prompt_tokens"] for row in rows]
    assert gaps == sorted(gaps) and (rounds < 3 or gaps[-1] > gaps[0] >= 0)


def test_a_real_model_reflection_run_is_capped_and_says_so():
    result = reviewer_run("never satisfied", 6, llm=ChattyModel())
    assert result["capped"] and result["max_iterations"] == REAL_MODEL_MAX_ITERATIONS
    assert result["rounds"] == REAL_MODEL_MAX_ITERATIONS and not result["passed"]  # no verdict line: not a pass
    assert len(result["calls"]) == 2 * REAL_MODEL_MAX_ITERATIONS


def test_a_real_model_polluted_run_is_capped_and_writes_no_lesson_from_prose():
    run = polluted_run(llm=ChattyModel())
    assert len(run.result.trials) == REFLEXION_LIMITS["max_trials"] and run.limits == REFLEXION_LIMITS
    assert all(len(t.calls) <= REFLEXION_LIMITS["max_steps"] + 1 for t in run.result.trials)
    assert not any(t.lesson_written for t in run.result.trials)
    assert "capped at" in run.text


def test_the_reflexion_legends_cover_no_bar_line_or_marker():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    left, right = plot_run(polluted_run())
    fig = left.figure
    fig.canvas.draw()
    for ax in (left, right):
        legend, area = ax.get_legend().get_window_extent(), ax.get_window_extent()
        assert not legend.overlaps(area), ax.get_title()
    plt.close(fig)


def test_the_injected_runs_report_every_number_from_the_ledgers():
    agent = injected_run(2, 1)
    text = report(agent)
    assert int(re.search(r"LLM calls: (\d+)", text).group(1)) == len(agent.llm.calls)
    assert f"tool calls: {len(agent.tools.log)} (1 failed)" in text
