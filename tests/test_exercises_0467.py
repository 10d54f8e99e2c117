"""Self-check exercises of chapters 04, 06 and 07: every check passes its worked solution, fails a typical wrong
answer with the hint meant for it, says "not done yet" to the notebook's stub, and never raises on a half-written
answer."""
from __future__ import annotations

import ast
import json
import re
from fractions import Fraction

import pytest

from agentkit import exercises
from agentkit.exercises import NOT_DONE, check, quiz

from test_exercises import each_has_a_solution_and_a_wrong_answer, fails_with_hint, in_process  # noqa: F401 - in_process is a fixture

CHAPTERS = ("04", "06", "07")

# --- chapter 04 ---------------------------------------------------------------------------------------

PREDICT_04 = {"step 2 fails once, max_attempts=1": (10, 4), "step 2 always fails, max_attempts=3": (14, 6),
              "step 3 always fails, max_replans=0": (9, 4)}


@pytest.fixture(autouse=True)
def checks_in_this_process(in_process):
    """These tests read the checks' logic, in this process; test_exercises.py shows, exercise by exercise, that the
    forked path a learner's kernel takes gives the same verdicts."""


def tiny_parse_plan(raw):  # section 1's parser, copied as it is: objects stay dicts, no length check
    fenced = re.search(r"```(?:json)?\s*(.*?)```", raw, re.DOTALL)
    text = fenced.group(1) if fenced else raw
    steps, _ = json.JSONDecoder().raw_decode(text, text.find("["))
    return steps


def _steps(items):
    return [item["task"] if isinstance(item, dict) else item for item in items]


def first_bracket_only(raw):  # handles fences and objects, but decodes from the first "[" only
    return _steps(tiny_parse_plan(raw))


def _every_bracket(raw):
    for chunk in re.findall(r"```(?:json)?\s*(.*?)```", raw, re.DOTALL) + [raw]:
        for bracket in re.finditer(r"\[", chunk):
            try:
                value, _ = json.JSONDecoder().raw_decode(chunk, bracket.start())
            except ValueError:
                continue
            if isinstance(value, list):
                return value
    raise ValueError(f"no JSON list in {raw[:200]!r}")


def no_length_check(raw):  # finds the list well, never asks how long it is
    return _steps(_every_bracket(raw))


def strict_upper_bound(raw):  # `< 10` where the limit is 1 to 10, both included
    steps = no_length_check(raw)
    if not 1 <= len(steps) < 10:
        raise ValueError(f"bad plan length {len(steps)}: {raw[:200]!r}")
    return steps


def unquoted_errors(raw):  # validates everything, but its errors do not say what the model wrote
    try:
        items = _every_bracket(raw)
    except ValueError:
        raise ValueError("no plan") from None
    steps = _steps(items)
    if not 1 <= len(steps) <= 10 or not all(isinstance(s, str) and s.strip() for s in steps):
        raise ValueError("bad plan")
    return steps


# --- chapter 06 ---------------------------------------------------------------------------------------

PREDICT_06 = {"confidence 0.7, threshold 0.3": (4, 15), "confidence 0.5, threshold 0.4": (2, 7),
              "confidence 0.9, threshold 0.1": (6, 23)}
FIELDS = ("trigger", "error_type", "fix", "applies_to")


def json_loads_only(reply):  # the model's prose and fences make it raise
    return json.loads(reply)


def whole_object(reply):  # finds the object, but keeps every key and the raw whitespace
    text = "" if reply is None else str(reply)
    try:
        data = json.loads(text[text.find("{"):text.rfind("}") + 1])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def no_empty_check(reply):  # four fields, folded, but an empty or missing one still makes a "lesson"
    data = whole_object(reply)
    return None if data is None else {f: " ".join(str(data.get(f) or "").split()) for f in FIELDS}


def lets_json_errors_out(reply):  # right on good replies, raises on a broken one
    text = "" if reply is None else str(reply)
    start, end = text.find("{"), text.rfind("}")
    if start == -1:
        return None
    data = json.loads(text[start:end + 1])
    lesson = {f: " ".join(str(data.get(f) or "").split()) for f in FIELDS} if isinstance(data, dict) else {}
    return lesson if lesson and all(lesson.values()) else None


def reply_must_be_text(reply):  # the solution's parser, minus the guard for a reply of None
    start, end = reply.find("{"), reply.rfind("}")
    if start == -1 or end < start:
        return None
    try:
        data = json.loads(reply[start:end + 1])
    except ValueError:
        return None
    lesson = {f: " ".join(str(data.get(f) or "").split()) for f in FIELDS} if isinstance(data, dict) else {}
    return lesson if lesson and all(lesson.values()) else None


