"""Stand-in rules for chapter 13 (memory in tiers).

The stand-in plays a model that answers a team-history question (agentkit.memory_data) from
the memories in its prompt: it reads the memories in prompt order and answers with the value
of the FIRST one that states the asked fact about the asked service, citing its [M<id>]. It
never knows the answer without such a memory ("Answer: unknown"), and it never weighs two
memories against each other. Rules key on the memory role prompt, which only this chapter sends.
"""
from __future__ import annotations

import re

from ..scripted import Rule
from ..memory import MEMORY_MARKER
from ..memory_data import ATTRIBUTES

_QUESTION = re.compile(r"^Question: (?P<q>.+)$", re.MULTILINE)
_MEMORY = re.compile(r"^\[M(?P<id>\d+)\] (?P<text>.+)$", re.MULTILINE)
_ASKED = [(re.compile("^" + re.escape(a.question).replace(re.escape("{s}"), r"(?P<s>\w+)") + "$"), a)
          for a in ATTRIBUTES]


def answer_from_memories(prompt: str) -> str:
    questions = _QUESTION.findall(prompt)
    question = questions[-1].strip() if questions else ""
    for pattern, spec in _ASKED:
        asked = pattern.match(question)
        if asked:
            break
    else:
        return "Answer: unknown"
    fact = spec.pattern()
    for memory in _MEMORY.finditer(prompt):
        found = fact.search(memory.group("text"))
        if found and found.group("s") == asked.group("s"):
            return f"Answer: {found.group('v')} [M{memory.group('id')}]"
    return "Answer: unknown"


RULES = [Rule(MEMORY_MARKER, answer_from_memories, name="memory-answer")]
