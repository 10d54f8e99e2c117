"""What the task-set stand-in knows: each task's key path, where each tool input comes from, how it reads a prompt.

* `key_calls(task)`: the key path replayed once through the real tools (so the stand-in knows
  the knowledge base as well as the key paths), each input split into parts with their
  source: the question, an earlier call's Observation (its index), or the model itself
  (a constant such as 12 months, or words such as "speed of light" for a question about light).
  A Search whose input comes from an earlier Observation is a *bridge*.
* `describe` and `sub_goals` write the plans: one step per call (a step that needs an earlier
  result names it in words), or sub-goals that start at each call needing an earlier result.
* Reading a prompt: `visible` (the text from the hints or the question on), `ready` (every part a
  call needs is visible), `done` (the call is in the history or the hints), `gold_in` (the
  gold answer, if the text holds it: a perfect reader), `final_answer` (the gold, or "Unknown").
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable, Optional

from ..data import DATA_DIR
from ..tasks import Task, load_tasks, numbers_in, parse_call
from ..tools import default_executor

UNKNOWN_NO_INFORMATION = "Unknown: the knowledge base has no information that answers this question."
UNKNOWN_NOT_SAID = "Unknown: what I found does not say."
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass
class KeyCall:
    """One call of a key path, with where each part of its input comes from."""

    index: int
    tool: str
    input: str
    text: str  # "Search[Ada Lovelace]"
    observation: str  # what the real tool returns
    parts: list  # (part, index of the earlier call it comes from, or None) in input order

    @property
    def needs(self) -> set[int]:
        return {j for _, j in self.parts if j is not None}

    @property
    def bridge(self) -> bool:
        return self.tool == "Search" and bool(self.needs)


@functools.lru_cache(maxsize=1)
def tasks() -> tuple[Task, ...]:
    """Every task the stand-in knows: the chapters' set, and the capstone's held-out set."""
    return tuple(load_tasks()) + tuple(load_tasks(DATA_DIR / "capstone_tasks.jsonl"))


@functools.lru_cache(maxsize=None)
def key_calls(task: Task) -> tuple[KeyCall, ...]:
    """The task's key path, replayed through the real tools, with each input part's source."""
    tools, calls = default_executor(), []
    question, question_numbers = task.question.casefold(), set(numbers_in(task.question))
    for index, text in enumerate(task.key_path):
        tool, argument = parse_call(text)
        if tool == "Calculate":
            parts, used = [], set()
            for number in _NUMBER.findall(argument):
                sources = [] if number in question_numbers else \
                    [j for j in range(index) if number in numbers_in(calls[j].observation)]
                source = next((j for j in sources if j not in used), sources[0] if sources else None)
                used.add(source)
                parts.append((number, source))
        else:
            source = None if argument.casefold() in question else next(
                (j for j in range(index) if argument.casefold() in calls[j].observation.casefold()), None)
            parts = [(argument, source)]
        calls.append(KeyCall(index, tool, argument, text, tools.run(tool, argument), parts))
    return tuple(calls)


@functools.lru_cache(maxsize=256)
def task_in(prompt: str) -> Optional[Task]:
    """The task whose question the prompt holds, or None."""
    return next((task for task in tasks() if task.question in prompt), None)


def with_refs(call: KeyCall, ref: Callable[[int], str]) -> str:
    """The call's input with every part that comes from an earlier call replaced by ref(index)."""
    if call.tool != "Calculate":
        return ref(call.parts[0][1]) if call.bridge else call.input
    sources = iter(j for _, j in call.parts)

    def swap(match: re.Match) -> str:
        source = next(sources)
        return match.group(0) if source is None else ref(source)

    return _NUMBER.sub(swap, call.input)


def describe(call: KeyCall, unit: str = "step", number: Callable[[int], int] = lambda j: j + 1) -> str:
    """A plan step for one call, naming earlier results by their step number."""
    if call.tool == "Search":
        if call.bridge:
            return f"Search for the follow-up named in the result of {unit} {number(call.parts[0][1])}."
        return f"Search for {call.input}."
    return f"Calculate {with_refs(call, lambda j: f'(the number from {unit} {number(j)})')}."


def sub_goals(task: Task) -> list[list[KeyCall]]:
    """The hybrid's grouping: a new sub-goal starts at each call that needs an earlier result."""
    groups: list[list[KeyCall]] = []
    for call in key_calls(task):
        if not groups or call.needs:
            groups.append([])
        groups[-1].append(call)
    return groups


def describe_sub_goal(task: Task, group: list[KeyCall]) -> str:
    group_of = {c.index: g for g, calls in enumerate(sub_goals(task)) for c in calls}
    return " ".join(describe(call, "sub-goal", lambda j: group_of[j] + 1) for call in group)


# --- reading a prompt ---------------------------------------------------------


def visible(prompt: str) -> str:
    """What the model can read: the prompt from the hints or the question on (not the role prompt)."""
    starts = [i for i in (prompt.find("Hints from earlier work:"), prompt.find("Question:")) if i != -1]
    return prompt[min(starts):] if starts else prompt


def ready(call: KeyCall, text: str) -> bool:
    """Every part the call needs from earlier calls is visible in `text`."""
    shown = set(numbers_in(text)) if call.tool == "Calculate" else None
    return all(j is None or (part in shown if shown is not None else part.casefold() in text.casefold())
               for part, j in call.parts)


def done(call: KeyCall, text: str) -> bool:
    return f"Action: {call.text}\nObservation:" in text or f"- {call.text} -> " in text


def observation_after(call: KeyCall, text: str) -> str:
    found = re.search(re.escape(f"Action: {call.text}\nObservation: ") + r"(.*)", text)
    return found.group(1).strip() if found else ""


def gold_in(task: Task, text: str) -> Optional[str]:
    """The gold answer as written in `text`, if the text holds it (for a numeric task: a number within tolerance)."""
    if task.must_refuse:
        return None
    if task.checker == "numeric":
        return next((n for n in numbers_in(text) if abs(float(n) - float(task.gold)) <= task.tolerance), None)
    golds = [str(task.gold), *task.accept]
    return str(task.gold) if any(g.casefold() in text.casefold() for g in golds) else None


def final_answer(task: Task, text: str) -> str:
    found = gold_in(task, text)
    if found is not None:
        return found
    return UNKNOWN_NO_INFORMATION if "No information about" in text else UNKNOWN_NOT_SAID
