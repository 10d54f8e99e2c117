"""Memory in tiers: the working-memory budget, ranking arithmetic, retrieve vs load, and lossless errors."""
import hashlib
import random
import re
import sqlite3

import numpy as np
import pytest

from agentkit import tokens
from agentkit.llm import ScriptedLLM
from agentkit.memory import HEADERS, MEMORY_MARKER, MemoryAgent, WorkingMemory, read_answer, tier_tokens
from agentkit.memory_store import (
    MAX_QUERY_TOKENS, CorruptStoreError, MemoryStore, MemoryStoreError, NotAMemoryStoreError, QueryTooLongError,
    StoreVersionError,
)
from agentkit.memory_data import polluted_task, session_memories, session_tasks, wrong_memory
from agentkit.retrieval import evaluate_rankings, recall_at_k, reciprocal_rank, reciprocal_rank_fusion
from agentkit.scripted import Rule
from agentkit.scripts.memory import RULES


class WordHashEmbedder:
    """A test embedder: each word adds 1 to one of 64 hashed dimensions (no model)."""

    model = "word-hash-64"

    def __init__(self):
        self.embedded = []

    def embed(self, texts, progress=False, desc=""):
        self.embedded += list(texts)
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


# --- ranking arithmetic, on hand-worked cases ----------------------------------------------

def test_rrf_on_a_hand_case():
    # a: 1/61 + 1/62, c: 1/63 + 1/61, b: 1/62, d: 1/63
    assert reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]]) == ["a", "c", "b", "d"]
    # k=0: a: 1 + 1/2 = 1.5, c: 1/3 + 1 = 1.33, b: 0.5, d: 0.33
    assert reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]], k=0) == ["a", "c", "b", "d"]
    # a tie keeps first-seen order: x and y both score 1/61 + 1/62
    assert reciprocal_rank_fusion([["x", "y"], ["y", "x"]]) == ["x", "y"]
    assert reciprocal_rank_fusion([]) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], k=-1)


def test_recall_at_k_and_mrr_on_a_hand_case():
    ranked = ["d", "a", "e", "b"]
    assert recall_at_k(ranked, {"a", "b"}, 1) == 0
    assert recall_at_k(ranked, {"a", "b"}, 2) == 0.5
    assert recall_at_k(ranked, {"a", "b"}, 4) == 1
    assert recall_at_k(ranked, set(), 3) == 0
    assert reciprocal_rank(ranked, {"a", "b"}) == 0.5
    assert reciprocal_rank(ranked, {"z"}) == 0
    scores = evaluate_rankings([(ranked, {"a"}), (["a"], {"a"}), (["x"], {"a"})], ks=(1, 2))
    assert scores == {"recall@1": pytest.approx(1 / 3), "recall@2": pytest.approx(2 / 3),
                      "MRR": pytest.approx((0.5 + 1 + 0) / 3)}


# --- working memory: the budget's control flow ------------------------------------------

MEMORIES = [f"[M{i}] Session {i}: the Cedar database listens on port {5400 + i}." for i in range(1, 7)]
TRACE = [f"Step {i}: Search[Cedar port {i}] -> nothing new" for i in range(1, 5)]
ITEMS = [f"key item {i}: the user wants the production port" for i in range(1, 8)]


def built(budget):
    working = WorkingMemory(budget_tokens=budget)
    messages = working.build("Which port?", ITEMS, TRACE, MEMORIES)
    return working.report, messages


def test_without_a_budget_everything_fits_but_only_the_most_recent_items_and_the_report_counts_the_rest():
    report, messages = built(None)
    assert report == {"memories": 6, "memories_dropped": 0, "trace_lines": 4, "trace_dropped": 0,
                      "items": 5, "items_dropped": 2}  # max_items=5 carries the 5 most recent of 7
    text = messages[-1]["content"]
    assert "key item 3" in text and "key item 2:" not in text
    working = WorkingMemory(budget_tokens=None)
    working.build("Which port?", ITEMS[:6])
    assert (working.report["items"], working.report["items_dropped"]) == (5, 1)


