"""Self-check exercises of chapters 08 to 11: every check passes its worked solution, fails a typical wrong answer
with the hint meant for it, says "not done yet" to the stub, and never raises on a half-written answer."""
from __future__ import annotations

import json
import math
import re

import pytest

from agentkit import exercises
from agentkit.exercises import NOT_DONE, check, quiz
from agentkit.runtime import Runtime

from test_exercises import each_has_a_solution_and_a_wrong_answer, fails_with_hint, in_process  # noqa: F401 - in_process is a fixture

CHAPTERS = ["08", "09", "10", "11"]


@pytest.fixture(autouse=True)
def checks_in_this_process(in_process):
    """These tests read the checks' logic, in this process; test_exercises.py shows, exercise by exercise, that the
    forked path a learner's kernel takes gives the same verdicts."""


def stub(*args):
    raise NotImplementedError("your code here")


# --- chapter 08: typical wrong answers ----------------------------------------------------------

STOP = {"the", "at", "in", "of", "a", "for", "on", "was", "how", "much"}


def words(text):
    return {w for w in re.findall(r"\w+", text.lower().replace("'s", "")) if w not in STOP}


def jaccard_raw(text, earlier, threshold=0.7, window=3):  # no normalising: raw whitespace split
    a = set(text.split())
    return any(len(a & set(e.split())) / len(a | set(e.split())) >= threshold for e in earlier[-window:])


def strictly_above(text, earlier, threshold=0.7, window=3):  # > instead of >=
    return any(len(words(text) & words(e)) / len(words(text) | words(e)) > threshold for e in earlier[-window:])


def overlap_coefficient(text, earlier, threshold=0.7, window=3):  # divides by the smaller set
    return any(len(words(text) & words(e)) / min(len(words(text)), len(words(e))) >= threshold
               for e in earlier[-window:])


def newest_only(text, earlier, threshold=0.7, window=3):  # compares with the last input only
    return bool(earlier) and len(words(text) & words(earlier[-1])) / len(words(text) | words(earlier[-1])) >= threshold


def no_window(text, earlier, threshold=0.7, window=3):  # looks back over the whole run
    return any(len(words(text) & words(e)) / len(words(text) | words(e)) >= threshold for e in earlier)


def word_lists(text, earlier, threshold=0.7, window=3):  # multiset Jaccard: a repeated word counts again
    from collections import Counter
    bag = lambda t: Counter(w for w in re.findall(r"\w+", t.lower().replace("'s", "")) if w not in STOP)
    return any(sum((bag(text) & bag(e)).values()) / sum((bag(text) | bag(e)).values()) >= threshold
               for e in earlier[-window:])


NO_RESULT = re.compile(r"(no results?|no information|nothing found|not found)\b", re.IGNORECASE)


def result_checker(*, error=True, no_result=True, stopwords=True, number=True, nothing_new=True, topic_grows=True,
                   error_anywhere=False, first_word=False):
    """is_useless with one typical mistake switched on."""
    def bag(text):
        return words(text) if stopwords else set(re.findall(r"\w+", text.lower()))

    def is_useless(result, question, earlier):
        text = result.strip()
        if first_word and text.split()[0].lower() == "error:":
            return True
        if error and (("error" in text.lower()) if error_anywhere else text.lower().startswith("error:")):
            return True
        mine = bag(text)
        if not mine or (no_result and NO_RESULT.match(text)):
            return True
        known = bag(question).union(*(bag(e) for e in earlier))
        topic = known if topic_grows else bag(question)
        if not (number and re.fullmatch(r"[\d.,]+", text)) and not mine & topic:
            return True
        return nothing_new and mine <= known
    return is_useless


PAGER = "pager, Runtime(jaccard=1.0, checkpoint_every=5)"
PREDICT_08 = {PAGER: (9, 7), "paraphrases, Runtime(stop=False)": (20, 20),
              "side topics, Runtime(checkpoint_every=6)": (10, 8)}

