"""Long-term memory in one SQLite file, searched by keywords, by meaning, or by both.

Each memory is a text (an episode's outcome, a lesson, a document) with a confidence. Search:

- **keyword**: SQLite FTS5 over the text (porter stemming), ranked by bm25, on the query's
  content words ORed together (a memory sharing no word is not returned);
- **dense**: cosine similarity between the query's vector and each memory's (from
  `agentkit.embeddings`: all-MiniLM-L6-v2's by default), computed inside SQLite by the sqlite-vec extension when this Python's
  sqlite3 can load extensions, else by numpy: the same ranking either way;
- **fused**: reciprocal rank fusion of the two (`agentkit.retrieval`).

A memory the agent cites in a failed answer loses confidence, one in a success gains; below
`threshold` it moves to the `evicted` audit table (chapter 06's rule, for memories). `retire(id, reason)`
moves one there for any other reason, such as a newer memory of the same fact.

Ids are never reused (SQLite's AUTOINCREMENT): an id that was retired or evicted names no other memory, so a
process still holding it (an answer that cited it, another connection to the file) gets `RetiredMemoryError`
(a `MemoryStoreError` and a `KeyError`) saying when and why it left, and changes nothing. A store written before
ids were unique is upgraded in place when opened (agentkit.memory_file says how).

A memory's text holds at most MAX_MEMORY_CHARS characters (after runs of whitespace become one space): it is
carried whole into a prompt, and the embedder reads only its first 256 word pieces. A longer one raises
`MemoryTooLongError` before anything is embedded or stored.

Errors are loud and lossless: a file that is not SQLite, fails its integrity check, is some
other database (any table, view or trigger; or our version number over other tables), was written
by another schema version or holds another embedding model's vectors raises a `MemoryStoreError`
subclass and is never rewritten (agentkit.memory_file opens the file). An empty store answers every
search with []. A query too long to embed raises `QueryTooLongError` before anything runs.
"""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import numpy as np

from . import tokens
from .memory_file import (  # noqa: F401 (the errors are this module's too)
    SCHEMA_VERSION, CorruptStoreError, MemoryStoreError, NotAMemoryStoreError, StoreVersionError, open_file,
)
from .retrieval import reciprocal_rank_fusion

# A fact, an episode or a passage, carried whole into a prompt (the working memory's default budget is 800 tokens,
# about 3,200 characters); MiniLM reads its first ~1,000 characters. A document is split into several memories.
MAX_MEMORY_CHARS = 4_000
# o200k tokens. MiniLM reads 254 WordPiece tokens of a text and drops the rest; WordPiece cut the course's texts into
# at most 1.33 pieces per o200k token, so 190 fit (SmolLM2 reads 512 of its own).
MAX_QUERY_TOKENS = 190
METHODS = ("keyword", "dense", "fused")
_STOPWORDS = set("a an the of in on at to for from by with and or is was were be been it its this that what "
                 "when where who which how did does do i my our your can should".split())


class QueryTooLongError(ValueError):
    """A query longer than the embedding model can read at once."""


class MemoryTooLongError(MemoryStoreError, ValueError):
    """A memory's text is longer than MAX_MEMORY_CHARS; nothing was stored."""


class RetiredMemoryError(MemoryStoreError, KeyError):
    """No active memory has this id (retired, evicted, or never added); nothing was changed."""

    def __str__(self) -> str:  # KeyError's own would show the message as a quoted repr
        return str(self.args[0])


def sqlite_vec_connection(db: sqlite3.Connection) -> str:
    """Load sqlite-vec into `db` and return "sqlite-vec", or return why it could not be loaded."""
    if not hasattr(db, "enable_load_extension"):
        return ("numpy (this Python's sqlite3 cannot load extensions, as on some macOS and pyenv builds; "
                "the ranking is the same, computed outside SQLite)")
    try:
        import sqlite_vec

        db.enable_load_extension(True)
        sqlite_vec.load(db)
        db.enable_load_extension(False)
        return "sqlite-vec"
    except (ImportError, sqlite3.Error, AttributeError) as e:
        return f"numpy (sqlite-vec did not load: {e})"


@dataclass
class Memory:
    id: int
    kind: str
    text: str
    confidence: float
    uses: int = 0
    successes: int = 0
    failures: int = 0

    def as_prompt_line(self) -> str:
        return f"[M{self.id}] {self.text}"


def _match_query(text: str) -> str:
    """An FTS5 query that ORs the text's content words, each quoted (no FTS syntax leaks in)."""
    words = [w for w in re.findall(r"\w+", text.lower()) if w not in _STOPWORDS]
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words))


