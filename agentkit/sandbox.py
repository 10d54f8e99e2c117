"""Run model-written code in a separate, limited process, never in ours.

Layers: a child interpreter (`python -I -S -B`) in its own session, a wall-clock
timeout that kills the whole process group, rlimits (CPU, address space, processes,
file size, no core dumps), a fresh temporary working directory, an environment with no
secrets, an unprivileged user when we run as root, and an audit-hook guard rail that
refuses writes outside the working directory, new processes and sockets.

This is damage limitation for honest mistakes, NOT a security boundary: the child shares
our kernel, filesystem (read access) and network. For hostile code use a container, gVisor,
a Firecracker microVM or a remote executor.
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_S = 2.0
DEFAULT_MEMORY_MB = 256
DEFAULT_MAX_PROCESSES = 16
DEFAULT_MAX_FILE_MB = 16
MAX_OUTPUT_CHARS = 10_000

# The trusted bootstrap: it sets the limits, installs the guard, then runs the code.
# Limits are set here rather than in preexec_fn, which Python documents as unsafe in a
# threaded parent (a Jupyter kernel has threads); no model code has run yet.
_CHILD = r'''
import json, os, resource, sys, traceback
job_path, result_path = sys.argv[1], sys.argv[2]
with open(job_path, encoding="utf-8") as f:
    job = json.load(f)
result_file = open(result_path, "w", encoding="utf-8")

def limit(which, soft, hard=None):
    ceiling = resource.getrlimit(which)[1]
    hard = soft if hard is None else hard
    if ceiling != resource.RLIM_INFINITY:
        soft, hard = min(soft, ceiling), min(hard, ceiling)
    resource.setrlimit(which, (soft, hard))

limit(resource.RLIMIT_CORE, 0)
limit(resource.RLIMIT_CPU, job["cpu_s"], job["cpu_s"] + 1)  # SIGXCPU, then SIGKILL
limit(resource.RLIMIT_AS, job["memory_mb"] * 2**20)
limit(resource.RLIMIT_FSIZE, job["max_file_mb"] * 2**20)
limit(resource.RLIMIT_NPROC, job["max_processes"])

leader = os.getpid()
workdir = os.path.realpath(os.getcwd())
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
NEW_PROCESS = {"os.system", "os.fork", "os.forkpty", "os.exec", "os.posix_spawn",
               "os.spawn", "subprocess.Popen", "pty.spawn"}
OTHER_BLOCKED = {"os.kill", "os.killpg", "socket.connect", "socket.bind", "ctypes.dlopen"}
PATH_CHANGES = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
                "os.symlink", "os.link", "os.truncate", "os.utime", "shutil.rmtree"}

def inside(path):
    if isinstance(path, int):
        return True  # an already-open descriptor: it was checked when it was opened
    full = os.path.realpath(os.path.join(workdir, os.fsdecode(path)))
    return full == workdir or full.startswith(workdir + os.sep)

def guard(event, args):
    if event in NEW_PROCESS:
        raise PermissionError("sandbox guard: " + event + " is not allowed (no new processes)")
    if event in OTHER_BLOCKED:
        raise PermissionError("sandbox guard: " + event + " is not allowed")
    if event == "open" and args[2] & WRITE_FLAGS and not inside(args[0]):
        raise PermissionError("sandbox guard: writing outside the working directory is not allowed")
    if event in PATH_CHANGES and not all(inside(a) for a in args if isinstance(a, (str, bytes, os.PathLike))):
        raise PermissionError("sandbox guard: " + event + " outside the working directory is not allowed")

if job["guard"]:
    sys.addaudithook(guard)

report = {"value": None, "error": None}
try:
    namespace = {"__name__": "__main__"}
    exec(compile(job["code"], "<code>", "exec"), namespace)
    if job["expression"] is not None:
        report["value"] = eval(compile(job["expression"], "<expression>", "eval"), namespace)
    namespace.clear()
    text = json.dumps(report)
except SystemExit as exc:
    text = json.dumps({"value": None, "error": None if exc.code in (0, None) else "SystemExit: " + str(exc.code)})
except BaseException as exc:
    namespace.clear()
    report = {"value": None, "error": traceback.format_exception_only(type(exc), exc)[-1].strip()}
    if isinstance(exc, TypeError) and "JSON serializable" in str(exc):
        report["error"] = "the value is not JSON-serialisable: " + report["error"]
    traceback.print_exc()
    text = json.dumps(report)
finally:
    if os.getpid() != leader:
        os._exit(1)  # a forked child never reports; only the process we started does
result_file.write(text)
result_file.close()
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
'''


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
    survivors: int | None = 0  # processes of its group still alive after clean-up (None: unknown)
    pid: int | None = None  # the child's pid, which is also its process-group id

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

    Never raises for anything the code does: loops, bombs and crashes come back as a result.
    `guard=False` turns off the audit-hook guard rail (to test the OS limits alone).
    """
    if not isinstance(code, str) or (expression is not None and not isinstance(expression, str)):
        raise TypeError("code and expression must be strings")
    runner = _unprivileged_runner()
    python = runner[2] if runner else sys.executable
    job = {
        "code": code,
        "expression": expression,
        "guard": guard,
        "cpu_s": math.ceil(timeout_s) + 1,  # a backstop: the wall clock normally stops it first
        "memory_mb": memory_mb,
        "max_file_mb": max_file_mb,
        "max_processes": max_processes,
    }
    with tempfile.TemporaryDirectory(prefix="agentkit-sandbox-") as tmp:
        root = Path(tmp)
        work, job_path, result_path = root / "work", root / "job.json", root / "result.json"
        work.mkdir()
        job_path.write_text(json.dumps(job), encoding="utf-8")
        result_path.touch()
        if runner:
            root.chmod(0o755)
            for path in (work, result_path):
                os.chown(path, runner[0], runner[1])
        with open(root / "stdout", "wb") as out, open(root / "stderr", "wb") as err, _Subreaper():
            start = time.perf_counter()
            proc = subprocess.Popen(
                [python, "-I", "-S", "-B", "-c", _CHILD, str(job_path), str(result_path)],
                cwd=work, env=_clean_env(work), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                start_new_session=True, close_fds=True,
                **({"user": runner[0], "group": runner[1], "extra_groups": []} if runner else {}),
            )
            try:
                proc.wait(timeout=timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc.pid)
                proc.wait()
            duration = time.perf_counter() - start
            survivors = _clean_up_group(proc.pid)
        report_text = result_path.read_text(encoding="utf-8", errors="replace")
        output = _read_capped(root / "stdout")
        stderr = _read_capped(root / "stderr")
    value, error = None, None
    if timed_out:
        error = f"timed out: stopped at the {timeout_s:g} s wall-clock limit"
    else:
        try:
            report = json.loads(report_text)
            value, error = report["value"], report["error"]
        except (ValueError, KeyError, TypeError):
            error = _death_reason(proc.returncode, max_file_mb, stderr)
    return SandboxResult(output, value, error, timed_out, duration, proc.returncode, stderr, survivors, proc.pid)


