"""Stand-in rules for chapter 4 (Plan-and-Solve, Plan-and-Execute).

Every rule keys on a role phrase only agentkit.plan's prompts contain, plus the
task's question, and reads the state (earlier results, current step) from the prompt.
One more rule answers plain ReAct (agentkit.react's role prompt) on the years question,
so the chapter can put ReAct's token bill beside Plan-and-Execute's on the same task.
"""
from __future__ import annotations

import json
import re

from ..llm import Rule
from ..plan import EXECUTOR_ROLE, PLANNER_ROLE, REPLAN_HEADER, STEP_ROLE
from .react import REACT_MARKER

APPLES_QUESTION = (
    "The cafeteria had 23 apples. They used 20 to make lunch and bought 6 more. "
    "How many apples do they have?"
)
APPLES_PLAN = [
    "Find how many apples the cafeteria started with.",
    "Subtract the 20 apples used for lunch.",
    "Add the 6 apples they bought.",
]

# Plan-and-Execute: a task for Search and Calculate, with a way around each failure.
YEARS_QUESTION = "How many years after Ada Lovelace was born was Alan Turing born?"
YEARS_PLAN = [
    "Search for Ada Lovelace's birth year.",
    "Search for Alan Turing's birth year.",
    "Subtract Ada Lovelace's birth year from Alan Turing's birth year.",
]
# The tool call each step makes: (tool, input). Failure injection targets these inputs.
YEARS_TOOL_CALLS = [("Search", "Ada Lovelace"), ("Search", "Alan Turing"), ("Calculate", "1912 - 1815")]
# What the stand-in planner does instead of a failed step when it replans.
YEARS_DETOURS = {
    YEARS_PLAN[0]: "Search for Augusta Ada King, Ada Lovelace's full name, to find her birth year.",
    YEARS_PLAN[1]: "Search for Turing to find Alan Turing's birth year.",
    YEARS_PLAN[2]: "Work out Alan Turing's birth year minus Ada Lovelace's birth year by hand, "
                   "without a tool.",
}


def current_step(prompt: str) -> str:
    """The text of the step the prompt asks for, or ""."""
    found = re.findall(r"Current step \(\d+ of \d+\): (.*)", prompt)
    return found[-1].strip() if found else ""


def earlier_lines(prompt: str) -> list[str]:
    """The lines of the "Results of earlier steps" block ([] if absent or "(none)")."""
    match = re.search(r"Results of earlier steps:\n(.*?)\nCurrent step", prompt, re.DOTALL)
    if not match or match.group(1).strip() == "(none)":
        return []
    return match.group(1).strip().splitlines()


def _running_count(prompt: str) -> int | None:
    """The last number of the last earlier result: the count so far, if the prompt carries it."""
    lines = earlier_lines(prompt)
    numbers = re.findall(r"-?\d+", lines[-1].split("->", 1)[-1]) if lines else []
    return int(numbers[-1]) if numbers else None


def _apples_step(prompt: str) -> str:
    step, count = current_step(prompt), _running_count(prompt)
    if step == APPLES_PLAN[0]:
        return "The cafeteria started with 23 apples."
    if step == APPLES_PLAN[1]:
        # Like a model that answers from what it is shown: no count, no subtraction.
        return f"{count} - 20 = {count - 20} apples are left." if count is not None \
            else "20 apples were used for lunch."
    if step == APPLES_PLAN[2]:
        return f"They have {count} + 6 = {count + 6} apples." if count is not None \
            else "They bought 6 apples, so they have 6 apples."
    return "I cannot do this step: it is not part of the apples plan."


def _birth_years(prompt: str) -> dict:
    """Birth years found in the earlier results, by surname."""
    years = {}
    for line in earlier_lines(prompt):
        result = line.split("->", 1)[-1]
        found = re.search(r"\b(1[0-9]{3})\b", result)
        for name in ("Lovelace", "Turing"):
            if found and name in result:
                years[name] = int(found.group(1))
    return years


def _thought_action(thought: str, action: str) -> str:
    return f"Thought: {thought}\nAction: {action}"


