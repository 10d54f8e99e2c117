"""A knob for long contexts: the relay stand-in miscopies a fact more often as its prompt grows (chapter 17).

`LongContextLLM(per_1k_tokens, seed)` answers like chapter 17's relay stand-in (agentkit.scripts.relay),
except that a reply which copies a fact forward has its last number read wrong (two digits swapped, or
one added: `agentkit.instruments.misread`) with probability

    error_rate(prompt_tokens) = min(1, per_1k_tokens * prompt_tokens / 1000)

A reply copies a fact forward when its action is Calculate, Finish or Note (a sub-agent's report is its
Finish), or when it is a summary. The draw comes from a hash of (seed, prompt), as in
`agentkit.instruments`: the same prompt under the same seed always gets the same reply, and each
corrupted reply's ledger note ends in "; misread at p=...". `per_1k_tokens=0` is the perfect reader.

The shape (linear in the prompt's length, blind to where in the prompt the fact stands) is this course's
assumption, chosen to be simple: no model was measured to behave like it. Chapter 17 says what Liu et
al. (2023), "Lost in the Middle", did measure.
"""
from __future__ import annotations

import re

from . import tokens
from .context_strategies import SUMMARY_MARKER
from .instruments import draw, misread
from .protocol import prompt_text
from .scripted import ScriptedLLM
from .scripts.relay import RULES

KNOB = "long-context"
_COPIES = re.compile(r"^Action: (Calculate|Finish|Note)\[", re.MULTILINE)


def error_rate(per_1k_tokens: float, prompt_tokens: int) -> float:
    """The knob's assumed chance that a fact-copying reply misreads its number, for a prompt of that length."""
    return min(1.0, per_1k_tokens * prompt_tokens / 1000)


class LongContextLLM(ScriptedLLM):
    """The relay stand-in, misreading copied facts at a rate that rises with the prompt's length."""

    def __init__(self, per_1k_tokens: float = 0.0, *, seed: int = 0) -> None:
        if isinstance(per_1k_tokens, bool) or not isinstance(per_1k_tokens, (int, float)) \
                or not 0 <= per_1k_tokens <= 1:
            raise ValueError(f"per_1k_tokens must be a number from 0 to 1, got {per_1k_tokens!r}")
        super().__init__(RULES)
        self.per_1k_tokens, self.seed = float(per_1k_tokens), int(seed)
        self.model = f"relay stand-in, long-context knob {self.per_1k_tokens:g} per 1k tokens, seed {self.seed}"

    def _complete(self, messages, temperature):
        reply, usage = super()._complete(messages, temperature)
        if not self.per_1k_tokens:
            return reply, usage
        prompt = prompt_text(messages)
        if not (_COPIES.search(reply) or SUMMARY_MARKER in prompt):
            return reply, usage
        rate = error_rate(self.per_1k_tokens, usage["prompt_tokens"])
        if draw(self.seed, KNOB, prompt) < rate:
            changed = misread(reply, prompt)
            if changed != reply:
                reply = changed
                usage = {**usage, "completion_tokens": tokens.count_tokens(reply),
                         "note": f"{usage['note']}; misread at p={rate:.2f}"}
        return reply, usage
