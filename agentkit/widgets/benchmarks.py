"""Chapter 18 panel: a BFCL category or an AgentDojo suite, a recording or a defence, and what the benchmark says.

BFCL: the chosen category's entries scored as the chosen source answers them: the oracle or one of its corruptions
(computed now, on the installed data), or SmolLM2's recording through one channel (from data/bfcl_sweep.json),
each with its 95% interval. AgentDojo: the chosen suite under every defence from data/agentdojo_sweep.json, the
chosen one marked, drawn as utility under attack against attack success.
"""
from __future__ import annotations

import json

from . import run_panel

SOURCES = ("oracle", "wrong function", "missing argument", "wrong type", "extra call", "a call where none is wanted",
           "SmolLM2 text", "SmolLM2 native", "SmolLM2 grammar")


def _spread(rate: float, interval) -> list:
    """An interval as matplotlib's error bars want it: distances below and above, never negative (rounding)."""
    return [[max(0.0, rate - interval[0])], [max(0.0, interval[1] - rate)]]


def _sweep(name: str) -> dict:
    from ..data import read_text
    return json.loads(read_text(name))


def _verdicts(category: str, source: str) -> list[tuple]:
    """[(entry id, right, reply)] for one category answered by one source."""
    from .. import bfcl

    if source.startswith("SmolLM2"):
        row = _sweep("bfcl_sweep.json")["categories"][category]["smollm2"][source.split()[1]]
        return [(v["id"], v["right"], v["reply"]) for v in row["verdicts"]]
    replies = [(e, bfcl.oracle(e) if source == "oracle" else bfcl.corrupt(e, source)) for e in bfcl.load(category)]
    return [(e.id, bfcl.score(e, reply)[0], reply) for e, reply in replies]


def show_bfcl(category: str = "simple_python", source: str = "SmolLM2 grammar") -> tuple[int, int]:
    """Print one category's verdicts for one source and draw it beside the oracle and SmolLM2's channels;
    return (right, entries)."""
    import matplotlib.pyplot as plt

    from .. import bfcl

    if category not in bfcl.CATEGORIES:
        raise ValueError(f"category must be one of {', '.join(bfcl.CATEGORIES)}, got {category!r}")
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    scored_now = bool(bfcl.installed_version())  # the oracle and its corruptions need BFCL's data
    if not scored_now and not source.startswith("SmolLM2"):
        print(f"The {source} answers are scored on BFCL's data, which is not installed here. {bfcl.INSTALL}")
        return 0, 0
    verdicts = _verdicts(category, source)
    k, n = sum(v[1] for v in verdicts), len(verdicts)
    low, high = bfcl.interval(k, n)
    print(f"BFCL {category}, {source}: {k} of {n} right, 95% interval {low:.0%} to {high:.0%}")
    for entry_id, right, reply in verdicts[:6]:
        print(f"  {'right' if right else 'wrong':5}  {entry_id:22} {' '.join(reply.split())[:90]}")
    if n > 6:
        print(f"  ... and {n - 6} more")
    shown = list(dict.fromkeys(["oracle", source, "SmolLM2 text", "SmolLM2 native", "SmolLM2 grammar"]))
    shown = [name for name in shown if scored_now or name.startswith("SmolLM2")]
    fig, ax = plt.subplots(figsize=(6, 2.8))
    for x, name in enumerate(shown):
        rows = verdicts if name == source else _verdicts(category, name)
        right, total = sum(v[1] for v in rows), len(rows)
        lo, hi = bfcl.interval(right, total)
        ax.bar(x, right / total, yerr=_spread(right / total, (lo, hi)), capsize=3,
               color="tab:orange" if name == source else "tab:blue")
        ax.text(x, 0.02, f"{right}/{total}", ha="center", fontsize=8, color="white")
    ax.set_xticks(range(len(shown)), [name.replace("SmolLM2 ", "SmolLM2\n") for name in shown], fontsize=7)
    ax.set(ylim=(0, 1.05), ylabel="right", title=f"BFCL {category}, with 95% intervals")
    plt.show()
    return k, n


def show_agentdojo(suite: str = "banking", defence: str = "provenance") -> dict:
    """Print and draw one suite under every defence from the shipped sweep; return the chosen defence's rates."""
    import matplotlib.pyplot as plt

    from ..agentdojo_run import DEFENCES, SUITES

    if suite not in SUITES:
        raise ValueError(f"suite must be one of {', '.join(SUITES)}, got {suite!r}")
    if defence not in DEFENCES:
        raise ValueError(f"defence must be one of {', '.join(DEFENCES)}, got {defence!r}")
    rows = _sweep("agentdojo_sweep.json")["suites"][suite]["defences"]
    print(f"AgentDojo {suite}: the scripted agent that obeys what it reads, under each defence")
    print(f"{'defence':22}{'utility':>10}{'under attack':>14}{'attack success':>16}")
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name in DEFENCES:
        r = rows[name]
        mark = " <" if name == defence else ""
        print(f"{name:22}{r['utility']['rate']:>10.0%}{r['utility_under_attack']['rate']:>14.0%}"
              f"{r['attack_success']['rate']:>16.0%}{mark}")
        x, y = r["attack_success"], r["utility_under_attack"]
        ax.errorbar(x["rate"], y["rate"], xerr=_spread(x["rate"], x["interval"]),
                    yerr=_spread(y["rate"], y["interval"]), fmt="o",
                    ms=9 if name == defence else 5, capsize=2, label=name)
    ax.set(xlabel="attack success", ylabel="utility under attack", xlim=(-0.05, 1.05), ylim=(-0.05, 1.05),
           title=f"AgentDojo {suite}: better is up and to the left")
    ax.legend(fontsize=7, loc="lower right")
    plt.show()
    return rows[defence]


def show_benchmark(benchmark: str = "BFCL", bfcl_category: str = "simple_python", source: str = "SmolLM2 grammar",
                   agentdojo_suite: str = "banking", defence: str = "provenance"):
    """The panel's callback."""
    if benchmark == "BFCL":
        return show_bfcl(bfcl_category, source)
    if benchmark == "AgentDojo":
        return show_agentdojo(agentdojo_suite, defence)
    raise ValueError(f"benchmark must be BFCL or AgentDojo, got {benchmark!r}")


def benchmark_panel():
    """Pick a benchmark, a category or suite, a source or defence; Run shows the verdicts."""
    import ipywidgets as widgets

    from ..agentdojo_run import DEFENCES, SUITES
    from ..bfcl import CATEGORIES

    return run_panel(
        {"benchmark": widgets.ToggleButtons(options=["BFCL", "AgentDojo"], value="BFCL", description="benchmark"),
         "bfcl_category": widgets.Dropdown(options=list(CATEGORIES), value="simple_python", description="category"),
         "source": widgets.Dropdown(options=list(SOURCES), value="SmolLM2 grammar", description="answers"),
         "agentdojo_suite": widgets.Dropdown(options=list(SUITES), value="banking", description="suite"),
         "defence": widgets.Dropdown(options=list(DEFENCES), value="provenance", description="defence")},
        show_benchmark,
    )
