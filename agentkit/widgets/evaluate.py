"""Chapter 10 panel: pick a paradigm and a step budget, run the harness, read the metrics and the early stops.

With a real model (AP_MODE=real or local) the panel runs only the first REAL_MODEL_TASKS tasks of the
chosen category, without the early-stop review, and says so: a whole batch would take many minutes.
"""
from __future__ import annotations

from ..evaluate import Report, evaluate
from ..instruments import NoisyTaskLLM
from ..llm import ScriptedLLM
from ..modes import get_llm
from ..paradigms import PARADIGMS
from ..tasks import CATEGORIES, load_tasks
from . import run_panel

BUDGET_CHANGES = list(range(-3, 3))  # added to every step budget; -3 keeps every budget at 1 or more
CATEGORY_CHOICES = ["all", *CATEGORIES]
REAL_MODEL_TASKS = 3
ERROR_RATES = [0.0, 0.05, 0.1, 0.2, 0.3]  # the stand-in's error knobs (agentkit.instruments), all at this rate


def evaluation_report(paradigm: str = "ReAct", budget_change: int = 0, category: str = "multi-hop",
                      error_rate: float = 0.0) -> Report:
    """The harness's report for one paradigm, its step budgets moved by `budget_change`, on one category.

    `error_rate` turns up the stand-in's error knobs (misread, forget, invent, format), seed 0."""
    if paradigm not in PARADIGMS:
        raise ValueError(f"paradigm must be one of {', '.join(PARADIGMS)}, got {paradigm!r}")
    if budget_change not in BUDGET_CHANGES:
        raise ValueError(f"budget_change must be one of {BUDGET_CHANGES}, got {budget_change!r}")
    if category not in CATEGORY_CHOICES:
        raise ValueError(f"category must be one of {', '.join(CATEGORY_CHOICES)}, got {category!r}")
    if error_rate not in ERROR_RATES:
        raise ValueError(f"error_rate must be one of {ERROR_RATES}, got {error_rate!r}")
    tasks = [t for t in load_tasks() if category in ("all", t.category)]
    offline = isinstance(get_llm(), ScriptedLLM)
    if not offline:
        if error_rate:
            raise ValueError("the error knobs belong to the stand-in; a real model brings its own errors "
                             "(set the error rate to 0, or AP_MODE=fake)")
        tasks = tasks[:REAL_MODEL_TASKS]
    make = PARADIGMS[paradigm]

    def make_agent(extra_steps: int = 0):
        llm = NoisyTaskLLM(error_rate) if error_rate else None
        return make(extra_steps + budget_change, llm=llm)

    name = paradigm if not budget_change else f"{paradigm} ({budget_change:+d} steps)"
    if error_rate:
        name += f", errors {error_rate:.0%} per reply"
    return evaluate(make_agent, tasks, progress=False, name=name, review=offline)


def draw_report(report: Report):
    """Success per category, and the steps per task with their mean and P95."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    s = report.summary
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    names = list(s.success_by_category)
    left.bar(names, [100 * v for v in s.success_by_category.values()], color="tab:green")
    left.set(title=f"{report.name}: success by category", ylabel="% of tasks right", ylim=(0, 105))
    steps = [r.steps for r in report.runs]
    right.hist(steps, bins=range(min(steps), max(steps) + 2), color="tab:blue", align="left", rwidth=0.85)
    right.axvline(s.mean_steps, color="black", linestyle="--", label=f"mean {s.mean_steps:.1f}")
    right.axvline(s.p95_steps, color="tab:red", linestyle=":", label=f"P95 {s.p95_steps:.1f}")
    right.set(title="steps per task", xlabel="steps", ylabel="tasks")
    right.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.yaxis.set_major_locator(MaxNLocator(integer=True))
    right.legend(loc="upper left", bbox_to_anchor=(1.01, 1))  # outside: the lines run the full height
    fig.tight_layout()
    return fig


def summary_text(report: Report) -> str:
    s = report.summary
    failures = ", ".join(f"{k}: {v}" for k, v in s.failures.items()) or "none"
    return "\n".join([
        f"{report.name} on {s.tasks} tasks: {s.success_rate:.0%} right",
        f"steps: mean {s.mean_steps:.1f}, P95 {s.p95_steps:.1f}; stopped by max_steps: {s.max_steps_share:.0%}",
        f"per task: {s.mean_calls:.1f} LLM calls, {s.mean_tool_calls:.1f} tool calls, {s.mean_tokens:.0f} tokens "
        f"({s.mean_prompt_tokens:.0f} prompt + {s.mean_completion_tokens:.0f} completion)",
        f"failures: {failures}",
    ])


def show_evaluation(paradigm: str = "ReAct", budget_change: int = 0, category: str = "multi-hop",
                    error_rate: float = 0.0) -> Report:
    """The panel's callback: run, print the summary and the early-stop review, draw the charts."""
    report = evaluation_report(paradigm, budget_change, category, error_rate)
    print(summary_text(report))
    print()
    print(report.early_stop_review())
    draw_report(report)
    return report


def evaluation_panel():
    """Dropdowns for the paradigm, the step budget change and the task category; Run shows the report."""
    import ipywidgets as widgets

    return run_panel(
        {
            "paradigm": widgets.Dropdown(options=list(PARADIGMS), value="ReAct", description="paradigm"),
            "budget_change": widgets.Dropdown(options=BUDGET_CHANGES, value=0, description="step budget change"),
            "category": widgets.Dropdown(options=CATEGORY_CHOICES, value="multi-hop", description="tasks"),
            "error_rate": widgets.SelectionSlider(options=ERROR_RATES, value=0.0,
                                                  description="stand-in errors per reply"),
        },
        show_evaluation,
    )
