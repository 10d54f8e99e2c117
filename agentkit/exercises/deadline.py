"""A time limit on the learner's code inside one process, and a guard on the signal functions that could stop it.

    with time_limit(10, note=print):   # raises TimeUp in this thread once 10 s have passed
        run_the_learners_code()

Where the operating system can fork, check() runs each check in a child process that the kernel ends at the
deadline (forked.py), and this clock is only its first line: it names the case the code was on. Where it cannot
(Windows), this clock is all there is. It interrupts the code where it runs:
- Unix, main thread: SIGALRM from `setitimer`. Its handler raises TimeUp, which ends a sleep as well as a loop.
- Windows, main thread: a timer thread raises SIGINT (`signal.raise_signal`). While the limit is on, the SIGINT
  handler raises TimeUp once the time is up and KeyboardInterrupt before that, so Jupyter's Stop button still
  stops. SIGINT is the one signal that also wakes a sleeping main thread there.
- Any other thread: no signal reaches it, so a trace function reads the clock at every line (every opcode of
  code outside agentkit); a sleep or a single long C call (10 ** 10 ** 8) runs to its end there.
While the limit is on, the signal module's alarm, setitimer, signal, pthread_sigmask and sys.settrace refuse
to touch the clock's signal or trace (each refusal is a note for the verdict), so `signal.alarm(0)`, SIGALRM set
to SIG_IGN, or a tool's own `signal.alarm(n) ... signal.alarm(0)` cannot switch the limit off. Code that reaches
the C functions another way (a name imported before the check, ctypes) meets a backstop: a watchdog thread that
raises TimeUp in the main thread (PyThreadState_SetAsyncExc) GRACE_S after the time is up. It ends a loop, not a
sleep; the forked child's parent ends both.
TimeUp derives from BaseException, so `except Exception` in the learner's code does not swallow it; it is
raised again every RETRY_S while the limit is on. Code that catches BaseException in an endless loop is beyond
any in-process limit (not beyond the fork's).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ..i18n import tr, tr_later

RETRY_S = 0.25
GRACE_S = 0.5  # after the time is up, how long the signal gets before the watchdog steps in
_PACKAGE = str(Path(__file__).resolve().parent.parent)  # agentkit's own code is traced by line only


class TimeUp(BaseException):
    """The time limit of a check ran out while it was running."""


class _Clock:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.on, self.pending = True, False

    def up(self) -> bool:
        return self.on and time.monotonic() >= self.end


def _off(undo) -> None:
    """Run `undo`, even if a last TimeUp lands in the middle of it."""
    while True:
        try:
            undo()
            return
        except TimeUp:
            continue


def _ignore(text: str) -> None:
    pass


@contextmanager
def time_limit(seconds: float, note=_ignore):
    """Raise TimeUp in the calling thread once `seconds` have passed inside the block; `note(text)` hears what the
    code inside tried against the clock."""
    clock = _Clock(seconds)
    if threading.current_thread() is not threading.main_thread():
        limit, guarded = _traced, ()
    elif hasattr(signal, "setitimer"):
        limit, guarded = _alarm, (signal.SIGALRM,)
    else:
        limit, guarded = _interrupt, (signal.SIGINT,)
    with limit(clock, seconds), _guard(guarded, limit is _traced, note), _watched(clock, limit is not _traced):
        yield


# --- the clocks ---------------------------------------------------------------------------------


@contextmanager
def _alarm(clock: _Clock, seconds: float):
    def ring(signum, frame):
        if clock.up():
            raise TimeUp()

    start = time.monotonic()
    previous = _REAL["signal"](signal.SIGALRM, ring)
    outer = _REAL["setitimer"](signal.ITIMER_REAL, max(seconds, 0.001), RETRY_S)  # a timer already running (a tool's)

    def undo():
        clock.on = False
        _REAL["setitimer"](signal.ITIMER_REAL, 0)
        _REAL["signal"](signal.SIGALRM, previous)
        if outer[0] > 0:  # give the outer timer back what is left of it
            _REAL["setitimer"](signal.ITIMER_REAL, max(outer[0] - (time.monotonic() - start), 0.001), outer[1])

    try:
        yield
    finally:
        _off(undo)


@contextmanager
def _interrupt(clock: _Clock, seconds: float):
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):
        if clock.pending:  # ours: the time is up (or was, just before the limit came off)
            clock.pending = False
            if clock.on:
                raise TimeUp()
            return None
        if callable(previous):
            return previous(signum, frame)
        raise KeyboardInterrupt

    stop = threading.Event()

    def timer():
        delay = max(seconds, 0.001)
        while not stop.wait(delay):
            clock.pending = True
            signal.raise_signal(signal.SIGINT)
            delay = RETRY_S

    _REAL["signal"](signal.SIGINT, on_sigint)
    thread = threading.Thread(target=timer, name="agentkit-check-clock", daemon=True)
    thread.start()

    def undo():
        clock.on = False
        stop.set()
        thread.join()
        _REAL["signal"](signal.SIGINT, previous)  # a SIGINT of ours still pending is handled (ignored) before this

    try:
        yield
    finally:
        _off(undo)


@contextmanager
def _traced(clock: _Clock, seconds: float):
    previous = sys.gettrace()

    def tick(frame, event, arg):
        if clock.up():
            raise TimeUp()
        if event == "call" and not frame.f_code.co_filename.startswith(_PACKAGE):
            frame.f_trace_opcodes = True  # `while True: pass` has one line: only opcode events see it loop
        return tick

    _REAL["settrace"](tick)

    def undo():
        clock.on = False
        _REAL["settrace"](previous)

    try:
        yield
    finally:
        _off(undo)


# --- what the learner's code may not do to the clock ------------------------------------------------

_REAL = {"signal": signal.signal, "settrace": sys.settrace}
for _name in ("alarm", "setitimer", "pthread_sigmask"):
    if hasattr(signal, _name):
        _REAL[_name] = getattr(signal, _name)
_ORIGINAL = {(signal, name): function for name, function in _REAL.items() if name != "settrace"}
_ORIGINAL[(sys, "settrace")] = sys.settrace
WHY_REFUSED = tr_later("inside a check the check's clock owns that signal, so the call was refused (a tool's own "
                       "timeout can run the tool in a thread and wait with a timeout, as agentkit.tools does)")


def _packages_call() -> bool:
    """Is the caller of a stand-in agentkit's own code (a tool's timer, which gives the clock back), not the learner's?"""
    return sys._getframe(2).f_code.co_filename.startswith(_PACKAGE)


