"""Run model-written code inside WebAssembly: CPython compiled for WASI, run by the wasmtime engine.

What the code can reach is what we hand the engine, nothing else (capabilities, not checks):
- **files**: one fresh folder, `/sandbox` (its working directory), read-write, a second one,
  `/report`, where our runner writes the result, and the standard library, read-only. No other path
  exists for it: `..`, `chdir`, `dir_fd`, and symbolic links resolve inside those or fail. Both
  folders are removed afterwards, and what the code wrote into `/report` is read as untrusted data;
- **environment**: the three variables Python needs to start; none of ours;
- **no** sockets or name lookups, processes, signals, threads, or native code (no `ctypes`): the
  interpreter is a WebAssembly module and WASI preview 1 gives it none of these;
- **memory**: at most `memory_mb`, a limit of the engine's store (a bigger request is a `MemoryError`);
- **time**: at most `timeout_s` of wall clock: the engine interrupts running code at the limit. A
  sleep inside the engine (`time.sleep`, `select`) cannot be interrupted: `run_code` still returns
  at the limit, and the abandoned run ends when its sleep does, stopped at its next instruction;
- **disk and output**: the folders may hold at most `max_disk_mb` and MAX_ENTRIES files and folders
  (checked every few milliseconds, so one write may overshoot by its own size, itself bounded by
  memory), the output at most `max_output_chars`.

The interpreter and its compiled module come from `agentkit.wasm_module`. Runs in one process take
turns (the engine's clock is shared). What stays outside this boundary: bugs in wasmtime itself, and
the CPU time and memory the limits grant. The result has the fields of `agentkit.sandbox`'s
(output, value, error, timed_out, duration_s, stderr), without its process fields.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .wasm_module import PYTHON_STDLIB, engine_and_module, runtime_dir

_ONE_RUN_AT_A_TIME = threading.Lock()

DEFAULT_TIMEOUT_S = 2.0
DEFAULT_MEMORY_MB = 256
DEFAULT_MAX_DISK_MB = 16
MIN_MEMORY_MB = 32  # the interpreter's own memory starts at 10 MB and needs room to import
MAX_OUTPUT_CHARS = 10_000
MAX_REPORT_BYTES = 1_000_000
MAX_ENTRIES = 10_000  # files and folders the code may create: each check walks them all
WATCH_EVERY_S = 0.005
GUEST_FOLDER = "/sandbox"
GUEST_REPORT = "/report"

# Runs inside the engine: run the code, then report in /report: value.json (the expression's value),
# error.txt (what went wrong), done (it got that far). Every module imported here is read from the
# zipped standard library and costs start-up time: `json` (it imports `re`) and `traceback` each took
# longer than running `pass`. So the value is encoded by `_json`, the C half of `json.dumps` (same
# text, same errors), the error line is built as `traceback.format_exception_only` builds its last
# line, and the traceback is printed by the interpreter's own C printer.
RUNNER = r"""
import os, sys
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

namespace, value_text, error, evaluated = {"__name__": "__main__"}, None, None, False
try:
    exec(compile(code, "<code>", "exec"), namespace)
    if expression is not None:
        value = eval(compile(expression, "<expression>", "eval"), namespace)
        evaluated = True
        import _json  # json.dumps(value), as its defaults call it
        encode = _json.make_encoder({}, not_json, _json.encode_basestring_ascii, None, ": ", ", ", False, False, True)
        value_text = "".join(encode(value, 0))
except SystemExit as exc:
    error = None if exc.code in (0, None) else f"SystemExit: {exc.code}"
except BaseException as exc:
    namespace.clear()  # frees what a memory bomb hoarded, so the report can be written
    value = None
    error = error_line(exc)
    if evaluated and isinstance(exc, TypeError):
        error = "the value is not JSON-serialisable: " + error
    elif evaluated and isinstance(exc, RecursionError):
        error = "the value is nested too deeply to report"
    sys.__excepthook__(type(exc), exc, exc.__traceback__)
sys.stdout.flush()
sys.stderr.flush()
if value_text is not None:
    with open("/report/value.json", "w", encoding="utf-8") as f:
        f.write(value_text)
