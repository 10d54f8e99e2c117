"""Chapters 9-10 panels: the callbacks over their whole range, and a bad value explains itself."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from agentkit.paradigms import PARADIGMS  # noqa: E402
from agentkit.tasks import load_tasks  # noqa: E402
from agentkit.widgets.evaluate import BUDGET_CHANGES, CATEGORY_CHOICES, evaluation_report, show_evaluation  # noqa: E402
from agentkit.widgets.rewoo import EXAMPLES, show_plan  # noqa: E402


@pytest.mark.parametrize("name,why", [
    ("forward reference", "#E4 refers to evidence that does not exist before this line"),
    ("defined twice", "#E1 is defined twice"),
    ("malformed line", "must read #E<n> = Tool[input]"),
    ("no plan at all", "no evidence line"),
])
def test_a_broken_plan_is_refused_before_any_tool_runs(name, why):
    with pytest.raises(ValueError, match=__import__("re").escape(why)):
        show_plan(EXAMPLES[name])


def test_a_valid_plan_runs_and_a_blind_one_shows_what_the_tool_received(capsys):
    assert show_plan(EXAMPLES["valid"])[-1] == "19"
    outputs = show_plan(EXAMPLES["planned blind"])
    printed = capsys.readouterr().out
    assert outputs[-1].startswith("error:")  # two paragraphs are no arithmetic
    assert "the tool received: Linus Torvalds (born December 28, 1969)" in printed and "failed: 1" in printed


@pytest.mark.parametrize("paradigm", list(PARADIGMS))
def test_every_paradigm_runs_in_the_panel(paradigm):
    report = evaluation_report(paradigm, 0, "impossible")
    assert report.summary.tasks == 5 and report.name == paradigm


def test_the_callback_prints_the_summary_and_the_review_and_draws(capsys):
    report = show_evaluation("Act-only", 0, "multi-hop")
    printed = capsys.readouterr().out
    multi_hop = sum(t.category == "multi-hop" for t in load_tasks())
    assert f"Act-only on {multi_hop} tasks" in printed and "still not solved with two more steps" in printed
    assert len(plt.get_fignums()) == 1 and report.early_stops
    plt.close("all")


@pytest.mark.parametrize("change", BUDGET_CHANGES)
def test_every_budget_change_moves_react_budget(change):
    report = evaluation_report("ReAct", change, "multi-hop")
    assert max(r.steps for r in report.runs) <= 5 + change
    if change < 0:
        assert report.summary.max_steps_share > 0


@pytest.mark.parametrize("category", CATEGORY_CHOICES)
def test_every_category_filters_the_tasks(category):
    report = evaluation_report("ReWOO", 0, category)
    assert category == "all" or {r.category for r in report.runs} == {category}


@pytest.mark.parametrize("values,message", [
    (("Chain of thought", 0, "all"), "paradigm must be one of"),
    (("ReAct", 5, "all"), "budget_change must be one of"),
    (("ReAct", 0, "trivia"), "category must be one of"),
    (("ReAct", 0, "all", 0.7), "error_rate must be one of"),
])
def test_a_bad_value_is_a_clear_value_error(values, message):
    with pytest.raises(ValueError, match=message):
        evaluation_report(*values)


def test_with_a_real_model_the_panel_runs_a_few_tasks_without_the_review(monkeypatch):
    import agentkit.widgets.evaluate as panel

    monkeypatch.setattr(panel, "get_llm", lambda: object())  # anything but the stand-in
    report = evaluation_report("Act-only", 0, "multi-hop")
    assert report.summary.tasks == panel.REAL_MODEL_TASKS and not report.reviewed


def test_the_error_slider_turns_up_the_stand_ins_knobs_and_costs_success():
    clean = evaluation_report("Hybrid", 0, "all")
    noisy = evaluation_report("Hybrid", 0, "all", 0.2)
    assert noisy.summary.success_rate < clean.summary.success_rate == 1.0
    assert "errors 20% per reply" in noisy.name


def test_the_error_knobs_are_refused_for_a_real_model(monkeypatch):
    import agentkit.widgets.evaluate as panel

    monkeypatch.setattr(panel, "get_llm", lambda: object())
    with pytest.raises(ValueError, match="belong to the stand-in"):
        evaluation_report("ReAct", 0, "multi-hop", 0.1)
