"""The stdio transport under agentkit's MCP client (agentkit.mcp_tools), used in place of the SDK's own.

`async with stdio_transport(command, env, log) as link:` starts the server in its own process group
(a Job Object on Windows) and gives `link.read` and `link.write` to an SDK `ClientSession`:

* only JSON-RPC lines reach the session; any other line the server prints on its stdout goes to
  `log`, cut to 300 characters (the SDK's reader would log a traceback for each);
* a line longer than MAX_MESSAGE_BYTES ends the connection (`link.problem` says why) and is never
  held whole: the SDK's reader joins its growing buffer to every new chunk, quadratic in a line's
  length (a 32 MB result took seconds);
* on exit the server's stdin is closed, it gets `link.grace` seconds to end (0 to kill at once),
  then its whole process group is killed: the helpers it started die with it.

`link.pid` is the process this transport started: the one to kill, never a number the server reports.
"""
from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

import anyio

MAX_MESSAGE_BYTES = 2_000_000  # a tool's output is cut to 20,000 characters anyway (agentkit.tools)
CHUNK = 65_536


@dataclass
class Link:
    read: object
    write: object
    pid: int
    grace: float = 2.0  # seconds the server gets to end after its stdin closes
    problem: str = ""  # why this transport ended the connection, if it did


async def _spawn(command: list[str], env: dict, log):
    if sys.platform == "win32":  # the SDK's own spawn: a Job Object holds the server and its children
        from mcp.os.win32.utilities import create_windows_process, get_windows_executable_command

        return await create_windows_process(get_windows_executable_command(command[0]), command[1:], env, log)
    return await anyio.open_process(command, env=env, stderr=log, start_new_session=True)


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

    process = await _spawn(list(command), get_default_environment() | env, log)
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
                    buffer += await process.stdout.receive(CHUNK)
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

    async def writer() -> None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async with from_session:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
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
                await _kill_group(process)  # always: a server that ended may have left helpers behind
                with anyio.move_on_after(2):
                    while process.returncode is None:
                        await anyio.sleep(0.01)
                for stream in (process.stdout, to_session, read, write, from_session):
                    with suppress(Exception):
                        await stream.aclose()
                _close_pipes(process)
            tasks.cancel_scope.cancel()
