"""Stand-in rules for the real-model chapter: the same questions through both action channels.

Text-protocol prompts (ReAct's role prompt) get `Thought:/Action:` replies; native prompts (the
tool-calling role prompt) get `AssistantTurn`s with tool calls. Both read the state of the run
from the history in the prompt: which facts the tool results already hold.
`sick_tool_caller(disease)` is a stand-in that sends one kind of bad tool call until told off.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Optional

from ..native import NATIVE_FALLBACK_MARKER, NATIVE_MARKER
from ..protocol import AssistantTurn, FunctionCall
from ..scripted import Rule, ScriptedLLM
from .react import CHECKPOINT_QUESTION, REACT_MARKER



@dataclass
class Task:
    """A question the stand-in solves: Search (optional), then Calculate, then Finish."""

    question: str
    search: Optional[str]
    fact: str  # what the search result must contain before the stand-in calculates
    expression: str
    answer: str


TASKS = [
    Task(CHECKPOINT_QUESTION, "Steve Jobs", "1955", "(2024 - 1955) * 365", "25185"),
    Task("How many years are there from the year Grace Hopper was born to 2024?",
         "Grace Hopper", "1906", "2024 - 1906", "118"),
    Task("How many years passed from the Apollo 11 Moon landing to 2024?", "Apollo 11", "1969", "2024 - 1969", "55"),
    Task("What is 17 * 23?", None, "", "17 * 23", "391"),
]
QUESTIONS = [task.question for task in TASKS]


_CALL_LINE = re.compile(r"^(?:(?:Thought|Action):.*|[A-Za-z_][\w-]*\(.*\))$", re.MULTILINE)


def _results(prompt: str, question: str) -> str:
    """The tool results after the question: the model's own thoughts and calls are left out."""
    return _CALL_LINE.sub("", prompt.split(f"Question: {question}", 1)[-1])


def next_move(task: Task, prompt: str) -> tuple[str, str, str]:
    """(thought, tool, input) for the next step, from what the history already holds."""
    history = _results(prompt, task.question)
    if re.search(rf"(?<![\d.]){re.escape(task.answer)}(?![\d.])", history):
        return f"The calculator says {task.answer}.", "Finish", task.answer
    if task.search is None or task.fact in history:
        return f"Now I compute {task.expression}.", "Calculate", task.expression
    return f"I need a fact about {task.search}.", "Search", task.search


def call(name: str, arguments: str) -> FunctionCall:
    """A tool call with an id derived from its content (the stand-in never counts)."""
    return FunctionCall("call_" + hashlib.sha1(f"{name}{arguments}".encode()).hexdigest()[:10], name, arguments)


def native_turn(thought: str, tool: str, value: str) -> AssistantTurn:
    field = "answer" if tool == "Finish" else "input"
    return AssistantTurn(thought, [call(tool, json.dumps({field: value}))])


def _text_reply(task: Task):
    def reply(prompt: str) -> str:
        thought, tool, value = next_move(task, prompt)
        return f"Thought: {thought}\nAction: {tool}[{value}]"

    return reply


def _native_reply(task: Task):
    return lambda prompt: native_turn(*next_move(task, prompt))


def _native_fallback(prompt: str) -> AssistantTurn:
    return AssistantTurn("Only Finish is left.", [call("Finish", json.dumps(
        {"answer": "Unknown: the tool results gathered do not settle it"}))])


def _asks(marker: str, question: str):
    return lambda prompt: marker in prompt and f"Question: {question}" in prompt


RULES = [
    Rule(lambda p: NATIVE_MARKER in p and NATIVE_FALLBACK_MARKER in p, _native_fallback, name="native-fallback"),
    *[Rule(_asks(NATIVE_MARKER, t.question), _native_reply(t), name=f"native-task-{i}") for i, t in enumerate(TASKS)],
    # The checkpoint's text rule is chapter 02's own (scripts/react.py); these are the other questions.
    *[Rule(_asks(REACT_MARKER, t.question), _text_reply(t), name=f"text-task-{i}") for i, t in enumerate(TASKS[1:], 1)],
]


# --- a stand-in with one disease: a bad tool call ---------------------------------------------

SEARCH = '{"input": "Steve Jobs"}'
DISEASES = {
    "none": None,
    "no tool call": AssistantTurn("I remember his birth year, so I can answer from memory."),
    "unknown tool": AssistantTurn("I look him up.", [call("WebSearch", SEARCH)]),
    "arguments not JSON": AssistantTurn("I look him up.", [call("Search", "{'input': 'Steve Jobs'}")]),
    "missing field": AssistantTurn("I look him up.", [call("Search", '{"query": "Steve Jobs"}')]),
    "a list, not a string": AssistantTurn("I look him up.", [call("Search", '{"input": ["Steve Jobs"]}')]),
    "three calls at once": AssistantTurn("All at once.", [
        call("Search", SEARCH), call("Calculate", '{"input": "(2024 - 1955) * 365"}'),
        call("Finish", '{"answer": "25185"}')]),
}
# How the loop tells each disease off (a phrase of agentkit.native's feedback), so a recovering
# stand-in knows it was corrected by reading its prompt.
FEEDBACK = {"no tool call": "Your reply called no tool", "three calls at once": "not run: this loop"}


def sick_tool_caller(disease: str, recovers: bool = True) -> ScriptedLLM:
    """The course stand-in, but on the checkpoint's native prompt it sends `disease`'s bad reply;
    with `recovers`, only until the loop's feedback for it is in the prompt."""
    if disease not in DISEASES:
        raise ValueError(f"unknown disease {disease!r}; choose from {', '.join(DISEASES)}")
    from . import course_script

    llm = ScriptedLLM(course_script())
    if DISEASES[disease] is not None:
        told_off = FEEDBACK.get(disease, "error: ")

        def sick(prompt: str) -> bool:
            if NATIVE_FALLBACK_MARKER in prompt or not _asks(NATIVE_MARKER, CHECKPOINT_QUESTION)(prompt):
                return False
            return not (recovers and told_off in prompt)

        llm.add(sick, DISEASES[disease], name=f"sick: {disease}")
    return llm
