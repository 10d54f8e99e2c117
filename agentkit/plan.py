"""Plan-and-Solve and Plan-and-Execute: plan once as a JSON list, then run the steps.

Plan-and-Solve costs exactly 1 + N calls, known as soon as the plan is parsed.
Plan-and-Execute runs each step as a small bounded ReAct with tools, retries a
failed step, then asks the planner to replan the remaining work. Its wording is data
(`PlanPrompts`) and each inner ReAct may run on a runtime (`runtime_factory`), so chapter
09's hybrid (`agentkit.hybrid.HybridAgent`) is this loop with other prompts and one try.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable, Optional

from .faults import FlakyTool, inject_failure  # noqa: F401 (chapter 04 imports them from here)
from .llm import default_llm, ledger
from .tools import ERROR_PREFIX

MAX_PLAN_STEPS = 10
QUOTE_CHARS = 200

PLANNER_ROLE = "You are the planner of a plan-and-solve agent."
EXECUTOR_ROLE = "You are the executor of a plan-and-solve agent."
STEP_ROLE = "You carry out one step of a plan-and-execute agent's plan."
REPLAN_HEADER = "A step of your plan failed."

PLANNER_PROMPT = """{role}
Break the question into at most {max_steps} short steps that, done in order, answer it.
Each step must be doable with the results of the steps before it.{tools}
Reply with a JSON list of strings and nothing else, for example: ["first step", "second step"]

Question: {question}"""

REPLAN_PROMPT = """{role}
{header} Write a new plan for the REMAINING work only: the completed steps below are done
and their results stay valid, so do not repeat them. Find another way around the failure.{tools}
Reply with a JSON list of at most {max_steps} strings and nothing else.

Question: {question}
Plan so far:
{plan}
Completed steps and their results:
{done}
Failed step: {failed}
Why it failed: {reason}"""

EXECUTOR_PROMPT = """{role}
Do only the current step of the plan, using the results of the earlier steps.
Reply with the result of the current step in one short sentence.

{context}"""

STEP_PROMPT = """{role}
Do only the current step below, using the results of the earlier steps; use a tool if
the step needs one, and finish with the step's result. If you cannot do it, say so.

