"""What the learner's kernel holds of the capstone: a pipe to the world's process, and stand-ins that reach it.

`WorldProcess()` starts `python -m agentkit.capstone_server` as a child process with pipes at its first request
(the same on Linux, macOS and Windows; nothing is forked), and `request(op, **args)` sends it one JSON line and
reads one back. A call cut off halfway (a time limit, Ctrl-C) leaves the pipe out of step, so every later request
fails at once (`WorldGone`); `close()` ends the process, and so does the garbage collector or the kernel's end.
`world_process()` gives a standing its process: a kernel keeps one idle between standings (starting one costs about
a second of CPU), handed to the next standing under a new handle, so that nothing the last agent kept reaches it.

What an agent is given, one of each per task (none of them holds a world, a gold answer, an error rate or a
handle to the model; each reaches the process and nothing else):

* `WorldLLM`: a course client (think, act, a `.calls` ledger of what it sent and what came back). Each call is
  served and counted by the world's process: this ledger is a copy for your own tables, the budget reads the
  process's, from every call it served.
* `world_tools(...)`: a ToolExecutor with the world's tools (Search, Calculate, SendMessage, with their effects),
  whose functions send their input to the process and return its output. The outbox is there.
* `WorldMemory`: the team's long-term memory, a MemoryStore in the process: its reading and writing methods.
"""
from __future__ import annotations

import builtins
import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Optional

from . import capstone_grader, memory_store, protocol
from .capstone_world import TOOLS
from .memory_store import Memory
from .protocol import AssistantTurn, FunctionCall, LedgerLLM, LLMError
from .tools import ToolExecutor

PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)


def _error_type(name: str) -> type:
    """The exception class the world's process named, from the modules it raises from (else RuntimeError)."""
    for module in (memory_store, protocol, capstone_grader, builtins):
        found = getattr(module, str(name), None)
        if isinstance(found, type) and issubclass(found, Exception):
            return found
    return RuntimeError


class WorldGone(LLMError):
    """The world's process has ended, or a call to it was cut off halfway: it serves no more calls."""


def _end(process: subprocess.Popen, stderr, owner: int) -> None:
    if os.getpid() != owner:  # a fork of the kernel (a check run in a child) ends what it started, not this
        return
    try:
        process.stdin.close()  # the process ends when its stdin closes
    except OSError:
        pass
    try:
        process.wait(timeout=1)
    except subprocess.TimeoutExpired:  # busy (a baseline run), or stuck: ended here
        process.kill()
        process.wait()
    process.stdout.close()
    stderr.close()


