"""The checks' own answers (each exercise's @reference, run after the learner's code) agree with the answers the
hand-made cases were written with, which used to sit in the chapter modules' tables beside the inputs. A table
that holds its answers is readable by the learner's code while it runs (issue 42); here they are only in the
tests. The drawn cases are checked against the references by the worked solutions, on every draw
(tests/test_exercises_wrong.py), and the references against every forbidden name (last test)."""
from __future__ import annotations

import importlib

import pytest

from agentkit import exercises
from agentkit.exercises import boundary

DOCUMENTED = {'01.guard': {'a small power': True,
              'a 100-digit number, inside the limit': True,
              'just over the limit': False,
              "exactly 1e100: 'at most' includes it": True,
              '2 ** 332, just below 1e100': True,
              '2 ** 333, just above 1e100': False,
              'small numbers, a large result': False,
              "9 ** (9 ** 9), section 3's power tower": False,
              'a negative base: the size is the same as for 10': False,
              'a small power of a negative base': True,
              'exactly 1e100 again, from a negative base': True,
              'zero to a large power is zero': True,
              'a float base far over the limit': False,
              'a fraction to a large power shrinks': True,
              'a fraction to a large negative power grows': False},
 '02.parse': {"the contract's own shape": ('Search', 'Ada Lovelace'),
              'a Finish': ('Finish', '209'),
              'lower-case labels': ('search', 'Alan Turing'),
              'brackets inside the input': ('Search', 'Python lists [1, 2, 3]'),
              'a reply that invents its own Observation and goes on': ('Search', 'Alan Turing'),
              'words after the action, with brackets of their own': ('Search', 'Eiffel Tower'),
              'no action at all': (None, None)},
 '03.fuse': {"the same call twice in a row (what chapter 03's fuse catches)": True,
             "a stutterer's third step: A, B, A": True,
             "a stutterer's fourth step: A, B, A, B": True,
             'the same search, written with other spaces and case': True,
             'the healthy checkpoint run': False,
             'a run that comes back to a query after two others (a window of two must not see it)': False,
             'the same input to another tool': False},
 '03b.flag': {'an Observation line after the Action': True,
              'the word inside a tool input': False,
              'the word inside a thought': False,
              'an indented, lower-case Observation line': True,
              'an Observation line in Markdown bold': True,
              'an empty reply': False},
 '04.validate': {'a list in a code fence, with prose around it': ['count the apples', 'subtract 20', 'add 6'],
                 'a list of {"step", "task"} objects': ['look up the year', 'subtract'],
                 'a bracket in the prose before the list': ['find the start', 'add the rest'],
                 'exactly 10 steps, the most a plan may have': ['one step',
                                                                'one step',
                                                                'one step',
                                                                'one step',
                                                                'one step',
                                                                'one step',
                                                                'one step',
                                                                'one step',
                                                                'one step',
                                                                'one step'],
                 'one step, the smallest plan there is': ['answer from what you know'],
                 'an empty plan': None,
                 'a plan of 30 steps': None,
                 '11 steps, one over': None,
                 'prose with no list at all': None,
                 'a step that is a number, not a task': None,
                 'a step that is only spaces': None},
 '05.verdict': {'a review that ends with the pass line': 'pass',
                'a review that ends with the revise line': 'revise',
                "a review with 'pass' in its prose, no verdict line": 'missing',
                'a verdict that is not the last line': 'missing',
                'a last line that is more than a verdict': 'missing',
                'the verdict line in lower case, with spaces and blank lines after': 'pass',
                'the verdict line in Markdown bold': 'pass',
                'an empty review': 'missing',
                'a review of blank lines only': 'missing'},
 '06.parse': {'one JSON object in a code fence, with prose around it': {'trigger': 'asked for an age at a dated '
                                                                                   'event',
                                                                        'error_type': 'off by one',
                                                                        'fix': 'compare the month and day with the '
                                                                               'birthday',
                                                                        'applies_to': 'age questions'},
              'extra keys, and values with tabs, newlines and double spaces': {'trigger': 'asked for an age at a '
                                                                                          'dated event',
                                                                               'error_type': 'off by one',
                                                                               'fix': 'compare the month and day '
                                                                                      'with the birthday',
                                                                               'applies_to': 'age questions'},
              'a lesson without applies_to': None,
              'a fix that is only spaces': None,
              'JSON with a trailing comma': None,
              'a reply with no JSON at all': None,
              'no reply at all (None)': None,
              'a JSON list, not an object': None},
 '07.beam': {'three children, one vote each': [0, 2],
             'two children tie': [1, 0],
             'three votes each': [1],
             'a vote with no label': [1],
             'fewer children than b': [1, 0],
             'no children at all': []},
 '07.verify': {'a solution through a fraction': True,
               'a plain solution': True,
               '24, without all the numbers': False,
               'a 3 used three times and an 8 once': False,
               'a function call and a minus sign': False,
               'a power': False,
               'a division by zero': False,
               'a reply that is not an expression': False,
               'the right numbers, the wrong value': False},
 '08.repeat': {'the same search in another word order, with stopwords and a question mark': True,
               "the same search in capitals, with a possessive 's and a comma": True,
               'the first input of the run': False,
               'the next year of a comparison': False,
               'the same pair with threshold 0.5 (their overlap is exactly 0.50)': True,
               'a short query whose words are all inside a longer one (2 shared of 6)': False,
               'a word written three times': True,
               'a stutter: the input two back': True,
               'the same input four back, window 3': False,
               'the same input four back, window 4': True},
 '08.useless': {'a tool error that names the town': True,
                'a search that found nothing': True,
                'an empty result': True,
                'the figure asked for': False,
                'a page about something else': True,
                "a calculator's answer": False,
                'the figure again, already in an earlier report': True,
                'a page that shares words with an earlier result only': False,
                'a useful page that mentions an error': False},
 '09.plan': {'a valid plan: #E2 uses #E1': None,
             'a valid plan with no references': None,
             'a valid plan whose Plan line mentions #E2 before it is defined': None,
             'a forward reference': '#E2',
             'a reference to evidence no line defines': '#E3',
             'a line that uses its own result': '#E1',
             'a variable defined twice': '#E1',
             'a reply with no evidence line': '',
             '#E10 where only #E1 exists': '#E10'},
 '10.compare': {'one task broken, one fixed, in the same order': (['a'], ['b']),
                'nothing flips': ([], []),
                'the same tasks, listed in another order': (['a'], []),
                'four tasks, the second report reversed': (['w'], ['z'])},
 '11.schema': {'a good Search': True,
               'a good Finish': True,
               "a good call to a tool whose field is 'amount'": True,
               'a tool the schemas do not have': False,
               'single quotes: not JSON': False,
               'empty arguments': False,
               'a JSON list, not an object': False,
               'JSON null': False,
               'the field under another name': False,
               "Convert called with Search's field": False,
               'a number where the schema wants a string': False,
               'an object where the schema wants a string': False,
               'a field the schema lacks': False},
 '11.replay': {'the second request on the cassette, asked first': 'Linus Torvalds',
               'the same messages, with tools': 'tools: Search[Git]',
               'the same messages at temperature 0.7': 'warm: Linus',
               'a question nobody recorded': None,
               'a request recorded twice': 'first: 391',
               'the recorded request, with its keys in another order': 'Linus Torvalds'},
 '12.policy': {'a note the user asked for': 'run',
               'a note a wiki page asked for': 'deny',
               'a message': 'dry_run',
               'a deletion the model chose itself': 'deny',
               'a tool you have not seen, whose effect is delete': 'deny',
               'a tool you have not seen, whose effect is send': 'dry_run'},
 '13.hit': {'the relevant id is the k-th': True,
            'the relevant id is just past k': False,
            'one of two relevant ids is enough': True,
            'nothing was found': False,
            'nothing is relevant': False,
            'k is longer than the ranking': True}}


