"""The engine's worker: the process in which `agentkit.wasm_sandbox` runs model-written code in wasmtime.

`wasm_sandbox` starts it (without our environment) and talks to it in JSON lines on its stdin and
stdout: the worker loads the engine, checks the standard library and answers `{"ready": ...}`; then
for each job (the code, its limits, and a run folder the parent made and removes) it answers with
how the run ended. A run is one store and instance on a thread; the main thread watches it:

- **time**: at the deadline the engine's epoch stops the code at its next instruction. A sleep is a
  call into the engine that no epoch reaches: such a run is answered for at the deadline, and then
  this process exits, which ends the sleep, its memory and its files with it;
- **disk**: the folders are walked through directory descriptors, so no path grows long however
  deep they nest, and at most MAX_DEPTH deep; files held open after their last name was removed
  are counted through this process's own descriptors (`/dev/fd`, on Linux and macOS). A measurement
  that fails stops the run, the walk keeps to the deadline, and the folders are measured once more
  after the run;
- **output**: stdout and stderr go to files in the run folder, beside `/sandbox` and `/report`,
  where the code cannot name them.

The report (value, error) comes back in a file the worker creates and opens before the code starts
and reads back through its own descriptor: whatever the code makes of the names in `/report`
(links to our files, to a FIFO), the worker never opens a path the code could choose.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

from .wasm_disk import TimeUp, TooDeep, held_files, usage
from .wasm_module import engine_and_module, stdlib_folder

WATCH_EVERY_S = 0.005
STOP_PATIENCE_S = 0.1  # for the code to reach its next instruction once stopped; past it, it sleeps in the engine
GUEST_FOLDER = "/sandbox"
GUEST_REPORT = "/report"

# Runs inside the engine: run the code, then write the report, `[error, value]` in JSON, into the file
# the host made (opened first, so nothing the code does to /report changes where it goes). Every module
# imported here is read from the zipped standard library and costs start-up time: `json` (it imports
# `re`) and `traceback` each took longer than running `pass`. So the report is encoded by `_json`, the C
# half of `json.dumps` (same text, same errors), the error line is built as
# `traceback.format_exception_only` builds its last line, and the traceback is printed by the
# interpreter's own C printer.
RUNNER = r"""
import os, sys, _json
report = open("/report/report", "r+b")
code, expression = sys.argv[1], (sys.argv[2] if sys.argv[3] == "1" else None)
del sys.argv[1:]
os.chdir("/sandbox")

def not_json(value):
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")

def error_line(exc):
    kind, module = type(exc).__qualname__, type(exc).__module__
    if module not in ("__main__", "builtins"):
        kind = f"{module}.{kind}"
    try:
        text = (exc.msg or "<no detail available>") if isinstance(exc, SyntaxError) else str(exc)
    except Exception:
        text = "<exception str() failed>"
    return (f"{kind}: {text}" if text else kind).strip()

namespace, value_text, error, evaluated = {"__name__": "__main__"}, "null", None, False
try:
    exec(compile(code, "<code>", "exec"), namespace)
    if expression is not None:
        value = eval(compile(expression, "<expression>", "eval"), namespace)
        evaluated = True  # json.dumps(value), as its defaults call it
        encode = _json.make_encoder({}, not_json, _json.encode_basestring_ascii, None, ": ", ", ", False, False, True)
        value_text = "".join(encode(value, 0))
except SystemExit as exc:
    error = None if exc.code in (0, None) else f"SystemExit: {exc.code}"
except BaseException as exc:
    namespace.clear()  # frees what a memory bomb hoarded, so the report can be written
    value, value_text = None, "null"
    error = error_line(exc)
    if evaluated and isinstance(exc, TypeError):
        error = "the value is not JSON-serialisable: " + error
    elif evaluated and isinstance(exc, RecursionError):
        error = "the value is nested too deeply to report"
    sys.__excepthook__(type(exc), exc, exc.__traceback__)
sys.stdout.flush()
sys.stderr.flush()
error_text = "null" if error is None else _json.encode_basestring_ascii(
    error.encode("utf-8", "backslashreplace").decode("utf-8"))
report.write(f"[{error_text},{value_text}]".encode("ascii"))
report.close()
import atexit
atexit._run_exitfuncs()  # what the code registered for its exit, as a normal exit runs it
for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
    stream.flush()
os._exit(0)  # skips the rest of the interpreter's clean-up, a sixth of a short run: we read nothing it does
"""


def main(cache: str, runtime: str) -> None:
    """Serve jobs from stdin until it closes (our parent ended), or until a run could not be stopped."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for our parent (a notebook's interrupt): it ends us
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # a stray print (wasmtime's, a library's) cannot garble the channel
    sys.stdout = sys.stderr

    def send(message: dict) -> None:
        channel.write(json.dumps(message) + "\n")
        channel.flush()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            engine, module = engine_and_module(Path(cache))
            stdlib = stdlib_folder(Path(runtime))
        except Exception as exc:  # a missing or altered installation: the parent raises it
            send({"ready": False, "error": f"{exc}"})
            return
    send({"ready": True, "warnings": [str(warning.message) for warning in caught]})
    for line in sys.stdin:
        reply, stuck = run_job(engine, module, stdlib, json.loads(line))
        send(reply)
        if stuck:
            os._exit(0)  # the only way to end a thread asleep in the engine: the parent starts a new worker


