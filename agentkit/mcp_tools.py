"""An MCP server's tools as course tools: a synchronous client that never hangs and never raises.

`MCPTools(command)` starts the server as a child process over stdio (the official `mcp` SDK's
`stdio_client` and `ClientSession`), on its own thread and event loop, so it works the same in a
script and inside Jupyter (whose kernel already runs an asyncio loop). `start()` waits at most
`start_timeout` seconds for the handshake and the tool list; `start(wait=False)` returns at once and
the first `wait()`, `call()` or `executor()` waits instead.

`call(name, text)` sends `{"input": text}` and always returns a string:
* the tool's text, or `error: ...` when the server reports the tool failed (`isError`);
* `error: ... did not answer within N s`: the call timed out; the server is then stopped, since a
  server that hangs once cannot be trusted with the next call;
* `error: the MCP server stopped ...`: the connection closed (the process died);
* `error: the MCP server is not running ...` for every later call.

`executor(names)` registers the server's tools in a ToolExecutor, with the effect read from each
tool's annotations (`effect_of`): readOnlyHint true is "read"; otherwise destructiveHint true or
missing is "delete" (the protocol's default for a tool that is not read-only), openWorldHint true is
"send", else "write"; and `open_world` from openWorldHint (missing: true, the protocol's default), which
the gate counts as a send. Annotations are the server's own claims, not checked facts. A tool whose
name the course cannot register (a space, a bracket) is left out, the reason in `.dropped`.
Tool descriptions go into the model's prompt, so a server can write instructions there (tool
poisoning), or change a description after you approved it (a rug pull): `review()` is the text a
person reads before approving (instruction-like phrases flagged by `flags`, a phrase list a rewording
escapes), `pin()` the fingerprints of what they approved, and `executor(pinned=...)` re-lists the
tools and leaves out every tool that is not pinned or has changed since.
`python -m agentkit.mcp_tools [N]` measures a call in process against the same call over MCP.
The transport (agentkit.mcp_stdio) starts the server in its own process group, passes on only JSON-RPC
lines (others go to the server's log), and ends a connection whose message passes its size limit.
The server's log (its stderr) is kept to its last MAX_LOG_BYTES, and `log_tail()` reads only its end.
`close()` (also on exit of a `with` block, and at interpreter exit) stops the child and every process it
started, at once for a hung one, and removes its log folder: its process group, and the processes that left
the group (see agentkit.mcp_stdio for which it finds, and the one kind it cannot).
"""
from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from .mcp_stdio import ServerLog, read_tail, stdio_transport
from .text import visible
from .tools import ERROR_PREFIX, ToolExecutor


def effect_of(annotations) -> str:
    """The course effect a tool's MCP annotations claim (missing hints: the protocol's defaults)."""
    if annotations is not None and annotations.read_only_hint:
        return "read"
    if annotations is None or annotations.destructive_hint is not False:
        return "delete"
    return "send" if annotations.open_world_hint else "write"


def open_world_of(annotations) -> bool:
    """Whether the tool may reach outside (openWorldHint; missing: true, the protocol's default)."""
    return annotations is None or annotations.open_world_hint is not False


def fingerprint(tool) -> str:
    """sha256 of what a tool tells the client: name, description, input schema, annotations."""
    told = {"name": tool.name, "description": tool.description or "", "schema": tool.input_schema,
            "annotations": tool.annotations.model_dump(exclude_none=True) if tool.annotations else None}
    return hashlib.sha256(json.dumps(told, sort_keys=True, default=str).encode("utf-8")).hexdigest()


# Phrases of a description that speak to the model rather than describe the tool. A list: a rewording
# escapes it, so it points a person's eyes; it does not decide.
INSTRUCTION_LIKE = [
    (r"\b[A-Z]\w*\[[^\]]*\]", "asks for a call"),
    (r"<\s*/?\s*(important|system|instructions?)\b|<!--", "hidden markup"),
    (r"\b(ignore|disregard)\b.{0,40}\b(instructions?|previous|above|rules?)\b", "overrides instructions"),
    (r"\b(do not|don't|never)\s+(tell|mention|inform|show|reveal)\b", "asks for secrecy"),
    (r"\b(before|after)\s+(using|calling|any|every|each)\b", "orders other steps"),
    (r"\b(you|the assistant|the model|the ai)\s+(must|should|have to|need to)\b", "gives the model orders"),
    (r"\b(password|passphrase|secret|api[ _-]?key|token|credential)s?\b", "mentions secrets"),
]


def flags(description: str) -> list[str]:
    """What in a tool description looks like an instruction to the model, each with the text it matched."""
    found = [f"{why}: {match.group(0)[:60]!r}" for pattern, why in INSTRUCTION_LIKE
             for match in [re.search(pattern, description or "", re.IGNORECASE | re.DOTALL)] if match]
    if visible(description) != (description or ""):
        found.append("control or invisible characters")
    return found


