"""One check in a forked child process, which the kernel ends at the deadline whatever the learner's code did.

    outcome = run(job, limit)   # job() runs in the child and returns the verdict's fields (a dict)

The learner's functions travel with the fork: the child is a copy of the kernel, so nothing is pickled, and the
learner's code and the checker run there exactly as they would in the kernel. What comes back:
- the verdict, as JSON over a pipe; the kernel records progress from it (the child's records die with it);
- the child's stdout and stderr (file descriptors 1 and 2, so a C library's or a subprocess's output too), read
  by the kernel and written to its own streams, cut at OUTPUT_CHARS: the child never touches the kernel's
  sockets (its display() prints text, its input() refuses), since those belong to the kernel's threads;
- the clock, through a page of shared memory: the child's learner_code() writes when the learner's code starts
  (with the case and the time it has left) and stops. Inside, the kernel ends the child MARGIN_S after its time
  is up (the child's own clock, deadline.py, normally ends it first and names the case); outside, the check's
  own code gets OWN_TIME_S. "Ends" is SIGKILL to the child's process group, which also ends the processes the
  learner's code started; threads die with the child.
Python 3.12+ warns (DeprecationWarning) when a process with threads forks, and a kernel has threads: the warning
is ignored for that one call, by message, in a catch_warnings block (process-wide for the instant of the fork;
another thread's warning in that instant meets the same filters plus this one). The child never runs the
kernel's code again: every path out of it ends in os._exit (child.py is the child's side).
"""
from __future__ import annotations

import atexit
import codecs
import json
import mmap
import os
import selectors
import signal
import struct
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..i18n import tr
from . import child

AVAILABLE = hasattr(os, "fork") and hasattr(os, "setpgid") and hasattr(os, "killpg")
MARGIN_S = 0.5
OWN_TIME_S = 60.0
OUTPUT_CHARS = 100_000  # per stream and check
_STATE = struct.Struct("<i d d i")  # inside?, since (monotonic), seconds left, length of the case's text
_PAGE = 4096
_CASE_BYTES = _PAGE - _STATE.size
FORK_WARNING = r"This process .* is multi-threaded, use of fork\(\) may lead to deadlocks"
_UTF8 = codecs.getincrementaldecoder("utf-8")


class Watch:
    """The child's side of the clock and of the notes, and the parent's reading of them."""

    def __init__(self, page: mmap.mmap, messages: int) -> None:
        self.page, self.messages = page, messages

    def enter(self, case: str, left: float) -> None:
        text = case.encode("utf-8", "replace")[:_CASE_BYTES]
        self.page[_STATE.size:_STATE.size + len(text)] = text
        _STATE.pack_into(self.page, 0, 1, time.monotonic(), left, len(text))

    def leave(self) -> None:
        _STATE.pack_into(self.page, 0, 0, time.monotonic(), 0.0, 0)

    def read(self) -> tuple:
        inside, since, left, size = _STATE.unpack_from(self.page, 0)
        size = max(0, min(size, _CASE_BYTES))
        return bool(inside), since, left, bytes(self.page[_STATE.size:_STATE.size + size]).decode("utf-8", "replace")

    def note(self, text: str) -> None:
        self.send({"note": text})

    def send(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(self.messages, data):]


@dataclass
class Outcome:
    result: Optional[dict] = None  # what job() returned
    notes: list = field(default_factory=list)
    ended: str = ""  # "learner": ended inside the learner's code; "own": the check's own time ran out
    case: str = ""  # the case the learner's code was on when the child was ended
    death: str = ""  # how the child died without a verdict (its exit code or signal)
    crash: str = ""  # an exception in the check's own machinery in the child
    interrupted: bool = False  # KeyboardInterrupt in the child


def run(job: Callable[[], dict], limit: float, on_child: Callable[[Watch], None]) -> Outcome:
    """Run job() in a forked child (on_child(watch) first, there); end it at the deadline; return what came back."""
    _reap()
    page = mmap.mmap(-1, _PAGE)
    messages_r, messages_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a stream that cannot flush loses nothing of the check's
            pass
    watch = Watch(page, messages_w)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=FORK_WARNING, category=DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        child.run(job, watch, on_child, out_w, err_w, (messages_r, out_r, err_r))
    for fd in (messages_w, out_w, err_w):
        os.close(fd)
    outcome = Outcome()
    try:
        _follow(pid, watch, limit, outcome, messages_r, {out_r: _Forward("stdout"), err_r: _Forward("stderr")})
    except BaseException:
        _end(pid, outcome)  # Stop in Jupyter (KeyboardInterrupt) ends the child too
        raise
    finally:
        for fd in (messages_r, out_r, err_r):
            os.close(fd)
        page.close()
    return outcome


# --- the parent -------------------------------------------------------------------------------------------


