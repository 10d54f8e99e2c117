"""Self-check exercises of chapter 16: every check passes its worked solution, fails a typical wrong answer with the
hint meant for it, says "not done yet" to the stub, and never raises on a half-written answer."""
from __future__ import annotations

import pytest

from agentkit import exercises
from agentkit.exercises import NOT_DONE, check, quiz

from test_exercises import each_has_a_solution_and_a_wrong_answer, fails_with_hint, in_process  # noqa: F401 - in_process is a fixture


@pytest.fixture(autouse=True)
def checks_in_this_process(in_process):
    """These tests read the checks' logic, in this process; test_exercises.py shows, exercise by exercise, that the
    forked path a learner's kernel takes gives the same verdicts."""


@pytest.fixture(autouse=True, scope="module")
def _frameworks():
    """Skip without the bridge; imported here, not at collection, where every pytest worker would pay for it."""
    pytest.importorskip("langgraph")
    pytest.importorskip("smolagents")


def stub(*args):
    raise NotImplementedError("your code here")


def old_names(record, provider):  # the token names of older versions of the conventions
    return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": record.model,
            "gen_ai.request.temperature": float(record.temperature),
            "gen_ai.usage.prompt_tokens": record.prompt_tokens, "gen_ai.usage.completion_tokens": record.completion_tokens}


def system_not_provider(record, provider):
    return {"gen_ai.operation.name": "chat", "gen_ai.system": provider, "gen_ai.request.model": record.model,
            "gen_ai.request.temperature": float(record.temperature),
            "gen_ai.usage.input_tokens": record.prompt_tokens, "gen_ai.usage.output_tokens": record.completion_tokens}


def integer_temperature(record, provider):  # 1 where the span holds 1.0
    return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": record.model,
            "gen_ai.request.temperature": record.temperature,
            "gen_ai.usage.input_tokens": record.prompt_tokens, "gen_ai.usage.output_tokens": record.completion_tokens}


AGENTKIT, LANGGRAPH, SMOLAGENTS = "agentkit, max_steps=7, finish_fallback=True", "LangGraph, max_steps=7", \
    "smolagents, max_steps=7"
RIGHT = {AGENTKIT: (3, 1), LANGGRAPH: (7, 7), SMOLAGENTS: (8, 7)}
SECTION_4_CHAT = "Sure! Steve Jobs was born in the fifties, so it must be a lot of days. Let me think it over."
WRONG = [
    ("16.predict", {AGENTKIT: (3, 1), LANGGRAPH: (3, 1), SMOLAGENTS: (3, 1)}, "create_agent has no repeat fuse"),
    ("16.predict", {**RIGHT, SMOLAGENTS: (7, 7)}, "asks the model once more"),
    ("16.predict", {**RIGHT, AGENTKIT: (2, 1)}, "after ANY stop that is not a Finish"),
    ("16.predict", {**RIGHT, AGENTKIT: (3, 2)}, "before its tool runs"),
    # copied printouts: section 4's stuck runs at max_steps=5, without finish_fallback
    ("16.predict", {AGENTKIT: (2, 1), LANGGRAPH: (5, 5), SMOLAGENTS: (6, 5)}, "create_agent has no repeat fuse"),
    ("16.span", old_names, "names of older versions"),
    ("16.span", system_not_provider, "gen_ai.system is the older name"),
    ("16.span", integer_temperature, "temperature as a float"),
    ("16.break", "Thought: I look it up.\nAction: Search[Steve Jobs]", "Write a reply with no Action line"),
    ("16.break", "The answer is 25185.", "the right answer"),
    ("16.break", SECTION_4_CHAT, "section 4 runs the format breaker's chat"),
    ("16.break", "  sure!  Steve Jobs was born in the fifties, so it must be a lot of", "a chat of your own"),
    ("16.q1", "b", "section 8's ChatOpenAI"),
    ("16.q2", "c", "recommended attributes"),
]
STUBS = [("16.predict", {AGENTKIT: (..., ...), LANGGRAPH: (..., ...), SMOLAGENTS: (..., ...)}),
         ("16.predict", dict.fromkeys(RIGHT, ...)), ("16.span", stub), ("16.break", None)]
BROKEN = [("16.predict", {AGENTKIT: "two"}), ("16.span", lambda record: {}), ("16.break", 42)]


@pytest.mark.parametrize("id, wrong, hint", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_with_the_hint_meant_for_it(id, wrong, hint):
    fails_with_hint(id, wrong, hint)


def test_every_exercise_and_question_has_a_solution_a_wrong_answer_and_a_stub_tested():
    ids = each_has_a_solution_and_a_wrong_answer("16", WRONG)
    coding = {id for id in ids if ".q" not in id}
    assert coding == {id for id, _ in STUBS} == {id for id, _ in BROKEN}
    assert {e.kind for e in exercises.REGISTRY.exercises.values() if e.id.startswith("16.")} == {"predict", "build", "break"}
    for q in [q for q in exercises.REGISTRY.questions.values() if q.id.startswith("16.")]:
        assert q.hint and quiz(q.id, q.answer).ok


@pytest.mark.parametrize("id, unsolved", STUBS, ids=[s[0] for s in STUBS])
def test_the_stub_is_not_done_yet_never_correct(id, unsolved):
    verdict = check(id, unsolved)
    assert verdict.status == NOT_DONE and NOT_DONE in verdict.text, verdict.text


@pytest.mark.parametrize("id, broken", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_half_written_answer_never_raises_and_says_what_happened(id, broken):
    verdict = check(id, broken)
    assert verdict.status == "wrong" and "case:" in verdict.text and "hint:" in verdict.text, verdict.text
