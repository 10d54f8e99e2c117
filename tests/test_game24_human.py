"""The ToT authors' human solve times: read whole, the paper's test set, and the rank correlation we quote."""
import random

import pytest

from agentkit.game24 import load_puzzles
from agentkit.game24_human import human_records, paper_test_set, spearman


def test_the_authors_file_holds_our_1362_puzzles_each_once_in_rank_order():
    records = human_records()
    assert [r.rank for r in records] == list(range(1, 1363))
    assert {r.numbers for r in records} == {tuple(p["numbers"]) for p in load_puzzles()}
    assert all(0 < r.solved_rate <= 1 and r.seconds > 0 for r in records)


def test_the_paper_test_set_is_ranks_901_to_1000():
    test = paper_test_set()
    ranks = {r.numbers: r.rank for r in human_records()}
    assert len(test) == len(set(test)) == 100 and sorted(ranks[t] for t in test) == list(range(901, 1001))


def test_spearman_on_hand_cases_and_against_the_no_ties_formula():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486832980505138)  # ties share their mean rank
    rng = random.Random(7)
    for _ in range(20):
        n = rng.randint(3, 40)
        xs, ys = rng.sample(range(1000), n), rng.sample(range(1000), n)
        rx = {v: i + 1 for i, v in enumerate(sorted(xs))}
        ry = {v: i + 1 for i, v in enumerate(sorted(ys))}
        d2 = sum((rx[x] - ry[y]) ** 2 for x, y in zip(xs, ys))
        assert spearman(xs, ys) == pytest.approx(1 - 6 * d2 / (n * (n * n - 1)))
    with pytest.raises(ValueError):
        spearman([1], [1])


def test_our_difficulty_order_and_human_solve_time_agree_only_in_part():
    ours = {tuple(p["numbers"]): p["rank"] for p in load_puzzles()}
    records = human_records()
    rho = spearman([-ours[r.numbers] for r in records], [r.seconds for r in records])
    assert round(rho, 2) == 0.44
