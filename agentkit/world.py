"""A throw-away world for tools with side effects: notes in SQLite, an outbox, a web-search log.

`World(folder)` keeps one SQLite file in `folder` (make a temporary one with `World.temporary()`).
Its tools, all `str -> str` and never raising:

| tool         | effect | input                    | what it does                                      |
|--------------|--------|--------------------------|---------------------------------------------------|
| ListNotes    | read   | anything                 | the titles of all notes                           |
| ReadNote     | read   | a title (any case)       | the note's text                                   |
| ReadPage     | read   | a topic                  | the best page of the team wiki (data/world_pages) |
| WebSearch    | read * | a query                  | no results; the query is logged as sent out       |
| WriteNote    | write  | `title: text`            | creates or replaces the note                      |
| DeleteNotes  | delete | a title, or `all`        | deletes that note, or every note                  |
| SendMessage  | send   | `recipient: text`        | puts a message in the outbox                      |

(*) WebSearch changes nothing in the store, so its effect is "read", yet its query leaves the machine: it
is registered with `open_world=True` (MCP's openWorldHint), and the `web_log` table holds what a real
search engine would have received.

`dry_run(tool, input)` says what a call would change, computed by the same code that makes the
change, without committing it. `world_executor(world)` registers every tool with its effect.
"""
from __future__ import annotations

import json
import sqlite3
import tempfile
import threading
from pathlib import Path

from .data import read_text
from .tools import ERROR_PREFIX, KnowledgeBase, ToolExecutor

SAMPLE_NOTES = {
    "Printer budget": "I decided: 300 euros for a new printer in March.",
    "Meeting 12 May": "Action items: Ana drafts the plan, Ben books the room.",
    "Wi-Fi password": "office-wifi: tulip-42-harbour",
    "Reading list": "Designing Data-Intensive Applications; The Pragmatic Programmer.",
}

DESCRIPTIONS = {
    "ListNotes": "list the titles of all notes",
    "ReadNote": "read one note by its exact title",
    "ReadPage": "read the team wiki page about a topic",
    "WebSearch": "search the public web",
    "WriteNote": "create or replace a note; input is 'title: text'",
    "DeleteNotes": "delete the note with this title, or every note with 'all'",
    "SendMessage": "send a message; input is 'recipient: text'",
}
EFFECT_OF = {"ListNotes": "read", "ReadNote": "read", "ReadPage": "read", "WebSearch": "read",
             "WriteNote": "write", "DeleteNotes": "delete", "SendMessage": "send"}
OPEN_WORLD = {"WebSearch"}  # tools whose input leaves the machine


def _split(text: str, what: str) -> tuple[str, str]:
    head, sep, tail = str(text).partition(":")
    if not sep or not head.strip() or not tail.strip():
        raise ValueError(f"input must be '{what}: text', got {str(text)[:80]!r}")
    return head.strip(), tail.strip()


