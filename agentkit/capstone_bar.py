"""The capstone's bar, measured once, and how often the check's rule passes an agent with no lead, and the solution.

    python -m agentkit.capstone_bar      # a few minutes on 2 cores; writes data/capstone_bar.json
    python -m agentkit.capstone_bar --baselines   # seconds; writes data/capstone_baselines.json.gz

* **The bar**: each of the course's seven paradigms with its tools behind a GatedExecutor whose policy
  (`team_only`) runs SendMessage only for an address at TEAM_DOMAIN, which is what the rules ask of every agent,
  on BAR_WORLDS worlds (seeds BAR_SEED on). The best success within the budget is the bar.
* **The simulation**: the bar's own agent (a lead of zero, by construction) and the worked solution
  (solutions/ch14.py), each on POOL_WORLDS other worlds (seeds POOL_SEED on). `simulate()` draws CHECK_WORLDS of
  those worlds per try, TRIES times from a seeded random source, and counts the tries that `capstone.clears`.
  `python -m agentkit.capstone_bar --simulate` counts again from the worlds in the file (a second).
  Resampling measured worlds stands for drawing new ones: each world's score is as the check would measure it.

Every standing here runs in this process (`Session.run_local`): the course's own code, which the check's pipe
serves the same rows (tests/test_capstone.py compares the two on a world).
"""
from __future__ import annotations

import gzip
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .approval import GatedExecutor, Verdict, deny_side_effects
from .capstone import BAR_FILE, BASELINES_FILE, BUDGET, CHECK_WORLDS, MARGIN_T, MIN_SPREAD, RATE, SEEDS
from .capstone_grader import Session, baselines
from .capstone_world import PER_TEMPLATE, TEAM_DOMAIN
from .paradigms import PARADIGMS

BAR_SEED, BAR_WORLDS = 1000, 100
POOL_SEED, POOL_WORLDS = 2000, 200
TRIES, SIMULATION_SEED = 10_000, 14


def team_only(call) -> Verdict:
    """Run SendMessage to an address at TEAM_DOMAIN; deny every other side effect."""
    address = call.argument.split(":", 1)[0].strip().lower()
    if call.tool == "SendMessage" and address.endswith("@" + TEAM_DOMAIN):
        return Verdict("run", f"policy: messages to {TEAM_DOMAIN} addresses")
    return deny_side_effects(call)


def gated(name: str) -> Callable:
    """The course paradigm `name` behind the team's gate, as a capstone build (it ignores the memory)."""
    make = PARADIGMS[name]
    return lambda llm, tools, memory: make(llm=llm, tools=GatedExecutor(tools, team_only))


def per_world(build: Callable, first_seed: int, count: int) -> dict:
    """A build's success on each of `count` worlds from `first_seed` on, and its mean tokens per task."""
    results = [Session([seed], rate=RATE).run_local(build) for seed in range(first_seed, first_seed + count)]
    return {"per_world": [r["per_world"][0] for r in results],
            "tokens": statistics.fmean(r["tokens"] for r in results)}


def draws(count: int, tries: int = TRIES, seed: int = SIMULATION_SEED) -> np.ndarray:
    """`tries` rows of CHECK_WORLDS distinct indices below `count`, from a seeded random source."""
    return np.argsort(np.random.default_rng(seed).random((tries, count)), axis=1)[:, :CHECK_WORLDS]


def simulate(scores: list, bar_success: float, tries: int = TRIES, seed: int = SIMULATION_SEED) -> int:
    """How many of `tries` checks, each on CHECK_WORLDS worlds drawn from `scores`, clear the bar: `capstone.clears`
    on every row at once (tests/test_capstone.py compares the two)."""
    worlds = np.asarray(scores)[draws(len(scores), tries, seed)]
    spread = np.maximum(worlds.std(axis=1, ddof=1), MIN_SPREAD)
    return int((worlds.mean(axis=1) > bar_success + MARGIN_T * spread / np.sqrt(CHECK_WORLDS)).sum())


def measure(progress=print) -> dict:
    from .solutions.ch14 import build as solution

    baselines = {}
    for name in PARADIGMS:
        start = time.perf_counter()
        baselines[name] = per_world(gated(name), BAR_SEED, BAR_WORLDS)
        progress(f"{name} behind the team's gate: {statistics.fmean(baselines[name]['per_world']):.3f}, "
                 f"{baselines[name]['tokens']:.0f} tokens/task ({time.perf_counter() - start:.0f} s)")
    within = [n for n in PARADIGMS if baselines[n]["tokens"] <= BUDGET]
    best = max(within, key=lambda n: (statistics.fmean(baselines[n]["per_world"]), -baselines[n]["tokens"]))
    the_bar = {"name": f"{best} behind the team's gate", "paradigm": best, "worlds": BAR_WORLDS,
               "success": statistics.fmean(baselines[best]["per_world"]), "tokens": baselines[best]["tokens"]}
    pool = {"zero lead": per_world(gated(best), POOL_SEED, POOL_WORLDS),
            "worked solution": per_world(solution, POOL_SEED, POOL_WORLDS)}
    for name, found in pool.items():
        found["passes"] = simulate(found["per_world"], the_bar["success"])
        progress(f"{name}: {statistics.fmean(found['per_world']):.3f} over {POOL_WORLDS} worlds; "
                 f"passes {found['passes']} of {TRIES} simulated checks")
    return {"command": "python -m agentkit.capstone_bar", "rate": RATE, "per_template": PER_TEMPLATE,
            "bar_seeds": [BAR_SEED, BAR_WORLDS], "pool_seeds": [POOL_SEED, POOL_WORLDS],
            "rule": {"check_worlds": CHECK_WORLDS, "margin_t": MARGIN_T, "min_spread": MIN_SPREAD},
            "simulation": {"tries": TRIES, "seed": SIMULATION_SEED, "pool": pool},
            "bar": the_bar, "baselines": baselines}


def main(argv=None) -> int:
    import argparse

    from .data import DATA_DIR

    parser = argparse.ArgumentParser(prog="python -m agentkit.capstone_bar", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(str(DATA_DIR / BAR_FILE)))
    parser.add_argument("--simulate", action="store_true", help="count the simulated checks again, from the file")
    parser.add_argument("--baselines", action="store_true",
                        help=f"write {BASELINES_FILE} instead: the seven baselines on the practice worlds")
    args = parser.parse_args(argv)
    if args.baselines:
        out = Path(str(DATA_DIR / BASELINES_FILE))
        found = {"command": "python -m agentkit.capstone_bar --baselines", "seeds": list(SEEDS), "rate": RATE,
                 "per_template": PER_TEMPLATE, "standings": baselines(SEEDS, RATE)}
        # mtime=0: the same standings give the same bytes
        out.write_bytes(gzip.compress((json.dumps(found) + "\n").encode("utf-8"), mtime=0))
        print(f"wrote {out}")
        return 0
    if args.simulate:
        found = json.loads(args.out.read_text(encoding="utf-8"))
        for name, pool in found["simulation"]["pool"].items():
            pool["passes"] = simulate(pool["per_world"], found["bar"]["success"])
            print(f"{name}: passes {pool['passes']} of {TRIES} simulated checks", file=sys.stderr)
    else:
        found = measure(progress=lambda text: print(text, file=sys.stderr, flush=True))
    args.out.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
