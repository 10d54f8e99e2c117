"""ReAct: Thought, Action, Observation, until Finish, with fuses.

The model is stateless, so every call re-sends the role prompt, the question and the
whole history of earlier steps. That is why each prompt is longer than the last.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from .llm import default_llm, ledger
from .parsing import FINISH, Parsed, parse_reply
from .text import shorten
from .tools import default_executor

# Phrases of the prompts below that identify them (a stand-in model keys on them).
REACT_MARKER = "You are a ReAct agent"
FALLBACK_MARKER = "Tools are now switched off"

ROLE_PROMPT = """You are a ReAct agent: you answer a question by alternating Thought, Action and Observation.
Each turn, write exactly two lines and then stop:
Thought: what you know so far and what to do next
Action: ToolName[input]
Write a single Action per turn. The system runs it and writes the Observation for you;
never write an Observation yourself. Tool input stays on the Action line.
When you know the answer, write: Action: Finish[your answer]

Tools:
{tools}"""

FALLBACK_PROMPT = """You are a ReAct agent whose run was stopped early. Tools are now switched off.
Using only the question and the steps gathered below, give your best answer in one line:
Action: Finish[your answer]
If the steps do not settle it, say what is still unknown inside the brackets."""


class StopRun(Exception):
    """Raise from an on_step callback to end the run; the message becomes the answer."""


@dataclass
class Step:
    """One turn of the loop: what the model thought and asked, and what it saw back."""

    thought: str
    action: str  # a tool name, "Finish", or "" when the reply held no usable action
    argument: str
    observation: str
    executed: bool = False  # the tool really ran (False for Finish, format errors, a fused repeat)
    invented_observation: bool = False  # the reply carried its own Observation text, dropped
    reply: str = ""  # the raw reply, for inspection; never re-sent
    intervention: str = ""  # a runtime guard's special Observation line, re-sent under this step

    def as_history(self) -> str:
        # Every later call re-sends this text: remember it, until one of its fields changes.
        key = (self.thought, self.action, self.argument, self.observation, self.intervention)
        if self._history[0] == key:
            return self._history[1]
        thought = f"Thought: {self.thought}\n" if self.thought else ""
        action = f"Action: {self.action}[{self.argument}]\n" if self.action else ""
        guard = f"\n{self.intervention}" if self.intervention else ""
        text = f"{thought}{action}Observation: {self.observation}{guard}"
        self._history = (key, text)
        return text

    _history = (None, "")  # not a field: no part of equality or repr


def _same_action(a: Step, action: str, argument: str) -> bool:
    return a.action.lower() == action.lower() and " ".join(a.argument.split()).casefold() == " ".join(
        argument.split()
    ).casefold()


class ReActAgent:
    """A ReAct loop over any LLM and a ToolExecutor, with a repeat fuse and max_steps."""

    _system = (None, "")  # ((template, tool list), role prompt) of the last call

    def __init__(
        self,
        llm=None,
        tools=None,
        max_steps: int = 5,
        *,
        repeat_fuse: bool = True,
        finish_fallback: bool = False,
        show_steps_left: bool = False,
        on_step: Optional[Callable[[Step], Optional[str]]] = None,
        parse: Callable = parse_reply,
        runtime=None,
        context=None,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.llm = llm if llm is not None else default_llm()
        self.tools = tools if tools is not None else default_executor()
        self.max_steps = max_steps
        self.repeat_fuse = repeat_fuse
        self.finish_fallback = finish_fallback
        self.show_steps_left = show_steps_left
        self.on_step = on_step
        self.parse = parse  # swappable only to show the incident's naive parser
        self.runtime = runtime  # agentkit.runtime.Runtime: watches each step, may hint, redirect or stop
        self.context = context  # agentkit.context.LayeredContext; None re-sends the whole history
        self.interventions: list = []  # what the runtime injected in the last run
        self.trace: list[Step] = []
        self.stop_reason = ""
        self.unverified = False
        self.answer = ""
        self._ledger_start = self._log_start = 0

    # --- the prompt ---------------------------------------------------------

    def messages(self, question: str, hints: str = "", steps_left: Optional[int] = None) -> list[dict]:
        """The full prompt of the next call: role prompt, hints, question, history (whole, or as `context` keeps it)."""
        head, tail = [], []
        if hints.strip():
            head.append(f"Hints from earlier work:\n{hints.strip()}")
        head.append(f"Question: {question}")
        if steps_left is not None:
            last = " This is your last step: Finish now with your best answer." if steps_left == 1 else ""
            tail.append(f"Steps left (including this one): {steps_left}.{last}")

        key = (ROLE_PROMPT, self.tools.describe())
        if key != self._system[0]:  # one string object for as long as it holds: its hash is computed once
            self._system = (key, ROLE_PROMPT.format(tools=key[1]))
        system = self._system[1]

        def assemble(history: list[str]) -> list[dict]:
            return [
                {"role": "system", "content": system},
                {"role": "user", "content": "\n\n".join(head + history + tail)},
            ]

        if self.context is not None:
            return self.context.fit(assemble, self.trace, question)
        return assemble([step.as_history() for step in self.trace])

    # --- the loop -----------------------------------------------------------

    def run(self, question: str, verbose: bool = True, hints: str = "") -> str:
        """Answer `question`; see .answer, .trace, .stop_reason, .unverified and the ledgers afterwards."""
        self.trace, self.stop_reason, self.unverified, self.interventions = [], "", False, []
        if self.runtime is not None:
            self.runtime.begin(question)
        self._ledger_start, self._log_start = len(ledger(self.llm)), len(self.tools.log)
        answer = None
        for number in range(1, self.max_steps + 1):
            steps_left = self.max_steps - number + 1 if self.show_steps_left else None
            parsed, reply = self._decide(self.messages(question, hints, steps_left))
            step, answer = self._act(parsed, reply)
            self.trace.append(step)
            if answer is None and self.runtime is not None:
                stop = self.runtime.review(self, question, step)  # may add step.intervention
                if stop:
                    self.stop_reason, answer = stop, step.intervention
            if verbose:
                _print_step(number, step)
            if answer is not None:
                break
            if self.on_step is not None:
                try:
                    note = self.on_step(step)
                except StopRun as stop:
                    self.stop_reason, answer = "stopped", str(stop)
                    break
                if note:
                    step.observation = f"{step.observation}\n{note}"
        else:
            self.stop_reason = "max_steps"
            answer = f"Stopped by max_steps: no Finish after {self.max_steps} steps."
        # A runtime stop always ends with the fallback: its last level promises an (unverified) answer.
        if self.stop_reason != "finished" and (self.finish_fallback or self.stop_reason.startswith("runtime")):
            answer, self.unverified = self._fallback(question, hints), True
        self.answer = answer
        if verbose:
            flag = " (unverified: fallback after the fuse)" if self.unverified else ""
            print(f"Answer [{self.stop_reason}]{flag}: {answer}")
        return answer

    def _decide(self, messages: list[dict]) -> tuple[Parsed, str]:
        """One model call: what the reply asks for, and the raw reply (the one seam for another action channel)."""
        reply = self.llm.think(messages)
        return self.parse(reply), reply

    def _act(self, parsed: Parsed, reply: str) -> tuple[Step, Optional[str]]:
        """Carry out one parsed reply; returns the step and the answer if the run ends."""
        step = Step(parsed.thought, parsed.action, parsed.argument, "", False, parsed.invented_observation, reply)
        if parsed.action == FINISH:
            self.stop_reason = "finished"
            return step, parsed.argument
        if not parsed.action:
            step.observation = parsed.problem
            return step, None
        last = self.trace[-1] if self.trace else None
        if self.repeat_fuse and last is not None and last.executed and _same_action(last, parsed.action, parsed.argument):
            self.stop_reason = "repeat_fuse"
            step.observation = (
                f"Stopped by the repeat fuse: {parsed.action}[{shorten(parsed.argument, 80)}] was asked for twice "
                "in a row, so the tool was not run again."
            )
            return step, step.observation
        step.observation = self.tools.run(parsed.action, parsed.argument)
        step.executed = True
        return step, None

    def _fallback(self, question: str, hints: str) -> str:
        """One last call with tools off: the best answer from what was gathered, unverified."""
        messages = self.messages(question, hints)
        messages[0] = {"role": "system", "content": FALLBACK_PROMPT}
        reply = self.llm.think(messages)
        parsed = parse_reply(reply)
        return parsed.argument if parsed.action == FINISH else " ".join(str(reply).split())

    # --- what this run cost -----------------------------------------------------

    @property
    def run_calls(self) -> list:
        """The LLM ledger entries of the last run only (empty for an LLM that keeps no ledger)."""
        return ledger(self.llm)[self._ledger_start :]

    @property
    def run_tool_calls(self) -> list:
        """The tool log entries of the last run only."""
        return self.tools.log[self._log_start :]

    @property
    def invented_observations(self) -> list[Step]:
        """Steps whose reply carried an Observation the model wrote itself (dropped)."""
        return [s for s in self.trace if s.invented_observation]



def _print_step(number: int, step: Step) -> None:
    print(f"Step {number}")
    if step.thought:
        print(f"  Thought: {shorten(step.thought, 200)}")
    if step.action:
        print(f"  Action: {step.action}[{shorten(step.argument, 200)}]")
    if step.invented_observation:
        print("  (the reply wrote its own Observation: dropped, not run, not re-sent)")
    if step.action != FINISH:
        print(f"  Observation: {shorten(step.observation, 200)}")
    if step.intervention:
        print(f"  {shorten(step.intervention, 300)}")
