"""Notebook kernels forked from a warm parent, for the test command (Linux only).

Every notebook nbval checks needs a fresh ipykernel, and each one spends over a second of CPU
importing ipykernel, IPython, matplotlib and numpy before its first cell. Here one *warm parent*
per test run imports those libraries once, then forks a kernel for each notebook: the 16 notebooks,
one after another, took 47 s of CPU instead of 69 (2026-12-02, `pytest notebooks/` with and
without AGENTKIT_COLD_KERNELS=1). Each kernel is still a new ipykernel
process, started with the command jupyter_client asked for, in its own session, with the cwd,
environment and stdout/stderr of the worker that asked; only the third-party modules above are
already imported. agentkit is never preloaded: each notebook imports it afresh, so its state
starts clean.

It plugs in through jupyter_client's own extension point, a kernel provisioner. Where fork is
unsafe or unavailable (Windows, macOS), where pidfd_open fails (Linux before 5.3, some containers),
for any command other than this Python's ipykernel launcher, or with AGENTKIT_COLD_KERNELS=1,
kernels start the usual way.
"""
import atexit
import functools
import gc
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings

from jupyter_client.provisioning import LocalProvisioner

# The warm parent's socket, inherited by pytest-xdist's workers from the process that started it.
SOCKET_VARIABLE = "AGENTKIT_WARM_KERNELS"
# What ipykernel sets before a notebook's first cell (ipykernel.kernelapp), so matplotlib, imported
# early here, reads the same backend setting it would have read in the kernel.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
# A worker sends its whole request as it connects. The parent serves one asker at a time, so one that
# connects and goes quiet is hung up on after this long, not waited for by every later kernel.
REQUEST_TIMEOUT_S = 10.0
MAX_REQUEST = 1 << 22  # bytes: an environment and a command line, with room to spare


def available() -> bool:
    return (os.environ.get("AGENTKIT_COLD_KERNELS", "") in ("", "0") and sys.platform.startswith("linux")
            and _pidfd_works())


