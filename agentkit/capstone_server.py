"""The world's process: the capstone's grading (agentkit.capstone_grader) served over a pipe, one JSON line each way.

    python -m agentkit.capstone_server      # started by agentkit.capstone_client, which speaks for the kernel

Each request is one line, `{"op": ..., ...}`; each answer one line, `{"ok": value}` or `{"error": {"type", "message"}}`.
The ops: `open` (seeds, or a count of worlds to draw here; rate; per_template), `next`, `think`, `act`, `tool`,
`memory`, `answer`, `result` (a Session's methods of those names), `drop` (the standing ended early) and
`baselines`. One standing at a time: `open` and `baselines` are refused while a standing runs; and once a process
has drawn a check's worlds it opens no worlds of known seeds, so that no request (`drop`, then `open` of practice
worlds whose answers a kernel can compute) swaps a check's worlds for such. A request this process cannot serve is
an error answer, never a crash. Stdout carries only answers (anything printed goes to stderr). The process
ends when its stdin closes (the kernel closed it, ended, or was ended) or when its parent is gone; Ctrl-C is the
kernel's to handle.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

MAX_REQUEST_CHARS = 8_000_000


def _watch_parent(parent: int) -> None:
    """End this process once its parent is gone (a kernel killed hard may leave the pipe open a while)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def _serve(request: dict, state: dict):
    from . import capstone_grader as grader

    op = request.get("op")
    running = state.get("session") is not None and not state["session"].over
    if op in ("open", "baselines") and running:
        raise grader.SessionError("a standing is running here: its worlds stay until it is over")
    if op == "drop":  # the kernel's standing ended early (a rule broken): its worlds go
        state.pop("session", None)
        return None
    if op in ("open", "baselines") and state.get("secret") and (op == "baselines" or request.get("seeds") is not None):
        raise grader.SessionError("this process drew a check's worlds: it serves no worlds of known seeds after them")
    if op == "open":
        state["session"] = grader.Session(request.get("seeds"), request.get("count", grader.CHECK_WORLDS),
                                          request.get("rate", grader.RATE),
                                          request.get("per_template", grader.PER_TEMPLATE))
        state["secret"] = state.get("secret") or state["session"].secret
        return state["session"].describe()
    if op == "baselines":
        return grader.baselines(request["seeds"], request.get("rate", grader.RATE),
                                request.get("per_template", grader.PER_TEMPLATE))
    session = state.get("session")
    if session is None:
        raise grader.SessionError("no standing is open here yet")
    if op == "next":
        return session.next()
    if op == "think":
        return session.think(request["messages"], request.get("temperature", 0), request.get("grammar", ""))
    if op == "act":
        return session.act(request["messages"], request["tools"], request.get("temperature", 0),
                           request.get("tool_choice"))
    if op == "tool":
        return session.tool(request["name"], request["argument"])
    if op == "memory":
        return session.memory(request["method"], request.get("args", ()), request.get("kwargs"))
    if op == "answer":
        return session.answer(request["answer"], request.get("stop", "finished"), request.get("error", ""),
                              request.get("others", ()))
    if op == "result":
        return session.result()
    raise ValueError(f"unknown op {op!r}")


def main() -> int:
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a print anywhere in this process must not break the protocol
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal reaches the whole group: the kernel decides
    if os.name == "posix":
        threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    state: dict = {}
    while True:
        line = requests.readline(MAX_REQUEST_CHARS + 1)
        if not line:
            return 0
        if len(line) > MAX_REQUEST_CHARS and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # skip the rest of the line
                line = requests.readline(MAX_REQUEST_CHARS)
            reply = {"error": {"type": "ValueError", "message": f"a request longer than {MAX_REQUEST_CHARS:,} "
                                                                "characters was not read"}}
        else:
            try:
                reply = {"ok": _serve(json.loads(line), state)}
            except Exception as e:  # noqa: BLE001 - a bad request is an answer, never the end of the world
                reply = {"error": {"type": type(e).__name__, "message": str(e)[:2000]}}
        answers.write(json.dumps(reply, ensure_ascii=True).encode("ascii") + b"\n")
        answers.flush()


if __name__ == "__main__":
    sys.exit(main())
