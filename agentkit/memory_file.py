"""The memory store's file (agentkit.memory_store): its tables, what is refused, and how an older store is upgraded.

`open_file(db, path, model)` runs once per connection, in one transaction, before anything else:

- an empty file (or ":memory:") gets our tables and `PRAGMA user_version = SCHEMA_VERSION`;
- a file that is not SQLite or fails its integrity check raises `CorruptStoreError`; some other database (any
  table, view or trigger with no version, or our version number over other tables) `NotAMemoryStoreError`;
  another schema version, or another embedding model's vectors (`meta.model`), `StoreVersionError`. Such a file
  is never written to.
- our own store written before ids were made unique (its `memories` table without AUTOINCREMENT, whose plain
  rowid handed a retired memory's id to the next memory added) is upgraded in place: `memories` is rebuilt with
  AUTOINCREMENT, its sequence past every id ever used, and an active memory whose id is also in the audit table
  (it took a retired memory's id) gets a new one. The columns stay as they were, so the schema version stays too:
  an older agentkit still reads the file.
"""
from __future__ import annotations

import re
import sqlite3
from functools import lru_cache

SCHEMA_VERSION = 1


class MemoryStoreError(RuntimeError):
    """The store could not do what was asked; nothing stored was changed."""


class CorruptStoreError(MemoryStoreError):
    """The file is not a readable SQLite database, or fails its integrity check. Left untouched."""


class StoreVersionError(MemoryStoreError):
    """The file was written by another schema version or another embedding model. Left untouched."""


class NotAMemoryStoreError(MemoryStoreError):
    """The file is some other SQLite database; we do not write our tables into it."""


_MEMORIES_TABLE = """
CREATE TABLE {name} (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, text TEXT NOT NULL, vector BLOB,
                       confidence REAL NOT NULL, uses INTEGER NOT NULL DEFAULT 0,
                       successes INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,
                       created_at TEXT NOT NULL)"""
_SCHEMA = f"""{_MEMORIES_TABLE.format(name="memories")};
CREATE TABLE evicted (id INTEGER PRIMARY KEY, kind TEXT, text TEXT, confidence REAL, uses INTEGER,
                      failures INTEGER, reason TEXT NOT NULL, evicted_at TEXT NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE memories_fts USING fts5(text, tokenize='porter unicode61');
PRAGMA user_version = {SCHEMA_VERSION};
"""
_OUR_TABLES = {"memories", "evicted", "meta", "memories_fts"}


def _table_sql(db: sqlite3.Connection, table: str) -> str:
    row = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return row[0] or ""


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    """A table's shape: "USING module" for a virtual table, then each column as "name TYPE [NOT NULL] [PRIMARY KEY]"."""
    module = re.match(r"\s*CREATE\s+VIRTUAL\s+TABLE\s+\S+\s+USING\s+(\w+)", _table_sql(db, table), re.IGNORECASE)
    columns = [f"{r[1]} {r[2]}{' NOT NULL' if r[3] else ''}{' PRIMARY KEY' if r[5] else ''}".strip()
               for r in db.execute(f"PRAGMA table_info({table})")]
    return [f"USING {module.group(1).lower()}", *columns] if module else columns


