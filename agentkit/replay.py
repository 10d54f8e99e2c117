"""Record any LLM's calls to a cassette, and answer from it later: offline and deterministic.

`Recorder(llm, path)` wraps any LLM (`think`, and `act` when the LLM has it). Each call goes through
to the wrapped LLM and, once it has answered, becomes one JSON line of the cassette:

    {"request": {"messages": [...], "tools": [...] or null, "tool_choice": ... or null, "temperature": 0.0},
     "reply": "...", "tool_calls": [{"id": ..., "name": ..., "arguments": ...}],
     "usage": {"prompt_tokens": ..., "completion_tokens": ..., "cached_tokens": ...},
     "latency_s": 1.234, "model": "..."}

Only what the call sent and got back: never the key, the base URL or any header. A call that
raised writes nothing. A new Recorder starts a new cassette (`append=True` adds to one). Its ledger
`.calls` takes usage from the wrapped LLM's own ledger when it keeps one, else counts locally.

`ReplayLLM(path)` answers `think` and `act` from a cassette by the content of the request: the
same messages, tools, tool_choice and temperature, compared as canonical JSON. The same request
always gets the first reply recorded for it, whatever the order or the number of calls. A request
that is not on the cassette raises `CassetteMiss`, which names the cassette and shows the closest
recorded request (by text similarity) and the lines where the two differ. The replay's ledger carries
the recorded usage and model; its latency is the replay's own, the recorded one is in `note`.
"""
from __future__ import annotations

import difflib
import json
import threading
import time
from dataclasses import asdict
from pathlib import Path

from . import tokens
from .llm import AssistantTurn, CallRecord, FunctionCall, as_messages, ledger, prompt_text


class CassetteMiss(LookupError):
    """A request the cassette does not hold."""


def request_of(messages, tools=None, tool_choice=None, temperature: float = 0) -> dict:
    """What identifies a call on a cassette."""
    return {"messages": as_messages(messages), "tools": tools, "tool_choice": tool_choice,
            "temperature": float(temperature)}


def _canonical(request: dict) -> str:
    return json.dumps(request, sort_keys=True, ensure_ascii=False)


class Recorder:
    """Any LLM, with every call appended to a JSONL cassette."""

    def __init__(self, llm, path, *, append: bool = False) -> None:
        self.llm, self.path = llm, Path(path)
        self.model = getattr(llm, "model", "") or type(llm).__name__
        self.calls: list[CallRecord] = []
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not append:
            self.path.write_text("", encoding="utf-8")

    def think(self, messages, temperature: float = 0) -> str:
        messages = as_messages(messages)
        seen, start = len(ledger(self.llm)), time.perf_counter()
        reply = self.llm.think(messages, temperature)
        self._keep(request_of(messages, temperature=temperature), AssistantTurn(reply), start, seen)
        return reply

    def act(self, messages, tools, temperature: float = 0, tool_choice=None) -> AssistantTurn:
        if not callable(getattr(self.llm, "act", None)):
            raise TypeError(f"{type(self.llm).__name__} has no act(): it cannot call tools natively")
        messages = as_messages(messages)
        seen, start = len(ledger(self.llm)), time.perf_counter()
        turn = self.llm.act(messages, tools, temperature, tool_choice=tool_choice)
        self._keep(request_of(messages, tools, tool_choice, temperature), turn, start, seen)
        return turn

    def _keep(self, request: dict, turn: AssistantTurn, start: float, seen: int) -> None:
        latency = time.perf_counter() - start
        inner = ledger(self.llm)
        record = inner[-1] if len(inner) > seen else None  # the wrapped LLM's own entry for this call
        if record is not None:
            usage = {"prompt_tokens": record.prompt_tokens, "completion_tokens": record.completion_tokens,
                     "cached_tokens": record.cached_tokens}
        else:
            usage = {"prompt_tokens": tokens.count_messages(request["messages"]),
                     "completion_tokens": tokens.count_tokens(turn.as_text()), "cached_tokens": 0}
        line = {"request": request, "reply": turn.content, "tool_calls": [asdict(c) for c in turn.tool_calls],
                "usage": usage, "latency_s": round(latency, 4), "model": self.model}
        with self._lock:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
            self.calls.append(CallRecord(request["messages"], turn.content, temperature=request["temperature"],
                                         latency_s=latency, model=self.model, tool_calls=list(turn.tool_calls),
                                         **usage))


class ReplayLLM:
    """Answers from a cassette by the content of the request; never touches the network."""

    def __init__(self, path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"No cassette at {self.path}: record one with Recorder(llm, {str(self.path)!r}).")
        self.entries: list[dict] = []
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                entry["request"]["messages"]
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{self.path}, line {number}: not a cassette entry ({e})") from None
            self.entries.append(entry)
        self._index: dict[str, dict] = {}
        for entry in self.entries:
            self._index.setdefault(_canonical(entry["request"]), entry)  # the first recording wins
        self.model = self.entries[0].get("model", "") if self.entries else ""
        self.calls: list[CallRecord] = []

    def think(self, messages, temperature: float = 0) -> str:
        return self._answer(request_of(messages, temperature=temperature)).content

    def act(self, messages, tools, temperature: float = 0, tool_choice=None) -> AssistantTurn:
        return self._answer(request_of(messages, tools, tool_choice, temperature))

    def _answer(self, request: dict) -> AssistantTurn:
        start = time.perf_counter()
        entry = self._index.get(_canonical(request))
        if entry is None:
            raise CassetteMiss(self._miss_message(request))
        turn = AssistantTurn(entry.get("reply") or "", [FunctionCall(**c) for c in entry.get("tool_calls") or []])
        usage = entry.get("usage") or {}
        self.calls.append(CallRecord(
            messages=request["messages"], reply=turn.content, prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0), temperature=request["temperature"],
            latency_s=time.perf_counter() - start, model=entry.get("model", ""),
            cached_tokens=usage.get("cached_tokens", 0), tool_calls=list(turn.tool_calls),
            note=f"replayed from {self.path.name} (recorded in {entry.get('latency_s', 0)} s)"))
        return turn

    def _miss_message(self, request: dict) -> str:
        head = f"The request is not on the cassette {self.path} ({len(self.entries)} recorded requests)."
        if not self.entries:
            return f"{head} It is empty: record a run first."
        wanted = _readable(request)
        closest = max(self.entries, key=lambda e: difflib.SequenceMatcher(None, wanted, _readable(e["request"]),
                                                                           autojunk=False).ratio())
        diff = difflib.unified_diff(_readable(closest["request"]).splitlines(), wanted.splitlines(),
                                    "closest recorded request", "this request", n=1, lineterm="")
        shown = list(diff)
        more = f"\n... ({len(shown) - 40} more diff lines)" if len(shown) > 40 else ""
        return (f"{head} Re-record it, or send the recorded request. "
                f"The closest one recorded, and where they differ:\n" + "\n".join(shown[:40]) + more)

    def reset(self) -> None:
        self.calls.clear()


def _readable(request: dict) -> str:
    """A request as text for comparing: each message on its own lines, then the tools offered."""
    tools = [t.get("function", {}).get("name", "?") for t in request.get("tools") or []]
    return "\n".join([
        *(f"[{m.get('role')}] {line}" for m in request["messages"] for line in prompt_text([m]).splitlines() or [""]),
        f"[tools] {', '.join(tools) or '(none)'}   [tool_choice] {request.get('tool_choice')}   "
        f"[temperature] {request.get('temperature')}",
    ])
