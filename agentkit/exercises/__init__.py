"""Check yourself: exercises checked on the spot, offline, from the ledgers of the stand-in.

    from agentkit.exercises import check, quiz, progress, show_solution
    check("03.fuse", my_fuse)     # runs your code on cases drawn fresh for this check; says what happened
    check("03.predict", prediction, reveal=True)   # a prediction: the true numbers, once you ask for them
    quiz("03.q1")                 # a multiple-choice question (widget); quiz("03.q1", "b") answers in code
    progress("03")                # which exercises of chapter 03 are done, here and across chapters
    show_solution("03.fuse")      # the worked solution and its reasoning: open it after you have tried

A check never raises: an unsolved stub (`None`, `...`, or a function that raises NotImplementedError) says
"not done yet"; an exception in your code, a call to exit(), or code still running after TIME_LIMIT_S seconds
over one check's cases (the capstone has a limit of its own, which its task states; the check's own code is
not counted; deadline.py says how the clock stops it) is reported with the case that caused it; an unknown id
is a verdict too. A failed check names the case, what was expected, what your code did, and one hint pointing
back to the chapter, each cut to FIELD_CHARS. Build checks draw unseen cases at random on every call (`seed=`
repeats a draw), so a table of the cases a failure showed does not pass. A wrong prediction says which numbers
are too high or too low; the true ones are shown when you ask (`reveal=True`) or after REVEAL_AFTER wrong
tries. Each chapter's exercises live in `agentkit.exercises.chNN`; the worked solutions in `agentkit.solutions`
(`solutions/` in the repository).

Progress is kept in this kernel and in a small JSON file in the folder you run the notebook from
(`.agentkit-progress.json`, never uploaded; saved.py says what it refuses); `reset_progress()` empties
it. The environment variable AGENTKIT_PROGRESS names another file, or `off` for none.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Optional

from .core import (  # noqa: F401 - the package's surface: chapters and tests import these from here
    CHAPTERS, FIELD_CHARS, NOT_DONE, PROGRESS_FILE, REGISTRY, REVEAL_AFTER, TIME_LIMIT_S, Exercise, Fail, NotDone,
    Question, Report, Verdict, _Now, _cut, _find, _load, _raised, _wrong, call, cases, exercise, is_stub,
    learner_code, question, shown,
)
from .deadline import TimeUp
from .predictions import Prediction, judge, prediction  # noqa: F401
from .quizzes import answer_question, quiz  # noqa: F401
from .saved import progress, progress_path, record, reset_progress  # noqa: F401


def check(id: str, answer, *, reveal: bool = False, seed: Optional[int] = None) -> Verdict:
    """Check your answer to exercise `id`; prints nothing, returns the verdict (a cell shows it).

    reveal=True: for a prediction, show the true numbers and why. seed: draw the same unseen cases again."""
    ex = _find("exercise", id)
    if isinstance(ex, Verdict):
        return ex
    head = f"{ex.id} {ex.title}"
    limit = ex.time_limit or TIME_LIMIT_S
    _Now.cases = random.Random(seed if seed is not None else random.SystemRandom().getrandbits(64))
    _Now.case, _Now.budget, _Now.inside = "your answer", limit, False
    try:
        verdict = _judge(ex, head, answer, reveal)
    except TimeUp:
        verdict = _wrong(id, head, Fail(_Now.case, f"your code done within {limit:g} s, over all the cases",
                                        f"still running after {limit:g} s: the check stopped it",
                                        "look for a loop that never ends (a condition that never changes) or a "
                                        "sleep; the worked solution needs a small part of this time."))
    except KeyboardInterrupt:
        raise  # Stop in Jupyter stops the cell, as everywhere else
    except BaseException as e:  # noqa: BLE001 - exit() or anything else outside call(): a check never raises
        verdict = _wrong(id, head, Fail(_Now.case, "an answer", _raised(e),
                                        "a check runs your answer inside this kernel: return a value, never exit."))
    record(id, verdict.status)
    return verdict


def _judge(ex: Exercise, head: str, answer, reveal: bool) -> Verdict:
    try:
        if isinstance(ex.checker, Prediction):
            return judge(ex, head, answer, reveal)
        if is_stub(answer):
            raise NotDone()
        return Verdict(ex.id, "correct", f"{head}: correct. {ex.checker(answer)}")
    except NotDone:
        return Verdict(ex.id, NOT_DONE, f"{head}: {NOT_DONE}. {ex.task}")
    except Fail as f:
        return _wrong(ex.id, head, f)
    except Exception as e:  # noqa: BLE001 - an answer of a shape no checker foresaw is wrong, never a crash
        return _wrong(ex.id, head, Fail(_Now.case, "the shape the exercise cell shows",
                                        f"{shown(answer, 100)}, which the check could not read ({_raised(e)})",
                                        "keep the shape of the exercise cell's stub: the same keys, and a pair "
                                        "where it asks for a pair."))


def show_solution(id: str) -> Report:
    """The worked solution of exercise or question `id`, with its reasoning. Open it after you have tried."""
    from .worked import solution_text

    found = _find("question", id) if ".q" in str(id) else _find("exercise", id)
    if isinstance(found, Verdict):
        return Report(found.text)
    REGISTRY.shown.add(id)
    return Report(solution_text(found))


def check_solutions(folder) -> list[tuple[str, str]]:
    """Run every worked solution in `folder` (files chNN.py with SOLUTIONS = {id: answer}) through its check."""
    import importlib.util

    results = []
    for path in sorted(Path(folder).glob("ch*.py")):
        spec = importlib.util.spec_from_file_location(f"solutions_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for id, answer in module.SOLUTIONS.items():
            verdict = answer_question(id, answer) if id in REGISTRY.questions or ".q" in id else check(id, answer)
            results.append((id, verdict.status))
    return results
