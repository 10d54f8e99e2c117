"""Stand-in rules for the runtime chapter: the suites' sick and legitimate runs, their
checkpoints and their fallbacks.

Every rule keys on a question of data/runtime_*.jsonl (only these prompts carry them) and
reads the state of the run from the prompt, in whatever form the context left it: a figure
counts as known when its sentence ("In 2019, the Lakeford station recorded 660 mm") or a
checkpoint's "label = value" is anywhere in the prompt.

* A sick task's model takes the next action of its `loop` (by how many Action lines the
  history holds) and never finishes; with `"heeds": "redirect"` it behaves once the runtime's
  redirect is in its history.
* A legitimate task's model looks up the first figure it does not know yet (the next query it
  has not tried for it), then Calculates if the answer needs it, then Finishes.
* A checkpoint lists the figures known (Found) and the rest (Missing).
* The fallback (tools off) answers from the known figures, or says what is missing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from ..lakeford import SUITE_FILES, load_suite
from ..scripted import Rule
from ..runtime import CHECKPOINT_MARKER, GUARD_LINE
from .react import FALLBACK_MARKER, REACT_MARKER

REDIRECT_LINE = GUARD_LINE.split("{level}")[0] + "redirect)"
_QUESTION = re.compile(r"^Question: (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Need:
    """One figure the answer needs: how it is named, how it reads on a page, how to search for it."""

    label: str
    fact: "re.Pattern[str]"
    queries: tuple
    key: str  # what an argmax / argmin answer names: the year, or the town
    times: int = 1  # how many times the figure must be read before it counts (a task that re-checks on purpose)


def _need(raw, task: dict) -> Need:
    if isinstance(raw, dict):
        return Need(raw["label"], re.compile(raw["fact"]), tuple(raw["queries"]), raw.get("key", raw["label"]),
                    raw.get("times", 1))
    town, year = raw.split()
    query = task.get("query", "{town} rainfall {year}").format(town=town, year=year)
    fact = re.compile(rf"In {year}, the {town} station recorded ([\d,]+) mm")
    return Need(f"rainfall at {town} in {year}", fact, (query,), town if task.get("group") == "town" else year)


@lru_cache(maxsize=1)
def _tasks() -> dict:
    found = {}
    for name in SUITE_FILES:
        for task in load_suite(name):
            found[task.question] = (task.spec, tuple(_need(raw, task.spec) for raw in task.spec["needs"]))
    return found


def _task(prompt: str):
    match = _QUESTION.search(prompt)
    return _tasks().get(match.group(1).strip()) if match else None


def _value(need: Need, prompt: str) -> Optional[int]:
    if need.times > 1:  # read on purpose several times: it counts once the page has come back that often
        seen = need.fact.findall(prompt)
        return int(seen[-1].replace(",", "")) if len(seen) >= need.times else None
    match = need.fact.search(prompt) or re.search(re.escape(need.label) + r" = ([\d,]+)", prompt)
    return int(match.group(1).replace(",", "")) if match else None


def _known(needs, prompt: str) -> dict:
    return {need: _value(need, prompt) for need in needs}


def _expression(spec: dict, values: list[int]) -> str:
    return " + ".join(map(str, values)) if spec["answer"] == "sum" else f"{values[1]} - {values[0]}"


def _answer(spec: dict, needs, values: dict, computed: Optional[str] = None) -> str:
    kind = spec["answer"]
    if kind in ("sum", "difference"):
        total = computed or str(_mental_arithmetic(_expression(spec, [values[n] for n in needs])))
        return f"{total} mm" + ("" if computed else " (worked out without the calculator)")
    if kind == "value":
        return f"{values[needs[0]]:,} mm"
    if kind == "page":
        return f"page {values[needs[0]]}"
    if kind == "agree":
        first, second = (values[n] for n in needs)
        return (f"Yes: both sources give {first:,} mm." if first == second
                else f"No: the station says {first:,} mm, the almanac {second:,} mm.")
    groups: dict = {}
    for need in needs:
        groups[need.key] = groups.get(need.key, 0) + values[need]
    pick = (max if kind == "wettest" else min)(groups, key=groups.get)
    return f"{pick} ({groups[pick]:,} mm)"


def _mental_arithmetic(expression: str) -> int:
    """Sum or difference of whole numbers, the way the stand-in does it in its head."""
    numbers = [int(n) for n in re.findall(r"\d+", expression)]
    return numbers[0] - numbers[1] if " - " in expression else sum(numbers)


def _calculated(expression: str, prompt: str) -> Optional[str]:
    match = re.search(r"Calculate\[" + re.escape(expression) + r"\](?:\nObservation: | -> | = )(-?[\d.]+)", prompt)
    return match.group(1) if match else None


def _say(thought: str, action: str) -> str:
    return f"Thought: {thought}\nAction: {action}"


def _work_it_out(spec: dict, needs, prompt: str) -> str:
    values = _known(needs, prompt)
    missing = [need for need in needs if values[need] is None]
    if missing:
        need = missing[0]
        untried = [q for q in need.queries if f"Search[{q}]" not in prompt]
        if not untried:
            return _say("Every search I know failed.", f"Finish[Unknown: I could not find the {need.label}.]")
        return _say(f"I still need the {need.label}.", f"Search[{untried[0]}]")
    if spec["answer"] in ("sum", "difference"):
        expression = _expression(spec, [values[n] for n in needs])
        result = _calculated(expression, prompt)
        if result is None:
            return _say("I have every figure; now the arithmetic.", f"Calculate[{expression}]")
        return _say("The calculator gave the result.", f"Finish[{_answer(spec, needs, values, result)}]")
    return _say("I have every figure I need.", f"Finish[{_answer(spec, needs, values)}]")


def step_reply(prompt: str) -> str:
    spec, needs = _task(prompt)
    if "loop" in spec and not (spec.get("heeds") == "redirect" and REDIRECT_LINE in prompt):
        history = prompt[_QUESTION.search(prompt).end():]  # the role prompt has an Action line too
        done = len(re.findall(r"^Action: ", history, re.MULTILINE))
        return _say(spec["thought"], spec["loop"][done % len(spec["loop"])])
    return _work_it_out(spec, needs, prompt)


def checkpoint_reply(prompt: str) -> str:
    spec, needs = _task(prompt)
    values = _known(needs, prompt)
    found = "; ".join(f"{n.label} = {values[n]:,}" for n in needs if values[n] is not None) or "nothing"
    missing = "; ".join(f"the {n.label}" for n in needs if values[n] is None) or "nothing"
    return (f"Goal: {spec['question']}\nStrategy: find each figure in the station pages, then answer\n"
            f"Found: {found}\nMissing: {missing}")


def fallback_reply(prompt: str) -> str:
    spec, needs = _task(prompt)
    values = _known(needs, prompt)
    missing = [n.label for n in needs if values[n] is None]
    if missing:
        return _say("Tools are off and figures are missing.", f"Finish[Unknown: the {'; the '.join(missing)} was never found.]")
    return _say("Tools are off, but every figure is above.", f"Finish[{_answer(spec, needs, values)}]")


def _for_suites(marker: str):
    return lambda prompt: marker in prompt and _task(prompt) is not None


RULES = [
    Rule(_for_suites(CHECKPOINT_MARKER), checkpoint_reply, name="runtime-checkpoint"),
    Rule(_for_suites(FALLBACK_MARKER), fallback_reply, name="runtime-fallback"),
    Rule(_for_suites(REACT_MARKER), step_reply, name="runtime-step"),
]
