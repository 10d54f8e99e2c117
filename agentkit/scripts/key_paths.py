"""What the task-set stand-in knows: each task's key path, where each tool input comes from, how it reads a prompt.

* `key_calls(task)`: the key path replayed once through the real tools (so the stand-in knows
  the knowledge base as well as the key paths), each input split into parts with their
  source: the question, an earlier call's Observation (its index), or the model itself
  (a constant such as 12 months, or words such as "speed of light" for a question about light).
  A Search input is one part; any other tool's input (Calculate, SendMessage) is split into its
  numbers. A Search whose input comes from an earlier Observation is a *bridge*.
* `knowing(Known(tasks, make_tools))`: while it holds, the stand-in also knows these tasks, whose key
  paths replay through `make_tools()` (the capstone draws its tasks and their world at check time, and
  only the model it hands out answers inside this block).
* `describe` and `sub_goals` write the plans: one step per call (a step that needs an earlier
  result names it in words), or sub-goals that start at each call needing an earlier result.
* Reading a prompt: `visible` (the text from the hints or the question on), `ready` (every part a
  call needs is visible), `done` (the call is in the history or the hints), `gold_in` (the
  gold answer, if the text holds it: a perfect reader), `final_answer` (the gold, or "Unknown").
"""
from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, Optional

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
    """Every task of the chapters' set (data/tasks.jsonl)."""
    return tuple(load_tasks())


@dataclass(eq=False)
class Known:
    """Tasks made elsewhere, known only inside `knowing(...)`; their key paths replay through `make_tools()`."""

    tasks: tuple
    make_tools: Callable
    replayed: dict = field(default_factory=dict)  # task id -> key calls

    def __post_init__(self) -> None:
        self.ids = frozenset(map(id, self.tasks))
        self.by_question = {task.question: task for task in self.tasks}
        # One pass over a prompt finds any of the questions (a scan per question is ten times slower).
        self.questions = re.compile("|".join(map(re.escape, sorted(self.by_question, key=len, reverse=True))))

    def holds(self, task: Optional[Task]) -> bool:
        """This very task object is one of these tasks (not merely an equal one)."""
        return id(task) in self.ids


_KNOWN: ContextVar[Optional[Known]] = ContextVar("agentkit_known_tasks", default=None)


@contextmanager
def knowing(known: Known):
    token = _KNOWN.set(known)
    try:
        yield known
    finally:
        _KNOWN.reset(token)


def known_now() -> Optional[Known]:
    return _KNOWN.get()


def _replay(task: Task, tools) -> tuple[KeyCall, ...]:
    calls = []
    question, question_numbers = task.question.casefold(), set(numbers_in(task.question))
    for index, text in enumerate(task.key_path):
        tool, argument = parse_call(text)
        if tool != "Search":
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


@functools.lru_cache(maxsize=None)
def _file_key_calls(task: Task) -> tuple[KeyCall, ...]:
    return _replay(task, default_executor())


def key_calls(task: Task) -> tuple[KeyCall, ...]:
    """The task's key path, replayed through the real tools, with each input part's source."""
    known = _KNOWN.get()
    if known is not None and known.holds(task):
        if task.id not in known.replayed:
            known.replayed[task.id] = _replay(task, known.make_tools())
        return known.replayed[task.id]
    return _file_key_calls(task)


@functools.lru_cache(maxsize=256)
def _file_task_in(prompt: str) -> Optional[Task]:
    return next((task for task in tasks() if task.question in prompt), None)


@functools.lru_cache(maxsize=256)
def _known_task_in(prompt: str, known: Known) -> Optional[Task]:
    found = known.questions.search(prompt) if known.tasks else None
    return known.by_question[found.group(0)] if found else None


def task_in(prompt: str) -> Optional[Task]:
    """The task whose question the prompt holds, or None."""
    known = _KNOWN.get()
    found = _known_task_in(prompt, known) if known is not None else None
    return found if found is not None else _file_task_in(prompt)


def with_refs(call: KeyCall, ref: Callable[[int], str]) -> str:
    """The call's input with every part that comes from an earlier call replaced by ref(index)."""
    if call.tool == "Search":
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
    return f"{call.tool} {with_refs(call, lambda j: f'(the number from {unit} {number(j)})')}."


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
    shown = set(numbers_in(text)) if call.tool != "Search" else None
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
