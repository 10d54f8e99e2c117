"""A lesson store in one SQLite file: ranked by FTS5, scored by confidence, evicted to an audit table.

Errors are loud and lossless: a corrupt, locked or newer-schema file raises a
`LessonStoreError` subclass and is never rewritten, recreated or deleted; so does a path
that is not a regular file (a FIFO, a device) or that this user may not read and write.
A path starting with "~" is the user's home folder. Several processes
may open the same path at once, even a new one (two notebooks, a notebook and its tests): the
schema is checked and created inside one write transaction, so the second waits for the first.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

SCHEMA_VERSION = 1
MAX_TOP_K = 5
LESSON_FIELDS = ("trigger", "error_type", "fix", "applies_to")
MAX_FIELD_CHARS = 400  # a lesson is a few lines of prompt, never a document; a longer field is cut, visibly

_STOPWORDS = set(
    "a an the of in on at to for from by with and or is was were be been it its this that "
    "what when where who whom which how did does do he she they his her their".split()
)


class LessonStoreError(RuntimeError):
    """Base class: the store could not do what was asked; nothing stored was changed."""


class CorruptStoreError(LessonStoreError):
    """The file is not a readable SQLite database (or fails its integrity check). Left untouched."""


class StoreLockedError(LessonStoreError):
    """Another connection holds the write lock longer than our timeout. Retry later."""


class NewerSchemaError(LessonStoreError):
    """The file was written by a newer agentkit (higher PRAGMA user_version). Left untouched."""


class NotALessonStoreError(LessonStoreError):
    """The file is some other SQLite database; we do not write our tables into it."""


@dataclass
class Lesson:
    """A structured reflection: when it applies, what went wrong, and what to do instead."""

    id: int
    trigger: str
    error_type: str
    fix: str
    applies_to: str
    confidence: float
    uses: int = 0
    successes: int = 0
    failures: int = 0
    source: str = "reflection"

    def as_prompt_line(self) -> str:
        return (f"[L{self.id}] When: {self.trigger} | Mistake: {self.error_type} | "
                f"Fix: {self.fix} | Applies to: {self.applies_to}")


def default_path() -> Path:
    """lessons.sqlite3 in the user's data directory (platformdirs)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("agentkit", appauthor=False)) / "lessons.sqlite3"


def fts5_available() -> bool:
    """Whether this Python's sqlite3 was built with the FTS5 full-text extension."""
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False


_COLUMNS = ("trigger TEXT NOT NULL, error_type TEXT NOT NULL, fix TEXT NOT NULL, "
            "applies_to TEXT NOT NULL, confidence REAL NOT NULL, uses INTEGER NOT NULL DEFAULT 0, "
            "successes INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0, "
            "source TEXT NOT NULL, created_at TEXT NOT NULL")

_SCHEMA = f"""
CREATE TABLE lessons (id INTEGER PRIMARY KEY AUTOINCREMENT, {_COLUMNS});
CREATE TABLE evicted (id INTEGER PRIMARY KEY, {_COLUMNS},
                      reason TEXT NOT NULL, evicted_at TEXT NOT NULL);
CREATE TABLE history (seq INTEGER PRIMARY KEY AUTOINCREMENT, lesson_id INTEGER NOT NULL,
                      trial INTEGER, event TEXT NOT NULL, confidence REAL NOT NULL);
CREATE VIRTUAL TABLE lessons_fts USING fts5(trigger, error_type, fix, applies_to,
                                            tokenize='porter unicode61');
PRAGMA user_version = {SCHEMA_VERSION};
"""
_OUR_TABLES = {"lessons", "evicted", "history", "lessons_fts"}


def _fit(text: str) -> str:
    """The field as stored: a longer one keeps its start and says it was cut, with a digest of the whole
    text, so two lessons that differ only after the cut stay two lessons (and the same one stays one)."""
    if len(text) <= MAX_FIELD_CHARS:
        return text
    digest = hashlib.sha256(text.casefold().encode("utf-8")).hexdigest()[:8]
    marker = f" [... cut: {len(text):,} characters, #{digest}]"
    return text[: MAX_FIELD_CHARS - len(marker)].rstrip() + marker


