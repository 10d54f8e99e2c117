"""Chapter 4 panel: inject a failure into one step of Plan-and-Execute and watch the replan.

`injected_run` never raises on a bad plan: a planner reply that fails validation ends the
run with stop_reason "no_plan" and the parser's message as the answer (a real model often
writes no JSON list). With a real model the run is capped (REAL_MODEL_LIMITS) and says so.
"""
from __future__ import annotations

from ..llm import ScriptedLLM, ledger, ledger_totals
from ..modes import get_llm
from ..plan import PlanAndExecuteAgent, inject_failure, numbered
from ..scripts.plan import YEARS_QUESTION, YEARS_TOOL_CALLS
from ..tools import default_executor
from . import run_panel

FAILING_STEPS = [0, 1, 2, 3]  # 0: no failure
FAILURES = {"once": 1, "twice": 2, "always": None}
REPLAN_BUDGETS = [0, 1, 2]
# A real model is slow and may plan many steps: fewer steps, shorter step loops.
REAL_MODEL_LIMITS = {"max_plan_steps": 4, "react_steps": 2}


def injected_run(failing_step: int = 0, failures: int | None = 1, max_replans: int = 2,
                 llm=None, question: str = YEARS_QUESTION) -> PlanAndExecuteAgent:
    """Run the chapter's task with the tool of `failing_step` failing `failures` times (None: always)."""
    if failing_step not in FAILING_STEPS:
        raise ValueError(f"failing_step must be one of {FAILING_STEPS}, got {failing_step!r}")
    tools = default_executor()
    if failing_step:
        tool, tool_input = YEARS_TOOL_CALLS[failing_step - 1]
        inject_failure(tools, tool, tool_input, failures)
    llm = llm if llm is not None else get_llm()
    limits = {} if isinstance(llm, ScriptedLLM) else REAL_MODEL_LIMITS
    agent = PlanAndExecuteAgent(llm, tools, max_replans=max_replans, **limits)
    try:
        agent.run(question, verbose=False)
    except ValueError as error:  # the planner's reply failed validation: no step was run
        agent.stop_reason, agent.answer = "no_plan", f"Stopped before any step: {error}"
    return agent


def report(agent: PlanAndExecuteAgent) -> str:
    """What a run did: answer, cost from the ledgers, failed attempts, and every plan."""
    failed = [a for a in agent.attempts if a.failure]
    lines = [
        f"Answer [{agent.stop_reason}]: {agent.answer}",
        f"LLM calls: {len(ledger(agent.llm))}   tool calls: {len(agent.tools.log)} "
        f"({sum(not c.ok for c in agent.tools.log)} failed)   replans: {agent.replans}",
    ]
    if not isinstance(agent.llm, ScriptedLLM):
        lines.append(f"(a real model: capped at {REAL_MODEL_LIMITS}, to keep the run short)")
    lines += [f"  step {a.step_number}, try {a.attempt} failed: {a.failure}" for a in failed]
    for number, plan in enumerate(agent.plans):
        lines.append("First plan:" if number == 0 else f"Plan after replan {number}:")
        lines.append(numbered(plan))
    return "\n".join(lines)


def plot_attempts(agent: PlanAndExecuteAgent, ax=None):
    """One bar per try of a step: its LLM calls (from the ledger), red when it failed; replans marked."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    if ax is None:
        ax = plt.subplots(figsize=(7, 3))[1]
    attempts = agent.attempts
    labels = [f"step {a.step_number}\ntry {a.attempt}" for a in attempts]
    ax.bar(range(len(attempts)), [a.llm_calls for a in attempts],
           color=["tab:red" if a.failure else "tab:green" for a in attempts])
    ax.set_xticks(range(len(attempts)), labels, fontsize=8)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(ylabel="LLM calls (ledger)",
           title=f"{len(ledger(agent.llm))} calls in all, {agent.replans} replan(s): {agent.stop_reason}")
    ax.legend(handles=[Patch(color="tab:green", label="step done"), Patch(color="tab:red", label="try failed")],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return ax


def show_injection(failing_step: int = 0, failures: str = "once", max_replans: int = 2) -> str:
    """The panel's callback: run one injection, print its report and draw its tries."""
    if failures not in FAILURES:
        raise ValueError(f"failures must be one of {list(FAILURES)}, got {failures!r}")
    agent = injected_run(failing_step, FAILURES[failures], max_replans)
    text = report(agent)
    print(text)
    if agent.attempts:  # a plan that failed validation ran no step: nothing to draw
        plot_attempts(agent)
    return text


def failure_panel():
    """Dropdowns for the failing step, how often it fails and the replan budget; Run shows the report."""
    import ipywidgets as widgets

    return run_panel(
        {
            "failing_step": widgets.Dropdown(options=[("none", 0), ("step 1", 1), ("step 2", 2), ("step 3", 3)],
                                             value=0, description="failing step"),
            "failures": widgets.Dropdown(options=list(FAILURES), value="once", description="fails"),
            "max_replans": widgets.Dropdown(options=REPLAN_BUDGETS, value=2, description="replans"),
        },
        show_injection,
    )
