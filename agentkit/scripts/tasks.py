"""Stand-in rules for the labelled task set (chapters 9 and 10), for every paradigm.

The stand-in plays one model. For each task of data/tasks.jsonl (and, inside the capstone's model,
each task of the world it drew) it knows the key path (the tool calls a good run makes), and it
reads perfectly: when the evidence its prompt shows holds the gold answer it gives it, otherwise it
says "Unknown". It never invents a fact.
So every failure comes from what a paradigm lets the model see or do:

* What it knows, and how it reads a prompt, is in `key_paths.py`: each key-path call with
  the source of each part of its input (the question, an earlier Observation: a *bridge* name
  or a number to calculate with, or the model itself).
* ReAct: one key-path call per turn, once the parts it needs are visible in its prompt (hints
  included: a call whose result the hints carry is not made again), then Finish.
  Five tool calls need a sixth turn to finish.
* Act-only: no Thought to write down what it learned, so it follows only a path the question
  spells out: instead of a bridge search it searches the question's own words, the same each
  turn. It finishes by copying: the answer if the last Observation holds it, else that
  Observation itself.
* Plan-and-Solve and Plan-and-Execute: one plan step per key-path call; a step needing an
  earlier result says so in words. Plan-and-Solve's executor has no tools: it calculates with
  the numbers its prompt shows and cannot look anything up. A Plan-and-Execute step makes its
  call, then finishes with the Observation (the last step: with the answer).
* Hybrid: sub-goals group the calls; a new one starts at a call that needs an earlier result.
* Replanners: after a "no information" failure, one step that says the question cannot be
  answered; after any other failure, the same remaining steps.
* Reflection reviewer: REVISE when the run did not finish or the answer is in no Observation;
  PASS an answer found in an Observation, or a refusal of a finished run.
* ReWOO: plans blind, so an input that needs an earlier result is written #E<k> (which stands
  for that evidence's whole text); the solver answers from the evidence.
* The runtime's drift checkpoint (chapter 08): Found lists the calls of the current job (the
  sub-goal or plan step, else the whole key path) already made, Missing the rest. The
  fallback after a fuse or a guard (tools off) answers from what the prompt holds.
"""
from __future__ import annotations

import functools
import json
import re

from ..act import ACT_MARKER
from ..hybrid import PLANNER_MARKER as HYBRID_PLANNER
from ..hybrid import REPLAN_MARKER as HYBRID_REPLAN
from ..hybrid import REVIEW_MARKER
from ..hybrid import STEP_MARKER as HYBRID_STEP
from ..llm import Rule
from ..plan import EXECUTOR_ROLE, PLANNER_ROLE, REPLAN_HEADER, STEP_ROLE
from ..rewoo import PLANNER_MARKER as REWOO_PLANNER
from ..rewoo import SOLVER_MARKER as REWOO_SOLVER
from ..runtime import CHECKPOINT_MARKER
from ..tasks import Task, is_refusal, numbers_in
from ..tools import calculator
from .key_paths import (
    UNKNOWN_NO_INFORMATION, UNKNOWN_NOT_SAID, KeyCall, describe, describe_sub_goal, done, final_answer, gold_in,
    key_calls, known_now, observation_after, ready, sub_goals, task_in, visible, with_refs,
)
from .react import FALLBACK_MARKER, REACT_MARKER

CANNOT_STEP = "Say that the question cannot be answered from the knowledge base, and why."


def _turn(thought: str, action: str) -> str:
    return f"Thought: {thought}\nAction: {action}" if thought else f"Action: {action}"


def _thought_for(call: KeyCall) -> str:
    if call.bridge:
        return f"The observation names {call.input}; I look that up next."
    if call.tool == "Search":
        return f"I need to look up {call.input}."
    if call.tool != "Calculate":
        return f"I have what it needs; I call {call.tool}."
    return f"I have the numbers; I calculate {call.input}."


# --- ReAct, Act-only, and ReAct with hints --------------------------------------


def react_reply(prompt: str, act_only: bool = False) -> str:
    task, text = task_in(prompt), visible(prompt)
    pending = [call for call in key_calls(task) if not done(call, text)]
    if pending:
        call = pending[0]
        if act_only and call.bridge:
            return _turn("", f"Search[{task.question.rstrip('?')}]")
        if not ready(call, text):
            return _turn("An earlier result I need is missing.", f"Finish[{UNKNOWN_NOT_SAID}]")
        return _turn("" if act_only else _thought_for(call), call.text)
    if act_only:
        observations = re.findall(r"^Observation: (.*)$", text, re.MULTILINE)
        last = observations[-1] if observations else ""
        found = gold_in(task, last)
        return _turn("", f"Finish[{found if found is not None else last}]")
    answer = final_answer(task, text)
    thought = "The observations give the answer." if answer == gold_in(task, text) else \
        "The knowledge base does not answer this, so I should not guess."
    return _turn(thought, f"Finish[{answer}]")


