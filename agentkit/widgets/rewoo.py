"""Chapter 9 panel: write a ReWOO plan, break its references, and watch the validator refuse it.

No model is called: the plan you type is what a planner would have written. A valid plan runs
its tools (references replaced by earlier evidence) and the panel prints what each tool
received and returned; an invalid one is refused with the line and the reason, and no tool runs.
"""
from __future__ import annotations

from ..rewoo import parse_rewoo_plan, substitute
from ..tools import default_executor
from . import run_panel

DEFAULT_PLAN = """Plan: Find when Steve Wozniak was born.
#E1 = Search[Steve Wozniak]
Plan: Find when Linus Torvalds was born.
#E2 = Search[Linus Torvalds]
Plan: Subtract the birth years.
#E3 = Calculate[1969 - 1950]"""

# Ready-made variations for the notebook and the tests: each breaks one thing.
EXAMPLES = {
    "valid": DEFAULT_PLAN,
    "forward reference": DEFAULT_PLAN.replace("Calculate[1969 - 1950]", "Calculate[#E4 - 1950]"),
    "planned blind": DEFAULT_PLAN.replace("Calculate[1969 - 1950]", "Calculate[#E2 - #E1]"),
    "defined twice": DEFAULT_PLAN.replace("#E2 = ", "#E1 = "),
    "malformed line": DEFAULT_PLAN.replace("#E3 = Calculate[1969 - 1950]", "#E3: Calculate 1969 - 1950"),
    "no plan at all": "First I would look both of them up, then subtract.",
}


def show_plan(plan: str = DEFAULT_PLAN) -> list[str]:
    """The panel's callback: validate the plan (ValueError quoting the bad line), then run it and print each step."""
    steps = parse_rewoo_plan(plan)
    tools, evidence, outputs = default_executor(), {}, []
    print(f"The plan is valid: {len(steps)} tool calls, and a ReWOO run would cost 2 LLM calls whatever that number.")
    for step in steps:
        received = substitute(step.input, evidence)
        evidence[step.variable] = tools.run(step.tool, received)
        outputs.append(evidence[step.variable])
        print(f"\n{step.variable} = {step.tool}[{step.input}]")
        if received != step.input:
            print(f"  the tool received: {received}")
        print(f"  evidence: {evidence[step.variable]}")
    failed = [c for c in tools.log if not c.ok]
    print(f"\nTool calls: {len(tools.log)}, failed: {len(failed)}")
    return outputs


def rewoo_panel():
    """A text area holding a plan; Run validates it and shows every tool's input and evidence."""
    import ipywidgets as widgets

    return run_panel(
        {"plan": widgets.Textarea(value=DEFAULT_PLAN, description="plan",
                                  layout=widgets.Layout(width="95%", height="170px"))},
        show_plan,
        label="Validate and run",
        charts=False,  # a plan and its evidence are text
    )
