"""The Tree of Thoughts paper's Game of 24 data: how long people took on each puzzle, and the paper's test set.

The authors ranked the 1,362 solvable puzzles by the average time people needed to solve them
(data/tot_game24/, MIT licence, attribution in its README). Their test set is ranks
901-1000: hard for people, which is not the course's own difficulty order (fractions first, then
fewest ways), so `spearman` says how far the two orders agree.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from .data import DATA_DIR

PAPER_TEST_RANKS = range(901, 1001)


@dataclass(frozen=True)
class HumanRecord:
    rank: int  # 1 = solved fastest by people
    numbers: tuple  # the four numbers, ascending
    seconds: float  # the average time people took
    solved_rate: float  # the share of people who solved it


def human_records() -> list[HumanRecord]:
    """Every puzzle of the authors' file, in their rank order."""
    text = (DATA_DIR / "tot_game24" / "24.csv").read_text(encoding="utf-8")
    return [HumanRecord(int(row["Rank"]), tuple(sorted(int(n) for n in row["Puzzles"].split())),
                        float(row["AMT (s)"]), float(row["Solved rate"].rstrip("%")) / 100)
            for row in csv.DictReader(io.StringIO(text))]


def paper_test_set() -> list[tuple]:
    """The paper's 100 test puzzles (ranks 901-1000 by human solve time), as tuples of four numbers."""
    return [r.numbers for r in human_records() if r.rank in PAPER_TEST_RANKS]


def _ranks(values: list) -> list[float]:
    """Ranks from 1, ties sharing the mean of their positions."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(xs: list, ys: list) -> float:
    """Spearman's rank correlation: Pearson's r of the ranks (ties averaged)."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("spearman needs two lists of the same length, at least 2 long")
    rx, ry = _ranks(list(xs)), _ranks(list(ys))
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    var = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return cov / var
