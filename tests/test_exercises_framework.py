"""The promises of agentkit.exercises itself: a check never raises and never hangs, its feedback has a length,
a prediction keeps its numbers until asked, the progress file is never a way to write elsewhere, and every
worked solution can be read where the learner is."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import pytest

from agentkit import exercises
from agentkit.exercises import NOT_DONE, check, deadline, progress, quiz, reset_progress, show_solution

from test_exercises import solutions

SHORT = 0.2  # the time limit under test: long enough for any check's own code here, short for the suite


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(exercises, "TIME_LIMIT_S", SHORT)


def spin(actions):
    while True:
        pass


def sleeps(actions):
    time.sleep(60)


def swallows(actions):  # catches the first interruption and goes on looping
    try:
        time.sleep(60)
    except BaseException:
        pass
    while True:
        pass


@pytest.mark.parametrize("learner", [spin, sleeps, swallows])
def test_an_endless_loop_or_a_long_sleep_ends_as_a_verdict_at_the_time_limit(short_limit, learner):
    start = time.monotonic()
    verdict = check("03.fuse", learner)
    assert time.monotonic() - start < 100 * SHORT  # a backstop: the verdict below says which clock ended it
    assert verdict.status == "wrong" and f"still running after {SHORT:g} s" in verdict.text
    assert "the same call twice in a row" in verdict.text  # the case the code was on
    if hasattr(signal, "setitimer"):  # the clock's handler and timer are gone (a tool's handler may stay: it ignores
        assert getattr(signal.getsignal(signal.SIGALRM), "__name__", "") != "ring"  # alarms it did not ask for)
        assert signal.getitimer(signal.ITIMER_REAL) == (0, 0)
    assert check("03.fuse", solutions("03")["03.fuse"]).ok  # the clock is off again: a right answer passes


def test_the_limit_also_holds_off_the_main_thread_and_through_the_sigint_clock_windows_uses(short_limit, monkeypatch):
    before = signal.getsignal(signal.SIGINT)  # a process started in the background may begin with SIGINT ignored
    verdicts = []
    thread = threading.Thread(target=lambda: verdicts.append(check("03.fuse", spin)))
    thread.start()
    thread.join(100 * SHORT)
    assert verdicts and "still running" in verdicts[0].text
    monkeypatch.setattr(deadline, "_alarm", deadline._interrupt)  # what a platform without setitimer gets
    assert "still running" in check("03.fuse", spin).text
    assert signal.getsignal(signal.SIGINT) is before  # the check's own handler is gone again


def test_the_stop_button_still_stops_a_check(short_limit):
    def interrupted(actions):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check("03.fuse", interrupted)


def test_exit_in_the_learners_code_is_a_verdict_not_the_end_of_the_kernel():
    verdict = check("03.fuse", lambda actions: sys.exit(3))
    assert verdict.status == "wrong" and "called exit()" in verdict.text and "return a value" in verdict.text

    class Exits(dict):  # exit() in a method of the answer: the checker reads a plain copy, so it never runs
        def get(self, *args):
            raise SystemExit(0)

    assert check("02.break", Exits(checkpoint=2, savings=19)).status == "correct"


def test_feedback_is_cut_to_a_length_whatever_the_learners_code_says_or_returns():
    def shouts(actions):
        raise ValueError("x" * 200_000)

    def returns_a_mountain(actions):
        return ["stop"] * 200_000

    for learner in (shouts, returns_a_mountain):
        verdict = check("03.fuse", learner)
        assert verdict.status == "wrong" and len(verdict.text) < 8 * exercises.FIELD_CHARS, len(verdict.text)


def test_a_fuse_that_never_stops_gets_the_hint_of_the_first_case_not_a_crash():
    verdict = check("03.fuse", lambda actions: False)
    assert verdict.status == "wrong" and "could not read" not in verdict.text
    assert "compare the last action with the one before it" in verdict.text


# --- predictions -------------------------------------------------------------------------------------


def test_a_wrong_prediction_says_which_way_it_is_wrong_and_shows_the_truth_only_when_asked_or_after_three_tries():
    exercises.REGISTRY.tries.pop("03.predict", None)
    exercises.REGISTRY.shown.discard("03.predict")
    truth = "wanderer, fuse on, max_steps=8: (8, 8)"
    wrong = {"wanderer, fuse on, max_steps=8": (9, 8), "stuck, fuse off, max_steps=8, fallback": (9, 8),
             "format breaker, max_steps=2, fallback": (3, 0)}
    first = check("03.predict", wrong)
    assert "wanderer, fuse on, max_steps=8 (9, 8): LLM calls too high" in first.text
    assert "format breaker, max_steps=2, fallback (3, 0): tool calls too low" in first.text
    assert truth not in first.text and "(8, 8)" not in first.text and "reveal=True" in first.text
    assert truth not in check("03.predict", wrong).text  # the second try: still hidden
    third = check("03.predict", wrong)
    assert truth in third.text and "why:" in third.text  # the third: shown, with the reasons
    exercises.REGISTRY.tries.pop("03.predict", None)
    asked = check("03.predict", dict.fromkeys(wrong, ...), reveal=True)
    assert asked.status == NOT_DONE and truth in asked.text
    assert "answer shown" in progress("03")
    exercises.REGISTRY.shown.discard("03.predict")


def test_every_prediction_hides_its_numbers_from_a_first_wrong_guess():
    for chapter in exercises.CHAPTERS[: exercises.CHAPTERS.index("14")]:
        exercises._load(chapter)
        for id, right in solutions(chapter).items():
            exercise = exercises.REGISTRY.exercises.get(id)
            if exercise is None or exercise.kind != "predict" or not isinstance(right, dict):
                continue
            exercises.REGISTRY.tries.pop(id, None)
            wrong = {row: (tuple(n + 1 for n in value) if isinstance(value, tuple) else value + 1)
                     for row, value in right.items()}
            verdict = check(id, wrong)
            assert verdict.status == "wrong" and " too high" in verdict.text, verdict.text
            for row, value in right.items():
                assert f"{row}: {value}" not in verdict.text, (id, row)
            exercises.REGISTRY.tries.pop(id, None)


# --- the progress file ---------------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTKIT_PROGRESS", raising=False)
    exercises.REGISTRY.done.clear()
    yield tmp_path
    exercises.REGISTRY.done.clear()


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="symlinks need privileges on Windows")
def test_a_progress_file_that_is_a_link_is_never_written_through_read_or_removed(folder):
    target = folder / "precious.txt"
    target.write_text("the notes someone keeps\n")
    (folder / ".agentkit-progress.json").symlink_to(target)
    assert quiz("03.q1", "d").ok and check("03.fuse", solutions("03")["03.fuse"]).ok
    assert target.read_text() == "the notes someone keeps\n"
    assert (folder / ".agentkit-progress.json").is_symlink()
    assert "is a link" in progress("03") and "kept in this kernel only" in progress("03")
    reset_progress()
    assert (folder / ".agentkit-progress.json").is_symlink() and target.exists()
    assert sorted(p.name for p in folder.iterdir()) == [".agentkit-progress.json", "precious.txt"]  # no temp file


def test_a_deeply_nested_or_damaged_progress_file_counts_as_empty_and_never_raises(folder):
    (folder / ".agentkit-progress.json").write_text("[" * 200_000)
    assert "0 of 5 done" in progress("03")
    assert quiz("03.q1", "d").ok and check("03.fuse", solutions("03")["03.fuse"]).ok
    assert json.loads((folder / ".agentkit-progress.json").read_text()) == {"03.fuse": "correct", "03.q1": "correct"}
    (folder / ".agentkit-progress.json").write_text(json.dumps({"03.q1": "correct", "03.fuse": {"x": 1}, "7": 7}))
    exercises.REGISTRY.done.clear()
    assert "1 of 5 done" in progress("03")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_place_of_the_progress_file_does_not_block_the_kernel(folder):
    os.mkfifo(folder / ".agentkit-progress.json")
    said = []
    thread = threading.Thread(target=lambda: said.append((progress("03"), quiz("03.q1", "d"))), daemon=True)
    thread.start()
    thread.join(5)
    assert said and "not a regular file" in said[0][0] and said[0][1].ok


def test_solved_exercises_are_written_whole_with_nothing_left_beside_them(folder):
    assert quiz("03.q1", "d").ok and quiz("03.q2", "a").ok
    assert [p.name for p in folder.iterdir()] == [".agentkit-progress.json"]
    assert json.loads((folder / ".agentkit-progress.json").read_text()) == {"03.q1": "correct", "03.q2": "correct"}


# --- worked solutions, where the learner is ----------------------------------------------------------


def test_every_worked_solution_can_be_shown_from_the_installed_package():
    from agentkit.exercises.worked import solutions_file

    try:
        for chapter in exercises.CHAPTERS:
            for id, answer in solutions(chapter).items():
                text = show_solution(id)
                assert id in text and "No worked solution" not in text, id
                if callable(answer):
                    assert f"def {answer.__name__}(" in text, id
            assert "SOLUTIONS" in solutions_file(chapter)
        assert "No exercise" in show_solution("03.nope")
    finally:
        exercises.REGISTRY.shown.clear()  # every later check in this process would match an answer shown


def test_the_exercise_cells_stub_is_answered_at_once_without_a_process_or_a_warm_up(monkeypatch):
    """A notebook run as shipped checks every stub: no fork, no preparation, nothing of the answer called."""
    def no_fork(*args, **kwargs):
        raise AssertionError("a stub was sent to a forked check")

    monkeypatch.setattr(exercises.forked, "run", no_fork)
    monkeypatch.setattr(exercises, "_warm", no_fork)

    def my_fuse(actions):
        """actions: the (tool, input) pairs asked for so far, the newest last. Return True to stop the run."""
        raise NotImplementedError("your code here")

    for id, stub in [("03.fuse", my_fuse), ("03.predict", {"wanderer, fuse on, max_steps=8": ...}),
                     ("00.break", {"name": ..., "prompt": ...}), ("01.break", None)]:
        verdict = check(id, stub)
        assert verdict.status == NOT_DONE and verdict.path == "in-process", (id, verdict.text)

    def later(actions):  # raises only sometimes: it is code, and runs as code does
        if len(actions) > 2:
            raise NotImplementedError("later")
        return False

    with pytest.raises(AssertionError, match="forked check"):
        check("03.fuse", later)
