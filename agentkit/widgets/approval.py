"""Notebook 12's approval prompt: a paused run shows its waiting call; Approve or Deny resumes it.

A Jupyter cell cannot wait for a click (the click is handled only after the cell ends), so the
run pauses instead: `PausableAgent.start` returns with `.pending`, this prompt shows that call
with its effect and dry run first, then where its instruction came from and its input, and a click
calls `agent.decide(...)`, which runs on until the next waiting call or the end. `describe_run(agent)`
is the text it shows: control and format characters (a carriage return, a bidi override) are shown
as `\\r` or `<U+202E>`, never obeyed, and every field is cut to a length a person reads.
"""
from __future__ import annotations

import html

from ..text import visible

SHOWN_CHARS = 300  # of a waiting call's input, dry run or source; the rest is counted, not shown

PLACEHOLDER = "Approval prompt: run this cell to open it (the waiting call, its dry run, Approve and Deny)."


def describe_run(agent) -> str:
    """The run so far: each step, then the waiting call (effect and dry run first) or the answer."""
    lines = []
    for number, step in enumerate(agent.trace, 1):
        if step.action == "Finish":
            continue
        lines.append(f"{number}. {visible(step.action, 40)}[{visible(step.argument, 60)}] -> "
                     f"{visible(' '.join(step.observation.split()), 110)}")
    call = agent.pending
    if call is not None:
        lines += ["", f"WAITING FOR YOU: {visible(call.tool, 60)}, effect {call.effect.upper()}",
                  f"  dry run: {visible(call.dry_run, SHOWN_CHARS)}",
                  f"  source:  {visible(call.source, SHOWN_CHARS)}"]
        if getattr(call, "tainted", ""):
            lines.append(f"  after:   {visible(call.tainted, SHOWN_CHARS)}")
        lines.append(f"  input:   {visible(call.argument, SHOWN_CHARS)}")
    else:
        lines += ["", f"run {agent.status}: {visible(agent.answer, 2000)}"]
    return "\n".join(lines)


def approval_prompt(agent, who: str = "human"):
    """Approve / Deny buttons for `agent` (a started PausableAgent); each click resumes its run."""
    import ipywidgets as w

    text = w.HTML()
    approve = w.Button(description="Approve", button_style="success", icon="check")
    deny = w.Button(description="Deny", button_style="danger", icon="times")

    def refresh(problem: str = "") -> None:
        shown = describe_run(agent) + (f"\n\n{problem}" if problem else "")
        text.value = f"<pre style='white-space: pre-wrap; margin: 0'>{html.escape(shown)}</pre>"
        approve.disabled = deny.disabled = agent.pending is None

    def on_click(button) -> None:
        approve.disabled = deny.disabled = True  # one decision per click
        try:
            agent.decide(button is approve, f"{who}: {button.description} button")
            refresh()
        except Exception as e:  # noqa: BLE001 - a click must never fail silently (a real model may be down)
            refresh(f"The run failed after your decision: {type(e).__name__}: {e}")

    approve.on_click(on_click)
    deny.on_click(on_click)
    refresh()

    class Prompt(w.VBox):
        def __repr__(self) -> str:  # what a saved notebook shows before the cell runs
            return PLACEHOLDER

    prompt = Prompt([text, w.HBox([approve, deny])])
    prompt.add_class("agentkit-approval")  # read by tools/browser_test.py
    prompt.approve, prompt.deny, prompt.text = approve, deny, text
    return prompt
