"""Notebook 07's pictures and panel: one puzzle's search tree, and 100 hard puzzles at one setting.

`plot_tree` draws a ToTResult; `tot_run` is the panel's plain callback (pytest drives it);
`tot_panel` wraps it in widgets: k, b, depth, noise, votes and the proposer's slips.
"""
from __future__ import annotations

import functools

from ..game24 import hardest
from ..scripts.tot import stand_in
from ..tot import ToTResult, TreeOfThoughts, run_puzzles, summarize
from . import run_panel

SHOWCASE = [4, 4, 7, 7]  # one of our hardest: 7 * (4 - 4/7), and the random path misses it
RANGES = {"k": (1, 10), "b": (1, 5), "depth": (1, 3), "votes": (0, 5)}  # whole numbers
PROBABILITIES = {"noise": (0.0, 1.0), "errs": (0.0, 0.5)}
COLORS = {"pruned": "0.75", "kept": "tab:blue", "solution": "tab:green", "rejected": "tab:red"}


@functools.lru_cache(maxsize=1)
def hard_puzzles() -> tuple:
    """The 100 hardest puzzles of data/game24.jsonl, as tuples of numbers."""
    return tuple(tuple(p["numbers"]) for p in hardest(100))


def _layout(result: ToTResult) -> dict[int, float]:
    """x of every node: leaves side by side (a kept leaf gets room for its label), parents centred."""
    children: dict[int, list[int]] = {}
    for node in result.nodes[1:]:
        children.setdefault(node.parent, []).append(node.id)
    by_id = {n.id: n for n in result.nodes}
    x: dict[int, float] = {}
    cursor = [0.0]

    def place(node_id: int) -> None:
        kids = children.get(node_id, [])
        if not kids:
            width = 3.0 if by_id[node_id].kept else 1.0
            x[node_id] = cursor[0] + width / 2
            cursor[0] += width
            return
        for kid in kids:
            place(kid)
        x[node_id] = (x[kids[0]] + x[kids[-1]]) / 2

    place(0)
    return x