def unrounded(confidence, success, threshold):
    new = min(1.0, max(0.0, confidence + (0.1 if success else -0.2)))
    return new, new < threshold


def at_or_below(confidence, success, threshold):
    new = round(min(1.0, max(0.0, confidence + (0.1 if success else -0.2))), 3)
    return new, new <= threshold


def unclamped(confidence, success, threshold):
    new = round(confidence + (0.1 if success else -0.2), 3)
    return new, new < threshold


UNSEEN = {"trigger": "computing ages", "error_type": "off", "fix": "age = death year - birth year + 1",
          "applies_to": "ages"}  # shares no word with the question
IGNORED = {"trigger": "how old was he when he died", "error_type": "miscounted", "fix": "be careful with the dates",
           "applies_to": "how old people were when they died"}  # retrieved, but the stand-in does not recognise it
OUTRANKED = {"trigger": "dates", "error_type": "off", "fix": "take the difference of the two years, then + 1",
             "applies_to": "when someone died"}  # one shared word: the honest lesson ranks above it from trial 2
RIGHT = {"trigger": "How old was Alan Turing when he died", "error_type": "x",
         "fix": "take 1 off if he died before his birthday", "applies_to": "Alan Turing"}

# --- chapter 07 ---------------------------------------------------------------------------------------

PREDICT_07 = {"k=6, b=1, votes=1": 20, "k=6, b=2, votes=3": 89, "k=4, b=3, votes=1": 35}
VALUE = {"sure": 1.0, "likely": 0.5, "impossible": 0.0}


def worst_first(children, b):  # sorts the wrong way round
    return sorted(children, key=lambda c: sum(VALUE.get(v, 0) for v in c[1]) / len(c[1]))[:b]


def best_vote(children, b):  # one sure among three votes beats three likely: the max, not the mean
    return sorted(children, key=lambda c: max(VALUE.get(v, 0) for v in c[1]), reverse=True)[:b]


def skips_unlabelled(children, b):  # a vote with no label is dropped instead of counted 0
    def score(child):
        known = [VALUE[v] for v in child[1] if v in VALUE]
        return sum(known) / len(known) if known else 0
    return sorted(children, key=score, reverse=True)[:b]


def ties_by_text(children, b):  # ties broken by the step's text, not by proposal order
    return sorted(children, key=lambda c: (sum(VALUE.get(v, 0) for v in c[1]) / len(c[1]), c[0]), reverse=True)[:b]


def float_eval(expression, numbers):  # runs the text, and compares floats
    return eval(expression) == 24  # noqa: S307 - the harmless cases of the check; the point of the exercise


def eval_and_digits(expression, numbers):  # checks the numbers by regex, then runs the text
    try:
        used = sorted(int(n) for n in re.findall(r"\d+", expression))
        return used == sorted(numbers) and abs(eval(expression) - 24) < 1e-9  # noqa: S307
    except Exception:  # noqa: BLE001
        return False


def _ast_value(expression, allowed, used):
    ops = {ast.Add: Fraction.__add__, ast.Sub: Fraction.__sub__, ast.Mult: Fraction.__mul__,
           ast.Div: Fraction.__truediv__, ast.Pow: lambda a, b: Fraction(a ** b)}

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            used.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in allowed:
            return ops[type(node.op)](value(node.left), value(node.right))
        raise ValueError(type(node).__name__)
    return value(ast.parse(expression, mode="eval").body)


def as_a_set(expression, numbers):  # exact and safe, but compares the numbers as sets
    used = []
    try:
        result = _ast_value(expression, (ast.Add, ast.Sub, ast.Mult, ast.Div), used)
    except (SyntaxError, ValueError, ZeroDivisionError):
        return False
    return set(used) == set(numbers) and result == 24


def allows_powers(expression, numbers):  # ** slips through the whitelist
    used = []
    try:
        result = _ast_value(expression, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow), used)
    except (SyntaxError, ValueError, ZeroDivisionError):
        return False
    return sorted(used) == sorted(numbers) and result == 24


def raises_on_zero(expression, numbers):  # forgets that a division by zero is a wrong answer
    used = []
    try:
        result = _ast_value(expression, (ast.Add, ast.Sub, ast.Mult, ast.Div), used)
    except (SyntaxError, ValueError):
        return False
    return sorted(used) == sorted(numbers) and result == 24


