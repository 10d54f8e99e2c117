"""Self-check exercises of chapters 05 and 03b: every check passes its worked solution, fails a typical wrong answer
with the hint meant for it, says "not done yet" to the notebook's stub, and never raises on a half-written answer.
Chapter 03b's checks read the shipped recording of SmolLM2 only: no model, no network."""
from __future__ import annotations

import re

import pytest

from agentkit import exercises
from agentkit.exercises import NOT_DONE, check, progress, quiz
from agentkit.exercises.ch03b import RUNS
from agentkit.exercises.ch05 import PREDICT_RUNS

from test_exercises import each_has_a_solution_and_a_wrong_answer, fails_with_hint, in_process  # noqa: F401 - in_process is a fixture

CHAPTERS = ("05", "03b")
PICKY, FUSSY, NEVER = PREDICT_RUNS
CHAT, FEW_SHOT = RUNS
RIGHT_05 = {PICKY: (2, 4), FUSSY: (3, 6), NEVER: (5, 10)}
RECORDED_STEP_2 = "Thought: He was born in 1955. Years times 365 gives the days.\nAction: Calculate[365 * 365]"


@pytest.fixture(autouse=True)
def checks_in_this_process(in_process):
    """These tests read the checks' logic, in this process; test_exercises.py shows, exercise by exercise, that the
    forked path a learner's kernel takes gives the same verdicts."""


def chapter_of(id: str) -> str:
    return id.split(".")[0]


# --- chapter 05: typical wrong answers --------------------------------------------------------------


def word_anywhere(review):  # section 1's sloppy check, dressed up
    text = review.upper()
    return "pass" if "PASS" in text else "revise" if "REVISE" in text else "missing"


def search_last_line(review):  # the last line, but searched rather than matched whole
    lines = [line for line in review.splitlines() if line.strip()]
    match = re.search(r"VERDICT:\s*(PASS|REVISE)", lines[-1], re.IGNORECASE) if lines else None
    return match.group(1).lower() if match else "missing"


def first_verdict_line(review):  # reads the first verdict line, wherever it stands
    for line in review.splitlines():
        match = re.fullmatch(r"\**\s*VERDICT\s*:\s*(PASS|REVISE)\s*\**", line.strip(), re.IGNORECASE)
        if match:
            return match.group(1).lower()
    return "missing"


def exact_case(review):  # the last non-empty line, compared as written
    lines = [line.strip() for line in review.splitlines() if line.strip()]
    return {"VERDICT: PASS": "pass", "VERDICT: REVISE": "revise"}.get(lines[-1] if lines else "", "missing")


def no_empty_check(review):  # right on every review with a line in it, raises on an empty one
    last = [line.strip() for line in review.splitlines() if line.strip()][-1]
    match = re.fullmatch(r"\**\s*VERDICT\s*:\s*(PASS|REVISE)\s*\**", last, re.IGNORECASE)
    return match.group(1).lower() if match else "missing"


# --- chapter 03b: typical wrong answers -------------------------------------------------------------


def word_anywhere_flag(reply):
    return "Observation" in reply


def line_start_exact(reply):  # at the start of a line, but only as written: no spaces, no other case
    return bool(re.search(r"^Observation", reply, re.MULTILINE))


def no_markdown(reply):  # spaces and case allowed, Markdown emphasis not
    return bool(re.search(r"^\s*observation", reply, re.IGNORECASE | re.MULTILINE))


def last_line_only(reply):
    return reply.strip().splitlines()[-1].startswith("Observation") if reply.strip() else False


WRONG = [
    ("05.predict", {**RIGHT_05, NEVER: (5, 11)}, "without asking for another revision"),
    ("05.predict", {**RIGHT_05, FUSSY: (4, 8)}, "caps the drafts"),
    ("05.predict", {**RIGHT_05, PICKY: (4, 8)}, "a cap, not a target"),
    ("05.verdict", word_anywhere, "never for the word anywhere"),
    ("05.verdict", search_last_line, "a full match"),
    ("05.verdict", first_verdict_line, "LAST non-empty line"),
    ("05.verdict", exact_case, "ignore case"),
    ("05.verdict", no_empty_check, "never index an empty list"),
    ("05.break", "1 / 0", "must stop a real write"),
    ("05.break", "open('planted.txt', 'w').write('x')", "write to TARGET itself"),
    ("05.q1", "a", "how ReAct re-sends its history"),
    ("05.q2", "b", "process sandbox's guard rail"),
    ("03b.count", {CHAT: (0, 0), FEW_SHOT: (3, 3)}, "a tool named ToolName"),
    ("03b.count", {CHAT: (0, 1), FEW_SHOT: (2, 3)}, "every few-shot reply holds a readable action"),
    ("03b.flag", word_anywhere_flag, "start of each line only"),
    ("03b.flag", line_start_exact, "allow spaces before it"),
    ("03b.flag", no_markdown, "Markdown emphasis"),
    ("03b.flag", last_line_only, "the loop adds its Observations later"),
    ("03b.break", RECORDED_STEP_2, "the recorded reply stops at its ']'"),
    ("03b.break", "Thought: t\nAction: Search[Steve Jobs]\nObservation: invented", "copy a reply from few_shot_agent"),
    ("03b.break", "Thought: I have the answer.\nAction: Finish[133225]\n\nNow the real question.\n", "a Finish calls no tool"),
    ("03b.q1", "b", "the fuse compares actions"),
    ("03b.q2", "c", "the raw reply keeps it"),
]


