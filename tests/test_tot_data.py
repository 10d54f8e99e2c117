"""data/game24.jsonl: computed with exact fractions, every line checked, a sample re-derived.

The full enumeration takes seconds, so it runs in `data/make_game24.py --check`; here every
line of the file is verified, every 10th multiset is re-solved, and every 91st is rebuilt.
"""
import importlib
import json
from fractions import Fraction

import pytest

from agentkit.game24 import DATA_FILE, can_make_24, find_solution, hardest, load_puzzles, verify



@pytest.fixture(scope="module")
def generator():
    return importlib.import_module("agentkit.data.make_game24")


@pytest.fixture(scope="module")
def records():
    return load_puzzles()


def test_there_are_1820_multisets_and_the_file_holds_1362_solvable_ones(generator, records):
    multisets = generator.all_multisets()
    assert len(multisets) == len(set(multisets)) == 1820
    assert all(list(m) == sorted(m) and 1 <= m[0] and m[-1] <= 13 for m in multisets)
    assert len(DATA_FILE.read_text(encoding="utf-8").splitlines()) == len(records) == 1362
    assert len({tuple(r["numbers"]) for r in records}) == 1362
    assert {tuple(r["numbers"]) for r in records} <= set(multisets)


def test_every_solution_uses_exactly_the_puzzles_numbers_and_makes_24_exactly(records):
    for r in records:
        assert set(r) == {"numbers", "solution", "ways", "needs_fraction", "rank"}
        assert r["numbers"] == sorted(r["numbers"]) and len(r["numbers"]) == 4
        verdict = verify(r["solution"], r["numbers"])
        assert verdict.ok and verdict.value == Fraction(24), (r, verdict)
        assert sorted(int(t) for t in r["solution"].replace("(", " ").replace(")", " ").split()
                      if t.isdigit()) == r["numbers"]
        assert "." not in r["solution"]  # whole numbers only: no float ever written


def test_a_sample_of_the_enumeration_agrees_with_the_file(generator, records):
    in_file = {tuple(r["numbers"]): r for r in records}
    multisets = generator.all_multisets()
    for numbers in multisets[::10]:
        assert can_make_24(numbers) == (numbers in in_file), numbers
    for numbers in multisets[::182]:
        rebuilt = generator.record(numbers)
        if rebuilt is None:
            assert numbers not in in_file
        else:
            assert {**rebuilt, "rank": in_file[numbers]["rank"]} == in_file[numbers]


def test_the_difficulty_rank_orders_fraction_puzzles_then_fewest_ways(records):
    ranked = sorted(records, key=lambda r: r["rank"])
    assert [r["rank"] for r in ranked] == list(range(1, 1363))
    keys = [(not r["needs_fraction"], r["ways"], r["numbers"]) for r in ranked]
    assert keys == sorted(keys)
    assert hardest(3) == ranked[:3]
    needs = [r for r in records if r["needs_fraction"]]
    assert needs
    assert all(find_solution(r["numbers"], integers_only=True) is None for r in needs[:3])
    assert {(3, 3, 8, 8), (1, 5, 5, 5)} <= {tuple(r["numbers"]) for r in needs}
    assert (1, 1, 1, 1) not in {tuple(r["numbers"]) for r in records}


def test_the_data_file_is_plain_json_lines():
    for line in DATA_FILE.read_text(encoding="utf-8").splitlines():
        assert json.loads(line) and line == json.dumps(json.loads(line))