@lru_cache(maxsize=None)
def _our_columns() -> dict[str, list[str]]:
    """The columns of our tables, read from the schema itself (so the two cannot drift apart)."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(_SCHEMA)
        return {table: _columns(db, table) for table in sorted(_OUR_TABLES)}
    finally:
        db.close()


def corrupt(path: str, detail: str) -> str:
    return (f"{path} is not a readable memory store ({detail}). The file was left exactly as it was: "
            "try `sqlite3 FILE .recover`, or move it away and open a new path.")


def open_file(db: sqlite3.Connection, path: str, model) -> None:
    """Create, check or upgrade the store in `db` (a connection with isolation_level=None); see the module docstring."""
    try:
        check = db.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise CorruptStoreError(corrupt(path, f"integrity check says: {check}"))
        db.execute("BEGIN IMMEDIATE")
        try:
            _create_or_check(db, path, model)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    except sqlite3.DatabaseError as e:
        raise CorruptStoreError(corrupt(path, str(e))) from e


def _create_or_check(db: sqlite3.Connection, path: str, model) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    objects = db.execute("SELECT type, name FROM sqlite_master ORDER BY type, name").fetchall()
    tables = {name for kind, name in objects if kind == "table"}
    if version == 0 and objects:  # a view, a trigger, an index: anything makes it someone else's file
        shown = ", ".join(f"{kind} {name}" for kind, name in objects[:5])
        more = f" and {len(objects) - 5} more" if len(objects) > 5 else ""
        raise NotAMemoryStoreError(
            f"{path} is a SQLite database that holds other things ({shown}{more}); it is not a "
            "memory store, so it was left alone. Pick another path.")
    if version not in (0, SCHEMA_VERSION):
        raise StoreVersionError(
            f"{path} is a memory store of schema version {version}; this agentkit reads version "
            f"{SCHEMA_VERSION}. The file was not changed: open it with the agentkit that wrote it, "
            "or export its memories there and add them to a new store.")
    if version == SCHEMA_VERSION and not _OUR_TABLES <= tables:
        raise CorruptStoreError(corrupt(path, f"tables missing: {', '.join(sorted(_OUR_TABLES - tables))}"))
    if version == SCHEMA_VERSION:
        for table, columns in _our_columns().items():
            found = _columns(db, table)
            if found != columns:
                raise NotAMemoryStoreError(
                    f"{path} claims to be a memory store of schema version {version}, but its table "
                    f"{table} has the columns ({', '.join(found)}) where ours has ({', '.join(columns)}): "
                    "something else wrote it, so it was left alone. Pick another path.")
    if version == 0:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
    elif not re.search(r"\bAUTOINCREMENT\b", _table_sql(db, "memories"), re.IGNORECASE):
        _upgrade_to_unique_ids(db)
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    if model and meta.get("model") and meta["model"] != model:
        raise StoreVersionError(
            f"{path} holds vectors from another embedding model ({meta['model']!r}); this embedder is "
            f"{model!r}, and vectors of two models cannot be compared. The file was not changed: use the "
            "same model, or re-embed the memories into a new store.")
    if model and not meta.get("model") and not db.execute("SELECT 1 FROM memories LIMIT 1").fetchone():
        db.execute("INSERT INTO meta VALUES ('model', ?)", (model,))


def _upgrade_to_unique_ids(db: sqlite3.Connection) -> None:
    """Rebuild `memories` with AUTOINCREMENT, its sequence past every id ever used (inside open_file's transaction)."""
    highest = lambda: db.execute("SELECT max(coalesce((SELECT max(id) FROM memories), 0), "
                                 "coalesce((SELECT max(id) FROM evicted), 0))").fetchone()[0]
    for (taken,) in db.execute("SELECT id FROM memories WHERE id IN (SELECT id FROM evicted) ORDER BY id").fetchall():
        fresh = highest() + 1  # it took a retired memory's id: that id names the retired one only
        db.execute("UPDATE memories SET id = ? WHERE id = ?", (fresh, taken))
        db.execute("UPDATE memories_fts SET rowid = ? WHERE rowid = ?", (fresh, taken))
    db.execute(_MEMORIES_TABLE.format(name="memories_unique_ids"))
    db.execute("INSERT INTO memories_unique_ids SELECT * FROM memories")
    db.execute("DROP TABLE memories")
    db.execute("ALTER TABLE memories_unique_ids RENAME TO memories")
    db.execute("DELETE FROM sqlite_sequence WHERE name IN ('memories', 'memories_unique_ids')")
    db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('memories', ?)", (highest(),))
