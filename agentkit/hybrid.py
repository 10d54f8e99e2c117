"""Hybrids: one paradigm's loop inside another's.

`HybridAgent`: plan outside, ReAct inside. It is chapter 04's `PlanAndExecuteAgent` loop
with its own prompts: the planner splits the question into sub-goals (coarser than
Plan-and-Execute's one-action steps: a sub-goal may take several tool calls); each sub-goal
runs as a bounded `ReActAgent`, optionally on a runtime (`runtime_factory()` gives a fresh
one per sub-goal, passed as `ReActAgent(..., runtime=...)`). A sub-goal fails as
`agentkit.plan.step_failure` says (a tool error, no information, "cannot", or the inner run
stopped by max_steps, a fuse or a guard); there is no blind retry (`max_attempts=1`),
because the ReAct inside already adapts: the planner is asked at once to replan the
remaining work from the completed sub-goals and the failure reason, at most `max_replans`
times. `.steps` counts the inner ReAct turns of every sub-goal.

`ReflectiveReActAgent`: ReAct inside a reflection loop. After each ReAct run a reviewer
reads the question, every tool step so far, how the run ended and the answer, and ends with a narrow
verdict (`agentkit.reflection.parse_verdict`: only a last line `VERDICT: PASS` passes).
On REVISE the next round starts with the review and every fact found so far as hints.
At `max_rounds` the last answer is returned with `stop_reason` "max_rounds".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from .llm import default_llm
from .plan import Attempt, PlanAndExecuteAgent, PlanPrompts
from .react import ReActAgent, Step
from .reflection import parse_verdict
from .text import shorten
from .tools import default_executor

# --- plan outside, ReAct inside --------------------------------------------------

PLANNER_MARKER = "You are the planner of a hybrid agent"
STEP_MARKER = "You reach one sub-goal of a hybrid agent's plan"
REPLAN_MARKER = "A sub-goal of your plan failed"

PLANNER_PROMPT = PLANNER_MARKER + """. Split the question into at most {max_steps} sub-goals.
A sub-goal is work an agent with tools can finish in a few actions, such as several look-ups
that do not depend on each other; start a new sub-goal only when the work needs a result of an
earlier one.{tools}
Reply with a JSON list of strings and nothing else.

Question: {question}"""

REPLAN_PROMPT = PLANNER_MARKER + """. """ + REPLAN_MARKER + """. Write sub-goals for the REMAINING
work only: the completed sub-goals below are done and their results stay valid. Find another
way around the failure, or, if the failure shows the question cannot be answered, plan one
sub-goal that says so and why.{tools}
Reply with a JSON list of at most {max_steps} strings and nothing else.

Question: {question}
Plan so far:
{plan}
Completed sub-goals and their results:
{done}
Failed sub-goal: {failed}
Why it failed: {reason}"""

STEP_PROMPT = STEP_MARKER + """. Reach the current sub-goal below with the tools, using the
results of the earlier sub-goals, and finish with its result; if it is the last sub-goal,
finish with the answer to the question. If you cannot reach it, say so.

{context}"""

HYBRID_PROMPTS = PlanPrompts(PLANNER_PROMPT, REPLAN_PROMPT, STEP_PROMPT, tools_intro=" The agent can use these tools:\n")


class HybridAgent(PlanAndExecuteAgent):
    """Sub-goals from a planner, each reached by a bounded ReAct (on a runtime if given); replan on failure."""

    noun, plan_title = "sub-goal", "Sub-goals"

    def __init__(self, llm=None, tools=None, *, runtime_factory: Optional[Callable] = None,
                 max_plan_steps: int = 6, react_steps: int = 6, max_replans: int = 2) -> None:
        super().__init__(llm, tools, max_plan_steps=max_plan_steps, react_steps=react_steps, max_attempts=1,
                         max_replans=max_replans, runtime_factory=runtime_factory, prompts=HYBRID_PROMPTS)

    @property
    def steps(self) -> int:
        """Inner ReAct turns of the last run, over every sub-goal."""
        return sum(attempt.react_steps for attempt in self.attempts)

    def _say(self, record: Attempt) -> None:
        outcome = f"FAILED ({record.failure})" if record.failure else f"-> {shorten(record.result, 100)}"
        print(f"  sub-goal {record.step_number} ({record.react_steps} ReAct steps, {record.tool_calls} tool calls): "
              f"{outcome}")


# --- ReAct inside a reflection loop ----------------------------------------------

REVIEW_MARKER = "You check an agent's answer against the evidence it gathered"
REVIEW_PROMPT = REVIEW_MARKER + """. Read the question, the agent's steps, how its
run ended and its final answer. Pass the answer only if the observations support it, or if it
rightly says the question cannot be answered from them. Name each problem concretely. End with
one final line that is exactly `VERDICT: PASS` or `VERDICT: REVISE`."""
FACTS_HEADER = "Facts found in earlier attempts (do not search for them again):"


@dataclass
class Round:
    answer: str
    stop_reason: str
    verdict: str  # pass | revise | missing
    review: str
    steps: int


def review_messages(question: str, evidence: list[Step], stop_reason: str, answer: str) -> list[dict]:
    """The reviewer sees every tool step of every round so far: the evidence the answer may rest on."""
    steps = "\n".join(step.as_history() for step in evidence) or "(no tool steps)"
    user = (f"Question: {question}\n\nThe agent's tool steps, all attempts:\n{steps}\n\n"
            f"How the run ended: {stop_reason}\nFinal answer: {answer}")
    return [{"role": "system", "content": REVIEW_PROMPT}, {"role": "user", "content": user}]


def revision_hints(review: str, facts: list[Step]) -> str:
    """The next round's hints: the review's notes (without the verdict line) and every fact found so far."""
    notes = "\n".join(line for line in review.strip().splitlines()[:-1] if line.strip())
    lines = [f"A reviewer read your last attempt and wrote:\n{notes or '(no notes)'}", FACTS_HEADER]
    lines += [f"- {s.action}[{s.argument}] -> {s.observation}" for s in facts] or ["(none)"]
    return "\n".join(lines)


class ReflectiveReActAgent:
    """ReAct, then a reviewer; on REVISE, ReAct again with the review and the facts found as hints."""

    def __init__(self, llm=None, tools=None, max_steps: int = 5, max_rounds: int = 2) -> None:
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
        self.llm = llm if llm is not None else default_llm()
        self.tools = tools if tools is not None else default_executor()
        self.max_steps, self.max_rounds = max_steps, max_rounds
        self.rounds: list[Round] = []
        self.steps = 0
        self.stop_reason = self.answer = ""

    @property
    def passed(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].verdict == "pass"

    def run(self, question: str, verbose: bool = True) -> str:
        self.rounds, self.steps, hints, facts = [], 0, "", []
        for number in range(1, self.max_rounds + 1):
            react = ReActAgent(self.llm, self.tools, max_steps=self.max_steps)
            answer = react.run(question, verbose=False, hints=hints)
            facts += [step for step in react.trace if step.executed]
            review = self.llm.think(review_messages(question, facts, react.stop_reason, answer))
            self.rounds.append(Round(answer, react.stop_reason, parse_verdict(review), review, len(react.trace)))
            self.steps += len(react.trace)
            if verbose:
                print(f"round {number}: {len(react.trace)} ReAct steps, {react.stop_reason}, answer "
                      f"{shorten(answer, 60)!r}, verdict {self.rounds[-1].verdict}")
            if self.passed:
                break
            hints = revision_hints(review, facts)
        self.stop_reason = "finished" if self.passed else "max_rounds"
        self.answer = self.rounds[-1].answer
        return self.answer

