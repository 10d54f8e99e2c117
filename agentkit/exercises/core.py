"""What every check is made of: the registry of exercises and questions, the verdict, the learner's code called
under the check's clock (`call`, `learner_code`), and feedback cut to a length. agentkit.exercises builds
check() on it; each chapter's module registers its exercises here."""
from __future__ import annotations

import difflib
import importlib
import re
import reprlib
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..i18n import Later, tr
from .boundary import (  # noqa: F401 - chapters import these from here (and from the package)
    FIELD_CHARS, YOUR_ANSWER, Fail, Forbidden, NotDone, NotPlain, _Now, _raised, call, cases, learner_code, note, plain, reference,
)

CHAPTERS = ["00", "01", "02", "03", "03b", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16", "17", "18"]
PROGRESS_FILE = ".agentkit-progress.json"
NOT_DONE = "not done yet"
SHOWN = "shown"  # right, after the answer was shown: progress keeps it apart from solved
TIME_LIMIT_S = 10.0  # your code's time in one check, over all its cases (the check's own code is not counted)
REVEAL_AFTER = 3  # wrong predictions before the true numbers are shown unasked


@dataclass
class Verdict:
    """What one check said: `status` is "correct", "wrong", NOT_DONE, SHOWN (right, after the answer was shown),
    "unknown" (no such id) or "refused" (check() called from code a check was running); `text` is the feedback;
    `path` says where the learner's code ran: "fork" (a child process) or "in-process"."""

    exercise: str
    status: str
    text: str
    path: str = ""

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
    forbid: tuple = ()  # "module:function" of the package that the learner builds: a call of one fails the check
    warm: Optional[Callable[[], Any]] = None  # the check's own preparation, run in the kernel before a fork
    fork: bool = True  # False: always in-process (a check that needs the kernel's own state)
    objects: bool = True  # False: what the learner's code returns must be plain values (boundary.plain)

    def forbidden(self) -> tuple:
        """(function, dotted name, the object that holds it, its attribute name) of each name in `forbid`."""
        found = []
        for name in self.forbid:
            module, _, qualname = name.partition(":")
            try:
                owner = target = importlib.import_module(module)
                for part in qualname.split("."):
                    owner, target = target, getattr(target, part)
            except (ImportError, AttributeError):  # moved by a refactor: tests/test_exercises_leaks.py names it
                continue
            found.append((target, f"{module}.{qualname}", owner, qualname.split(".")[-1]))
        return tuple(found)


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


def exercise(id: str, kind: str, title: str, task: str, time_limit: Optional[float] = None, *, forbid: tuple = (),
             warm: Optional[Callable[[], Any]] = None, fork: bool = True, objects: bool = True):
    """Decorator for a chapter module: register `checker(answer) -> success message`. `time_limit` replaces
    TIME_LIMIT_S for a check whose cases are many (the capstone's); `forbid` names the package's functions that
    the learner builds ("agentkit.retrieval:reciprocal_rank_fusion"), which the learner's code may not call; `warm`
    prepares what the check reads (imports, caches) in the kernel, once, before a forked check; fork=False runs
    the check in the kernel's own process everywhere; objects=False refuses what the learner's code returns unless
    it is plain values (numbers, strings, lists, tuples, dicts: no method of the learner's then runs in the
    checker, outside the clock), where objects=True lets an object through as it is (an agent the learner built)."""
    def register(checker):
        REGISTRY.exercises[id] = Exercise(id, kind, title, task, checker, time_limit, tuple(forbid), warm, fork,
                                          objects)
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
    where = (tr("Chapter {chapter} has: {ids}.", chapter=chapter, ids=", ".join(known)) if known else
             tr("The chapters are {chapters}; ids look like \"03.fuse\" or \"03.q1\".", chapters=", ".join(CHAPTERS)))
    text = (tr("No exercise {id}. {where}", id=shown(id), where=where) if kind == "exercise" else
            tr("No question {id}. {where}", id=shown(id), where=where))
    return Verdict(str(id), "unknown", text)


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


LABELS = {"thought", "action", "observation", "finish", "search", "calculate"}  # the protocol's words: everyone's


def words(text) -> list:
    """The words of a text as a copy check compares them: NFKC, case folded, punctuation and the protocol's labels
    dropped, every number the same word ("#": a changed number is an edit, not a text of one's own)."""
    found = re.findall(r"\w+", unicodedata.normalize("NFKC", str(text)).casefold())
    return ["#" if w.isdigit() else w for w in found if w not in LABELS]


def copied_from(text, printed, *, share: float = 0.7, run: int = 8):
    """The printed text that `text` copies, whole, cut or edited, or None. Copied: most of its words come, in
    order, from the printout (a cut, a word or a number changed), or `run` of them in a row do (a printout with
    words of one's own around it)."""
    mine = words(text)
    for original in printed:
        theirs = words(original)
        if not mine or not theirs:
            continue
        blocks = difflib.SequenceMatcher(None, mine, theirs, autojunk=False).get_matching_blocks()
        matched, longest = sum(b.size for b in blocks), max(b.size for b in blocks)
        if (matched >= share * len(mine) and len(mine) >= min(4, len(theirs))) or longest >= min(run, len(theirs)):
            return original
    return None


def _cut(text: str, chars: int = FIELD_CHARS) -> str:
    text = str(text)
    return text if len(text) <= chars else tr("{text}... ({more} more characters)", text=text[:chars],
                                              more=len(text) - chars)


def head_of(ex: Exercise) -> str:
    """How a verdict names its exercise: the id and the title, in the learner's language."""
    return f"{ex.id} {tr(ex.title)}"


def _wrong(id: str, head: str, f: Fail) -> Verdict:
    """A wrong verdict. The check's own words come translated (tr() where they were written), or as tr_later()'s texts,
    translated here; a hint may also be a registered text (a prediction's pointer), looked up here. The case and
    what was expected may hold the learner's data, and what the learner's code did is shown as it is."""
    def later(text):
        return tr(text) if isinstance(text, Later) else text

    return Verdict(id, "wrong", "\n".join([
        tr("{head}: not yet.", head=head), tr("  case:     {case}", case=_cut(later(f.case))),
        tr("  expected: {expected}", expected=_cut(later(f.expected))), tr("  yours:    {got}", got=_cut(f.got)),
        tr("  hint:     {hint}", hint=_cut(tr(f.hint)))]))


# --- checking -----------------------------------------------------------------------------------------


class Report(str):
    """Text that a notebook cell shows as it is (no quotes, real line breaks)."""

    def __repr__(self) -> str:
        return str(self)