def _death_reason(returncode: int, max_file_mb: int, stderr: str) -> str:
    """Why the child ended without a report, in words."""
    if returncode is not None and returncode < 0:
        sig = signal.Signals(-returncode)
        if sig == signal.SIGXCPU:
            return "CPU time limit exceeded"
        if sig == signal.SIGXFSZ:
            return f"file size limit exceeded (output or a file grew past {max_file_mb} MB)"
        if sig == signal.SIGKILL:
            return "killed by SIGKILL (out of memory or a hard limit)"
        return f"killed by {sig.name}"
    tail = stderr.strip().splitlines()[-1:] or ["no error output"]
    return f"exited with code {returncode} before reporting a result ({tail[0][:200]})"


def _clean_env(work: Path) -> dict:
    """A minimal environment: nothing inherited, so no API keys or tokens."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(work), "TMPDIR": str(work), "LANG": "C.UTF-8"}


def _read_capped(path: Path, limit: int = MAX_OUTPUT_CHARS) -> str:
    with open(path, "rb") as f:
        data = f.read(limit * 4 + 1)
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + "\n... [output truncated]"


def _unprivileged_runner() -> tuple[int, int, str] | None:
    """When we are root, run as `nobody`: RLIMIT_NPROC never binds root, and nobody can't write our files.

    Needs an interpreter `nobody` can reach; returns (uid, gid, python) or None.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    try:
        import pwd

        nobody = pwd.getpwnam("nobody")
    except (ImportError, KeyError):
        return None
    for candidate in (sys.executable, "/usr/bin/python3"):
        if _world_executable(candidate):
            return nobody.pw_uid, nobody.pw_gid, candidate
    return None


def _world_executable(path: str) -> bool:
    """True if any user may execute `path` (every parent directory is world-searchable)."""
    real = Path(os.path.realpath(path))
    try:
        if not real.is_file() or real.stat().st_mode & 0o005 != 0o005:
            return False
        return all(parent.stat().st_mode & 0o001 for parent in real.parents)
    except OSError:
        return False


# --- process-group clean-up ---------------------------------------------------


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _group_members(pgid: int) -> list[tuple[int, str, int]] | None:
    """(pid, state, parent pid) of every process in the group, from /proc; None where /proc is missing."""
    if not os.path.isdir("/proc/self"):
        return None
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            members.append((int(entry), fields[0], int(fields[1])))
    return members


def _clean_up_group(pgid: int, patience_s: float = 2.0) -> int | None:
    """Kill whatever is left of the group and reap the orphans; return how many still live."""
    deadline = time.monotonic() + patience_s
    while True:
        _kill_group(pgid)
        try:  # orphans were re-parented to us (see _Subreaper): reap them
            while os.waitpid(-pgid, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        members = _group_members(pgid)
        if members is None:
            return None
        alive = [pid for pid, state, _ in members if state not in ("Z", "X")]
        ours = [pid for pid, state, parent in members if parent == os.getpid()]
        if (not alive and not ours) or time.monotonic() > deadline:
            return len(alive)
        time.sleep(0.01)


class _Subreaper:
    """Linux: adopt the sandbox's orphans while it runs, so they can be killed and reaped.

    Without it, orphans go to PID 1, which in some containers never reaps them.
    """

    PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37

    def __enter__(self):
        self.previous = None
        if sys.platform.startswith("linux"):
            try:
                self.libc = ctypes.CDLL(None, use_errno=True)
                flag = ctypes.c_int(0)
                if self.libc.prctl(self.PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0:
                    self.previous = flag.value
                    self.libc.prctl(self.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            except (OSError, AttributeError):
                self.previous = None
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            self.libc.prctl(self.PR_SET_CHILD_SUBREAPER, self.previous, 0, 0, 0)
        return False