{context}"""


@dataclass(frozen=True)
class PlanPrompts:
    """The wording of a planning agent: its planner, replanner and step templates.

    `plan` and `replan` are formatted with role, header, max_steps, question and tools
    (`tools_intro` then the tool list, or "" without tools); `replan` also with plan, done,
    failed and reason; `step` with role and context. A template may leave any of them out.
    """

    plan: str = PLANNER_PROMPT
    replan: str = REPLAN_PROMPT
    step: str = STEP_PROMPT
    tools_intro: str = "\nThe executor can use these tools:\n"


# --- the plan parser ----------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _quote(raw: str) -> str:
    """The start of a raw reply, for an error message."""
    return repr(raw[:QUOTE_CHARS]) + (" ..." if len(raw) > QUOTE_CHARS else "")


def _first_json_list(text: str):
    """The first JSON list in the text (fenced blocks first), or None."""
    decoder = json.JSONDecoder()
    for chunk in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        for bracket in re.finditer(r"\[", chunk):
            try:
                value, _ = decoder.raw_decode(chunk, bracket.start())
            except (json.JSONDecodeError, RecursionError):  # nesting past the recursion limit is no plan
                continue
            if isinstance(value, list):
                return value
    return None


def _step_text(item) -> str | None:
    if isinstance(item, str):
        return item.strip() or None
    if isinstance(item, dict) and isinstance(item.get("task"), str):
        return item["task"].strip() or None
    return None


def parse_plan(raw: str, max_steps: int = MAX_PLAN_STEPS) -> list[str]:
    """The steps of a planner reply: a JSON list of strings or of {"step", "task"} objects.

    Raises ValueError quoting the reply when there is no list or it has not 1..max_steps steps.
    """
    items = _first_json_list(raw)
    if items is None:
        raise ValueError(f"The planner's reply holds no JSON list of steps: {_quote(raw)}")
    if not 1 <= len(items) <= max_steps:
        raise ValueError(
            f"The plan has {len(items)} steps; a plan needs 1 to {max_steps}. "
            f"Planner reply: {_quote(raw)}"
        )
    steps = [_step_text(item) for item in items]
    if None in steps:
        bad = items[steps.index(None)]
        raise ValueError(
            f"Plan step {bad!r} is neither a non-empty string nor a {{\"step\", \"task\"}} object. "
            f"Planner reply: {_quote(raw)}"
        )
    return steps


# --- shared pieces ------------------------------------------------------------


@dataclass
class StepResult:
    step: str
    result: str


def numbered(lines: list[str], start: int = 1) -> str:
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, start))


def earlier_results(done: list[StepResult]) -> str:
    """Every earlier step with its result, or "(none)" before the first."""
    if not done:
        return "(none)"
    return "\n".join(f"{i}. {d.step} -> {d.result}" for i, d in enumerate(done, 1))


def step_context(question: str, plan: list[str], done: list[StepResult], index: int) -> str:
    """What an executor needs: the question, the whole plan, earlier results, the current step."""
    return "\n".join([
        f"Question: {question}",
        "Plan:",
        numbered(plan),
        "Results of earlier steps:",
        earlier_results(done),  # the carry-over: without it later steps answer blind
        f"Current step ({index + 1} of {len(plan)}): {plan[index]}",
    ])


def _default_llm(llm):
    return llm if llm is not None else default_llm()


# --- Plan-and-Solve -----------------------------------------------------------


class Planner:
    """Asks the model for a plan (one call) and validates it."""

    def __init__(self, llm=None, max_steps: int = MAX_PLAN_STEPS, tools_description: str = "", *,
                 prompts: PlanPrompts = PlanPrompts()):
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.llm = _default_llm(llm)
        self.max_steps = max_steps
        self.tools_description = tools_description
        self.prompts = prompts

    def _tools(self) -> str:
        if not self.tools_description:
            return ""
        return self.prompts.tools_intro + self.tools_description

    def plan(self, question: str) -> list[str]:
        prompt = self.prompts.plan.format(
            role=PLANNER_ROLE, max_steps=self.max_steps, tools=self._tools(), question=question
        )
        return parse_plan(self.llm.think(prompt), self.max_steps)

    def replan(self, question: str, plan: list[str], done: list[StepResult], failed: str,
               reason: str) -> list[str]:
        """A plan for the remaining work, given what is done and why a step failed."""
        prompt = self.prompts.replan.format(
            role=PLANNER_ROLE, header=REPLAN_HEADER, tools=self._tools(), max_steps=self.max_steps,
            question=question, plan=numbered(plan), done=earlier_results(done), failed=failed,
            reason=reason,
        )
        return parse_plan(self.llm.think(prompt), self.max_steps)


class Executor:
    """Runs one step with one call; the prompt carries everything done so far."""

    def __init__(self, llm=None):
        self.llm = _default_llm(llm)

    def prompt(self, question: str, plan: list[str], done: list[StepResult], index: int) -> str:
        return EXECUTOR_PROMPT.format(
            role=EXECUTOR_ROLE, context=step_context(question, plan, done, index)
        )

    def execute(self, question: str, plan: list[str], done: list[StepResult], index: int) -> str:
        return self.llm.think(self.prompt(question, plan, done, index)).strip()


class PlanAndSolveAgent:
    """Plan once, execute each step once: exactly 1 + N calls. `.plan` is the last run's plan."""

    def __init__(self, llm=None, max_plan_steps: int = MAX_PLAN_STEPS, executor_class=Executor):
        self.llm = _default_llm(llm)
        self.planner = Planner(self.llm, max_plan_steps)
        self.executor = executor_class(self.llm)
        self.plan: list[str] = []
        self.results: list[StepResult] = []

    def run(self, question: str, verbose: bool = True) -> str:
        self.plan, self.results = self.planner.plan(question), []
        if verbose:
            print(f"Plan ({len(self.plan)} steps, so this run costs 1 + {len(self.plan)} calls):")
            print(numbered(self.plan))
        for index, step in enumerate(self.plan):
            result = self.executor.execute(question, self.plan, self.results, index)
            self.results.append(StepResult(step, result))
            if verbose:
                print(f"  step {index + 1} -> {result}")
        return self.results[-1].result


# --- Plan-and-Execute ---------------------------------------------------------

_NO_INFORMATION = re.compile(r"^\s*no information\b", re.IGNORECASE)
_CANNOT = re.compile(r"\b(cannot|can't|can not|unable to|could not|couldn't)\b", re.IGNORECASE)


def step_failure(answer: str, tool_calls: list, stop_reason: str) -> str:
    """Why a step's ReAct run failed ("" if it did not), from its answer and its tool calls."""
    errors = [call for call in tool_calls if not call.ok]
    if errors:
        return "tool error: " + errors[-1].output.removeprefix(ERROR_PREFIX).strip()
    if stop_reason != "finished":
        return f"the step stopped without finishing ({stop_reason})"
    if not answer.strip():
        return "the step returned an empty result"
    if tool_calls and _NO_INFORMATION.match(tool_calls[-1].output):
        return f"no information: {tool_calls[-1].output}"
    if _NO_INFORMATION.match(answer):
        return f"no information: {answer}"
    if _CANNOT.search(answer):
        return f"the executor says it cannot do the step: {answer}"
    return ""