class WorldProcess:
    """The world's process, started at the first request, and one JSON line each way per request."""

    def __init__(self) -> None:
        self._process: Optional[subprocess.Popen] = None
        self._lock = threading.Lock()
        self._broken = ""
        self._owner = os.getpid()
        self._end = lambda: None
        self.checked = False  # it drew a check's worlds: it opens no worlds of known seeds any more

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        # The child imports this very agentkit, wherever the kernel found it.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "agentkit.capstone_server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, env=env, creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))
        self._owner = os.getpid()
        self._end = weakref.finalize(self, _end, self._process, self._stderr, self._owner)
        return self._process

    @property
    def started(self) -> bool:
        return self._process is not None

    def request(self, op: str, **args):
        """Send one request and return the process's answer; its error is raised here with its own type."""
        try:
            line = (json.dumps({"op": op, **args}, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")
        except (TypeError, ValueError) as e:
            raise ValueError(f"{op}: what was given cannot be sent to the world's process as JSON ({e})") from None
        with self._lock:
            if self._broken:
                raise WorldGone(self._broken)
            self._broken = "a call to the world's process was cut off before its answer came: it serves no more"
            process = self._process or self._start()
            if self._owner != os.getpid():
                self._broken = "this world's process was started by the process this one was forked from"
                raise WorldGone(self._broken)
            try:
                process.stdin.write(line)
                process.stdin.flush()
                answer = process.stdout.readline()
            except OSError:
                answer = b""
            if not answer:
                self._broken = f"the world's process has ended{self._last_words()}"
                raise WorldGone(self._broken)
            self._broken = ""
        reply = json.loads(answer)
        if "error" in reply:
            raise _error_type(reply["error"]["type"])(reply["error"]["message"])
        return reply["ok"]

    def _last_words(self) -> str:
        try:
            self._stderr.seek(0)
            tail = self._stderr.read()[-1500:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            tail = ""
        return f": {tail}" if tail else ""

    def close(self) -> None:
        self._end()

    def __enter__(self) -> "WorldProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def hand_over(self) -> Optional["WorldProcess"]:
        """A new handle on this process, if it is in step; this handle (held by the last standing's stand-ins, and
        by any thread an agent left running) serves no more."""
        with self._lock:
            if self._broken or self._process is None or self._owner != os.getpid() or self._process.poll() is not None:
                return None
            successor = WorldProcess()
            successor._process, successor._stderr, successor.checked = self._process, self._stderr, self.checked
            self._end.detach()
            successor._end = weakref.finalize(successor, _end, self._process, self._stderr, self._owner)
            self._broken = "this standing is over: its stand-ins serve no more"
            return successor


_SPARE: list = []  # at most one idle world's process per kernel, started by an earlier standing
_SPARE_LOCK = threading.Lock()


@contextlib.contextmanager
def world_process(check: bool = False):
    """The world's process for one standing (`check`: on worlds drawn there): this kernel's idle one if it has one
    that may serve it, else a new one. A standing that ends in step (done, or refused for a rule) leaves it idle for
    the next, under a new handle; a standing cut off (a time limit, Ctrl-C, the process gone) ends it."""
    with _SPARE_LOCK:
        world = _SPARE.pop() if _SPARE else WorldProcess()
    if world._owner != os.getpid():  # a fork's copy of the kernel's spare: its pipe is the kernel's, left alone
        world = WorldProcess()
    if world.checked and not check:  # it serves checks only now
        world.close()
        world = WorldProcess()
    world.checked = world.checked or check
    try:
        yield world
    except Exception:
        _keep(world)
        raise
    except BaseException:
        world.close()
        raise
    _keep(world)


def _keep(world: WorldProcess) -> None:
    try:
        if world.started:
            world.request("drop")  # whatever standing it ran is over: the next starts clean
    except Exception:  # noqa: BLE001 - a process out of step is no spare
        world.close()
        return
    successor = world.hand_over() if world.started else None
    with _SPARE_LOCK:
        if successor is not None and not _SPARE:
            _SPARE.append(successor)
            return
    world.close()
    if successor is not None:
        successor.close()


class WorldLLM(LedgerLLM):
    """The capstone's model, served by the world's process: think() and act(), with a ledger kept here too."""

    model = "the capstone's stand-in (served by the world's process)"

    def __init__(self, world: WorldProcess) -> None:
        super().__init__()
        self._world = world

    def _complete(self, messages, temperature):
        got = self._world.request("think", messages=messages, temperature=temperature)
        return got["reply"], {"prompt_tokens": got["prompt_tokens"], "completion_tokens": got["completion_tokens"]}

    def _complete_constrained(self, messages, temperature, grammar):  # where think() takes a grammar
        got = self._world.request("think", messages=messages, temperature=temperature, grammar=grammar)
        return got["reply"], {"prompt_tokens": got["prompt_tokens"], "completion_tokens": got["completion_tokens"]}

    def _complete_with_tools(self, messages, tools, temperature, tool_choice):
        got = self._world.request("act", messages=messages, tools=tools, temperature=temperature,
                                  tool_choice=tool_choice)
        turn = AssistantTurn(got["content"], [FunctionCall(**call) for call in got["tool_calls"]])
        return turn, {"prompt_tokens": got["prompt_tokens"], "completion_tokens": got["completion_tokens"]}


def _run_tool(world: WorldProcess, name: str, argument: str) -> str:
    return world.request("tool", name=name, argument=argument)


def world_tools(world: WorldProcess) -> ToolExecutor:
    """An executor with the world's tools (agentkit.capstone_world.TOOLS), which run there."""
    tools = ToolExecutor()
    for name, description, effect in TOOLS:
        # Inline (no worker thread): the process answers at once, and a time limit must reach the caller.
        tools.register(name, functools.partial(_run_tool, world, name), description, effect=effect, timeout_s=None)
    return tools


class WorldMemory:
    """The team's long-term memory, a MemoryStore in the world's process: its reading and writing methods."""

    def __init__(self, world: WorldProcess) -> None:
        self._world = world

    def _call(self, method: str, *args, **kwargs):
        return self._world.request("memory", method=method, args=list(args), kwargs=kwargs)

    def search(self, query: str, k: int = 5, method: Optional[str] = None) -> list[Memory]:
        return [Memory(**m) for m in self._call("search", query, k, method)]

    def search_ids(self, query: str, k: int = 5, method: Optional[str] = None, pool: int = 20) -> list[int]:
        return self._call("search_ids", query, k, method, pool)

    def keyword(self, query: str, k: int = 5) -> list[int]:
        return self._call("keyword", query, k)

    def get(self, memory_id: int) -> Optional[Memory]:
        found = self._call("get", memory_id)
        return None if found is None else Memory(**found)

    def memories(self, newest_first: bool = False) -> list[Memory]:
        return [Memory(**m) for m in self._call("memories", newest_first)]

    def evicted(self) -> list[dict]:
        return self._call("evicted")

    def add(self, text: str, kind: str = "episode") -> int:
        return self._call("add", text, kind)

    def add_many(self, texts: list[str], kind: str = "episode", progress: bool = False) -> list[int]:
        return self._call("add_many", list(texts), kind)

    def record_outcome(self, memory_ids: list[int], success: bool) -> list[int]:
        return self._call("record_outcome", list(memory_ids), success)

    def retire(self, memory_id: int, reason: str) -> None:
        self._call("retire", memory_id, reason)

    def __len__(self) -> int:
        return self._call("__len__")
