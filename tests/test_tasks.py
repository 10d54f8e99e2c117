"""The labelled task set: its checkers, its loader's errors, and that every key path really answers its task."""
import json
import re

import pytest

from agentkit.modes import get_llm
from agentkit.react import ReActAgent
from agentkit.scripts.key_paths import gold_in, key_calls
from agentkit.tasks import CATEGORIES, Task, is_refusal, last_number, load_tasks

TASKS = load_tasks()


def task(checker="exact", gold="Paul Allen", **kw):
    return Task("t", "lookup", "q?", gold, checker, ("Search[x]",), **kw)


@pytest.mark.parametrize("answer,right", [
    ("Paul Allen", True), ("  paul   ALLEN. ", True), ('"Paul Allen"', True),
    ("It was Paul Allen", False), ("Paul", False), ("", False), (None, False),
])
def test_exact_ignores_case_spaces_quotes_and_a_period_but_not_extra_words(answer, right):
    assert task().check(answer) is right


def test_exact_accepts_the_listed_other_spellings():
    t = task(gold="Albuquerque", accept=("Albuquerque, New Mexico",))
    assert t.check("Albuquerque, New Mexico.") and t.check("albuquerque") and not t.check("New Mexico")


@pytest.mark.parametrize("answer,right", [
    ("7006652", True), ("The product is 7,006,652.", True), ("1234 * 5678 = 7006652", True),
    ("7006652 or 7006653", False), ("about 7 million", False), ("no number", False),
])
def test_numeric_reads_the_last_number(answer, right):
    assert task("numeric", 7006652).check(answer) is right


def test_numeric_tolerance_is_absolute_and_inclusive():
    t = task("numeric", 142.86, tolerance=0.005)
    assert t.check("142.8571428571") and t.check("142.865") and not t.check("142.87")
    assert last_number("8,848.86 metres") == 8848.86 and last_number("June 8, 1955") == 1955


@pytest.mark.parametrize("gold,answer,right", [
    ("2021", "2021 (1,234 mm)", True), ("1050", "1,050 mm", True), ("yes", "Yes: both sources give 1,234 mm.", True),
    ("Millbrook", "'millbrook' (1,600 mm)", True), ("2021", "20210 mm", False), ("2021", "In 2021", False),
    ("420", "4,200 mm", False), ("1050", "Unknown: 1050 is not known", False),
])
def test_leading_reads_the_start_of_the_answer(gold, answer, right):
    assert task("leading", gold).check(answer) is right


@pytest.mark.parametrize("answer,refusal", [
    ("Unknown: the knowledge base does not say.", True), ("No information about Atlantis.", True),
    ("I cannot look that up", True), ("I don't know.", True),
    ("Alan Turing (June 23, 1912 - June 7, 1954) was an English mathematician", False), ("1906", False),
])
def test_refuse_passes_refusals_only_and_a_refusal_never_answers(answer, refusal):
    assert task("refuse", "").check(answer) is refusal
    if refusal:  # on a task with an answer, a refusal is wrong even if it holds the gold
        assert not task("numeric", 1906).check(answer + " 1906")


