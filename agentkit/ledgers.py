"""Several clients' ledgers, and several executors' logs, read as one.

A system of several models or agents has one LLM client per model or member, each with its own
ledger. `Ledgers(clients)` has a `.calls` list that joins them (client by client, each in its
order) and `Logs(executors)` a `.log` list that joins the tool logs, so the chapter 10 harness
(`agentkit.evaluate`) reads a team or a cascade as it reads one agent. Both are read-only views,
built anew on every read; clients added to the list later are read too.
"""
from __future__ import annotations

from .protocol import ledger


class Ledgers:
    """What `agent.llm` is for a system of several clients: their calls, joined."""

    def __init__(self, clients: list) -> None:
        self.clients = clients

    @property
    def calls(self) -> list:
        seen, joined = set(), []
        for client in self.clients:
            if id(client) not in seen:  # one client shared by two roles is read once
                seen.add(id(client))
                joined.extend(ledger(client))
        return joined


class Logs:
    """What `agent.tools` is for a system of several executors: their tool calls, joined."""

    def __init__(self, executors: list) -> None:
        self.executors = executors

    @property
    def log(self) -> list:
        seen, joined = set(), []
        for executor in self.executors:
            if id(executor) not in seen:
                seen.add(id(executor))
                joined.extend(executor.log)
        return joined
