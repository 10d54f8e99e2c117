"""ReWOO: plan every tool call up front with evidence variables, run them, solve once.

Cost: exactly 2 LLM calls (planner, solver), however many tool calls the plan makes.
The price is that the planner writes every call before seeing any result.

What the plan parser accepts, exactly:

* Evidence lines `#E<n> = Tool[input]`, anywhere on a line (a `Plan: ...` text may stand
  before it on the same line, or on the line above; that text is kept as the step's reason).
  Leading list marks, `>`, `*` and backticks are ignored; code-fence lines are skipped.
* The input runs from the `[` after the tool name to the LAST `]` on the line.
* An input may name earlier evidence as `#E<k>`; other lines are ignored.

It raises PlanError (a ValueError) that quotes the offending line, before any tool runs, for:
no evidence line at all; more than `max_steps` of them; a line that starts with `#E<n>` but
is not `#E<n> = Tool[input]`; a variable defined twice; and a reference to evidence that
is not defined on an EARLIER line (missing, the line itself, or a later one). So no tool is
ever called with `#E3` in its input.

Execution replaces each reference by the full text of that evidence, in one pass (evidence
that itself contains "#E2" is not expanded again), and runs the tools through the executor,
which never raises. The solver sees the question, the plan and every piece of evidence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .llm import default_llm, ledger
from .text import shorten
from .tools import default_executor

MAX_PLAN_STEPS = 10
PLANNER_MARKER = "You are the planner of a ReWOO agent"
SOLVER_MARKER = "You are the solver of a ReWOO agent"

PLANNER_PROMPT = PLANNER_MARKER + """. Plan every tool call needed to answer the question
before any tool runs: you will not see the results while planning.
For each step write a line "Plan: <why>", then a line "#E<n> = Tool[input]", numbering from #E1.
An input may write #E<k> to stand for the result of an EARLIER step.
Do not answer the question. Use at most {max_steps} steps.

Tools:
{tools}

Question: {question}"""

SOLVER_PROMPT = SOLVER_MARKER + """. The plan below has been carried out; after each
#E line comes the evidence its tool returned. Answer the question from this evidence alone,
in one line that starts with "Answer:". If the evidence does not settle it, answer
"Unknown" and say what is missing.

Question: {question}

