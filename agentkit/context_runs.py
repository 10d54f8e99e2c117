"""Chapter 17's runs: every context strategy on the relay tasks, measured from the ledgers.

`STRATEGIES` names what each wraps around the same `ReActAgent` and relay tools (agentkit.relay):

* "full history": no context: every step is re-sent;
* "sliding window": `SlidingWindow(window)`;
* "observation masking": `ObservationMasking(keep)`;
* "compaction": `Compaction(llm, threshold)`, its summariser being the agent's own LLM;
* "note tool": `SlidingWindow(window)` plus a `NoteBook`'s Note and Notes tools;
* "sub-agent": the lead has `Walk[station]` instead of Search: a `SubAgentTool` whose fresh ReAct
  agent (Search only, full history, on the same LLM) walks `segment` stations and reports the last
  station sentence; the lead's prompt holds the reports, never the walkers' steps;
* "layered (08)": chapter 08's `LayeredContext(budget_tokens=budget)`.

`run_relay(task, strategy, llm=None, knob=0, seed=0, **settings)` runs one task on the relay stand-in
(or `LongContextLLM(knob, seed)` when knob > 0, or the `llm` given) and returns a `RelayRun`, whose figures
all come from this run's ledger slice, which holds the lead's, the summariser's and the walkers' calls in call
order: prompt tokens per call, cumulative, cached-prefix tokens (agentkit.caching), the calls each
strategy adds, and where the slip's tariff left the lead's prompt (`lost_at`). `sweep()` runs them
all over tasks, knob settings and seeds; `main()` writes data/context_sweep.json (bench/context_sweep.py).
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from typing import Optional

from . import caching
from .context import LayeredContext
from .context_strategies import SUMMARY_MARKER, Compaction, ObservationMasking, SlidingWindow
from .context_tools import NoteBook, SubAgentTool
from .long_context import LongContextLLM
from .protocol import ledger
from .react import ReActAgent
from .relay import WALK_ASSIGNMENT, load_relay, relay_tools
from .scripted import ScriptedLLM
from .scripts.relay import RULES, WALK_QUESTION, tariff_seen

STRATEGIES = ("full history", "sliding window", "observation masking", "compaction", "note tool", "sub-agent",
              "layered (08)")
DEFAULTS = {"window": 6, "keep": 2, "threshold": 2000, "segment": 10, "budget": 1000}
KNOBS = (0.0, 0.05)  # the long-context knob's two settings in the shipped sweep, per 1,000 prompt tokens
SEEDS = tuple(range(8))
KIND_LETTERS = {"lead": "l", "summary": "s", "sub-agent": "a"}  # who made each call, one letter per call


def relay_llm() -> ScriptedLLM:
    """The relay stand-in alone (a perfect reader: chapter 17's rules only)."""
    return ScriptedLLM(RULES)


def _settings(settings: dict) -> dict:
    unknown = set(settings) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown setting(s) {sorted(unknown)}; the settings are {', '.join(DEFAULTS)}")
    return {**DEFAULTS, **settings}


def make_agent(task, strategy: str, llm, max_steps: Optional[int] = None, **settings) -> ReActAgent:
    """A fresh lead agent for `task` with `strategy` around it (see the module docstring); `max_steps` defaults
    to the task's (its baseline's steps and some slack)."""
    s = _settings(settings)
    tools = relay_tools(search=strategy != "sub-agent")
    context, notes, walker = None, None, None
    if strategy == "sliding window":
        context = SlidingWindow(s["window"])
    elif strategy == "observation masking":
        context = ObservationMasking(s["keep"])
    elif strategy == "compaction":
        context = Compaction(llm, s["threshold"])
    elif strategy == "note tool":
        context, notes = SlidingWindow(s["window"]), NoteBook()
        notes.register(tools)
    elif strategy == "sub-agent":
        def make_walker():
            return ReActAgent(llm, relay_tools(), max_steps=s["segment"] + 3)
        walker = SubAgentTool(make_walker, WALK_ASSIGNMENT.replace("{segment}", str(s["segment"])), "Walk",
                              f"a sub-agent reads the line from this station on, {s['segment']} stations at most, "
                              "and reports the last station's sentence")
        walker.register(tools)
    elif strategy == "layered (08)":
        context = LayeredContext(budget_tokens=s["budget"])
    elif strategy != "full history":
        raise ValueError(f"unknown strategy {strategy!r}; the strategies are {', '.join(STRATEGIES)}")
    agent = ReActAgent(llm, tools, max_steps=max_steps or task.max_steps, repeat_fuse=False, context=context)
    agent.notebook, agent.walker = notes, walker  # for inspection: the notes kept, the sub-agents run
    return agent


def kind_of(call) -> str:
    """Who made a call: "summary" (a compaction), "sub-agent" (a walker) or "lead"."""
    if SUMMARY_MARKER in call.prompt:
        return "summary"
    if WALK_QUESTION.search(call.prompt):
        return "sub-agent"
    return "lead"


@dataclass
class RelayRun:
    """One strategy on one relay task: the lead agent and this run's slice of the ledger."""

    task: object
    strategy: str
    settings: dict
    agent: ReActAgent = field(repr=False)
    calls: list = field(repr=False)

    @property
    def answer(self) -> str:
        return self.agent.answer

    @property
    def correct(self) -> bool:
        return self.agent.stop_reason == "finished" and self.task.check(self.agent.answer)

    @cached_property
    def kinds(self) -> list[str]:
        return [kind_of(call) for call in self.calls]

    @property
    def prompt_tokens(self) -> list[int]:
        return [call.prompt_tokens for call in self.calls]

    @property
    def cumulative(self) -> list[int]:
        return list(accumulate(self.prompt_tokens))

    @cached_property
    def cached_tokens(self) -> list[int]:
        return caching.cached_prefix_tokens(self.calls)

    def dollars(self, cache: bool = True, prices: caching.Prices = caching.DEEPSEEK_CHAT) -> float:
        return caching.dollars(self.calls, prices, cache, self.cached_tokens)

    @property
    def added_calls(self) -> dict:
        """LLM calls besides the lead's, by kind, and the lead's steps beyond the task's baseline."""
        return {"summary": self.kinds.count("summary"), "sub-agent": self.kinds.count("sub-agent"),
                "lead steps over the baseline": len(self.agent.trace) - self.task.steps}

    @property
    def tool_calls(self) -> int:
        walkers = self.agent.walker.runs if self.agent.walker else []
        return len(self.agent.run_tool_calls) + sum(len(w.tools.log) for w in walkers)

    @property
    def lost_at(self) -> Optional[int]:
        """The first lead call, after the slip was read, whose prompt states no tariff or a wrong one (1-based
        among the lead's calls), or None when every later prompt of the lead carries the right tariff."""
        read = False
        for number, call in enumerate((c for c, k in zip(self.calls, self.kinds) if k == "lead"), 1):
            seen = tariff_seen(call.prompt)
            if read and seen != self.task.tariff:
                return number
            read = read or seen is not None
        return None


def run_relay(task, strategy: str = "full history", llm=None, knob: float = 0.0, seed: int = 0,
              max_steps: Optional[int] = None, **settings) -> RelayRun:
    """Run `strategy` on `task`; the LLM is `llm`, else the relay stand-in with the long-context knob."""
    if llm is None:
        llm = LongContextLLM(knob, seed=seed) if knob else relay_llm()
    agent = make_agent(task, strategy, llm, max_steps, **settings)
    start = len(ledger(llm))
    agent.run(task.question, verbose=False)
    return RelayRun(task, strategy, _settings(settings), agent, list(ledger(llm)[start:]))


def row(run: RelayRun, knob: float, seed: int) -> dict:
    """What the sweep keeps of a run."""
    return {"task": run.task.id, "steps": run.task.steps, "strategy": run.strategy, "knob": knob, "seed": seed,
            "correct": run.correct, "answer": run.answer[:80], "calls": len(run.calls),
            "lead_steps": len(run.agent.trace),
            "prompt_tokens": sum(run.prompt_tokens), "completion_tokens": sum(c.completion_tokens for c in run.calls),
            "cached_tokens": sum(run.cached_tokens), "tool_calls": run.tool_calls,
            "summary_calls": run.added_calls["summary"], "sub_agent_calls": run.added_calls["sub-agent"],
            "lead_steps_over_baseline": run.added_calls["lead steps over the baseline"],
            "lost_at": run.lost_at, "misread_by": [k for c, k in zip(run.calls, run.kinds) if "misread" in c.note],
            "dollars": round(run.dollars(cache=False), 8),
            "dollars_cached": round(run.dollars(cache=True), 8)}


def sweep(strategies=STRATEGIES, tasks=None, knobs=KNOBS, seeds=SEEDS, progress: bool = False) -> dict:
    """Every strategy on every task, at every knob setting (knob 0 once: no draws) and seed; per-call tokens at
    knob 0."""
    tasks = tasks if tasks is not None else load_relay()
    rows, curves = [], {}
    for strategy in strategies:
        for task in tasks:
            for knob in knobs:
                for seed in (seeds[:1] if knob == 0 else seeds):
                    run = run_relay(task, strategy, knob=knob, seed=seed)
                    rows.append(row(run, knob, seed))
                    if knob == 0:
                        curves.setdefault(strategy, {})[task.id] = {
                            "prompt_tokens": run.prompt_tokens, "cached": run.cached_tokens,
                            "kinds": "".join(KIND_LETTERS[kind] for kind in run.kinds)}
            if progress:
                print(f"{strategy:20} {task.id}: done", flush=True)
    return {"settings": DEFAULTS, "knobs": list(knobs), "seeds": list(seeds), "rows": rows, "curves": curves}


def frontier(rows: list[dict], knob: float) -> dict:
    """{strategy: success rate, mean prompt tokens, mean dollars without and with cache} over tasks and seeds."""
    out = {}
    for strategy in dict.fromkeys(r["strategy"] for r in rows):
        mine = [r for r in rows if r["strategy"] == strategy and r["knob"] == knob]
        if mine:
            out[strategy] = {"success": statistics.fmean(r["correct"] for r in mine), "runs": len(mine),
                             "prompt_tokens": statistics.fmean(r["prompt_tokens"] for r in mine),
                             "dollars": statistics.fmean(r["dollars"] for r in mine),
                             "dollars_cached": statistics.fmean(r["dollars_cached"] for r in mine)}
    return out


def shipped_sweep() -> dict:
    """data/context_sweep.json, as bench/context_sweep.py wrote it."""
    from .data import read_text

    return json.loads(read_text("context_sweep.json"))


def growth(curves: dict, lengths=(20, 60)) -> dict:
    """{strategy: {"at 20": total prompt tokens of relay-20, "at 60": ..., "exponent": b}} where b is the slope
    of log(total prompt tokens) against log(task steps) over every task: about 2 for a quadratic bill, 1 for a
    linear one. Totals include every call of the run (summaries, sub-agents)."""
    import numpy as np

    out = {}
    for strategy, by_task in curves.items():
        steps = [int(task_id.split("-")[1]) for task_id in by_task]
        totals = [sum(curve["prompt_tokens"]) for curve in by_task.values()]
        slope = float(np.polyfit(np.log(steps), np.log(totals), 1)[0])
        out[strategy] = {**{f"at {n}": sum(by_task[f"relay-{n}"]["prompt_tokens"]) for n in lengths},
                         "exponent": slope}
    return out


def main(argv: Optional[list] = None) -> int:
    """Write the sweep (every strategy, task, knob setting and seed) to data/context_sweep.json."""
    import argparse
    from pathlib import Path

    from .data import DATA_DIR

    parser = argparse.ArgumentParser(prog="python bench/context_sweep.py", description=main.__doc__)
    parser.add_argument("--out", type=Path, default=Path(str(DATA_DIR / "context_sweep.json")))
    args = parser.parse_args(argv)
    result = sweep(progress=True)
    args.out.write_text(json.dumps(result, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {len(result['rows'])} rows to {args.out}")
    return 0
