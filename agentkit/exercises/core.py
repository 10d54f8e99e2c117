"""What every check is made of: the registry of exercises and questions, the verdict, the learner's code called
under the check's clock (`call`, `learner_code`), and feedback cut to a length. agentkit.exercises builds
check() on it; each chapter's module registers its exercises here."""
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

CHAPTERS = ["00", "01", "02", "03", "03b", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16", "17", "18"]
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
    time_limit: Optional[float] = None  # seconds for the learner's code over the whole check; None: TIME_LIMIT_S


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


def exercise(id: str, kind: str, title: str, task: str, time_limit: Optional[float] = None):
    """Decorator for a chapter module: register `checker(answer) -> success message`; `time_limit` replaces
    TIME_LIMIT_S for a check whose cases are many (the capstone's)."""
    def register(checker):
        REGISTRY.exercises[id] = Exercise(id, kind, title, task, checker, time_limit)
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
    importlib.import_module(f"{__package__}.ch{chapter}")
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
    """Run the learner's code in this block: it names the case, and spends the check's time limit."""
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


class Report(str):
    """Text that a notebook cell shows as it is (no quotes, real line breaks)."""

    def __repr__(self) -> str:
        return str(self)