{evidence}"""

_ASSIGN = re.compile(r"#E(\d+)\s*=\s*([A-Za-z_][\w-]*)\s*\[(.*)\]", re.IGNORECASE)
_LOOKS_LIKE_STEP = re.compile(r"^[\s>*`\-]*(?:\d+[.)]\s*)?#E\d+", re.IGNORECASE)
_PLAN_LABEL = re.compile(r"^[\s>*`\-]*(?:\d+[.)]\s*)?\**\s*plan(?:\s*\d+)?\s*\**\s*:\s*\**\s*", re.IGNORECASE)
_REFERENCE = re.compile(r"#E(\d+)", re.IGNORECASE)
_ANSWER_LABEL = re.compile(r"^\s*\**\s*answer\s*\**\s*:\s*\**\s*", re.IGNORECASE)


class PlanError(ValueError):
    """A ReWOO plan that must not run; the message quotes the line and says why."""


@dataclass
class PlanStep:
    variable: str  # "#E1"
    tool: str
    input: str  # as planned, references not yet replaced
    reason: str = ""
    line: str = ""


def _refuse(line_number: int, line: str, why: str) -> PlanError:
    return PlanError(f"Plan line {line_number} {line.strip()!r}: {why}")


def parse_rewoo_plan(raw: str, max_steps: int = MAX_PLAN_STEPS) -> list[PlanStep]:
    """The steps of a planner reply, validated as the module docstring says; raises PlanError."""
    steps: list[PlanStep] = []
    reason = ""
    for number, line in enumerate(str(raw).splitlines(), 1):
        if line.strip().startswith("```"):
            continue
        match = _ASSIGN.search(line)
        if match is None:
            if _LOOKS_LIKE_STEP.match(line):
                raise _refuse(number, line, "an evidence line must read #E<n> = Tool[input]")
            label = _PLAN_LABEL.match(line)
            if label:
                reason = line[label.end():].strip()
            continue
        variable, tool, tool_input = f"#E{int(match.group(1))}", match.group(2), match.group(3).strip()
        defined = [step.variable for step in steps]
        if variable in defined:
            raise _refuse(number, line, f"{variable} is defined twice")
        for ref in _REFERENCE.findall(tool_input):
            wanted = f"#E{int(ref)}"
            if wanted not in defined:
                have = ", ".join(defined) or "none"
                raise _refuse(number, line, f"{wanted} refers to evidence that does not exist before this line "
                                            f"(defined so far: {have}); a step can only use EARLIER results")
        before = line[: match.start()]
        label = _PLAN_LABEL.match(before)
        own_reason = before[label.end():].strip() if label else ""
        steps.append(PlanStep(variable, tool, tool_input, own_reason or reason, line.strip()))
        reason = ""
        if len(steps) > max_steps:
            raise _refuse(number, line, f"the plan has more than {max_steps} steps")
    if not steps:
        shown = repr(str(raw)[:200]) + (" ..." if len(str(raw)) > 200 else "")
        raise PlanError(f"The planner's reply holds no evidence line (#E1 = Tool[input]): {shown}")
    return steps


def substitute(tool_input: str, evidence: dict[str, str]) -> str:
    """Replace each #E<k> by its evidence text, in one pass."""
    return _REFERENCE.sub(lambda m: evidence[f"#E{int(m.group(1))}"], tool_input)


def answer_from(reply: str) -> str:
    """The solver's answer: its first non-empty line, without an "Answer:" label."""
    lines = [line for line in str(reply).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return _ANSWER_LABEL.sub("", first).strip()


class ReWOOAgent:
    """Plan (1 call), run every tool call, solve (1 call). `.plan`, `.evidence`, `.answer` after a run."""

    def __init__(self, llm=None, tools=None, max_steps: int = MAX_PLAN_STEPS) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.llm = llm if llm is not None else default_llm()
        self.tools = tools if tools is not None else default_executor()
        self.max_steps = max_steps
        self.plan: list[PlanStep] = []
        self.evidence: dict[str, str] = {}
        self.inputs: dict[str, str] = {}  # what each tool really received
        self.answer = ""
        self.stop_reason = ""

    @property
    def steps(self) -> int:
        return len(self.plan)

    def planner_prompt(self, question: str) -> str:
        return PLANNER_PROMPT.format(max_steps=self.max_steps, tools=self.tools.describe(), question=question)

    def solver_prompt(self, question: str) -> str:
        blocks = [f"{step.variable} = {step.tool}[{step.input}]\nEvidence: {self.evidence[step.variable]}"
                  for step in self.plan]
        return SOLVER_PROMPT.format(question=question, evidence="\n\n".join(blocks))

    def run(self, question: str, verbose: bool = True) -> str:
        self.plan, self.evidence, self.inputs, self.answer, self.stop_reason = [], {}, {}, "", ""
        self.plan = parse_rewoo_plan(self.llm.think(self.planner_prompt(question)), self.max_steps)
        for step in self.plan:
            self.inputs[step.variable] = substitute(step.input, self.evidence)
            self.evidence[step.variable] = self.tools.run(step.tool, self.inputs[step.variable])
            if verbose:
                print(f"{step.variable} = {step.tool}[{shorten(self.inputs[step.variable], 110)}]")
                print(f"    -> {shorten(self.evidence[step.variable], 110)}")
        self.answer = answer_from(self.llm.think(self.solver_prompt(question)))
        self.stop_reason = "finished"
        if verbose:
            print(f"Answer: {self.answer}   ({len(ledger(self.llm))} LLM calls in the ledger)")
        return self.answer

