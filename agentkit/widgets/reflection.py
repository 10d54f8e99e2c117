"""The "never satisfied reviewer" panel: how strict the reviewer is, and max_iterations.

`reviewer_run` is the plain callback (pytest sweeps it); `show_reviewer` prints and plots
what it returns; `reviewer_panel()` wires it to ipywidgets with a Run button.
`what_revisions_carry` reads from the ledger which drafts and reviews each revision
prompt carried, and what re-sending every earlier one would have cost instead.
"""
from __future__ import annotations

from ..llm import ScriptedLLM, ledger, ledger_totals
from ..modes import get_llm
from ..reflection import ReflectionAgent, cost_per_round, is_writer_call
from ..scripts.reflection import strictness_instructions
from ..tokens import count_tokens
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
REAL_MODEL_MAX_ITERATIONS = 2  # a real model is slow: at most this many rounds, and the report says so


def reviewer_run(strictness: str = "never satisfied", max_iterations: int = 4, llm=None) -> dict:
    """Run the reflection loop against a reviewer of the given strictness; report from the ledger."""
    if strictness not in STRICTNESS:
        raise ValueError(f"strictness must be one of {list(STRICTNESS)}, got {strictness!r}")
    llm = llm if llm is not None else get_llm()
    capped = not isinstance(llm, ScriptedLLM) and max_iterations > REAL_MODEL_MAX_ITERATIONS
    max_iterations = min(max_iterations, REAL_MODEL_MAX_ITERATIONS) if capped else max_iterations
    first_call = len(ledger(llm))  # a shared client may already have a ledger: count only this run
    agent = ReflectionAgent(max_iterations, llm,
                            reviewer_instructions=strictness_instructions(STRICTNESS[strictness]))
    last_draft = agent.run(MEAN_TASK, verbose=False)
    calls = ledger(llm)[first_call:]
    return {
        "strictness": strictness,
        "max_iterations": max_iterations,
        "capped": capped,
        "rounds": agent.memory.rounds(),
        "passed": agent.passed,
        "last_draft": last_draft,
        "totals": ledger_totals(calls),
        "per_round": cost_per_round(calls),
        "calls": calls,
        "drafts": agent.memory.drafts(),
        "reviews": [review.text for review in agent.memory.reviews()],
    }


def what_revisions_carry(report: dict) -> list[dict]:
    """One row per revision call: which drafts and reviews its prompt carried (numbered from 1),
    its prompt tokens (ledger), and those tokens plus every earlier draft and review it left out."""
    drafts, reviews = report["drafts"], report["reviews"]
    revisions = [call for call in report["calls"] if is_writer_call(call.messages)][1:]
    rows = []
    for number, call in enumerate(revisions, 2):
        carried_drafts = [i for i, d in enumerate(drafts, 1) if f"```python\n{d}\n```" in call.prompt]
        carried_reviews = [i for i, r in enumerate(reviews, 1) if r in call.prompt]
        left_out = [d for i, d in enumerate(drafts[:number - 1], 1) if i not in carried_drafts] + \
                   [r for i, r in enumerate(reviews[:number - 1], 1) if i not in carried_reviews]
        rows.append({"writes_draft": number, "drafts_carried": carried_drafts, "reviews_carried": carried_reviews,
                     "prompt_tokens": call.prompt_tokens,
                     "if_all_resent": call.prompt_tokens + sum(count_tokens(text) for text in left_out)})
    return rows


def show_reviewer(strictness: str = "never satisfied", max_iterations: int = 4) -> dict:
    """Print the outcome and plot calls and what each revision re-sent."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    report = reviewer_run(strictness, max_iterations)
    totals = report["totals"]
    cap = f" (a real model: capped at {report['max_iterations']}, to keep it short)" if report["capped"] else ""
    print(f"strictness={strictness!r}, max_iterations={max_iterations}{cap}")
    print(f"rounds={report['rounds']}  passed={report['passed']}  "
          f"calls={totals['calls']}  tokens={totals['total_tokens']}")
    for row in report["per_round"]:
        print(f"  round {row['round']}: {row['calls']} calls, {row['total_tokens']} tokens")
    print("last draft returned:\n" + report["last_draft"])
    rows = report["per_round"]
    rounds = [row["round"] for row in rows]
    cumulative_calls = [sum(r["calls"] for r in rows[:i + 1]) for i in range(len(rows))]
    fig, (calls_ax, tokens_ax) = plt.subplots(1, 2, figsize=(10, 3.2))
    calls_ax.plot(rounds, cumulative_calls, marker="o")
    calls_ax.set(xlabel="round (one draft + its review)", ylabel="LLM calls so far", title="Calls (ledger)")
    calls_ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    calls_ax.set_xticks(rounds)
    carried = what_revisions_carry(report)
    if carried:
        drafts = [row["writes_draft"] for row in carried]
        tokens_ax.bar(drafts, [row["prompt_tokens"] for row in carried], color="tab:orange",
                      label="sent: latest draft + latest review")
        tokens_ax.plot(drafts, [row["if_all_resent"] for row in carried], color="black", linestyle="--",
                       marker="o", label="if every earlier draft and review were re-sent")
        tokens_ax.set_xticks(drafts)
        tokens_ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    else:
        tokens_ax.text(0.5, 0.5, "one round: no revision", ha="center", va="center", transform=tokens_ax.transAxes)
    tokens_ax.set(xlabel="revision call (writes draft number)", ylabel="prompt tokens",
                  title="What a revision re-sends (ledger)")
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