# --- planners and executors ------------------------------------------------------


def plan_reply(prompt: str) -> str:
    return json.dumps([describe(call) for call in key_calls(task_in(prompt))])


def hybrid_plan_reply(prompt: str) -> str:
    task = task_in(prompt)
    return json.dumps([describe_sub_goal(task, group) for group in sub_goals(task)])


def replan_reply(prompt: str, failed_label: str) -> str:
    """After "no information": one step that says so; otherwise the failed step and the rest again."""
    if re.search(r"^Why it failed: .*no information", prompt, re.MULTILINE | re.IGNORECASE):
        return json.dumps([CANNOT_STEP])
    failed = re.search(rf"^{failed_label}: (.*)$", prompt, re.MULTILINE).group(1).strip()
    block = re.search(r"Plan so far:\n(.*?)\nCompleted", prompt, re.DOTALL).group(1)
    plan = [re.sub(r"^\d+\.\s*", "", line).strip() for line in block.splitlines()]
    return json.dumps(plan[plan.index(failed):] if failed in plan else [failed])


def current_step(prompt: str) -> tuple[str, bool]:
    """The current step's text and whether it is the last one."""
    found = re.findall(r"Current step \((\d+) of (\d+)\): (.*)", prompt)
    number, total, step = found[-1]
    return step.strip(), number == total


def plan_and_solve_step(prompt: str) -> str:
    task, text = task_in(prompt), visible(prompt)
    step, _ = current_step(prompt)
    call = next((c for c in key_calls(task) if describe(c) == step), None)
    if call is None:
        return "I cannot do this step: it is not one I know how to do."
    if call.tool == "Search":
        return f"I cannot look up {call.input if not call.bridge else 'that'}: I have no tools, " \
               "and no earlier result gives it."
    if call.tool != "Calculate":
        return f"I cannot do this step: I have no tools, and {call.tool} is one."
    if not ready(call, text):
        return "I cannot calculate this: the numbers it needs are not in my prompt."
    return f"{call.input} = {calculator(call.input)}"


def _step_turn(task: Task, calls: list[KeyCall], prompt: str, is_last: bool, step: str) -> str:
    """One ReAct turn inside a plan step or sub-goal: the next call of the group, then Finish."""
    text = visible(prompt)
    history = prompt.split(f"): {step}", 1)[-1]
    for call in calls:
        if f"Action: {call.text}\nObservation:" in history:
            continue
        if not ready(call, text):
            return _turn("An earlier result this step needs is missing.",
                         "Finish[I cannot do this step: a result it needs is missing.]")
        return _turn(_thought_for(call), call.text)
    if is_last:
        return _turn("That settles the question.", f"Finish[{final_answer(task, text)}]")
    found = " | ".join(observation_after(call, history) for call in calls)
    return _turn("I report what I found.", f"Finish[{found}]")


def plan_execute_step(prompt: str) -> str:
    task = task_in(prompt)
    step, is_last = current_step(prompt)
    if step == CANNOT_STEP:
        return _turn("The failure showed the knowledge base lacks this.", f"Finish[{UNKNOWN_NO_INFORMATION}]")
    calls = [c for c in key_calls(task) if describe(c) == step]
    if not calls:
        return _turn("This step is not one I know.", "Finish[I cannot do this step.]")
    return _step_turn(task, calls, prompt, is_last, step)


def hybrid_step(prompt: str) -> str:
    task = task_in(prompt)
    step, is_last = current_step(prompt)
    if step == CANNOT_STEP:
        return _turn("The failure showed the knowledge base lacks this.", f"Finish[{UNKNOWN_NO_INFORMATION}]")
    group = next((g for g in sub_goals(task) if describe_sub_goal(task, g) == step), None)
    if group is None:
        return _turn("This sub-goal is not one I know.", "Finish[I cannot do this sub-goal.]")
    return _step_turn(task, group, prompt, is_last, step)


# --- the runtime's checkpoint, the fallback ------------------------------------------


def _job(task: Task, prompt: str) -> list[KeyCall]:
    """The calls the run in this prompt is there to make: its sub-goal, its plan step, or the whole key path."""
    if HYBRID_STEP in prompt or STEP_ROLE in prompt:
        step, _ = current_step(prompt)
        for group in sub_goals(task):
            if describe_sub_goal(task, group) == step:
                return group
        return [c for c in key_calls(task) if describe(c) == step]
    return list(key_calls(task))


def checkpoint_reply(prompt: str) -> str:
    task = task_in(prompt)
    calls = _job(task, prompt)
    found = [c.text for c in calls if f"{c.text} ->" in prompt or c.text in prompt.split("Steps since then:")[0]]
    missing = [c.text for c in calls if c.text not in found]
    return (f"Goal: {task.question}\nStrategy: make the tool calls the question needs, one at a time\n"
            f"Found: {'; '.join(found) or 'nothing'}\nMissing: {'; '.join(missing) or 'nothing'}")