WRONG = [
    ("08.predict", {**PREDICT_08, "paraphrases, Runtime(stop=False)": (5, 4)}, "the notes are words, not a stop"),
    ("08.predict", {**PREDICT_08, PAGER: (5, 4)}, "the repeat check stays silent"),
    ("08.predict", {**PREDICT_08, PAGER: (7, 5)}, "the first checkpoint, after step 5"),
    ("08.predict", {**PREDICT_08, "side topics, Runtime(checkpoint_every=6)": (7, 5)}, "the first comes after step 6"),
    ("08.repeat", jaccard_raw, "normalise before comparing"),
    ("08.repeat", strictly_above, "compare with >=, not >"),
    ("08.repeat", overlap_coefficient, "not by the smaller set"),
    ("08.repeat", newest_only, "not only the newest one"),
    ("08.repeat", no_window, "look back only `window` inputs"),
    ("08.repeat", word_lists, "compare word SETS"),
    ("08.useless", result_checker(error=False), "useless whatever words it holds"),
    ("08.useless", result_checker(no_result=False), "says nothing was found"),
    ("08.useless", result_checker(error=False, first_word=True), "do not index into it"),
    ("08.useless", result_checker(stopwords=False), "compare CONTENT words"),
    ("08.useless", result_checker(number=False), "never off-topic"),
    ("08.useless", result_checker(nothing_new=False), "old news"),
    ("08.useless", result_checker(topic_grows=False), "the topic grows with the run"),
    ("08.useless", result_checker(error_anywhere=True), "STARTS with 'error:'"),
    ("08.break", Runtime(jaccard=0.5), "fails already on the tuning suite"),
    ("08.break", Runtime(second_signal=True), "safe on unseen work too"),
    ("08.break", "Runtime(jaccard=0.7)", "write runtime = Runtime("),
    ("08.q1", "b", "no result is empty, off-topic or old news"),
    ("08.q2", "b", "still optimistic"),
]

STUBS = [
    ("08.predict", {name: ... for name in PREDICT_08}), ("08.predict", {**PREDICT_08, PAGER: ...}),
    ("08.predict", None), ("08.repeat", stub), ("08.repeat", ...), ("08.useless", stub), ("08.break", None),
]

BROKEN = [
    ("08.predict", {name: "twenty" for name in PREDICT_08}), ("08.predict", [20, 20]),
    ("08.repeat", lambda text, earlier, threshold, window: earlier[7]), ("08.repeat", lambda: True),
    ("08.repeat", lambda text, earlier, threshold, window: 1 / 0), ("08.repeat", 42),
    ("08.useless", lambda result, question, earlier: earlier[5]), ("08.useless", lambda: True),
    ("08.break", Runtime), ("08.break", 0.7),
]


# --- chapter 09: typical wrong answers ----------------------------------------------------------

EVIDENCE = re.compile(r"#E(\d+)\s*=\s*\w+\s*\[(.*)\]")


def plan_validator(*, any_line=False, one_digit=False, twice=True, define_first=False, name=True, empty=True):
    """check_plan with one typical mistake switched on."""
    def check_plan(text):
        defined = []
        for line in text.splitlines():
            match = EVIDENCE.search(line)
            if match is None and not any_line:
                continue
            variable, tool_input = (f"#E{match.group(1)}", match.group(2)) if match else (None, line)
            if twice and variable in defined:
                return f"{variable} is defined twice"
            if define_first and variable:
                defined.append(variable)
            for ref in re.findall(r"#E\d" if one_digit else r"#E\d+", tool_input):
                if ref not in defined:
                    return f"{ref} does not exist yet" if name else "invalid plan"
            if variable and not define_first:
                defined.append(variable)
        return None if defined or not empty else "no plan"
    return check_plan


PREDICT_09 = {"ReAct": (5, 5), "ReWOO": (2, 5), "Plan-and-Execute": (11, 5), "Hybrid": (9, 5)}
RIGHT_NUMBERS = "#E1 = Search[Steve Wozniak]\n#E2 = Search[Linus Torvalds]\n#E3 = Calculate[1969 - 1950]"