def test_the_budget_drops_low_ranked_memories_first_then_old_trace_then_old_items():
    full = tokens.count_messages(built(None)[1])
    leanest = tokens.count_messages(WorkingMemory().assemble("Which port?", ITEMS[-3:], [], []))
    for budget in range(full, leanest - 1, -9):
        report, messages = built(budget)
        assert tokens.count_messages(messages) <= budget
        assert report["items"] + report["items_dropped"] == len(ITEMS)  # the 2 past max_items=5 count as dropped
        if report["memories"] > 1:  # memories go first: nothing else has been touched yet
            assert report["trace_dropped"] == 0 and report["items"] == 5
        if report["trace_dropped"]:
            assert report["memories"] <= 1
        if report["items"] < 5:
            assert report["trace_lines"] == 0 and report["memories"] <= 1
        if report["memories"] == 0:  # the last memory goes last, once the items are down to min_items
            assert report["items"] == 3
    lean = built(tokens.count_messages(WorkingMemory().assemble("Which port?", ITEMS[-3:], [], MEMORIES[:1])))[0]
    assert lean == {"memories": 1, "memories_dropped": 5, "trace_lines": 0, "trace_dropped": 4,
                    "items": 3, "items_dropped": 4}
    assert built(full)[0]["memories"] == 6


def test_the_kept_ones_are_the_best_memories_and_the_newest_trace():
    report, messages = built(tokens.count_messages(built(None)[1]) - 30)
    text = messages[-1]["content"]
    assert report["memories"] < 6 and "[M1]" in text and "[M6]" not in text


def test_a_budget_too_small_for_the_fixed_part_says_how_many_tokens_it_needs():
    with pytest.raises(ValueError, match=r"budget_tokens=20 is too small: .* need \d+ tokens"):
        built(20)
    with pytest.raises(ValueError):
        WorkingMemory(min_items=4, max_items=3)


def test_tier_tokens_add_up_from_a_ledger_record():
    llm = ScriptedLLM(RULES)
    llm.think(WorkingMemory(budget_tokens=None).build("Which port?", ITEMS, TRACE, MEMORIES))
    costs = tier_tokens(llm.calls[0].messages)
    whole = "working memory (whole prompt)"  # the whole prompt is the working memory; the parts say where from
    assert costs[whole] == llm.calls[0].prompt_tokens
    assert set(costs) == {"role prompt", "from long-term", "from short-term", "key items", "question", whole}
    parts = sum(v for k, v in costs.items() if k != whole)
    assert parts <= costs[whole] <= parts + 15  # the chat wrapping and the blank lines between blocks


# --- retrieve versus load, read from the ledger -------------------------------------------

MEMORY_LINE = re.compile(r"^\[M\d+\] ", re.MULTILINE)


def run_tasks(n, mode):
    store = MemoryStore()
    store.add_many(session_memories(n))
    llm = ScriptedLLM(RULES)
    agent = MemoryAgent(llm, store, mode=mode, method="keyword", k=5)
    episodes = [agent.run(task.question, task.check) for task in session_tasks(n)]
    return llm, agent, episodes


@pytest.fixture(scope="module")
def load_1000():
    return run_tasks(1000, "load")


def test_load_sends_every_memory_until_the_window_and_retrieve_sends_at_most_k(load_1000):
    for n in (10, 100):
        llm, _, _ = run_tasks(n, "load")
        assert all(len(MEMORY_LINE.findall(c.prompt)) == n for c in llm.calls)
    llm, agent, _ = load_1000
    assert all(c.prompt_tokens <= 4096 for c in llm.calls)
    prompt = llm.calls[0].prompt
    assert "[M1000] " in prompt and "[M1] " not in prompt  # newest first, the oldest dropped to fit
    assert agent.working.report["memories_dropped"] > 500
    retrieve, _, _ = run_tasks(1000, "retrieve")
    assert all(len(MEMORY_LINE.findall(c.prompt)) <= 5 for c in retrieve.calls)
    assert all(c.prompt_tokens == tokens.count_messages(c.messages) for c in retrieve.calls + llm.calls)
    mean = lambda calls: sum(c.prompt_tokens for c in calls) / len(calls)
    assert mean(retrieve.calls) * 10 < mean(llm.calls)