def course_server_command(store, faults: bool = False) -> list[str]:
    """The command that serves the course's tools on the notes store in folder `store`."""
    return [sys.executable, "-m", "agentkit.mcp_server", "--store", str(store), *(["--faults"] if faults else [])]


class MCPTools:
    """A running MCP server and its tools; call them from any thread, as plain functions."""

    def __init__(self, command: list[str], *, call_timeout: float = 5.0, start_timeout: float = 30.0,
                 env: dict | None = None) -> None:
        self.command, self.call_timeout, self.start_timeout = list(command), call_timeout, start_timeout
        # The SDK passes the child only a few safe variables (PATH, HOME, ...). Add the folder this
        # agentkit is imported from, so a course server serves this very package.
        here = str(Path(__file__).resolve().parent.parent)
        self.env = {"PYTHONPATH": os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])} | (env or {})
        self.log_path = Path(tempfile.mkdtemp(prefix="agentkit-mcp-")) / "server.log"
        self.tools: list = []  # the server's tool list (mcp Tool objects), as last listed
        self.pid: int | None = None  # the process we started (never what the server says about itself)
        self.problem = ""  # why the server is not running, once it is not
        self.dropped: dict[str, str] = {}  # tools the last executor() left out, and why
        self._loop = self._session = self._stop = self._link = None
        self._log_tail = ""  # the log's end, kept when close() removes the log
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    # --- life cycle ------------------------------------------------------------------

    def start(self, wait: bool = True) -> "MCPTools":
        """Start the server; with `wait`, wait for its tool list (see `wait`). Without, return at once:
        the first use waits (a Python server takes seconds to import the SDK: start it early)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mcp-client", daemon=True)
            self._thread.start()
            atexit.register(self.close)
        return self.wait() if wait else self

    def wait(self) -> "MCPTools":
        """Wait for the handshake and the tool list; raises RuntimeError with the log's tail if it fails."""
        if self._thread is None:
            raise RuntimeError("the MCP server was never started: call start() first")
        if not self._ready.wait(self.start_timeout):
            self.problem = f"it did not start within {self.start_timeout:g} s"
            self.close()
        if self._session is None:
            raise RuntimeError(f"The MCP server {' '.join(self.command)} is not available: {self.problem}\n"
                               f"Its log ({self.log_path}) ends with:\n{self.log_tail()}")
        return self

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as e:  # noqa: BLE001 - reported through .problem, never raised in a thread
            while isinstance(e, BaseExceptionGroup) and e.exceptions:  # the task group's wrapping
                e = e.exceptions[0]
            self.problem = self.problem or f"{type(e).__name__}: {e}"
        finally:
            self._session = None
            self._ready.set()

    async def _serve(self) -> None:
        from mcp import ClientSession

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        with ServerLog(self.log_path) as log:  # the server's stderr, never the notebook's
            async with stdio_transport(self.command, self.env, log) as link:
                self._link, self.pid = link, link.pid
                async with ClientSession(link.read, link.write, read_timeout_seconds=self.start_timeout) as session:
                    await session.initialize()
                    self.tools = (await session.list_tools()).tools
                    self._session = session
                    self._ready.set()
                    await self._stop.wait()

    @property
    def running(self) -> bool:
        return self._session is not None and self._thread is not None and self._thread.is_alive()

    def close(self, kill: bool = False) -> None:
        """Stop the server and what it started (at once with `kill`, for a hung one); remove its log. Safe twice."""
        if kill and self._link is not None:
            self._link.grace = 0.0
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass  # the loop has just finished
        if self._thread is not None:
            self._thread.join(timeout=10)  # the transport's shutdown is bounded (about 5 s at worst)
        self._session = None
        if self._thread is None or not self._thread.is_alive():
            self._log_tail = self._log_tail or self.log_tail(20)
            shutil.rmtree(self.log_path.parent, ignore_errors=True)

    def __enter__(self) -> "MCPTools":
        return self if self.running else self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def log_tail(self, lines: int = 8) -> str:
        """The log's last lines, read from its end only (after close(), what it held then)."""
        text = read_tail(self.log_path, lines) if self.log_path.exists() else self._log_tail
        return "\n".join(text.splitlines()[-lines:]) or "(no log)"

    # --- calls ---------------------------------------------------------------------

    def call(self, name: str, text: str, timeout: float | None = None) -> str:
        """Call one tool with {"input": text}; every outcome, good or bad, is a string.

        `timeout` (default `call_timeout`) bounds this call only: a short one for a call expected to hang, so a
        slow machine never turns a quick tool's answer into a timeout."""
        timeout = self.call_timeout if timeout is None else timeout
        if self._thread is not None and not self._ready.is_set():
            self._ready.wait(self.start_timeout)  # started in the background: wait for it here
        if not self.running:
            return f"{ERROR_PREFIX} the MCP server is not running ({self.problem or 'it was closed'}); {name} was not called."
        start = time.perf_counter()
        request = self._session.call_tool(name, {"input": str(text)}, read_timeout_seconds=timeout)
        future = asyncio.run_coroutine_threadsafe(request, self._loop)
        try:
            result = future.result(timeout=timeout + 2)  # the SDK's own timeout comes first
        except Exception as e:  # noqa: BLE001 - every failure becomes an observation
            future.cancel()
            waited = time.perf_counter() - start
            if "timed out" in str(e) or isinstance(e, TimeoutError):
                self.problem = f"{name} did not answer within {timeout:g} s, so the server was stopped"
                self.close(kill=True)
                return f"{ERROR_PREFIX} the MCP server did not answer {name} within {timeout:g} s; " \
                       "it was stopped, and its tools are unavailable for the rest of this run."
            why = self._link.problem if self._link is not None and self._link.problem else f"{type(e).__name__}: {e}"
            self.problem = f"it stopped during a call to {name} ({why})"
            self.close()
            return (f"{ERROR_PREFIX} the MCP server stopped while running {name} (after {waited:.1f} s: "
                    f"{why}); its tools are unavailable for the rest of this run.")
        text_parts = [getattr(block, "text", "") for block in result.content]
        output = "\n".join(part for part in text_parts if part) or "(the tool returned no text)"
        if result.is_error:
            return f"{ERROR_PREFIX} {name} failed on the MCP server: {output}"
        return output

    def refresh(self) -> list:
        """List the server's tools again (a server may change them at any time); the old list if it cannot."""
        if self.running:
            future = asyncio.run_coroutine_threadsafe(self._session.list_tools(), self._loop)
            try:
                self.tools = future.result(timeout=self.call_timeout + 2).tools
            except Exception:  # noqa: BLE001 - a server that cannot list keeps the list it gave
                future.cancel()
        return self.tools

    def review(self, names=None) -> str:
        """What a person reads before approving tools (listed again): each one's effect, flags, whole description."""
        blocks = []
        for tool in self.wait().refresh():
            if names is None or tool.name in names:
                open_world = " (open world)" if open_world_of(tool.annotations) else ""
                found = flags(tool.description or "")
                blocks.append(f"{visible(tool.name, 60)}: {effect_of(tool.annotations)}{open_world}, "
                              f"fingerprint {fingerprint(tool)[:12]}\n"
                              + "".join(f"  FLAG {flag}\n" for flag in found)
                              + f"  description: {visible(tool.description or '', 2000)}")
        return "\n".join(blocks)

    def pin(self, names=None) -> dict[str, str]:
        """The fingerprints of the tools the server lists now (all, or `names`): what a person approved."""
        return {tool.name: fingerprint(tool) for tool in self.wait().refresh() if names is None or tool.name in names}

    def executor(self, names=None, pinned: dict | None = None) -> ToolExecutor:
        """A ToolExecutor whose tools call this server, each with the effect its annotations claim.

        The tools are listed again first. With `pinned` (from `pin()`), a tool not pinned, or changed since,
        is left out; so is a tool whose name the course cannot register. `.dropped` says why."""
        self.wait()
        tools, self.dropped = ToolExecutor(), {}
        for tool in self.refresh():
            if names is not None and tool.name not in names:
                continue
            if pinned is not None and tool.name not in pinned:
                self.dropped[tool.name] = "not pinned: nobody approved this tool"
                continue
            if pinned is not None and pinned[tool.name] != fingerprint(tool):
                self.dropped[tool.name] = ("changed since it was pinned (description, schema or annotations): "
                                           f"now {visible(tool.description or '', 300)}")
                continue
            try:
                tools.register(tool.name, lambda text, name=tool.name: self.call(name, text), tool.description or "",
                               effect=effect_of(tool.annotations), open_world=open_world_of(tool.annotations))
            except (ValueError, TypeError) as e:
                self.dropped[tool.name] = str(e)
        return tools


def _bench(calls: int = 200) -> None:
    """Per-call cost of Calculate in this process against the same tool over MCP (stdio)."""
    from .tools import calculator

    expression = "(2024 - 1955) * 365"
    with MCPTools(course_server_command(tempfile.mkdtemp())) as server:
        server.call("Calculate", expression)  # the first call warms both sides up
        for name, call in [("in process", lambda: calculator(expression)),
                           ("over MCP (stdio)", lambda: server.call("Calculate", expression))]:
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                call()
                times.append(time.perf_counter() - start)
            times.sort()
            print(f"{name:17} median {times[len(times) // 2] * 1e3:8.3f} ms, "
                  f"p90 {times[int(len(times) * 0.9)] * 1e3:8.3f} ms per call ({calls} calls)")


if __name__ == "__main__":
    _bench(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
