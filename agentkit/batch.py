"""Run one function over many items, a few at a time, with a progress bar.

Real models spend seconds per call waiting on the network, so a batch of tasks runs on
`workers` threads; the stand-in is pure CPU, so one worker is as fast. Results come
back in the order of the items, whatever order they finish in, and an exception in
one item (even SystemExit) is recorded in its result: it never loses the others.

Ctrl-C (KeyboardInterrupt, in the caller or raised by an item) stops the batch at once:
items not started are cancelled, items still running are left to finish on their own
threads unwaited, and `BatchInterrupted` (a KeyboardInterrupt) is raised carrying the
results of every item that had finished.
"""
from __future__ import annotations

import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
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


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a batch; `results` holds the items that had finished, in the items' order."""

    def __init__(self, results: list[ItemResult], total: int) -> None:
        self.results, self.total = results, total
        super().__init__(f"batch interrupted: {len(results)} of {total} items had finished; their results "
                         f"are in this exception's .results, the other items were not run to the end")


def _timed(fn: Callable, item) -> ItemResult:
    start = time.perf_counter()
    try:
        return ItemResult(item, fn(item), "", time.perf_counter() - start)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - one bad item (even sys.exit in it) must not lose the batch
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
                try:
                    results.append(_timed(fn, item))
                except KeyboardInterrupt:
                    raise BatchInterrupted(results, len(items)) from None
                bar.update(1)
            return results
        return _in_threads(fn, items, workers, bar)
    finally:
        bar.close()


def _in_threads(fn: Callable, items: list, workers: int, bar) -> list[ItemResult]:
    pool, futures = ThreadPoolExecutor(max_workers=workers), []
    try:
        for item in items:
            futures.append(pool.submit(_timed, fn, item))
            futures[-1].add_done_callback(lambda _: bar.update(1))
        # _timed returns every Exception as a result, so a future that raised was interrupted. Waiting in
        # short slices keeps the main thread responsive to Ctrl-C on every platform.
        pending = futures
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_EXCEPTION)
            if any(f.exception() is not None for f in done):
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)  # do not wait for the items still running
        finished = [f.result() for f in futures if f.done() and not f.cancelled() and f.exception() is None]
        raise BatchInterrupted(finished, len(items)) from None
    pool.shutdown()
    return [future.result() for future in futures]