def plot_tree(result: ToTResult, ax=None, title: str = ""):
    """Every node of one search: kept nodes labelled, pruned ones grey, the verified path green."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Patch

    x = _layout(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(min(16, max(8, 0.12 * max(x.values()))), 4.8))
    by_id = {n.id: n for n in result.nodes}
    solution, node_id = set(), result.answer_node
    while node_id is not None:
        solution.add(node_id)
        node_id = by_id[node_id].parent
    rejected = {n.id for n in result.nodes if n.numbers == ("24",) and n.verdict not in ("", "verified")}
    kinds = {n.id: ("solution" if n.id in solution else "rejected" if n.id in rejected
                    else "kept" if n.kept else "pruned") for n in result.nodes}
    edges = {True: [], False: []}
    for node in result.nodes[1:]:
        edges[node.id in solution].append([(x[node.parent], 1 - node.depth), (x[node.id], -node.depth)])
    ax.add_collection(LineCollection(edges[False], colors="0.8", linewidths=0.8, zorder=1))
    ax.add_collection(LineCollection(edges[True], colors=COLORS["solution"], linewidths=2.5, zorder=1))
    for kind, color in COLORS.items():
        nodes = [n for n in result.nodes if kinds[n.id] == kind]
        ax.scatter([x[n.id] for n in nodes], [-n.depth for n in nodes], s=12 if kind == "pruned" else 40,
                   color=color, zorder=2)
    for node in (n for n in result.nodes if n.kept):
        score = "" if node.score is None else f"\nscore {node.score:g}"
        ax.annotate(node.label + score, (x[node.id], -node.depth), xytext=(0, -7), textcoords="offset points",
                    ha="center", va="top", fontsize=7, color="black" if kinds[node.id] == "kept" else COLORS[kinds[node.id]],
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    ax.set_xlim(-0.5, max(x.values()) + 1.5)
    ax.set(yticks=[-d for d in range(result.depth + 1)], yticklabels=[f"level {d}" for d in range(result.depth + 1)],
           xticks=[], ylim=(-result.depth - 0.75, 0.35),
           title=title or f"Tree of Thoughts on {' '.join(map(str, result.puzzle))}: k={result.k}, b={result.b}, "
                          f"votes={result.votes}, {len(result.calls)} LLM calls (ledger)")
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    handles = [Patch(color=COLORS[k], label=label) for k, label in (
        ("kept", "kept in the beam"), ("pruned", "pruned"), ("solution", "verified solution"),
        ("rejected", "claims 24, rejected by the verifier"))]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=4, fontsize=8, frameon=False)
    return ax


def _check(values: dict) -> dict:
    for name, (low, high) in RANGES.items():
        value = values[name]
        if not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    for name, (low, high) in PROBABILITIES.items():
        value = round(float(values[name]), 2)
        if not low <= value <= high:
            raise ValueError(f"{name} must be between {low} and {high}, got {value}")
        values[name] = value
    return values


def tot_run(k: int = 6, b: int = 3, depth: int = 3, noise: float = 0.25, votes: int = 1, errs: float = 0.05,
            puzzles=None, showcase=SHOWCASE):
    """One setting on the hard puzzles and on the showcase puzzle; prints the numbers, draws the tree and the outcomes."""
    import matplotlib.pyplot as plt

    settings = _check({"k": k, "b": b, "depth": depth, "votes": votes, "noise": noise, "errs": errs})
    model = {"noise": settings.pop("noise"), "errs": settings.pop("errs")}
    puzzles = hard_puzzles() if puzzles is None else puzzles
    results = run_puzzles(stand_in(**model), puzzles, **settings)
    chain = run_puzzles(stand_in(**model), puzzles, k=1, b=1, depth=depth, votes=0)
    tree = TreeOfThoughts(stand_in(**model), **settings).solve(showcase)
    search, single = summarize(results), summarize(chain)
    print(f"stand-in: noise {model['noise']}, slips {model['errs']}; search: k={k}, b={b}, depth={depth}, votes={votes}")
    print(f"calls per expanded node: 1 + children x votes (1 + {k} x {votes} = {1 + k * votes} when the proposer "
          f"writes {k} usable steps)")
    for name, s in (("tree of thoughts", search), ("random path", single)):
        print(f"{name:>16}: solved {s.solved}/{s.puzzles} ({s.success_rate:.0%}), claimed 24 but rejected "
              f"{s.claimed_not_verified}, {s.calls_per_puzzle:.1f} calls and {s.tokens_per_puzzle:.0f} tokens per puzzle")
    verdict = f"solved: {tree.answer} = 24" if tree.solved else "not solved"
    print(f"showcase {' '.join(map(str, showcase))}: {verdict}; {len(tree.calls)} calls"
          + "".join(f"\n  rejected: {e} ({reason})" for e, reason in tree.rejected))

    fig = plt.figure(figsize=(12, 4.6))
    grid = fig.add_gridspec(1, 4)
    plot_tree(tree, fig.add_subplot(grid[0, :3]))
    ax = fig.add_subplot(grid[0, 3])
    names = ["random path", "tree of thoughts"]
    parts = [("solved (verified)", "solved", COLORS["solution"]),
             ("claimed 24, rejected", "claimed_not_verified", COLORS["rejected"])]
    bottom = [0, 0]
    for label, attr, color in parts:
        heights = [getattr(single, attr), getattr(search, attr)]
        ax.bar(names, heights, bottom=bottom, color=color, label=label)
        bottom = [a + h for a, h in zip(bottom, heights)]
    ax.bar_label(ax.containers[-1], labels=[str(int(v)) for v in bottom], padding=2, fontsize=8)
    ax.set(ylabel=f"puzzles (of {len(puzzles)})", title="The hard puzzles at this setting",
           ylim=(0, max(4, max(bottom) * 1.3)))
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return results, chain, tree


def tot_panel():
    """Sliders for k, b, depth, noise, votes and slips; Run searches the 100 hard puzzles and draws one tree."""
    import ipywidgets as widgets

    def whole(name, value, description):
        return widgets.IntSlider(value=value, min=RANGES[name][0], max=RANGES[name][1], description=description)

    def share(name, value, description):
        low, high = PROBABILITIES[name]
        return widgets.FloatSlider(value=value, min=low, max=high, step=0.05, description=description)

    return run_panel(
        {
            "k": whole("k", 6, "k (steps proposed)"),
            "b": whole("b", 3, "b (beam)"),
            "depth": whole("depth", 3, "depth"),
            "noise": share("noise", 0.25, "evaluator noise"),
            "votes": whole("votes", 1, "votes (0: no evaluator)"),
            "errs": share("errs", 0.05, "proposer slips"),
        },
        tot_run,
        label="Search",
    )
