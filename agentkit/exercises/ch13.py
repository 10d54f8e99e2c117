"""Chapter 13's exercises: a hit@k, reciprocal rank fusion on real rankings, a working-memory budget, two questions."""
from __future__ import annotations

from functools import lru_cache

from ..i18n import tr, tr_later
from ..memory import WorkingMemory
from ..retrieval import reciprocal_rank_fusion
from . import Fail, call, cases, exercise, question, reference, shown

# --- 13.hit: a yes-or-no recall ------------------------------------------------------------------

HIT_CASES = [  # (ranked, relevant, k, what the case is): hit_truth decides, after your answer
    (["a", "b", "c"], {"c"}, 3, tr_later("the relevant id is the k-th")),
    (["a", "b", "c"], {"c"}, 2, tr_later("the relevant id is just past k")),
    (["x", "a"], {"a", "b"}, 2, tr_later("one of two relevant ids is enough")),
    ([], {"a"}, 5, tr_later("nothing was found")),
    (["a", "b"], set(), 2, tr_later("nothing is relevant")),
    (["b", "a"], {"a"}, 5, tr_later("k is longer than the ranking")),
]


@reference
def hit_truth(ranked: list, relevant: set, k: int) -> bool:
    """Is a relevant id among the first k of the ranking?"""
    return any(i in relevant for i in ranked[:k])
HIT_HINTS = {
    0: tr_later("the first k results are ranked[:k]: positions 0 to k - 1, so the k-th result counts."),
    1: tr_later("only the first k count: ranked[:k], not the whole list."),
    2: tr_later("any relevant id among the first k is a hit; you need not find them all (that is recall@k)."),
    3: tr_later("an empty ranking holds nothing relevant: False, not an exception."),
    4: tr_later("with nothing relevant there is nothing to hit: False."),
    5: tr_later("ranked[:k] simply stops at the end of a shorter list."),
}


H_HIT_UNSEEN = tr_later("a ranking drawn for this check: True when any id of `relevant` is among ranked[:k].")
IDS = tuple(f"m{n}" for n in range(1, 16))


def unseen_hits(count: int = 6) -> list:
    """(ranked, relevant, k, what) drawn for this check, in an order drawn too; in half of them a relevant id sits
    exactly at k or k + 1."""
    rng, drawn = cases(), []
    for number in range(count):
        ranked = rng.sample(IDS, rng.randint(0, 8))
        k = rng.randint(1, 6)
        relevant = set(rng.sample([i for i in IDS if i not in ranked], rng.randint(0, 2)))
        if ranked and number % 2 == 0:
            at = min(len(ranked), k + rng.choice([0, 0, 1])) - 1  # the k-th position, or just past it
            relevant.add(ranked[at])
        drawn.append((ranked, relevant, k, tr_later("a ranking drawn for this check")))
    rng.shuffle(drawn)
    return drawn


@exercise("13.hit", "build", "A yes-or-no recall",
          "Write `hit_at_k(ranked, relevant, k)`: True when a relevant id is among the first k of `ranked`; "
          "agentkit.retrieval's recall_at_k and evaluate_rankings are refused.",
          forbid=("agentkit.retrieval:recall_at_k", "agentkit.retrieval:evaluate_rankings"), objects=False)
def _hit(hit_at_k):
    if not callable(hit_at_k):
        raise Fail(tr("your answer"), tr("a function hit_at_k(ranked, relevant, k)"), repr(hit_at_k),
                   tr("define it with def."))
    for number, (ranked, relevant, k, what) in enumerate(HIT_CASES + unseen_hits()):
        hint = HIT_HINTS.get(number, H_HIT_UNSEEN)
        case = tr("{what}: {ranked}, {relevant}, k={k}", what=tr(what), ranked=ranked, relevant=relevant, k=k)
        said = call(hit_at_k, list(ranked), set(relevant), k, case=case, hint=hint)
        expected = hit_truth(ranked, relevant, k)
        if said is None:
            raise Fail(case, repr(expected), "None", tr("your function returned nothing: return True or False."))
        if bool(said) is not expected:
            raise Fail(case, repr(expected), shown(said), hint)
    return tr("Right on all {cases} cases. Averaged over queries, hit@k is the share of questions whose answer reaches "
              "the prompt at all when k memories are retrieved: for a question with one relevant memory it equals "
              "recall@k.", cases=len(HIT_CASES) + 6)


# --- 13.fuse: reciprocal rank fusion, checked on the chapter's real rankings ------------------------


