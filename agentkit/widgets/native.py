"""Notebook 11's panel: send a bad tool call and watch the native channel feed it back.

`show_native` is the plain callback (pytest drives it); `native_panel` wraps it in widgets.
"""
from __future__ import annotations

import json

from ..llm import ledger
from ..native import NativeReActAgent, format_failures
from ..scripts.native import DISEASES, sick_tool_caller
from ..scripts.react import CHECKPOINT_QUESTION
from ..text import shorten
from . import run_panel

MAX_STEPS_RANGE = (1, 8)



def sent_calls(step) -> str:
    """The tool calls a step's reply carried, as the model wrote them."""
    calls = json.loads(step.reply).get("tool_calls") or []
    return "; ".join(f"{c['function']['name']}({c['function']['arguments']})" for c in calls) or "(no tool call)"


def run_native(disease: str = "arguments not JSON", recovers: bool = True, max_steps: int = 4) -> NativeReActAgent:
    """The checkpoint through native tool calls, answered by a stand-in with one disease."""
    if disease not in DISEASES:
        raise ValueError(f"unknown disease {disease!r}; choose one of: {', '.join(DISEASES)}")
    if not MAX_STEPS_RANGE[0] <= max_steps <= MAX_STEPS_RANGE[1]:
        raise ValueError(f"max_steps must be between {MAX_STEPS_RANGE[0]} and {MAX_STEPS_RANGE[1]}, got {max_steps}")
    agent = NativeReActAgent(sick_tool_caller(disease, recovers), max_steps=max_steps)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    return agent


def show_native(disease: str = "arguments not JSON", recovers: bool = True, max_steps: int = 4) -> NativeReActAgent:
    """The panel's callback: print what each reply sent and what the loop did; chart the ledger's counts."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    agent = run_native(disease, recovers, max_steps)
    failures = format_failures(ledger(agent.llm), "native", agent.tools)
    print(f"disease: {disease}; {'recovers after feedback' if recovers else 'never learns'}; max_steps={max_steps}")
    for number, (step, failed) in enumerate(zip(agent.trace, failures), 1):
        print(f"{number}. sent: {shorten(sent_calls(step), 70)}")
        if failed:
            print(f"   format failure, fed back: {shorten(step.observation, 90)}")
        elif step.action == "Finish":
            print(f"   Finish: {step.argument}")
        else:
            ran = "ran" if step.executed else "not run"
            print(f"   {step.action} {ran}: {shorten(step.observation, 70)}")
    counts = {"LLM calls": len(agent.run_calls), "format failures": sum(failures),
              "tool runs": len(agent.run_tool_calls)}
    print(f"stop reason: {agent.stop_reason}; answer: {shorten(agent.answer, 80)}")
    print(", ".join(f"{name}: {value}" for name, value in counts.items()) + "  (from the ledgers)")

    ax = plt.subplots(figsize=(5, 2.8))[1]
    bars = ax.bar(list(counts), list(counts.values()), color=["tab:blue", "tab:red", "tab:green"])
    ax.bar_label(bars)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max(counts.values()) + 1)
    ax.set_ylabel("count")
    ax.set_title(f"native channel, {disease}")
    return agent


def native_panel():
    """Dropdown of bad calls, a 'recovers' checkbox and max_steps; trace and counts below."""
    import ipywidgets as w

    return run_panel(
        {
            "disease": w.Dropdown(options=list(DISEASES), value="arguments not JSON", description="bad call"),
            "recovers": w.Checkbox(value=True, description="recovers after feedback"),
            "max_steps": w.IntSlider(value=4, min=MAX_STEPS_RANGE[0], max=MAX_STEPS_RANGE[1], description="max_steps"),
        },
        show_native,
    )
