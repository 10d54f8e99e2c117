"""Run model-written code inside WebAssembly: CPython compiled for WASI, run by the wasmtime engine.

What the code can reach is what we hand the engine, nothing else (capabilities, not checks):
- **files**: one fresh folder, `/sandbox` (its working directory), read-write, a second one,
  `/report`, where our runner writes the result, and the standard library, read-only. No other path
  exists for it: `..`, `chdir`, `dir_fd`, and symbolic links resolve inside those or fail. Both
  folders are removed afterwards. The report comes back through a file we opened before the code
  started, never by a name the code could have turned into a link, and is read as untrusted data;
- **environment**: the three variables Python needs to start; none of ours;
- **no** sockets or name lookups, processes, signals, threads, or native code (no `ctypes`): the
  interpreter is a WebAssembly module and WASI preview 1 gives it none of these;
- **memory**: at most `memory_mb`, a limit of the engine's store (a bigger request is a `MemoryError`);
- **time**: at most `timeout_s` of wall clock. The engine runs in a worker process
  (`agentkit.wasm_worker`), which stops running code at the limit; a sleep inside the engine
  (`time.sleep`, `select`) cannot be interrupted, so after such a run the worker exits, and the next
  run starts a new one. If the worker does not answer by the limit plus BACKSTOP_S, it is killed;
- **disk and output**: the folders may hold at most `max_disk_mb` (files removed while still open
  included, on Linux and macOS), MAX_ENTRIES files and folders, and folders nested MAX_DEPTH deep
  (checked every few milliseconds and once more at the end, so one write may overshoot by its own
  size, itself bounded by memory, until the run is stopped), the output at most `max_output_chars`.

The interpreter and its compiled module come from `agentkit.wasm_module`. Runs in one process take
turns, in one worker. What stays outside this boundary: bugs in wasmtime itself, and the CPU time and
memory the limits grant. The result has the fields of `agentkit.sandbox`'s (output, value, error,
timed_out, duration_s, stderr), without its process fields.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import wasm_module
from .wasm_disk import MAX_DEPTH, remove_tree

DEFAULT_TIMEOUT_S = 2.0
DEFAULT_MEMORY_MB = 256
DEFAULT_MAX_DISK_MB = 16
MIN_MEMORY_MB = 32  # the interpreter's own memory starts at 10 MB and needs room to import
MAX_OUTPUT_CHARS = 10_000
MAX_REPORT_BYTES = 1_000_000
MAX_ENTRIES = 10_000  # files and folders the code may create: each check walks them all
BACKSTOP_S = 2.0  # past the time limit, a worker that has not answered is killed
START_PATIENCE_S = 600.0  # the first start in a fresh environment compiles the interpreter (seconds)
WORKER_ENV = ("PATH", "SYSTEMROOT", "TMPDIR", "TEMP", "TMP")  # all it is given of our environment: no keys

_ONE_RUN_AT_A_TIME = threading.Lock()
_worker: _Worker | None = None

# Imports the two modules the worker needs and not agentkit's __init__, which loads the LLM layer (40 ms).
_START_WORKER = ("import sys, types\n"
                 "package = types.ModuleType('agentkit')\n"
                 "package.__path__ = [sys.argv[1]]\n"
                 "sys.modules['agentkit'] = package\n"
                 "from agentkit.wasm_worker import main\n"
                 "main(*sys.argv[2:])\n")


@dataclass
class SandboxResult:
    """What a run produced: output, value or error, and how it ended."""

    output: str
    value: Any = None
    error: str | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    def summary(self) -> str:
        """One line without timings, so it reads the same on every machine."""
        if self.ok:
            return f"ok: value={self.value!r}" + (f", output={self.output.strip()[:60]!r}" if self.output.strip() else "")
        return f"error: {self.error}"


def run_code(
    code: str,
    expression: str | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
    max_disk_mb: int = DEFAULT_MAX_DISK_MB,
    max_output_chars: int = MAX_OUTPUT_CHARS,
) -> SandboxResult:
    """Run `code` in the engine; if `expression` is given, return its value (JSON).

    Never raises for anything the code does: loops, bombs and crashes come back as a result.
    Raises TypeError / ValueError at once for arguments that are not code or not a real limit, and
    RuntimeError if the engine cannot start (a missing or altered installation).
    """
    if not isinstance(code, str) or (expression is not None and not isinstance(expression, str)):
        raise TypeError("code and expression must be strings")
    _check_limits(timeout_s=timeout_s, memory_mb=memory_mb, max_disk_mb=max_disk_mb, max_output_chars=max_output_chars)
    if memory_mb < MIN_MEMORY_MB:
        raise ValueError(f"memory_mb must be at least {MIN_MEMORY_MB}: the interpreter needs that to start")
    job = {"code": code, "expression": expression, "timeout_s": timeout_s, "memory_mb": memory_mb,
           "max_disk_bytes": max_disk_mb * 2**20, "max_entries": MAX_ENTRIES, "max_output_chars": max_output_chars,
           "max_report_bytes": MAX_REPORT_BYTES}
    with _ONE_RUN_AT_A_TIME:
        worker = _running_worker()
        run_dir = Path(tempfile.mkdtemp(prefix="agentkit-wasm-"))
        try:
            reply = worker.run({**job, "run_dir": str(run_dir)}, timeout_s + BACKSTOP_S)
            output = _text(run_dir / "stdout", max_output_chars)
            stderr = _text(run_dir / "stderr", max_output_chars)
        finally:
            remove_tree(run_dir)
    stop = reply["stop"]
    if stop == "time":
        error = f"timed out: stopped at the {timeout_s:g} s wall-clock limit"
    elif stop == "disk":
        error = f"disk limit exceeded: the folder grew past {max_disk_mb} MB"
    elif stop == "entries":
        error = f"disk limit exceeded: more than {MAX_ENTRIES:,} files and folders"
    elif stop == "depth":
        error = f"disk limit exceeded: folders nested more than {MAX_DEPTH} deep"
    elif stop == "unmeasured":
        error = f"disk limit: the folder could not be measured ({reply['detail']}), so the run was stopped"
    elif stop == "output":
        error = f"output limit exceeded: more than {max_output_chars} characters"
    elif stop == "worker":
        error = reply["detail"]
    else:
        report = _parse_report(reply)
        if isinstance(report, dict):
            return SandboxResult(output, report["value"], report["error"], False, reply["duration_s"], stderr)
        error = report or reply["failure"] or "the code ended without a report"
    return SandboxResult(output, None, error, stop == "time", reply["duration_s"], stderr)


def _check_limits(**limits: float) -> None:
    for name, value in limits.items():
        kinds = (int, float) if name == "timeout_s" else int
        if isinstance(value, bool) or not isinstance(value, kinds) or not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a positive, finite {'number' if name == 'timeout_s' else 'integer'}, "
                             f"got {value!r}")


def _parse_report(reply: dict) -> dict | str:
    """The code's report, or why there is none. A report is data the code wrote: never trusted."""
    if reply["report_too_large"]:
        return f"the report is larger than {MAX_REPORT_BYTES:,} bytes"
    if not reply["report"]:
        return ""
    try:
        report = json.loads(reply["report"])
    except RecursionError:
        return "the report is nested too deeply to read"
    except ValueError:
        return "the report is not valid JSON"
    if not (isinstance(report, list) and len(report) == 2 and isinstance(report[0], (str, type(None)))):
        return "the report is not in the runner's form"
    return {"error": report[0], "value": report[1]}