def _id_list(lesson_ids) -> list[int]:
    """Lesson ids as a list: one id alone is fine; a string is refused ("12" is not lessons 1 and 2)."""
    if isinstance(lesson_ids, int) and not isinstance(lesson_ids, bool):
        return [lesson_ids]
    if not isinstance(lesson_ids, (str, bytes)) and hasattr(lesson_ids, "__iter__"):
        ids = list(lesson_ids)
        if all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            return ids
    raise TypeError(f"lesson_ids must be a list of lesson ids (whole numbers), got {lesson_ids!r}")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _match_query(text: str) -> str:
    """An FTS5 query that ORs the question's content words, each quoted (no FTS syntax leaks in)."""
    words = [w for w in re.findall(r"\w+", text.lower()) if w not in _STOPWORDS]
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words))


class LessonStore:
    """Lessons in a SQLite file (WAL mode); every write is one transaction.

    A success after using a lesson adds `reward` to its confidence, a failure subtracts
    `penalty`; a lesson whose confidence falls below `threshold` moves to the `evicted` table.
    """

    def __init__(self, path: str | Path | None = None, *, threshold: float = 0.3,
                 initial_confidence: float = 0.5, reward: float = 0.1, penalty: float = 0.2,
                 timeout: float = 5.0) -> None:
        if not 0 <= threshold < initial_confidence <= 1:
            raise ValueError("need 0 <= threshold < initial_confidence <= 1")
        self.path = Path(path).expanduser() if path is not None else default_path()
        self.threshold, self.initial_confidence = threshold, initial_confidence
        self.reward, self.penalty, self.timeout = reward, penalty, timeout
        self._check_path()
        if not fts5_available():
            raise LessonStoreError("This Python's sqlite3 lacks FTS5; the store needs it for ranking.")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a write is exactly one transaction.
            self._db = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            raise LessonStoreError(f"cannot open a lesson store at {self.path}: {e}. Pick a path in a folder "
                                   "you can write to.") from e
        self._db.row_factory = sqlite3.Row
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise

    # --- opening: check before touching anything ---------------------------------

    def _check_path(self) -> None:
        """Refuse, with what to do, a path SQLite would fail on obscurely (or block on)."""
        try:
            mode = self.path.stat().st_mode
        except FileNotFoundError:
            return  # a new store
        except OSError as e:
            raise LessonStoreError(f"cannot look at {self.path}: {e}. Pick another path.") from e
        if stat.S_ISDIR(mode):
            raise LessonStoreError(f"{self.path} is a directory; give a file path for the store.")
        if not stat.S_ISREG(mode):
            kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file (a device or socket)"
            raise LessonStoreError(f"{self.path} is {kind}, not a lesson store file; it was left alone. "
                                   "Give the path of a store file, or a new path.")
        if not os.access(self.path, os.R_OK | os.W_OK):
            raise LessonStoreError(f"{self.path} cannot be read and written by this user; it was left alone. "
                                   "Fix its permissions (chmod u+rw) or pick another path.")

    def _open(self) -> None:
        with self._errors("open"):
            check = self._db.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise CorruptStoreError(self._corrupt_message(f"integrity check says: {check}"))
            # The version is read inside the write transaction: a second process opening a new
            # path at the same moment waits here, then finds the schema the first one created.
            with self._write("create the schema"):
                version = self._db.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise NewerSchemaError(
                        f"{self.path} has schema version {version}; this agentkit reads up to "
                        f"{SCHEMA_VERSION}. Upgrade agentkit; the file was not changed.")
                tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if version == 0 and tables:
                    raise NotALessonStoreError(
                        f"{self.path} is a SQLite database with other tables ({', '.join(sorted(tables))}); "
                        "it is not a lesson store, so it was left alone. Pick another path.")
                if version == SCHEMA_VERSION and not _OUR_TABLES <= tables:
                    raise CorruptStoreError(self._corrupt_message(
                        f"tables missing: {', '.join(sorted(_OUR_TABLES - tables))}"))
                if version == 0:
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            self._db.execute(statement)
            # Only a file known to be ours is switched to WAL (a journal mode cannot change inside a transaction).
            self.journal_mode = self._switch_to_wal()
            # In WAL mode NORMAL never corrupts the file; a power cut may only undo the latest commits.
            self._db.execute("PRAGMA synchronous=NORMAL")

    def _switch_to_wal(self) -> str:
        # SQLite answers "database is locked" at once to a journal-mode change while another
        # connection is busy, without waiting for the busy timeout: so wait here, within it.
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            except sqlite3.OperationalError as e:
                if "locked" not in str(e).lower() or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _corrupt_message(self, detail: str) -> str:
        return (f"{self.path} is not a readable lesson store ({detail}). The file was left exactly "
                "as it was: try `sqlite3 FILE .recover`, or move it away and open a new path.")

    @contextmanager
    def _errors(self, doing: str):
        """Turn sqlite3 errors into the store's documented exceptions."""
        try:
            yield
        except sqlite3.DatabaseError as e:
            text = str(e).lower()
            if "locked" in text or "busy" in text:
                raise StoreLockedError(
                    f"{self.path} is locked by another connection (while trying to {doing}); "
                    "nothing was written. Retry when the other writer is done.") from e
            if "not a database" in text or "malformed" in text or "corrupt" in text:
                raise CorruptStoreError(self._corrupt_message(str(e))) from e
            raise LessonStoreError(f"{self.path}: could not {doing}: {e}") from e

    @contextmanager
    def _write(self, doing: str = "write"):
        """One transaction: all of it lands, or none of it does."""
        with self._errors(doing):
            # IMMEDIATE takes the write lock up front, so a busy store fails before any change.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "LessonStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- writing -----------------------------------------------------------------

    def add(self, trigger: str, error_type: str, fix: str, applies_to: str, *,
            confidence: float | None = None, source: str = "reflection", trial: int | None = None) -> int:
        """Store a lesson and return its id; an identical active lesson is reused, not duplicated."""
        fields = {}
        for name, value in zip(LESSON_FIELDS, (trigger, error_type, fix, applies_to)):
            value = _fit(" ".join(str(value).split()))
            if not value:
                raise ValueError(f"lesson field {name!r} is empty")
            fields[name] = value
        confidence = self.initial_confidence if confidence is None else round(float(confidence), 3)
        if not self.threshold <= confidence <= 1:
            raise ValueError(f"confidence {confidence} must be in [threshold={self.threshold}, 1]")
        with self._write("add a lesson") as db:
            same = db.execute("SELECT id FROM lessons WHERE lower(fix) = lower(?) AND lower(trigger) = lower(?)",
                              (fields["fix"], fields["trigger"])).fetchone()
            if same:
                return same[0]
            cur = db.execute(
                "INSERT INTO lessons (trigger, error_type, fix, applies_to, confidence, source, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", (*fields.values(), confidence, source, _now()))
            lesson_id = cur.lastrowid
            db.execute("INSERT INTO lessons_fts (rowid, trigger, error_type, fix, applies_to) "
                       "VALUES (?, ?, ?, ?, ?)", (lesson_id, *fields.values()))
            db.execute("INSERT INTO history (lesson_id, trial, event, confidence) VALUES (?, ?, 'added', ?)",
                       (lesson_id, trial, confidence))
        return lesson_id

    def record_outcome(self, lesson_ids: list[int], success: bool, trial: int | None = None) -> list[int]:
        """Raise (success) or lower (failure) the confidence of lessons that were used; return evicted ids.

        All ids are updated in one transaction: an unknown id raises KeyError and changes nothing.
        """
        lesson_ids = _id_list(lesson_ids)
        evicted = []
        with self._write("record an outcome") as db:
            for lesson_id in dict.fromkeys(lesson_ids):
                row = db.execute("SELECT confidence FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
                if row is None:
                    raise KeyError(f"no active lesson with id {lesson_id}")
                step = self.reward if success else -self.penalty
                confidence = round(min(1.0, max(0.0, row[0] + step)), 3)
                db.execute(
                    "UPDATE lessons SET confidence = ?, uses = uses + 1, successes = successes + ?, "
                    "failures = failures + ? WHERE id = ?", (confidence, int(success), int(not success), lesson_id))
                db.execute("INSERT INTO history (lesson_id, trial, event, confidence) VALUES (?, ?, ?, ?)",
                           (lesson_id, trial, "success" if success else "failure", confidence))
                if confidence < self.threshold:
                    self._evict(db, lesson_id, f"confidence {confidence} < threshold {self.threshold}", trial)
                    evicted.append(lesson_id)
        return evicted

    def _evict(self, db, lesson_id: int, reason: str, trial: int | None) -> None:
        db.execute("INSERT INTO evicted SELECT *, ?, ? FROM lessons WHERE id = ?", (reason, _now(), lesson_id))
        confidence = db.execute("SELECT confidence FROM lessons WHERE id = ?", (lesson_id,)).fetchone()[0]
        db.execute("DELETE FROM lessons WHERE id = ?", (lesson_id,))
        db.execute("DELETE FROM lessons_fts WHERE rowid = ?", (lesson_id,))
        db.execute("INSERT INTO history (lesson_id, trial, event, confidence) VALUES (?, ?, 'evicted', ?)",
                   (lesson_id, trial, confidence))

    def reset(self) -> int:
        """Retire every active lesson to the audit table (reason 'reset'); return how many."""
        with self._write("reset") as db:
            ids = [r[0] for r in db.execute("SELECT id FROM lessons")]
            for lesson_id in ids:
                self._evict(db, lesson_id, "reset", None)
        return len(ids)

    # --- reading -----------------------------------------------------------------

    def relevant(self, text: str, k: int = 3) -> list[Lesson]:
        """The k lessons most relevant to `text` by FTS5 bm25 rank (k <= 5); lessons sharing no word are left out."""
        if not 1 <= k <= MAX_TOP_K:
            raise ValueError(f"k must be between 1 and {MAX_TOP_K}: a prompt carries a few lessons, never the store")
        query = _match_query(text)
        if not query:
            return []
        with self._errors("search lessons"):
            rows = self._db.execute(
                "SELECT l.* FROM lessons_fts JOIN lessons l ON l.id = lessons_fts.rowid "
                "WHERE lessons_fts MATCH ? ORDER BY bm25(lessons_fts), l.confidence DESC, l.id LIMIT ?",
                (query, k)).fetchall()
        return [self._lesson(r) for r in rows]

    def get(self, lesson_id: int) -> Lesson | None:
        with self._errors("read a lesson"):
            row = self._db.execute("SELECT * FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
        return self._lesson(row) if row else None

    def lessons(self) -> list[Lesson]:
        """Every active lesson, oldest first."""
        with self._errors("list lessons"):
            return [self._lesson(r) for r in self._db.execute("SELECT * FROM lessons ORDER BY id")]

    def evicted(self) -> list[dict]:
        """The audit table: every evicted lesson with its reason."""
        with self._errors("list evicted lessons"):
            return [dict(r) for r in self._db.execute("SELECT * FROM evicted ORDER BY evicted_at, id")]

    def history(self) -> list[dict]:
        """Every confidence event (added, success, failure, evicted), in order."""
        with self._errors("read the history"):
            return [dict(r) for r in self._db.execute("SELECT * FROM history ORDER BY seq")]

    def export(self, path: str | Path | None = None) -> dict:
        """Everything in the store as a JSON-ready dict; with `path`, also written there atomically."""
        data = {
            "schema_version": SCHEMA_VERSION,
            "lessons": [asdict(lesson) for lesson in self.lessons()],
            "evicted": self.evicted(),
            "history": self.history(),
        }
        if path is not None:
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
            os.replace(tmp, path)
        return data

    @staticmethod
    def _lesson(row: sqlite3.Row) -> Lesson:
        return Lesson(**{name: row[name] for name in Lesson.__dataclass_fields__})

    def __len__(self) -> int:
        with self._errors("count lessons"):
            return self._db.execute("SELECT count(*) FROM lessons").fetchone()[0]

    def __repr__(self) -> str:
        return f"LessonStore({self.path.name!r}, {len(self)} lessons, threshold={self.threshold})"
