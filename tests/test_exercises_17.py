"""Chapter 17's self-checks: each worked solution passes, a typical wrong answer gets the hint meant for it, the stub
says "not done yet", agentkit's own masking is refused in the build exercise, and the break exercise passes only when
the summary drops the tariff (not when it miscopies it, keeps it, or loses the run's place)."""
from __future__ import annotations

import re
import sys

import pytest

from agentkit.context_strategies import ObservationMasking, masked_history
from agentkit.exercises import NOT_DONE, check
from agentkit.scripts.relay import summary_reply

from test_exercises import each_has_a_solution_and_a_wrong_answer, fails_with_hint, solutions

RIGHT = solutions("17")["17.predict"]
my_masking = solutions("17")["17.mask"]


def window(assemble, trace, question):  # a window is not masking: it drops the Thoughts too
    return assemble([step.as_history() for step in trace[-2:]])


def unmasked(assemble, trace, question):  # full history
    return assemble([step.as_history() for step in trace])


def masks_the_recent_too(assemble, trace, question):  # keeps no Observation at all
    return assemble([f"Thought: {s.thought}\nAction: {s.action}[{s.argument}]\nObservation: [hidden]" for s in trace])


def a_string(assemble, trace, question):
    return "Question: ..."


def keeps_the_tariff(text):
    return summary_reply(text)


def miscopies_the_tariff(text):
    return re.sub(r"tariff: (\d+)", lambda m: f"tariff: {int(m.group(1)) + 1}", summary_reply(text))


def forgets_the_place(text):
    return "- " + "\n- ".join(line for line in summary_reply(text).splitlines() if "tariff" in line)


def a_number(text):
    return 42


def says_nothing(text):  # drops the tariff, and where the run stands with it
    return ""


WRONG = [
    ("17.predict", {**RIGHT, "sub-agents, 10 stations each": (5, 4)}, "count the sub-agents' calls too"),
    ("17.predict", {**RIGHT, "masking, keep=2": (20, 19)}, "masking keeps only the last two Observations raw"),
    ("17.predict", {**RIGHT, "sliding window, k=4": (20, 19)}, "a window of 4 sends the last 4 steps"),
    ("17.predict", {**RIGHT, "full history": (21, 19)}, "count calls as section 2's reports print them"),
    ("17.mask", window, "masking keeps every step's Thought and Action"),
    ("17.mask", unmasked, "an Observation older than the last two steps is still in the prompt"),
    ("17.mask", masks_the_recent_too, "the last two steps' Observations must reach the model as they are"),
    ("17.mask", a_string, "return what assemble(parts) returns"),
    ("17.break", keeps_the_tariff, "the run was right: your summary kept the tariff"),
    ("17.break", miscopies_the_tariff, "that is a miscopied fact"),
    ("17.break", a_number, "return the summary as a str"),
    ("17.break", says_nothing, "your summary lost where the run stood too"),
    ("17.q1", "b", "masking keeps a Thought and an Action for every step"),
    ("17.q2", "a", "what differs is where each prompt first changes"),
    ("17.q3", "b", "the linear shape, blind to position, is our assumption"),
]


@pytest.mark.parametrize("id, wrong, hint", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_with_the_hint_meant_for_it(id, wrong, hint):
    fails_with_hint(id, wrong, hint)


def test_every_exercise_and_question_has_a_solution_and_a_wrong_answer_tested():
    each_has_a_solution_and_a_wrong_answer("17", WRONG)


def not_started(*args):
    raise NotImplementedError("your code here")


@pytest.mark.parametrize("id, stub", [
    ("17.predict", dict.fromkeys(RIGHT, (..., ...))), ("17.predict", {**RIGHT, "full history": ...}),
    ("17.mask", not_started), ("17.mask", None), ("17.break", not_started), ("17.break", ...),
])
def test_the_stub_is_not_done_yet(id, stub):
    verdict = check(id, stub)
    assert verdict.status == NOT_DONE and NOT_DONE in verdict.text, verdict.text


def test_the_build_refuses_agentkits_own_masking_however_it_is_reached():
    def the_package(assemble, trace, question):
        return ObservationMasking(2).fit(assemble, trace, question)

    def its_helper(assemble, trace, question):
        last = len(trace) - 2
        return assemble([masked_history(s, n) if n <= last else s.as_history() for n, s in enumerate(trace, 1)])

    for cheat, name in ((the_package, "ObservationMasking.fit"), (its_helper, "masked_history")):
        verdict = check("17.mask", cheat)
        assert verdict.status == "wrong" and f"your code called agentkit's {name}" in verdict.text, verdict.text


def test_the_build_notices_a_replaced_profile_hook_and_puts_the_callers_back():
    def evades(assemble, trace, question):
        sys.setprofile(None)
        return ObservationMasking(2).fit(assemble, trace, question)

    before = sys.getprofile()
    verdict = check("17.mask", evades)
    assert verdict.status == "wrong" and "leave sys.setprofile alone" in verdict.text
    assert sys.getprofile() is before


def test_a_learner_who_edits_the_steps_it_is_given_is_judged_against_the_real_results():
    def vandal(assemble, trace, question):
        for step in trace:
            step.observation = "[gone]"  # the check's copies: the agent's own trace keeps the real results
        return assemble([step.as_history() for step in trace])

    verdict = check("17.mask", vandal, seed=3)
    assert verdict.status == "wrong" and "the last two steps' Observations must reach the model" in verdict.text


def test_the_break_passes_only_when_the_summary_drops_the_tariff():
    assert check("17.break", solutions("17")["17.break"], seed=1).ok
    place = check("17.break", forgets_the_place, seed=1)
    # without the place the stand-in starts the line again and runs out of steps, or keeps the tariff: never a pass
    assert place.status == "wrong", place.text
