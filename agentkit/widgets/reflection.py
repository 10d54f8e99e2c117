"""The "never satisfied reviewer" panel: how strict the reviewer is, and max_iterations.

`reviewer_run` is the plain callback (pytest sweeps it); `show_reviewer` prints and plots
what it returns; `reviewer_panel()` wires it to ipywidgets with a Run button.
"""
from __future__ import annotations

from ..llm import get_llm, ledger_totals
from ..reflection import ReflectionAgent, cost_per_round
from ..scripts.reflection import strictness_instructions
from . import run_panel

MEAN_TASK = "Write a Python function mean(values) that returns the arithmetic mean of a list of numbers."

# Label -> how many fixes the reviewer wants before it passes (None: never).
STRICTNESS = {
    "lenient (passes at once)": 0,
    "picky (wants 1 fix)": 1,
    "fussy (wants 3 fixes)": 3,
    "never satisfied": None,
}
MAX_ITERATIONS_RANGE = (1, 8)


def reviewer_run(strictness: str = "never satisfied", max_iterations: int = 4, llm=None) -> dict:
    """Run the reflection loop against a reviewer of the given strictness; report from the ledger."""
    if strictness not in STRICTNESS:
        raise ValueError(f"strictness must be one of {list(STRICTNESS)}, got {strictness!r}")
    llm = llm if llm is not None else get_llm()
    first_call = len(llm.calls)  # a shared client may already have a ledger: count only this run
    agent = ReflectionAgent(max_iterations, llm,
                            reviewer_instructions=strictness_instructions(STRICTNESS[strictness]))
    last_draft = agent.run(MEAN_TASK, verbose=False)
    calls = llm.calls[first_call:]
    return {
        "strictness": strictness,
        "max_iterations": max_iterations,
        "rounds": agent.memory.rounds(),
        "passed": agent.passed,
        "last_draft": last_draft,
        "totals": ledger_totals(calls),
        "per_round": cost_per_round(calls),
    }


def show_reviewer(strictness: str = "never satisfied", max_iterations: int = 4) -> dict:
    """Print the outcome and plot calls and tokens per round."""
    import matplotlib.pyplot as plt

    report = reviewer_run(strictness, max_iterations)
    totals = report["totals"]
    print(f"strictness={strictness!r}, max_iterations={max_iterations}")
    print(f"rounds={report['rounds']}  passed={report['passed']}  "
          f"calls={totals['calls']}  tokens={totals['total_tokens']}")
    for row in report["per_round"]:
        print(f"  round {row['round']}: {row['calls']} calls, {row['total_tokens']} tokens")
    print("last draft returned:\n" + report["last_draft"])
    rows = report["per_round"]
    rounds = [row["round"] for row in rows]
    cumulative_calls = [sum(r["calls"] for r in rows[:i + 1]) for i in range(len(rows))]
    fig, (calls_ax, tokens_ax) = plt.subplots(1, 2, figsize=(9, 3))
    calls_ax.plot(rounds, cumulative_calls, marker="o")
    calls_ax.set_ylabel("LLM calls so far")
    tokens_ax.bar(rounds, [row["total_tokens"] for row in rows], color="tab:orange")
    tokens_ax.set_ylabel("tokens in the round")
    for ax in (calls_ax, tokens_ax):
        ax.set_xlabel("round (one draft + its review)")
        ax.set_xticks(rounds)
    fig.suptitle(f"{'passed' if report['passed'] else 'hard exit, not passed'} after {report['rounds']} rounds")
    fig.tight_layout()
    plt.show()
    return report


def reviewer_panel():
    """Strictness dropdown, max_iterations slider and a Run button; the report and plot below."""
    import ipywidgets as widgets

    return run_panel(
        {
            "strictness": widgets.Dropdown(options=list(STRICTNESS), value="never satisfied", description="strictness"),
            "max_iterations": widgets.IntSlider(value=4, min=MAX_ITERATIONS_RANGE[0], max=MAX_ITERATIONS_RANGE[1],
                                                description="max_iterations"),
        },
        show_reviewer,
    )