def _module(chapter: str):
    return importlib.import_module(f"agentkit.exercises.ch{chapter}")


def _cases(id: str) -> list:
    """(what, the reference's answer) of every hand-made case of `id`."""
    m = _module(id.split(".")[0])
    if id == "01.guard":
        return [(w, m.power_truth(b, e)) for b, e, w in m.GUARD_CASES]
    if id == "02.parse":
        return [(w, m.parse_truth(r)) for r, w in m.PARSE_CASES]
    if id == "03.fuse":
        return [(w, m.fuse_truth(a)) for a, w in m.FUSE_CASES]
    if id == "03b.flag":
        return [(w, m.flag_truth(r)) for r, w in m.FLAG_CASES]
    if id == "04.validate":
        return [(w, m.plan_truth(r)) for r, w, _ in m.PLAN_CASES]
    if id == "05.verdict":
        return [(w, m.verdict_truth(r)) for r, w in m.VERDICT_CASES]
    if id == "06.parse":
        return [(w, m.lesson_truth(r)) for r, w, _ in m.PARSE_CASES]
    if id == "07.beam":
        return [(w, m.beam_truth(c, b)) for c, b, w, _ in m.BEAM_CASES]
    if id == "07.verify":
        return [(w, m.verify(e, n).ok) for e, n, w, _ in m.VERIFY_CASES]
    if id == "08.repeat":
        return [(w, m.repeat_truth(t, e, th, wi)) for t, e, th, wi, w, _ in m.REPEAT_CASES]
    if id == "08.useless":
        return [(w, m.useless_truth(r, q, e)) for r, q, e, w, _ in m.USELESS_CASES]
    if id == "09.plan":
        return [(w, m.plan_fault(t)) for t, w, _ in m.PLANS]
    if id == "10.compare":
        return [(w, m.flips(b.runs, a.runs)) for b, a, w, _ in m.COMPARE_CASES]
    if id == "11.schema":
        course = m.tool_schemas(m.default_executor())
        return [(w, m.schema_truth(n, a, s or course)) for n, a, s, w, _ in m.SCHEMA_CASES]
    if id == "11.replay":
        return [(w, m.replay_truth(m.CASSETTE, r)) for r, w, _ in m.REPLAY_CASES]
    if id == "12.policy":
        return [(w, m.policy_truth(e, s.format(tool=t))) for t, _, e, s, w, _ in m.POLICY_CASES]
    if id == "13.hit":
        return [(w, m.hit_truth(r, rel, k)) for r, rel, k, w in m.HIT_CASES]
    raise KeyError(id)


