"""The capstone: your agent on tasks no chapter used, with the stand-in's errors turned up, under a token budget.

The rules: the 16 held-out tasks of data/capstone_tasks.jsonl (four of each category),
`NoisyTaskLLM` at an error rate of RATE per reply on each knob, the seeds SEEDS, and a mean of at
most BUDGET tokens per task. An agent is a function `build(llm) -> agent` (anything with
`.run(question)` and the ledgers the harness reads); the chapter 10 harness scores it, and
`leaderboard` sets it beside the course's seven paradigms under the same rules.
"""
from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass
from typing import Callable, Optional

from .data import DATA_DIR
from .evaluate import evaluate
from .instruments import NoisyTaskLLM
from .paradigms import PARADIGMS
from .tasks import load_tasks

RATE = 0.1
SEEDS = (0, 1, 2)
BUDGET = 900  # mean tokens per task


def held_out_tasks() -> list:
    return load_tasks(DATA_DIR / "capstone_tasks.jsonl")


@dataclass
class Standing:
    """One agent under the capstone's rules: success over the seeds (mean, lowest, highest) and tokens."""

    name: str
    success: float
    low: float
    high: float
    tokens: float
    budget: int = BUDGET

    @property
    def within_budget(self) -> bool:
        return self.tokens <= self.budget

    def line(self) -> str:
        over = "" if self.within_budget else "  over budget"
        return (f"{self.name:<22} {self.success:5.0%}  [{self.low:.0%}-{self.high:.0%}]  "
                f"{self.tokens:6.0f} tokens/task{over}")


def standing(name: str, build: Callable, rate: float = RATE, seeds=SEEDS, tasks=None) -> Standing:
    """Score `build(llm)` on the held-out tasks, one batch per seed, each task on a fresh noisy stand-in."""
    tasks = tasks if tasks is not None else held_out_tasks()
    success, tokens = [], []
    for seed in seeds:
        def make_agent(extra_steps: int = 0, seed=seed):
            return build(NoisyTaskLLM(rate, seed=seed))
        summary = evaluate(make_agent, tasks, name=name, review=False, progress=False).summary
        success.append(summary.success_rate)
        tokens.append(summary.mean_tokens)
    return Standing(name, statistics.fmean(success), min(success), max(success), statistics.fmean(tokens))


@functools.lru_cache(maxsize=1)
def _baselines() -> tuple:
    return tuple(standing(name, lambda llm, make=make: make(llm=llm)) for name, make in PARADIGMS.items())


def baselines() -> list[Standing]:
    """The course's seven paradigms, as they are, under the capstone's rules (computed once per process)."""
    return list(_baselines())


def best_baseline() -> Standing:
    """The baseline to beat: the highest success within the budget (the cheaper one on a tie)."""
    return min((s for s in baselines() if s.within_budget), key=lambda s: (-s.success, s.tokens))


def leaderboard(mine: Optional[Standing] = None, others: Optional[list] = None, ax=None) -> str:
    """The standings as a table, best success within budget first, and a chart of success against tokens."""
    rows = list(others if others is not None else baselines()) + ([mine] if mine else [])
    rows.sort(key=lambda s: (not s.within_budget, -s.success, s.tokens))
    lines = [f"{'agent':<22} success [lowest-highest of {len(SEEDS)} seeds]   cost",
             *[s.line() + ("   <- yours" if s is mine else "") for s in rows]]
    if ax is not None:
        for s in rows:
            colour = "tab:red" if s is mine else ("tab:blue" if s.within_budget else "tab:gray")
            ax.errorbar(s.tokens, s.success, yerr=[[s.success - s.low], [s.high - s.success]], fmt="o",
                        color=colour, capsize=3)
            ax.annotate(s.name, (s.tokens, s.success), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.axvline(BUDGET, color="black", linestyle=":", label=f"budget: {BUDGET} tokens per task")
        ax.set(xlabel="mean tokens per task", ylabel="success (share of the held-out tasks)",
               title=f"Held-out tasks at {RATE:.0%} errors per reply", ylim=(0, 1.05))
        ax.legend(loc="lower right")
    return "\n".join(lines)