WRONG += [
    ("09.predict", {**PREDICT_09, "ReWOO": (5, 5)}, "whatever the plan"),
    ("09.predict", {**PREDICT_09, "Plan-and-Execute": (6, 5)}, "a small ReAct of two calls"),
    ("09.predict", {**PREDICT_09, "Hybrid": (8, 5)}, "drift checkpoint"),
    ("09.plan", lambda text: None, "check each reference against the variables defined so far"),
    ("09.plan", plan_validator(any_line=True), "the words of a Plan: line"),
    ("09.plan", plan_validator(define_first=True), "cannot use its own result"),
    ("09.plan", plan_validator(twice=False), "defined twice makes every later reference ambiguous"),
    ("09.plan", plan_validator(empty=False), "no #E line at all is no plan"),
    ("09.plan", plan_validator(one_digit=True), "#E10 is not #E1"),
    ("09.plan", plan_validator(name=False), "say which variable is at fault"),
    ("09.break", RIGHT_NUMBERS, "blind means a step's input is a result the planner could not see"),
    ("09.break", "#E1 = Calculate[#E2 - 1]\n#E2 = Search[Linus Torvalds]", "a blind plan is a VALID plan"),
    ("09.noise", 0, "Turn the errors up"),
    ("09.noise", 0.01, "go up a little"),
    ("09.noise", 0.5, "come down"),
    ("09.q1", "a", "no cache: every planned tool call runs once"),
    ("09.q2", "b", "whatever the role"),
]

STUBS += [("09.predict", {name: ... for name in PREDICT_09}), ("09.predict", None), ("09.plan", stub),
          ("09.plan", ...), ("09.break", None), ("09.noise", None)]

BROKEN += [("09.predict", {name: "five" for name in PREDICT_09}), ("09.plan", lambda text: text[9999]),
           ("09.plan", lambda: None), ("09.plan", "check_plan"), ("09.break", 42), ("09.break", ["#E1"]),
           ("09.noise", "0.1"), ("09.noise", True)]


# --- chapter 10: typical wrong answers ----------------------------------------------------------


def nearest_rank(values):  # picks a value: the ceil(0.95 n)-th smallest
    ordered = sorted(values)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


def unsorted_linear(values):  # interpolates, but on the list as given
    position = 0.95 * (len(values) - 1)
    below = int(position)
    return values[below] + (position - below) * (values[min(below + 1, len(values) - 1)] - values[below])


def position_of_n(values):  # 0.95 * n instead of 0.95 * (n - 1)
    ordered = sorted(values)
    position = min(0.95 * len(ordered), len(ordered) - 1)
    below = int(position)
    return ordered[below] + (position - below) * (ordered[min(below + 1, len(ordered) - 1)] - ordered[below])


def by_position(before, after):  # zip: run i against run i, whatever their tasks
    pairs = list(zip(before, after))
    return ([b.task_id for b, a in pairs if b.correct and not a.correct],
            [b.task_id for b, a in pairs if a.correct and not b.correct])


def swapped(before, after):  # broken and fixed the wrong way round
    broken, fixed = compare_by_id(before, after)
    return fixed, broken


def compare_by_id(before, after):
    now = {run.task_id: run.correct for run in after}
    return ([r.task_id for r in before if r.correct and not now[r.task_id]],
            [r.task_id for r in before if now[r.task_id] and not r.correct])


def after_only(before, after):  # reads the second report alone
    return [r.task_id for r in after if not r.correct], [r.task_id for r in after if r.correct]


PREDICT_10 = {"broken": 0, "fixed": 3, "P95 steps, version 3": 6.0}

WRONG += [
    ("10.predict", {**PREDICT_10, "broken": 3}, "two more steps change nothing"),
    ("10.predict", {**PREDICT_10, "fixed": 0}, "three tasks whose key path has five tool calls"),
    ("10.predict", {**PREDICT_10, "P95 steps, version 3": 5}, "position 0.95 x 14"),
    ("10.p95", nearest_rank, "it interpolates"),
    ("10.p95", unsorted_linear, "sort the values first"),
    ("10.p95", position_of_n, "0.95 * (n - 1), counted from 0"),
    ("10.compare", by_position, "pair each task with ITSELF"),
    ("10.compare", swapped, "broken means right before and wrong after"),
    ("10.compare", after_only, "in neither list"),
    ("10.compare", lambda before, after: (0, 0), "return two lists of task ids"),
    ("10.break", "1906", "that is simply the right answer"),
    ("10.break", "She was born in 1905.", "reads only the LAST number"),
    ("10.break", "I cannot say; maybe 1905, maybe 1906", "a refusal is never right"),
    ("10.q1", "a", "same rate can hide tasks broken"),
    ("10.q2", "a", "stuck run is not rescued"),
]

