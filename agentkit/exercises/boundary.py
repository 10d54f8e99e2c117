"""Where the checker hands control to the learner's code, and takes it back: `learner_code` (the clock, what the
code may not call, the random source it may not read) and `call` (a function of the learner's, its result turned
into plain values under the same clock).

While the learner's code runs:
- the check's clock runs (deadline.py), and in a forked check the parent watches it too (forked.py);
- the check's random source is swapped for a decoy, so the cases still to be drawn cannot be read from it;
- every function the check uses as its own answer (`@reference`) and every function of the package that the
  exercise builds (`exercise(..., forbid=...)`) is a tripwire: calling one fails the check, caught or not;
- a value it returns is copied into plain Python values (numbers, strings, lists, tuples, dicts, sets) by the
  C methods of the built-in types, so no `__eq__`, `__float__` or `__iter__` of the learner's runs later in
  the checker, outside the clock; an object of a class the notebook defines is refused.
"""
from __future__ import annotations

import numbers
import random
import time
import traceback
import types
from contextlib import contextmanager
from pathlib import Path

from ..i18n import tr, tr_later
from .deadline import TimeUp, _off, time_limit

FIELD_CHARS = 600  # each line of feedback: an exception's message or a returned value can be any length
MAX_ITEMS = 1_000_000  # an iterator the learner returns is read this far, and no further
MAX_DEPTH = 40
YOUR_ANSWER = tr_later("your answer")  # the case a check is on until it names one


class Fail(Exception):
    """Raised inside a checker: the case, what was expected, what the learner's code did, and a hint."""

    def __init__(self, case: str, expected: str, got: str, hint: str) -> None:
        super().__init__(case)
        self.case, self.expected, self.got, self.hint = case, expected, got, hint


class NotDone(Exception):
    """Raised inside a checker when the answer is still the stub."""


class Forbidden(BaseException):
    """The learner's code called a function the exercise asks it to build (or the check's own answer)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class _Now:
    """The check that is running: its random cases, the case the learner's code is on, its time left, what it noted."""
    cases = random.Random(0)
    case = YOUR_ANSWER
    budget = 10.0
    inside = False
    running = False  # a check is running in this process: check() called from the learner's code is refused
    notes: list = []  # what the learner's code tried against the check (said in the verdict)
    tripped: list = []  # forbidden functions the learner's code called
    forbid: tuple = ()  # (function, what to call it, its module, its name there) of the running exercise
    objects = True  # may the learner's code return objects of its own classes (Exercise.objects)?
    watch = None  # in a forked check: the parent's view of the clock (forked.py)


_DECOY = random.Random()


def cases() -> random.Random:
    """The running check's random source: draw unseen cases from it, never from the module `random`."""
    return _Now.cases


def note(text: str) -> None:
    """Keep something the learner's code did that the verdict should say (once)."""
    if text not in _Now.notes:
        _Now.notes.append(text)
        if _Now.watch is not None:
            _Now.watch.note(text)


# --- tripwires ----------------------------------------------------------------------------------------

REFERENCES: list = []  # (function, name, None, None): the checks' own answers


def reference(function):
    """Mark a checker function that computes expected answers: the learner's code may never call it."""
    REFERENCES.append((function, f"{function.__module__}.{function.__qualname__}", None, None))
    return function


_TRIP_CODE: dict = {}


def _tripwire(function, name: str):
    """A code object, named as `function`, that reports a call of it: it runs with the function's own globals,
    so it reaches this module through __import__."""
    if function.__closure__:
        raise TypeError(f"{name} is a closure: it cannot be a tripwire")
    if name not in _TRIP_CODE:
        source = (f"def {function.__name__}(*args, **kwargs):\n"
                  f"    __import__({__name__!r}, fromlist=['_'])._tripped({name!r})\n")
        namespace: dict = {}
        exec(compile(source, f"<the check's tripwire for {name}>", "exec"), {}, namespace)
        _TRIP_CODE[name] = namespace[function.__name__].__code__
    return _TRIP_CODE[name]


def prepare(forbid: tuple) -> None:
    """Compile the tripwires of the references and of `forbid` here, once: a forked check finds them ready."""
    for function, name, _, _ in [*REFERENCES, *forbid]:
        if getattr(function, "__code__", None) is not None and not function.__closure__:
            _tripwire(function, name)


def _tripped(name: str):
    if name not in _Now.tripped:
        _Now.tripped.append(name)
    raise Forbidden(name)


def _stand_in(name: str):
    def tripwire(*args, **kwargs):
        _tripped(name)
    return tripwire


@contextmanager
def _tripwires():
    """Every forbidden function reports its calls: a Python function through its code object (every reference to
    it sees the swap); a function in C (numpy's, say) through its module's attribute, which catches the usual
    `np.percentile(...)`, not a name imported before the check."""
    codes, attributes = [], []
    for function, name, module, attr in [*REFERENCES, *_Now.forbid]:
        if getattr(function, "__code__", None) is not None and not function.__closure__:
            codes.append((function, function.__code__, _tripwire(function, name)))
        elif module is not None:
            attributes.append((module, attr, getattr(module, attr), _stand_in(name)))
    for function, _, wire in codes:
        function.__code__ = wire
    for module, attr, _, wire in attributes:
        setattr(module, attr, wire)

    def restore():
        for function, code, _ in codes:
            function.__code__ = code
        for module, attr, original, _ in attributes:
            setattr(module, attr, original)

    try:
        yield
    finally:
        _off(restore)


