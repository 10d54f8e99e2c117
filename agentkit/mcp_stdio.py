"""The stdio transport under agentkit's MCP client (agentkit.mcp_tools), used in place of the SDK's own.

`async with stdio_transport(command, env, log) as link:` starts the server in its own process group
(a Job Object on Windows) and gives `link.read` and `link.write` to an SDK `ClientSession`:

* only JSON-RPC lines reach the session; any other line the server prints on its stdout goes to
  `log`, cut to 300 characters (the SDK's reader would log a traceback for each);
* the server's stderr goes to `log` too, through a pipe this transport reads: `log` is a `ServerLog`, a
  file that keeps at most MAX_LOG_BYTES (past that its older half is dropped, and its first line says so);
  `read_tail(path)` reads at most TAIL_BYTES of its end, however large the file;
* a line longer than MAX_MESSAGE_BYTES ends the connection (`link.problem` says why) and is never
  held whole: the SDK's reader joins its growing buffer to every new chunk, quadratic in a line's
  length (a 32 MB result took seconds); `link.bytes_read` counts what was read of the server's stdout;
* on exit the server's stdin is closed, it gets `link.grace` seconds to end (0 to kill at once),
  then its whole process group is killed: the helpers it started die with it. So do the processes of this
  connection that left the group (a helper that started its own session, or was left behind by a double
  fork): on Linux, read from /proc (elsewhere, when psutil is installed), they are the server's descendants
  and every process whose environment carries this connection's marker (MARKER_VARIABLE, which the server's
  children inherit). A process that left the tree and cleared its environment escapes: only a container or a
  cgroup holds everything. On Windows the Job Object holds them all.

`link.pid` is the process this transport started: the one to kill, never a number the server reports.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import anyio

MAX_MESSAGE_BYTES = 2_000_000  # a tool's output is cut to 20,000 characters anyway (agentkit.tools)
CHUNK = 65_536
MAX_LOG_BYTES = 1_000_000  # a server's log on disk; a person reads its end
TAIL_BYTES = 65_536  # what read_tail reads of a log, at most
MARKER_VARIABLE = "AGENTKIT_MCP_CONNECTION"


@dataclass
class Link:
    read: object
    write: object
    pid: int
    grace: float = 2.0  # seconds the server gets to end after its stdin closes
    problem: str = ""  # why this transport ended the connection, if it did
    bytes_read: int = 0  # of the server's stdout


class ServerLog:
    """A log file that keeps at most `max_bytes`: past that, its older half is dropped and its first line says so."""

    def __init__(self, path, max_bytes: int = MAX_LOG_BYTES) -> None:
        self.path, self.max_bytes, self.dropped = Path(path), max_bytes, 0
        self._file = self.path.open("ab", buffering=0)  # unbuffered: a reader of the file sees every line at once

    def write(self, data) -> None:
        self._file.write(data.encode("utf-8", errors="replace") if isinstance(data, str) else data)
        if self._file.tell() > self.max_bytes:
            self._cut()

    def _cut(self) -> None:
        size = self._file.tell()
        with self.path.open("rb") as f:
            f.seek(size - self.max_bytes // 2)
            kept = f.read()
        kept = kept[kept.find(b"\n") + 1:]  # from the start of a line
        self.dropped += size - len(kept)
        self._file.seek(0)
        self._file.truncate()
        self._file.write(f"[agentkit client] log cut: its first {self.dropped:,} bytes were dropped (a server's log "
                         f"keeps at most {self.max_bytes:,})\n".encode() + kept)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "ServerLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_tail(path, lines: int = 8) -> str:
    """The last `lines` lines of a log, from at most TAIL_BYTES of its end ("" when there is no file)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - TAIL_BYTES))
            data = f.read(TAIL_BYTES)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


async def _spawn(command: list[str], env: dict):
    if sys.platform == "win32":  # the SDK's own spawn: a Job Object holds the server and its children
        from mcp.os.win32.utilities import create_windows_process, get_windows_executable_command

        return await create_windows_process(get_windows_executable_command(command[0]), command[1:], env,
                                            subprocess.PIPE)
    return await anyio.open_process(command, env=env, stderr=subprocess.PIPE, start_new_session=True)


def _stderr_of(process):
    """The server's stderr as an anyio stream (the SDK's Windows fallback process wraps only stdin and stdout)."""
    if getattr(process, "stderr", None) is not None:
        return process.stderr
    from anyio.streams.file import FileReadStream

    return FileReadStream(process.popen.stderr)


