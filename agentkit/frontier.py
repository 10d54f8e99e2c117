"""Chapter 15's instrument: a cheap and a strong model on the stand-in, and every system's cost and success.

* Two tiers of `agentkit.routing.Tier` whose clients are `agentkit.instruments.NoisyTaskLLM`: `cheap(rate)`
  errs at `rate` per reply (every knob), `strong()` at STRONG_RATE. Their prices, PRICES, are made up
  for the chapter (dollars per million prompt and completion tokens); only their ratio matters here.
* `make_system(name, rate, threshold, seed)`: a fresh system: the cheap model alone, the strong model
  alone, the router, the cascade, or a team (`agentkit.teams`) whose lead is the strong model and whose
  members are the cheap one, a member's run escalating to the strong model below `threshold`.
  `systems(rate, seed, thresholds)`: name -> factory, for the frontier's systems.
* `dollars(system)`: its bill, each client's ledger at its tier's prices (a team's lead and
  escalations at the strong model's, its members at the cheap model's).
* `measure(name, make_system, tasks)`: one row, every figure read from the ledgers through the chapter 10
  harness: success, dollars, dollars per solved task, LLM calls and tokens per task, and the share of
  tasks where the strong model answered (routed there, or escalated; for a team, a member escalated).
  A run that raised is no failed task: `measure` raises `MeasurementError` naming it, and makes no row.
* Every setting is checked where it is given: `rate` an error rate in [0, 1], `threshold` a confidence
  (`agentkit.routing.confidence_threshold`), `seed` a whole number, `name` one of SYSTEMS; a bad one raises
  ValueError naming it, before any system is made.
* `sweep(rates, seeds, thresholds)` runs them all; `python -m agentkit.frontier` writes the rows to
  data/frontier_sweep.json, which the chapter reads instead of running a few hundred batches.
"""
from __future__ import annotations

import json
from typing import Optional

from .evaluate import evaluate
from .instruments import NoisyTaskLLM
from .protocol import ledger
from .routing import Cascade, Router, Single, System, Tier, confidence_threshold, count_setting, number_setting, price
from .tasks import load_tasks
from .teams import AgentsAsTools, OrchestratorWorkers, Supervisor

PRICES = {"cheap": (0.15, 0.60), "strong": (3.00, 15.00)}  # dollars per million tokens: made up
STRONG_RATE = 0.02
RATES = (0.0, 0.05, 0.1, 0.2, 0.3)
THRESHOLDS = (0.5, 0.75, 1.0)
SEEDS = tuple(range(5))
TOPOLOGIES = {"supervisor": Supervisor, "agents as tools": AgentsAsTools, "orchestrator-workers": OrchestratorWorkers}
SYSTEMS = ("cheap alone", "strong alone", "router", "cascade", *TOPOLOGIES)
ROLE_TIERS = {"lead": "strong", "members": "cheap", "escalation": "strong"}


class MeasurementError(RuntimeError):
    """A run of a measured system raised: counted as a failed task, it would read as a measured zero."""


def error_rate(rate) -> float:
    return number_setting("rate", rate, 0, 1, "an error rate per reply, between 0 and 1")


def seed_of(seed) -> int:
    return count_setting("seed", seed, low=0)


def cheap(rate: float, seed: int = 0) -> Tier:
    rate, seed = error_rate(rate), seed_of(seed)  # here, not when the tier's client is first made inside a run
    return Tier("cheap", lambda: NoisyTaskLLM(rate, seed=seed), *PRICES["cheap"])


def strong(seed: int = 0) -> Tier:
    seed = seed_of(seed)
    return Tier("strong", lambda: NoisyTaskLLM(STRONG_RATE, seed=seed), *PRICES["strong"])


def make_system(name: str, rate: float, threshold: float = 1.0, seed: int = 0):
    """A fresh system of SYSTEMS, with the cheap model at `rate` (see the module docstring)."""
    if name not in SYSTEMS:
        raise ValueError(f"system must be one of {', '.join(SYSTEMS)}, got {name!r}")
    rate, threshold, seed = error_rate(rate), confidence_threshold(threshold), seed_of(seed)
    if name == "cheap alone":
        return Single(cheap(rate, seed))
    if name == "strong alone":
        return Single(strong(seed))
    if name == "router":
        return Router([cheap(rate, seed), strong(seed)])
    if name == "cascade":
        return Cascade([cheap(rate, seed), strong(seed)], threshold)
    return TOPOLOGIES[name](NoisyTaskLLM(STRONG_RATE, seed=seed), NoisyTaskLLM(rate, seed=seed),
                            escalate_to=NoisyTaskLLM(STRONG_RATE, seed=seed), threshold=threshold)


