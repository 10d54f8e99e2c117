"""Prompt caching, priced from a ledger: what a run costs with and without a cached-prefix discount (chapter 17).

A provider that caches prompts bills the start of a prompt it has seen before at a lower price. Here a
call's cached prefix is the common start of its messages with those of the latest earlier call of the same
conversation (the calls whose first message, the role prompt, is the same), counted in tokens: whole
messages that are equal, then the common start of the first message that differs. That is an
idealisation: a real service decides which prefixes it keeps and for how long (DeepSeek's context-caching
page lists its rules), so a real bill may get less of this discount.

`Prices` holds dollars per million tokens; `DEEPSEEK_CHAT` is the USD table of DeepSeek's "Models &
Pricing" page for deepseek-chat as read for chapter 17 (notebooks/SOURCES.md says where and when).
Prices change: pass your provider's. `cached_prefix_tokens(calls)` gives each call's cached tokens,
`dollars(calls, prices, cache=...)` the bill. Anything that changes a prompt's start (a timestamp in the
system prompt, a reordered tool list, a window that drops the oldest step, a summary that rewrites the
history) leaves only the part before the change cached.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import tokens
from .text import common_prefix


@dataclass(frozen=True)
class Prices:
    """Dollars per million tokens: input on a cache miss, input on a cache hit, output."""

    miss: float
    hit: float
    output: float
    name: str = ""


DEEPSEEK_CHAT = Prices(miss=0.27, hit=0.07, output=1.10, name="deepseek-chat (DeepSeek's pricing page, USD)")


def _shared(messages: list[dict], earlier: list[dict]) -> tuple[int, int]:
    """(equal leading messages, common characters of the next one) of two prompts."""
    equal = 0
    for mine, theirs in zip(messages, earlier):
        if mine.get("role") != theirs.get("role"):
            return equal, 0
        a, b = str(mine.get("content") or ""), str(theirs.get("content") or "")
        if a != b:
            return equal, common_prefix(a, b)
        equal += 1
    return equal, 0


def _content(message: dict) -> str:
    return str(message.get("content") or "")


def _tokens_of_start(messages: list[dict], equal: int, chars: int) -> int:
    """Tokens of the first `equal` messages and the first `chars` characters of the next (chat format)."""
    shared = sum(tokens.TOKENS_PER_MESSAGE + tokens.count_tokens(_content(m)) for m in messages[:equal])
    if chars:
        shared += tokens.TOKENS_PER_MESSAGE + tokens.count_tokens(_content(messages[equal])[:chars])
    return shared


def shared_prefix_tokens(messages: list[dict], earlier: list[dict]) -> int:
    """Tokens of the common start of two prompts: equal leading messages whole, then the common text of the next."""
    return _tokens_of_start(messages, *_shared(messages, earlier))


def cached_prefix_tokens(calls) -> list[int]:
    """For each call, the tokens of its common start with the latest earlier call of the same conversation
    (the same first message, as a role prompt is): 0 for a conversation's first call."""
    cached, latest = [], {}
    for call in calls:
        key = _content(call.messages[0]) if call.messages else ""
        earlier = latest.get(key)
        hit = shared_prefix_tokens(call.messages, earlier.messages) if earlier is not None else 0
        cached.append(min(hit, call.prompt_tokens))
        latest[key] = call
    return cached


def dollars(calls, prices: Prices = DEEPSEEK_CHAT, cache: bool = True, cached: list | None = None) -> float:
    """The bill of these calls: cached-prefix tokens at the hit price when `cache`, the rest at the miss price."""
    hits = (cached if cached is not None else cached_prefix_tokens(calls)) if cache else [0] * len(calls)
    total = 0.0
    for call, hit in zip(calls, hits):
        total += (call.prompt_tokens - hit) * prices.miss + hit * prices.hit + call.completion_tokens * prices.output
    return total / 1e6
