"""Self-check exercises: every check passes its worked solution, fails a typical wrong answer with the
hint meant for it, says "not done yet" to the stub, and never raises on a half-written answer."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from agentkit import exercises
from agentkit.exercises import NOT_DONE, check, progress, quiz, reset_progress
from agentkit.exercises.predictions import Prediction

ROOT = Path(__file__).resolve().parent.parent


def solutions(chapter: str) -> dict:
    spec = importlib.util.spec_from_file_location(f"solutions_ch{chapter}", ROOT / "solutions" / f"ch{chapter}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SOLUTIONS


def answer(id: str, value):
    return quiz(id, value) if ".q" in id else check(id, value)


# --- chapter 03: typical wrong answers, each with the hint it must get ---------------------------


def last_only(actions):  # chapter 03's own fuse: it looks back one action
    return len(actions) > 1 and actions[-1] == actions[-2]


def no_normalising(actions):  # looks back two, but compares the raw strings
    return actions[-1] in actions[-3:-1]


def window_of_three(actions):  # catches every stutter, and kills a legitimate return too
    key = lambda a: (a[0].lower(), " ".join(a[1].split()).casefold())
    return key(actions[-1]) in [key(a) for a in actions[-4:-1]]


def input_only(actions):  # forgets the tool: the same text sent to another tool is not a repeat
    return " ".join(actions[-1][1].split()).casefold() in [" ".join(a[1].split()).casefold() for a in actions[-3:-1]]


PREDICT_03 = {"wanderer, fuse on, max_steps=8": (8, 8), "stuck, fuse off, max_steps=8, fallback": (9, 8),
              "format breaker, max_steps=2, fallback": (3, 1)}
WRONG = [
    ("03.predict", {**PREDICT_03, "wanderer, fuse on, max_steps=8": (2, 1)}, "the repeat fuse never fires"),
    ("03.predict", {**PREDICT_03, "stuck, fuse off, max_steps=8, fallback": (9, 9)}, "tools switched off"),
    ("03.predict", {**PREDICT_03, "format breaker, max_steps=2, fallback": (4, 2)}, "a format reminder, no tool"),
    ("03.fuse", last_only, "compares with the previous action only"),
    ("03.fuse", no_normalising, "normalise as section 2's tiny_react does"),
    ("03.fuse", window_of_three, "look back at most two actions"),
    ("03.fuse", input_only, "the same text sent to another tool is not a repeat"),
    ("03.break", "Observation: invented\nThought: t\nAction: Search[Steve Jobs]", "must come AFTER the Action line"),
    ("03.break", "Thought: done.\nAction: Finish[25185]\nObservation: invented", "calls Search"),
    ("03.q1", "b", "by the content of the prompt only"),
    ("03.q2", "b", "parser was the same both days"),
]


def ids_of(chapter: str) -> set[str]:
    """Every exercise and question the registry holds for one chapter ("03" and "03b" apart)."""
    exercises._load(chapter)
    return {i for i in [*exercises.REGISTRY.exercises, *exercises.REGISTRY.questions] if i.split(".")[0] == chapter}


def each_has_a_solution_and_a_wrong_answer(chapter: str, wrong) -> set[str]:
    """Assert that every exercise and question of `chapter` has a worked solution and a typical wrong
    answer among `wrong` ((id, answer, hint) rows); return their ids."""
    ids = ids_of(chapter)
    assert ids and ids == set(solutions(chapter))
    assert ids == {id for id, _, _ in wrong if id.split(".")[0] == chapter}
    return ids


def fails_with_hint(id: str, wrong, hint: str) -> None:
    """A typical wrong answer: the check says "wrong" and gives the hint meant for that mistake.

    A wrong prediction says which rows are off and in which direction, and shows neither the true numbers nor
    why they are what they are (the hint meant for a row) until the learner asks: then it shows both."""
    exercises._load(id.split(".")[0])
    exercise = exercises.REGISTRY.exercises.get(id)
    if exercise is None or not isinstance(exercise.checker, Prediction) or not isinstance(wrong, dict):
        verdict = answer(id, wrong)
        assert verdict.status == "wrong" and hint in verdict.text, verdict.text
        return
    exercises.REGISTRY.tries.pop(id, None)
    verdict = check(id, wrong)
    assert verdict.status == "wrong", verdict.text
    truth = exercise.checker.truth()
    for row, actual in truth.items():
        assert f"{row}: {actual}" not in verdict.text and f"{row}: {tuple(actual) if isinstance(actual, list) else actual}" not in verdict.text
    off = [row for row, actual in truth.items() if wrong.get(row) != actual]
    assert off and all(f"{row} " in verdict.text for row in off) and " too " in verdict.text, verdict.text
    if hint not in verdict.text:
        revealed = check(id, wrong, reveal=True)
        assert revealed.status == "wrong" and hint in revealed.text, revealed.text
        assert all(f"{row}: " in revealed.text for row in truth)
    exercises.REGISTRY.tries.pop(id, None)


# Every chapter's worked solutions, checked here once; each chapter's test file tests its wrong answers.
EVERY_SOLUTION = [(id, chapter) for chapter in exercises.CHAPTERS for id in sorted(solutions(chapter))]


BUILT = [(id, chapter) for id, chapter in EVERY_SOLUTION if ".q" in id or callable(solutions(chapter)[id])]
WRITTEN = [(id, chapter) for id, chapter in EVERY_SOLUTION if (id, chapter) not in BUILT]


@pytest.mark.parametrize("id, chapter", BUILT, ids=[id for id, _ in BUILT])
def test_every_worked_solution_passes_its_check(id, chapter, monkeypatch):
    """Through the path a learner's kernel takes (a forked child on Linux and macOS), then in this process, as on
    Windows, with the same draw (seed 11; tests/test_exercises_wrong.py draws 12, 13, 15, test_exercises_leaks.py
    14): the same words. Predictions and break answers are the next test's."""
    if ".q" in id:
        verdict = answer(id, solutions(chapter)[id])
        assert verdict.ok, verdict.text
        return
    forked = check(id, solutions(chapter)[id], seed=11)
    assert forked.ok and forked.path == expected_path(id), forked.text
    monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")
    if id == "14.capstone":  # its standing draws its worlds in a process of its own, not from the seed
        from agentkit import capstone  # in-process, on one task per template: the full check ran just above

        monkeypatch.setattr(capstone, "check_worlds", lambda: {"seeds": capstone.SEEDS, "per_template": 1})
        here = check(id, solutions(chapter)[id], seed=11)
        assert here.status == forked.status, here.text
        return
    here = check(id, solutions(chapter)[id], seed=11)
    assert (here.status, here.text) == (forked.status, forked.text)