if error is not None:
    with open("/report/error.txt", "w", encoding="utf-8", errors="backslashreplace") as f:
        f.write(error)
open("/report/done", "w").close()
import atexit
atexit._run_exitfuncs()  # what the code registered for its exit, as a normal exit runs it
for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
    stream.flush()
os._exit(0)  # skips the rest of the interpreter's clean-up, a sixth of a short run: we read nothing it does
"""


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
    Raises TypeError / ValueError at once for arguments that are not code or not a real limit.
    """
    if not isinstance(code, str) or (expression is not None and not isinstance(expression, str)):
        raise TypeError("code and expression must be strings")
    _check_limits(timeout_s=timeout_s, memory_mb=memory_mb, max_disk_mb=max_disk_mb, max_output_chars=max_output_chars)
    if memory_mb < MIN_MEMORY_MB:
        raise ValueError(f"memory_mb must be at least {MIN_MEMORY_MB}: the interpreter needs that to start")
    engine, module = engine_and_module()
    with _ONE_RUN_AT_A_TIME:
        run_dir = Path(tempfile.mkdtemp(prefix="agentkit-wasm-"))
        try:
            folder, report_dir = run_dir / "sandbox", run_dir / "report"
            folder.mkdir()
            report_dir.mkdir()
            run = _Run(engine, module, folder, report_dir, memory_mb, max_output_chars)
            try:
                verdict = run.start(code, expression, timeout_s, max_disk_mb * 2**20)
            finally:
                run.close()
            report = _read_report(report_dir)
            output, stderr = run.text(run.stdout, max_output_chars), run.text(run.stderr, max_output_chars)
        finally:
            _remove_tree(run_dir)
    timed_out = verdict == "time"
    if verdict == "time":
        error = f"timed out: stopped at the {timeout_s:g} s wall-clock limit"
    elif verdict == "disk":
        error = f"disk limit exceeded: the folder grew past {max_disk_mb} MB"
    elif verdict == "entries":
        error = f"disk limit exceeded: more than {MAX_ENTRIES:,} files and folders"
    elif verdict == "output":
        error = f"output limit exceeded: more than {max_output_chars} characters"
    elif isinstance(report, dict):
        return SandboxResult(output, report["value"], report["error"], False, run.duration_s, stderr)
    else:
        error = report or verdict or "the code ended without a report"
    return SandboxResult(output, None, error, timed_out, run.duration_s, stderr)


def _check_limits(**limits: float) -> None:
    for name, value in limits.items():
        kinds = (int, float) if name == "timeout_s" else int
        if isinstance(value, bool) or not isinstance(value, kinds) or not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a positive, finite {'number' if name == 'timeout_s' else 'integer'}, "
                             f"got {value!r}")


def _read_report(folder: Path) -> dict | str:
    """The code's report, or why there is none. A report is data the code wrote: never trusted."""
    if not (folder / "done").is_file():
        return ""
    report = {"value": None, "error": None}
    for name, key in (("error.txt", "error"), ("value.json", "value")):
        try:
            with open(folder / name, "rb") as f:
                raw = f.read(MAX_REPORT_BYTES + 1)
        except OSError:
            continue
        if len(raw) > MAX_REPORT_BYTES:
            return f"the report is larger than {MAX_REPORT_BYTES:,} bytes"
        if key == "error":
            report["error"] = raw.decode("utf-8", errors="replace")
            continue
        try:
            report["value"] = json.loads(raw)
        except RecursionError:
            return "the report is nested too deeply to read"
        except ValueError:
            return "the report is not valid JSON"
    return report