def test_load_fails_on_facts_older_than_the_window(load_1000):
    _, agent, episodes = load_1000
    oldest_kept = 1000 - agent.working.report["memories"]
    for task, episode in zip(session_tasks(1000), episodes):
        if task.memory_index < oldest_kept:
            assert not episode.success and episode.answer == "unknown"


def test_a_wrong_memory_that_ranks_first_is_evicted_after_two_failures_and_the_right_one_answers():
    task = polluted_task()
    results = {}
    for learn in (False, True):
        store = MemoryStore()
        store.add_many(session_memories(100))
        bad = store.add(wrong_memory())
        agent = MemoryAgent(ScriptedLLM(RULES), store, method="keyword", learn=learn)
        episodes = [agent.run(task.question, task.check) for _ in range(5)]
        assert episodes[0].cited == bad and not episodes[0].success
        results[learn] = [e.success for e in episodes]
        if learn:
            assert store.get(bad) is None and [e["id"] for e in store.evicted()] == [bad]
            assert episodes[1].evicted == [bad]
    assert results == {False: [False] * 5, True: [False, False, True, True, True]}


# --- bad input: nothing lost -------------------------------------------------------------------

# The pattern the agent's reply was once read with; its three whitespace loops are cubic.
OLD_ANSWER = re.compile(r"Answer:\s*(?P<answer>.*?)\s*(?:\[M(?P<id>\d+)\])?\s*$", re.MULTILINE)


def test_read_answer_reads_every_short_reply_as_the_old_pattern_did():
    pieces = ["Answer:", "Answer: ", " ", "\n", "\t", "\u2028", "x", "y z", "[M", "]", "7", "[M1]", "[M42]", "\u0663"]
    rng = random.Random(13)
    for _ in range(3000):
        reply = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        found = list(OLD_ANSWER.finditer(reply))
        last = found[-1] if found else None
        old = (last["answer"], int(last["id"]) if last["id"] else None) if last else (reply.strip(), None)
        assert read_answer(reply) == old, reply
    assert read_answer("I think so.\nAnswer: 5433 [M12]\n") == ("5433", 12)
    assert read_answer("Answer: 5433\n\n[M12]") == ("5433", 12)


def reply_llm(reply):
    return ScriptedLLM([Rule(MEMORY_MARKER, reply)])


def test_a_reply_with_a_long_run_of_spaces_is_read_at_once():
    # 6,400 spaces between two words: the old pattern's backtracking took minutes on this reply.
    store = MemoryStore()
    store.add("Cedar listens on port 5433")
    episode = MemoryAgent(reply_llm("Answer: 5433" + " " * 6400 + "maybe [M1]"), store).run("Cedar's port?")
    assert episode.answer == "5433" + " " * 6400 + "maybe" and episode.cited == 1


@pytest.mark.parametrize("cited", ["9223372036854775808", "9" * 5000])
def test_a_cited_id_past_any_memory_id_cites_nothing_and_run_does_not_raise(cited):
    store = MemoryStore()
    store.add("Cedar listens on port 5433")
    agent = MemoryAgent(reply_llm(f"Answer: 5433 [M{cited}]"), store, learn=True)
    episode = agent.run("Cedar's port?", check=lambda answer: answer == "5433")
    assert (episode.answer, episode.cited, episode.success, episode.evicted) == ("5433", None, True, [])
    assert store.get(1).uses == 0  # no memory was credited for it
    assert read_answer("Answer: 5433 [M9223372036854775807]") == ("5433", 2**63 - 1)  # the largest id SQLite has