def systems(rate: float, seed: int = 0, thresholds=THRESHOLDS) -> dict:
    """name -> factory of a fresh system, for the frontier: the three single systems and the cascade per threshold."""
    rate, seed, thresholds = error_rate(rate), seed_of(seed), [confidence_threshold(t) for t in thresholds]
    made = {name: lambda name=name: make_system(name, rate, seed=seed) for name in ("cheap alone", "strong alone",
                                                                                   "router")}
    for threshold in thresholds:
        made[f"cascade {threshold:g}"] = lambda t=threshold: make_system("cascade", rate, t, seed)
    return made


def dollars(system) -> float:
    """The system's bill so far (see the module docstring)."""
    if isinstance(system, System):
        return system.cost
    tiers = {"cheap": cheap(0.0), "strong": strong()}
    return sum(price(ledger(client), tiers[ROLE_TIERS[role]]) for role, client in system.clients.items())


def reached_strong(system) -> bool:
    if isinstance(system, System):
        return any(attempt.tier == "strong" for attempt in system.attempts)
    return any(run.escalated for run in system.member_runs)


def measure(name: str, make_system, tasks=None) -> dict:
    """One row for one system over the tasks, read from the ledgers (see the module docstring)."""
    if not callable(make_system):
        raise ValueError(f"make_system must be a function that makes a fresh system; got {make_system!r}")
    tasks = tasks if tasks is not None else load_tasks()
    made = []

    def make_agent():
        made.append(make_system())
        return made[-1]

    report = evaluate(make_agent, tasks, name=name, review=False, progress=False)
    raise_errors(report, name)
    solved = sum(run.correct for run in report.runs)
    bill = sum(dollars(system) for system in made)
    return {"system": name, "success": report.summary.success_rate, "solved": solved, "tasks": len(tasks),
            "dollars": bill, "per_solved": bill / solved if solved else None,
            "calls": report.summary.mean_calls, "tokens": report.summary.mean_tokens,
            "strong_share": sum(map(reached_strong, made)) / len(made)}


def raise_errors(report, name: str) -> None:
    """MeasurementError if a run of the report raised (the harness made it a row that looks like a failed task)."""
    failed = [run for run in report.runs if run.error]
    if failed:
        raise MeasurementError(
            f"{len(failed)} of {len(report.runs)} runs of {name!r} raised instead of answering (task "
            f"{failed[0].task_id}: {failed[0].error}). A run that raised is not a failed task, so no row was made: "
            "fix the system or its settings and measure again.")


def frontier(rate: float, seed: int = 0, thresholds=THRESHOLDS, tasks=None) -> list[dict]:
    """Every system at one error rate of the cheap model, one seed."""
    return [dict(measure(name, make, tasks), rate=rate, seed=seed)
            for name, make in systems(rate, seed, thresholds).items()]


def sweep(rates=RATES, seeds=SEEDS, thresholds=THRESHOLDS, tasks=None) -> list[dict]:
    return [row for rate in rates for seed in seeds for row in frontier(rate, seed, thresholds, tasks)]


def main(argv: Optional[list] = None) -> int:
    """Write the frontier of every system at every rate and seed to data/frontier_sweep.json."""
    import argparse
    from pathlib import Path

    from .data import DATA_DIR

    parser = argparse.ArgumentParser(prog="python -m agentkit.frontier", description=main.__doc__)
    parser.add_argument("--out", type=Path, default=Path(str(DATA_DIR / "frontier_sweep.json")))
    args = parser.parse_args(argv)
    rows = sweep()
    args.out.write_text(json.dumps({"rates": list(RATES), "seeds": list(SEEDS), "thresholds": list(THRESHOLDS),
                                    "strong_rate": STRONG_RATE, "prices": PRICES, "tasks": len(load_tasks()),
                                    "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
