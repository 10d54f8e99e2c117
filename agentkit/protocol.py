"""What an LLM is to the course: the think() protocol, the call ledger, and the shape of replies.

Any object with `think(messages, temperature=0) -> str` is an LLM. Every client built on
`LedgerLLM` keeps a ledger, `.calls`: one `CallRecord` per call. Plots, cost tables and tests
are built from it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Union


class LLM(Protocol):
    def think(self, messages: list[dict], temperature: float = 0) -> str: ...


_default_factory: Optional[Callable[[], "LLM"]] = None


def use_as_default(factory: Callable[[], "LLM"]) -> None:
    """Register what an agent gets when it is given no LLM (agentkit registers its AP_MODE switch)."""
    global _default_factory
    _default_factory = factory


def default_llm() -> "LLM":
    """A fresh LLM for an agent that was given none: the registered factory's choice."""
    if _default_factory is None:
        raise RuntimeError("No default LLM is registered: pass an LLM to the agent, or `import agentkit`, "
                           "which registers get_llm (AP_MODE).")
    return _default_factory()


class LLMError(RuntimeError):
    """A model call failed for good (after the SDK's retries)."""


class MissingSettingError(RuntimeError):
    """A required setting such as LLM_API_KEY is absent."""


@dataclass
class CallRecord:
    """One LLM call: what was sent, what came back, and what it cost."""

    messages: list[dict]
    reply: str
    prompt_tokens: int
    completion_tokens: int
    temperature: float
    latency_s: float
    model: str = ""
    cached_tokens: int = 0
    note: str = ""
    tool_calls: list = field(default_factory=list)  # FunctionCall entries, for a request with tools
    grammar: str = ""  # the GBNF grammar the reply was constrained to (agentkit.grammar), if any
    # time.perf_counter() when the call began: orders a run's calls among its tool calls (agentkit.otel's spans)
    started_s: float = field(default=0.0, compare=False, repr=False)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def prompt(self) -> str:
        return prompt_text(self.messages)


def as_messages(messages: Union[str, list[dict]]) -> list[dict]:
    """Accept a bare string as a single user message; copy lists so the ledger keeps what was sent."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def prompt_text(messages: list[dict]) -> str:
    """The text of a prompt, as one string (what content-based rules match against)."""
    return "\n\n".join(_message_text(m) for m in messages)


def _message_text(message: dict) -> str:
    content = message.get("content", "")
    if isinstance(content, str) and not message.get("tool_calls"):
        return content  # the common case, on every stand-in call
    # An assistant turn that called tools has no content; its calls are its text.
    calls = [f"{c['function']['name']}({c['function']['arguments']})" for c in message.get("tool_calls") or []]
    return "\n".join([*([] if content is None else [str(content)]), *calls])


class LedgerLLM:
    """Base class: times each call and appends a CallRecord to `.calls`."""

    model = ""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []

    def think(self, messages, temperature: float = 0, grammar: str = "") -> str:
        """The reply to `messages`; with `grammar` (GBNF), a reply the server's sampler kept to it."""
        messages = as_messages(messages)
        start = time.perf_counter()
        if grammar:
            reply, usage = self._complete_constrained(messages, temperature, grammar)
            usage = {**usage, "grammar": grammar}
        else:
            reply, usage = self._complete(messages, temperature)
        if not isinstance(reply, str):  # the contract: think returns text, whatever a client or script produced
            raise LLMError(f"{type(self).__name__} replied with a {type(reply).__name__} ({reply!r:.60}), not text")
        self.calls.append(
            CallRecord(
                messages=messages,
                reply=reply,
                temperature=temperature,
                latency_s=time.perf_counter() - start,
                model=self.model,
                started_s=start,
                **usage,
            )
        )
        return reply

    def _complete(self, messages: list[dict], temperature: float) -> tuple[str, dict]:
        raise NotImplementedError

    def _complete_constrained(self, messages: list[dict], temperature: float, grammar: str) -> tuple[str, dict]:
        raise NotImplementedError(
            f"{type(self).__name__} cannot keep its replies to a grammar; llama.cpp's server can "
            "(OpenAIChatLLM pointed at it, e.g. get_llm('local')).")

    def act(self, messages, tools: list[dict], temperature: float = 0, tool_choice=None) -> "AssistantTurn":
        """One call that offers `tools` (chat-completions schemas); the reply may ask for tool calls."""
        messages = as_messages(messages)
        start = time.perf_counter()
        turn, usage = self._complete_with_tools(messages, tools, temperature, tool_choice)
        self.calls.append(
            CallRecord(messages=messages, reply=turn.content, temperature=temperature,
                       latency_s=time.perf_counter() - start, model=self.model,
                       tool_calls=list(turn.tool_calls), started_s=start, **usage)
        )
        return turn

    def _complete_with_tools(self, messages, tools, temperature, tool_choice) -> tuple["AssistantTurn", dict]:
        raise NotImplementedError(
            f"{type(self).__name__} cannot call tools natively; use the text protocol (ReActAgent) with it."
        )

    def reset(self) -> None:
        """Forget the ledger (the client itself is stateless)."""
        self.calls.clear()


# --- native tool calls: what a reply to a request with `tools` carries ------------------


@dataclass
class FunctionCall:
    """One tool call the model asked for: the server's id, the tool's name, its arguments as sent."""

    id: str
    name: str
    arguments: str  # the model's own text, meant to be a JSON object; nothing checked yet


@dataclass
class AssistantTurn:
    """A reply to a request with tools: text (may be empty) and the tool calls it asks for."""

    content: str = ""
    tool_calls: list = field(default_factory=list)

    def as_message(self) -> dict:
        """The assistant message to re-send in the history (the chat API's shape)."""
        message: dict = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message

    def as_text(self) -> str:
        """One readable line per part: the text, then each call as Name(arguments)."""
        return _message_text(self.as_message())


def ledger(llm) -> list:
    """The call ledger of `llm`, or an empty list for a bare think() object that keeps none."""
    calls = getattr(llm, "calls", None)
    return calls if isinstance(calls, list) else []


def ledger_totals(calls: list[CallRecord]) -> dict:
    """Calls and tokens of a ledger, summed."""
    return {
        "calls": len(calls),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "total_tokens": sum(c.total_tokens for c in calls),
    }
