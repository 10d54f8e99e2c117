"""What chapter 17 says about its llama.cpp measurement holds in the shipped file (data/llamacpp_cache.json): the token
counts are the server's own and the same in every repetition; the cache off processes every token; a timestamp at the
top breaks every call; a reordered tool list breaks one; a window re-processes its history; compaction keeps its prefix."""
import json
from collections import defaultdict
from pathlib import Path

import pytest

from agentkit.data import read_text

MEASURED = json.loads(read_text("llamacpp_cache.json"))
ROWS = MEASURED["rows"]


def scenario(name, rep=1):
    return [r for r in ROWS if r["scenario"] == name and r["rep"] == rep]


def test_the_file_holds_every_scenario_every_repetition_and_says_where_it_was_measured():
    assert MEASURED["reps"] >= 3 and MEASURED["measured"][:2] == "20" and MEASURED["machine"]["cpus"]
    assert MEASURED["command"] == "python bench/llamacpp_cache.py"
    for name in MEASURED["scenarios"]:
        calls = [len(scenario(name, rep)) for rep in range(1, MEASURED["reps"] + 1)]
        assert len(set(calls)) == 1 and calls[0] >= 7, name
    assert all(r["prompt_ms"] > 0 and r["prompt_n"] + r["cache_n"] == r["prompt_tokens"] for r in ROWS)


def test_the_token_counts_are_the_same_in_every_repetition():
    seen = defaultdict(set)
    for r in ROWS:
        seen[(r["scenario"], r["call"])].add((r["prompt_tokens"], r["cache_n"], r["prompt_n"]))
    assert all(len(counts) == 1 for counts in seen.values())


def test_the_cache_off_processes_everything_and_the_cache_on_only_the_new_step():
    off, on = scenario("cache off"), scenario("cache on")
    assert all(r["cache_n"] == 0 for r in off)
    assert [r["prompt_tokens"] for r in off] == [r["prompt_tokens"] for r in on]
    assert all(r["cache_n"] > 0.6 * r["prompt_tokens"] for r in on[1:])
    assert sum(r["prompt_n"] for r in on) < sum(r["prompt_n"] for r in off) / 3


def test_a_timestamp_breaks_every_call_and_a_reordered_tool_list_one():
    assert all(r["cache_n"] < 0.1 * r["prompt_tokens"] for r in scenario("timestamp in the system prompt"))
    reordered = scenario("tool list reordered at call 4")
    assert reordered[3]["prompt_n"] > 0.5 * reordered[3]["prompt_tokens"]
    assert all(r["cache_n"] > 0.6 * r["prompt_tokens"] for r in reordered[4:])


def test_a_window_reprocesses_its_history_masking_less_and_compaction_keeps_its_prefix():
    window, masking = scenario("sliding window (3 steps)"), scenario("observation masking (keep 2)")
    assert all(r["prompt_n"] > 0.5 * r["prompt_tokens"] for r in window[4:])
    assert sum(r["prompt_n"] for r in masking) < sum(r["prompt_n"] for r in window)
    compaction = scenario("compaction")
    after = [compaction[i + 1] for i, r in enumerate(compaction[:-1]) if r["kind"] == "summary"]
    assert after and all(r["cache_n"] > 0 for r in after)  # the role prompt and question came back from memory


@pytest.mark.parametrize("name", ["cache off", "timestamp in the system prompt"])
def test_the_milliseconds_follow_the_tokens_processed(name):
    cached = sum(r["prompt_ms"] for r in ROWS if r["scenario"] == "cache on")
    assert sum(r["prompt_ms"] for r in ROWS if r["scenario"] == name) > 1.5 * cached
