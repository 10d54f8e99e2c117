"""Run model-written code in a separate, limited process, never in ours.

The layers, outside in:
- a **supervisor** process (`agentkit/sandbox_supervisor.py`) runs the code in a child; when the
  child ends or the wall clock runs out, it kills and reaps every process the code started, however
  it detached (on Linux it is their subreaper). `survivors` counts what still ran after that;
- **rlimits** on the child: CPU time, address space, processes, file size, no core dumps;
- a fresh temporary **working directory** and an **environment with no secrets**;
- when we run as root, a **user of the run's own**: a random uid no account or group uses.
  The process limit then binds (it never binds root) and counts this run alone, the code can
  neither signal nor write anything of ours, and clean-up also kills every process of that uid.
  (Not `nobody`: other services and every concurrent run share it.);
- a **guard rail**, a Python audit hook that answers with a `PermissionError` the audited ways to
  start a process, open a network socket or address any socket (connect, bind, sendto, sendmsg),
  signal a process, load native code (ctypes), and write, remove or rename outside the working
  directory. It sees only what Python announces: code that replaces `sys.audit`, or calls
  `_posixsubprocess.fork_exec` itself, gets past it, and then the layers above still hold. Nothing
  but the guard keeps the code off the network.

Damage limitation for honest mistakes, NOT a security boundary (a red-team pass escaped the guard:
a relative write after `chdir`, a readable `.env`, a name lookup, `ctypes`): the child shares our kernel,
filesystem (read access) and network, and for a normal user it runs as that user: code that gets
past the guard can signal the user's processes, its supervisor included (then `survivors` is None,
unknown). Chapter 05 keeps it to show why a guard is not a boundary; model-written code runs in
`agentkit.wasm_sandbox` (WebAssembly). For hostile code that needs more, use a container, gVisor, a
Firecracker microVM or a remote executor.
"""
from __future__ import annotations

import json
import math
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .sandbox_supervisor import CLEAN_UP_PATIENCE_S, sweep

DEFAULT_TIMEOUT_S = 2.0
DEFAULT_MEMORY_MB = 256
DEFAULT_MAX_PROCESSES = 16
DEFAULT_MAX_FILE_MB = 16
MAX_OUTPUT_CHARS = 10_000
SUPERVISOR = Path(__file__).with_name("sandbox_supervisor.py")
SUPERVISOR_GRACE_S = 10.0  # start-up on a busy machine, plus the clean-up
RUN_UIDS = range(0x7F000000, 0x7FFF0000)  # high, unassigned by distributions and systemd


@dataclass
class SandboxResult:
    """What a sandboxed run produced: output, value or error, and how it ended."""

    output: str
    value: Any = None
    error: str | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    exit_code: int | None = None
    stderr: str = ""
    survivors: int | None = 0  # processes the code started still running after clean-up (None: unknown)
    pid: int | None = None  # the child's pid, which is also its session and process-group id

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
    max_processes: int = DEFAULT_MAX_PROCESSES,
    max_file_mb: int = DEFAULT_MAX_FILE_MB,
    guard: bool = True,
) -> SandboxResult:
    """Run `code` in a limited child process; if `expression` is given, return its value (JSON).

    Never raises for anything the code does: loops, bombs, crashes and signals come back as a
    result. If we are interrupted (KeyboardInterrupt), the code and everything it started are
    stopped before the exception goes on. `guard=False` turns off the guard rail (to test the
    other layers alone).
    """
    if not isinstance(code, str) or (expression is not None and not isinstance(expression, str)):
        raise TypeError("code and expression must be strings")
    for name, value in {"timeout_s": timeout_s, "memory_mb": memory_mb, "max_processes": max_processes,
                        "max_file_mb": max_file_mb}.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a positive, finite number, got {value!r}")  # -1 would mean no limit
    user = _run_as()
    job = {
        "code": code,
        "expression": expression,
        "guard": guard,
        "timeout_s": timeout_s,
        "cpu_s": math.ceil(timeout_s) + 1,  # a backstop: the wall clock normally stops it first
        "memory_mb": memory_mb,
        "max_file_mb": max_file_mb,
        "max_processes": max_processes,
        "uid": user[0] if user else None,
        "gid": user[1] if user else None,
        "own_uid": bool(user and user[2]),
    }
    # The code's output and report go to unnamed files we opened: it cannot swap them for a FIFO.
    with tempfile.TemporaryDirectory(prefix="agentkit-sandbox-", ignore_cleanup_errors=True) as work, \
            tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as report:
        if user:
            os.chown(work, user[0], user[1])
        job.update(stdout_fd=out.fileno(), stderr_fd=err.fileno(), report_fd=report.fileno())
        python = _interpreter_for(user)
        start = time.monotonic()
        verdict, failure = _supervise(python, job, work)
        output, stderr = _read_capped(out), _read_capped(err)
        report.seek(0)
        report_text = report.read().decode("utf-8", errors="replace")
    if verdict is None:  # the supervisor itself died (killed from outside, or by the code's user)
        survivors = len(sweep(None, job["uid"])) if job["own_uid"] else None
        return SandboxResult(output, None, failure, False, time.monotonic() - start, None, stderr, survivors)
    survivors = None if verdict["survivors"] is None else len(verdict["survivors"])
    value, error = None, None
    if verdict["timed_out"]:
        error = f"timed out: stopped at the {timeout_s:g} s wall-clock limit"
    else:
        try:
            parsed = json.loads(report_text)
            value, error = parsed["value"], parsed["error"]
        except RecursionError:
            error = "the report is nested too deeply to read"
        except (ValueError, KeyError, TypeError):
            error = _death_reason(verdict["exit_code"], max_file_mb, stderr)
    return SandboxResult(output, value, error, verdict["timed_out"], verdict["duration_s"], verdict["exit_code"],
                         stderr, survivors, verdict["pid"])