def _processes() -> dict:
    """pid -> (parent pid, process group, environment as bytes or None), for every process we may read."""
    found = {}
    if os.path.isdir("/proc/self"):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()  # the name may hold spaces and brackets
                found[int(entry)] = [int(fields[1]), int(fields[2]), None]
                with open(f"/proc/{entry}/environ", "rb") as f:
                    found[int(entry)][2] = f.read()
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile, or another user's environment
        return found
    try:
        import psutil
    except ImportError:
        return found  # no /proc and no psutil: the process group is all we reach
    for process in psutil.process_iter(["ppid"]):
        with suppress(psutil.Error, OSError):
            environ = "\0".join(f"{k}={v}" for k, v in process.environ().items()).encode()
            found[process.pid] = [process.info["ppid"], os.getpgid(process.pid), environ]
    return found


def strays(root: int, marker: str) -> list[int]:
    """This connection's processes outside its process group: the server's descendants that left it, and every
    process whose environment carries `marker`."""
    if sys.platform == "win32":
        return []  # the Job Object holds them
    table, tag = _processes(), f"{MARKER_VARIABLE}={marker}".encode()
    children: dict = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    mine, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in mine:
                mine.add(child)
                todo.append(child)
    mine |= {pid for pid, (_, _, environ) in table.items() if environ and tag in environ.split(b"\0")}
    return sorted(pid for pid in mine if table[pid][1] != root and pid not in (root, os.getpid()))


def _kill(pids) -> None:
    for pid in pids:
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)


async def _kill_group(process) -> None:
    if sys.platform == "win32":
        from mcp.os.win32.utilities import close_process_job, terminate_windows_process_tree

        await terminate_windows_process_tree(process)
        close_process_job(process)
    else:
        from mcp.os.posix.utilities import terminate_posix_process_tree

        await terminate_posix_process_tree(process, 1.0)  # SIGTERM to the group, SIGKILL after 1 s


def _close_pipes(process) -> None:
    """Close asyncio's transport of the child now: left to the garbage collector, it complains once the
    event loop is gone. Nothing public reaches it (the SDK walks the same attributes)."""
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    with suppress(Exception):
        transport.close()


def _note(log, text: str) -> None:
    with suppress(OSError, ValueError):
        log.write(f"[agentkit client] {text}\n")
        log.flush()


@asynccontextmanager
async def stdio_transport(command: list[str], env: dict, log):
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    marker = f"{os.getpid()}-{secrets.token_hex(8)}"
    process = await _spawn(list(command), get_default_environment() | env | {MARKER_VARIABLE: marker})
    errors = _stderr_of(process)
    to_session, read = anyio.create_memory_object_stream(0)
    write, from_session = anyio.create_memory_object_stream(0)
    link = Link(read, write, process.pid)

    async def deliver(line: bytes) -> None:
        text = line.decode("utf-8", errors="replace").strip()
        if not text:
            return
        try:
            message = jsonrpc_message_adapter.validate_json(text, by_name=False)
        except ValueError:
            _note(log, f"not a JSON-RPC message on stdout, not passed on: {text[:300]!r}")
            return
        await to_session.send(SessionMessage(message))

    async def reader() -> None:
        buffer, searched = bytearray(), 0
        async with to_session:
            with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                while True:
                    chunk = await process.stdout.receive(CHUNK)
                    link.bytes_read += len(chunk)
                    buffer += chunk
                    while (end := buffer.find(b"\n", searched)) >= 0:
                        await deliver(bytes(buffer[:end]))
                        del buffer[:end + 1]
                        searched = 0
                    searched = len(buffer)  # the next search starts where this one ended: linear
                    if len(buffer) > MAX_MESSAGE_BYTES:
                        link.problem = (f"it sent a message longer than {MAX_MESSAGE_BYTES:,} bytes "
                                        f"(the client's limit), so the connection was ended")
                        _note(log, link.problem)
                        link.grace = 0.0  # it is blocked writing the rest: waiting for it to end is pointless
                        return

    async def log_errors() -> None:
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                data = await errors.receive(CHUNK)
                with suppress(OSError, ValueError):  # a full disk loses log lines; the server must not block on them
                    log.write(data)

    async def writer() -> None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async with from_session:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(log_errors)
        tasks.start_soon(writer)
        try:
            yield link
        finally:
            with anyio.CancelScope(shield=True):  # the server must stop even when the caller is cancelled
                with suppress(Exception):
                    await process.stdin.aclose()
                with anyio.move_on_after(link.grace):
                    while process.returncode is None:
                        await anyio.sleep(0.01)
                _kill(strays(process.pid, marker))  # first: the tree that finds the ones without the marker is whole
                await _kill_group(process)  # always: a server that ended may have left helpers behind
                with anyio.move_on_after(2):
                    while process.returncode is None:
                        await anyio.sleep(0.01)
                _kill(strays(process.pid, marker))  # any started meanwhile
                for stream in (process.stdout, errors, to_session, read, write, from_session):
                    with suppress(Exception):
                        await stream.aclose()
                _close_pipes(process)
            tasks.cancel_scope.cancel()