# --- the learner's code, and what it returns ----------------------------------------------------------


@contextmanager
def learner_code(case: str):
    """Run the learner's code in this block: it names the case, and spends the check's time limit."""
    _Now.case = case
    if _Now.inside:  # the learner's code called back into a check: one clock is enough
        yield
        return
    start, _Now.inside = time.monotonic(), True
    real, _Now.cases = _Now.cases, _DECOY  # kept in this generator's frame, which the learner's frames do not reach
    if _Now.watch is not None:
        _Now.watch.enter(case, _Now.budget)
    try:
        with time_limit(max(_Now.budget, 0.001), note=note), _tripwires():
            yield
    finally:
        _Now.inside, _Now.cases = False, real
        _Now.budget -= time.monotonic() - start
        if _Now.watch is not None:
            _Now.watch.leave()


def _raised(e: BaseException) -> str:
    """`Type: message (line N: code)`, the line being the last one of the learner's own code if it can be told."""
    try:
        message = str(e)
    except Exception:  # noqa: BLE001
        message = tr("<a message that cannot be shown>")
    frames = traceback.extract_tb(e.__traceback__)
    own = [f for f in frames if not f.filename.startswith(str(Path(__file__).resolve().parent.parent))
           and not f.filename.startswith("<the check's tripwire")]
    line = (own or frames or [None])[-1]
    where = ("" if line is None else tr(" (line {line}: {code})", line=line.lineno, code=line.line.strip())
             if line.line else tr(" (line {line})", line=line.lineno))
    return f"{type(e).__name__}: {message[:FIELD_CHARS // 2]}{where}"


def forbidden(case: str, name: str) -> Fail:
    return Fail(case, tr("code of your own: the task does not allow calling the package's version of what you build"),
                tr("your code called {name}", name=name),
                tr("build it from the pieces the chapter shows; the check refuses a call to the function it compares "
                   "your answer with."))


def call(function, *args, case: str, hint: str):
    """Call the learner's function; NotImplementedError means not done, any other exception or exit() is a Fail.
    What it returns comes back as plain values (see `plain`)."""
    with learner_code(case):
        try:
            result = plain(function(*args))
        except (TimeUp, KeyboardInterrupt, NotDone, Fail):
            raise
        except Forbidden as e:
            raise forbidden(case, e.name) from None
        except NotPlain as e:
            raise Fail(case, tr("plain values"), f"{e}", tr("return numbers, strings, lists, tuples or dicts: the "
                                                            "check compares only those.")) from None
        except NotImplementedError as e:
            raise NotDone(str(e)) from None
        except SystemExit as e:
            raise Fail(case, tr("an answer"), tr("your code called exit() ({error})", error=_raised(e)),
                       tr("a check runs your function inside this kernel: return a value, never exit.")) from None
        except BaseException as e:  # noqa: BLE001 - the learner's code may raise anything; say what and where
            raise Fail(case, tr("no exception"), _raised(e),
                       hint or tr("your code raised on this case: fix it, then check again.")) from None
    if _Now.tripped:  # a tripwire whose exception the learner's code caught
        raise forbidden(case, _Now.tripped[0])
    return result


class NotPlain(ValueError):
    """A returned value the check will not handle: an object of a class from outside the package, or too deep."""


_ATOMS = {bool, int, float, complex, str, bytes, type(None), type(Ellipsis), range}
_BASES = ((int, int.__int__), (float, float.__float__), (complex, complex.__pos__), (str, str.__str__),
          (bytes, lambda value: bytes.__getitem__(value, slice(None))))  # each returns the exact built-in type
_CONTAINERS = ((list, list), (tuple, tuple), (set, set), (frozenset, frozenset))


def plain(value, depth: int = 0):
    """`value` rebuilt from built-in types only, through their C methods: a subclass's own __eq__, __iter__,
    __float__ never run. Iterators are read into lists (under the caller's clock). Other objects come back as
    they are, except those of a class the notebook defines (NotPlain)."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if depth > MAX_DEPTH:
        raise NotPlain(tr("a value nested more than {depth} levels deep", depth=MAX_DEPTH))
    if issubclass(kind, dict):  # issubclass of type(value): a class cannot lie about its type, only its __class__
        return {plain(k, depth + 1): plain(v, depth + 1) for k, v in dict.items(value)}
    for base, make in _CONTAINERS:
        if issubclass(kind, base):
            return make(plain(item, depth + 1) for item in base.__iter__(value))
    for base, make in _BASES:
        if issubclass(kind, base):
            return make(value)
    if issubclass(kind, types.GeneratorType) or (kind.__module__ == "builtins" and hasattr(kind, "__next__")):
        items = []
        for item in value:
            items.append(plain(item, depth + 1))
            if len(items) > MAX_ITEMS:
                raise NotPlain(tr("an iterator of more than {items} items", items=f"{MAX_ITEMS:,}"))
        return items
    if isinstance(value, numbers.Integral):  # numpy's integers, say: their own conversion, under the caller's clock
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if _Now.objects or str(getattr(kind, "__module__", "")).split(".")[0] in ("builtins", "agentkit"):
        return value  # a function, an object of the package's (a Runtime), or one the exercise asks for
    raise NotPlain(tr("an object of {kind} (from {module}): return plain values (numbers, strings, lists, tuples, "
                      "dicts)", kind=kind.__qualname__, module=kind.__module__))
