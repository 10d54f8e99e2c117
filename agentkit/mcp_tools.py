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
"send", else "write". Annotations are the server's own claims, not checked facts.
`python -m agentkit.mcp_tools [N]` measures a call in process against the same call over MCP.
`close()` (also on exit of a `with` block, and at interpreter exit) stops the child: the SDK closes
its stdin, then terminates it; a server whose process id we know is killed at once if it is hung.
"""
from __future__ import annotations

import asyncio
import atexit
import os
import re
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from .tools import ERROR_PREFIX, ToolExecutor


def effect_of(annotations) -> str:
    """The course effect a tool's MCP annotations claim (missing hints: the protocol's defaults)."""
    if annotations is not None and annotations.read_only_hint:
        return "read"
    if annotations is None or annotations.destructive_hint is not False:
        return "delete"
    return "send" if annotations.open_world_hint else "write"


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
        self.tools: list = []  # the server's tool list (mcp Tool objects)
        self.pid: int | None = None
        self.problem = ""  # why the server is not running, once it is not
        self._loop = self._session = self._stop = None
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
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env)
        with self.log_path.open("a", encoding="utf-8") as log:  # the server's stderr, never the notebook's
            async with stdio_client(params, errlog=log) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=self.start_timeout) as session:
                    hello = await session.initialize()
                    found = re.search(r"server process (\d+)", hello.instructions or "")
                    self.pid = int(found.group(1)) if found else None
                    self.tools = (await session.list_tools()).tools
                    self._session = session
                    self._ready.set()
                    await self._stop.wait()

    @property
    def running(self) -> bool:
        return self._session is not None and self._thread is not None and self._thread.is_alive()

    def close(self, kill: bool = False) -> None:
        """Stop the server (kill it at once with `kill`, for a server that hangs); safe to call twice."""
        if kill and self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except OSError:
                pass  # already gone
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass  # the loop has just finished
        if self._thread is not None:
            self._thread.join(timeout=10)  # the SDK's own shutdown is bounded (about 4.5 s at worst)
        self._session = None

    def __enter__(self) -> "MCPTools":
        return self if self.running else self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def log_tail(self, lines: int = 8) -> str:
        try:
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # --- calls ---------------------------------------------------------------------

    def call(self, name: str, text: str) -> str:
        """Call one tool with {"input": text}; every outcome, good or bad, is a string."""
        if self._thread is not None and not self._ready.is_set():
            self._ready.wait(self.start_timeout)  # started in the background: wait for it here
        if not self.running:
            return f"{ERROR_PREFIX} the MCP server is not running ({self.problem or 'it was closed'}); {name} was not called."
        start = time.perf_counter()
        request = self._session.call_tool(name, {"input": str(text)}, read_timeout_seconds=self.call_timeout)
        future = asyncio.run_coroutine_threadsafe(request, self._loop)
        try:
            result = future.result(timeout=self.call_timeout + 2)  # the SDK's own timeout comes first
        except Exception as e:  # noqa: BLE001 - every failure becomes an observation
            future.cancel()
            waited = time.perf_counter() - start
            if "timed out" in str(e) or isinstance(e, TimeoutError):
                self.problem = f"{name} did not answer within {self.call_timeout:g} s, so the server was stopped"
                self.close(kill=True)
                return f"{ERROR_PREFIX} the MCP server did not answer {name} within {self.call_timeout:g} s; " \
                       "it was stopped, and its tools are unavailable for the rest of this run."
            self.problem = f"it stopped during a call to {name}"
            self.close()
            return (f"{ERROR_PREFIX} the MCP server stopped while running {name} (after {waited:.1f} s: "
                    f"{type(e).__name__}: {e}); its tools are unavailable for the rest of this run.")
        text_parts = [getattr(block, "text", "") for block in result.content]
        output = "\n".join(part for part in text_parts if part) or "(the tool returned no text)"
        if result.is_error:
            return f"{ERROR_PREFIX} {name} failed on the MCP server: {output}"
        return output

    def executor(self, names=None) -> ToolExecutor:
        """A ToolExecutor whose tools call this server, each with the effect its annotations claim."""
        self.wait()
        tools = ToolExecutor()
        for tool in self.tools:
            if names is None or tool.name in names:
                tools.register(tool.name, lambda text, name=tool.name: self.call(name, text),
                               tool.description or "", effect=effect_of(tool.annotations))
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
