"""A cassette: an LLM's recorded calls, one JSON line each, and what identifies a call on it.

Each line of a cassette is one call, as `agentkit.recorder.Recorder` writes it:

    {"request": {"messages": [...], "tools": [...] or null, "tool_choice": ... or null, "temperature": 0.0},
     "reply": "...", "tool_calls": [{"id": ..., "name": ..., "arguments": ...}],
     "usage": {"prompt_tokens": ..., "completion_tokens": ..., "cached_tokens": ...},
     "latency_s": 1.234, "model": "..."}

Only what the call sent and got back: never the key, the base URL or any header. A request may also
carry "llm" (which of several LLMs on one cassette asked) and "grammar" (the GBNF grammar that
constrained the reply); a line may carry "sent" (the text a completion-style client really sent).
A first line {"stamp": {...}} says which model, on which server, when.

`request_of(...)` is what identifies a call; two requests are the same call when their `canonical`
JSON texts are equal. `line_problem(entry)` says what makes a parsed line unusable. Lines end at a
newline only (a reply may hold U+2028): read them with `agentkit.text.json_lines`.
A notebook's cassette ships in data/cassettes (`cassette_path`), recorded by `record_command`.
"""
from __future__ import annotations

import json
from pathlib import Path

from .protocol import as_messages


class CassetteMiss(LookupError):
    """A request the cassette does not hold."""


class CassetteError(ValueError):
    """A cassette line that is not a recorded call; the message names the file and the line."""


def request_of(messages, tools=None, tool_choice=None, temperature: float = 0, name: str = "",
               grammar: str = "") -> dict:
    """What identifies a call on a cassette."""
    request = {"messages": as_messages(messages), "tools": tools, "tool_choice": tool_choice,
               "temperature": float(temperature)}
    if name:
        request["llm"] = name
    if grammar:
        request["grammar"] = grammar
    return request


def canonical(request: dict) -> str:
    """The request as one JSON text, keys sorted: equal texts, same call."""
    return json.dumps(request, sort_keys=True, ensure_ascii=False)


def line_problem(entry) -> str:
    """What makes a parsed cassette line unusable, or "" when it is a stamp or a recorded call."""
    if not isinstance(entry, dict):
        return f"a JSON {type(entry).__name__}, not an object"
    if "stamp" in entry:
        return "" if isinstance(entry["stamp"], dict) else "the stamp is not an object"
    request = entry.get("request")
    if not isinstance(request, dict):
        return "no 'request' object"
    messages = request.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) and isinstance(m.get("role"), str)
                                                 for m in messages):
        return "request.messages is not a list of messages with a role"
    if not isinstance(request.get("temperature", 0), (int, float)):
        return "request.temperature is not a number"
    if request.get("tools") is not None and not isinstance(request["tools"], list):
        return "request.tools is not a list"
    if not isinstance(request.get("grammar", ""), str):
        return "request.grammar is not text"
    if not isinstance(entry.get("reply") or "", str):
        return "reply is not text"
    calls = entry.get("tool_calls") or []
    if not isinstance(calls, list) or not all(
            isinstance(c, dict) and set(c) == {"id", "name", "arguments"} and all(isinstance(v, str) for v in c.values())
            for c in calls):
        return "tool_calls is not a list of {id, name, arguments} with text values"
    usage = entry.get("usage") or {}
    if not isinstance(usage, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                              for v in usage.values()):
        return "usage is not an object of token counts (whole numbers, 0 or more)"
    if "sent" in entry and not (isinstance(entry["sent"], list) and all(isinstance(m, dict) for m in entry["sent"])):
        return "sent is not a list of messages"
    if not isinstance(entry.get("model", ""), str) or not isinstance(entry.get("latency_s", 0), (int, float)):
        return "model is not text or latency_s is not a number"
    return ""


# --- the cassettes the course ships, one per notebook with real-model cells ---------------------


def cassette_path(notebook: str) -> Path:
    """Where the course ships the cassette of one notebook (by its file name without .ipynb)."""
    from .data import DATA_DIR

    return Path(str(DATA_DIR / "cassettes" / f"{notebook}.jsonl"))


def shipped_cassettes() -> list[Path]:
    """Every cassette the course ships, in name order."""
    return sorted(cassette_path("x").parent.glob("*.jsonl"))


def record_command(notebook: str) -> str:
    return f"make record NB=notebooks/{notebook}.ipynb"
