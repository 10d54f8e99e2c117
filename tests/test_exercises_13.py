"""Chapter 13's self-checks: each worked solution passes, a typical wrong answer gets the hint meant for it,
the stub says "not done yet", and every option of every question is explained."""
from __future__ import annotations

import pytest

from agentkit.exercises import NOT_DONE, REGISTRY, check, quiz

from test_exercises import fails_with_hint, in_process, solutions  # noqa: F401 - in_process is a fixture


@pytest.fixture(autouse=True)
def checks_in_this_process(in_process):
    """These tests read the checks' logic, in this process; test_exercises.py shows, exercise by exercise, that the
    forked path a learner's kernel takes gives the same verdicts."""


def whole_list(ranked, relevant, k):  # forgets k
    return any(item in relevant for item in ranked)


def from_zero(keyword, dense, k=60):  # ranks counted from 0
    scores = {}
    for ranking in (keyword, dense):
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0) + 1 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


def best_of(keyword, dense, k=60):  # keeps each id's better rank instead of adding
    scores = {}
    for ranking in (keyword, dense):
        for rank, item in enumerate(ranking, 1):
            scores[item] = max(scores.get(item, 0), 1 / (k + rank))
    return sorted(scores, key=lambda item: -scores[item])


WRONG = [
    ("13.hit", whole_list, "only the first k count"),
    ("13.fuse", from_zero, "ranks start at 1"),
    ("13.fuse", best_of, "add an id's scores from both lists"),
    ("13.budget", 400, "too generous"),
    ("13.budget", 250, "too tight"),
    ("13.budget", 50, "below what the role prompt"),
    ("13.q1", "b", "does not retrieve"),
    ("13.q2", "a", "leave the wrong one first"),
]


@pytest.mark.parametrize("id, wrong, hint", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_with_the_hint_meant_for_it(id, wrong, hint):
    fails_with_hint(id, wrong, hint)


@pytest.mark.parametrize("id, stub", [("13.hit", None), ("13.fuse", ...), ("13.budget", None)])
def test_the_stub_is_not_done_yet(id, stub):
    assert check(id, stub).status == NOT_DONE


def test_a_function_that_still_raises_not_implemented_is_not_done_yet():
    def hit_at_k(ranked, relevant, k):
        raise NotImplementedError("your code here")

    assert check("13.hit", hit_at_k).status == NOT_DONE


def test_every_exercise_and_question_has_a_solution_and_every_option_is_explained():
    check("13.hit", None)  # loads the chapter
    ids = {i for i in REGISTRY.exercises if i.startswith("13.")} | {i for i in REGISTRY.questions if i.startswith("13.")}
    assert ids == set(solutions("13"))
    for id in ("13.q1", "13.q2"):
        text = quiz(id, solutions("13")[id]).text
        assert all(f"{letter})" in text for letter in REGISTRY.questions[id].options)