def fallback_reply(prompt: str) -> str:
    return _turn("Tools are off; I answer from what I gathered.", f"Finish[{final_answer(task_in(prompt), visible(prompt))}]")


# --- the reviewer and ReWOO ---------------------------------------------------------


def review_reply(prompt: str) -> str:
    ended = re.search(r"^How the run ended: (.*)$", prompt, re.MULTILINE).group(1).strip()
    answer = re.search(r"^Final answer: (.*)$", prompt, re.MULTILINE | re.DOTALL).group(1).strip()
    observations = "\n".join(re.findall(r"^Observation: (.*)$", prompt, re.MULTILINE))
    if ended != "finished":
        return (f"The run stopped ({ended}) before it gave an answer. Continue from the facts already "
                "found instead of searching for them again.\nVERDICT: REVISE")
    if is_refusal(answer):
        return "The answer says the question cannot be answered; the observations do not answer it.\nVERDICT: PASS"
    numbers = numbers_in(answer)
    supported = (numbers[-1] in numbers_in(observations)) if numbers else answer.casefold() in observations.casefold()
    if supported:
        return f"The answer {answer!r} is what the observations say.\nVERDICT: PASS"
    return f"The answer {answer!r} appears in no observation.\nVERDICT: REVISE"


def rewoo_plan_reply(prompt: str) -> str:
    lines = []
    for call in key_calls(task_in(prompt)):
        reason = {"Search": f"Look up {call.input}.", "Calculate": "Calculate the result."}.get(
            call.tool, f"Call {call.tool} with what it needs.")
        if call.bridge:
            reason = f"Look up what #E{call.parts[0][1] + 1} names."
        lines += [f"Plan: {reason}", f"#E{call.index + 1} = {call.tool}[{with_refs(call, lambda j: f'#E{j + 1}')}]"]
    return "\n".join(lines)


def rewoo_solve_reply(prompt: str) -> str:
    task, text = task_in(prompt), visible(prompt)
    found = gold_in(task, text)
    if found is not None:
        return f"Answer: {found}"
    failed = re.search(r"^(#E\d+) = .*\nEvidence: error: (.*)$", text, re.MULTILINE)
    if failed:
        return f"Answer: Unknown: {failed.group(1)} failed ({failed.group(2).strip()})."
    return f"Answer: {final_answer(task, text)}"


# Which of this module's rules answers a prompt, decided once per prompt (the ledger's
# rule names still say which one): the most specific role marker first.
KINDS = [
    ("runtime checkpoint", (CHECKPOINT_MARKER,)), ("fallback", (FALLBACK_MARKER,)),
    ("ReWOO planner", (REWOO_PLANNER,)), ("ReWOO solver", (REWOO_SOLVER,)),
    ("hybrid replanner", (HYBRID_PLANNER, HYBRID_REPLAN)), ("hybrid planner", (HYBRID_PLANNER,)),
    ("hybrid sub-goal", (HYBRID_STEP,)), ("plan replanner", (PLANNER_ROLE, REPLAN_HEADER)),
    ("planner", (PLANNER_ROLE,)), ("plan-and-solve executor", (EXECUTOR_ROLE,)),
    ("plan-and-execute step", (STEP_ROLE,)), ("reviewer", (REVIEW_MARKER,)),
    ("Act-only", (ACT_MARKER,)), ("ReAct", (REACT_MARKER,)),
]


def kind_of(prompt: str) -> str:
    """The name of the rule that answers this prompt, or "" when it is not about a task the stand-in knows."""
    return _kind_of(prompt, known_now())


@functools.lru_cache(maxsize=256)
def _kind_of(prompt: str, known) -> str:  # `known`: the tasks known besides the files' (key_paths.knowing)
    if task_in(prompt) is None:
        return ""
    return next((kind for kind, markers in KINDS if all(m in prompt for m in markers)), "")


REPLIES = {
    "runtime checkpoint": checkpoint_reply,
    "fallback": fallback_reply,
    "ReWOO planner": rewoo_plan_reply,
    "ReWOO solver": rewoo_solve_reply,
    "hybrid replanner": lambda p: replan_reply(p, "Failed sub-goal"),
    "hybrid planner": hybrid_plan_reply,
    "hybrid sub-goal": hybrid_step,
    "plan replanner": lambda p: replan_reply(p, "Failed step"),
    "planner": plan_reply,
    "plan-and-solve executor": plan_and_solve_step,
    "plan-and-execute step": plan_execute_step,
    "reviewer": review_reply,
    "Act-only": lambda p: react_reply(p, act_only=True),
    "ReAct": react_reply,
}

RULES = [Rule(lambda p, kind=kind: kind_of(p) == kind, REPLIES[kind], name=f"tasks: {kind}") for kind, _ in KINDS]
