"""Chapter 17's panel: a context strategy, its window and threshold, the long-context knob, the cache; tokens, success.

The callback runs the chosen strategy and full history on three relay tasks (PANEL_TASKS: 20, 40 and 60 steps)
with the relay stand-in (whatever AP_MODE says: the panel measures structure, not a model), at the knob's
setting with one seed. Its left chart is the cumulative prompt tokens per call of relay-40 (and the part not
cached, when the cache is on), its right chart success against dollars over the three tasks, both strategies
side by side; the shipped sweep (data/context_sweep.json) has all nine tasks and several seeds. Every figure
is read from the runs' ledgers (agentkit.context_runs).
"""
from __future__ import annotations

import statistics

from ..context_runs import STRATEGIES, run_relay
from ..relay import relay_task
from . import run_panel

WINDOW_RANGE, THRESHOLD_RANGE, KNOB_RANGE = (1, 20), (300, 6000), (0.0, 0.1)
CURVE_TASK = "relay-40"
PANEL_TASKS = ("relay-20", "relay-40", "relay-60")


def _check(window: int, threshold: int, knob: float, strategy: str) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if not WINDOW_RANGE[0] <= window <= WINDOW_RANGE[1]:
        raise ValueError(f"window must be from {WINDOW_RANGE[0]} to {WINDOW_RANGE[1]} steps, got {window}")
    if not THRESHOLD_RANGE[0] <= threshold <= THRESHOLD_RANGE[1]:
        raise ValueError(f"threshold must be from {THRESHOLD_RANGE[0]} to {THRESHOLD_RANGE[1]} tokens, got {threshold}")
    if not KNOB_RANGE[0] <= knob <= KNOB_RANGE[1]:
        raise ValueError(f"the long-context knob must be from {KNOB_RANGE[0]} to {KNOB_RANGE[1]}, got {knob}")


def settings_for(strategy: str, window: int, threshold: int) -> dict:
    """The panel's two sliders, as the settings of `strategy`: the window (or the observations masking keeps,
    or the stations a sub-agent walks), and the threshold (compaction's, or the layered context's budget)."""
    if strategy in ("sliding window", "note tool"):
        return {"window": window}
    if strategy == "observation masking":
        return {"keep": window}
    if strategy == "sub-agent":
        return {"segment": window}
    if strategy == "compaction":
        return {"threshold": threshold}
    if strategy == "layered (08)":
        return {"budget": threshold}
    return {}


def compare(strategy: str = "observation masking", window: int = 2, threshold: int = 2000, knob: float = 0.0,
            cache: bool = True) -> dict:
    """Full history and `strategy` on the panel's tasks (seed 0): {name: [RelayRun, ...]}."""
    _check(window, threshold, knob, strategy)
    settings = settings_for(strategy, window, threshold)
    tasks = [relay_task(task_id) for task_id in PANEL_TASKS]
    runs = {"full history": [run_relay(task, "full history", knob=knob) for task in tasks]}
    if strategy != "full history":
        runs[strategy] = [run_relay(task, strategy, knob=knob, **settings) for task in tasks]
    return runs


def show_strategy(strategy: str = "observation masking", window: int = 2, threshold: int = 2000, knob: float = 0.0,
                  cache: bool = True) -> dict:
    """The panel's callback: print each strategy's figures, draw its token curve and its success against dollars."""
    import matplotlib.pyplot as plt

    runs = compare(strategy, window, threshold, knob, cache)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    chosen = ", ".join(f"{k} {v}" for k, v in settings_for(strategy, window, threshold).items()) or "no setting"
    print(f"{strategy} ({chosen}), long-context knob {knob:g} per 1,000 tokens, seed 0, cache {'on' if cache else 'off'}:")
    for (name, mine), marker, color in zip(runs.items(), "os", ("tab:blue", "tab:green")):
        curve = next(run for run in mine if run.task.id == CURVE_TASK)
        calls = range(1, len(curve.calls) + 1)
        left.plot(calls, curve.cumulative, "-", color=color, label=name)
        if cache:
            uncached = [sum(curve.prompt_tokens[:i]) - sum(curve.cached_tokens[:i]) for i in calls]
            left.plot(calls, uncached, ":", color=color, label=f"{name}: not cached")
        success = statistics.fmean(run.correct for run in mine)
        cost = statistics.fmean(run.dollars(cache) for run in mine)
        right.scatter(cost * 1000, 100 * success, s=70, marker=marker, color=color, label=name)
        added = {k: sum(run.added_calls[k] for run in mine) for k in ("summary", "sub-agent")}
        print(f"  {name:20} right on {sum(run.correct for run in mine)} of {len(mine)} tasks; {CURVE_TASK}: "
              f"{len(curve.calls)} calls, {curve.cumulative[-1]} prompt tokens ({sum(curve.cached_tokens)} cached); "
              f"over the {len(mine)} tasks: ${cost * 1000:.2f} per 1,000 runs, summariser calls {added['summary']}, "
              f"sub-agent calls {added['sub-agent']}")
    left.set(title=f"{CURVE_TASK}: cumulative prompt tokens", xlabel="LLM call", ylabel="tokens")
    left.legend(loc="upper left", fontsize=8)
    right.set(title=f"{len(PANEL_TASKS)} relay tasks: success against cost",
              xlabel=f"$ per 1,000 runs (cache {'on' if cache else 'off'})",
              ylabel="% of tasks right", ylim=(-5, 105))
    right.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return runs


def strategy_panel():
    """Controls for the strategy, its window and threshold, the long-context knob and the cache; Run draws the charts."""
    import ipywidgets as w

    return run_panel(
        {
            "strategy": w.Dropdown(options=list(STRATEGIES), value="observation masking", description="strategy"),
            "window": w.IntSlider(value=2, min=WINDOW_RANGE[0], max=WINDOW_RANGE[1],
                                  description="window / kept observations / stations per sub-agent"),
            "threshold": w.IntSlider(value=2000, min=THRESHOLD_RANGE[0], max=THRESHOLD_RANGE[1], step=100,
                                     description="compaction threshold / layered budget (tokens)"),
            "knob": w.FloatSlider(value=0.0, min=KNOB_RANGE[0], max=KNOB_RANGE[1], step=0.01,
                                  description="long-context knob (per 1,000 tokens)"),
            "cache": w.Checkbox(value=True, description="prompt cache on"),
        },
        show_strategy,
    )

