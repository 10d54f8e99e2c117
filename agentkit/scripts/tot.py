"""Stand-in rules for chapter 7 (Tree of Thoughts on Game of 24), with a skill knob.

`game24_rules(sees, errs, noise, seed)` answers agentkit.tot's two prompts by their content:

- propose: the legal moves of the prompt's numbers (`game24.legal_moves`), shuffled by a
  Random seeded with `seed` and the numbers. The model "sees" only the first `sees` of them
  and writes up to k (read from the prompt), each as "a op b = c (left: ...)". With
  probability `errs` a written step has a wrong result (off by one, never below 0).
- evaluate: "sure" if the numbers can still make 24 (`game24.can_make_24`, exact), else
  "impossible". With probability `noise` the vote is a label drawn at random from sure,
  likely, impossible instead, by a Random seeded with `seed`, the numbers and the judge
  number, so the votes on one node differ from each other.

The same seed and prompt give the same reply on every machine; nothing counts calls.
Because the draw depends on the numbers, a proposer asked for more steps writes the same
first steps and more. `stand_in(...)` is a ScriptedLLM with these rules; RULES (in the
course script) is the default skill.
"""
from __future__ import annotations

import functools
import random
import re
from fractions import Fraction

from .. import tokens
from ..game24 import NUMBER, can_make_24, fmt, legal_moves, parse_number
from ..llm import Rule, ScriptedLLM, prompt_text
from ..tot import PROPOSE_MARKER, VALUE_MARKER

DEFAULT_SKILL = {"sees": 10, "errs": 0.05, "noise": 0.25, "seed": 0}
LABELS = ("sure", "likely", "impossible")

_NUMBERS = re.compile(rf"Game of 24\. Numbers: ((?:{NUMBER} ?)+)")
_K = re.compile(r"Propose up to (\d+) next steps")
_JUDGE = re.compile(r"Judge (\d+) of \d+")


def _state(prompt: str) -> str:
    """The numbers line of the prompt, as written ("" if there is none)."""
    match = _NUMBERS.search(prompt)
    return " ".join(match.group(1).split()) if match else ""


# A sweep asks about the same states again and again: work each one out once.
@functools.lru_cache(maxsize=50_000)
def _values(state: str) -> tuple[Fraction, ...]:
    """The numbers as fractions; none at all if one of them is not a number (such as 4/0)."""
    values = [_number(n) for n in state.split()]
    return () if None in values else tuple(sorted(values))


# Thousands of states share a few dozen numbers: one Fraction each, not one per state, is
# quicker to parse and leaves less for the garbage collector to walk through.
@functools.lru_cache(maxsize=10_000)
def _number(text: str) -> Fraction | None:
    return parse_number(text)


@functools.lru_cache(maxsize=50_000)
def _reachable(state: str) -> bool:
    return bool(_values(state)) and can_make_24(_values(state))


def _propose(prompt: str, sees: int, errs: float, seed: int) -> str:
    state = _state(prompt)
    k = int(_K.search(prompt).group(1))
    rng = random.Random(f"{seed}|propose|{state}")
    # Not cached: the proposal itself is (per prompt), and 20k cached moves cost the garbage
    # collector more than recomputing the few states that come back with another k.
    moves = legal_moves(_values(state))
    rng.shuffle(moves)
    lines = []
    for move in moves[:min(sees, k)]:  # only the moves it writes are written out
        c, left = move.c, move.left
        if rng.random() < errs:  # a slip: the result is off by one
            c = c + 1 if c < 1 or rng.random() < 0.5 else c - 1
            rest = list(move.left)
            rest.remove(move.c)
            left = sorted(rest + [c])
        lines.append(f"{fmt(move.a)} {move.op} {fmt(move.b)} = {fmt(c)} (left: {' '.join(map(fmt, left))})")
    return "\n".join(lines)


def _judge(prompt: str, noise: float, seed: int) -> str:
    state = _state(prompt)
    if noise:  # a noiseless judge never draws: no need to seed its Random
        judge = _JUDGE.search(prompt)
        rng = random.Random(f"{seed}|judge {judge.group(1) if judge else 1}|{state}")
        if rng.random() < noise:
            return rng.choice(LABELS)
    return "sure" if _reachable(state) else "impossible"