class World:
    """Notes, an outbox and a web-search log in one SQLite file."""

    def __init__(self, folder, notes: dict | None = None) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "world.sqlite"
        # An MCP server runs tools on worker threads: one connection, one change at a time.
        self.db = sqlite3.connect(self.path, check_same_thread=False)
        self._lock = threading.Lock()
        self.db.executescript(
            # A throw-away store: no waiting for the disk on every change (a crash may lose it; fine here).
            "PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY;"
            "CREATE TABLE IF NOT EXISTS notes (title TEXT PRIMARY KEY, text TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY, recipient TEXT, text TEXT);"
            "CREATE TABLE IF NOT EXISTS web_log (id INTEGER PRIMARY KEY, query TEXT);"
        )
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO notes VALUES (?, ?)", (notes or {}).items())
        self.pages = KnowledgeBase(json.loads(read_text("world_pages.json")))

    @classmethod
    def temporary(cls, notes: dict | None = None) -> "World":
        """A fresh world in a new temporary folder, with SAMPLE_NOTES unless `notes` is given."""
        return cls(tempfile.mkdtemp(prefix="agentkit-world-"), SAMPLE_NOTES if notes is None else notes)

    # --- what is in it --------------------------------------------------------

    def notes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT title, text FROM notes ORDER BY title"))

    def outbox(self) -> list[tuple[str, str]]:
        return list(self.db.execute("SELECT recipient, text FROM outbox ORDER BY id"))

    def web_log(self) -> list[str]:
        return [q for (q,) in self.db.execute("SELECT query FROM web_log ORDER BY id")]

    def counts(self) -> dict[str, int]:
        return {"notes": len(self.notes()), "outbox": len(self.outbox()), "web queries": len(self.web_log())}

    # --- changes: each is planned first, so a dry run and the real run share the code ------

    def _plan(self, tool: str, argument: str) -> tuple[str, list[tuple[str, tuple]]]:
        """(what would change, the SQL to make it so); raises ValueError on bad input."""
        if tool == "WriteNote":
            title, text = _split(argument, "title")
            verb = "replace" if title in self.notes() else "create"
            return f"{verb} note {title!r} with {text!r}", [("INSERT OR REPLACE INTO notes VALUES (?, ?)", (title, text))]
        if tool == "DeleteNotes":
            wanted = str(argument).strip()
            titles = list(self.notes()) if wanted.lower() == "all" else [t for t in self.notes() if t == wanted]
            if not titles:
                raise ValueError(f"no note titled {wanted!r}; titles: {', '.join(self.notes()) or '(none)'}")
            return (f"delete {len(titles)} note(s): {', '.join(titles)}",
                    [("DELETE FROM notes WHERE title = ?", (t,)) for t in titles])
        if tool == "SendMessage":
            recipient, text = _split(argument, "recipient")
            return f"send to {recipient}: {text!r}", [("INSERT INTO outbox (recipient, text) VALUES (?, ?)", (recipient, text))]
        raise ValueError(f"{tool} changes nothing")

    def dry_run(self, tool: str, argument: str) -> str:
        """What the call would change, in one line; nothing is written."""
        if tool == "WebSearch":
            return f"would send the query {str(argument)[:200]!r} to a search engine: it leaves the machine"
        try:
            return f"would {self._plan(tool, argument)[0]}"
        except ValueError as e:
            return f"would fail: {e}"

    def _change(self, tool: str, argument: str) -> str:
        with self._lock:
            try:
                summary, statements = self._plan(tool, argument)
            except ValueError as e:
                return f"{ERROR_PREFIX} {e}"
            with self.db:  # one transaction: all of it or nothing
                for sql, values in statements:
                    self.db.execute(sql, values)
        return f"done: {summary}"

    # --- the tools -----------------------------------------------------------

    def list_notes(self, _argument: str = "") -> str:
        titles = list(self.notes())
        return "Notes: " + "; ".join(titles) if titles else "There are no notes."

    def read_note(self, title: str) -> str:
        wanted = str(title).strip()
        found = [text for name, text in self.notes().items() if name.lower() == wanted.lower()]
        return found[0] if found else f"No note titled {wanted!r}. Titles: {'; '.join(self.notes())}"

    def read_page(self, topic: str) -> str:
        return self.pages.search(topic)

    def web_search(self, query: str) -> str:
        with self._lock, self.db:
            self.db.execute("INSERT INTO web_log (query) VALUES (?)", (str(query),))
        return f"No results for {str(query)[:60]!r}."

    def tool_functions(self) -> dict:
        change = lambda tool: (lambda argument: self._change(tool, argument))  # noqa: E731
        return {"ListNotes": self.list_notes, "ReadNote": self.read_note, "ReadPage": self.read_page,
                "WebSearch": self.web_search, "WriteNote": change("WriteNote"),
                "DeleteNotes": change("DeleteNotes"), "SendMessage": change("SendMessage")}

    def close(self) -> None:
        self.db.close()


def world_executor(world: World, names=None, descriptions: dict | None = None) -> ToolExecutor:
    """A ToolExecutor with the world's tools (all, or `names`), each registered with its effect."""
    tools = ToolExecutor()
    functions = world.tool_functions()
    for name in names or list(functions):
        text = (descriptions or {}).get(name, DESCRIPTIONS[name])
        tools.register(name, functions[name], text, effect=EFFECT_OF[name], open_world=name in OPEN_WORLD)
    return tools
