"""Notebook 13's panel callback: both designs from the ledgers, bad values explained, pollution and eviction."""
import pytest

from agentkit.protocol import LedgerLLM
from agentkit.widgets.memory import REAL_MODEL_TASKS, REPEATS, memory_run


def test_retrieve_and_load_are_measured_from_their_ledgers_and_load_stays_in_its_window():
    run = memory_run(size=1000, k=3, window=1024)
    assert set(run.rows) == {"retrieve", "load"}
    assert run.rows["retrieve"]["memories carried"] <= 3
    assert run.rows["load"]["tokens per call"] <= 1024 < 10 * run.rows["retrieve"]["tokens per call"] + 1024
    assert run.rows["load"]["success"] <= 0.1  # only the newest few dozen memories fit 1,024 tokens
    assert "top 3 by keyword" in run.text and "1024-token window" in run.text


@pytest.mark.parametrize("evict, evicted, last", [(True, 1, "right"), (False, 0, "WRONG")])
def test_a_wrong_memory_is_evicted_only_when_eviction_is_on(evict, evicted, last):
    run = memory_run(size=100, pollute=True, evict=evict)
    assert len(run.pollution) == REPEATS and run.pollution[0].startswith("WRONG")
    assert "(the wrong one)" in run.pollution[0]
    assert len(run.evicted) == evicted and run.pollution[-1].startswith(last)


@pytest.mark.parametrize("kwargs, message", [
    ({"size": 50}, "size must be one of"), ({"k": 0}, "k must be between"), ({"window": 100}, "window must be"),
    ({"method": "magic"}, "method must be one of"),
])
def test_a_bad_value_explains_itself(kwargs, message):
    with pytest.raises(ValueError, match=message):
        memory_run(**kwargs)


class Unknowing(LedgerLLM):
    """A model that knows nothing, off any script."""

    def _complete(self, messages, temperature):
        return "Answer: unknown", {"prompt_tokens": 10, "completion_tokens": 3}


def test_a_real_model_asks_fewer_questions_and_says_so():
    run = memory_run(size=10, llm_factory=Unknowing)
    assert run.tasks == REAL_MODEL_TASKS and "a real model" in run.text
    assert run.rows["retrieve"]["success"] == 0 and run.rows["retrieve"]["tokens per call"] == 10
