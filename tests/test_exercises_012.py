"""Self-check exercises of chapters 00, 01 and 02: every check passes its worked solution, fails a typical wrong
answer with the hint meant for it, says "not done yet" to the stub, and never raises on a half-written answer."""
from __future__ import annotations

import math
import re

import pytest

from agentkit import exercises, tokens
from agentkit.exercises import NOT_DONE, check

from test_exercises import each_has_a_solution_and_a_wrong_answer, fails_with_hint, in_process, solutions  # noqa: F401 - in_process is a fixture

CHAPTERS = ["00", "01", "02"]


@pytest.fixture(autouse=True)
def checks_in_this_process(in_process):
    """These tests read the checks' logic, in this process; test_exercises.py shows, exercise by exercise, that the
    forked path a learner's kernel takes gives the same verdicts."""


SOLVED = {chapter: solutions(chapter) for chapter in CHAPTERS}


def with_changes(id, **changes):
    """The worked prediction of `id` with some numbers changed, keyed as in the exercise cell."""
    solved = dict(SOLVED[id[:2]][id])
    for key, value in changes.items():
        solved[key.replace("_", " ")] = value
    return solved


# --- chapter 00: typical wrong answers -------------------------------------------------------------


def bill_once(history):  # counts the conversation once, as if the model remembered it
    return tokens.count_messages(history)


def bill_with_replies(history):  # each prompt wrongly includes the reply it got back
    return sum(tokens.count_messages(history[: i + 1]) for i, m in enumerate(history) if m["role"] == "assistant")


def bill_text_only(history):  # re-sends right, but counts only the text, not the chat wrapper
    prompts = [history[:i] for i, m in enumerate(history) if m["role"] == "assistant"]
    return sum(tokens.count_tokens(m["content"]) for p in prompts for m in p)


def bill_every_prefix(history):  # one prompt per message instead of one per user turn
    return sum(tokens.count_messages(history[:i]) for i in range(1, len(history) + 1))


def bill_last_message_only(history):  # each call billed for its newest message only
    return sum(tokens.count_messages([history[i - 1]]) for i, m in enumerate(history) if m["role"] == "assistant")


# --- chapter 01 ------------------------------------------------------------------------------------


def guard_computes(base, exponent):  # computes the very power it should judge
    return abs(base ** exponent) <= 1e100


def guard_math_pow(base, exponent):  # computes in floats: overflows instead of deciding
    return math.pow(base, exponent) <= 1e100


def guard_no_abs(base, exponent):
    return exponent * math.log10(base) <= 100


def guard_no_zero(base, exponent):
    return exponent * math.log10(abs(base)) <= 100


def guard_abs_exponent(base, exponent):  # loses the sign: a fraction to a negative power looks small
    return base == 0 or abs(exponent) * math.log10(abs(base)) <= 100


def guard_exponent_cap(base, exponent):  # agentkit's first bound alone: no size estimate
    return abs(exponent) <= 1000


# --- chapter 02 ------------------------------------------------------------------------------------

TINY_ACTION = re.compile(r"^Action:\s*(\w+)\[(.*)\]\s*$", re.MULTILINE)


def tiny_parse(reply):  # section 2's own parser: case-sensitive
    match = TINY_ACTION.search(reply)
    return (match.group(1), match.group(2)) if match else (None, None)


def lazy_parse(reply):
    match = re.search(r"action:\s*(\w+)\[(.*?)\]", reply, re.IGNORECASE)
    return (match.group(1), match.group(2)) if match else (None, None)


def greedy_parse(reply):
    match = re.search(r"action:\s*(\w+)\[(.*)\]", reply, re.IGNORECASE)
    return (match.group(1), match.group(2)) if match else (None, None)


def dotall_parse(reply):  # the incident's mistake: a greedy group across lines
    match = re.search(r"action:\s*(\w+)\[(.*)\]", reply, re.IGNORECASE | re.DOTALL)
    return (match.group(1), match.group(2)) if match else (None, None)


def _bracketed(reply, match):
    depth, start = 1, match.end()
    for end in range(start, len(reply)):
        if reply[end] == "\n":
            break
        depth += (reply[end] == "[") - (reply[end] == "]")
        if depth == 0:
            return match.group(1), reply[start:end]
    return match.group(1), reply[start:]