@pytest.mark.parametrize("id", list(DOCUMENTED))
def test_each_reference_gives_the_answers_the_hand_cases_were_written_with(id):
    said = dict(_cases(id))
    assert set(said) == set(DOCUMENTED[id]), id
    for what, answer in DOCUMENTED[id].items():
        if id == "07.beam":  # the positions kept, best first
            assert said[what] == answer, what
        elif id == "10.compare":
            assert said[what] == (sorted(answer[0]), sorted(answer[1])), what
        else:
            assert said[what] == answer, (what, said[what], answer)


def test_no_module_table_holds_an_answer_next_to_its_case():
    """The tables hold the cases' inputs and words only: no column of True/False answers, no 'expected'."""
    for id, table in DOCUMENTED.items():
        m = _module(id.split(".")[0])
        for name, value in vars(m).items():
            if name.isupper() and isinstance(value, list) and value and isinstance(value[0], tuple):
                columns = list(zip(*[row for row in value if isinstance(row, tuple)]))
                answers = [column for column in columns if all(isinstance(x, bool) for x in column)]
                assert not answers, (id, name)


def test_every_forbidden_name_and_every_reference_can_be_turned_into_a_tripwire():
    """A name a refactor moved would quietly stop being refused: each must resolve, and each be swappable."""
    for chapter in exercises.CHAPTERS:
        exercises._load(chapter)
    for ex in exercises.REGISTRY.exercises.values():
        found = ex.forbidden()
        assert len(found) == len(ex.forbid), (ex.id, ex.forbid, [name for _, name, _, _ in found])
        for function, name, owner, attr in found:
            assert getattr(function, "__code__", None) is not None or owner is not None, name
    assert len(boundary.REFERENCES) >= 17
    for function, name, _, _ in boundary.REFERENCES:
        assert not function.__closure__, name