@functools.lru_cache(maxsize=None)
def _pidfd_works() -> bool:
    """Linux 5.3+ has pidfd_open; some containers still refuse it (seccomp)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
        return True
    except (AttributeError, OSError):
        return False


def start() -> None:
    """Start the warm parent for this process and the workers it will start; once per run."""
    if not available() or os.environ.get(SOCKET_VARIABLE):
        return
    folder = tempfile.mkdtemp(prefix="agentkit-kernels-")
    path = os.path.join(folder, "fork.sock")
    # Bound and listening before the parent starts: a worker can connect at once, and waits in the
    # backlog while the parent imports.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", INLINE_BACKEND)
    # Its stdin stays open while we live: its end is the parent's signal to go.
    parent = subprocess.Popen([sys.executable, __file__, str(listener.fileno())], stdin=subprocess.PIPE,
                              pass_fds=[listener.fileno()], env=env)
    listener.close()
    os.environ[SOCKET_VARIABLE] = path

    def stop():
        try:
            parent.stdin.close()
            parent.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            parent.kill()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)


def fork_kernel(argv: list[str], env: dict, cwd, stdout: int = 1, stderr: int = 2) -> int:
    """Ask the warm parent for a kernel, with these file descriptors as its stdout and stderr."""
    request = json.dumps({"argv": argv, "env": env, "cwd": str(cwd) if cwd else None}).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(os.environ[SOCKET_VARIABLE])
        socket.send_fds(connection, [request], [stdout, stderr])
        reply = json.loads(connection.makefile("rb").readline() or b"{}")
    if "pid" not in reply:
        raise RuntimeError(f"the warm kernel parent could not fork a kernel: {reply}")
    return reply["pid"]


class ForkedKernel:
    """The Popen-like handle LocalProvisioner expects, for a kernel that is not our child.

    A pidfd follows that exact process (no pid reuse); it becomes readable when the process ends.
    The warm parent reaps it, so its exit status is not ours to read: an ended kernel reports 0."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int):
        self.pid = pid
        self._pidfd = os.pidfd_open(pid)
        self.returncode = None

    def poll(self):
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            self.returncode = 0
            os.close(self._pidfd)
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None and not select.select([self._pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
        return self.poll()

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class WarmKernelProvisioner(LocalProvisioner):
    """LocalProvisioner, except that this Python's ipykernel is forked from the warm parent."""

    async def launch_kernel(self, cmd, **kwargs):
        if not forkable(cmd, kwargs):
            return await super().launch_kernel(cmd, **kwargs)
        streams = [_fd(kwargs.get("stdout"), 1), _fd(kwargs.get("stderr"), 2)]
        try:
            with open(os.devnull, "wb") as null:
                streams = [null.fileno() if fd == subprocess.DEVNULL else fd for fd in streams]
                pid = fork_kernel(cmd, dict(kwargs.get("env") or os.environ), kwargs.get("cwd"), *streams)
        except (OSError, RuntimeError) as e:  # the warm parent died: this notebook still runs, only slower
            warnings.warn(f"No warm kernel parent ({e}); this kernel starts the usual way.", stacklevel=1)
            return await super().launch_kernel(cmd, **kwargs)
        self.process = ForkedKernel(pid)
        self.pid = self.pgid = pid  # it leads its own session, as launch_kernel's start_new_session does
        self.cwd = kwargs.get("cwd", os.getcwd())
        return self.connection_info


def forkable(cmd: list[str], popen_kwargs: dict) -> bool:
    """Only this Python's ipykernel is forked, with a warm parent running and no pipe asked for."""
    pipes = [name for name in ("stdout", "stderr") if popen_kwargs.get(name) == subprocess.PIPE]
    return (available() and bool(os.environ.get(SOCKET_VARIABLE)) and not pipes
            and cmd[:3] == [sys.executable, "-m", "ipykernel_launcher"])


def _fd(stream, inherited: int):
    """The file descriptor a Popen stdout/stderr argument names (nbval passes an open file)."""
    if stream is None:
        return inherited
    return stream if isinstance(stream, int) else stream.fileno()


def install() -> None:
    """Make jupyter_client use the warm provisioner for every kernel spec that names none."""
    if not available():
        return
    from importlib.metadata import EntryPoint

    from jupyter_client.provisioning.factory import KernelProvisionerFactory

    factory = KernelProvisionerFactory.instance()
    name = "agentkit-warm-fork"
    factory.provisioners[name] = EntryPoint(name=name, value=f"{__name__}:WarmKernelProvisioner",
                                            group="jupyter_client.kernel_provisioners")
    factory.default_provisioner_name = name


# --- the warm parent -----------------------------------------------------------------


def _preload() -> None:
    import ipykernel.kernelapp  # noqa: F401  (IPython, zmq, tornado, jupyter_client)
    import IPython.core.pylabtools  # noqa: F401
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401


def _reap(*_):
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _serve(listener: socket.socket) -> dict:
    """Fork a kernel per request until our stdin ends; returns (in the child only) its request."""
    signal.signal(signal.SIGCHLD, _reap)
    # Ctrl-C in the terminal is for pytest; this parent goes when pytest closes its stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        readable = select.select([listener, 0], [], [])[0]
        if 0 in readable and not os.read(0, 4096):
            sys.exit(0)
        if listener not in readable:
            continue
        connection = listener.accept()[0]
        message, fds = _read_request(connection)
        if not message.endswith(b"\n"):  # the asker went away, went quiet or sent too much mid-request
            for fd in fds:
                os.close(fd)
            connection.close()
            continue
        try:
            pid = os.fork()
        except OSError as e:
            _reply(connection, {"error": str(e)})
            pid = None
        if pid == 0:
            listener.close()
            connection.close()
            request = json.loads(message)
            request["fds"] = fds
            return request
        for fd in fds:
            os.close(fd)
        if pid and not _reply(connection, {"pid": pid}):
            os.kill(pid, signal.SIGKILL)  # a kernel no one will talk to or shut down
        connection.close()


def _read_request(connection: socket.socket) -> tuple[bytes, list[int]]:
    """What the asker sent, up to its newline, and the fds that came with it; cut short at the deadline."""
    deadline = time.monotonic() + REQUEST_TIMEOUT_S
    message, fds = b"", []
    try:
        connection.settimeout(REQUEST_TIMEOUT_S)
        message, fds, _, _ = socket.recv_fds(connection, 1 << 16, 2)
        chunk = message
        while chunk and not message.endswith(b"\n") and len(message) < MAX_REQUEST:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            connection.settimeout(left)
            chunk = connection.recv(1 << 16)
            message += chunk
    except OSError:  # the timeout, or the asker gone
        pass
    return message, fds


def _reply(connection: socket.socket, answer: dict) -> bool:
    """Send the answer; False when the asker is gone."""
    try:
        connection.sendall(json.dumps(answer).encode() + b"\n")
        return True
    except OSError:
        return False


def _become_kernel(request: dict) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the kernel's own subprocesses are its to wait for
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any new Python process
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # launch_kernel gives a kernel a closed stdin
    stdout, stderr = request["fds"]
    os.dup2(stdout, 1)
    os.dup2(stderr, 2)
    for fd in (null, stdout, stderr):
        os.close(fd)
    env = dict(request["env"])
    env["JPY_PARENT_PID"] = str(os.getppid())  # ipykernel exits if its parent, this warm parent, goes
    os.environ.clear()
    os.environ.update(env)
    if request["cwd"]:
        os.chdir(request["cwd"])
    sys.argv = [request["argv"][0]] + request["argv"][3:]
    sys.path[0] = os.getcwd()  # as python -m sets it: the kernel's cwd, not this file's folder


if __name__ == "__main__":
    listening = socket.socket(fileno=int(sys.argv[1]))
    # ipykernel reads its parent's pid from the environment at import: this parent is the kernels'.
    os.environ["JPY_PARENT_PID"] = str(os.getpid())
    _preload()
    # numpy's OpenBLAS keeps a thread, so Python 3.12+ warns on every fork. OpenBLAS stops its threads
    # around fork (pthread_atfork) and starts them again in the child when needed: the warning does not apply.
    warnings.filterwarnings("ignore", r"This process .* is multi-threaded", DeprecationWarning)
    # What was imported is never collected: a kernel's collections then skip it, and leave its
    # memory pages shared with this parent instead of copying them (the gc module's advice for fork).
    gc.freeze()
    _become_kernel(_serve(listening))
    import runpy

    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