def last_action_parse(reply):  # counts brackets right, but takes the LAST action
    matches = list(re.finditer(r"action\s*:\s*(\w+)\s*\[", reply, re.IGNORECASE))
    return _bracketed(reply, matches[-1]) if matches else (None, None)


def raising_parse(reply):  # forgets the reply with no action: match is None
    return _bracketed(reply, re.search(r"action\s*:\s*(\w+)\s*\[", reply, re.IGNORECASE))


WRONG = [
    ("00.predict", with_changes("00.predict", messages_in_the_last_call=12), "two messages in the history"),
    ("00.predict", with_changes("00.predict", prompt_tokens_of_the_last_call=37), "costs what the first one did"),
    ("00.predict", with_changes("00.predict", **{"prompt_tokens,_all_calls": 356 * 12}), "twelve last calls"),
    ("00.predict", with_changes("00.predict", **{"prompt_tokens,_all_calls": 356}), "the last call alone"),
    ("00.bill", bill_once, "the model is stateless"),
    ("00.bill", bill_last_message_only, "the model is stateless"),
    ("00.bill", bill_every_prefix, "one call per user turn, not one per message"),
    ("00.bill", bill_with_replies, "a call sends what came before its reply"),
    ("00.bill", bill_text_only, "a chat request costs more than its text"),
    ("00.break", {"name": "Ada", "prompt": "Hi, my name is Ada. What is my name?"}, "it found the name"),
    ("00.break", {"name": "Ada", "prompt": "Hi, I'm Ada."}, "ask 'What is my name?'"),
    ("00.break", {"name": "Ada", "prompt": "What is my name?"}, "put the name in it"),
    ("00.q1", "a", "The same `llm` answered both calls"),
    ("00.q2", "b", "A real model does not follow rules"),
    ("01.predict", {"entries in tools.log": 6, "ok": 3, "error observations": 3}, "every call is logged"),
    ("01.predict", {"entries in tools.log": 8, "ok": 2, "error observations": 6}, "A Search miss is an answer"),
    ("01.predict", {"entries in tools.log": 8, "ok": 4, "error observations": 4}, "an empty query is not"),
    ("01.predict", {"entries in tools.log": 8, "ok": 3, "error observations": 4}, "add up to the entries"),
    ("01.guard", guard_computes, "decide before computing"),
    ("01.guard", guard_math_pow, "decide before computing"),
    ("01.guard", guard_no_abs, "use abs(base)"),
    ("01.guard", guard_no_zero, "log10(0) is undefined"),
    ("01.guard", guard_abs_exponent, "keep the signs"),
    ("01.guard", guard_exponent_cap, "10 ** 101 is over 1e100"),
    ("01.break", "__import__('os').system('id')", "the filter only knows these words"),
    ("01.break", "2 + 2", "eval would call nothing"),
    ("01.break", "print(1)", "eval would call print, which reaches nothing"),
    ("01.break", "lambda: vars()", "a lambda never called"),
    ("01.break", "x = vars()", "eval runs one expression"),
    ("01.q1", "d", "Sizes are a separate bound"),
    ("01.q2", "c", "the registry catches every Exception"),
    ("02.predict", with_changes("02.predict", times_the_first_observation_is_sent=20), "did not send its result"),
    ("02.predict", with_changes("02.predict", times_the_first_observation_is_sent=1), "the model is stateless"),
    ("02.predict", with_changes("02.predict", **{"observations_sent,_whole_run": 19}), "re-sends ALL"),
    ("02.predict", with_changes("02.predict", **{"observations_sent,_whole_run": 400}), "half of calls x calls"),
    ("02.parse", tiny_parse, "re.IGNORECASE"),
    ("02.parse", lazy_parse, "A lazy (.*?) stops at the first"),
    ("02.parse", greedy_parse, "a greedy (.*) runs to the last"),
    ("02.parse", dotall_parse, "Under re.DOTALL"),
    ("02.parse", last_action_parse, "take the FIRST action"),
    ("02.parse", raising_parse, "never an exception"),
    ("02.break", {"checkpoint": 3, "savings": 19}, "the Finish reply is a step too"),
    ("02.break", {"checkpoint": 2, "savings": 20}, "the Finish reply is a step too"),
    ("02.break", {"checkpoint": 2, "savings": 18}, "find the largest budget"),
    ("02.break", {"checkpoint": 0, "savings": 19}, "at least one step"),
    ("02.q1", "b", "re-sending it alone makes a straight line"),
    ("02.q2", "d", "the loop would spin"),
]