def test_an_empty_store_answers_every_search_with_nothing():
    store = MemoryStore(embedder=WordHashEmbedder())
    for method in ("keyword", "dense", "fused"):
        assert store.search("Which port does Cedar use?", method=method) == []
    llm = ScriptedLLM(RULES)
    episode = MemoryAgent(llm, store).run(session_tasks(10)[0].question, session_tasks(10)[0].check)
    assert episode.answer == "unknown" and not episode.success
    assert f"{HEADERS['long_term']}\n(none)" in llm.calls[0].prompt


def test_a_query_too_long_to_embed_is_refused_before_anything_runs(tmp_path):
    embedder = WordHashEmbedder()
    store = MemoryStore(tmp_path / "m.sqlite3", embedder=embedder)
    store.add_many(["the Cedar database listens on port 5433"])
    long_query = "which port " * MAX_QUERY_TOKENS
    with pytest.raises(QueryTooLongError, match="method='keyword'"):
        store.search(long_query, method="fused")
    assert embedder.embedded == ["the Cedar database listens on port 5433"]  # the query was never embedded
    assert [m.id for m in store.search(long_query, method="keyword")] == [1]
    assert len(store) == 1


def test_dense_and_fused_search_find_the_matching_memory():
    store = MemoryStore(embedder=WordHashEmbedder())
    store.add_many(["Cedar database listens on port 5433", "Birch is written in Rust", "Oak keeps 3 replicas"])
    assert store.search_ids("port of the Cedar database", method="dense")[0] == 1
    assert store.search_ids("Rust Birch", method="fused")[0] == 2


def assert_refused_and_untouched(path, error, match, **kwargs):
    before = path.read_bytes()
    with pytest.raises(error, match=match):
        MemoryStore(path, **kwargs)
    assert path.read_bytes() == before


def test_a_corrupt_file_is_reported_and_left_intact(tmp_path):
    path = tmp_path / "memory.sqlite3"
    path.write_bytes(b"this is not a database, it is a note" * 200)
    assert_refused_and_untouched(path, CorruptStoreError, "left exactly as it was")


def test_a_store_from_another_schema_version_is_refused_and_left_intact(tmp_path):
    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path) as store:
        store.add("Session 1: Oak keeps 3 replicas.")
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    assert_refused_and_untouched(path, StoreVersionError, "schema version 2; this agentkit reads version 1")


def test_a_store_from_another_embedding_model_is_refused_and_left_intact(tmp_path):
    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path, embedder=WordHashEmbedder()) as store:
        store.add("Session 1: Oak keeps 3 replicas.")
    other = WordHashEmbedder()
    other.model = "another-model"
    assert_refused_and_untouched(path, StoreVersionError, "another embedding model", embedder=other)
    with MemoryStore(path, embedder=WordHashEmbedder()) as store:  # the right model still opens it
        assert len(store) == 1


def test_another_sqlite_database_is_not_taken_over(tmp_path):
    path = sqlite_file(tmp_path / "app.sqlite3", "CREATE TABLE users (name TEXT)")
    assert_refused_and_untouched(path, NotAMemoryStoreError, "not a memory store")


def sqlite_file(path, *statements):
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path


def test_a_database_holding_only_a_view_is_not_taken_over(tmp_path):
    path = sqlite_file(tmp_path / "app.sqlite3", "CREATE VIEW answers AS SELECT 42 AS answer")
    assert_refused_and_untouched(path, NotAMemoryStoreError,
                                 r"holds other things \(view answers\); it is not a memory store")


MEMORY_TABLE = ("CREATE TABLE memories (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, text TEXT NOT NULL, vector BLOB, "
                "confidence REAL NOT NULL, uses INTEGER NOT NULL DEFAULT 0, successes INTEGER NOT NULL DEFAULT 0, "
                "failures INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL)")
