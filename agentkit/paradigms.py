"""Every paradigm of the course behind one factory signature, for the evaluation harness.

`PARADIGMS[name](extra_steps=0)` returns a fresh agent with its own LLM client (`get_llm()`:
the stand-in, or the real or local model that AP_MODE names; or the fresh `llm` you pass, such as
an `agentkit.instruments.NoisyTaskLLM`) and its own tools (or the fresh `tools` you pass), so runs never share
a ledger. `extra_steps` widens the paradigm's step budget: ReAct's and Act-only's `max_steps`, the inner ReAct
budget of Plan-and-Execute, of the hybrid and of Reflection + ReAct. The hybrid runs each sub-goal on a fresh
`agentkit.runtime.Runtime()` (chapter 08's guards, with the course's settings). The harness's early-stop review calls it with 2 ("the same agent with two
more steps"); the panel of chapter 10 with negative values. Plan-and-Solve and ReWOO have no
step budget (their plan fixes the number of calls) and ignore it.
"""
from __future__ import annotations

from .act import ActOnlyAgent
from .hybrid import HybridAgent, ReflectiveReActAgent
from .modes import get_llm
from .plan import PlanAndExecuteAgent, PlanAndSolveAgent
from .react import ReActAgent
from .rewoo import ReWOOAgent
from .runtime import Runtime
from .tools import default_executor

REACT_STEPS = 5
PLAN_EXECUTE_STEPS = 4  # PlanAndExecuteAgent's default inner budget
HYBRID_STEPS = 6  # a sub-goal may hold several look-ups
MIN_BUDGET = 1


def _tools(tools):
    return tools if tools is not None else default_executor()


def _budget(base: int, extra_steps: int) -> int:
    budget = base + int(extra_steps)
    if budget < MIN_BUDGET:
        raise ValueError(f"a step budget of {base} {extra_steps:+d} is {budget}; it must stay at least {MIN_BUDGET}")
    return budget


def make_react(extra_steps: int = 0, llm=None, tools=None) -> ReActAgent:
    return ReActAgent(llm if llm is not None else get_llm(), _tools(tools), max_steps=_budget(REACT_STEPS, extra_steps))


def make_act_only(extra_steps: int = 0, llm=None, tools=None) -> ActOnlyAgent:
    return ActOnlyAgent(llm if llm is not None else get_llm(), _tools(tools), max_steps=_budget(REACT_STEPS, extra_steps))


def make_plan_and_solve(extra_steps: int = 0, llm=None, tools=None) -> PlanAndSolveAgent:
    return PlanAndSolveAgent(llm if llm is not None else get_llm())


def make_plan_and_execute(extra_steps: int = 0, llm=None, tools=None) -> PlanAndExecuteAgent:
    return PlanAndExecuteAgent(llm if llm is not None else get_llm(), _tools(tools), react_steps=_budget(PLAN_EXECUTE_STEPS, extra_steps))


def make_reflective_react(extra_steps: int = 0, llm=None, tools=None) -> ReflectiveReActAgent:
    return ReflectiveReActAgent(llm if llm is not None else get_llm(), _tools(tools), max_steps=_budget(REACT_STEPS, extra_steps))


def make_rewoo(extra_steps: int = 0, llm=None, tools=None) -> ReWOOAgent:
    return ReWOOAgent(llm if llm is not None else get_llm(), _tools(tools))


def make_hybrid(extra_steps: int = 0, llm=None, tools=None) -> HybridAgent:
    return HybridAgent(llm if llm is not None else get_llm(), _tools(tools), runtime_factory=Runtime,
                       react_steps=_budget(HYBRID_STEPS, extra_steps))


PARADIGMS = {
    "ReAct": make_react,
    "Act-only": make_act_only,
    "Plan-and-Solve": make_plan_and_solve,
    "Plan-and-Execute": make_plan_and_execute,
    "Reflection + ReAct": make_reflective_react,
    "ReWOO": make_rewoo,
    "Hybrid": make_hybrid,
}