@pytest.mark.parametrize("id, wrong, hint", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_with_the_hint_meant_for_it(id, wrong, hint):
    fails_with_hint(id, wrong, hint)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_and_question_has_a_solution_and_a_wrong_answer_tested(chapter):
    each_has_a_solution_and_a_wrong_answer(chapter, WRONG)
    kinds = {e.kind for e in exercises.REGISTRY.exercises.values() if chapter_of(e.id) == chapter}
    assert kinds == {"predict", "build", "break"}
    assert sum(1 for q in exercises.REGISTRY.questions if chapter_of(q) == chapter) == 2


def stub(*args):
    raise NotImplementedError("your code here")


STUBS = [  # what the notebooks' exercise cells hold before the learner writes anything
    ("05.predict", dict.fromkeys(PREDICT_RUNS, ...)), ("05.verdict", stub), ("05.break", None),
    ("03b.count", dict.fromkeys(RUNS, ...)), ("03b.flag", stub), ("03b.break", None),
    ("05.verdict", ...), ("03b.count", None),
]


@pytest.mark.parametrize("id, unsolved", STUBS, ids=[f"{s[0]}-{i}" for i, s in enumerate(STUBS)])
def test_the_stub_is_not_done_yet_never_correct(id, unsolved):
    verdict = check(id, unsolved)
    assert verdict.status == NOT_DONE and NOT_DONE in verdict.text


HALF_WRITTEN = [
    ("05.predict", {**RIGHT_05, NEVER: "five"}), ("05.predict", {**RIGHT_05, PICKY: (2,)}),
    ("05.verdict", lambda review: review.splitlines()[-1]), ("05.verdict", lambda: "pass"), ("05.verdict", 42),
    ("05.break", 42),
    ("03b.count", {CHAT: (0,), FEW_SHOT: (3, 3)}), ("03b.count", [0, 1]),
    ("03b.flag", lambda reply: 1 / 0), ("03b.flag", lambda reply: reply.splitlines()[0]), ("03b.flag", "Observation"),
    ("03b.break", 42), ("03b.break", RECORDED_STEP_2[:-5]),
]


@pytest.mark.parametrize("id, broken", HALF_WRITTEN, ids=[f"{h[0]}-{i}" for i, h in enumerate(HALF_WRITTEN)])
def test_a_half_written_answer_never_raises_and_says_what_happened(id, broken):
    verdict = check(id, broken)
    assert verdict.status == "wrong"
    assert "case:" in verdict.text and "hint:" in verdict.text


def test_a_wrong_answer_at_every_option_explains_itself_and_the_right_one_explains_all():
    for chapter in CHAPTERS:
        exercises._load(chapter)
    for id, q in exercises.REGISTRY.questions.items():
        if chapter_of(id) not in CHAPTERS:
            continue
        assert len(q.options) == 4 and all(why.strip() for _, _, why in q.options.values()), id
        right = quiz(id, q.answer)
        assert right.ok and all(f"  {letter})" in right.text for letter in q.options if letter != q.answer)
        for letter in q.options:
            if letter != q.answer:
                wrong = quiz(id, letter)
                assert wrong.status == "wrong" and q.hint in wrong.text


def test_chapter_03b_is_found_by_its_id_and_kept_apart_from_chapter_03_in_progress():
    assert exercises._find("exercise", "03b.flag").id == "03b.flag"
    assert "03b." not in progress("03") and "03." not in progress("03b").replace("03b.", "")
    listed = re.findall(r"^  (\S+)", progress("03b"), re.MULTILINE)
    assert listed == ["03b.count", "03b.flag", "03b.break", "03b.q1", "03b.q2"]
    assert "of 5 done." in progress("03b")
