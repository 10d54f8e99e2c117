"""The LLM layer in one import: the protocol and ledger, the stand-in, and the real client.

Any object with `think(messages, temperature=0) -> str` is an LLM. Every client here keeps a
ledger, `.calls`: one `CallRecord` per call. Which of them the course's cells get (AP_MODE) is
decided one layer up, by `agentkit.get_llm`.
"""
from .openai_client import STATUS_HINTS, OpenAIChatLLM
from .protocol import (
    LLM, AssistantTurn, CallRecord, FunctionCall, LedgerLLM, LLMError, MissingSettingError, as_messages,
    default_llm, ledger, ledger_totals, prompt_text,
)
from .scripted import NO_SCRIPT, Matcher, Reply, Rule, ScriptedLLM

__all__ = [
    "LLM", "AssistantTurn", "CallRecord", "FunctionCall", "LedgerLLM", "LLMError", "MissingSettingError",
    "NO_SCRIPT", "Matcher", "OpenAIChatLLM", "Reply", "Rule", "STATUS_HINTS", "ScriptedLLM", "as_messages",
    "default_llm", "ledger", "ledger_totals", "prompt_text",
]
