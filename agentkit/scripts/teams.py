"""Stand-in rules for chapter 15: the router's classifier and every role of the three team topologies.

The stand-in plays one model that knows each task's key path (`key_paths.py`), as in chapters 09-10:

* The router's classifier: `Label: simple` when the key path is one tool call, else `multi-step`.
  A perfect classifier.
* The leads (supervisor, manager, orchestrator) hand out the key path's calls in order, each once the
  inputs it needs can be read in the prompt; the calls ready at the same time go out together (to the
  researcher or analyst in one instruction, to one worker each, to one Research call). A calculation's
  instruction names where its inputs come from: "Calculate (the number from Search[Linus Torvalds]) -
  (the number from Search[Steve Wozniak])." The supervisor passes on, as Context, the results of the
  calls an instruction needs. A lead counts a call done once a member reported on it without saying it
  cannot: it trusts reports.
* A member makes the key-path calls whose instruction is in its assignment, then finishes with what
  their Observations said (a calculation: its result). An assignment it does not recognise, or a
  calculation whose numbers it cannot read, it says it cannot do ("I cannot ...").
* It reads numbers trustingly: wherever a number is needed (a calculation's input, a numeric answer), it
  takes the number that stands where the key path's Observation has it ("Steve Wozniak (born August 11,
  <here>"), in whatever text the prompt holds. A wrong number in a report is used as it stands.
* Answers: a calculation's answer is the result of the last calculation reported; a numeric look-up, the
  number read trustingly; a name, or a refusal, as a perfect reader (`final_answer`).
"""
from __future__ import annotations

import functools
import json
import re
from typing import Callable, Optional

from ..routing import ROUTER_MARKER
from ..scripted import Rule
from ..tasks import Task, numbers_in
from ..members import DROPPED, MEMBER_MARKER
from ..teams import FINAL_MARKER, MANAGER_MARKER, ORCHESTRATOR_MARKER, SUPERVISOR_MARKER, SYNTHESIS_MARKER
from .key_paths import KeyCall, final_answer, key_calls, task_in, with_refs

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
PREFIX = 24  # characters before a number that say which number it is


def _turn(thought: str, action: str) -> str:
    return f"Thought: {thought}\nAction: {action}"


def instruction(call: KeyCall, calls) -> str:
    """How a lead hands out one key-path call."""
    if call.tool == "Search":
        return f"Search for {call.input}."
    return f"Calculate {with_refs(call, lambda j: f'(the number from {calls[j].text})')}."


def reported_number(call: KeyCall, number: str, text: str) -> Optional[str]:
    """The number standing in `text` where `number` stands in the call's Observation (None: not there)."""
    observation, text = _THOUSANDS.sub("", call.observation), _THOUSANDS.sub("", text)
    at = re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", observation)
    prefix = observation[max(0, at.start() - PREFIX):at.start()] if at else ""
    if not prefix.strip():  # a bare result (a calculation's): it must be there as it is
        return number if number in numbers_in(text) else None
    found = re.search(re.escape(prefix) + r"(\d+(?:\.\d+)?)", text)
    return found.group(1) if found else None


def trusting_input(call: KeyCall, calls, text: str) -> Optional[str]:
    """The call's input with every number read trustingly from `text` (a Search: its input, once visible)."""
    if call.tool != "Calculate":
        return call.input if not call.bridge or call.input.casefold() in text.casefold() else None
    parts, missing = iter(call.parts), []

    def swap(match: re.Match) -> str:
        number, source = next(parts)
        read = number if source is None else reported_number(calls[source], number, text)
        missing.extend([] if read else [number])
        return read or number

    filled = _NUMBER.sub(swap, call.input)
    return None if missing else filled


def failed(result: str) -> bool:
    """A member's "I cannot", a dropped report or a stopped run: no result (a tool's "No information" is one)."""
    return result.startswith(("I cannot", DROPPED[:12], "Stopped by"))


def team_answer(task: Task, calls, text: str, entries: list, key: Callable) -> str:
    """The answer a lead gives from what its prompt holds: see the module docstring."""
    last = calls[-1]
    if not task.must_refuse and last.tool == "Calculate":
        results = [result for asked, result in entries if key(last, text) and key(last, text) in asked
                   and not failed(result)]
        found = numbers_in(results[-1]) if results else []
        return found[-1] if found else final_answer(task, text)
    if not task.must_refuse and task.checker == "numeric":
        found = reported_number(last, format(task.gold, "g") if isinstance(task.gold, float) else str(task.gold), text)
        if found is not None:
            return found
    return final_answer(task, text)


def _pending(task: Task, text: str, entries: list, key: Callable) -> list:
    calls = key_calls(task)
    done = {c.index for c in calls if any(key(c, text) and key(c, text) in asked and not failed(result)
                                          for asked, result in entries)}
    return [c for c in calls if c.index not in done]


def _ready(call: KeyCall, calls, text: str) -> bool:
    return trusting_input(call, calls, text) is not None


def _lead_key(call: KeyCall, text: str) -> str:
    return instruction(call, key_calls(task_in(text)))


# --- the router ---------------------------------------------------------------------------------


def router_reply(prompt: str) -> str:
    return "Label: simple" if len(key_calls(task_in(prompt))) == 1 else "Label: multi-step"


# --- the supervisor and its final answer ----------------------------------------------------------

_HANDOFF = re.compile(r"^Handoff \d+ to \w+: (.*)\nContext: (.*)\nResult: (.*)$", re.MULTILINE)


