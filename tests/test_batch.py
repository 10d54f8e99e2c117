"""Bounded parallel batches: order kept, errors recorded, never more than `workers` at once."""
import threading
import time

import pytest

from agentkit.batch import run_batch


def test_results_come_back_in_item_order_whatever_finishes_first():
    def slow_first(n):
        time.sleep(0.02 * (5 - n))
        return n * n

    results = run_batch(slow_first, range(5), workers=5, progress=False)
    assert [r.item for r in results] == list(range(5))
    assert [r.value for r in results] == [0, 1, 4, 9, 16]


def test_never_more_than_workers_at_once():
    running, peak, lock = 0, 0, threading.Lock()

    def task(_):
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.01)
        with lock:
            running -= 1

    run_batch(task, range(12), workers=3, progress=False)
    assert peak == 3


def test_one_failing_item_is_recorded_and_the_rest_survive():
    def task(n):
        if n == 2:
            raise KeyError("no such task")
        return n

    for workers in (1, 4):
        results = run_batch(task, range(4), workers=workers, progress=False)
        assert [r.ok for r in results] == [True, True, False, True]
        assert results[2].error == "KeyError: 'no such task'" and results[3].value == 3


def test_workers_below_one_is_a_clear_error():
    with pytest.raises(ValueError, match="workers must be at least 1"):
        run_batch(str, [1], workers=0)


def test_the_progress_bar_counts_every_item(capsys):
    run_batch(str, range(7), workers=2, desc="tasks")
    assert "7/7" in capsys.readouterr().err
