"""Record any LLM's calls to a cassette (the format: `agentkit.cassette`).

`Recorder(llm, path)` wraps any LLM (`think`, and `act` when the LLM has it). Each call goes through
to the wrapped LLM and, once it has answered, becomes one JSON line of the cassette. A call that
raised writes nothing. A Recorder starts a new cassette, and refuses one that already holds calls
(`append=True` adds to it). Usage comes from the wrapped LLM's own ledger entry for that very call
(found by its reply, so calls of other threads sharing the client cannot swap), else it is counted
locally. When the wrapped LLM sent something else than it was given (a completion-style client
renders the messages as one text), that text is kept as "sent" and is what the ledgers show.
`name=` labels the calls of one of several LLMs on one cassette (it becomes part of the request);
`stamp=` writes a first line {"stamp": {...}} (`stamp_of`: which model, on which server, when).
"""
from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from . import tokens
from .cassette import record_command, request_of
from .protocol import AssistantTurn, CallRecord, as_messages, ledger


class Recorder:
    """Any LLM, with every call appended to a JSONL cassette."""

    def __init__(self, llm, path, *, append: bool = False, name: str = "", stamp: dict | None = None) -> None:
        self.llm, self.path, self.name = llm, Path(path), name
        self.model = getattr(llm, "model", "") or type(llm).__name__
        self.calls: list[CallRecord] = []
        self._lock = threading.Lock()
        self._claimed: dict[int, CallRecord] = {}  # the wrapped ledger's entries already matched to a call, by id
        self.path.parent.mkdir(parents=True, exist_ok=True)
        held = self.path.is_file() and self.path.read_text(encoding="utf-8").strip()
        if held and not append:
            raise FileExistsError(
                f"The cassette {self.path} is not empty: a new Recorder would erase what it holds. "
                f"Pass append=True to add to it, or delete the file to record a new one.")
        if not held:
            self.path.write_text(json.dumps({"stamp": stamp}, ensure_ascii=False) + "\n" if stamp else "",
                                 encoding="utf-8")

    def think(self, messages, temperature: float = 0, grammar: str = "") -> str:
        messages = as_messages(messages)
        seen, start = len(ledger(self.llm)), time.perf_counter()
        # Without a grammar, the wrapped LLM is called as any LLM is (some take no grammar keyword).
        reply = self.llm.think(messages, temperature, grammar=grammar) if grammar else self.llm.think(messages, temperature)
        request = request_of(messages, temperature=temperature, name=self.name, grammar=grammar)
        self._keep(request, AssistantTurn(reply), start, seen)
        return reply

    def act(self, messages, tools, temperature: float = 0, tool_choice=None) -> AssistantTurn:
        if not callable(getattr(self.llm, "act", None)):
            raise TypeError(f"{type(self.llm).__name__} has no act(): it cannot call tools natively")
        messages = as_messages(messages)
        seen, start = len(ledger(self.llm)), time.perf_counter()
        turn = self.llm.act(messages, tools, temperature, tool_choice=tool_choice)
        self._keep(request_of(messages, tools, tool_choice, temperature, self.name), turn, start, seen)
        return turn

    def _own_record(self, seen: int, turn: AssistantTurn):
        """The wrapped LLM's ledger entry for this call: an unclaimed new one with this very reply."""
        inner = ledger(self.llm)
        fresh = inner[seen:] if len(inner) >= seen else inner  # the ledger may have been reset meanwhile
        mine = [r for r in fresh if id(r) not in self._claimed and r.reply == turn.content
                and list(r.tool_calls) == list(turn.tool_calls)]
        # Two calls with equal replies: prefer the entry holding this very reply object.
        record = next((r for r in mine if r.reply is turn.content), mine[0] if mine else None)
        if record is not None:
            self._claimed[id(record)] = record  # held, so its id cannot be reused by a later entry
        return record

    def _keep(self, request: dict, turn: AssistantTurn, start: float, seen: int) -> None:
        latency = time.perf_counter() - start
        with self._lock:
            record = self._own_record(seen, turn)
            if record is not None:
                usage = {"prompt_tokens": record.prompt_tokens, "completion_tokens": record.completion_tokens,
                         "cached_tokens": record.cached_tokens}
            else:
                usage = {"prompt_tokens": tokens.count_messages(request["messages"]),
                         "completion_tokens": tokens.count_tokens(turn.as_text()), "cached_tokens": 0}
            line = {"request": request, "reply": turn.content, "tool_calls": [asdict(c) for c in turn.tool_calls],
                    "usage": usage, "latency_s": round(latency, 4), "model": self.model}
            sent = record.messages if record is not None and record.messages != request["messages"] else None
            if sent is not None:
                line["sent"] = sent
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
            self.calls.append(CallRecord(sent or request["messages"], turn.content,
                                         temperature=request["temperature"], latency_s=latency, model=self.model,
                                         tool_calls=list(turn.tool_calls), started_s=start,
                                         grammar=request.get("grammar", ""), **usage))

    def reset(self) -> None:
        self.calls.clear()


def stamp_of(llm, notebook: str, mode: str) -> dict:
    """Which model, served by what, recorded when: the first line of a notebook's cassette."""
    from importlib import metadata
    from urllib.parse import urlparse

    model = getattr(llm, "model", "") or type(llm).__name__
    base_url = getattr(llm, "base_url", None) or ""
    local = getattr(sys.modules.get("agentkit.local"), "_shared", None)  # the process's llama.cpp server, if any
    if mode == "local" or (local is not None and local.running and base_url == local.base_url):
        try:
            version = metadata.version("xllamacpp")
        except metadata.PackageNotFoundError:
            version = "?"
        cap = f", replies capped at {local.max_tokens} tokens" if local is not None else ""
        server = f"llama.cpp (xllamacpp {version}){cap}"
    else:  # the host only: never the full URL, never the key
        server = urlparse(base_url).hostname or ("api.openai.com" if mode == "real" else type(llm).__name__)
    return {"notebook": notebook, "model": model, "server": server,
            "recorded": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "command": record_command(notebook)}
