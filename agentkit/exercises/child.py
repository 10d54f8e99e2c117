"""The forked check's child, from the fork to its end: its own process group, its own stdout and stderr (pipes the
kernel reads), nothing sent on the kernel's sockets, and an exit that never returns into the kernel's code.

    child.run(job, watch, on_child, out_w, err_w, theirs)   # never returns

The kernel's threads (ZMQ, heartbeat, iopub) do not exist in the child, and the locks they held at the fork may stay
taken: the child writes to file descriptors 1 and 2 through new streams, display() prints the text form, input()
and getpass() refuse, and the kernel's session sends nothing. Every path out of it ends in os._exit.
"""
from __future__ import annotations

import builtins
import getpass
import io
import os
import signal
import sys

from ..i18n import tr
from .deadline import _REAL


def run(job, watch, on_child, out_w: int, err_w: int, theirs: tuple) -> None:
    """Run the job with its own stdout/stderr and process group, send the verdict, and leave by os._exit only."""
    code = 0
    try:
        os.setpgid(0, 0)
        for fd in theirs:
            os.close(fd)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        sys.stdout, sys.stderr = _stream(1), _stream(2)
        if os.environ.get("AGENTKIT_FORK_DEBUG"):  # forked.py asks for every thread's stack before it ends us
            import faulthandler
            faulthandler.register(signal.SIGUSR1, file=2, all_threads=True)
        _quiet_kernel()
        on_child(watch)
        verdict = job()
        for stream in (sys.stdout, sys.stderr):  # all the output is in its pipe before the verdict is
            stream.flush()
        watch.send({"verdict": verdict})
    except KeyboardInterrupt:  # raised by the learner's code: the kernel raises it too, as in-process
        code = 1
        try:
            watch.send({"interrupted": True})
        except BaseException:  # noqa: BLE001
            pass
    except BaseException as e:  # noqa: BLE001 - whatever happened, the child reports it and ends
        code = 1
        try:
            watch.send({"crash": f"{type(e).__name__}: {str(e)[:300]}"})
        except BaseException:  # noqa: BLE001
            pass
    finally:
        while True:  # a last signal of the check's clock can land anywhere here: never leave but by os._exit
            try:
                if hasattr(signal, "setitimer"):
                    _REAL["setitimer"](signal.ITIMER_REAL, 0)
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
                os._exit(code)
            except BaseException:  # noqa: BLE001
                code = code or 1
                try:
                    os._exit(code)
                except BaseException:  # noqa: BLE001
                    continue


def _stream(fd: int):
    return io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                            line_buffering=True, write_through=True)


def _no_input(prompt: str = "") -> str:
    raise EOFError(tr("input() cannot be answered inside a check: the check runs your code in a process of its own. "
                      "Give your function what it needs as arguments."))


class _TextDisplay:
    """display() in the child: the text form of what is shown, on stdout (the kernel's display belongs to it)."""

    def publish(self, data, metadata=None, *args, **kwargs) -> None:
        text = data.get("text/plain") if isinstance(data, dict) else None
        if text:
            print(text)

    def clear_output(self, wait: bool = False) -> None:
        pass


def _quiet_kernel() -> None:
    """In the child: no message ever goes out on the kernel's sockets; input() and getpass() refuse."""
    builtins.input = getpass.getpass = _no_input
    kernelapp = sys.modules.get("ipykernel.kernelapp")
    if kernelapp is not None and kernelapp.IPKernelApp.initialized():
        app = kernelapp.IPKernelApp.instance()
        for owner in (app, getattr(app, "kernel", None)):
            session = getattr(owner, "session", None)
            if session is not None:
                session.send = lambda *args, **kwargs: None
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is not None:
        shell.display_pub = _TextDisplay()
