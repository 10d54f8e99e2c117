"""The same ReAct three ways, on the same tasks, tools and stand-in: agentkit, LangGraph, smolagents.

`REACT[name](llm)` builds each one with `max_steps=5` on a fresh `default_executor()`. `sweep()` runs them
over the task set of chapters 09-10 through `agentkit.evaluate`, on chapter 09's instrument
(`agentkit.instruments.NoisyTaskLLM`) at each error rate and seed: one row per (framework, rate, seed)
with success, mean LLM calls and mean tokens, all read from the ledgers. `code_lines(obj)` counts the
non-blank, non-comment lines of a function's or class's source.
`python -m agentkit.bridge.compare` writes the sweep to data/bridge_sweep.json (with the versions it ran on).
"""
from __future__ import annotations

import inspect
import io
import json
import tokenize
from typing import Optional

from ..evaluate import evaluate
from ..instruments import RATES, SEEDS, NoisyTaskLLM
from ..react import ReActAgent
from ..tasks import load_tasks
from ..tools import default_executor
from . import versions

STEPS = 5


def agentkit_react(llm):
    return ReActAgent(llm, default_executor(), max_steps=STEPS)


def langgraph_react(llm):
    from .with_langgraph import LangGraphReAct

    return LangGraphReAct(llm, default_executor(), max_steps=STEPS)


def smolagents_react(llm):
    from .with_smolagents import SmolagentsReAct

    return SmolagentsReAct(llm, default_executor(), max_steps=STEPS)


REACT = {"agentkit": agentkit_react, "LangGraph": langgraph_react, "smolagents": smolagents_react}


def sweep(frameworks=None, rates=RATES, seeds=SEEDS, tasks=None) -> list[dict]:
    """One row per (framework, rate, seed) over `tasks` (rate 0 once: it draws nothing)."""
    tasks = tasks if tasks is not None else load_tasks()
    rows = []
    for name in frameworks or list(REACT):
        for rate in rates:
            for seed in (seeds[:1] if rate == 0 else seeds):
                report = evaluate(lambda: REACT[name](NoisyTaskLLM(rate, seed=seed)), tasks, review=False,
                                  progress=False, name=name)
                s = report.summary
                rows.append({"framework": name, "rate": rate, "seed": seed, "success": s.success_rate,
                             "mean_calls": s.mean_calls, "mean_tokens": s.mean_tokens})
    return rows


def mean_over_seeds(rows: list[dict], metric: str) -> dict:
    """{framework: {rate: mean of `metric` over the seeds}}."""
    out: dict = {}
    for row in rows:
        out.setdefault(row["framework"], {}).setdefault(row["rate"], []).append(row[metric])
    return {name: {rate: sum(v) / len(v) for rate, v in by_rate.items()} for name, by_rate in out.items()}


def code_lines(obj) -> int:
    """Lines of code in obj's source: blank lines, comments and docstrings left out."""
    source = inspect.getsource(obj)
    lines = set()
    previous = tokenize.INDENT
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        docstring = token.type == tokenize.STRING and previous in (tokenize.INDENT, tokenize.NEWLINE, tokenize.DEDENT)
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER) and not docstring:
            lines.update(range(token.start[0], token.end[0] + 1))
        if token.type not in (tokenize.COMMENT, tokenize.NL):
            previous = token.type
    return len(lines)


def main(argv: Optional[list] = None) -> int:
    import argparse
    from pathlib import Path

    from ..data import DATA_DIR

    parser = argparse.ArgumentParser(prog="python -m agentkit.bridge.compare", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(str(DATA_DIR / "bridge_sweep.json")))
    args = parser.parse_args(argv)
    rows = sweep()
    found = {name: installed for name, (installed, _) in versions().items()}
    args.out.write_text(json.dumps({"rates": list(RATES), "seeds": list(SEEDS), "tasks": len(load_tasks()),
                                    "max_steps": STEPS, "versions": found, "rows": rows}, indent=1) + "\n",
                        encoding="utf-8")
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