OUR_OTHER_TABLES = ("CREATE TABLE evicted (id INTEGER PRIMARY KEY, kind TEXT, text TEXT, confidence REAL, "
                    "uses INTEGER, failures INTEGER, reason TEXT NOT NULL, evicted_at TEXT NOT NULL)",
                    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", "PRAGMA user_version = 1")


@pytest.mark.parametrize("memories, fts, table", [
    ("CREATE TABLE memories (id INTEGER PRIMARY KEY, note TEXT)",
     "CREATE VIRTUAL TABLE memories_fts USING fts5(text)", "memories"),
    (MEMORY_TABLE, "CREATE TABLE memories_fts (text)", "memories_fts"),  # a plain table, not the full-text index
])
def test_a_file_that_claims_our_schema_version_with_other_tables_is_refused_at_open(tmp_path, memories, fts, table):
    path = sqlite_file(tmp_path / "memory.sqlite3", memories, fts, *OUR_OTHER_TABLES)
    assert_refused_and_untouched(path, NotAMemoryStoreError,
                                 f"claims to be a memory store of schema version 1, but its table {table} has")
    with MemoryStore(sqlite_file(tmp_path / "ours.sqlite3", MEMORY_TABLE, "CREATE VIRTUAL TABLE memories_fts USING "
                                 "fts5(text, tokenize='porter unicode61')", *OUR_OTHER_TABLES)) as store:
        assert store.memories() == []  # the same tables, written by hand, are a memory store


def test_a_retired_memory_leaves_every_search_and_keeps_its_reason_in_the_audit_table():
    store = MemoryStore(embedder=WordHashEmbedder())
    old, new = store.add_many(["Session 3: the Cedar database listens on port 5433.",
                               "Session 9: the Cedar database listens on port 6432 now."])
    store.retire(old, f"superseded by M{new}")
    for method in ("keyword", "dense", "fused"):
        assert store.search_ids("Cedar database port", method=method) == [new]
    assert [(row["id"], row["reason"]) for row in store.evicted()] == [(old, f"superseded by M{new}")]
    with pytest.raises(KeyError, match=f"no active memory with id {old}"):
        store.retire(old, "twice")
    assert len(store) == 1 and len(store.evicted()) == 1


# --- ids are never reused: a retired id names no other memory ------------------------------------

def test_an_id_is_never_reused_after_a_retire_and_the_next_memory_can_be_retired_and_evicted():
    store = MemoryStore()
    first, newest = store.add_many(["Oak keeps 3 replicas.", "Birch is written in Rust."])
    store.retire(newest, "superseded")  # the newest: SQLite's plain rowid hands its id out again
    again = store.add("Birch is written in Go now.")
    assert again > newest and store.get(newest) is None
    store.retire(again, "superseded too")  # a reused id made this an IntegrityError (the audit row existed)
    evicted = store.add("Elm listens on port 80.")
    assert evicted > again
    assert store.record_outcome([evicted], False) == [] and store.record_outcome([evicted], False) == [evicted]
    assert [row["id"] for row in store.evicted()] == [newest, again, evicted] and store.get(first) is not None


def test_a_second_process_holding_a_retired_id_touches_no_other_memory(tmp_path):
    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path) as agent, MemoryStore(path) as curator:  # two processes' connections to one file
        cited = agent.add_many(["Oak keeps 3 replicas.", "Cedar listens on port 5433."])[-1]
        curator.retire(cited, "superseded by a newer port")
        replacement = curator.add("Cedar listens on port 6432.")
        with pytest.raises(MemoryStoreError, match=f"no active memory with id {cited}: it was moved to the audit table.*superseded by a newer port"):
            agent.record_outcome([cited], success=False)  # the agent's answer cited it before the retire
        with pytest.raises(KeyError):  # still a KeyError too, as before
            agent.retire(cited, "twice")
        assert curator.get(replacement).confidence == curator.initial_confidence
        assert curator.get(replacement).uses == 0 and len(curator.evicted()) == 1