def _text(path: Path, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            text = f.read(limit * 4 + 1).decode("utf-8", errors="replace")
    except OSError:
        return ""
    return text if len(text) <= limit else text[:limit] + "\n... [output truncated]"


def _running_worker() -> _Worker:
    """The worker, started now if there is none (or it ended, or belongs to the process we were forked from)."""
    global _worker
    if _worker is None or not _worker.alive():
        if _worker is not None:
            _worker.close()
        _worker = _Worker()
    return _worker


class _Worker:
    """The process that runs the engine (`agentkit.wasm_worker`), answering one JSON line per job."""

    def __init__(self):
        self.owner = os.getpid()
        self.log = tempfile.TemporaryFile()  # its stderr: shown if it fails to start or dies
        package = Path(__file__).resolve().parent
        folders = [str(package), str(wasm_module.cache_dir()), str(wasm_module.runtime_dir())]
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", _START_WORKER, *folders],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            env={name: os.environ[name] for name in WORKER_ENV if name in os.environ})
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=_read_lines, args=(self.process.stdout, self.replies), daemon=True,
                         name="agentkit-wasm-worker-reader").start()
        ready = self._receive(START_PATIENCE_S)
        if not isinstance(ready, dict) or not ready.get("ready"):
            problem = ready["error"] if isinstance(ready, dict) else f"its worker did not start: {self._log_tail()}"
            self.close(kill=True)
            raise RuntimeError(f"the WebAssembly engine cannot run code: {problem}")
        for message in ready["warnings"]:
            warnings.warn(message, stacklevel=4)

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def run(self, job: dict, patience_s: float) -> dict:
        """The worker's reply; if it does not answer in `patience_s`, it is killed and the run timed out."""
        start = time.monotonic()
        try:
            self.process.stdin.write((json.dumps(job) + "\n").encode("ascii"))
            self.process.stdin.flush()
            reply = self._receive(patience_s)
        except OSError:  # it died before it read the job
            reply = None
        except BaseException:  # interrupted (Ctrl-C): a worker we stopped listening to must not answer the next job
            self.close(kill=True)
            raise
        if reply == "late":
            self.close(kill=True)
            return {"stop": "time", "duration_s": time.monotonic() - start}
        if reply is None:  # it crashed: say how, with the end of what it printed
            self.process.wait()
            detail = (f"the engine's worker process ended during the run (exit code {self.process.returncode}): "
                      f"{self._log_tail()[-300:]}")
            self.close()
            return {"stop": "worker", "detail": detail, "duration_s": time.monotonic() - start}
        if reply["stuck"]:
            self.close()  # it exits by itself; we wait, so its files are closed before the folder goes
        return reply

    def _receive(self, patience_s: float) -> dict | str | None:
        """The next reply, None if the worker ended, "late" if it took longer than `patience_s`."""
        try:
            line = self.replies.get(timeout=patience_s)
        except queue.Empty:
            return "late"
        return None if line is None else json.loads(line)

    def close(self, kill: bool = False) -> None:
        """End the worker: it exits when its stdin closes; killed now if `kill`, else if it has not after a second."""
        if self.owner != os.getpid():
            return  # a copy inherited through fork: the worker is our parent's
        if kill:
            self.process.kill()
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            self.process.wait(1.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        self.log.close()

    def _log_tail(self) -> str:
        self.log.seek(0)
        return self.log.read()[-2000:].decode("utf-8", errors="replace").strip() or "(it printed nothing)"


def _read_lines(stream, replies: queue.Queue) -> None:
    with contextlib.suppress(OSError, ValueError):
        for line in stream:
            replies.put(line)
    replies.put(None)


@atexit.register
def _stop_worker() -> None:
    if _worker is not None:
        _worker.close()