class _Forward:
    """The child's output, decoded as it arrives, written to this process's stream, up to OUTPUT_CHARS."""

    def __init__(self, name: str) -> None:
        self.name, self.decoder, self.chars, self.cut = name, _UTF8("replace"), 0, False

    def write(self, data: bytes, final: bool = False) -> None:
        text = self.decoder.decode(data, final)
        if not text or self.cut:
            return
        stream = getattr(sys, self.name)
        room = OUTPUT_CHARS - self.chars
        self.chars += len(text)
        if len(text) > room:
            text, self.cut = text[:room] + "\n" + tr("[the check's {stream} is cut here: more than {chars} characters]", stream=self.name, chars=f"{OUTPUT_CHARS:,}") + "\n", True
        try:
            stream.write(text)
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream: the output is lost, the check goes on
            pass


def _follow(pid: int, watch: Watch, limit: float, outcome: Outcome, messages: int, outputs: dict) -> None:
    """Read the child until its verdict comes (then end its process group at once: the verdict is the last thing it
    sends, and its teardown need not be waited for), it dies, or its time is up."""
    cap = time.monotonic() + limit + OWN_TIME_S
    selector = selectors.DefaultSelector()
    for fd in (messages, *outputs):
        selector.register(fd, selectors.EVENT_READ)
    exit_fd = _pidfd(pid)
    if exit_fd is not None:
        selector.register(exit_fd, selectors.EVENT_READ)
    pending, status = b"", None
    try:
        while status is None and outcome.result is None:
            inside, since, left, case = watch.read()
            now = time.monotonic()
            end = min(cap, since + max(left, 0.0) + MARGIN_S) if inside else cap
            if now >= end:
                outcome.ended, outcome.case = ("learner" if inside else "own"), case
                _end(pid, outcome)
                break
            closed = messages not in selector.get_map()
            for key, _ in selector.select(min(end - now, 0.005 if closed and exit_fd is None else 0.25)):
                if key.fd == exit_fd:
                    continue
                data = _read(key.fd)
                if not data:
                    selector.unregister(key.fd)
                elif key.fd == messages:
                    pending = _messages(pending + data, outcome)
                else:
                    outputs[key.fd].write(data)
            if outcome.result is None:
                status = _exited(pid)
        if status is not None:
            outcome.death = status
            _kill_group(pid)  # what the learner's code left behind, if anything (the group outlives the child)
        elif outcome.result is not None:
            _kill_group(pid)
            _UNREAPED.append(pid)
        for fd, forward in outputs.items():
            _drain(fd, forward)
        _messages(pending + _drain(messages, None) + b"\n", outcome)
    finally:
        selector.close()
        if exit_fd is not None:
            os.close(exit_fd)


_UNREAPED: list = []  # children ended after their verdict, not waited for yet


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap() -> None:
    """Wait for the children ended earlier, without blocking: zombies never pile up past a check or two."""
    for pid in list(_UNREAPED):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _UNREAPED.remove(pid)


def _pidfd(pid: int) -> Optional[int]:
    try:
        return os.pidfd_open(pid)  # Linux 5.3+: readable once the child has exited
    except (AttributeError, OSError):
        return None


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the descriptor went bad: read it as the end of the pipe
        return b""


def _messages(data: bytes, outcome: Outcome) -> bytes:
    *lines, rest = data.split(b"\n")
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        if "note" in message and str(message["note"]) not in outcome.notes:
            outcome.notes.append(str(message["note"]))
        if isinstance(message.get("verdict"), dict):
            outcome.result = message["verdict"]
        if "crash" in message:
            outcome.crash = str(message["crash"])
        if message.get("interrupted") is True:
            outcome.interrupted = True
    return rest


def _exited(pid: int) -> Optional[str]:
    """None while the child runs; once it has exited (reaped here): "" for a clean exit, else how it died."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return "its process was reaped by another hand"
    if done == 0:
        return None
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    code = os.WEXITSTATUS(status)
    return "" if code == 0 else f"exit code {code}"


def _end(pid: int, outcome: Outcome) -> None:
    """SIGKILL to the child's process group, then reap the child."""
    if os.environ.get("AGENTKIT_FORK_DEBUG"):  # the child's threads' stacks first, on its stderr (child.py)
        try:
            os.kill(pid, signal.SIGUSR1)
            time.sleep(0.2)  # faulthandler writes from the signal handler itself: no Python code has to run
        except (ProcessLookupError, PermissionError):
            pass
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
            break
        except (ProcessLookupError, PermissionError):
            continue
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _drain(fd: int, forward: Optional[_Forward]) -> bytes:
    """What is left in a pipe once the child is gone (its writers are ended); bytes for the message pipe."""
    os.set_blocking(fd, False)
    kept = b""
    while True:
        try:
            data = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError, OSError):
            break
        if not data:
            break
        if forward is None:
            kept += data
        else:
            forward.write(data)
    if forward is not None:
        forward.write(b"", final=True)
    return kept


atexit.register(lambda: [_kill_group(pid) for pid in _UNREAPED] and _reap())
