"""Predict exercises: numbers written before running anything, compared with what the runs' ledgers say.

A wrong prediction is told, row by row, which numbers are too high and which too low, with a hint that
never holds the true numbers; those are shown (with why they are what they are) only when the learner asks,
check(id, prediction, reveal=True), or after REVEAL_AFTER wrong tries in this kernel. So guessing again and
again teaches nothing it would not teach anyway, and a copied number cannot come from the feedback itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..i18n import tr, tr_later
from .core import (NOT_DONE, REGISTRY, REVEAL_AFTER, Exercise, Fail, NotDone, Verdict, _cut, _wrong, exercise,
                   is_stub, shown)


@dataclass
class Prediction:
    """What a predict check needs: the truth, how to read a guess, and what to say about it."""

    truth: Callable[[], dict]  # row name -> the true numbers (a tuple, or one number)
    labels: tuple  # what each number of a row is ("LLM calls", "tool calls")
    why: dict  # row name -> why the truth is what it is: it holds the numbers, so it is shown with them only
    pointer: str  # where the chapter shows how to count; never a number the learner must predict
    hint: Optional[Callable] = None  # (row, guess, actual, prediction) -> a hint for this mistake, without the true numbers
    tolerance: Callable = lambda row, label, actual: 0  # how far a guess may be off and still count
    case: Callable = lambda row: row
    source: str = "the ledgers"
    done: Callable = lambda truth: ""  # truth -> the rest of the success message


def prediction(id: str, title: str, task: str, spec: Prediction) -> Prediction:
    """Register a predict exercise checked by `spec`; its truth is computed once per kernel (warm)."""
    exercise(id, "predict", title, task, warm=lambda: truth_of(spec), objects=False)(spec)
    return spec


_TRUTHS: dict = {}  # id(spec) -> the truth, once computed: the runs behind it are the stand-in's, the same each time


def truth_of(spec: Prediction) -> dict:
    if id(spec) not in _TRUTHS:
        _TRUTHS[id(spec)] = dict(spec.truth())
    return dict(_TRUTHS[id(spec)])


COUNT = {2: tr_later("a pair of whole numbers"), 3: tr_later("three whole numbers")}


def _numbers(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _read(guess, width: int):
    """A guess as a tuple of `width` numbers, or None if it is not one (a row of one number is a bare number)."""
    if width == 1 and isinstance(guess, (tuple, list)):
        return None
    parts = _numbers(guess)
    if len(parts) != width or any(isinstance(p, bool) for p in parts):
        return None
    try:
        return tuple(float(p) for p in parts)
    except (TypeError, ValueError):
        return None


def _show(numbers: tuple) -> str:
    text = [f"{n:g}" if isinstance(n, float) else str(n) for n in numbers]
    return text[0] if len(text) == 1 else f"({', '.join(text)})"


def judge(ex: Exercise, head: str, answer, reveal: bool) -> Verdict:
    spec: Prediction = ex.checker
    numbers = _show(tuple(tr(label) for label in spec.labels)) if any(spec.labels) else tr("a number")
    shape = "{row: " + numbers + "}"
    if not isinstance(answer, dict):
        if is_stub(answer) and not reveal:
            raise NotDone()
        if not reveal:
            raise Fail(tr("the prediction"), tr("a dict {shape}", shape=shape), type(answer).__name__,
                       tr("copy the dict from the exercise cell and fill in the numbers."))
        answer = {}
    truth = {row: _numbers(actual) for row, actual in truth_of(spec).items()}
    missing = [row for row in truth if is_stub(answer.get(row))]  # None, ..., or (..., ...): not written yet
    guesses = {}
    for row, actual in truth.items():
        if row not in missing:
            guesses[row] = _read(answer[row], len(actual))
            if guesses[row] is None:
                count = tr(COUNT[len(actual)]) if len(actual) in COUNT else tr("{n} whole numbers", n=len(actual))
                raise Fail(spec.case(row), numbers if len(actual) == 1 else f"{count}: {numbers}",
                           shown(answer[row]), tr("write {numbers} for this row.", numbers=numbers))
    if missing and not reveal:
        raise NotDone()
    rows, first_wrong = [], None
    for row, actual in truth.items():
        if row in missing:
            rows.append(tr("{row}: not written", row=row))
            first_wrong = first_wrong or (row, None, actual)
            continue
        guess = guesses[row]
        off = [(label, g - a) for label, g, a in zip(spec.labels, guess, actual)
               if abs(g - a) > spec.tolerance(row, label, a)]
        if off:
            first_wrong = first_wrong or (row, guess, actual)
            rows.append(tr("{row} {guess}: {off}", row=row, guess=_show(tuple(_whole(g) for g in guess)), off=tr(", ").join(
                (tr("{label} too high", label=tr(label)) if d > 0 else tr("{label} too low", label=tr(label))).strip()
                for label, d in off)))
        else:
            rows.append(tr("{row}: right", row=row))
    truth_text = "; ".join(f"{row}: {_show(actual)}" for row, actual in truth.items())
    why_lines = "".join("\n" + tr("  why: {why}", why=_cut(tr("{row}: {why}.", row=row, why=tr(why))))
                        for row, why in spec.why.items())
    source = tr(spec.source)
    if first_wrong is None:
        return Verdict(ex.id, "correct", tr("{head}: correct. From {source}: {truth}. {done}", head=head, source=source,
                                            truth=truth_text, done=tr(spec.done(truth))).rstrip() + why_lines)
    row, guess, actual = first_wrong
    tries = REGISTRY.tries.get(ex.id, 0) + (not missing)
    if reveal or tries >= REVEAL_AFTER:
        REGISTRY.shown.add(ex.id)
        if missing:
            return Verdict(ex.id, NOT_DONE, tr("{head}: not done yet. You asked for the numbers. From {source}: "
                                               "{truth}.", head=head, source=source, truth=truth_text) + why_lines)
        verdict = _wrong(ex.id, head, Fail(spec.case(row), tr("from {source}: {truth}", source=source,
                                                              truth=truth_text), tr("; ").join(rows),
                                           tr("you asked for the numbers: why each is what it is, below.") if reveal
                                           else tr("{tries} wrong tries: why each is what it is, below.", tries=tries)))
        verdict.text += why_lines
        return verdict
    hint = (spec.hint(row, guess, actual, answer) if spec.hint and guess else None) or spec.pointer
    left = REVEAL_AFTER - tries
    hidden = (tr("hidden until you ask, or after {left} more wrong try", left=left) if left == 1 else
              tr("hidden until you ask, or after {left} more wrong tries", left=left))
    verdict = _wrong(ex.id, head, Fail(spec.case(row), hidden, tr("; ").join(rows), hint))
    verdict.text += "\n" + tr("  The true numbers stay hidden so that you can think again. To see them: "
                              "check(\"{id}\", prediction, reveal=True).", id=ex.id)
    return verdict


def _whole(number: float):
    return int(number) if float(number).is_integer() else number