def _years_step(prompt: str) -> str:
    """One ReAct turn of a step of the years task: act, then finish from the Observation."""
    step = current_step(prompt)
    history = prompt.split(f"): {step}", 1)[-1]
    observations = re.findall(r"^Observation: (.*)$", history, re.MULTILINE)
    seen = observations[-1] if observations else None
    if seen is not None and seen.startswith("error:"):
        return _thought_action("The tool failed.", f"Finish[I cannot do this step: {seen}]")
    years = _birth_years(prompt)
    if step in (YEARS_PLAN[2], YEARS_DETOURS[YEARS_PLAN[2]]):
        if {"Lovelace", "Turing"} - set(years):
            return _thought_action("The earlier results lack a birth year.",
                                   "Finish[I cannot subtract: a birth year is missing.]")
        turing, lovelace = years["Turing"], years["Lovelace"]
        if step == YEARS_DETOURS[YEARS_PLAN[2]]:
            gap = turing - lovelace
            answer = f"{turing} - {lovelace} = {gap}: Alan Turing was born {gap} years after Ada Lovelace."
            return _thought_action("Plain subtraction, no tool needed.", f"Finish[{answer}]")
        if seen is None:
            return _thought_action("I subtract the two years.", f"Calculate[{turing} - {lovelace}]")
        return _thought_action("The difference is known.",
                               f"Finish[Alan Turing was born {seen} years after Ada Lovelace.]")
    queries = {YEARS_PLAN[0]: "Ada Lovelace", YEARS_PLAN[1]: "Alan Turing",
               YEARS_DETOURS[YEARS_PLAN[0]]: "Augusta Ada King", YEARS_DETOURS[YEARS_PLAN[1]]: "Turing"}
    if step not in queries:
        return _thought_action("This step is not one I know.", "Finish[I cannot do this step.]")
    if seen is None:
        return _thought_action("I look the person up.", f"Search[{queries[step]}]")
    year = re.search(r"\((?:\w+ \d+, )?(\d{4})", seen)
    who = "Ada Lovelace" if "Lovelace" in step or "Ada" in step else "Alan Turing"
    if year is None:
        return _thought_action("The search did not give a year.", f"Finish[No information: {seen}]")
    return _thought_action("The entry gives the year.", f"Finish[{who} was born in {year.group(1)}.]")


def _years_replan(prompt: str) -> str:
    """The remaining steps, with the failed one replaced by its detour (objects, to vary the format)."""
    failed = re.search(r"^Failed step: (.*)$", prompt, re.MULTILINE).group(1).strip()
    block = re.search(r"Plan so far:\n(.*?)\nCompleted steps", prompt, re.DOTALL).group(1)
    plan = [re.sub(r"^\d+\.\s*", "", line).strip() for line in block.splitlines()]
    after = plan[plan.index(failed) + 1:] if failed in plan else []
    remaining = [YEARS_DETOURS.get(failed, failed)] + after
    return json.dumps([{"step": i, "task": task} for i, task in enumerate(remaining, 1)])


def _years_react(prompt: str) -> str:
    """Plain ReAct on the years question: look up both people, subtract, finish, read from the history."""
    seen = re.findall(r"^Observation: (.*)$", prompt, re.MULTILINE)
    years = {name: re.search(r"\((?:\w+ \d+, )?(\d{4})", text).group(1)
             for text in seen for name in ("Lovelace", "Turing") if text.startswith(("Ada", "Alan")) and name in text}
    if seen and re.fullmatch(r"-?\d+", seen[-1].strip()):
        return _thought_action("The calculator gives the gap.",
                               f"Finish[Alan Turing was born {seen[-1].strip()} years after Ada Lovelace.]")
    if "Lovelace" not in years:
        return _thought_action("I need Ada Lovelace's birth year.", "Search[Ada Lovelace]")
    if "Turing" not in years:
        return _thought_action("Now Alan Turing's birth year.", "Search[Alan Turing]")
    return _thought_action("I subtract the two years.", f"Calculate[{years['Turing']} - {years['Lovelace']}]")


def _is_planner(question_marker: str):
    return lambda p: PLANNER_ROLE in p and question_marker in p and REPLAN_HEADER not in p


RULES = [
    Rule(_is_planner("23 apples"),
         "Here is my plan:\n```json\n" + json.dumps(APPLES_PLAN, indent=1) + "\n```",
         name="plan: apples planner"),
    Rule(lambda p: EXECUTOR_ROLE in p and "23 apples" in p, _apples_step,
         name="plan: apples executor"),
    Rule(lambda p: PLANNER_ROLE in p and REPLAN_HEADER in p and YEARS_QUESTION in p, _years_replan,
         name="plan: years replanner"),
    Rule(_is_planner(YEARS_QUESTION), json.dumps(YEARS_PLAN), name="plan: years planner"),
    Rule(lambda p: STEP_ROLE in p and YEARS_QUESTION in p, _years_step, name="plan: years step"),
    Rule(lambda p: REACT_MARKER in p and f"Question: {YEARS_QUESTION}" in p and STEP_ROLE not in p,
         _years_react, name="plan: years, plain ReAct"),
]
