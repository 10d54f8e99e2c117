"""The course's tools as an MCP server over stdio (the official `mcp` SDK).

    python -m agentkit.mcp_server --store FOLDER [--faults]

serves Search and Calculate (chapter 01) and the world's tools (agentkit.world) on a store in
FOLDER (created with the sample notes if it holds none). Each tool takes one string, `input`, and
returns text. Its effect becomes MCP tool annotations, which a client reads as hints:

| effect | readOnlyHint | destructiveHint | openWorldHint |
|--------|--------------|-----------------|---------------|
| read   | true         | -               | false (WebSearch: true) |
| write  | false        | false           | false         |
| delete | false        | true            | false         |
| send   | false        | false           | true          |

`--faults` adds three tools that misbehave on purpose, to watch a client cope: Fail raises (the
client gets an error result), Hang never answers, Crash ends the server process. All three claim
readOnlyHint: true, which a client cannot check: annotations are the server's word.
Its log (stderr) is plain text, one line per record and a plain traceback per failure: the SDK's own
handler draws each traceback in boxes (rich), which takes seconds a failure and reads badly in a log file.
Any MCP client can start it, e.g. the MCP Inspector: `npx @modelcontextprotocol/inspector python -m agentkit.mcp_server --store /tmp/notes`.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from .tools import calculator, search
from .world import SAMPLE_NOTES, World, world_executor

HINTS = {
    "read": {"read_only_hint": True, "open_world_hint": False},
    "write": {"read_only_hint": False, "destructive_hint": False, "open_world_hint": False},
    "delete": {"read_only_hint": False, "destructive_hint": True, "open_world_hint": False},
    "send": {"read_only_hint": False, "destructive_hint": False, "open_world_hint": True},
}


def _one_string(func):
    def tool(input: str) -> str:  # noqa: A002 - the field name every course tool schema uses
        return func(input)

    return tool


def _fail(input: str) -> str:  # noqa: A002
    raise RuntimeError(f"the tool broke on {input!r}")


def _hang(input: str) -> str:  # noqa: A002
    time.sleep(3600)
    return "too late"


def _crash(input: str) -> str:  # noqa: A002
    os._exit(3)


def build_server(world: World, faults: bool = False, descriptions: dict | None = None, name: str = "agentkit-tools"):
    """An MCPServer with the course's tools on `world`, annotated with their effects (`descriptions`
    replaces some tools' descriptions: agentkit.mcp_poisoned's way in)."""
    from mcp.server import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer(name, instructions="The agent course's tools.")
    tools = world_executor(world, descriptions=descriptions)
    tools.register("Search", search, "look up a person, place or fact in the course knowledge base")
    tools.register("Calculate", calculator, "evaluate arithmetic such as (2024 - 1955) * 365")
    for tool in tools.tools.values():
        hints = dict(HINTS[tool.effect])
        if tool.open_world:
            hints["open_world_hint"] = True  # WebSearch: read-only for the store, yet the query leaves the machine
        server.add_tool(_one_string(tool.func), name=tool.name, description=tool.description,
                        annotations=ToolAnnotations(**hints), structured_output=False)
    if faults:
        for name, func, text in [("Fail", _fail, "always raises an exception"),
                                 ("Hang", _hang, "never answers"), ("Crash", _crash, "ends the server process")]:
            server.add_tool(func, name=name, description=text,
                            annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    return server


def plain_logging() -> None:
    """Log to stderr as plain lines, before the SDK would install its rich handler (it does not replace ours)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Serve the course's tools over MCP (stdio).")
    parser.add_argument("--store", required=True, help="folder of the notes store (created if missing)")
    parser.add_argument("--faults", action="store_true", help="add the Fail, Hang and Crash tools")
    args = parser.parse_args(argv)
    plain_logging()
    fresh = not (Path(args.store) / "world.sqlite").exists()  # a new store starts with the sample notes
    world = World(args.store, SAMPLE_NOTES if fresh else None)
    build_server(world, args.faults).run("stdio")


if __name__ == "__main__":
    main()
