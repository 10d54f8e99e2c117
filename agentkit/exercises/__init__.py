"""Check yourself: exercises checked on the spot, offline, from the ledgers of the stand-in.

    from agentkit.exercises import check, quiz, progress, show_solution
    check("03.fuse", my_fuse)     # runs your code on cases drawn fresh for this check; says what happened
    check("03.predict", prediction, reveal=True)   # a prediction: the true numbers, once you ask for them
    quiz("03.q1")                 # a multiple-choice question (widget); quiz("03.q1", "b") answers in code
    progress("03")                # which exercises of chapter 03 are done, here and across chapters
    show_solution("03.fuse")      # the worked solution and its reasoning: open it after you have tried

A check never raises: an unsolved stub (`None`, `...`, or a function that raises NotImplementedError) says
"not done yet"; an exception in your code, a call to exit(), or code still running after TIME_LIMIT_S seconds
over one check's cases (the check's own code is not counted; deadline.py says how the clock stops it) is
reported with the case that caused it; an unknown id is a verdict too. A failed check names the case, what
was expected, what your code did, and one hint pointing back to the chapter, each cut to FIELD_CHARS. Build
checks draw unseen cases at random on every call (`seed=` repeats a draw), so a table of the cases a failure
showed does not pass. A wrong prediction says which numbers are too high or too low; the true ones are shown
when you ask (`reveal=True`) or after REVEAL_AFTER wrong tries. Each chapter's exercises live in
`agentkit.exercises.chNN`; the worked solutions in `agentkit.solutions` (`solutions/` in the repository).

Progress is kept in this kernel and in a small JSON file in the folder you run the notebook from
(`.agentkit-progress.json`, never uploaded; saved.py says what it refuses); `reset_progress()` empties
it. The environment variable AGENTKIT_PROGRESS names another file, or `off` for none.
"""
from __future__ import annotations

import importlib
import random
import reprlib
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .deadline import TimeUp, time_limit

