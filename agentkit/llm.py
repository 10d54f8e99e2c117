"""LLM clients. Any object with `think(messages, temperature=0) -> str` is an LLM.

Every client here keeps a ledger, `.calls`: one `CallRecord` per call. Plots, cost
tables and tests are built from it.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Union

from . import tokens

VALID_MODES = ("fake", "real", "local")


class LLM(Protocol):
    def think(self, messages: list[dict], temperature: float = 0) -> str: ...


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

    def think(self, messages, temperature: float = 0) -> str:
        messages = as_messages(messages)
        start = time.perf_counter()
        reply, usage = self._complete(messages, temperature)
        self.calls.append(
            CallRecord(
                messages=messages,
                reply=reply,
                temperature=temperature,
                latency_s=time.perf_counter() - start,
                model=self.model,
                **usage,
            )
        )
        return reply

    def _complete(self, messages: list[dict], temperature: float) -> tuple[str, dict]:
        raise NotImplementedError

    def act(self, messages, tools: list[dict], temperature: float = 0, tool_choice=None) -> "AssistantTurn":
        """One call that offers `tools` (chat-completions schemas); the reply may ask for tool calls."""
        messages = as_messages(messages)
        start = time.perf_counter()
        turn, usage = self._complete_with_tools(messages, tools, temperature, tool_choice)
        self.calls.append(
            CallRecord(messages=messages, reply=turn.content, temperature=temperature,
                       latency_s=time.perf_counter() - start, model=self.model,
                       tool_calls=list(turn.tool_calls), **usage)
        )
        return turn

    def _complete_with_tools(self, messages, tools, temperature, tool_choice) -> tuple["AssistantTurn", dict]:
        raise NotImplementedError(
            f"{type(self).__name__} cannot call tools natively; use the text protocol (ReActAgent) with it."
        )

    def reset(self) -> None:
        """Forget the ledger (the client itself is stateless)."""
        self.calls.clear()


# --- the stand-in -------------------------------------------------------------

Matcher = Union[str, "re.Pattern[str]", Callable[[str], bool]]
Reply = Union[str, Callable[[str], str]]

NO_SCRIPT = "[no script for this prompt]"


@dataclass
class Rule:
    """If the prompt matches `when`, answer `reply`.

    `when` is a substring, a compiled regex, or a function of the prompt text;
    `reply` is a string or a function of the prompt text.
    """

    when: Matcher
    reply: Reply
    name: str = ""

    def matches(self, prompt: str) -> bool:
        if isinstance(self.when, str):
            return self.when in prompt
        if isinstance(self.when, re.Pattern):
            return self.when.search(prompt) is not None
        return bool(self.when(prompt))

    def answer(self, prompt: str) -> str:
        return self.reply(prompt) if callable(self.reply) else self.reply


class ScriptedLLM(LedgerLLM):
    """A deterministic stand-in that answers by the content of the prompt.

    Rules are tried in order and the first match answers, so put the rule for the
    most advanced state of a conversation first. It never counts calls: two agents
    can share it, and an extra debug call changes nothing.
    """

    model = "scripted-stand-in"

    def __init__(self, rules: list[Rule] | None = None) -> None:
        super().__init__()
        self.rules: list[Rule] = list(rules or [])

    def add(self, when: Matcher, reply: Reply, name: str = "", first: bool = True) -> Rule:
        """Add a rule; by default it is tried before the existing ones."""
        rule = Rule(when, reply, name)
        self.rules.insert(0 if first else len(self.rules), rule)
        return rule

    def _answer(self, messages) -> tuple:
        """The first matching rule's answer (a str, or an AssistantTurn for a native rule) and a note."""
        prompt = prompt_text(messages)
        for rule in self.rules:
            if rule.matches(prompt):
                return rule.answer(prompt), f"rule: {rule.name or repr(rule.when)}"
        tail = " ".join(prompt.split())[-160:]
        reply = (
            f"{NO_SCRIPT} The stand-in has no rule for a prompt ending in: '{tail}'. "
            "Add one with llm.add(when, reply), or switch to a real model (AP_MODE=real)."
        )
        return reply, "no script"

    def _complete(self, messages, temperature):
        reply, note = self._answer(messages)
        if isinstance(reply, AssistantTurn):
            reply = reply.as_text()
        usage = {
            "prompt_tokens": tokens.count_messages(messages),
            "completion_tokens": tokens.count_tokens(reply),
            "note": note,
        }
        return reply, usage

    def _complete_with_tools(self, messages, tools, temperature, tool_choice):
        answer, note = self._answer(messages)
        turn = answer if isinstance(answer, AssistantTurn) else AssistantTurn(str(answer))
        usage = {
            "prompt_tokens": tokens.count_messages(messages),
            "completion_tokens": tokens.count_tokens(turn.as_text()),
            "note": note,
        }
        return turn, usage


# --- the real client ----------------------------------------------------------


def _setting(name: str) -> str | None:
    """An environment variable, else the value in the nearest .env file, else None.

    A variable set to "" in the environment means unset, and hides the .env value (as in python-dotenv).
    """
    if name in os.environ:
        return os.environ[name] or None
    from dotenv import dotenv_values, find_dotenv

    path = find_dotenv(usecwd=True)
    return (dotenv_values(path).get(name) or None) if path else None