@dataclass
class Attempt:
    """One try at one step: its result, and why it failed ("" if it did not)."""

    step_number: int
    step: str
    attempt: int
    result: str
    failure: str = ""
    llm_calls: int = 0  # read from the LLM's ledger: 0 for an LLM that keeps none
    tool_calls: int = 0
    react_steps: int = 0  # turns of the inner ReAct


class PlanAndExecuteAgent:
    """Plan, run each step as a bounded ReAct with tools, retry, then replan the rest.

    A step gets `max_attempts` tries; then the planner replans the remaining work from
    the completed steps and the failure reason, at most `max_replans` times per run.
    With `runtime_factory`, each inner ReAct runs on `runtime_factory()` (a fresh one per
    try); what the runtimes did is in `.interventions` as (step number, Intervention).
    """

    noun, plan_title = "step", "Plan"  # how printed lines name the plan and its items

    def __init__(self, llm=None, tools=None, *, max_plan_steps: int = MAX_PLAN_STEPS,
                 react_steps: int = 4, max_attempts: int = 2, max_replans: int = 2,
                 runtime_factory: Optional[Callable] = None, prompts: PlanPrompts = PlanPrompts()):
        from .react import ReActAgent  # the ReAct chapter's loop; no second loop here
        from .tools import default_executor

        if react_steps < 1 or max_attempts < 1 or max_replans < 0:
            raise ValueError("react_steps and max_attempts must be >= 1, max_replans >= 0")
        self.react_class = ReActAgent
        self.llm = _default_llm(llm)
        self.tools = tools if tools is not None else default_executor()
        self.prompts, self.runtime_factory = prompts, runtime_factory
        self.planner = Planner(self.llm, max_plan_steps, self.tools.describe(), prompts=prompts)
        self.react_steps, self.max_attempts, self.max_replans = react_steps, max_attempts, max_replans
        self.plan: list[str] = []
        self.plans: list[list[str]] = []  # the first plan, then one per replan
        self.results: list[StepResult] = []
        self.attempts: list[Attempt] = []
        self.interventions: list[tuple[int, object]] = []
        self.replans = 0
        self.stop_reason = ""
        self.answer = ""

    def _react(self):
        extra = {"runtime": self.runtime_factory()} if self.runtime_factory is not None else {}
        return self.react_class(self.llm, self.tools, max_steps=self.react_steps, **extra)

    def _attempt(self, question: str, index: int, attempt: int, verbose: bool) -> Attempt:
        calls_before, tools_before = len(ledger(self.llm)), len(self.tools.log)
        react = self._react()
        context = step_context(question, self.plan, self.results, index)
        answer = react.run(self.prompts.step.format(role=STEP_ROLE, context=context), verbose=False)
        tool_calls = self.tools.log[tools_before:]
        self.interventions += [(index + 1, i) for i in getattr(react, "interventions", [])]
        record = Attempt(index + 1, self.plan[index], attempt, answer,
                         step_failure(answer, tool_calls, react.stop_reason),
                         len(ledger(self.llm)) - calls_before, len(tool_calls), len(react.trace))
        if verbose:
            self._say(record)
        return record

    def _say(self, record: Attempt) -> None:
        outcome = f"FAILED ({record.failure})" if record.failure else f"-> {record.result}"
        print(f"  step {record.step_number}, try {record.attempt}: {outcome}")

    def run(self, question: str, verbose: bool = True) -> str:
        self.plan, self.plans, self.results, self.attempts, self.interventions = [], [], [], [], []
        self.replans, self.stop_reason, self.answer = 0, "", ""
        self.plan = self.planner.plan(question)
        self.plans = [list(self.plan)]
        if verbose:
            print(f"{self.plan_title}:\n{numbered(self.plan)}")
        index = 0
        while index < len(self.plan):
            for attempt in range(1, self.max_attempts + 1):
                record = self._attempt(question, index, attempt, verbose)
                self.attempts.append(record)
                if not record.failure:
                    break
            if not record.failure:
                self.results.append(StepResult(record.step, record.result))
                index += 1
                continue
            if self.replans >= self.max_replans:
                tries = f" {self.max_attempts} times" if self.max_attempts > 1 else ""
                self.stop_reason = "replan_budget"
                self.answer = (
                    f"Stopped without an answer: {self.noun} {index + 1} ({record.step!r}) failed{tries} "
                    f"({record.failure}) and the replan budget ({self.max_replans}) ran out. "
                    f"Completed {self.noun}s:\n{earlier_results(self.results)}"
                )
                return self.answer
            self.replans += 1
            remaining = self.planner.replan(question, self.plan, self.results, record.step, record.failure)
            self.plan = [done.step for done in self.results] + remaining
            self.plans.append(list(self.plan))
            if verbose:
                print(f"Replan {self.replans}, the remaining {self.noun}s:\n{numbered(remaining, index + 1)}")
        self.stop_reason, self.answer = "finished", self.results[-1].result
        return self.answer
