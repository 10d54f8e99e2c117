"""Chapter 15 panel: a system, the cheap model's error rate and the escalation threshold; calls, cost and success.

The systems are `agentkit.frontier.SYSTEMS`: one model alone, the router, the cascade, or a team whose lead is the
strong model and whose members are the cheap one (escalating below the threshold). Both models are the stand-in's
instrument (`NoisyTaskLLM`), whatever AP_MODE says: the panel measures structure, not a real model. Every figure
comes from the ledgers of a run over the task set; the chart puts the run beside the shipped frontier at that rate.
"""
from __future__ import annotations

import json

from ..data import read_text
from ..evaluate import evaluate
from ..frontier import RATES, SYSTEMS, dollars, make_system, raise_errors, reached_strong
from ..protocol import ledger
from ..routing import System
from ..tasks import load_tasks
from . import run_panel

THRESHOLDS = [0.0, 0.25, 0.5, 0.75, 1.0]
FRONTIER_SYSTEMS = ("cheap alone", "strong alone", "router", "cascade 0.5", "cascade 0.75", "cascade 1")


def calls_by_model(system) -> dict:
    """LLM calls per model ("cheap", "strong") of one system, read from its clients' ledgers."""
    if isinstance(system, System):
        return {name: len(ledger(client)) for name, client in system.clients.items()}
    roles = {"lead": "strong", "members": "cheap", "escalation": "strong"}
    counts: dict = {}
    for role, client in system.clients.items():
        counts[roles[role]] = counts.get(roles[role], 0) + len(ledger(client))
    return counts


def run_system(system: str = "cascade", error_rate: float = 0.1, threshold: float = 1.0) -> dict:
    """One system over the task set: the harness's report, the systems it made, and figures from their ledgers."""
    if system not in SYSTEMS:
        raise ValueError(f"system must be one of {', '.join(SYSTEMS)}, got {system!r}")
    if error_rate not in RATES:
        raise ValueError(f"error_rate must be one of {list(RATES)}, got {error_rate!r}")
    if threshold not in THRESHOLDS:
        raise ValueError(f"threshold must be one of {THRESHOLDS}, got {threshold!r}")
    made = []

    def make_agent():
        made.append(make_system(system, error_rate, threshold))
        return made[-1]

    report = evaluate(make_agent, load_tasks(), name=system, review=False, progress=False)
    raise_errors(report, system)
    solved = sum(run.correct for run in report.runs)
    calls: dict = {}
    for one in made:
        for model, count in calls_by_model(one).items():
            calls[model] = calls.get(model, 0) + count
    bill = sum(dollars(one) for one in made)
    return {"report": report, "systems": made, "solved": solved, "tasks": len(made), "dollars": bill,
            "per_solved": bill / solved if solved else None, "calls": calls,
            "strong_share": sum(map(reached_strong, made)) / len(made)}


def shipped_frontier(rate: float) -> dict:
    """{system: (success, dollars per solved task)}, means over the seeds of the shipped sweep at `rate`."""
    rows = [r for r in json.loads(read_text("frontier_sweep.json"))["rows"] if r["rate"] == rate]
    points = {}
    for name in FRONTIER_SYSTEMS:
        mine = [r for r in rows if r["system"] == name and r["per_solved"] is not None]
        if mine:
            points[name] = (sum(r["success"] for r in mine) / len(mine), sum(r["per_solved"] for r in mine) / len(mine))
    return points


def show_system(system: str = "cascade", error_rate: float = 0.1, threshold: float = 1.0) -> dict:
    """The panel's callback: run, print the figures, draw the calls per model and the run beside the frontier."""
    import matplotlib.pyplot as plt

    result = run_system(system, error_rate, threshold)
    summary, n = result["report"].summary, result["tasks"]
    uses_threshold = system == "cascade" or system not in ("cheap alone", "strong alone", "router")
    print(f"{system}, the cheap model at {error_rate:.0%} errors per reply"
          + (f", escalation threshold {threshold:g}" if uses_threshold else "") + f", {n} tasks:")
    print(f"  success {summary.success_rate:.0%} ({result['solved']} of {n})")
    print(f"  LLM calls per task {summary.mean_calls:.1f}: "
          + ", ".join(f"{model} {count / n:.1f}" for model, count in sorted(result["calls"].items())))
    print(f"  tokens per task {summary.mean_tokens:.0f}")
    per = result["per_solved"]
    print(f"  cost ${result['dollars']:.4f} for the {n} tasks; "
          + (f"${per * 1000:.2f} per 1,000 solved tasks" if per else "no task solved"))
    print(f"  the strong model answered (routed, escalated, or a member escalated) on {result['strong_share']:.0%} "
          "of the tasks" if system != "strong alone" else "  every task on the strong model")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    models = sorted(result["calls"])
    left.bar(models, [result["calls"][m] / n for m in models], color=["tab:green" if m == "cheap" else "tab:purple"
                                                                      for m in models])
    left.set(title="LLM calls per task, by model", ylabel="calls per task")
    points = shipped_frontier(error_rate)
    for name, (success, cost) in points.items():
        right.scatter(cost * 1000, 100 * success, color="grey", alpha=0.6)
        right.annotate(name, (cost * 1000, 100 * success), fontsize=8, color="grey", xytext=(4, 2),
                       textcoords="offset points")
    if per:
        right.scatter(per * 1000, 100 * summary.success_rate, color="tab:red", s=80, marker="*", label="this run")
        right.legend(loc="lower right")
    right.set(title=f"beside the shipped frontier (cheap model at {error_rate:.0%}, mean of seeds)",
              xlabel="$ per 1,000 solved tasks", ylabel="% of tasks right", ylim=(0, 105))
    right.title.set_fontsize(10)
    fig.tight_layout()
    return result


def teams_panel():
    """Dropdowns for the system, the cheap model's error rate and the escalation threshold; Run shows the figures."""
    import ipywidgets as widgets

    return run_panel(
        {
            "system": widgets.Dropdown(options=list(SYSTEMS), value="cascade", description="system"),
            "error_rate": widgets.SelectionSlider(options=list(RATES), value=0.1,
                                                  description="cheap model's errors per reply"),
            "threshold": widgets.SelectionSlider(options=THRESHOLDS, value=1.0, description="escalate below"),
        },
        show_system,
    )