@pytest.mark.parametrize("line,message", [
    ('{"id": "a"}', "missing field(s) category"),
    ('{"id": "a", "category": "trivia", "question": "q", "gold": 1, "checker": "numeric", "key_path": ["S[x]"]}',
     "category 'trivia'"),
    ('{"id": "a", "category": "lookup", "question": "q", "gold": 1, "checker": "fuzzy", "key_path": ["S[x]"]}',
     "checker 'fuzzy'"),
    ('{"id": "a", "category": "lookup", "question": "q", "gold": "one", "checker": "numeric", "key_path": ["S[x]"]}',
     "needs a number as gold"),
    ('{"id": "a", "category": "lookup", "question": "q", "gold": 1, "checker": "numeric", "key_path": ["Search x"]}',
     "'Search x' is not a tool call"),
    ("not json", "not JSON"),
    ('{"id": "a", "category": "lookup", "question": "q", "gold": 1, "checker": "numeric", "key_path": ["S[x]"], '
     '"tolerance": "abc"}', "tolerance must be a finite number >= 0, got 'abc'"),
    ('{"id": "a", "category": "lookup", "question": "q", "gold": 1, "checker": "numeric", "key_path": ["S[x]"], '
     '"tolerance": -0.5}', "tolerance must be a finite number >= 0, got -0.5"),
    ('{"id": "a", "category": "lookup", "question": "q", "gold": 1, "checker": "numeric", "key_path": ["S[x]"], '
     '"tolerance": NaN}', "tolerance must be a finite number >= 0, got nan"),
    ('{"id": "a", "category": "lookup", "question": "q", "gold": NaN, "checker": "numeric", "key_path": ["S[x]"]}',
     "gold must be a finite number, got nan"),
    ('{"id": "a", "category": "lookup", "question": "q", "gold": true, "checker": "numeric", "key_path": ["S[x]"]}',
     "needs a number as gold"),
    ('{"id": "a", "category": "lookup", "question": "q", "gold": "Paul", "checker": "exact", "key_path": ["S[x]"], '
     '"accept": "Paul Allen"}', "accept must be a list of strings"),
])
def test_a_bad_task_line_is_named_with_its_line_number(tmp_path, line, message):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"tasks.jsonl line 2: .*{re.escape(message)}"):
        load_tasks(path)


def test_accept_given_as_a_string_is_refused_not_read_letter_by_letter():
    with pytest.raises(ValueError, match="accept must be a list"):
        task(gold="Paul Allen", accept="Paul Allen")
    assert not task(gold="Paul Allen", accept=("Paul G. Allen",)).check("a")


@pytest.mark.parametrize("tolerance", [-1, float("nan"), float("inf"), "0.5"])
def test_a_task_refuses_a_tolerance_that_is_not_a_finite_number_at_least_zero(tolerance):
    with pytest.raises(ValueError, match="tolerance must be a finite number >= 0"):
        task("numeric", 9, tolerance=tolerance)


def test_a_task_refuses_a_nan_gold():
    with pytest.raises(ValueError, match="gold must be a finite number"):
        task("numeric", float("nan"))


def test_duplicate_ids_are_refused(tmp_path):
    line = json.dumps({"id": "a", "category": "lookup", "question": "q", "gold": 1, "checker": "numeric",
                       "key_path": ["Search[x]"]})
    (tmp_path / "t.jsonl").write_text(f"{line}\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: id 'a' is used twice"):
        load_tasks(tmp_path / "t.jsonl")


def test_the_set_has_30_plus_tasks_of_every_category_with_distinct_questions():
    assert len(TASKS) >= 30 and {t.category for t in TASKS} == set(CATEGORIES)
    assert sum(t.must_refuse for t in TASKS) >= 3
    questions = [t.question for t in TASKS]
    assert not [(a, b) for a in questions for b in questions if a != b and a in b]  # a prompt names one task


@pytest.mark.parametrize("t", TASKS, ids=lambda t: t.id)
def test_each_key_path_replayed_through_the_real_tools_answers_its_task(t):
    observations = [call.observation for call in key_calls(t)]
    assert not any(o.startswith("error:") for o in observations)
    if t.must_refuse:
        return
    last = observations[-1]
    assert gold_in(t, last) is not None, f"{t.id}: the last call's observation does not hold {t.gold!r}"
    assert t.check(gold_in(t, last)) and not is_refusal(last)


def test_only_the_task_set_rules_answer_its_prompts():
    """Earlier chapters key on their own questions, so none of them answers a task-set prompt."""
    llm = get_llm("fake")
    for t in TASKS:
        llm.think(ReActAgent(llm, None).messages(t.question))
    assert {c.note for c in llm.calls} == {"rule: tasks: ReAct"}
