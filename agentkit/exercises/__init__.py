"""Check yourself: exercises checked on the spot, offline, from the ledgers of the stand-in.

    from agentkit.exercises import check, quiz, progress
    check("03.fuse", my_fuse)     # runs your code on cases you have not seen; says what happened
    quiz("03.q1")                 # a multiple-choice question (widget); quiz("03.q1", "b") answers in code
    progress("03")                # which exercises of chapter 03 are done, here and across chapters

A check never raises: an unsolved stub (`None`, `...`, or a function that raises NotImplementedError)
says "not done yet"; an exception in your code is reported with the case that caused it. A failed
check names the case, what was expected, what your code did, and one hint pointing back to the
chapter. Each chapter's exercises live in `agentkit.exercises.chNN`; worked solutions are kept apart,
in the repository's `solutions/` folder.

Progress is kept in this kernel and in a small JSON file in the folder you run the notebook from
(`.agentkit-progress.json`, never uploaded); `reset_progress()` empties it. The environment variable
AGENTKIT_PROGRESS names another file, or `off` for none.
"""
from __future__ import annotations

import importlib
import json
import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

CHAPTERS = ["00", "01", "02", "03", "03b", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16"]  # each a module chNN here
PROGRESS_FILE = ".agentkit-progress.json"
NOT_DONE = "not done yet"


class Fail(Exception):
    """Raised inside a checker: the case, what was expected, what the learner's code did, and a hint."""

    def __init__(self, case: str, expected: str, got: str, hint: str) -> None:
        super().__init__(case)
        self.case, self.expected, self.got, self.hint = case, expected, got, hint


class NotDone(Exception):
    """Raised inside a checker when the answer is still the stub."""


@dataclass
class Verdict:
    """What one check said: `status` is "correct", "wrong" or NOT_DONE; `text` is the feedback."""

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


REGISTRY = _Registry()


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


def _load(chapter: str) -> None:
    importlib.import_module(f"{__name__}.ch{chapter}")


def _find(kind: str, id: str):
    chapter = str(id).split(".")[0]
    if chapter in CHAPTERS:
        _load(chapter)
    table = REGISTRY.exercises if kind == "exercise" else REGISTRY.questions
    if id not in table:
        known = ", ".join(sorted(table)) or "none loaded"
        raise KeyError(f"No {kind} {id!r}. Known: {known}.")
    return table[id]


# --- stubs and the learner's code ----------------------------------------------------------


def is_stub(answer) -> bool:
    """An answer not written yet: None, `...`, or a dict/tuple/list made only of those."""
    if answer is None or answer is Ellipsis:
        return True
    if isinstance(answer, dict):
        return bool(answer) and all(is_stub(v) for v in answer.values())
    if isinstance(answer, (list, tuple)):
        return bool(answer) and all(is_stub(v) for v in answer)
    return False


def call(function, *args, case: str, hint: str):
    """Call the learner's function; NotImplementedError means not done, any other exception is a Fail."""
    try:
        return function(*args)
    except NotImplementedError as e:
        raise NotDone(str(e)) from None
    except Exception as e:  # noqa: BLE001 - the learner's code may raise anything; say what and where
        line = traceback.extract_tb(e.__traceback__)[-1]
        where = f"line {line.lineno}" + (f": {line.line.strip()}" if line.line and line.line.strip() else "")
        raise Fail(case, "no exception", f"{type(e).__name__}: {e} ({where})",
                   hint or "your code raised on this case: fix it, then check again.") from None


def check_prediction(prediction, truth: dict, *, what: str, labels: tuple, hint: Callable,
                     case: Callable = lambda name: name, source: str = "the ledgers") -> None:
    """Compare a prediction {name: (numbers...)} with the truth read from the runs; raise NotDone or Fail.

    `labels` name the numbers ("LLM calls", "tool calls"); `hint(name, guess, actual)` says why the truth is what it is."""
    shape = f"({', '.join(labels)})"
    if not isinstance(prediction, dict):
        raise Fail("the prediction", f"a dict {{{what}: {shape}}}", type(prediction).__name__,
                   "copy the dict from the exercise cell and fill in the numbers.")
    count = {1: "one whole number", 2: "a pair of whole numbers", 3: "three whole numbers"}.get(len(labels),
                                                                                          f"{len(labels)} whole numbers")
    for name, actual in truth.items():
        guess = prediction.get(name)
        if guess is None or guess is Ellipsis:
            raise NotDone()
        try:
            guess = tuple(int(x) for x in guess)
        except (TypeError, ValueError):
            guess = None
        if guess is None or len(guess) != len(labels):
            raise Fail(name, count, repr(prediction.get(name)), f"write {shape}.")
        if guess != tuple(actual):
            off = ", ".join(f"{label} off by {g - a:+d}" for label, g, a in zip(labels, guess, actual) if g != a)
            raise Fail(case(name), f"{tuple(actual)} from {source}", f"{guess} ({off})", hint(name, guess, tuple(actual)))


# --- checking -------------------------------------------------------------------------------


def check(id: str, answer) -> Verdict:
    """Check your answer to exercise `id`; prints nothing, returns the verdict (a cell shows it)."""
    ex = _find("exercise", id)
    head = f"{ex.id} {ex.title}"
    try:
        if is_stub(answer):
            raise NotDone()
        message = ex.checker(answer)
        verdict = Verdict(id, "correct", f"{head}: correct. {message}")
    except NotDone:
        verdict = Verdict(id, NOT_DONE, f"{head}: {NOT_DONE}. {ex.task}")
    except Fail as f:
        verdict = _wrong(id, head, f)
    except Exception as e:  # noqa: BLE001 - a check never raises: an answer of a shape no checker foresaw is wrong
        verdict = _wrong(id, head, Fail("your answer", "the shape the exercise cell shows",
                                        f"{answer!r:.100}, which the check could not read ({type(e).__name__}: {e})",
                                        "keep the shape of the exercise cell's stub: the same keys, and a pair where "
                                        "it asks for a pair."))
    _record(id, verdict.status)
    return verdict


def _wrong(id: str, head: str, f: Fail) -> Verdict:
    return Verdict(id, "wrong", "\n".join([
        f"{head}: not yet.", f"  case:     {f.case}", f"  expected: {f.expected}",
        f"  yours:    {f.got}", f"  hint:     {f.hint}"]))


def answer_question(id: str, letter: str) -> Verdict:
    """Answer question `id` with an option letter; the verdict explains the choice (and, when right, every option)."""
    q = _find("question", id)
    letter = str(letter).strip().lower().rstrip(")")
    if letter not in q.options:
        return Verdict(id, NOT_DONE, f"{id}: choose one of {', '.join(q.options)} (you gave {letter!r}).")
    text, correct, why = q.options[letter]
    if not correct:
        lines = [f"{id}: {letter}) is not it. {_sentence(why)}", f"  Try again.{' Hint: ' + q.hint if q.hint else ''}"]
        verdict = Verdict(id, "wrong", "\n".join(lines))
    else:
        lines = [f"{id}: {letter}) is right. {_sentence(why)}", "  The others:"]
        lines += [f"  {other}) {_sentence(w)}" for other, (_, c, w) in q.options.items() if other != letter]
        verdict = Verdict(id, "correct", "\n".join(lines))
    _record(id, verdict.status)
    return verdict


def _sentence(text: str) -> str:
    """Start with a capital, unless the first word is code (max_steps, parse_reply, `x`)."""
    first = text.split(" ", 1)[0]
    return text if not first.isalpha() else text[:1].upper() + text[1:]


class _QuizPlaceholder:
    """What a quiz cell shows as plain text (a saved notebook, or a front end without widgets)."""

    def __init__(self, q: Question, widget) -> None:
        self.q, self.widget = q, widget

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs) if self.widget is not None else {}
        bundle = dict(bundle or {})
        bundle["text/plain"] = self.text()
        return bundle

    def text(self) -> str:
        options = "\n".join(f"  {letter}) {text}" for letter, (text, _, _) in self.q.options.items())
        return f"{self.q.id}: {self.q.prompt}\n{options}\n(choose an option and press Check, or call quiz(\"{self.q.id}\", \"a\"))"

    def __repr__(self) -> str:
        return self.text()