@pytest.mark.parametrize("id, chapter", WRITTEN, ids=[id for id, _ in WRITTEN])
def test_every_written_answer_passes_its_check_with_the_same_words_on_both_paths(id, chapter, monkeypatch):
    forked = check(id, solutions(chapter)[id], seed=21)
    assert forked.ok and forked.path == expected_path(id), forked.text
    monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")
    here = check(id, solutions(chapter)[id], seed=21)
    assert (here.status, here.text) == (forked.status, forked.text)


def expected_path(id: str) -> str:
    return "fork" if exercises.forked.AVAILABLE and exercises.REGISTRY.exercises[id].fork else "in-process"


def wrong_for(value):
    """A wrong answer of the same shape: a function that returns nothing useful, numbers one off, another text."""
    if callable(value):
        return lambda *args: None
    if isinstance(value, dict):
        return {k: (tuple(n + 1 for n in v) if isinstance(v, tuple) else v + 1 if isinstance(v, (int, float))
                    and not isinstance(v, bool) else "x") for k, v in value.items()}
    return "Thought: done.\nAction: Finish[25185]" if isinstance(value, str) else 1


@pytest.mark.parametrize("id, chapter", [(i, c) for i, c in EVERY_SOLUTION if ".q" not in i],
                         ids=[i for i, _ in EVERY_SOLUTION if ".q" not in i])
def test_a_wrong_answer_gets_the_same_verdict_on_both_paths(id, chapter, monkeypatch):
    exercises.REGISTRY.tries.pop(id, None)
    wrong = wrong_for(solutions(chapter)[id])
    forked = check(id, wrong, seed=22)
    exercises.REGISTRY.tries.pop(id, None)
    monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")
    here = check(id, wrong, seed=22)
    exercises.REGISTRY.tries.pop(id, None)
    assert forked.status != "correct" and (here.status, here.text) == (forked.status, forked.text)


@pytest.fixture
def in_process(monkeypatch):
    """For a chapter's tests of its checks' logic: in this process, as on Windows. test_exercises.py shows, for
    every exercise, that the forked path gives the same verdicts; tests/test_exercises_clock.py tests the fork."""
    monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")


