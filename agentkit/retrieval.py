"""Ranking arithmetic for memory search: reciprocal rank fusion, recall@k and MRR.

Every function takes rankings as lists of ids, best first, and nothing else, so the same
numbers come out whichever engine (SQLite FTS5, sqlite-vec, numpy) produced the lists.
"""
from __future__ import annotations

RRF_K = 60  # the constant of Cormack, Clarke and Buettcher (2009): rank 1 scores 1/61


def reciprocal_rank_fusion(rankings: list[list], k: int = RRF_K) -> list:
    """One ranking from several: each id scores sum(1 / (k + rank)) over the lists that hold it.

    Ranks start at 1. Ties keep the order in which ids were first seen (first list first),
    so the result is the same on every machine.
    """
    if k < 0:
        raise ValueError(f"k must be 0 or more, got {k}")
    scores: dict = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores, key=lambda item: (-scores[item], order[item]))


def recall_at_k(ranked: list, relevant, k: int) -> float:
    """The share of the relevant ids found in the first k of `ranked` (0 when nothing is relevant)."""
    relevant = set(relevant)
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


def reciprocal_rank(ranked: list, relevant) -> float:
    """1 / the rank of the first relevant id in `ranked`, or 0 when none is there."""
    relevant = set(relevant)
    for rank, item in enumerate(ranked, 1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def evaluate_rankings(runs: list[tuple[list, set]], ks=(1, 3, 5)) -> dict:
    """Mean recall@k for each k and the mean reciprocal rank (MRR) over (ranked, relevant) pairs."""
    if not runs:
        raise ValueError("no queries to evaluate")
    scores = {f"recall@{k}": sum(recall_at_k(r, g, k) for r, g in runs) / len(runs) for k in ks}
    scores["MRR"] = sum(reciprocal_rank(r, g) for r, g in runs) / len(runs)
    return scores