STUBS += [("10.predict", {name: ... for name in PREDICT_10}), ("10.predict", None), ("10.p95", stub), ("10.p95", ...),
          ("10.compare", stub), ("10.break", None)]

BROKEN += [("10.predict", {name: "six" for name in PREDICT_10}), ("10.p95", lambda values: values[99]),
           ("10.p95", lambda values: "high"), ("10.compare", lambda before, after: before[0].nope),
           ("10.compare", lambda before: None), ("10.break", 1906)]


# --- chapter 11: typical wrong answers ----------------------------------------------------------


def call_validator(*, fixed_fields=False, catch=True, object_check=True, types=True, extra=True):
    """validate_call with one typical mistake switched on."""
    def validate_call(name, arguments, schemas):
        functions = {s["function"]["name"]: s["function"] for s in schemas}
        if name not in functions:
            return f"unknown tool {name}"
        if catch:
            try:
                decoded = json.loads(arguments)
            except ValueError:
                return "not JSON"
        else:
            decoded = json.loads(arguments)
        if object_check and not isinstance(decoded, dict):
            return "not an object"
        parameters = functions[name]["parameters"]
        required = (["answer"] if name == "Finish" else ["input"]) if fixed_fields else parameters["required"]
        for field in required:
            if field not in decoded:
                return f"{field} is missing"
        for field, value in decoded.items():
            if extra and field not in parameters["properties"] and not fixed_fields:
                return f"{field} is not in the schema"
            if types and not isinstance(value, str):
                return f"{field} must be a string"
        return None
    return validate_call


def last_message_only(entries, request):  # looks at the question, not the whole request
    for entry in entries:
        if entry["request"]["messages"][-1] == request["messages"][-1]:
            return entry
    return None


def last_recording(entries, request):  # the latest recording wins
    found = None
    for entry in entries:
        if entry["request"] == request:
            found = entry
    return found


def unsorted_json(entries, request):  # json.dumps without sort_keys: key order counts
    for entry in entries:
        if json.dumps(entry["request"]) == json.dumps(request):
            return entry
    return None


def no_miss(entries, request):  # raises on a miss instead of returning None
    return next(entry for entry in entries if entry["request"] == request)


PREDICT_11 = {"arguments not JSON, recovers, max_steps=3": (3, 1, 2), "missing field, never learns, max_steps=4": (4, 4, 0),
              "three calls at once, never learns, max_steps=4": (2, 0, 1),
              "three calls at once, never learns, max_steps=4, repeat_fuse=False": (4, 0, 4)}

WRONG += [
    ("11.predict", {**PREDICT_11, "arguments not JSON, recovers, max_steps=3": (4, 1, 2)}, "ends the run before the Finish"),
    ("11.predict", {**PREDICT_11, "missing field, never learns, max_steps=4": (4, 4, 4)}, "none runs a tool"),
    ("11.predict", {**PREDICT_11, "three calls at once, never learns, max_steps=4": (4, 0, 4)}, "the repeat fuse stops it"),
    ("11.predict", {**PREDICT_11, "three calls at once, never learns, max_steps=4, repeat_fuse=False": (4, 4, 4)},
     "each call is well formed"),
    ("11.schema", call_validator(fixed_fields=True), "read the required fields from the schema"),
    ("11.schema", call_validator(catch=False), "json.loads raises ValueError"),
    ("11.schema", call_validator(object_check=False), "check isinstance(arguments, dict)"),
    ("11.schema", call_validator(types=False), "'string' means isinstance(value, str)"),
    ("11.schema", call_validator(extra=False), "additionalProperties: false"),
    ("11.schema", lambda name, arguments, schemas: False, "is valid: return None"),
    ("11.replay", lambda entries, request: entries[0], "match by the CONTENT of the request"),
    ("11.replay", last_message_only, "compare the WHOLE request"),
    ("11.replay", no_miss, "has no answer: return None"),
    ("11.replay", last_recording, "the first recording wins"),
    ("11.replay", unsorted_json, "key order inside a dict"),
    ("11.break", '{"input": ["Steve Jobs"]}', "section 3 already shows a missing field and a list"),
    ("11.break", '{"input": "Steve Jobs"}', "break one of those"),
    ("11.break", "{'input': 1}", "make one that json.loads accepts"),
    ("11.q1", "a", "nothing in the API stops it"),
    ("11.q2", "a", "near match is not the same request"),
]

