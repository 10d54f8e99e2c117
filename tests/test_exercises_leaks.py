"""Nothing the learner's code can read while it runs holds the expected answer (issue 42): not a calling frame,
not a chapter module's globals, not the check's random source; and the package's own version of what an
exercise builds, or the check's own answer, cannot be called from the answer.

The finder is generic: every build exercise's worked solution runs inside a spy that, at each call, reads
every frame above it (as `sys._getframe` lets any code do) and the globals of the chapter's module. After the
check, what the worked solution returned for each call is the expected answer of that call. A leak is:
- a local (or an item of a local list or tuple, or of a case tuple inside one) that equals the returned
  value, where that value is not a bare True/False/None/small number, not one of the things the call was
  given and not one the learner's code returned before, at 80% of the calls (counting only calls whose answer differs from the call before: a local left
  over from the case before would match those);
- for answers that are bare values: one local that equals the returned value at every call, over calls whose
  answers differ (an `expected` variable, whatever it is called);
- a module-level table with a case tuple that holds the call's arguments and its expected answer."""
from __future__ import annotations

import importlib
import sys

import pytest

from agentkit import exercises
from agentkit.exercises import check

from test_exercises_wrong import BUILD, SOLVED

SPY = "spying"


def _trivial(value) -> bool:
    return value is None or isinstance(value, bool) or (isinstance(value, (int, float)) and abs(value) < 1000)


def _same(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _frames():
    """(function, local name, value) of every frame above the spy, up to check()."""
    found, frame = [], sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_name
        if name in ("check", "_run"):
            break
        for local, value in frame.f_locals.items():
            found.append((f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{name}", local, value))
        frame = frame.f_back
    return found


def spied(id):  # noqa: D103
    solution, calls = SOLVED[id], []

    def spying(*args):
        seen = _frames()
        out = solution(*args)
        calls.append((args, out, seen))
        return out

    return spying, calls


def _inside(args) -> list:
    """The call's arguments and their items, two levels down: what the learner is given anyway."""
    given, level = list(args), list(args)
    for _ in range(2):
        level = [item for value in level if isinstance(value, (list, tuple)) and len(value) < 5000 for item in value]
        given += level
    return given


def _holds(value, out, given, depth=0):
    """Does `value` hold `out` as an expected answer (not as one of the things the call was given)?"""
    if any(value is g for g in given) or depth > 2:
        return False
    if _same(value, out) and not any(_same(value, g) for g in given):
        return True
    if isinstance(value, (list, tuple)) and len(value) < 5000:
        return any(_holds(item, out, given, depth + 1) for item in value)
    return False


def leaks(id, seed=5):
    spy, calls = spied(id)
    verdict = check(id, spy, seed=seed)
    assert verdict.ok, verdict.text
    hits, before, own = {}, object(), []  # (frame, local) -> [holds the answer?] at each call that tells something
    for args, out, seen in calls:
        if not _trivial(out) and not _same(out, before):  # equal to the case before: a left-over would match
            given = _inside(args) + own  # what the call was given, and what the learner's code returned before
            for where, local, value in seen:
                hits.setdefault((where, local), []).append(_holds(value, out, given))
        before = out
        own.append(out)
    found = {key for key, held in hits.items() if sum(held) >= 2 and sum(held) >= 0.8 * len(held)}
    positions = {}  # (frame, local) -> [(equal to the answer?, the answer)] at each call where it exists
    for args, out, seen in calls:
        for where, local, value in seen:
            equal = _same(value, out) and not any(value is a for a in args)
            positions.setdefault((where, local), []).append((equal, repr(out)))
    found |= {key for key, hits in positions.items()
              if len(hits) >= 3 and all(equal for equal, _ in hits) and len({out for _, out in hits}) > 1}
    return sorted(found), calls


@pytest.fixture
def in_process(monkeypatch):
    monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")  # the spy's records must stay in this process


def _tables_holding_answers(id, calls) -> set:
    """Module tables with a case tuple that holds a call's first argument and the answer it got."""
    module = importlib.import_module(f"agentkit.exercises.ch{id.split('.')[0]}")
    tables = {name: value for name, value in vars(module).items() if isinstance(value, (list, tuple, dict))}
    found = set()
    for args, out, _ in calls:
        if not args:
            continue
        given = _inside(args)
        for name, table in tables.items():
            for row in (table.values() if isinstance(table, dict) else table):
                items = row if isinstance(row, (list, tuple)) else ()
                flat = [x for item in items for x in (item if isinstance(item, tuple) else (item,))]
                answers = [x for x in items if _same(x, out) and not any(_same(x, g) for g in given)]
                if any(_same(x, args[0]) for x in flat) and answers and (not _trivial(out) or isinstance(out, bool)):
                    found.add(name)
    return found


@pytest.mark.parametrize("id", BUILD)
def test_no_calling_frame_and_no_module_table_holds_the_expected_answer_while_the_learners_code_runs(id, in_process):
    """One spied check per exercise, at seed 14: with tests/test_exercises_wrong.py's seeds 11-13, the worked
    solutions pass four seeded draws of every check (and tests/test_exercises.py's one unseeded)."""
    found, calls = leaks(id, seed=14)
    assert calls, "the spy was never called"
    assert not found, f"{id}: the expected answer is readable from {found}"
    tables = _tables_holding_answers(id, calls)
    assert not tables, f"{id}: module tables hold cases with their answers: {tables}"


def test_the_checks_random_source_is_a_decoy_while_the_learners_code_runs(in_process):
    from agentkit.exercises import boundary, cases

    seen = []

    def reads(record, provider):
        seen.append(cases())
        return SOLVED["16.span"](record, provider)

    assert check("16.span", reads, seed=15).ok
    assert seen and all(source is boundary._DECOY for source in seen)
