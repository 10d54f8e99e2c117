"""A time limit on a check, inside this process: a learner's endless loop or long sleep ends as a verdict.

    with time_limit(10):        # raises TimeUp in this thread once 10 s have passed
        run_the_learners_code()

A thread cannot kill Python code, and a child process per check would cost a second on Windows and lose
the learner's notebook objects (a lambda does not pickle). So the clock interrupts the code where it runs:
- Unix, main thread (where Jupyter runs a cell): SIGALRM from `setitimer`. Its handler raises TimeUp, which
  ends a sleep as well as a loop (Python retries an interrupted sleep only when the handler returns).
- Windows, main thread: a timer thread raises SIGINT (`signal.raise_signal`). While the limit is on, the
  SIGINT handler raises TimeUp once the time is up and KeyboardInterrupt before that, so Jupyter's Stop
  button still stops. SIGINT is the one signal that also wakes a sleeping main thread there.
- Any other thread: no signal reaches it, so a trace function reads the clock at every line (every opcode
  of code outside agentkit); a sleep or a single long C call (10 ** 10 ** 8) runs to its end there.
TimeUp derives from BaseException, so `except Exception` in the learner's code does not swallow it; it is
raised again every RETRY_S while the limit is on, for code that swallows everything once. Code that
catches BaseException in an endless loop is beyond any in-process limit.
"""
from __future__ import annotations

import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

RETRY_S = 0.25
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


@contextmanager
def time_limit(seconds: float):
    """Raise TimeUp in the calling thread once `seconds` have passed inside the block."""
    clock = _Clock(seconds)
    if threading.current_thread() is not threading.main_thread():
        limit = _traced
    elif hasattr(signal, "setitimer"):
        limit = _alarm
    else:
        limit = _interrupt
    with limit(clock, seconds):
        yield


@contextmanager
def _alarm(clock: _Clock, seconds: float):
    def ring(signum, frame):
        if clock.up():
            raise TimeUp()

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001), RETRY_S)

    def undo():
        clock.on = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

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

    signal.signal(signal.SIGINT, on_sigint)
    thread = threading.Thread(target=timer, name="agentkit-check-clock", daemon=True)
    thread.start()

    def undo():
        clock.on = False
        stop.set()
        thread.join()
        signal.signal(signal.SIGINT, previous)  # a SIGINT of ours still pending is handled (ignored) before this

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

    sys.settrace(tick)

    def undo():
        clock.on = False
        sys.settrace(previous)

    try:
        yield
    finally:
        _off(undo)
