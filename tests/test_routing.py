"""Chapter 15's routing: prices read from ledgers, the four signals, the router's narrow label, and the cascade's
control flow: who is called, what reaches the strong model's prompt, and what it costs."""
import json

import pytest

from agentkit import get_llm
from agentkit.evaluate import evaluate
from agentkit.frontier import MeasurementError, cheap, frontier, make_system, measure, systems
from agentkit.ledgers import Ledgers
from agentkit.react import REACT_MARKER, ReActAgent
from agentkit.routing import (ROUTER_MARKER, Cascade, Router, Single, Tier, confidence, evidence, grounded,
                              parse_label, price, signals)
from agentkit.scripted import Rule, ScriptedLLM
from agentkit.tasks import load_tasks
from agentkit.tools import default_executor

TASKS = {t.id: t for t in load_tasks()}
HOPPER = TASKS["hopper-born"].question  # gold 1906, one Search


def liar(answer="1977"):
    """Answers every ReAct prompt at once with a number no Observation gave; labels every question simple."""
    return ScriptedLLM([Rule(ROUTER_MARKER, "Label: simple", "label"),
                        Rule(REACT_MARKER, f"Thought: I know it.\nAction: Finish[{answer}]", "liar")])


def tiers(cheap, strong=None):
    return [Tier("cheap", lambda: cheap, 0.15, 0.60), Tier("strong", lambda: strong or get_llm("fake"), 3.0, 15.0)]


# --- prices --------------------------------------------------------------------------------------------


def test_price_is_the_ledgers_tokens_at_the_tiers_two_prices():
    llm = get_llm("fake")
    ReActAgent(llm, default_executor(), max_steps=6).run(HOPPER, verbose=False)
    tier = Tier("t", lambda: llm, 2.0, 10.0)
    expected = sum(c.prompt_tokens * 2.0 + c.completion_tokens * 10.0 for c in llm.calls) / 1e6
    assert len(llm.calls) == 2 and price(llm.calls, tier) == pytest.approx(expected) and expected > 0


@pytest.mark.parametrize("bad", [-1, float("nan"), "3", True])
def test_a_tier_refuses_a_price_that_is_not_dollars(bad):
    with pytest.raises(ValueError, match="dollars per million tokens"):
        Tier("t", get_llm, bad, 1.0)


# --- the signals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer, seen, holds", [
    ("1906", "Grace Hopper (December 9, 1906 - January 1, 1992)", True),
    ("1977", "Grace Hopper (December 9, 1906 - January 1, 1992)", False),  # misread or invented
    ("384400", "about 384,400 km", True),  # thousands commas aside
    ("Paul Allen", "founded by Bill Gates and Paul Allen", True),
    ("Jane Doe", "founded by Bill Gates and Paul Allen", False),
    ("Unknown: what I found does not say.", "", True),  # a refusal asserts nothing
    ("", "anything", False),
])
def test_grounded_means_the_answer_asserts_nothing_the_run_did_not_see(answer, seen, holds):
    assert grounded(answer, seen) is holds


def test_the_signals_of_a_right_run_a_lying_run_and_a_stopped_run():
    right = ReActAgent(get_llm("fake"), default_executor(), max_steps=6)
    right.run(HOPPER, verbose=False)
    assert signals(right) == dict.fromkeys(("finished", "well-formed", "grounded", "answered"), True)
    assert confidence(right) == 1.0
    lying = ReActAgent(liar(), default_executor(), max_steps=6)
    lying.run(HOPPER, verbose=False)
    assert signals(lying)["grounded"] is False and confidence(lying) == 0.75
    chatty = ScriptedLLM([Rule(REACT_MARKER, "I think it was in the fifties.", "no action")])
    stopped = ReActAgent(chatty, default_executor(), max_steps=2)
    stopped.run(HOPPER, verbose=False)
    assert signals(stopped) == dict.fromkeys(("finished", "well-formed", "grounded", "answered"), False)
    assert confidence(stopped) == 0.0


def test_evidence_is_what_the_tools_returned_never_the_answer():
    lying = ReActAgent(liar(), default_executor(), max_steps=6)
    lying.run(HOPPER, verbose=False)
    assert evidence(lying) == ""  # it called no tool
    right = ReActAgent(get_llm("fake"), default_executor(), max_steps=6)
    right.run(HOPPER, verbose=False)
    assert evidence(right).startswith("- Search[Grace Hopper] -> Grace Hopper (December 9, 1906")
    assert "Finish" not in evidence(right)


@pytest.mark.parametrize("reply, label", [
    ("Label: simple", "simple"), ("**Label:** Multi-Step\nbecause...", "multi-step"),
    ("label : simple. Label: multi-step", "simple"), ("It is simple.", ""), ("Label: easy", ""), (None, ""),
])
def test_parse_label_reads_a_label_line_and_nothing_else(reply, label):
    assert parse_label(reply) == label