WRONG = [
    ("04.predict", {**PREDICT_04, "step 2 fails once, max_attempts=1": (9, 4)}, "means no retry"),
    ("04.predict", {**PREDICT_04, "step 2 always fails, max_attempts=3": (12, 5)}, "three tries in total"),
    ("04.predict", {**PREDICT_04, "step 3 always fails, max_replans=0": (10, 4)}, "no planner call follows"),
    ("04.validate", tiny_parse_plan, "counts by its \"task\""),
    ("04.validate", first_bracket_only, "not every '[' starts the list"),
    ("04.validate", strict_upper_bound, "is still a valid plan"),
    ("04.validate", no_length_check, "a plan of 0 steps is no plan"),
    ("04.validate", unquoted_errors, "quote the raw reply"),
    ("04.replan", {"tool": "Search", "text": "Alan Turing", "failures": 1}, "a retry absorbed the failure"),
    ("04.replan", {"tool": "Search", "text": "Alan Turing's birth year", "failures": None}, "the failure never fired"),
    ("04.replan", {"tool": "Search", "text": "Alan Turing", "failures": None}, "the new plan routed around"),
    ("04.replan", {"tool": "Search", "text": "Turing", "failures": 3}, "your failures ran out"),
    ("04.replan", {"tool": "Search", "text": "Turing", "failures": None}, "outlasted the replan budget"),
    ("04.replan", {"tool": "Wikipedia", "text": "Alan Turing", "failures": None}, "Search and Calculate"),
    ("04.q1", "d", "one call per step whatever its prompt holds"),
    ("04.q2", "b", "ReAct is the one that re-sends every Observation"),
    ("06.predict", {**PREDICT_06, "confidence 0.7, threshold 0.3": (3, 11)}, "not below the threshold"),
    ("06.predict", {**PREDICT_06, "confidence 0.5, threshold 0.4": (2, 6)}, "plus 1 reflection call"),
    ("06.parse", json_loads_only, "take the text from the first '{'"),
    ("06.parse", whole_object, "keep exactly the four fields"),
    ("06.parse", no_empty_check, "a missing one means no lesson"),
    ("06.parse", lets_json_errors_out, "catch the JSON error"),
    ("06.parse", reply_must_be_text, "None is no lesson"),
    ("06.evict", unrounded, "round the new confidence to 3 places"),
    ("06.evict", at_or_below, "strictly BELOW the threshold"),
    ("06.evict", unclamped, "clamp it at 1"),
    ("06.pollute", UNSEEN, "shares words with the question"),
    ("06.pollute", IGNORED, "obeys only a lesson it recognises"),
    ("06.pollute", OUTRANKED, "the honest lesson ranked above yours"),
    ("06.pollute", RIGHT, "that lesson is right"),
    ("06.q1", "c", "top_k is 3"),
    ("06.q2", "b", "one short string"),
    ("07.predict", {**PREDICT_07, "k=6, b=1, votes=1": 21}, "only 5 legal steps"),
    ("07.predict", {**PREDICT_07, "k=4, b=3, votes=1": 15}, "then 3 nodes, then 3 nodes"),
    ("07.beam", worst_first, "keep the BEST b"),
    ("07.beam", best_vote, "the MEAN of its votes"),
    ("07.beam", skips_unlabelled, "counts 0 and still counts as a vote"),
    ("07.beam", ties_by_text, "ties keep proposal order"),
    ("07.beam", lambda children, b: sorted(children, key=lambda c: -sum(VALUE.get(v, 0) for v in c[1])),
     "keep at most b"),
    ("07.verify", float_eval, "compute exactly with fractions.Fraction"),
    ("07.verify", eval_and_digits, "never run the text"),
    ("07.verify", as_a_set, "as a multiset"),
    ("07.verify", allows_powers, "** is not a Game of 24 move"),
    ("07.verify", raises_on_zero, "a division by zero is a wrong answer"),
    ("07.prune", {"noise": 0.0, "b": 1, "votes": 1}, "noise 0 is the exact judge"),
    ("07.prune", {"noise": 0.25, "b": 3, "votes": 1}, "a wider beam keeps the good node alive"),
    ("07.prune", {"noise": 0.25, "b": 1, "votes": 3}, "votes average the noise out"),
    ("07.prune", {"noise": 1.5, "b": 1, "votes": 1}, "a share of random votes"),
    ("07.q1", "b", "per puzzle rise with b"),
    ("07.q2", "a", "votes fight noise"),
]


