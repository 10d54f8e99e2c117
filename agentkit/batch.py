"""Run one function over many items, a few at a time, with a progress bar.

Real models spend seconds per call waiting on the network, so a batch of tasks runs on
`workers` threads; the stand-in is pure CPU, so one worker is as fast. Results come
back in the order of the items, whatever order they finish in, and an exception in
one item is recorded in its result: it never loses the others.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable


@dataclass
class ItemResult:
    """What fn(item) returned, or the error it raised, and how long it took."""

    item: Any
    value: Any = None
    error: str = ""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.error


def _timed(fn: Callable, item) -> ItemResult:
    start = time.perf_counter()
    try:
        return ItemResult(item, fn(item), "", time.perf_counter() - start)
    except Exception as e:  # noqa: BLE001 - one bad item must not lose the batch
        return ItemResult(item, None, f"{type(e).__name__}: {e}", time.perf_counter() - start)


def progress_bar(total: int, desc: str = "", enabled: bool = True):
    """tqdm's notebook bar in Jupyter, a plain one in a terminal; a silent stand-in when disabled."""
    if not enabled:
        from tqdm import tqdm

        return tqdm(total=total, disable=True)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="task")


def run_batch(fn: Callable, items: Iterable, workers: int = 1, *, progress: bool = True,
              desc: str = "") -> list[ItemResult]:
    """fn(item) for every item, at most `workers` at once; results in the items' order."""
    items = list(items)
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    bar = progress_bar(len(items), desc, progress)
    try:
        if workers == 1:
            results = []
            for item in items:
                results.append(_timed(fn, item))
                bar.update(1)
            return results
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_timed, fn, item) for item in items]
            for future in futures:
                future.add_done_callback(lambda _: bar.update(1))
            return [future.result() for future in futures]
    finally:
        bar.close()
