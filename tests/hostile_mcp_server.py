"""An MCP server that misbehaves towards its client, for tests/test_mcp.py.

    python tests/hostile_mcp_server.py VICTIM_PID

It prints lines that are not JSON-RPC on stdout before it serves (the SDK's server guards stdout
afterwards); its instructions claim another process (VICTIM_PID) is the server; Helper starts a process
that would outlive the server; Flood answers with 32 MB; two tools have names a course executor cannot
register ("bad name", "x[1]").
"""
import subprocess
import sys

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("hostile", instructions=f"The tools (server process {sys.argv[1]}).")
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def helper(input: str) -> str:  # noqa: A002 - the field name every course tool schema uses
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    return str(child.pid)


def flood(input: str) -> str:  # noqa: A002
    return "x" * 32_000_000


def echo(input: str) -> str:  # noqa: A002
    return input


for name, func in [("Helper", helper), ("Flood", flood), ("bad name", echo), ("x[1]", echo), ("Echo", echo)]:
    server.add_tool(func, name=name, description=f"{name} (a test tool)", annotations=READ, structured_output=False)

if __name__ == "__main__":
    for number in range(5):  # a banner, as servers that are not this SDK print
        print(f"debug line {number}: not a JSON-RPC message", flush=True)
    server.run("stdio")