STUBS += [("11.predict", {name: ... for name in PREDICT_11}), ("11.predict", None), ("11.schema", stub),
          ("11.replay", stub), ("11.replay", ...), ("11.break", None)]

BROKEN += [("11.predict", {name: (4, 1) for name in PREDICT_11}), ("11.schema", lambda name, arguments, schemas: 1 / 0),
           ("11.schema", lambda name: None), ("11.replay", lambda entries, request: entries[99]),
           ("11.replay", lambda entries, request: "a reply"), ("11.replay", lambda: None), ("11.break", {"input": 1})]


# --- the same properties for every chapter -------------------------------------------------------


@pytest.mark.parametrize("id, wrong, hint", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_with_the_hint_meant_for_it(id, wrong, hint):
    fails_with_hint(id, wrong, hint)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_and_question_has_a_solution_a_wrong_answer_and_a_stub_tested(chapter):
    ids = each_has_a_solution_and_a_wrong_answer(chapter, WRONG)
    coding = {id for id in ids if ".q" not in id}
    assert coding == {id for id, _ in STUBS if id.startswith(chapter + ".")}
    assert coding == {id for id, _ in BROKEN if id.startswith(chapter + ".")}
    kinds = {e.kind for e in exercises.REGISTRY.exercises.values() if e.id.startswith(chapter + ".")}
    assert kinds == {"predict", "build", "break"}
    assert len([i for i in ids if ".q" in i]) == 2


@pytest.mark.parametrize("id, unsolved", STUBS, ids=[f"{s[0]}-{i}" for i, s in enumerate(STUBS)])
def test_the_stub_is_not_done_yet_never_correct(id, unsolved):
    verdict = check(id, unsolved)
    assert verdict.status == NOT_DONE and NOT_DONE in verdict.text, verdict.text


@pytest.mark.parametrize("id, broken", BROKEN, ids=[f"{b[0]}-{i}" for i, b in enumerate(BROKEN)])
def test_a_half_written_answer_never_raises_and_says_what_happened(id, broken):
    verdict = check(id, broken)
    assert verdict.status == "wrong"
    assert "case:" in verdict.text and "hint:" in verdict.text


@pytest.mark.parametrize("id, arguments", [("08.repeat", 4), ("08.useless", 3), ("09.plan", 1), ("10.p95", 1), ("10.compare", 2),
                                           ("11.schema", 3), ("11.replay", 2)])
def test_a_function_that_forgets_to_return_is_told_so(id, arguments):
    forgetful = {1: lambda a: None, 2: lambda a, b: None, 3: lambda a, b, c: None, 4: lambda a, b, c, d: None}
    verdict = check(id, forgetful[arguments])
    assert verdict.status == "wrong" and "returned nothing" in verdict.text, verdict.text


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_option_of_every_question_is_explained(chapter):
    exercises._load(chapter)
    for q in exercises.REGISTRY.questions.values():
        if q.id.startswith(chapter + "."):
            assert q.hint and all(len(why) > 20 for _, _, why in q.options.values()), q.id
            right = quiz(q.id, q.answer)
            assert right.ok and all(f"  {letter})" in right.text for letter in q.options if letter != q.answer)


def test_the_replay_check_reads_a_recording_whose_request_holds_a_line_separator(monkeypatch):
    """A recorded request with U+2028 in it is still one cassette line: the check must not split it there (it did,
    with str.splitlines, and raised a JSONDecodeError instead of giving a verdict)."""
    import dataclasses

    from agentkit.exercises import ch11
    from test_exercises import solutions

    task = ch11.TASKS[1]
    separated = dataclasses.replace(task, question=task.question + "\u2028") if dataclasses.is_dataclass(task) \
        else task._replace(question=task.question + "\u2028")
    monkeypatch.setattr(ch11, "TASKS", (ch11.TASKS[0], separated) + tuple(ch11.TASKS[2:]))
    verdict = check("11.replay", solutions("11")["11.replay"])
    assert verdict.status == "correct", verdict