def run_job(engine, module, stdlib: Path, job: dict) -> tuple[dict, bool]:
    """Run one job in `job["run_dir"]`; the reply, and whether the run is still asleep in the engine."""
    run_dir = Path(job["run_dir"])
    folder, report_dir = run_dir / "sandbox", run_dir / "report"
    folder.mkdir()
    report_dir.mkdir()
    report_fd = os.open(report_dir / "report", os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    run = _Run(engine, module, stdlib, run_dir, job)
    try:
        failure = run.start(job["code"], job["expression"])
        raw = _read_to(report_fd, job["max_report_bytes"] + 1)
    finally:
        os.close(report_fd)
        if not run.stuck:
            run.store.close()  # frees its memory and files now (Windows cannot remove an open file)
    return {"stop": run.stop_reason, "detail": run.detail, "failure": failure, "duration_s": run.duration_s,
            "report": raw.decode("utf-8", errors="replace"), "report_too_large": len(raw) > job["max_report_bytes"],
            "stuck": run.stuck}, run.stuck


def _read_to(fd: int, limit: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks, size = [], 0
    while size < limit and (chunk := os.read(fd, min(limit - size, 1 << 20))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class _Run:
    """One store and instance: the code's folders, its limits, its output, and the watcher that stops it."""

    def __init__(self, engine, module, stdlib: Path, run_dir: Path, job: dict):
        import wasmtime

        self.engine, self.module, self.job = engine, module, job
        self.folders = (run_dir / "sandbox", run_dir / "report")
        self.stop_reason: str | None = None
        self.detail = ""
        self.duration_s = 0.0
        self.stuck = False
        wasi = wasmtime.WasiConfig()
        wasi.env = [("PYTHONHOME", "/usr/local"), ("PYTHONPATH", "/usr/local/lib/python311.zip"),
                    ("PYTHONDONTWRITEBYTECODE", "1")]
        wasi.preopen_dir(str(stdlib), "/usr/local/lib", False)  # read-only
        wasi.preopen_dir(str(self.folders[0]), GUEST_FOLDER, True)
        wasi.preopen_dir(str(self.folders[1]), GUEST_REPORT, True)
        self.outputs = run_dir / "stdout", run_dir / "stderr"
        wasi.stdout_file, wasi.stderr_file = str(self.outputs[0]), str(self.outputs[1])
        self.wasi = wasi
        self.store = wasmtime.Store(engine)
        self.store.set_limits(memory_size=job["memory_mb"] * 2**20)
        self.store.set_epoch_deadline(1)  # the next tick of the engine's clock stops it: only we tick it

    def _stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
            self.engine.increment_epoch()

    def start(self, code: str, expression: str | None) -> str | None:
        """Run to the end or to a limit; return why the interpreter failed (a trap, an exit code), or None."""
        import wasmtime

        self.wasi.argv = ["python", "-c", RUNNER, code, expression or "", "0" if expression is None else "1"]
        self.store.set_wasi(self.wasi)
        try:
            linker = wasmtime.Linker(self.engine)
            linker.define_wasi()
            entry = linker.instantiate(self.store, self.module).exports(self.store)["_start"]
        except Exception as exc:  # e.g. the memory limit is below what the module declares
            return f"the engine could not start the interpreter: {str(exc)[:200]}"
        outcome: list[str | None] = []

        def call() -> None:
            try:
                entry(self.store)
                outcome.append(None)
            except wasmtime.ExitTrap as exit_:
                outcome.append(None if exit_.code == 0 else f"the interpreter exited with code {exit_.code}")
            except wasmtime.Trap as trap:
                outcome.append(_trap_reason(trap))
            except Exception as exc:  # the engine refused the run (it never should): a result, not a crash
                outcome.append(f"the engine stopped the run: {type(exc).__name__}: {str(exc)[:200]}")

        runner = threading.Thread(target=call, daemon=True, name="agentkit-wasm-run")
        self.held_before = frozenset(held_files())  # ours and the engine's, before the code can open a file
        start = time.monotonic()
        deadline = start + self.job["timeout_s"]
        runner.start()
        pause = WATCH_EVERY_S
        while runner.is_alive() and self.stop_reason is None:
            runner.join(max(0.0, min(pause, deadline - time.monotonic())))
            if time.monotonic() >= deadline:
                self._stop("time")
            elif sum(_size(path) for path in self.outputs) > self.job["max_output_chars"] * 4:  # UTF-8: 4 bytes at most
                self._stop("output")
            else:
                walked = time.monotonic()
                self._check_disk(deadline)
                pause = max(WATCH_EVERY_S, time.monotonic() - walked)  # the watcher takes half a core at most
        runner.join(STOP_PATIENCE_S)
        self.duration_s = time.monotonic() - start
        self.stuck = runner.is_alive()
        if not self.stuck and self.stop_reason is None:
            self._check_disk(None)  # once more, now that nothing changes the folders: no race can hide a byte
        return outcome[0] if outcome else None

    def _check_disk(self, deadline: float | None) -> None:
        try:
            used, entries = usage(self.folders, self.job["max_disk_bytes"], self.job["max_entries"], deadline,
                                  self.held_before)
        except TimeUp:
            return self._stop("time")
        except TooDeep:
            return self._stop("depth")
        except OSError as exc:  # what we cannot measure we cannot allow
            self.detail = f"{exc.strerror or exc}"
            return self._stop("unmeasured")
        if used > self.job["max_disk_bytes"]:
            self._stop("disk")
        elif entries > self.job["max_entries"]:
            self._stop("entries")


def _trap_reason(trap) -> str:
    import wasmtime

    code = getattr(trap, "trap_code", None)
    if code == wasmtime.TrapCode.STACK_OVERFLOW:
        return "the interpreter's stack overflowed (recursion too deep)"
    if code == wasmtime.TrapCode.INTERRUPT:
        return "interrupted"
    return f"the interpreter crashed: {str(trap).splitlines()[0][:200]}"


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:  # not written yet
        return 0
