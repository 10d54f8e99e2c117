"""Notebook 13's panel: grow the store, retrieve or load, inject a wrong memory, and watch the cost.

`memory_run` is the plain callback (pytest drives it); `memory_panel` wraps it in widgets.
Both designs answer the same later questions from a store of the chosen size; with a real
model the run asks fewer questions (REAL_MODEL_TASKS) and its text says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from ..embeddings import ShippedEmbeddings
from ..memory import MemoryAgent
from ..memory_data import TASKS_PER_STORE, polluted_task, session_memories, session_tasks, wrong_memory
from ..memory_store import METHODS, MemoryStore
from ..modes import get_llm
from ..protocol import ledger
from ..scripted import ScriptedLLM
from . import run_panel

SIZES = (10, 100, 1000)
K_RANGE = (1, 10)
WINDOW_RANGE = (1024, 8192)
REPEATS = 5  # how often the polluted question is asked
REAL_MODEL_TASKS = 2  # a real model is slow: fewer questions per design


@lru_cache(maxsize=1)
def _embedder() -> ShippedEmbeddings:
    return ShippedEmbeddings()


@dataclass
class MemoryRun:
    """Both designs on one store size, and (optionally) a polluted question asked again and again."""

    size: int
    k: int
    window: int
    method: str
    rows: dict = field(default_factory=dict)  # mode -> {"success", "tokens per call", "memories carried"}
    pollution: list[str] = field(default_factory=list)  # one line per repeat: the answer and the cited memory
    evicted: list[int] = field(default_factory=list)
    tasks: int = TASKS_PER_STORE
    note: str = ""

    @property
    def text(self) -> str:
        lines = [f"{self.size} memories, {self.tasks} later questions; retrieve: top {self.k} by {self.method}; "
                 f"load: newest first into a {self.window}-token window"]
        if self.note:
            lines.append(self.note)
        lines.append(f"{'mode':>9} {'success':>8} {'tokens/call':>12} {'memories carried':>17}")
        for mode, row in self.rows.items():
            lines.append(f"{mode:>9} {row['success']:8.0%} {row['tokens per call']:12.0f} "
                         f"{row['memories carried']:17.1f}")
        if self.pollution:
            lines.append(f"\nwrong memory injected; the question {polluted_task().question!r} asked {REPEATS} times:")
            lines += [f"  {n}. {line}" for n, line in enumerate(self.pollution, 1)]
            lines.append(f"  evicted: {', '.join(f'M{i}' for i in self.evicted) or 'nothing'}")
        return "\n".join(lines)


def memory_run(size: int = 100, k: int = 5, window: int = 4096, method: str = "keyword", pollute: bool = False,
               evict: bool = True, llm_factory=None) -> MemoryRun:
    """Retrieve against load on a store of `size` memories; with `pollute`, a wrong memory's fate too."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size}")
    if not K_RANGE[0] <= k <= K_RANGE[1]:
        raise ValueError(f"k must be between {K_RANGE[0]} and {K_RANGE[1]}, got {k}")
    if not WINDOW_RANGE[0] <= window <= WINDOW_RANGE[1]:
        raise ValueError(f"window must be between {WINDOW_RANGE[0]} and {WINDOW_RANGE[1]} tokens, got {window}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    make_llm = llm_factory or get_llm
    offline = isinstance(make_llm(), ScriptedLLM)
    tasks = session_tasks(size, TASKS_PER_STORE if offline else REAL_MODEL_TASKS)
    run = MemoryRun(size, k, window, method, tasks=len(tasks),
                    note="" if offline else f"(a real model: {len(tasks)} questions per design, to keep it short)")
    store = MemoryStore(embedder=_embedder())
    store.add_many(session_memories(size))
    for mode in ("retrieve", "load"):
        llm = make_llm()
        agent = MemoryAgent(llm, store, mode=mode, k=k, method=method, context_window=window)
        episodes = [agent.run(task.question, task.check) for task in tasks]
        calls = ledger(llm)
        run.rows[mode] = {
            "success": sum(bool(e.success) for e in episodes) / len(episodes),
            "tokens per call": sum(c.prompt_tokens for c in calls) / max(1, len(calls)),
            "memories carried": sum(len(e.retrieved) for e in episodes) / len(episodes),
        }
    if pollute:
        bad = store.add(wrong_memory())
        agent = MemoryAgent(make_llm(), store, k=k, method=method, learn=evict)
        task = polluted_task()
        for _ in range(REPEATS):
            episode = agent.run(task.question, task.check)
            cited = f"M{episode.cited}" + (" (the wrong one)" if episode.cited == bad else "") if episode.cited else "none"
            run.pollution.append(f"{'right' if episode.success else 'WRONG'}: {episode.answer!r}, cited {cited}")
        run.evicted = [row["id"] for row in store.evicted()]
    store.close()
    return run


def plot_memory_run(run: MemoryRun, axes=None):
    """Left: prompt tokens per call (ledgers) for each design, with the window. Right: success."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(8, 3), gridspec_kw={"wspace": 0.35})
    left, right = axes
    modes = list(run.rows)
    colors = ["tab:blue", "tab:orange"]
    left.bar(modes, [run.rows[m]["tokens per call"] for m in modes], color=colors)
    left.axhline(run.window, color="grey", linestyle=":", label="context window")
    left.set(ylabel="prompt tokens per call", title=f"{run.size} memories: cost per call")
    left.legend(loc="upper left", fontsize=8)
    right.bar(modes, [run.rows[m]["success"] for m in modes], color=colors)
    right.set(ylabel="success", ylim=(0, 1.05), title="later questions answered")
    return axes


def memory_panel():
    """Store size, k, window and method; inject a wrong memory, with or without eviction."""
    import ipywidgets as widgets

    def show(size, k, window, method, pollute, evict):
        run = memory_run(size, k, window, method, pollute, evict)
        print(run.text)
        plot_memory_run(run)

    return run_panel(
        {
            "size": widgets.Dropdown(options=list(SIZES), value=100, description="memories in the store"),
            "k": widgets.IntSlider(value=5, min=K_RANGE[0], max=K_RANGE[1], description="k (retrieve)"),
            "window": widgets.IntSlider(value=4096, min=WINDOW_RANGE[0], max=WINDOW_RANGE[1], step=512,
                                        description="window (load)"),
            "method": widgets.Dropdown(options=list(METHODS), value="dense", description="search"),
            "pollute": widgets.Checkbox(value=True, description="inject a wrong memory"),
            "evict": widgets.Checkbox(value=True, description="evict on failure"),
        },
        show,
    )


def show_memory_run(run: Optional[MemoryRun] = None, **kwargs) -> MemoryRun:
    """What the panel shows for one setting, printed and plotted in the notebook."""
    import matplotlib.pyplot as plt

    run = run or memory_run(**kwargs)
    print(run.text)
    plot_memory_run(run)
    plt.show()
    return run
