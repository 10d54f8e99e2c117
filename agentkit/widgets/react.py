"""Notebook 03's panel: inject a failure into ReAct and watch what the fuses do.

`run_failure` is the plain callback (pytest drives it); `failure_panel` wraps it in widgets.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..react import ReActAgent, Step
from ..sick import DISEASES, QUESTION
from ..text import shorten
from . import run_panel

MAX_STEPS_RANGE = (1, 20)


@dataclass
class FailureReport:
    """One sick run as configured, plus the call counts of the same run with the fuse off and on."""

    disease: str
    max_steps: int
    repeat_fuse: bool
    answer: str
    stop_reason: str
    trace: list[Step]
    llm_calls: int
    tool_calls: int
    prompt_tokens: int
    calls_by_fuse: dict  # {"fuse off": (llm calls, tool calls), "fuse on": (...)}

    @property
    def text(self) -> str:
        lines = [f"{self.disease}: {DISEASES[self.disease].symptom}",
                 f"max_steps={self.max_steps}, repeat fuse {'on' if self.repeat_fuse else 'off'}"]
        for number, step in enumerate(self.trace, 1):
            action = f"{step.action}[{shorten(step.argument, 60)}]" if step.action else "(no action)"
            seen = "" if step.action == "Finish" else f" -> {shorten(step.observation, 60)}"
            mark = " [invented Observation dropped]" if step.invented_observation else ""
            lines.append(f"  {number:>2}. {action}{seen}{mark}")
        lines.append(f"stop reason: {self.stop_reason}; answer: {shorten(self.answer, 90)}")
        lines.append(f"LLM calls: {self.llm_calls}, tool calls: {self.tool_calls}, prompt tokens: {self.prompt_tokens}")
        return "\n".join(lines)



def _sick_run(disease: str, max_steps: int, repeat_fuse: bool) -> ReActAgent:
    sick = DISEASES[disease]
    agent = ReActAgent(sick.make_llm(), sick.make_tools(), max_steps, repeat_fuse=repeat_fuse)
    agent.run(QUESTION, verbose=False)
    return agent


def run_failure(disease: str = "stuck", max_steps: int = 5, repeat_fuse: bool = True) -> FailureReport:
    """Run a sick stand-in; every count comes from the LLM ledger and the tool log."""
    if disease not in DISEASES:
        raise ValueError(f"unknown disease {disease!r}; choose one of: {', '.join(DISEASES)}")
    runs = {fuse: _sick_run(disease, max_steps, fuse) for fuse in (False, True)}
    agent = runs[repeat_fuse]
    return FailureReport(
        disease=disease,
        max_steps=max_steps,
        repeat_fuse=repeat_fuse,
        answer=agent.answer,
        stop_reason=agent.stop_reason,
        trace=agent.trace,
        llm_calls=len(agent.llm.calls),
        tool_calls=len(agent.tools.log),
        prompt_tokens=sum(c.prompt_tokens for c in agent.llm.calls),
        calls_by_fuse={f"fuse {'on' if fuse else 'off'}": (len(a.llm.calls), len(a.tools.log)) for fuse, a in runs.items()},
    )


def plot_calls(calls_by_fuse: dict, ax=None, title: str = ""):
    """Grouped bars: LLM calls and tool calls, one bar per fuse setting."""
    import matplotlib.pyplot as plt

    if ax is None:
        ax = plt.subplots(figsize=(5, 3))[1]
    width = 0.8 / len(calls_by_fuse)
    for i, (label, counts) in enumerate(calls_by_fuse.items()):
        xs = [k + i * width for k in range(2)]
        bars = ax.bar(xs, counts, width, label=label)
        ax.bar_label(bars)
    ax.set_xticks([k + width * (len(calls_by_fuse) - 1) / 2 for k in range(2)], ["LLM calls", "tool calls"])
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, 1.3 * max(max(c) for c in calls_by_fuse.values()))  # room for the legend
    ax.set_ylabel("calls (from the ledgers)")
    ax.set_title(title)
    ax.legend()
    return ax


def show_failure(disease: str = "stuck", max_steps: int = 5, repeat_fuse: bool = True) -> FailureReport:
    """The panel's callback: run one configuration, print its trace and plot its calls."""
    report = run_failure(disease, max_steps, repeat_fuse)
    print(report.text)
    plot_calls(report.calls_by_fuse, title=f"{report.disease}, max_steps={report.max_steps}")
    return report


def failure_panel():
    """Dropdown of diseases, max_steps slider, fuse checkbox, Run button; trace and bar chart below."""
    import ipywidgets as w

    return run_panel(
        {
            "disease": w.Dropdown(options=list(DISEASES), value="stuck", description="disease"),
            "max_steps": w.IntSlider(value=5, min=MAX_STEPS_RANGE[0], max=MAX_STEPS_RANGE[1], description="max_steps"),
            "repeat_fuse": w.Checkbox(value=True, description="repeat fuse"),
        },
        show_failure,
    )
