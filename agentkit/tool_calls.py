"""How one tool call runs: on the caller's thread within its time limit, or on a worker thread.

A tool is anything with `name`, `func` (str -> str) and `timeout_s` (seconds, or None for no limit).

* `call_once(tool, argument)`: the tool's output as a string, cut to MAX_OUTPUT_CHARS with a last line
  saying how much was cut; an exception from the tool, SystemExit included, becomes an error observation.
  Only KeyboardInterrupt (Ctrl-C) and ToolTimeout get out.
* `call_with_alarm(tool, argument)`: the same, on this thread, under a SIGALRM timer: a call still running
  at its deadline gets `ToolTimeout` raised inside it (again every ALARM_REPEAT_S while it swallows it),
  and the observation says it was stopped. Our handler is installed for the call and the default put back
  after it. Only where `alarm_ready()`: the main thread of a process that has SIGALRM (not Windows),
  SIGALRM at its default (nobody else's handler, such as a check's own time limit), no timed call running.
* `WorkerLane().run(tool, argument)`: the same on a worker thread, given up at the deadline (the thread
  is left to finish on its own; the next call gets a new worker). For everywhere else.
"""
from __future__ import annotations

import queue
import signal
import sys
import threading

ERROR_PREFIX = "error:"
TOOL_TIMEOUT_S = 30.0  # a tool call that takes longer is given up (its observation says so)
MAX_OUTPUT_CHARS = 20_000  # longer outputs are cut: an observation goes into every later prompt
ALARM_REPEAT_S = 1.0  # a tool that swallows ToolTimeout is interrupted again this often


def call_once(tool, argument: str) -> str:
    """The tool's output as a capped string, or an error observation; only KeyboardInterrupt gets out."""
    try:
        output = tool.func(argument)
        if output is not None and not isinstance(output, str):
            output = str(output)
    except (Exception, SystemExit) as e:  # a tool bug, even sys.exit in it, must not end the run
        return f"{ERROR_PREFIX} tool {tool.name} failed: {type(e).__name__}: {e}"
    if output is None:
        return f"{ERROR_PREFIX} tool {tool.name} returned nothing"
    if len(output) > MAX_OUTPUT_CHARS:
        cut = len(output) - MAX_OUTPUT_CHARS
        output = f"{output[:MAX_OUTPUT_CHARS]}\n[output cut: the last {cut:,} of its {len(output):,} characters are not shown]"
    return output


# --- on this thread, under a timer ----------------------------------------------------------------------


class ToolTimeout(BaseException):
    """Raised inside a tool call that ran past its timeout. Not an Exception: a tool's own
    `except Exception` must not swallow it."""


_alarm = {"armed": False}  # a call on the main thread is running under our SIGALRM timer
_TIMER = hasattr(signal, "setitimer")  # not on Windows
_MAIN = threading.main_thread().ident
# signal.getsignal and signal.signal wrap the standard library's C functions (module _signal) to turn handlers
# into enums, which fails over, at a few µs a call, when a handler is a function: ask the C functions themselves.
_c_signal = sys.modules.get("_signal")
_handler_of = getattr(_c_signal, "getsignal", signal.getsignal)
_install = getattr(_c_signal, "signal", signal.signal)
_DEFAULT = getattr(_c_signal, "SIG_DFL", signal.SIG_DFL)  # the C function knows its own object, not the enum


def _on_alarm(signum, frame) -> None:
    if _alarm["armed"]:  # a signal that arrives after the call ended is dropped
        raise ToolTimeout


def alarm_ready() -> bool:
    """Can a call be timed by SIGALRM on this thread (the main one, SIGALRM at its default, no timed call running)?"""
    return (not _alarm["armed"] and _TIMER and threading.get_ident() == _MAIN
            and _handler_of(signal.SIGALRM) == signal.SIG_DFL)


def call_with_alarm(tool, argument: str) -> str:
    """The call on this thread, interrupted at its deadline; SIGALRM is at its default again afterwards."""
    _install(signal.SIGALRM, _on_alarm)
    _alarm["armed"] = True
    try:
        signal.setitimer(signal.ITIMER_REAL, tool.timeout_s, ALARM_REPEAT_S)
        try:
            return call_once(tool, argument)
        finally:
            _alarm["armed"] = False  # first: a late signal now does nothing
            signal.setitimer(signal.ITIMER_REAL, 0)
    except ToolTimeout:
        return f"{ERROR_PREFIX} tool {tool.name} timed out after {tool.timeout_s:g} s and was stopped"
    finally:
        _install(signal.SIGALRM, _DEFAULT)  # after the timer is off: no alarm can come to the default


# --- on a worker thread ------------------------------------------------------------------------------


class _Worker:
    """One daemon thread that runs tool calls in turn; abandoned (it exits once free) when a call times out."""

    def __init__(self) -> None:
        self.requests: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, daemon=True, name="agentkit-tool")
        self.thread.start()

    def _serve(self) -> None:
        while (request := self.requests.get()) is not None:
            tool, argument, reply = request
            try:
                reply.put((call_once(tool, argument), None))
            except BaseException as e:  # noqa: BLE001 - a KeyboardInterrupt raised by the tool itself: hand it over
                reply.put((None, e))

    def run(self, tool, argument: str, timeout: float):
        """(output, None), or (None, the exception to re-raise); queue.Empty when the call timed out."""
        reply: queue.SimpleQueue = queue.SimpleQueue()
        self.requests.put((tool, argument, reply))
        return reply.get(timeout=timeout)

    def abandon(self) -> None:
        self.requests.put(None)  # read once the stuck call returns: the thread then ends


class WorkerLane:
    """Timed calls on a worker thread, started at the first call; a call that times out takes its worker with it."""

    def __init__(self) -> None:
        self._worker: _Worker | None = None
        self._lock = threading.Lock()

    def run(self, tool, argument: str) -> str:
        with self._lock:
            if self._worker is None:
                self._worker = _Worker()
            worker = self._worker
        try:
            output, error = worker.run(tool, argument, tool.timeout_s)
        except (queue.Empty, KeyboardInterrupt) as stop:
            with self._lock:  # the thread is still busy with this call: later calls get a new one
                if self._worker is worker:
                    self._worker = None
            worker.abandon()
            if isinstance(stop, KeyboardInterrupt):
                raise
            return (f"{ERROR_PREFIX} tool {tool.name} timed out after {tool.timeout_s:g} s and was given up "
                    f"(it may still be running in the background)")
        if error is not None:
            raise error
        return output

    def close(self) -> None:
        """Let the idle worker end (a busy one ends once its call returns)."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.abandon()