CHAPTERS = ["00", "01", "02", "03", "03b", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16"]
PROGRESS_FILE = ".agentkit-progress.json"
NOT_DONE = "not done yet"
TIME_LIMIT_S = 10.0  # your code's time in one check, over all its cases (the check's own code is not counted)
REVEAL_AFTER = 3  # wrong predictions before the true numbers are shown unasked
FIELD_CHARS = 600  # each line of feedback: an exception's message or a returned value can be any length


class Fail(Exception):
    """Raised inside a checker: the case, what was expected, what the learner's code did, and a hint."""

    def __init__(self, case: str, expected: str, got: str, hint: str) -> None:
        super().__init__(case)
        self.case, self.expected, self.got, self.hint = case, expected, got, hint


class NotDone(Exception):
    """Raised inside a checker when the answer is still the stub."""


@dataclass
class Verdict:
    """What one check said: `status` is "correct", "wrong", NOT_DONE or "unknown" (no such id); `text` is the feedback."""

    exercise: str
    status: str
    text: str

    @property
    def ok(self) -> bool:
        return self.status == "correct"

    def __repr__(self) -> str:  # what a notebook cell shows: the feedback itself
        return self.text


@dataclass
class Exercise:
    id: str
    kind: str  # predict, build, break
    title: str
    task: str  # one line: what to hand in
    checker: Callable[[Any], str]  # returns the success message, or raises Fail / NotDone


@dataclass
class Question:
    id: str
    prompt: str
    options: dict  # letter -> (text, correct, why)
    hint: str = ""

    @property
    def answer(self) -> str:
        return next(letter for letter, (_, correct, _) in self.options.items() if correct)


@dataclass
class _Registry:
    exercises: dict = field(default_factory=dict)
    questions: dict = field(default_factory=dict)
    done: dict = field(default_factory=dict)  # id -> status, in this kernel
    tries: dict = field(default_factory=dict)  # id -> wrong tries, in this kernel
    shown: set = field(default_factory=set)  # ids whose answer was revealed or whose solution was opened


REGISTRY = _Registry()


class _Now:
    """The check that is running: its random cases, the case the learner's code is on, its time left."""
    cases = random.Random(0)
    case = "your answer"
    budget = TIME_LIMIT_S
    inside = False


def cases() -> random.Random:
    """The running check's random source: draw unseen cases from it, never from the module `random`."""
    return _Now.cases


def exercise(id: str, kind: str, title: str, task: str):
    """Decorator for a chapter module: register `checker(answer) -> success message`."""
    def register(checker):
        REGISTRY.exercises[id] = Exercise(id, kind, title, task, checker)
        return checker
    return register


def question(id: str, prompt: str, options: dict, hint: str = "") -> Question:
    """Register a multiple-choice question: options map a letter to (text, correct?, why)."""
    if sum(correct for _, correct, _ in options.values()) != 1:
        raise ValueError(f"{id}: a question needs exactly one correct option")
    REGISTRY.questions[id] = Question(id, prompt, options, hint)
    return REGISTRY.questions[id]


def _load(chapter: str) -> bool:
    if chapter not in CHAPTERS:
        return False
    importlib.import_module(f"{__name__}.ch{chapter}")
    return True


def _find(kind: str, id):
    """The exercise or question `id`, or a Verdict saying there is none (and which ids there are)."""
    chapter = str(id).split(".")[0]
    table = REGISTRY.exercises if kind == "exercise" else REGISTRY.questions
    if isinstance(id, str):
        _load(chapter)
        if id in table:
            return table[id]
    known = sorted(i for i in table if i.split(".")[0] == chapter)
    where = (f"Chapter {chapter} has: {', '.join(known)}." if known else
             f"The chapters are {', '.join(CHAPTERS)}; ids look like \"03.fuse\" or \"03.q1\".")
    return Verdict(str(id), "unknown", f"No {kind} {shown(id)}. {where}")


# --- the learner's code, and what it returns ----------------------------------------------------------


def shown(value, chars: int = 120) -> str:
    """repr(value), cut to about `chars`, whatever the value (a huge list, a repr that raises)."""
    short = reprlib.Repr()
    short.maxstring = short.maxother = max(chars - 10, 20)
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 12
    try:
        text = short.repr(value)
    except Exception:  # noqa: BLE001 - the learner's own __repr__ may raise
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= chars else text[: chars - 3] + "..."


def is_stub(answer) -> bool:
    """An answer not written yet: None, `...`, or a dict/tuple/list made only of those."""
    if answer is None or answer is Ellipsis:
        return True
    if isinstance(answer, dict):
        return bool(answer) and all(is_stub(v) for v in answer.values())
    if isinstance(answer, (list, tuple)):
        return bool(answer) and all(is_stub(v) for v in answer)
    return False


def _raised(e: BaseException) -> str:
    """`Type: message (line N: code)`, the line being the last one of the learner's own code if it can be told."""
    try:
        message = str(e)
    except Exception:  # noqa: BLE001
        message = "<a message that cannot be shown>"
    frames = traceback.extract_tb(e.__traceback__)
    own = [f for f in frames if not f.filename.startswith(str(Path(__file__).resolve().parent.parent))]
    line = (own or frames or [None])[-1]
    where = "" if line is None else f" (line {line.lineno}" + (f": {line.line.strip()}" if line.line else "") + ")"
    return f"{type(e).__name__}: {message[:FIELD_CHARS // 2]}{where}"


@contextmanager
def learner_code(case: str):
    """Run the learner's code in this block: it names the case, and spends the check's TIME_LIMIT_S."""
    _Now.case = case
    if _Now.inside:  # the learner's code called back into a check: one clock is enough
        yield
        return
    start, _Now.inside = time.monotonic(), True
    try:
        with time_limit(max(_Now.budget, 0.001)):
            yield
    finally:
        _Now.inside = False
        _Now.budget -= time.monotonic() - start


def call(function, *args, case: str, hint: str):
    """Call the learner's function; NotImplementedError means not done, any other exception or exit() is a Fail."""
    try:
        with learner_code(case):
            return function(*args)
    except NotImplementedError as e:
        raise NotDone(str(e)) from None
    except (TimeUp, KeyboardInterrupt):
        raise
    except SystemExit as e:
        raise Fail(case, "an answer", f"your code called exit() ({_raised(e)})",
                   "a check runs your function inside this kernel: return a value, never exit.") from None
    except BaseException as e:  # noqa: BLE001 - the learner's code may raise anything; say what and where
        raise Fail(case, "no exception", _raised(e),
                   hint or "your code raised on this case: fix it, then check again.") from None


def _cut(text: str, chars: int = FIELD_CHARS) -> str:
    text = str(text)
    return text if len(text) <= chars else f"{text[:chars]}... ({len(text) - chars} more characters)"


def _wrong(id: str, head: str, f: Fail) -> Verdict:
    return Verdict(id, "wrong", "\n".join([
        f"{head}: not yet.", f"  case:     {_cut(f.case)}", f"  expected: {_cut(f.expected)}",
        f"  yours:    {_cut(f.got)}", f"  hint:     {_cut(f.hint)}"]))


# --- checking -----------------------------------------------------------------------------------------


def check(id: str, answer, *, reveal: bool = False, seed: Optional[int] = None) -> Verdict:
    """Check your answer to exercise `id`; prints nothing, returns the verdict (a cell shows it).

    reveal=True: for a prediction, show the true numbers and why. seed: draw the same unseen cases again."""
    ex = _find("exercise", id)
    if isinstance(ex, Verdict):
        return ex
    head = f"{ex.id} {ex.title}"
    _Now.cases = random.Random(seed if seed is not None else random.SystemRandom().getrandbits(64))
    _Now.case, _Now.budget, _Now.inside = "your answer", TIME_LIMIT_S, False
    try:
        verdict = _judge(ex, head, answer, reveal)
    except TimeUp:
        verdict = _wrong(id, head, Fail(_Now.case, f"your code done within {TIME_LIMIT_S:g} s, over all the cases",
                                        f"still running after {TIME_LIMIT_S:g} s: the check stopped it",
                                        "look for a loop that never ends (a condition that never changes) or a "
                                        "sleep; every case here takes your code well under a second."))
    except KeyboardInterrupt:
        raise  # Stop in Jupyter stops the cell, as everywhere else
    except BaseException as e:  # noqa: BLE001 - exit() or anything else outside call(): a check never raises
        verdict = _wrong(id, head, Fail(_Now.case, "an answer", _raised(e),
                                        "a check runs your answer inside this kernel: return a value, never exit."))
    record(id, verdict.status)
    return verdict


def _judge(ex: Exercise, head: str, answer, reveal: bool) -> Verdict:
    from .predictions import Prediction, judge  # a prediction's verdict depends on earlier tries and reveal

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


class Report(str):
    """Text that a notebook cell shows as it is (no quotes, real line breaks)."""

    def __repr__(self) -> str:
        return str(self)


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


# The rest of the public surface, defined in the modules that own each idea:
from .predictions import check_prediction  # noqa: E402,F401 - they import the names above
from .quizzes import answer_question, quiz  # noqa: E402,F401
from .saved import progress, progress_path, record, reset_progress  # noqa: E402,F401