# --- the router ----------------------------------------------------------------------------------------


def test_the_router_asks_the_cheap_model_and_sends_simple_questions_to_it():
    cheap, strong = liar(), get_llm("fake")
    router = Router(tiers(cheap, strong))
    assert router.run(HOPPER) == "1977"  # routed to the cheap liar, which no one checks
    assert ROUTER_MARKER in cheap.calls[0].prompt and HOPPER in cheap.calls[0].prompt
    assert [len(cheap.calls), len(strong.calls)] == [2, 0]
    assert router.cost == pytest.approx(price(cheap.calls, router.tiers[0]))


@pytest.mark.parametrize("label", ["Label: multi-step", "Sure! Happy to help."])
def test_a_multi_step_or_unreadable_label_goes_to_the_strong_model(label):
    cheap = ScriptedLLM([Rule(ROUTER_MARKER, label, "label")])
    strong = get_llm("fake")
    router = Router(tiers(cheap, strong))
    assert router.run(HOPPER) == "1906"
    assert len(cheap.calls) == 1 and len(strong.calls) == 2
    assert router.cost == pytest.approx(price(cheap.calls, router.tiers[0]) + price(strong.calls, router.tiers[1]))


# --- the cascade ---------------------------------------------------------------------------------------


def test_a_cascade_keeps_a_confident_cheap_answer_and_never_calls_the_strong_model():
    cheap, strong = get_llm("fake"), get_llm("fake")
    cascade = Cascade(tiers(cheap, strong), threshold=1.0)
    assert cascade.run(HOPPER) == "1906"
    assert len(cheap.calls) == 2 and strong.calls == [] and cascade.escalations == 0


def test_an_ungrounded_answer_escalates_and_the_strong_model_gets_evidence_not_the_answer():
    cheap = ScriptedLLM([Rule(lambda p: "Observation:" in p, "Thought: done.\nAction: Finish[1977]", "misread"),
                         Rule(REACT_MARKER, "Thought: look.\nAction: Search[Grace Hopper]", "search")])
    strong = get_llm("fake")
    cascade = Cascade(tiers(cheap, strong), threshold=1.0)
    assert cascade.run(HOPPER) == "1906" and cascade.escalations == 1
    hinted = strong.calls[0].prompt
    assert "Hints from earlier work:\n- Search[Grace Hopper] -> Grace Hopper (December 9, 1906" in hinted
    assert "1977" not in hinted  # the cheap model's conclusion is not passed up
    # The strong model does not search again: the Search it needs is in its hints.
    assert len(strong.calls) == 1 and [c.tool for c in cascade.tools.log] == ["Search"]
    assert cascade.cost == pytest.approx(price(cheap.calls, cascade.tiers[0]) + price(strong.calls, cascade.tiers[1]))


@pytest.mark.parametrize("threshold, escalations", [(0.0, 0), (0.75, 0), (1.0, 1), (1.01, 1)])
def test_the_threshold_decides_who_escalates(threshold, escalations):
    cascade = Cascade(tiers(liar(), get_llm("fake")), threshold=threshold)  # the liar's confidence is 0.75
    cascade.run(HOPPER)
    assert cascade.escalations == escalations
    assert len(cascade.clients.get("strong", ScriptedLLM()).calls) == (2 if escalations else 0)


def test_a_threshold_above_one_escalates_even_a_perfect_run():
    cascade = Cascade(tiers(get_llm("fake"), get_llm("fake")), threshold=1.01)
    cascade.run(HOPPER)
    assert cascade.escalations == 1 and [a.confidence for a in cascade.attempts] == [1.0, 1.0]


@pytest.mark.parametrize("bad", [-0.1, 2, "1", True])
def test_a_cascade_refuses_a_threshold_that_is_not_a_confidence(bad):
    with pytest.raises(ValueError, match="threshold must be a confidence"):
        Cascade(tiers(liar()), threshold=bad)


def test_score_replaces_the_confidence():
    seen = []
    cascade = Cascade(tiers(get_llm("fake"), get_llm("fake")), 1.0, score=lambda agent, ev: seen.append(agent) or 0.0)
    cascade.run(HOPPER)
    assert cascade.escalations == 1 and len(seen) == 2


# --- a system is read like one agent -------------------------------------------------------------------


def test_joined_ledgers_read_each_client_once_and_the_harness_reads_a_system_like_an_agent():
    shared = get_llm("fake")
    assert len(Ledgers([shared, shared]).calls) == 0
    made = []

    def make_agent():
        made.append(Cascade(tiers(liar(), get_llm("fake")), 1.0))
        return made[-1]

    report = evaluate(make_agent, [TASKS["hopper-born"], TASKS["eiffel-height"]], review=False, progress=False)
    assert [run.calls for run in report.runs] == [len(m.llm.calls) for m in made] == [3, 3]
    assert all(run.correct for run in report.runs)