def old_store(path, memories, evicted):
    """A store as agentkit wrote it before ids were made unique (plain INTEGER PRIMARY KEY): (id, text) rows."""
    sqlite_file(path, MEMORY_TABLE, "CREATE VIRTUAL TABLE memories_fts USING fts5(text, tokenize='porter unicode61')",
                *OUR_OTHER_TABLES)
    db = sqlite3.connect(path)
    for memory_id, text in memories:
        db.execute("INSERT INTO memories (id, kind, text, confidence, created_at) VALUES (?, 'episode', ?, 0.5, "
                   "'2026-01-01T00:00:00+00:00')", (memory_id, text))
        db.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)", (memory_id, text))
    for memory_id, text in evicted:
        db.execute("INSERT INTO evicted VALUES (?, 'episode', ?, 0.5, 0, 0, 'superseded', '2026-01-01T00:00:00+00:00')",
                   (memory_id, text))
    db.commit()
    db.close()
    return path


def test_a_store_written_before_ids_were_unique_is_upgraded_in_place_and_keeps_everything(tmp_path):
    # Written by the old code: M3 was retired, then "Birch" took id 3 again (the reuse), then M4 was retired.
    path = old_store(tmp_path / "memory.sqlite3", [(1, "Oak keeps 3 replicas."), (2, "Elm listens on port 80."),
                                                   (3, "Birch is written in Go now.")],
                     [(3, "Birch is written in Rust."), (4, "Ash runs on Tuesdays.")])
    with MemoryStore(path) as store:
        texts = {m.id: m.text for m in store.memories()}
        assert texts[1] == "Oak keeps 3 replicas." and texts[2] == "Elm listens on port 80."
        birch = next(i for i, text in texts.items() if text == "Birch is written in Go now.")
        assert birch > 4 and len(texts) == 3  # the id it had taken names the retired memory only
        assert store.search_ids("Birch Go", method="keyword") == [birch]  # the full-text index follows it
        assert [(row["id"], row["text"]) for row in store.evicted()] == [(3, "Birch is written in Rust."),
                                                                          (4, "Ash runs on Tuesdays.")]
        store.retire(birch, "superseded")  # an IntegrityError before: its old id was already in the audit table
        assert store.add("Pine keeps 5 replicas.") > birch
    with MemoryStore(path) as store:  # opened again: nothing more to upgrade, nothing renumbered
        assert [m.id for m in store.memories()] == [1, 2, birch + 1]


def test_a_memory_too_long_to_carry_is_refused_before_anything_is_embedded_or_stored():
    from agentkit.memory_store import MAX_MEMORY_CHARS, MemoryTooLongError

    embedder = WordHashEmbedder()
    store = MemoryStore(embedder=embedder)
    store.add("Oak keeps 3 replicas.")
    huge = "Cedar listens on port 5433. " * 40_000  # about 1 MB: the 8 s MiniLM spent on it read 256 tokens
    with pytest.raises(MemoryTooLongError, match=rf"memory 2 of 2 is {len(huge.strip()):,} characters; a memory "
                                                 rf"holds at most {MAX_MEMORY_CHARS:,}.*Nothing was stored"):
        store.add_many(["Birch is written in Rust.", huge])
    with pytest.raises(MemoryStoreError, match="at most"):
        store.add(huge)
    assert len(store) == 1 and embedder.embedded == ["Oak keeps 3 replicas."]
    assert store.add("x" * MAX_MEMORY_CHARS) == 2  # the limit itself is allowed; spaces are squeezed first
    assert store.get(store.add("y" + " \n" * MAX_MEMORY_CHARS + "z")).text == "y z"  # counted after squeezing


def test_memories_persist_in_a_file(tmp_path):
    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path) as store:
        store.add_many(session_memories(3))
    with MemoryStore(path) as store:
        assert [m.text for m in store.memories()] == session_memories(3)


# --- the shipped vectors and the layering ---------------------------------------------------

