"""The bridge to the frameworks people use: the course's agents rebuilt in LangGraph and smolagents.

Each framework is driven by any course LLM (`think(messages) -> str`, the stand-in by default) through
an adapter of the kind the framework's own tests use: a LangChain chat model (`BaseChatModel`), a
smolagents `Model`. The adapter is the model's chat template and tool-call parser in one, as a server
such as llama.cpp has for an open model: it writes the framework's history (its system prompt, the
task, each tool call and each tool result, in the framework's own words) as the course's text protocol
(`Thought / Action / Observation`), asks the LLM, and reads the reply back with `agentkit.parsing`:
* `Action: Tool[input]` becomes a tool call with one string argument, `input`, and an id made from
  its content and its place in the history (the same run gives the same ids); the call, id included,
  is written into that reply's ledger entry (`CallRecord.tool_calls`), as a native client records it;
* `Action: Finish[answer]` becomes the framework's way to answer (LangChain: a reply with no tool call;
  smolagents: its `final_answer` tool);
* a reply with no action becomes a reply with no tool call, text only: what happens next is the
  framework's own choice (the table of chapter 16 says which).
What the model writes is handed over as a server's parser would hand it over (`clean`, `tool_name`): a reply
that is not text counts as an empty one; a lone surrogate, which no UTF-8 text can hold, becomes U+FFFD; a
tool name equal to a bound tool's up to case takes the tool's spelling (the course's parser ignores case);
any other name longer than MAX_TOOL_NAME characters is cut, so a 50,000-character name cannot ride into the
framework's messages, logs and traces.
The tools are the course's own: each framework tool runs `ToolExecutor.run`, so the tool log, like the
LLM ledger, is the course's, and `agentkit.otel` draws the three runs' traces from the same ledgers.

The frameworks are an optional install (`pip install -e ".[bridge]"`, requirements-bridge.txt); agentkit
imports without them, and `missing()` names what is not installed.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass

from ..parsing import FINISH, Parsed, parse_reply
from ..protocol import FunctionCall, ledger
from ..react import Step

# What requirements-bridge.txt pins (the versions the chapter's stored outputs were made with).
# The instrumentors of section 10 are pinned there too, and checked apart (`agentkit.bridge.inside`): OpenInference's
# are not installable on Python 3.15, and the chapter runs without them.
PINS = {"langgraph": "1.2.24", "langchain": "1.5.2", "langchain-core": "1.8.3", "langchain-openai": "1.8.1",
        "smolagents": "1.26.0", "opentelemetry-sdk": "1.45.2", "opentelemetry-semantic-conventions": "0.66b2",
        "opentelemetry-exporter-otlp-proto-http": "1.45.2"}
MODULES = {"langgraph": "langgraph", "langchain": "langchain", "langchain-core": "langchain_core",
           "langchain-openai": "langchain_openai", "smolagents": "smolagents", "opentelemetry-sdk": "opentelemetry.sdk",
           "opentelemetry-semantic-conventions": "opentelemetry.semconv",
           "opentelemetry-exporter-otlp-proto-http": "opentelemetry.exporter.otlp.proto.http"}
INSTALL = 'pip install -e ".[bridge]"   (or: pip install -r requirements-bridge.txt)'
# smolagents' own words when its run hits max_steps and it asks once more for an answer (its final_answer prompt).
SMOLAGENTS_FALLBACK_MARKER = "An agent tried to answer a user query but it got stuck"
# smolagents' CodeAgent's system prompt, and chat_model.CHAT_PROMPT: the stand-in keys on them (scripts/bridge.py).
SMOLAGENTS_CODE_MARKER = "who can solve any task using code blobs"
CHAT_MARKER = "You answer with the tools the request carries"
# Chapter 16's task with a side effect: the checkpoint, then a message to two people (a person approves sending).
RECIPIENTS = ("ana@team.example", "ben@team.example")
SEND_TASK = "Then send the answer to " + " and ".join(RECIPIENTS) + " with SendMessage, one message each."


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def missing() -> list[str]:
    """The bridge's packages that are not installed here (empty when the chapter can run them all)."""
    return [name for name, module in MODULES.items() if not _found(module)]


def versions() -> dict:
    """{package: (installed version or None, pinned version)}."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name, pin in PINS.items():
        try:
            found[name] = (version(name), pin)
        except PackageNotFoundError:
            found[name] = (None, pin)
    return found


# --- the text protocol, for a framework's history ----------------------------------------------


@dataclass
class Turn:
    """One step of a framework's history in the course's terms: what the model said, asked, and got back."""

    thought: str
    tool: str  # "" when the reply asked for no tool
    argument: str
    observation: str


def render(system: str, head: str, turns: list[Turn], tail: str = "") -> list[dict]:
    """The course's text protocol: the system prompt, then the task and every step as ReActAgent writes them."""
    history = [Step(t.thought, t.tool, t.argument, t.observation).as_history() for t in turns]
    return [{"role": "system", "content": system},
            {"role": "user", "content": "\n\n".join([head, *history, *([tail] if tail else [])])}]


MAX_TOOL_NAME = 64  # OpenAI's limit for a function's name; a longer name is no tool's
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(reply) -> str:
    """A reply as text a framework can carry: "" for a reply that is not text, U+FFFD for each lone surrogate."""
    return _SURROGATE.sub("\ufffd", reply) if isinstance(reply, str) else ""


def tool_name(name: str, bound) -> str:
    """The name a tool call carries: the bound tool's spelling when it matches up to case, else `name`, cut."""
    spelling = {str(b).lower(): str(b) for b in bound}.get(name.lower())
    if spelling is not None:
        return spelling
    return name if len(name) <= MAX_TOOL_NAME else name[:MAX_TOOL_NAME] + "..."


def read(reply: str) -> Parsed:
    """What a reply asks for (`agentkit.parsing.parse_reply`; never raises)."""
    return parse_reply(reply)


def call_id(tool: str, argument: str, position: int) -> str:
    """A tool call id from the call's content and its place in the history (never from a counter)."""
    return "call_" + hashlib.sha1(f"{position}|{tool}|{argument}".encode(errors="surrogatepass")).hexdigest()[:12]


def keep_call(llm, before: int, name: str, arguments: dict, id: str) -> None:
    """Write the tool call the framework received into the ledger entry of the call that made it."""
    calls = ledger(llm)
    if len(calls) == before + 1:  # one think() call, as the adapter made it
        calls[-1].tool_calls = [FunctionCall(id, name, json.dumps(arguments))]


def thought_of(text: str) -> str:
    """The thought in a reply's text (its Thought line, or the text itself when it has no labels)."""
    return parse_reply(text).thought if text else ""


__all__ = ["CHAT_MARKER", "FINISH", "INSTALL", "RECIPIENTS", "SEND_TASK", "SMOLAGENTS_CODE_MARKER", "MAX_TOOL_NAME", "PINS", "SMOLAGENTS_FALLBACK_MARKER", "Turn", "call_id", "clean",
           "keep_call", "missing", "read", "render", "thought_of", "tool_name", "versions"]
