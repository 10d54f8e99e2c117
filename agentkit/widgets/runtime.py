"""Notebook 08's panel: inject an instability and watch the runtime.

`show_guard` is the plain callback (pytest drives it); `guard_panel` wraps it in widgets. The plots
are shared with the notebook. Every count is read from the ledgers.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime import Runtime
from ..runtime_suites import Outcome, load_suite, outcome, run_task, task_by_id
from ..text import shorten
from . import run_panel

JACCARD_RANGE, WINDOW_RANGE, CHECKPOINT_RANGE, MAX_STEPS_RANGE = (0.1, 1.0), (1, 6), (0, 6), (3, 30)



def _integer_ticks(ax, axis: str = "y") -> None:
    from matplotlib.ticker import MaxNLocator

    getattr(ax, f"{axis}axis").set_major_locator(MaxNLocator(integer=True))


def task_choices() -> dict:
    """Dropdown labels -> task ids: every sick run, then every legitimate task."""
    return {f"{t.suite} · {t.category} · {t.id}": t.id for suite in ("sick", "legit") for t in load_suite(suite)}


# --- the guard panel -------------------------------------------------------------------------


@dataclass
class GuardReport:
    """One task run twice: max_steps only, and as configured."""

    baseline: Outcome
    guarded: Outcome

    @property
    def text(self) -> str:
        run, agent = self.guarded, self.guarded.agent
        lines = [f"{run.task.suite} run, {run.task.category}: {run.task.question}"]
        states = {s.step: s for s in (agent.runtime.states if agent.runtime else [])}
        for number, step in enumerate(agent.trace, 1):
            action = f"{step.action}[{shorten(step.argument, 50)}]" if step.action else "(no action)"
            seen = "" if step.action == "Finish" else f" -> {shorten(step.observation, 50)}"
            lines.append(f"  {number:>2}. {action}{seen}")
            if number in states:
                s = states[number]
                lines.append(f"      checkpoint: found {len(s.found)}, missing {len(s.missing)}"
                             + ("" if s.readable else " (unreadable)"))
            for note in (i for i in run.interventions if i.step == number):
                lines.append(f"      runtime {note.kind} ({note.instability}): {shorten(note.text, 110)}")
        unverified = " (unverified)" if agent.unverified else ""
        lines.append(f"stop reason: {run.stop_reason}; answer{unverified}: {shorten(run.answer, 60)}; correct: {run.correct}")
        for label, r in (("max_steps only", self.baseline), ("as configured", run)):
            lines.append(f"{label:15}: {r.calls} LLM calls ({r.checkpoint_calls} checkpoints), "
                         f"{r.tool_calls} tool calls, {r.prompt_tokens} prompt tokens, stop: {r.stop_reason}")
        return "\n".join(lines)


def run_guard(task_id: str = "paraphrases", jaccard: float = 0.7, window: int = 3, checkpoint_every: int = 3,
              max_steps: int = 20, guard: bool = True) -> GuardReport:
    """Run one suite task with max_steps only and with the configured runtime (or none)."""
    task = task_by_id(task_id)
    runtime = Runtime(jaccard, window, checkpoint_every) if guard else None
    baseline = outcome(task, run_task(task, max_steps=max_steps))
    return GuardReport(baseline, outcome(task, run_task(task, runtime, max_steps=max_steps)))


def plot_calls(pairs: dict, ax=None, title: str = "", labels=("max_steps only", "Runtime()")):
    """Grouped bars: LLM calls per run label, max_steps only against the runtime (from the ledgers)."""
    import matplotlib.pyplot as plt

    if ax is None:
        ax = plt.subplots(figsize=(max(5, 0.75 * len(pairs) + 2), 3.4))[1]
    xs = range(len(pairs))
    for index, (offset, label, color) in enumerate(((-0.2, labels[0], "tab:gray"), (0.2, labels[1], "tab:blue"))):
        bars = ax.bar([x + offset for x in xs], [p[index] for p in pairs.values()], 0.4, label=label, color=color)
        ax.bar_label(bars, fontsize=8)
    many = len(pairs) > 2
    ax.set_xticks(list(xs), list(pairs), rotation=30 if many else 0, ha="right" if many else "center")
    _integer_ticks(ax)
    ax.set_ylim(0, 1.15 * max(max(p) for p in pairs.values()))
    ax.set(ylabel="LLM calls (ledger)", title=title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the bars, never over them
    return ax


def show_guard(task_id: str = "paraphrases", jaccard: float = 0.7, window: int = 3, checkpoint_every: int = 3,
               max_steps: int = 20, guard: bool = True) -> GuardReport:
    """The panel's callback: print the run with its interventions, plot its calls."""
    if task_id not in task_choices().values():
        raise ValueError(f"unknown task {task_id!r}; choose one of: {', '.join(task_choices().values())}")
    report = run_guard(task_id, jaccard, window, checkpoint_every, max_steps, guard)
    print(report.text)
    plot_calls({task_id: (report.baseline.calls, report.guarded.calls)},
               title=f"{task_id}: jaccard {jaccard:.2f}, window {window}, checkpoint every {checkpoint_every}",
               labels=("max_steps only", "as configured" if guard else "runtime off"))
    return report


def guard_panel():
    """Pick a sick or legitimate run and the runtime's settings; see the trace and the calls."""
    import ipywidgets as w

    choices = task_choices()
    return run_panel(
        {
            "task_id": w.Dropdown(options=list(choices.items()), value="paraphrases", description="run"),
            "jaccard": w.FloatSlider(value=0.7, min=JACCARD_RANGE[0], max=JACCARD_RANGE[1], step=0.05,
                                     description="Jaccard threshold"),
            "window": w.IntSlider(value=3, min=WINDOW_RANGE[0], max=WINDOW_RANGE[1], description="window"),
            "checkpoint_every": w.IntSlider(value=3, min=CHECKPOINT_RANGE[0], max=CHECKPOINT_RANGE[1],
                                            description="checkpoint every (0 = off)"),
            "max_steps": w.IntSlider(value=20, min=MAX_STEPS_RANGE[0], max=MAX_STEPS_RANGE[1], description="max_steps"),
            "guard": w.Checkbox(value=True, description="runtime on"),
        },
        show_guard,
    )


def plot_tradeoff(rows: list[dict], axes=None):
    """False kills on the legitimate suite and LLM calls on the sick suite, against the threshold, per window."""
    import matplotlib.pyplot as plt

    if axes is None:
        axes = plt.subplots(1, 2, figsize=(11, 3.8))[1]
    kills, calls = axes
    styles = ["o-", "s--", "^:", "d-."]  # distinct markers and dashes: equal curves stay visible
    for style, window in zip(styles * 3, sorted({r["window"] for r in rows})):
        mine = [r for r in rows if r["window"] == window]
        xs = [r["jaccard"] for r in mine]
        kills.plot(xs, [r["false_kills"] for r in mine], style, label=f"window {window}", alpha=0.8)
        calls.plot(xs, [r["sick_calls"] for r in mine], style, label=f"window {window}", alpha=0.8)
    kills.set(title="Legitimate suite: runs the runtime killed", xlabel="Jaccard threshold", ylabel="false kills")
    calls.set(title="Sick suite: LLM calls spent (ledger)", xlabel="Jaccard threshold", ylabel="LLM calls")
    for ax in axes:
        _integer_ticks(ax)
        ax.legend(loc="best")
    return axes