def _supervise(python: str, job: dict, work: str) -> tuple[dict | None, str]:
    """Run the supervisor; return its verdict, or None and why there is none."""
    proc = subprocess.Popen(
        [python, "-I", "-S", "-B", str(SUPERVISOR)], cwd=work, env=_clean_env(work),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        pass_fds=(job["stdout_fd"], job["stderr_fd"], job["report_fd"]), start_new_session=True,
    )
    try:
        verdict, complaint = proc.communicate(json.dumps(job).encode(), timeout=job["timeout_s"] + SUPERVISOR_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        verdict, complaint = proc.communicate()
    except BaseException:  # interrupted: SIGTERM makes the supervisor clean up before it goes
        proc.terminate()
        try:
            proc.wait(CLEAN_UP_PATIENCE_S + 1)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    try:
        return json.loads(verdict.decode().splitlines()[-1]), ""
    except (ValueError, IndexError):
        tail = complaint.decode(errors="replace").strip().splitlines()[-1:] or ["no error output"]
        return None, (f"the sandbox supervisor ended without a verdict (exit code {proc.returncode}; "
                      f"{tail[0][:200]}): the code's processes may have outlived it")


def _death_reason(exit_code: int | None, max_file_mb: int, stderr: str) -> str:
    """Why the child ended without a report, in words."""
    if exit_code is not None and exit_code < 0:
        name = _signal_name(-exit_code)
        if name == "SIGXCPU":
            return "CPU time limit exceeded"
        if name == "SIGXFSZ":
            return f"file size limit exceeded (output or a file grew past {max_file_mb} MB)"
        if name == "SIGKILL":
            return "killed by SIGKILL (out of memory or a hard limit)"
        return f"killed by {name}"
    tail = stderr.strip().splitlines()[-1:] or ["no error output"]
    return f"exited with code {exit_code} before reporting a result ({tail[0][:200]})"


def _signal_name(number: int) -> str:
    """SIGSEGV, SIGRTMIN+6, ...: real-time signals have no name of their own in `signal.Signals`."""
    try:
        return signal.Signals(number).name
    except ValueError:
        low, high = getattr(signal, "SIGRTMIN", 0), getattr(signal, "SIGRTMAX", 0)
        return f"SIGRTMIN+{number - low}" if low < number < high else f"signal {number}"


def _clean_env(work: str) -> dict:
    """A minimal environment: nothing inherited, so no API keys or tokens."""
    return {"PATH": "/usr/bin:/bin", "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8"}


def _read_capped(file: IO[bytes], limit: int = MAX_OUTPUT_CHARS) -> str:
    file.seek(0)
    text = file.read(limit * 4 + 1).decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + "\n... [output truncated]"


# --- who the code runs as ------------------------------------------------------


def _run_as() -> tuple[int, int, bool] | None:
    """As root: (uid, gid, whether the uid is the run's own); None when we are not root (it runs as us).

    The run's own uid when the kernel can map one; else `nobody` (shared, so no clean-up by uid).
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    fresh = _unused_id()
    if fresh is not None:
        return fresh, fresh, os.path.isdir("/proc/self")  # finding its processes by uid needs /proc
    try:
        import pwd

        nobody = pwd.getpwnam("nobody")
        return nobody.pw_uid, nobody.pw_gid, False
    except (ImportError, KeyError):
        return None


def _unused_id() -> int | None:
    """A random number in RUN_UIDS that no account or group uses as an id, if the kernel can map it.

    The range is wide (16 million ids), so two runs at once share one only by a one-in-millions chance.
    """
    import grp
    import pwd

    if not all(_can_map(RUN_UIDS, f"/proc/self/{kind}_map") for kind in ("uid", "gid")):
        return None
    for _ in range(100):
        candidate = RUN_UIDS.start + secrets.randbelow(len(RUN_UIDS))
        try:
            pwd.getpwuid(candidate)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(candidate)
        except KeyError:
            return candidate
    return None


def _can_map(ids: range, map_file: str) -> bool:
    """Whether our user namespace maps every id in `ids` (a container may map only a few)."""
    try:
        with open(map_file) as f:
            spans = [tuple(map(int, line.split())) for line in f if line.strip()]
    except OSError:
        return True  # no user namespaces here: every id is ours to use
    return any(inside <= ids.start and ids.stop <= inside + count for inside, _, count in spans)


def _interpreter_for(user: tuple[int, int, bool] | None) -> str:
    """Our interpreter; as root, one whose standard library the run's user can read, if there is one."""
    if user is None:
        return sys.executable
    for candidate in (sys.executable, "/usr/bin/python3"):
        if _world_executable(candidate):
            return candidate
    return sys.executable  # the code may then fail to import what the child had not loaded


def _world_executable(path: str) -> bool:
    """True if any user may execute `path` (every parent directory is world-searchable)."""
    real = Path(os.path.realpath(path))
    try:
        if not real.is_file() or real.stat().st_mode & 0o005 != 0o005:
            return False
        return all(parent.stat().st_mode & 0o001 for parent in real.parents)
    except OSError:
        return False
