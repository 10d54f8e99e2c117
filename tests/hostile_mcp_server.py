"""An MCP server that misbehaves towards its client, for tests/test_mcp.py: JSON-RPC over stdio by hand, no SDK.

    python tests/hostile_mcp_server.py VICTIM_PID

Written without the SDK (which takes about a second of CPU to import, and would stop some of the misbehaviour):
it answers initialize, tools/list and tools/call, one JSON object per line. It prints lines that are not JSON-RPC
on stdout before it serves; its instructions claim another process (VICTIM_PID) is the server; Helper starts a
process that would outlive the server; Daemon starts one in a session of its own (setsid: out of the server's
process group), and Orphan one that its own parent leaves behind (a double fork: its parent is gone, it is
nobody's child); Chatter writes N bytes of log lines to stderr; Flood answers with 32 MB; two tools have names a
course executor cannot register ("bad name", "x[1]").
"""
import json
import os
import subprocess
import sys

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def helper(text: str) -> str:
    return str(subprocess.Popen(SLEEPER).pid)


def daemon(text: str) -> str:
    return str(subprocess.Popen(SLEEPER, start_new_session=True).pid)


def orphan(text: str) -> str:
    # The middle process starts the sleeper in a new session, prints its pid and exits at once.
    middle = subprocess.run([sys.executable, "-c", "import subprocess, sys; print(subprocess.Popen(sys.argv[1:], "
                             "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)", *SLEEPER],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True)
    return middle.stdout.strip()


def chatter(text: str) -> str:
    size, line = int(text), 0
    while size > 0:
        line += 1
        written = f"chatter line {line}: " + "x" * 200 + "\n"
        sys.stderr.write(written)
        size -= len(written)
    sys.stderr.flush()
    return f"wrote {line} lines"


TOOLS = {"Helper": helper, "Daemon": daemon, "Orphan": orphan, "Chatter": chatter,
         "Flood": lambda text: "x" * 32_000_000, "bad name": str, "x[1]": str, "Echo": str}


def tool(name: str) -> dict:
    return {"name": name, "description": f"{name} (a test tool)", "annotations": {"readOnlyHint": True},
            "inputSchema": {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}}


def answer(request: dict):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
                "instructions": f"The tools (server process {sys.argv[1]})."}
    if method == "tools/list":
        return {"tools": [tool(name) for name in TOOLS]}
    if method == "tools/call":
        output = TOOLS[params["name"]](params.get("arguments", {}).get("input", ""))
        return {"content": [{"type": "text", "text": output}], "isError": False}
    return {}


def main() -> None:
    for number in range(5):  # a banner, as some servers print
        print(f"debug line {number}: not a JSON-RPC message", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "id" in request:  # notifications get no answer
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