class _Run:
    """One store and instance: the code's folder, its limits, its output, and the watcher that stops it."""

    def __init__(self, engine, module, folder: Path, report_dir: Path, memory_mb: int, max_output_chars: int):
        import wasmtime

        self.engine, self.module, self.folder, self.report_dir = engine, module, folder, report_dir
        self.output_cap = max_output_chars * 4  # UTF-8: at most 4 bytes a character
        self.stop_reason: str | None = None
        self.duration_s = 0.0
        self.runner: threading.Thread | None = None
        wasi = wasmtime.WasiConfig()
        wasi.env = [("PYTHONHOME", "/usr/local"), ("PYTHONPATH", "/usr/local/lib/python311.zip"),
                    ("PYTHONDONTWRITEBYTECODE", "1")]
        wasi.preopen_dir(str(runtime_dir() / PYTHON_STDLIB), "/usr/local/lib", False)  # read-only
        wasi.preopen_dir(str(folder), GUEST_FOLDER, True)
        wasi.preopen_dir(str(report_dir), GUEST_REPORT, True)
        # Output goes to files outside the code's folders, which the watcher measures.
        self.stdout, self.stderr = report_dir.parent / "stdout", report_dir.parent / "stderr"
        wasi.stdout_file, wasi.stderr_file = str(self.stdout), str(self.stderr)
        self.wasi = wasi
        self.store = wasmtime.Store(engine)
        self.store.set_limits(memory_size=memory_mb * 2**20)
        self.store.set_epoch_deadline(1)  # the next tick of the engine's clock stops it: only we tick it

    def _stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
            self.engine.increment_epoch()

    def start(self, code: str, expression: str | None, timeout_s: float, max_disk_bytes: int) -> str | None:
        """Run to the end or to a limit; return the limit that stopped it, the trap, or None."""
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

        self.runner = runner = threading.Thread(target=call, daemon=True, name="agentkit-wasm-run")
        start = time.monotonic()
        runner.start()
        while runner.is_alive() and self.stop_reason is None:
            runner.join(WATCH_EVERY_S)
            if time.monotonic() - start > timeout_s:
                self._stop("time")
            elif _size(self.stdout) + _size(self.stderr) > self.output_cap:
                self._stop("output")
            else:
                used = [_folder_usage(folder) for folder in (self.folder, self.report_dir)]
                if sum(b for b, _ in used) > max_disk_bytes:
                    self._stop("disk")
                elif sum(n for _, n in used) > MAX_ENTRIES:
                    self._stop("entries")
        # A sleep inside the engine cannot be interrupted: we leave it, it traps when the sleep ends.
        runner.join(0.5)
        self.duration_s = time.monotonic() - start
        return self.stop_reason or (outcome[0] if outcome else None)

    def close(self) -> None:
        """Free the store's memory and files now (Windows cannot remove an open file), unless a run
        we abandoned in a sleep still uses it: then it goes when that run ends."""
        if self.runner is None or not self.runner.is_alive():
            self.store.close()

    @staticmethod
    def text(path: Path, limit: int) -> str:
        try:
            with open(path, "rb") as f:
                text = f.read(limit * 4 + 1).decode("utf-8", errors="replace")
        except OSError:
            return ""
        return text if len(text) <= limit else text[:limit] + "\n... [output truncated]"


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
    except OSError:
        return 0


def _folder_usage(root: Path) -> tuple[int, int]:
    """(bytes, entries) under `root`: apparent sizes (a sparse file counts in full), links not followed.

    A loop over a stack, not recursion: the code may nest folders deeper than our recursion limit.
    """
    total, entries, folders = 0, 0, [root]
    while folders:
        with contextlib.suppress(OSError), os.scandir(folders.pop()) as listing:
            for entry in listing:
                entries += 1
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    else:
                        total += entry.stat(follow_symlinks=False).st_size
    return total, entries


def _remove_tree(root: Path) -> None:
    """Remove a folder the code filled, however deep (shutil.rmtree recurses, and long paths fail):
    each sub-folder's entries are first moved up into `root`, so every path stays short."""
    unique = f"~{secrets.token_hex(8)}-"
    for number in itertools.count():
        try:
            with os.scandir(root) as listing:
                entries = list(listing)
        except OSError:
            return
        if not entries or number > 10 * MAX_ENTRIES:  # the bound only guards against a loop we did not foresee
            break
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    with os.scandir(entry.path) as inner:
                        children = [child.path for child in inner]
                    for index, child in enumerate(children):
                        os.rename(child, root / f"{unique}{number}-{index}")
                    os.rmdir(entry.path)
                else:
                    os.unlink(entry.path)
    with contextlib.suppress(OSError):
        os.rmdir(root)