def _refusals(guarded: tuple, traced: bool, note) -> dict:
    """Stand-ins for the functions that could stop the clock: they refuse that part, note it, pass the rest on.
    agentkit's own code passes (it keeps the outer timer, as the clock does)."""
    def refused(text, answer):
        note(tr("your code called {call}: {why}.", call=text, why=tr(WHY_REFUSED)))
        return answer

    def on_signal(signum, handler):
        if signum in guarded and not _packages_call():
            return refused(f"signal.signal({signal.Signals(signum).name}, {getattr(handler, '__name__', handler)})",
                           signal.getsignal(signum))
        return _REAL["signal"](signum, handler)

    def on_alarm(seconds):
        if _packages_call():
            return _REAL["alarm"](seconds)
        return refused(f"signal.alarm({seconds!r})", 0)

    def on_setitimer(which, seconds, interval=0.0):
        if which == signal.ITIMER_REAL and not _packages_call():
            return refused(f"signal.setitimer(ITIMER_REAL, {seconds!r})", signal.getitimer(which))
        return _REAL["setitimer"](which, seconds, interval)

    def on_sigmask(how, mask):
        mask = set(mask)
        blocked = {s for s in mask if s in guarded} if how != signal.SIG_UNBLOCK and not _packages_call() else set()
        if blocked:
            refused(f"signal.pthread_sigmask(..., {{{', '.join(signal.Signals(s).name for s in blocked)}}})", None)
        return _REAL["pthread_sigmask"](how, mask - blocked)

    def on_settrace(function):
        return refused("sys.settrace(...)", None)

    stand_ins = {(signal, "signal"): on_signal}
    if hasattr(signal, "SIGALRM") and signal.SIGALRM in guarded:
        stand_ins.update({(signal, "alarm"): on_alarm, (signal, "setitimer"): on_setitimer})
    if "pthread_sigmask" in _REAL:
        stand_ins[(signal, "pthread_sigmask")] = on_sigmask
    if traced:
        stand_ins[(sys, "settrace")] = on_settrace
    return stand_ins