@pytest.mark.parametrize("id, wrong, hint", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_with_the_hint_meant_for_it(id, wrong, hint):
    fails_with_hint(id, wrong, hint)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_and_question_has_a_solution_and_a_wrong_answer_tested(chapter):
    each_has_a_solution_and_a_wrong_answer(chapter, WRONG)
    kinds = {e.kind for e in exercises.REGISTRY.exercises.values() if e.id.startswith(chapter + ".")}
    assert kinds == {"predict", "build", "break"}
    assert sum(1 for q in exercises.REGISTRY.questions if q.startswith(chapter + ".")) == 2


def stub(*args):
    raise NotImplementedError("your code here")


STUBS = [  # what the notebooks' exercise cells hold before the learner writes anything
    ("04.predict", dict.fromkeys(PREDICT_04, ...)), ("04.validate", stub),
    ("04.replan", {"tool": ..., "text": ..., "failures": ...}),
    ("06.predict", dict.fromkeys(PREDICT_06, ...)), ("06.parse", stub), ("06.evict", stub),
    ("06.pollute", dict.fromkeys(FIELDS, ...)),
    ("07.predict", dict.fromkeys(PREDICT_07, ...)), ("07.beam", stub), ("07.verify", stub),
    ("07.prune", {"noise": ..., "b": ..., "votes": ...}),
    ("04.validate", None), ("06.parse", ...), ("07.prune", None),
]


@pytest.mark.parametrize("id, unsolved", STUBS, ids=[f"{s[0]}-{i}" for i, s in enumerate(STUBS)])
def test_the_stub_is_not_done_yet_never_correct(id, unsolved):
    verdict = check(id, unsolved)
    assert verdict.status == NOT_DONE and NOT_DONE in verdict.text


HALF_WRITTEN = [
    ("04.predict", {**PREDICT_04, "step 2 fails once, max_attempts=1": "ten"}),
    ("04.validate", lambda raw: json.loads(raw)), ("04.validate", lambda: []), ("04.validate", lambda raw: raw[99]),
    ("04.replan", {"tool": "Search", "text": 42, "failures": None}),
    ("04.replan", {"tool": "Search", "text": "Alan Turing", "failures": "always"}), ("04.replan", ["Search"]),
    ("06.predict", {**PREDICT_06, "confidence 0.7, threshold 0.3": (4,)}),
    ("06.parse", lambda reply: reply.split("{")[1]), ("06.parse", lambda: None),
    ("06.evict", lambda confidence, success, threshold: confidence / 0), ("06.evict", lambda c, s, t: c),
    ("06.evict", lambda c, s, t: None),
    ("06.pollute", {"trigger": 1, "error_type": 2, "fix": 3, "applies_to": 4}), ("06.pollute", "a lesson"),
    ("07.predict", {**PREDICT_07, "k=6, b=1, votes=1": [20]}),
    ("07.beam", lambda children, b: children[b]), ("07.beam", lambda children, b: [c[0] for c in children][:b]),
    ("07.beam", lambda children, b: 7),
    ("07.verify", lambda expression, numbers: expression.evaluate()), ("07.verify", lambda e, n: "yes"),
    ("07.prune", {"noise": "high", "b": 1, "votes": 1}), ("07.prune", {"noise": 0.25, "b": 0, "votes": 1}),
    ("07.prune", {"noise": 0.25, "b": 1, "votes": 1.5}),
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
        if id[:2] not in CHAPTERS:
            continue
        assert len(q.options) == 4 and all(why.strip() for _, _, why in q.options.values()), id
        right = quiz(id, q.answer)
        assert right.ok and all(f"  {letter})" in right.text for letter in q.options if letter != q.answer)
        for letter in q.options:
            if letter != q.answer:
                wrong = quiz(id, letter)
                assert wrong.status == "wrong" and q.hint in wrong.text


def test_a_check_never_raises_even_when_its_checker_meets_an_answer_of_a_shape_it_did_not_foresee(monkeypatch):
    # A checker that indexes what it was given without checking its shape (chapter 03's prediction check once did)
    # must not raise out of check() and into the learner's cell: the framework promises a check never raises.
    from agentkit import exercises

    monkeypatch.setitem(exercises.REGISTRY.exercises, "99.shape", exercises.Exercise(
        "99.shape", "predict", "A careless checker", "Set `pair`.", lambda pair: f"{pair[1]}"))
    verdict = check("99.shape", (8,))
    assert verdict.status == "wrong"
    assert "could not read" in verdict.text and "IndexError" in verdict.text and "hint:" in verdict.text
    one = check("03.predict", {"wanderer, fuse on, max_steps=8": (8,), "stuck, fuse off, max_steps=8, fallback": (9, 8),
                               "format breaker, max_steps=2, fallback": (3, 1)})
    assert one.status == "wrong" and "a pair of whole numbers" in one.text