@lru_cache(maxsize=1)
def real_rankings() -> tuple:
    """(query, keyword ids, dense ids) for every labelled query of the chapter, from the shipped vectors."""
    from ..embeddings import ShippedEmbeddings
    from ..memory_data import retrieval_set
    from ..memory_store import MemoryStore

    data = retrieval_set()
    store = MemoryStore(embedder=ShippedEmbeddings())
    store.add_many([d["text"] for d in data["documents"]])
    rankings = tuple((q["query"], store.keyword(q["query"], 10), store.dense(q["query"], 10)) for q in data["queries"])
    store.close()
    return rankings


FUSE_HAND = [  # (keyword, dense, k, what the case is)
    (["a", "b", "c"], ["c", "a", "d"], 60, tr_later("a small hand case")),
    (["x", "y"], ["y", "x"], 60, tr_later("a tie: both ids score 1/61 + 1/62")),
    ([], ["p", "q"], 60, tr_later("an empty keyword list")),
    (["d", "e", "a", "f"], ["f", "c", "a", "e"], 1, tr_later("a small k, where every rank matters")),
]


def unseen_rankings(count: int = 3) -> list:
    """(keyword, dense, k, what) drawn for this check: overlapping lists of ids, small and large k."""
    rng = cases()
    drawn = []
    for _ in range(count):
        pool = rng.sample(IDS, rng.randint(3, 12))
        keyword = rng.sample(pool, rng.randint(0, len(pool)))
        dense = rng.sample(pool, rng.randint(1, len(pool)))
        drawn.append((keyword, dense, rng.choice([1, 2, 10, 60]), tr_later("two rankings drawn for this check")))
    return drawn


@reference
def _scores(rankings, k, combine):
    scores: dict = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = combine(scores[item], 1 / (k + rank)) if item in scores else 1 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


def _fuse_hint(keyword, dense, k, said, right) -> str:
    if k >= 1 and said[:5] == reciprocal_rank_fusion([keyword, dense], k=k - 1)[:5]:
        return tr("ranks start at 1: the first item scores 1 / (k + 1), not 1 / k.")
    if said[:5] == _scores([keyword, dense], k, max)[:5]:
        return tr("add an id's scores from both lists: agreement between the lists is what fusion rewards.")
    if sorted(said) == sorted(right):
        return tr("same ids, another order: sort by score, highest first; on a tie keep the order in which ids were "
                  "first seen (the keyword list first).")
    return tr("every id of either list scores 1 / (k + rank) in each list that holds it (ranks from 1); sum, then "
              "sort.")


@exercise("13.fuse", "build", "Reciprocal rank fusion",
          "Write `fuse(keyword_ids, dense_ids, k=60)`: both rankings fused by reciprocal rank, best first, ties in "
          "the order the ids were first seen (the keyword list first); agentkit.retrieval.reciprocal_rank_fusion "
          "(and MemoryStore's hybrid search, which calls it) is refused.",
          forbid=("agentkit.retrieval:reciprocal_rank_fusion",), warm=lambda: real_rankings(), objects=False)
def _fuse(fuse):
    if not callable(fuse):
        raise Fail(tr("your answer"), tr("a function fuse(keyword_ids, dense_ids, k=60)"), repr(fuse),
                   tr("define it with def."))
    checked = list(FUSE_HAND) + unseen_rankings() + [(kw, dn, 60, tr("the labelled query {query}", query=repr(q)))
                                                      for q, kw, dn in real_rankings()]
    for keyword, dense, k, what in checked:
        said = call(fuse, list(keyword), list(dense), k, case=tr("{what}, k={k}", what=tr(what), k=k),
                    hint=tr("fuse must not raise on any two lists of ids."))
        right = reciprocal_rank_fusion([keyword, dense], k=k)
        if said is None:
            raise Fail(what, repr(right[:5]), "None", tr("your function returned nothing: return the fused list."))
        said = list(said)
        if said[:5] != right[:5]:
            raise Fail(tr("{what}: keyword {keyword}, dense {dense}, k={k}", what=tr(what), keyword=keyword[:5],
                          dense=dense[:5], k=k), repr(right[:5]), repr(said[:5]),
                       _fuse_hint(keyword, dense, k, said, right))
    return tr("Right on {hand} hand cases, 3 drawn for this check, and all {labelled} labelled queries. Fusion needs "
              "only ranks: a BM25 score and a cosine never have to be put on one scale.", hand=len(FUSE_HAND),
              labelled=len(real_rankings()))


# --- 13.budget: a working-memory budget that keeps exactly two memories ----------------------------