def supervisor_reply(prompt: str) -> str:
    task = task_in(prompt)
    calls, entries = key_calls(task), [(asked, result) for asked, _, result in _HANDOFF.findall(prompt)]
    pending = _pending(task, prompt, entries, _lead_key)
    if not pending or not _ready(pending[0], calls, prompt):
        return f"Next: FINISH\nAnswer: {team_answer(task, calls, prompt, entries, _lead_key)}"
    first = pending[0]
    group = [c for c in pending if c.tool == first.tool and _ready(c, calls, prompt)]
    sources = [j for c in group for j in sorted(c.needs)]
    context = " | ".join(dict.fromkeys(result for j in sources for asked, result in entries
                                       if instruction(calls[j], calls) in asked and not failed(result)))
    member = "researcher" if first.tool == "Search" else "analyst"
    return (f"Next: {member}\nInstruction: {' '.join(instruction(c, calls) for c in group)}\n"
            f"Context: {context or 'none'}")


def final_reply(prompt: str) -> str:
    task = task_in(prompt)
    entries = [(asked, result) for asked, _, result in _HANDOFF.findall(prompt)]
    return f"Answer: {team_answer(task, key_calls(task), prompt, entries, _lead_key)}"


# --- a member -------------------------------------------------------------------------------------


def _observation(action: str, text: str) -> Optional[str]:
    found = re.search(re.escape(f"Action: {action}\nObservation: ") + r"(.*)", text) or \
        re.search(re.escape(f"- {action} -> ") + r"(.*)", text)
    return found.group(1).strip() if found else None


def member_reply(prompt: str) -> str:
    task = task_in(prompt)
    calls = key_calls(task)
    assignment = re.search(r"^Your assignment: (.*)$", prompt, re.MULTILINE).group(1)
    mine = [c for c in calls if instruction(c, calls) in assignment]
    if not mine:
        return _turn("This assignment is not one I know.", "Finish[I cannot do this assignment: I do not know it.]")
    found = []
    for call in mine:
        argument = trusting_input(call, calls, prompt)
        if argument is None:
            return _turn("A number this needs is missing.",
                         "Finish[I cannot calculate this: the numbers it needs are not in my prompt.]")
        action = f"{call.tool}[{argument}]"
        observation = _observation(action, prompt)
        if observation is None:
            return _turn(f"My assignment needs {action}.", action)
        found.append(observation)
    return _turn("My assignment is done.", f"Finish[{' | '.join(found)}]")


# --- agents as tools: the manager ---------------------------------------------------------------------

_MANAGED = re.compile(r"^Action: (Research\[.*\]|Calculate\[.*\])\nObservation: (.*)$", re.MULTILINE)


def _manager_key(call: KeyCall, text: str) -> str:
    if call.tool == "Search":
        return instruction(call, key_calls(task_in(text)))
    argument = trusting_input(call, key_calls(task_in(text)), text)
    return f"Calculate[{argument}]" if argument else ""


def manager_reply(prompt: str) -> str:
    task = task_in(prompt)
    calls, entries = key_calls(task), _MANAGED.findall(prompt)
    pending = _pending(task, prompt, entries, _manager_key)
    if not pending or not _ready(pending[0], calls, prompt):
        return _turn("The reports settle what can be settled.",
                     f"Finish[{team_answer(task, calls, prompt, entries, _manager_key)}]")
    first = pending[0]
    if first.tool == "Calculate":
        return _turn("I have the numbers.", _manager_key(first, prompt))
    group = [c for c in pending if c.tool == "Search" and _ready(c, calls, prompt)]
    return _turn("The researcher can look these up.", f"Research[{' '.join(instruction(c, calls) for c in group)}]")


# --- an orchestrator and its synthesis -------------------------------------------------------------------

_REPORT = re.compile(r"^Sub-task: (.*)\nReport: (.*)$", re.MULTILINE)


def orchestrator_reply(prompt: str) -> str:
    task = task_in(prompt)
    calls, entries = key_calls(task), _REPORT.findall(prompt)
    wave = [c for c in _pending(task, prompt, entries, _lead_key) if _ready(c, calls, prompt)]
    return json.dumps([instruction(c, calls) for c in wave])


def synthesis_reply(prompt: str) -> str:
    task = task_in(prompt)
    return f"Answer: {team_answer(task, key_calls(task), prompt, _REPORT.findall(prompt), _lead_key)}"


# Which rule answers a prompt, decided once per prompt: the most specific role marker first.
KINDS = [
    ("team final", (FINAL_MARKER,), final_reply), ("router", (ROUTER_MARKER,), router_reply),
    ("supervisor", (SUPERVISOR_MARKER,), supervisor_reply), ("member", (MEMBER_MARKER,), member_reply),
    ("manager", (MANAGER_MARKER,), manager_reply), ("orchestrator", (ORCHESTRATOR_MARKER,), orchestrator_reply),
    ("synthesis", (SYNTHESIS_MARKER,), synthesis_reply),
]


@functools.lru_cache(maxsize=256)
def kind_of(prompt: str) -> str:
    """The name of the rule that answers this prompt, or "" when it is none of this chapter's."""
    if task_in(prompt) is None:
        return ""
    return next((kind for kind, markers, _ in KINDS if all(m in prompt for m in markers)), "")


RULES = [Rule(lambda p, kind=kind: kind_of(p) == kind, reply, name=f"teams: {kind}") for kind, _, reply in KINDS]
