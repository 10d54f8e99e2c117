"""Failure injection for tools: make a registered tool fail on purpose, and watch the agent cope."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable


class FlakyTool:
    """A tool with one disease: inputs containing `trigger` raise, the first `failures` times.

    `failures=None` means always (a permanent failure). Wrap a tool of a ToolExecutor
    with `inject_failure`, so every injected failure shows up in the executor's log.
    """

    def __init__(self, func: Callable[[str], str], trigger: str, failures: int | None = 1):
        self.func, self.trigger, self.failures = func, trigger, failures
        self.failed = 0

    def __call__(self, argument: str) -> str:
        sick = self.failures is None or self.failed < self.failures
        if sick and self.trigger.lower() in str(argument).lower():
            self.failed += 1
            raise ConnectionError(f"service unavailable (injected failure #{self.failed})")
        return self.func(argument)


def inject_failure(tools, tool_name: str, trigger: str, failures: int | None = 1) -> FlakyTool:
    """Replace a registered tool by a FlakyTool around it, keeping its effect and every other field; returns it."""
    tool = tools.tools[tool_name]
    flaky = FlakyTool(tool.func, trigger, failures)
    # Not register(): its defaults would make a delete tool "read". Like register(), it moves the tool to the
    # end of the list, the order prompts show tools in (chapter 04's recorded prompts hold that order).
    del tools.tools[tool.name]
    tools.tools[tool.name] = replace(tool, func=flaky)
    return flaky