@pytest.mark.parametrize("chapter", exercises.CHAPTERS)
def test_every_exercise_and_question_of_every_chapter_has_a_worked_solution(chapter):
    ids = ids_of(chapter)
    assert ids and ids == set(solutions(chapter))


@pytest.mark.parametrize("id, wrong, hint", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_with_the_hint_meant_for_it(id, wrong, hint):
    fails_with_hint(id, wrong, hint)


def test_every_exercise_and_question_has_a_solution_and_a_wrong_answer_tested():
    each_has_a_solution_and_a_wrong_answer("03", WRONG)
    assert {id for id, _, _ in WRONG} == ids_of("03")
    kinds = {e.kind for e in exercises.REGISTRY.exercises.values() if e.id.startswith("03.")}
    assert kinds == {"predict", "build", "break"}


def stub(actions):
    raise NotImplementedError("your code here")


@pytest.mark.parametrize("id, unsolved", [("03.predict", dict.fromkeys(PREDICT_03, ...)),
                                          ("03.predict", None), ("03.fuse", stub), ("03.fuse", ...), ("03.break", None)])
def test_the_stub_is_not_done_yet_never_correct(id, unsolved):
    verdict = check(id, unsolved)
    assert verdict.status == NOT_DONE and NOT_DONE in verdict.text


@pytest.mark.parametrize("broken", [lambda actions: actions[7], lambda: True, lambda actions: 1 / 0, 42, "text"])
def test_a_half_written_answer_never_raises_and_says_what_happened(broken):
    verdict = check("03.fuse", broken)
    assert verdict.status == "wrong"
    assert "case:" in verdict.text and "hint:" in verdict.text


def test_a_question_explains_every_option_once_answered_right_and_the_chosen_one_when_wrong():
    wrong = quiz("03.q1", "a")
    assert "is not it" in wrong.text and "Try again" in wrong.text and "b)" not in wrong.text
    right = quiz("03.q1", "D)")
    assert right.ok and all(f"  {letter})" in right.text for letter in "abc")
    assert quiz("03.q1", "z").status == NOT_DONE


def test_the_quiz_widget_checks_on_click(monkeypatch):
    shown = quiz("03.q2")
    assert "03.q2" in repr(shown) and "a)" in repr(shown)
    box = shown.widget
    choice, button, feedback = box.children[1], box.children[2], box.children[3]
    button.click()
    assert "Choose an option first" in feedback.value
    choice.value = "b"
    button.click()
    assert "is not it" in feedback.value
    choice.value = "a"
    button.click()
    assert "is right" in feedback.value


def test_progress_is_kept_in_a_file_in_the_folder_and_reset_empties_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTKIT_PROGRESS", raising=False)
    reset_progress()
    assert "0 of 5 done" in progress("03")
    quiz("03.q1", "d")
    check("03.fuse", last_only)
    saved = json.loads((tmp_path / ".agentkit-progress.json").read_text())
    assert saved == {"03.q1": "correct"}  # a wrong try is not saved
    exercises.REGISTRY.done.clear()  # a new kernel: the file remembers
    assert "done (earlier)" in progress("03") and "1 of 5 done" in progress("03")
    (tmp_path / ".agentkit-progress.json").write_text("{not json")
    assert "0 of 5 done" in progress("03")  # a damaged file is ignored, never an error
    reset_progress()
    assert not (tmp_path / ".agentkit-progress.json").exists()


def test_an_unknown_id_is_a_verdict_that_names_the_known_ones():
    for verdict in (check("03.nope", 1), quiz("03.q9"), quiz("03.q9", "a"), check("99.x", 1), check(None, 1),
                    check(["03.fuse"], 1)):
        assert verdict.status == "unknown" and "No " in verdict.text
    assert "03.fuse" in check("03.nope", 1).text and "03.q1" in quiz("03.q9").text
    assert "The chapters are" in check("99.x", 1).text and "No chapter" in progress("99")


def test_the_instructors_command_runs_every_solution_in_a_folder(tmp_path):
    # Each chapter's own test file runs its solutions; here, the command itself, on a folder of two chapters.
    import shutil

    for name in ("ch03.py", "ch01.py"):
        shutil.copy(ROOT / "solutions" / name, tmp_path / name)
    results = exercises.check_solutions(tmp_path)
    assert sorted(id.split(".")[0] for id, _ in results) == ["01"] * 5 + ["03"] * 5
    assert all(status == "correct" for _, status in results)

