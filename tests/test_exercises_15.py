"""Chapter 15's self-checks: each worked solution passes, a typical wrong answer gets the hint meant for it, the
stub says "not done yet", a half-written answer never crashes the check, and every option is explained."""
from __future__ import annotations

import pytest

from agentkit.exercises import NOT_DONE, check

from test_exercises import each_has_a_solution_and_a_wrong_answer, fails_with_hint, in_process, solutions  # noqa: F401 - in_process is a fixture

RIGHT = solutions("15")["15.predict"]
WOZNIAK = ("Steve Wozniak (born August 11, 1950) is an American engineer who designed the Apple I and Apple II "
           "computers and co-founded Apple with Steve Jobs in 1976.")


@pytest.fixture(autouse=True)
def checks_in_this_process(in_process):
    """These tests read the checks' logic, in this process; test_exercises.py shows, exercise by exercise, that the
    forked path a learner's kernel takes gives the same verdicts."""


def trusts_everything(agent):  # never escalates: the cascade is the cheap model alone
    return 1.0


def trusts_nothing(agent):  # always escalates: the cascade pays for both models
    return 0.0


def finished_only(agent):  # a run that finished with a misread or invented answer still counts
    return 1.0 if agent.stop_reason == "finished" else 0.0


def a_word(agent):
    return "high"


def too_high(agent):
    return 2


WRONG = [
    ("15.predict", {**RIGHT, "orchestrator-workers": (8, 6)}, "nothing ran at the same time"),
    ("15.predict", {**RIGHT, "supervisor": (5, 5)}, "three replies of the supervisor"),
    ("15.predict", {**RIGHT, "single ReAct": (2, 2)}, "then Finish: 3 calls"),
    ("15.predict", {**RIGHT, "agents as tools": (7, 3)}, "three turns of the manager"),
    ("15.confidence", trusts_everything, "trusts the cheap model's wrong answers"),
    ("15.confidence", finished_only, "trusts the cheap model's wrong answers"),
    ("15.confidence", trusts_nothing, "escalates the cheap model's right answers too"),
    ("15.confidence", a_word, "return a number between 0 and 1"),
    ("15.confidence", too_high, "return a number between 0 and 1"),
    ("15.break", WOZNIAK, "put another number of the same Observation there"),
    ("15.break", WOZNIAK.replace("1950", "1960", 1), "a number of the Observation that is not the birth year"),
    ("15.break", 1976, "write the report as a string"),
    ("15.q1", "a", "some tasks end on the cheap model"),
    ("15.q2", "b", "made-up prices and error rates"),
]


@pytest.mark.parametrize("id, wrong, hint", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_with_the_hint_meant_for_it(id, wrong, hint):
    fails_with_hint(id, wrong, hint)


def test_every_exercise_and_question_has_a_solution_and_a_wrong_answer_tested():
    each_has_a_solution_and_a_wrong_answer("15", WRONG)


def not_started(agent):
    raise NotImplementedError("your code here")


@pytest.mark.parametrize("id, stub", [
    ("15.predict", {"single ReAct": ..., "supervisor": ..., "agents as tools": ..., "orchestrator-workers": ...}),
    ("15.predict", {**RIGHT, "supervisor": ...}),
    ("15.confidence", not_started), ("15.confidence", None), ("15.break", None),
])
def test_the_stub_is_not_done_yet(id, stub):
    verdict = check(id, stub)
    assert verdict.status == NOT_DONE and NOT_DONE in verdict.text, verdict.text


def half_written(agent):
    return agent.confidence  # a slip: a ReActAgent has no such attribute


@pytest.mark.parametrize("id, broken, words", [
    ("15.confidence", half_written, "AttributeError"),
    ("15.confidence", lambda: 1.0, "TypeError"),
    ("15.confidence", "high", "a function confidence(agent)"),
    ("15.predict", [(3, 3)], "a dict"),
    ("15.predict", {**RIGHT, "supervisor": 7}, "a pair of whole numbers"),
])
def test_a_half_written_answer_never_raises_and_says_what_happened(id, broken, words):
    verdict = check(id, broken)
    assert verdict.status == "wrong" and words in verdict.text, verdict.text


def test_the_break_exercise_reports_what_the_ledger_and_the_guard_saw():
    verdict = check("15.break", solutions("15")["15.break"])
    assert verdict.ok and "No alarm" in verdict.text and "(gold 19)" in verdict.text