def test_every_course_text_has_a_shipped_vector_and_an_unknown_text_says_how_to_embed_it():
    from agentkit.embeddings import REEMBED_COMMAND, SMOLLM2_VECTORS_FILE, NotEmbeddedError, ShippedEmbeddings
    from agentkit.memory_data import all_texts, retrieval_set

    shipped = ShippedEmbeddings()
    assert all(text in shipped for text in all_texts())
    smollm2 = ShippedEmbeddings(SMOLLM2_VECTORS_FILE)  # SmolLM2's: the retrieval set, the chapter's comparison
    data = retrieval_set()
    assert all(t in smollm2 for t in [d["text"] for d in data["documents"]] + [q["query"] for q in data["queries"]])
    rows = shipped.embed(all_texts()[:3])
    assert rows.shape == (3, shipped.dims) and np.allclose(np.linalg.norm(rows, axis=1), 1, atol=1e-3)
    with pytest.raises(NotEmbeddedError, match=re.escape(REEMBED_COMMAND)):
        shipped.embed(["a sentence nobody embedded"])


def test_memory_code_never_imports_the_stand_in_scripts():
    """The chapter's modules, in any function, and agentkit's modules they reach, at import time."""
    import ast
    import importlib.util
    from pathlib import Path

    chapter = {"memory", "memory_store", "memory_data", "embeddings", "retrieval"}
    seen, todo = set(), sorted(chapter)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = Path(importlib.util.find_spec(f"agentkit.{name}").origin)  # agentkit.data lives in data/
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # get_llm() picks the stand-in lazily inside a function: that is the mode switch's job, not ours.
        for node in ast.walk(tree) if name in chapter else tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                todo += [node.module] if node.module else [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentkit."):
                todo.append(node.module.removeprefix("agentkit."))
    assert not [name for name in seen if name.startswith("scripts")], sorted(seen)
    assert {"memory_store", "tokens", "data", "local", "llm"} <= seen  # the walk did follow the imports


def test_the_real_model_embeds_live_what_was_shipped():
    """SmolLM2 in llama.cpp's embedding mode, in a child process: the shipped vectors are its own."""
    from agentkit.embeddings import SMOLLM2_VECTORS_FILE, LocalEmbeddings, ShippedEmbeddings
    from agentkit.memory_data import retrieval_set

    texts = [q["query"] for q in retrieval_set()["queries"][:2]]
    live = LocalEmbeddings()
    try:
        rows = live.embed(texts)
    finally:
        live.close()
    assert not live.server.running
    shipped = ShippedEmbeddings(SMOLLM2_VECTORS_FILE).embed(texts)
    assert rows.shape == shipped.shape == (2, 576)
    assert np.all((rows * shipped).sum(axis=1) > 0.99)  # float16 storage costs a little precision, no more
    assert [c.texts for c in live.calls] == [2] and live.calls[0].prompt_tokens > 0


def test_with_no_method_a_store_fuses_when_it_can_embed_and_uses_keywords_when_it_cannot():
    plain, embedding = MemoryStore(), MemoryStore(embedder=WordHashEmbedder())
    for store in (plain, embedding):
        store.add_many(["Cedar database listens on port 5433", "Birch is written in Rust"])
    assert plain.search_ids("Birch Rust") == plain.search_ids("Birch Rust", method="keyword") == [2]
    assert embedding.search_ids("Birch Rust") == embedding.search_ids("Birch Rust", method="fused")
    with pytest.raises(MemoryStoreError, match="needs an embedder"):
        plain.search_ids("Birch Rust", method="dense")


def test_notebook_13_stores_no_progress_bar():
    """A bar stored by nbconvert is tqdm's first frame (0%): shipped lookups take milliseconds and show none."""
    import json
    from pathlib import Path

    notebook = Path(__file__).resolve().parent.parent / "notebooks" / "13_memory_in_tiers.ipynb"
    stored = json.dumps([cell.get("outputs", []) for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]])
    assert not re.search(r"\d+%\|", stored)
