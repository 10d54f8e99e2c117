"""Stand-in rules for the ReAct chapter: the Steve Jobs checkpoint and a long savings run.

Every rule keys on the ReAct role prompt plus its own question, and reads the state of
the run from the history in the prompt (which Observations are already there).
"""
from __future__ import annotations

import re

from ..react import FALLBACK_MARKER, REACT_MARKER  # noqa: F401 (the rules key on the agent's own phrases)
from ..scripted import Rule


CHECKPOINT_QUESTION = (
    "How many days are there from the year Steve Jobs was born to 2024, counting 365 days per year?"
)

SAVINGS_YEARS = 19
SAVINGS_QUESTION = (
    "A savings account holds 1000 and earns 7% interest a year. Using Calculate once per year "
    f"(one year per step, so every balance is checked), what is the balance after {SAVINGS_YEARS} years?"
)


def _is_react(question: str):
    return lambda prompt: REACT_MARKER in prompt and question in prompt


def _observations(prompt: str) -> list[str]:
    return re.findall(r"^Observation: (.*)$", prompt, re.MULTILINE)


def checkpoint_reply(prompt: str) -> str:
    """Search, then Calculate, then Finish, decided by what the history already holds."""
    seen = _observations(prompt)
    if "25185" in seen:
        return "Thought: The calculator says 25185.\nAction: Finish[25185]"
    if any("1955" in o for o in seen):
        return (
            "Thought: Steve Jobs was born in 1955, so I need (2024 - 1955) * 365.\n"
            "Action: Calculate[(2024 - 1955) * 365]"
        )
    return "Thought: I need the year Steve Jobs was born.\nAction: Search[Steve Jobs]"


def fallback_reply(prompt: str) -> str:
    """Tools off: answer from the gathered steps, or say what is missing."""
    if "1955" in prompt:
        return "Thought: Born in 1955.\nAction: Finish[(2024 - 1955) * 365 = 25185 days, not checked with a tool]"
    return "Thought: Nothing gathered settles it.\nAction: Finish[Unknown: the birth year was never found]"


def savings_reply(prompt: str) -> str:
    """One Calculate per year on the last balance, then Finish."""
    years_done = prompt.count("Action: Calculate[")
    balances = [o for o in _observations(prompt) if re.fullmatch(r"[\d.]+", o.strip())]
    balance = balances[-1] if balances else "1000"
    if years_done >= SAVINGS_YEARS:
        return f"Thought: All {SAVINGS_YEARS} years are done.\nAction: Finish[{balance}]"
    return (
        f"Thought: Year {years_done + 1}: the balance is {balance}; add 7% interest.\n"
        f"Action: Calculate[{balance} * 1.07]"
    )


RULES = [
    Rule(lambda p: FALLBACK_MARKER in p and CHECKPOINT_QUESTION in p, fallback_reply, name="react-fallback"),
    Rule(_is_react(CHECKPOINT_QUESTION), checkpoint_reply, name="react-checkpoint"),
    Rule(_is_react(SAVINGS_QUESTION), savings_reply, name="react-savings"),
]