def quiz(id: str, letter: Optional[str] = None):
    """Show question `id` as a widget (options, a Check button, the explanation); with `letter`, answer in code."""
    q = _find("question", id)
    if letter is not None:
        return answer_question(id, letter)
    try:
        import ipywidgets as widgets
    except ImportError:
        return _QuizPlaceholder(q, None)
    choice = widgets.RadioButtons(options=[(f"{k}) {t}", k) for k, (t, _, _) in q.options.items()], value=None,
                                  layout=widgets.Layout(width="auto"))
    button = widgets.Button(description="Check", button_style="primary")
    feedback = widgets.HTML()

    def on_click(_):
        if choice.value is None:
            feedback.value = "<i>Choose an option first.</i>"
            return
        verdict = answer_question(id, choice.value)
        colour = "#1a7f37" if verdict.ok else "#b35900"
        import html
        feedback.value = f"<pre style='white-space: pre-wrap; color: {colour}'>{html.escape(verdict.text)}</pre>"

    button.on_click(on_click)
    box = widgets.VBox([widgets.HTML(f"<b>{q.id}</b> {q.prompt}"), choice, button, feedback])
    box.add_class("agentkit-quiz")  # read by tools/browser_test.py, with the question's id:
    box.add_class("agentkit-quiz-" + q.id.replace(".", "-"))
    return _QuizPlaceholder(q, box)