def test_a_single_tier_is_the_baseline():
    system = Single(tiers(get_llm("fake"))[0])
    assert system.run(HOPPER) == "1906" and list(system.clients) == ["cheap"]


# --- the frontier --------------------------------------------------------------------------------------


def test_a_frontier_row_is_read_from_the_ledgers():
    made = []

    def make():
        made.append(make_system("cascade", 0.3, 1.0))
        return made[-1]

    tasks = list(TASKS.values())[:6]
    row = measure("cascade", make, tasks)
    assert row["dollars"] == pytest.approx(sum(m.cost for m in made))
    assert row["per_solved"] == pytest.approx(row["dollars"] / row["solved"])
    assert row["strong_share"] == sum(m.escalations > 0 for m in made) / len(tasks)


def test_the_shipped_sweep_matches_a_live_run():
    from agentkit.data import read_text

    shipped = [r for r in json.loads(read_text("frontier_sweep.json"))["rows"] if (r["rate"], r["seed"]) == (0.3, 0)]
    assert [{k: r[k] for k in ("system", "solved", "calls")} for r in shipped] == \
        [{k: r[k] for k in ("system", "solved", "calls")} for r in frontier(0.3, 0)]


# --- every setting is checked where it is given, and a harness reports an exception, never a zero --------------

BAD_RATES = [-0.1, 1.5, "0.1", float("nan"), True, None]


@pytest.mark.parametrize("name", ["cheap alone", "strong alone", "router", "cascade", "supervisor",
                                  "agents as tools", "orchestrator-workers"])
@pytest.mark.parametrize("bad", BAD_RATES, ids=repr)
def test_every_system_refuses_an_error_rate_that_is_not_a_rate_where_it_is_given(name, bad):
    # The cheap-alone, router and cascade systems took -0.1 and 1.5, and failed only inside a run.
    with pytest.raises(ValueError, match=r"rate must be an error rate per reply, between 0 and 1; got"):
        make_system(name, bad)
    with pytest.raises(ValueError, match=r"rate must be an error rate per reply"):
        systems(bad)


@pytest.mark.parametrize("bad", [-0.5, 75, "0.75", float("nan"), None], ids=repr)
def test_the_frontier_refuses_a_threshold_where_it_is_given(bad):
    with pytest.raises(ValueError, match="threshold must be a confidence between 0 and 1"):
        make_system("supervisor", 0.1, bad)
    with pytest.raises(ValueError, match="threshold must be a confidence between 0 and 1"):
        systems(0.1, thresholds=(0.5, bad))  # made lazily, one factory per threshold: checked at once


@pytest.mark.parametrize("bad", [1.5, -1, "0", None], ids=repr)
def test_the_frontier_refuses_a_seed_or_a_system_where_it_is_given(bad):
    with pytest.raises(ValueError, match=f"seed must be a whole number, at least 0; got {bad!r}"):
        make_system("cascade", 0.1, seed=bad)
    with pytest.raises(ValueError, match="seed must be a whole number"):
        cheap(0.1, seed=bad)
    with pytest.raises(ValueError, match="system must be one of"):
        make_system("cascades", 0.1)


def test_a_system_refuses_parts_that_are_not_what_it_runs():
    good = tiers(get_llm("fake"))
    with pytest.raises(ValueError, match="make_agent must be a function"):
        Cascade(good, make_agent="react")
    with pytest.raises(ValueError, match="score must be a function"):
        Cascade(good, score=0.5)
    with pytest.raises(ValueError, match="classifier must be a Tier"):
        Router(good, classifier="cheap")
    with pytest.raises(ValueError, match="the classifier is another tier named 'strong'"):
        Router(good, classifier=Tier("strong", get_llm, 0.15, 0.60))
    with pytest.raises(ValueError, match="two tiers named 'cheap'"):  # one client per name: one would pay for both
        Cascade([good[0], Tier("cheap", get_llm, 3.0, 15.0)])
    with pytest.raises(ValueError, match="make_llm must be a function"):
        Tier("cheap", get_llm("fake"), 0.1, 0.1)
    with pytest.raises(ValueError, match="a tier's name"):
        Tier("", get_llm, 0.1, 0.1)


class DownLLM:
    """A model whose every call fails."""

    def think(self, messages, temperature=0):
        raise RuntimeError("the model is down")


def test_measure_reports_an_exception_and_never_a_row_of_zeros():
    tasks = list(TASKS.values())[:2]
    with pytest.raises(MeasurementError, match=r"2 of 2 runs of 'broken' raised.*RuntimeError: the model is down"):
        measure("broken", lambda: Single(Tier("cheap", DownLLM, 0.15, 0.60)), tasks)
    with pytest.raises(ValueError, match="make_system must be a function"):
        measure("broken", Single(Tier("cheap", DownLLM, 0.15, 0.60)), tasks)
