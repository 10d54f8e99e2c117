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


# --- Ctrl-C and sys.exit ----------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 4])
def test_ctrl_c_stops_the_batch_and_keeps_the_finished_results(workers):
    started = []

    def task(n):
        started.append(n)
        if n == 5:
            time.sleep(0.05)  # the items before it have finished
            raise KeyboardInterrupt  # what Ctrl-C raises inside a running item
        time.sleep(0.01 if n < 5 else 0.2)
        return n * 10

    with pytest.raises(KeyboardInterrupt) as stop:
        run_batch(task, range(40), workers=workers, progress=False)
    time.sleep(0.3)  # items that were running when it stopped may still end; nothing new starts
    assert len(started) <= 5 + 1 + workers  # not every one of the 40 items ran
    assert "batch interrupted: 5 of 40 items had finished" in str(stop.value)
    assert [(r.item, r.value) for r in stop.value.results] == [(n, n * 10) for n in range(5)]


def test_ctrl_c_in_the_caller_does_not_wait_for_every_item(monkeypatch):
    import agentkit.batch as batch

    # Ctrl-C arrives while the caller waits, once four items hold the four threads: the wait raises it, as Python
    # raises it there. (A simulated signal from another thread reaches only the process's main thread, which under
    # pytest-xdist may not be the one running this test.) No clock: the items cannot end until the test lets them.
    gate, started, holding = threading.Event(), [], threading.Semaphore(0)

    def interrupted_wait(*args, **kwargs):
        for _ in range(4):
            assert holding.acquire(timeout=120), "four items never started"
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "wait", interrupted_wait)

    def task(n):
        started.append(n)
        holding.release()
        gate.wait()
        return n

    backstop = threading.Timer(120, gate.set)  # a batch that waited for them would return only then, and fail
    backstop.start()
    try:
        with pytest.raises(KeyboardInterrupt) as stop:
            run_batch(task, range(200), workers=4, progress=False)
        assert sorted(started) == [0, 1, 2, 3] and not gate.is_set()  # it returned while they held their threads
        assert stop.value.results == [] and "0 of 200 items had finished" in str(stop.value)
    finally:
        gate.set()
        backstop.cancel()


def test_sys_exit_in_one_item_is_recorded_and_the_rest_survive():
    import sys

    def task(n):
        if n == 1:
            sys.exit(3)
        return n

    for workers in (1, 4):
        results = run_batch(task, range(4), workers=workers, progress=False)
        assert [r.ok for r in results] == [True, False, True, True]
        assert results[1].error == "SystemExit: 3"