@contextmanager
def _guard(guarded: tuple, traced: bool, note):
    """Swap the refusing stand-ins into the signal module (and sys) for the duration of the block."""
    stand_ins = _refusals(guarded, traced, note)
    before = {key: _ORIGINAL.get(key, getattr(*key)) for key in stand_ins}  # not what is there: another thread's stand-in
    for (module, name), function in stand_ins.items():
        setattr(module, name, function)
    try:
        yield
    finally:
        for (module, name), function in before.items():
            setattr(module, name, function)


# --- the backstop: a watchdog thread, for code that reached the C functions another way ------------------


def _async_raiser():
    """A function that raises TimeUp in a thread (by its ident), or None where ctypes is missing."""
    try:
        import ctypes
    except ImportError:  # a Python without ctypes: the signal clock is all there is
        return None
    raise_in = ctypes.pythonapi.PyThreadState_SetAsyncExc
    raise_in.argtypes = (ctypes.c_ulong, ctypes.py_object)
    return lambda ident: raise_in(ident, TimeUp)


class _Watchdog:
    """One daemon thread for the whole process: it watches the running clock and raises TimeUp in the main thread
    GRACE_S after the time is up, if the signal did not end the block (and again every RETRY_S).

    An exception raised this way stays pending until the thread reaches its next bytecode check, so one raised just
    before the block ends would land after it: the block's end takes it there (`drop` then `_absorb`). It is never
    cleared with SetAsyncExc(ident, NULL): that leaves the interpreter's "async exception" flag set with no thread
    to reset it, and every thread then runs slowly or stalls."""

    def __init__(self, raise_in) -> None:
        self.raise_in, self.clock, self.raised = raise_in, None, False
        self.lock = threading.Condition()
        threading.Thread(target=self.run, name="agentkit-check-watchdog", daemon=True).start()

    def watch(self, clock: _Clock) -> None:
        with self.lock:
            self.clock, self.raised = clock, False
            self.lock.notify()

    def drop(self, clock: _Clock) -> bool:
        """Stop watching; True if a TimeUp was raised for this block (it may still be on its way)."""
        with self.lock:  # under the lock: no TimeUp is raised after this
            if self.clock is clock:
                self.clock = None
            raised, self.raised = self.raised, False
            return raised

    def run(self) -> None:
        main = threading.main_thread().ident
        while True:
            with self.lock:
                if self.clock is None:
                    self.lock.wait()
                    continue
                late = self.clock.end + GRACE_S - time.monotonic()
                if late > 0:
                    self.lock.wait(min(late, RETRY_S))
                    continue
                self.raise_in(main)
                self.raised = True
                self.lock.wait(RETRY_S)


def _absorb() -> None:
    """Take a TimeUp still pending for this thread here, where it harms nothing: a loop reaches the check."""
    try:
        for _ in range(10_000):
            pass
    except TimeUp:
        pass


_WATCHDOG: list = []  # the one watchdog, once a clock on the main thread has needed it


@contextmanager
def _watched(clock: _Clock, main: bool):
    if main and not _WATCHDOG:
        raise_in = _async_raiser()
        _WATCHDOG.append(_Watchdog(raise_in) if raise_in else None)
    watchdog = _WATCHDOG[0] if main else None
    if watchdog is None:
        yield
        return
    watchdog.watch(clock)
    raised = []
    try:
        yield
    finally:
        _off(lambda: raised.append(watchdog.drop(clock)))
        if any(raised):
            _off(_absorb)


def _forked_child() -> None:
    """In a forked child the watchdog's thread is gone and its lock may be held: the child's parent is its backstop."""
    _WATCHDOG[:] = [None]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_child)