QUESTION = "Which port should I connect to for Cedar's data store?"
KEY_ITEMS = [  # section 1's key items, oldest first
    "the user asked about Cedar, one of the team's services",
    "the user wants to connect a reporting job to Cedar's database",
    "the job runs in production, not staging",
    "the reporting job runs nightly",
    "the user prefers the read replica",
    "the user wants the answer as a port number",
]
TRACE = [  # section 1's short-term tier, as LayeredContext summarised it
    "Key facts so far (from tool results, in the order found):\n[1] Cedar ops wiki: the service was migrated in "
    "2024 and its database moved to a new host.",
    "Earlier steps, summarised:\nStep 1: Search[Cedar staging notes] -> No information about Cedar staging notes in "
    "the knowledge base.\nStep 2: Search[Cedar ops wiki] -> key fact 1",
    "Thought: Check the dashboard.\nAction: Search[Cedar dashboard]\nObservation: Cedar dashboard: error rate 0.2 "
    "percent, 12 open alerts.",
]
MEMORIES = [
    "[M7] Session 7: the Cedar database listens on port 5433.",
    "[M2] Session 2: Cedar keeps 3 replicas.",
    "[M9] When: a search for a service finds nothing | Fix: search the ops wiki | Applies to: team services",
]


def kept_memories(budget: int) -> int:
    working = WorkingMemory(budget_tokens=budget)
    working.build(QUESTION, KEY_ITEMS, TRACE, MEMORIES)
    return working.report["memories"]


@exercise("13.budget", "predict", "A budget that keeps two memories",
          "Set `budget_for_two` to a budget_tokens at which section 1's WorkingMemory keeps exactly two memories.", objects=False)
def _budget(budget_for_two):
    try:
        budget = int(budget_for_two)
    except (TypeError, ValueError):
        raise Fail(tr("your budget"), tr("a whole number of tokens"), repr(budget_for_two),
                   tr("write a whole number of tokens.")) from None
    if budget < 1:
        raise Fail(tr("your budget"), tr("a positive number of tokens"), str(budget),
                   tr("a budget counts tokens: at least 1."))
    try:
        kept = kept_memories(budget)
    except ValueError as e:
        raise Fail(f"budget_tokens={budget}", tr("two memories kept"), f"ValueError: {e}",
                   tr("that is below what the role prompt, the question and three key items need.")) from None
    if kept == 2:
        return tr("budget_tokens={budget} keeps two memories: the third-ranked one (M9) went first, as the order "
                  "says. Any budget from the size with two memories up to one token less than the whole prompt works.",
                  budget=budget)
    hint = (tr("too generous: the whole prompt fits, so nothing is dropped. Section 1 prints the full size (the None "
               "row); go just below it.") if kept == 3 else
            tr("too tight: it dropped two memories, or more. The lowest-ranked memory is the first to go; a budget "
               "just below the full size drops only it."))
    raise Fail(f"budget_tokens={budget}", tr("two memories kept"), tr("{kept} kept", kept=kept), hint)


# --- questions -------------------------------------------------------------------------------------

question("13.q1", "In section 4, why does the load design fail on most questions at 1,000 memories?", {
    "a": ("The stand-in cannot read prompts longer than 1,000 tokens.", False,
          "its prompts filled the window (the table's tokens per call), and it answered every question whose memory "
          "was in them."),
    "b": ("Retrieval ranked the right memory too low: with 1,000 memories the keyword scores crowd together, and the "
          "fact the question needs falls below the first few.", False,
          "the load design does not retrieve: it carries memories newest first, whatever the question."),
    "c": ("Two memories contradicted each other.", False,
          "the team's store has one memory per fact; the contradiction was the pollution demo's wrong memory."),
    "d": ("Not everything fits the 4,096-token window, so the oldest memories were dropped, and most answers were in "
          "them.", True,
          "load keeps the newest memories that fit; an older fact is simply not in the prompt."),
}, hint="section 4, the list that describes the two designs.")

question("13.q2", "A wrong memory keeps coming back first for one question. Which change cures it in this chapter?", {
    "a": ("Retrieve more memories (k=20).", False,
          "more memories in the prompt leave the wrong one first, and the stand-in trusts the first (a real model "
          "may too)."),
    "b": ("Evict a memory whose citations keep ending in failure.", True,
          "each failure lowers the cited memory's confidence; below the threshold it leaves the store, and the right "
          "memory answers."),
    "c": ("Load every memory instead of retrieving.", False,
          "loading carries the wrong memory too (it is the newest, so it comes first), at many times the tokens."),
    "d": ("Switch from keyword to dense search, which ranks memories by meaning, so a wrong memory that only repeats "
          "the question's words drops below the right one.", False,
          "it was written with the question's own words, so any retriever that works ranks it high: ranking is not "
          "truth."),
}, hint="section 4, memory pollution.")