@pytest.mark.parametrize("id, wrong, hint", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_with_the_hint_meant_for_it(id, wrong, hint):
    fails_with_hint(id, wrong, hint)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_and_question_has_a_solution_and_a_wrong_answer_tested(chapter):
    each_has_a_solution_and_a_wrong_answer(chapter, WRONG)
    kinds = [e.kind for e in exercises.REGISTRY.exercises.values() if e.id.startswith(chapter + ".")]
    assert sorted(kinds) == ["break", "build", "predict"]
    assert sum(1 for q in exercises.REGISTRY.questions if q.startswith(chapter + ".")) == 2


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_option_of_every_question_is_explained(chapter):
    exercises._load(chapter)
    for q in exercises.REGISTRY.questions.values():
        if q.id.startswith(chapter + "."):
            assert len(q.options) == 4 and all(why.strip() for _, _, why in q.options.values())
            assert "section" in q.hint


def stub(*args):
    raise NotImplementedError("your code here")


STUBS = [
    ("00.predict", {"messages in the last call": ..., "prompt tokens of the last call": ..., "prompt tokens, all calls": ...}),
    ("00.predict", {"messages in the last call": 24, "prompt tokens of the last call": 356, "prompt tokens, all calls": ...}),
    ("00.bill", stub), ("00.bill", None),
    ("00.break", {"name": ..., "prompt": ...}), ("00.break", {"name": "Ada", "prompt": None}),
    ("01.predict", {"entries in tools.log": ..., "ok": ..., "error observations": ...}),
    ("01.guard", stub), ("01.break", None),
    ("02.predict", {"times the first observation is sent": ..., "observations sent, whole run": ...}),
    ("02.parse", stub), ("02.break", {"checkpoint": ..., "savings": ...}), ("02.break", {"checkpoint": 2, "savings": ...}),
]


@pytest.mark.parametrize("id, unsolved", STUBS, ids=[f"{s[0]}-{i}" for i, s in enumerate(STUBS)])
def test_the_stub_is_not_done_yet_never_correct(id, unsolved):
    verdict = check(id, unsolved)
    assert verdict.status == NOT_DONE and NOT_DONE in verdict.text


BROKEN = [lambda: True, lambda *args: 1 / 0, lambda *args: args[7], 42, "text", lambda *args: "a string",
          lambda *args: ("one", "two", "three")]


@pytest.mark.parametrize("id", ["00.bill", "01.guard", "02.parse"])
@pytest.mark.parametrize("broken", BROKEN, ids=range(len(BROKEN)))
def test_a_half_written_answer_never_raises_and_says_what_happened(id, broken):
    verdict = check(id, broken)
    assert verdict.status == "wrong"
    assert "case:" in verdict.text and "hint:" in verdict.text


@pytest.mark.parametrize("id", ["01.guard", "02.parse"])
def test_a_function_that_forgets_to_return_is_told_so(id):
    verdict = check(id, lambda *args: None)
    assert verdict.status == "wrong" and "returned nothing" in verdict.text


@pytest.mark.parametrize("id, odd", [("00.predict", {"messages in the last call": "many", "prompt tokens of the last call": 1,
                                                     "prompt tokens, all calls": 1}),
                                     ("01.predict", [8, 3, 5]), ("02.break", {"checkpoint": 2.5, "savings": 19}),
                                     ("00.break", {"name": 7, "prompt": "What is my name?"}), ("01.break", 42)])
def test_an_answer_of_the_wrong_shape_is_explained_not_raised(id, odd):
    verdict = check(id, odd)
    assert verdict.status == "wrong" and "hint:" in verdict.text


def test_a_guard_that_computes_is_stopped_before_it_computes_anything_large(monkeypatch):
    monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")  # the spy's list must fill in this process
    powers = []

    def spy(base, exponent):
        powers.append((type(base).__name__, type(exponent).__name__))
        return base ** exponent <= 1e100

    verdict = check("01.guard", spy)
    assert verdict.status == "wrong" and "your guard computed 2 ** 10" in verdict.text
    assert len(powers) == 1  # the first case stops the check: 9 ** 9 ** 9 is never attempted
