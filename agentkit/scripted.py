"""The stand-in model: a deterministic LLM that answers by the content of the prompt.

It knows nothing by itself: its rules (`Rule`) say which text in a prompt gets which reply. The
course's rules, one module per chapter, are in `agentkit.scripts`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Union

from . import tokens
from .protocol import AssistantTurn, LedgerLLM, prompt_text

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

    def _complete_constrained(self, messages, temperature, grammar):
        """The stand-in samples nothing: it checks that its scripted reply is one the grammar allows."""
        from .grammar import GrammarError, accepts
        from .protocol import LLMError

        reply, usage = self._complete(messages, temperature)
        try:
            fits = accepts(grammar, reply)
        except GrammarError as e:
            usage["note"] += f"; grammar not checked ({e})"
            return reply, usage
        if not fits:
            raise LLMError(f"The stand-in's scripted reply does not fit the grammar sent with it ({usage['note']}): "
                           f"{reply[:200]!r}. A real server would have kept the reply to the grammar; add a rule "
                           "whose reply fits, or send another grammar.")
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
