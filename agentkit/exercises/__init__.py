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
not counted) is reported with the case that caused it; an unknown id is a verdict too. A failed check names the
case, what was expected, what your code did, and one hint pointing back to the chapter, each cut to FIELD_CHARS.
Build checks draw unseen cases at random on every call (`seed=` repeats a draw), so a table of the cases a
failure showed does not pass. A wrong prediction says which numbers are too high or too low; the true ones are
shown when you ask (`reveal=True`) or after REVEAL_AFTER wrong tries. Once an answer was shown (so, or by
show_solution), a right answer is said to match the answer shown, and progress keeps it as "shown", not solved.

Where the operating system can fork (Linux, macOS), each check runs in a child process of the kernel (forked.py):
your functions travel with the fork, your code's output comes back to the cell, and the kernel ends the child at
the time limit, whatever the code does to signals or clocks; the kernel records progress. Elsewhere (Windows)
the check runs in the kernel's process under deadline.py's clock. `Verdict.path` says which ran ("fork" or
"in-process"); AGENTKIT_CHECKS=in-process chooses the second everywhere. Either way your code may not call the
check's own answers or the package's version of what an exercise builds (boundary.py), and a check called
from inside a running check is refused.

Each chapter's exercises live in `agentkit.exercises.chNN`; the worked solutions in `agentkit.solutions`
(`solutions/` in the repository). Progress is kept in this kernel and in a small JSON file in the folder you run
the notebook from (`.agentkit-progress.json`, never uploaded; saved.py says what it refuses); `reset_progress()`
empties it. The environment variable AGENTKIT_PROGRESS names another file, or `off` for none.
"""
from __future__ import annotations

import dis
import os
import random
import sys
import types
from pathlib import Path
from typing import Optional

from ..i18n import language, tr
from . import boundary, forked
from .core import (  # noqa: F401 - the package's surface: chapters and tests import these from here
    CHAPTERS, FIELD_CHARS, NOT_DONE, PROGRESS_FILE, REGISTRY, REVEAL_AFTER, SHOWN, TIME_LIMIT_S, Exercise, Fail,
    Forbidden, NotDone, NotPlain, Question, Report, Verdict, _Now, _cut, _find, _load, _raised, _wrong, call, cases, copied_from, exercise, words,
    YOUR_ANSWER, head_of, is_stub, learner_code, note, plain, question, reference, shown,
)
from .deadline import TimeUp
from .predictions import Prediction, judge, prediction  # noqa: F401
from .quizzes import answer_question, quiz  # noqa: F401
from .saved import mark_shown, progress, progress_path, record, reset_progress, was_shown  # noqa: F401

PATH_ENV = "AGENTKIT_CHECKS"  # "in-process": never fork


def check(id: str, answer, *, reveal: bool = False, seed: Optional[int] = None) -> Verdict:
    """Check your answer to exercise `id`; prints nothing, returns the verdict (a cell shows it).

    reveal=True: for a prediction, show the true numbers and why. seed: draw the same unseen cases again."""
    if _Now.running:  # the learner's code called check(): the running check keeps its clock and its state
        note(tr("your code called check({id}) while this check was running: refused", id=shown(id, 40)))
        return Verdict(str(id), "refused", tr("{id}: refused. check() was called from inside the code that a running "
                                              "check runs; a check runs one answer at a time.", id=shown(id, 40)))
    ex = _find("exercise", id)
    if isinstance(ex, Verdict):
        return ex
    if not reveal and _untouched(answer):  # the exercise cell as shipped: nothing to run, nowhere
        verdict = Verdict(ex.id, NOT_DONE, not_done(ex), "in-process")
        record(id, verdict.status)
        return verdict
    limit = ex.time_limit or TIME_LIMIT_S
    seed = seed if seed is not None else random.SystemRandom().getrandbits(64)
    shown_before = was_shown(id)
    if forked.AVAILABLE and ex.fork and os.environ.get(PATH_ENV, "") != "in-process":
        _warm(ex)
        boundary.prepare(ex.forbidden())
        outcome = forked.run(lambda: _run(ex, answer, reveal, seed, limit, _own_processes_closed), limit, _in_child)
        if outcome.interrupted:
            raise KeyboardInterrupt
        said, path = _from_child(ex, outcome, limit), "fork"
    else:
        said, path = _run(ex, answer, reveal, seed, limit), "in-process"
    verdict = Verdict(ex.id, said["status"], said["text"], path)
    if said.get("shown"):
        mark_shown(id)
    if verdict.ok and shown_before:
        verdict = _matches_what_was_shown(ex, verdict)
    record(id, verdict.status)
    return verdict


def not_done(ex: Exercise) -> str:
    """What an exercise not done yet says: its id, title and task."""
    return tr("{head}: not done yet. {task}", head=head_of(ex), task=tr(ex.task))


def _untouched(answer) -> bool:
    """The exercise cell's stub, told without running or asking anything of the answer: None, ..., a dict, tuple or
    list of only those (exact built-in types), or a function whose body only raises NotImplementedError."""
    if answer is None or answer is Ellipsis:
        return True
    if type(answer) is types.FunctionType:
        code = answer.__code__
        names = {i.opname for i in dis.get_instructions(code)}
        return ("NotImplementedError" in code.co_names and "RAISE_VARARGS" in names
                and not names & {"RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE"} and len(code.co_code) < 80)
    if type(answer) not in (dict, tuple, list):
        return False
    items = list(dict.values(answer)) if type(answer) is dict else list(answer)
    return bool(items) and all(i is None or i is Ellipsis or (type(i) in (dict, tuple, list) and _untouched(i))
                               for i in items)


def _in_child(watch) -> None:
    _Now.watch = watch


def _own_processes_closed() -> None:
    """In a forked check: end the processes the check's own code started (the WebAssembly engine's worker), so that
    what is left in the child's process group is the learner's."""
    wasm = sys.modules.get("agentkit.wasm_sandbox")
    worker = getattr(wasm, "_worker", None)
    if worker is not None:
        try:
            worker.close(kill=True)
        except Exception:  # noqa: BLE001 - a worker that is gone already
            pass


_WARMED: list = []


def _warm_package() -> None:
    """What most checks load on first use, loaded once in this process: a forked child's imports and caches die with
    it, so without this every check would pay for them again (about 0.3 s of imports each)."""
    if _WARMED:
        return
    _WARMED.append(True)
    from .. import i18n, tokens
    from ..scripts import course_script
    from ..tasks import load_tasks

    if language() != "en":
        i18n.catalogue(language())  # read once here: every forked check finds it

    course_script()  # imports every chapter's rules of the stand-in
    tokens.count_tokens("warm")  # the tokenizer's tables
    load_tasks()


def _warm(ex: Exercise) -> None:
    """The check's own preparation (imports, caches, a prediction's truth) in this process, so that every forked
    check finds it ready; a failure here is left for the check itself to report."""
    try:
        _warm_package()
    except Exception:  # noqa: BLE001
        pass
    if ex.warm is not None:
        try:
            ex.warm()
        except Exception:  # noqa: BLE001
            pass


def _run(ex: Exercise, answer, reveal: bool, seed: int, limit: float, then=None) -> dict:
    """The check itself, in whichever process runs it: {"status", "text", "shown", "notes"}; then() after it."""
    head = head_of(ex)
    _Now.cases, _Now.case, _Now.budget, _Now.inside = random.Random(seed), YOUR_ANSWER, limit, False
    _Now.running, _Now.notes, _Now.tripped, _Now.objects = True, [], [], ex.objects
    try:
        _Now.forbid = ex.forbidden()
        verdict = _judge(ex, head, answer, reveal)
    except TimeUp:
        verdict = _wrong(ex.id, head, Fail(_Now.case, within(limit),
                                           tr("still running after {limit} s: the check stopped it", limit=f"{limit:g}"),
                                           _late_hint(_Now.notes)))
    except KeyboardInterrupt:
        raise  # Stop in Jupyter stops the cell, as everywhere else
    except BaseException as e:  # noqa: BLE001 - exit() or anything else outside call(): a check never raises
        verdict = _wrong(ex.id, head, Fail(_Now.case, tr("an answer"), _raised(e),
                                           tr("a check runs your answer inside this kernel: return a value, never exit.")))
    finally:
        _Now.running, _Now.forbid, _Now.objects = False, (), True
        if then is not None:
            then()
    return {"status": verdict.status, "text": _with_notes(verdict.text, _Now.notes), "shown": ex.id in REGISTRY.shown,
            "notes": list(_Now.notes)}


def within(limit: float) -> str:
    return tr("your code done within {limit} s, over all the cases", limit=f"{limit:g}")


def _late_hint(notes: list) -> str:
    if any("signal" in n or "settrace" in n for n in notes):
        return tr("your code tried to switch off the check's clock (the notes below say how); the check's clock "
                  "still ran. Look for a loop that never ends, or a tool that waits without a timeout.")
    return tr("look for a loop that never ends (a condition that never changes) or a sleep; the worked solution "
              "needs a small part of this time.")


def _with_notes(text: str, notes: list) -> str:
    return text + "".join("\n" + tr("  note:     {note}", note=_cut(n, FIELD_CHARS // 2)) for n in notes[:3])


def _from_child(ex: Exercise, outcome, limit: float) -> dict:
    """The verdict the child sent, or the one the kernel writes when the child was ended or died without one."""
    head = head_of(ex)
    if outcome.result is not None and not outcome.ended:
        return dict(outcome.result)  # processes left in the child's group were ended; the check's own may be among them
    if outcome.ended == "learner":
        fail = Fail(outcome.case or YOUR_ANSWER, within(limit),
                    tr("still running after {limit} s: the check ended the process it ran in", limit=f"{limit:g}"),
                    _late_hint(outcome.notes) if outcome.notes else
                    tr("the check's own clock inside your code did not stop it, so something in your code switched "
                       "it off or blocked it (signal.alarm, signal.setitimer, SIGALRM ignored or masked, a C call "
                       "that never returns). {more}", more=_late_hint([])))
    elif outcome.ended == "own":
        whole = f"{limit + forked.OWN_TIME_S:g}"
        fail = Fail(outcome.case or YOUR_ANSWER, tr("the check done within {limit} s", limit=whole),
                    tr("the check was still running after {limit} s: the kernel ended it", limit=whole),
                    tr("the check's own code with your answer took too long: an object of yours whose methods never "
                       "return, or a machine far slower than expected. Return plain values."))
    else:
        how = outcome.crash or outcome.death or tr("no verdict")
        fail = Fail(outcome.case or YOUR_ANSWER, tr("a verdict from the check"),
                    tr("the check's process ended without one ({how})", how=how),
                    tr("your code ended the process the check runs in (os._exit, os.kill, a crash in C code): return "
                       "a value instead."))
    verdict = _wrong(ex.id, head, fail)
    return {"status": verdict.status, "text": _with_notes(verdict.text, outcome.notes), "shown": False}


def _matches_what_was_shown(ex: Exercise, verdict: Verdict) -> Verdict:
    head = head_of(ex)
    said = tr("{head}: correct. {message}", head=head, message="")
    message = verdict.text[len(said):] if verdict.text.startswith(said) else verdict.text
    return Verdict(ex.id, SHOWN, tr("{head}: matches the answer shown. The answer was shown before this check "
                                    "(reveal=True, three wrong tries, or show_solution), so progress keeps it as "
                                    "shown, not solved. {message}", head=head, message=message), verdict.path)


def _judge(ex: Exercise, head: str, answer, reveal: bool) -> Verdict:
    try:
        if not callable(answer):
            with learner_code("your answer"):  # a value of yours: plain copies only, read under the clock
                answer = plain(answer)
        if isinstance(ex.checker, Prediction):
            return judge(ex, head, answer, reveal)
        if is_stub(answer):
            raise NotDone()
        said = ex.checker(answer)
        return Verdict(ex.id, "correct", tr("{head}: correct. {message}", head=head, message=tr(said)))
    except NotDone:
        return Verdict(ex.id, NOT_DONE, not_done(ex))
    except Fail as f:
        return _wrong(ex.id, head, f)
    except NotPlain as e:
        return _wrong(ex.id, head, Fail(YOUR_ANSWER, tr("plain values"), str(e), tr(
            "write the answer with numbers, strings, lists, tuples and dicts, as the exercise cell's stub does.")))
    except Exception as e:  # noqa: BLE001 - an answer of a shape no checker foresaw is wrong, never a crash
        return _wrong(ex.id, head, Fail(_Now.case, tr("the shape the exercise cell shows"),
                                        tr("{answer}, which the check could not read ({error})",
                                           answer=shown(answer, 100), error=_raised(e)),
                                        tr("keep the shape of the exercise cell's stub: the same keys, and a pair "
                                           "where it asks for a pair.")))


def show_solution(id: str) -> Report:
    """The worked solution of exercise or question `id`, with its reasoning. Open it after you have tried."""
    from .worked import solution_text

    if _Now.running:
        note(tr("your code called show_solution({id}) while a check was running: refused", id=shown(id, 40)))
        return Report(tr("show_solution() is refused inside a running check."))
    found = _find("question", id) if ".q" in str(id) else _find("exercise", id)
    if isinstance(found, Verdict):
        return Report(found.text)
    mark_shown(id)
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