# What a learner should look at first, by HTTP status.
STATUS_HINTS = {
    401: "The server refused the key: LLM_API_KEY is probably wrong or expired. ",
    403: "The server refused the key: LLM_API_KEY is probably wrong or lacks access to this model. ",
    404: "Nothing there: most OpenAI-compatible servers want LLM_BASE_URL to end in /v1, "
    "and LLM_MODEL_ID must be a model that server serves. ",
    429: "Still rate-limited after the retries: wait a minute, or use AP_MODE=local or fake meanwhile. ",
}


class OpenAIChatLLM(LedgerLLM):
    """Any OpenAI-compatible chat endpoint, through the openai SDK.

    Settings come from arguments, else LLM_API_KEY / LLM_BASE_URL / LLM_MODEL_ID in
    the environment, else a .env file. Token counts come from the server's usage.
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        super().__init__()
        api_key = api_key or _setting("LLM_API_KEY")
        if not api_key:
            raise MissingSettingError(
                "LLM_API_KEY is not set. Export it (or put LLM_API_KEY=... in a .env file), "
                "or use AP_MODE=fake for the offline stand-in."
            )
        model = model or _setting("LLM_MODEL_ID")
        if not model:
            raise MissingSettingError(
                "LLM_MODEL_ID is not set. Export the model name your server serves, "
                "e.g. LLM_MODEL_ID=deepseek-chat."
            )
        import openai

        self.model = model
        self.base_url = base_url or _setting("LLM_BASE_URL")
        self.max_retries, self.timeout = max_retries, timeout
        self.client = openai.OpenAI(
            api_key=api_key, base_url=self.base_url, timeout=timeout, max_retries=max_retries
        )

    def _fail(self, what: str, hint: str = "", retried: bool = True) -> LLMError:
        where = self.base_url or "the default OpenAI endpoint"
        tries = f"after {self.max_retries} retries" if retried else "not retried: trying again would not help"
        return LLMError(
            f"{what} (model {self.model!r} at {where}, {tries}). {hint}"
            "Check LLM_BASE_URL, LLM_MODEL_ID and LLM_API_KEY, and that the server is up."
        )

    def _request(self, create, **kwargs):
        """Call an SDK endpoint; every failure becomes one LLMError that says what to check."""
        import openai

        try:
            return create(model=self.model, **kwargs)
        except openai.APIStatusError as e:
            # The SDK retries only these statuses; a refused key or a wrong URL fails at once.
            retried = e.status_code in (408, 409, 429) or e.status_code >= 500
            hint = STATUS_HINTS.get(e.status_code, "")
            raise self._fail(f"The server answered HTTP {e.status_code}: {str(e)[:200]}", hint, retried) from e
        except openai.APITimeoutError as e:
            raise self._fail(f"The request timed out (no reply within {self.timeout:g} s)") from e
        except openai.APIConnectionError as e:
            raise self._fail(f"Could not connect: {e}") from e
        except openai.OpenAIError as e:
            raise self._fail(f"The response could not be read: {e}") from e
        except json.JSONDecodeError as e:  # the SDK lets a non-JSON body escape as this
            raise self._fail(f"The response could not be read, it is not JSON: {e}") from e

    def _complete(self, messages, temperature):
        response = self._request(self.client.chat.completions.create, messages=messages, temperature=temperature)
        try:
            reply = response.choices[0].message.content
            if not isinstance(reply, str):
                raise TypeError(f"message content is {type(reply).__name__}")
        except (AttributeError, IndexError, TypeError) as e:
            raise self._fail(f"Malformed response, no message text ({e}): {str(response)[:200]}") from e
        return reply, self._usage(messages, reply, getattr(response, "usage", None))

    def _complete_with_tools(self, messages, tools, temperature, tool_choice):
        extra = {"tool_choice": tool_choice} if tool_choice else {}
        response = self._request(self.client.chat.completions.create, messages=messages, tools=tools,
                                 temperature=temperature, **extra)
        try:
            message = response.choices[0].message
            calls = [FunctionCall(c.id or "", c.function.name, c.function.arguments) for c in message.tool_calls or []]
            turn = AssistantTurn(message.content or "", calls)
        except (AttributeError, IndexError, TypeError) as e:
            raise self._fail(f"Malformed response, no message or tool calls ({e}): {str(response)[:200]}") from e
        return turn, self._usage(messages, turn.as_text(), getattr(response, "usage", None))

    @staticmethod
    def _usage(messages, reply, usage) -> dict:
        if usage is None or usage.prompt_tokens is None:
            return {
                "prompt_tokens": tokens.count_messages(messages),
                "completion_tokens": tokens.count_tokens(reply),
                "note": "server sent no usage; counted locally with o200k_base",
            }
        details = getattr(usage, "prompt_tokens_details", None)
        return {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens or 0,
            "cached_tokens": (getattr(details, "cached_tokens", None) or 0) if details else 0,
        }


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


# --- the factory --------------------------------------------------------------


def get_llm(mode: str | None = None, script: list[Rule] | None = None):
    """The course's LLM: AP_MODE=fake (default) stand-in, real, or local SmolLM2.

    `script` replaces the stand-in's default rules (ignored by real models).
    """
    mode = (mode or _setting("AP_MODE") or "fake").strip().lower()
    if mode == "fake":
        if script is None:
            from .scripts import course_script

            script = course_script()
        return ScriptedLLM(script)
    if mode == "real":
        return OpenAIChatLLM()
    if mode == "local":
        from .local import local_llm

        return local_llm()
    raise ValueError(f"AP_MODE={mode!r} is not a mode. Valid values: {', '.join(VALID_MODES)}.")


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