class MemoryStore:
    """Long-term memory in one SQLite file (or ":memory:"), searched by keywords, vectors or both.

    `embedder` (an object with `embed(texts, progress=False) -> rows of length 1`) is needed
    for dense and fused search; keyword search works without it.
    """

    def __init__(self, path: str | Path = ":memory:", embedder=None, *, threshold: float = 0.3,
                 initial_confidence: float = 0.5, reward: float = 0.1, penalty: float = 0.2) -> None:
        if not 0 <= threshold < initial_confidence <= 1:
            raise ValueError("need 0 <= threshold < initial_confidence <= 1")
        self.path = str(path)
        self.embedder = embedder
        self.threshold, self.initial_confidence = threshold, initial_confidence
        self.reward, self.penalty = reward, penalty
        if self.path != ":memory:" and Path(self.path).is_dir():
            raise MemoryStoreError(f"{self.path} is a directory; give a file path for the store.")
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self.engine = sqlite_vec_connection(self._db)
        self._vectors: Optional[tuple[np.ndarray, np.ndarray]] = None  # (ids, rows), for the numpy engine
        try:
            open_file(self._db, self.path, getattr(embedder, "model", None))
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM memories").fetchone()[0]

    # --- writing ---------------------------------------------------------------------

    def add_many(self, texts: list[str], kind: str = "episode", progress: bool = False) -> list[int]:
        """Store texts (embedding them in one go when there is an embedder) in one transaction; return ids."""
        texts = [" ".join(str(t).split()) for t in texts]
        if any(not t for t in texts):
            raise ValueError("a memory's text is empty")
        for number, text in enumerate(texts, 1):
            if len(text) > MAX_MEMORY_CHARS:
                raise MemoryTooLongError(
                    f"memory {number} of {len(texts)} is {len(text):,} characters; a memory holds at most "
                    f"{MAX_MEMORY_CHARS:,} (it is carried whole into a prompt, and the embedder reads only its first "
                    "256 word pieces). Split the text into smaller memories, a fact or a passage each. "
                    "Nothing was stored.")
        vectors = (self.embedder.embed(texts, progress=progress, desc="embedding memories")
                   if self.embedder is not None and texts else [None] * len(texts))
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        ids = []
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for text, vector in zip(texts, vectors):
                blob = None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()
                cur = self._db.execute("INSERT INTO memories (kind, text, vector, confidence, created_at) "
                                       "VALUES (?, ?, ?, ?, ?)", (kind, text, blob, self.initial_confidence, now))
                self._db.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)", (cur.lastrowid, text))
                ids.append(cur.lastrowid)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._vectors = None
        return ids

    def add(self, text: str, kind: str = "episode") -> int:
        """Store one text (at most MAX_MEMORY_CHARS characters, else `MemoryTooLongError`); return its id."""
        return self.add_many([text], kind)[0]

    def record_outcome(self, memory_ids: list[int], success: bool) -> list[int]:
        """Raise (success) or lower (failure) the confidence of cited memories; return the ids evicted."""
        evicted = []
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for memory_id in dict.fromkeys(memory_ids):
                row = self._db.execute("SELECT confidence FROM memories WHERE id = ?", (memory_id,)).fetchone()
                if row is None:
                    raise self._not_active(memory_id)
                confidence = round(min(1.0, max(0.0, row[0] + (self.reward if success else -self.penalty))), 3)
                self._db.execute("UPDATE memories SET confidence = ?, uses = uses + 1, successes = successes + ?, "
                                 "failures = failures + ? WHERE id = ?",
                                 (confidence, int(success), int(not success), memory_id))
                if confidence < self.threshold:
                    self._move_to_evicted(memory_id, f"confidence {confidence} < threshold {self.threshold}")
                    evicted.append(memory_id)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        if evicted:
            self._vectors = None
        return evicted

    def retire(self, memory_id: int, reason: str) -> None:
        """Move a memory to the `evicted` audit table with a reason (e.g. "superseded by M1001")."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if self._db.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone() is None:
                raise self._not_active(memory_id)
            self._move_to_evicted(memory_id, reason)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._vectors = None

    def _not_active(self, memory_id) -> RetiredMemoryError:
        gone = self._db.execute("SELECT reason, evicted_at FROM evicted WHERE id = ?", (memory_id,)).fetchone()
        why = (f": it was moved to the audit table at {gone[1]} ({gone[0]}); ids are never reused, so it names "
               "no other memory" if gone else "")
        return RetiredMemoryError(f"no active memory with id {memory_id}{why}. Nothing was changed.")

    def _move_to_evicted(self, memory_id: int, reason: str) -> None:
        self._db.execute("INSERT INTO evicted SELECT id, kind, text, confidence, uses, failures, ?, ? FROM memories "
                         "WHERE id = ?", (reason, datetime.now(timezone.utc).isoformat(timespec="seconds"), memory_id))
        self._db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        self._db.execute("DELETE FROM memories_fts WHERE rowid = ?", (memory_id,))

    # --- reading -----------------------------------------------------------------------

    def get(self, memory_id: int) -> Optional[Memory]:
        row = self._db.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return self._memory(row) if row else None

    def memories(self, newest_first: bool = False) -> list[Memory]:
        order = "DESC" if newest_first else "ASC"
        return [self._memory(r) for r in self._db.execute(f"SELECT * FROM memories ORDER BY id {order}")]

    def evicted(self) -> list[dict]:
        return [dict(r) for r in self._db.execute("SELECT * FROM evicted ORDER BY evicted_at, id")]

    def keyword(self, query: str, k: int = 5) -> list[int]:
        """Ids of the k best memories by FTS5 bm25 over the query's content words (none shared: none)."""
        match = _match_query(query)
        if not match:
            return []
        rows = self._db.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
                                "ORDER BY bm25(memories_fts), rowid LIMIT ?", (match, k)).fetchall()
        return [r[0] for r in rows]

    def dense(self, query: str, k: int = 5) -> list[int]:
        """Ids of the k memories whose vectors are nearest the query's (cosine), nearest first.

        Distances are rounded to 5 decimals and ties go to the older memory, so sqlite-vec and numpy,
        which round floats differently, give the same ranking.
        """
        if self.embedder is None:
            raise MemoryStoreError("dense search needs an embedder: MemoryStore(path, embedder=...)")
        count = tokens.count_tokens(query)
        if count > MAX_QUERY_TOKENS:
            raise QueryTooLongError(
                f"The query is {count} tokens; dense search embeds at most {MAX_QUERY_TOKENS} (the embedding "
                "model reads a bounded input at once). Shorten it to its question, or search it with "
                "method='keyword'. Nothing was searched or changed.")
        if not len(self):
            return []
        vector = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        if self.engine == "sqlite-vec":
            rows = self._db.execute("SELECT id FROM memories WHERE vector IS NOT NULL "
                                    "ORDER BY round(vec_distance_cosine(vector, ?), 5), id LIMIT ?",
                                    (vector.tobytes(), k)).fetchall()
            return [r[0] for r in rows]
        ids, rows = self._vector_table()
        if not len(ids):
            return []
        distance = 1 - rows @ vector / np.maximum(np.linalg.norm(rows, axis=1) * np.linalg.norm(vector), 1e-12)
        order = np.lexsort((ids, np.round(distance.astype(np.float64), 5)))[:k]
        return [int(ids[i]) for i in order]

    def _vector_table(self) -> tuple[np.ndarray, np.ndarray]:
        if self._vectors is None:
            found = self._db.execute("SELECT id, vector FROM memories WHERE vector IS NOT NULL ORDER BY id").fetchall()
            ids = np.array([r[0] for r in found], dtype=np.int64)
            rows = np.array([np.frombuffer(r[1], dtype=np.float32) for r in found]).reshape(len(found), -1)
            self._vectors = (ids, rows)
        return self._vectors

    def search_ids(self, query: str, k: int = 5, method: Optional[str] = None, pool: int = 20) -> list[int]:
        """The k best ids by `method`; "fused" merges the top `pool` of keyword and dense by reciprocal rank.

        With no method: "fused" when the store has an embedder, else "keyword".
        """
        method = method or ("fused" if self.embedder is not None else "keyword")
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        if method == "keyword":
            return self.keyword(query, k)
        if method == "dense":
            return self.dense(query, k)
        return reciprocal_rank_fusion([self.keyword(query, pool), self.dense(query, pool)])[:k]

    def search(self, query: str, k: int = 5, method: Optional[str] = None) -> list[Memory]:
        """The k memories most relevant to `query`, best first; an empty store gives []."""
        return [m for m in (self.get(i) for i in self.search_ids(query, k, method)) if m]

    @staticmethod
    def _memory(row: sqlite3.Row) -> Memory:
        return Memory(**{name: row[name] for name in Memory.__dataclass_fields__})

    def __repr__(self) -> str:
        return f"MemoryStore({Path(self.path).name!r}, {len(self)} memories, dense search by {self.engine.split()[0]})"