# --- progress ---------------------------------------------------------------------------------


def progress_path() -> Optional[Path]:
    setting = os.environ.get("AGENTKIT_PROGRESS", "")
    if setting.lower() == "off":
        return None
    return Path(setting) if setting else Path.cwd() / PROGRESS_FILE


def _read_file() -> dict:
    path = progress_path()
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}  # a damaged file is ignored, and replaced on the next solved exercise


def _record(id: str, status: str) -> None:
    REGISTRY.done[id] = status
    path = progress_path()
    if path is None or status != "correct":
        return
    data = _read_file()
    data[id] = "correct"
    try:
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    except OSError:
        pass  # a read-only folder: progress stays in this kernel


def reset_progress() -> None:
    """Forget every solved exercise: in this kernel and in the progress file."""
    REGISTRY.done.clear()
    path = progress_path()
    if path is not None and path.exists():
        path.unlink()


class Report(str):
    """Text that a notebook cell shows as it is (no quotes, real line breaks)."""

    def __repr__(self) -> str:
        return str(self)


def progress(chapter: str) -> Report:
    """A table of chapter `chapter`'s exercises and questions: done in this kernel, or in the progress file."""
    _load(chapter)
    saved = _read_file()
    items = [(e.id, f"{e.kind}: {e.title}") for e in REGISTRY.exercises.values() if e.id.startswith(chapter + ".")]
    items += [(q.id, "concept question") for q in REGISTRY.questions.values() if q.id.startswith(chapter + ".")]
    lines = [f"Chapter {chapter}: check yourself"]
    for id, title in items:
        here = REGISTRY.done.get(id)
        mark = ("done" if here == "correct" else "done (earlier)" if saved.get(id) == "correct" else
                "tried, not yet" if here == "wrong" else NOT_DONE)
        lines.append(f"  {id:10} {title:48} {mark}")
    done = sum(1 for id, _ in items if REGISTRY.done.get(id) == "correct" or saved.get(id) == "correct")
    lines.append(f"{done} of {len(items)} done.")
    others = sorted({id.split('.')[0] for id in saved} - {chapter})
    if others:
        lines.append("Other chapters with solved exercises: " + ", ".join(others) + ".")
    return Report("\n".join(lines))


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