def _is_propose(prompt: str) -> bool:
    return PROPOSE_MARKER in prompt and _NUMBERS.search(prompt) is not None and _K.search(prompt) is not None


def _is_judge(prompt: str) -> bool:
    return VALUE_MARKER in prompt and _NUMBERS.search(prompt) is not None


def _check(sees: int, errs: float, noise: float) -> None:
    if not isinstance(sees, int) or sees < 1:
        raise ValueError(f"sees must be a whole number of at least 1, got {sees!r}")
    for name, value in (("errs", errs), ("noise", noise)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} is a probability, between 0 and 1; got {value!r}")


def game24_rules(sees: int = 10, errs: float = 0.05, noise: float = 0.25, seed: int = 0) -> list[Rule]:
    """The proposer and the evaluator of a model with this skill."""
    _check(sees, errs, noise)
    return [
        Rule(_is_propose, lambda p: _propose(p, sees, errs, seed), name=_propose_name(sees, errs)),
        Rule(_is_judge, lambda p: _judge(p, noise, seed), name=_judge_name(noise)),
    ]


def _propose_name(sees: int, errs: float) -> str:
    return f"tot-propose(sees={sees}, errs={errs})"


def _judge_name(noise: float) -> str:
    return f"tot-judge(noise={noise})"


@functools.lru_cache(maxsize=200_000)
def _answer(skill: tuple, prompt: str) -> tuple[str, str] | None:
    """(reply, ledger note) for this chapter's prompts, or None for any other prompt."""
    sees, errs, noise, seed = skill
    if _is_propose(prompt):  # the proposer's reply does not depend on the judge's noise: share it
        return _proposal(sees, errs, seed, prompt), f"rule: {_propose_name(sees, errs)}"
    if _is_judge(prompt):
        return _judge(prompt, noise, seed), f"rule: {_judge_name(noise)}"
    return None


@functools.lru_cache(maxsize=100_000)
def _proposal(sees: int, errs: float, seed: int, prompt: str) -> str:
    return _propose(prompt, sees, errs, seed)


@functools.lru_cache(maxsize=200_000)
def _reply_and_usage(skill: tuple, messages: tuple) -> tuple[str, tuple] | None:
    """The stand-in's reply to these (role, content) pairs, and (prompt tokens, reply tokens, ledger note)."""
    answer = _answer(skill, prompt_text([{"content": content} for _, content in messages]))
    if answer is None:
        return None
    reply, note = answer
    # Plain values, not a dict: a cache of tuples of text and numbers is one the garbage collector skips.
    return reply, (_prompt_tokens(messages), _reply_tokens(reply), note)


@functools.lru_cache(maxsize=200_000)
def _prompt_tokens(messages: tuple) -> int:
    return tokens.count_messages([{"role": role, "content": content} for role, content in messages])


@functools.lru_cache(maxsize=2_000)
def _reply_tokens(reply: str) -> int:
    return tokens.count_tokens(reply)


class Game24StandIn(ScriptedLLM):
    """A ScriptedLLM with this chapter's rules at one skill. Every call is a new ledger entry.

    Replies and exact token counts are remembered per text: a content-based stand-in gives one
    prompt one reply, so this changes only the speed of a 100-puzzle sweep.
    """

    def __init__(self, sees: int = 10, errs: float = 0.05, noise: float = 0.25, seed: int = 0) -> None:
        super().__init__(game24_rules(sees, errs, noise, seed))
        self.skill = (sees, errs, noise, seed)

    def _complete(self, messages, temperature):
        try:
            key = tuple((m["role"], m["content"]) for m in messages)
            known = _reply_and_usage(self.skill, key) if all(type(c) is str for _, c in key) else None
        except (KeyError, TypeError):  # a message without a role, or content that is not text
            known = None
        if known is None:  # not this chapter's prompt, or an unusual message: the plain ScriptedLLM way
            return super()._complete(messages, temperature)
        reply, (prompt_tokens, completion_tokens, note) = known
        return reply, {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "note": note}


def stand_in(sees: int = 10, errs: float = 0.05, noise: float = 0.25, seed: int = 0) -> Game24StandIn:
    """A fresh stand-in (empty ledger) with this skill."""
    return Game24StandIn(sees, errs, noise, seed)


RULES = game24_rules(**DEFAULT_SKILL)
