"""Worked solutions for chapter 13 (memory in tiers). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""


# 13.hit — only the first k results count, and one relevant id among them is enough.
def hit_at_k(ranked, relevant, k):
    return any(item in relevant for item in ranked[:k])


# 13.fuse — every id scores 1 / (k + rank) in each list that holds it, ranks counted from 1; the scores
# add up, so an id both lists rank high beats one that only a single list ranks first. Sorting is stable
# and the dict keeps first-seen order, so ties go to the id seen first (the keyword list first).
def fuse(keyword_ids, dense_ids, k=60):
    scores = {}
    for ranking in (keyword_ids, dense_ids):
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0) + 1 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


# 13.budget — section 1 prints the whole prompt at 312 tokens with three memories, and 273 with one
# (budget 280). The lowest-ranked memory, M9, is the first to go and is the longest line; without it
# the prompt fits in 286 tokens. Any budget from 286 up to 311 keeps exactly two: 300 does.
budget_for_two = 300

SOLUTIONS = {"13.hit": hit_at_k, "13.fuse": fuse, "13.budget": budget_for_two, "13.q1": "d", "13.q2": "b"}
