"""Chapter 17's long tasks: parcel relays, where a fact found at the first step is needed at the last.

`data/relay_world.json` (made by `data/make_relay.py`) holds nine relay lines, one task each. A
parcel's fee is the tariff on its dispatch slip times the distance from the depot to the line's last
station. A run reads the slip (`Dispatch[parcel]`), walks the line one station page at a time
(`Search[station]`: each page names the next station and states the distance so far), then
`Calculate`s and `Finish`es: a line of S stations is a task of S + 3 steps (20 to 60).

The slip is printed once per run: `relay_tools(task)` makes a fresh executor whose `Dispatch` answers
the slip the first time and, every later time, that it was printed already. So a strategy that drops
the slip from the prompt cannot fetch it again: the tariff must survive in the prompt, a note, or a
summary. Some facts are like that (a one-time code, what a user said in the first turn, a value
that has changed since); the slip stands for them. Data and tools only: no model.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

from .data import DATA_DIR
from .tasks import Task
from .tools import ToolExecutor, calculator

WORLD_FILE = "relay_world.json"
SLACK_STEPS = 10  # max_steps = the baseline's steps + this: room for a note, a re-read, a lost fact
QUESTION = ("Parcel {parcel} travels the {line} line from its depot to the line's last station. Its fee is the "
            "tariff on its dispatch slip times the distance from the depot to the last station. Get the slip first "
            "with Dispatch[{parcel}], then follow the line from its first station, {first}, one Search per "
            "station, and answer with the fee in credits.")
SLIP = ("Dispatch slip for parcel {parcel} on the {line} line: tariff: {tariff} credits per km. "
        "Keep this slip: the desk prints it once.")
SLIP_GONE = ("The desk printed the slip for parcel {parcel} at your first request and prints it once; "
             "it cannot print it again.")
# What a sub-agent that walks part of a line is asked to do (chapter 17's sub-agent strategy).
WALK_ASSIGNMENT = ("Walk a relay line from the station {input}: Search its page, then each next station the pages "
                   "name, for at most {segment} stations or to the end of the line. Then Finish with the last page's "
                   "sentence that starts with 'Station', exactly as the page writes it.")
# The sentences a run must carry forward, as the pages, the slip and every summary write them.
TARIFF = re.compile(r"tariff: (\d+) credits per km")
STATION = re.compile(r"Station (\d+) of (\d+) on the (\w+) line: ([A-Z][a-z]+ [A-Z][a-z]+)"
                     r"(?:\. (\d+) km from the depot\. Next station: ([A-Z][a-z]+ [A-Z][a-z]+)\."
                     r"|, the end of the line\. (\d+) km from the depot\.)")


@dataclass(frozen=True)
class RelayTask(Task):
    """One relay line as a task: the question, the fee as gold (checked by its leading number)."""

    line: str = ""
    parcel: str = ""
    tariff: int = 0
    stations: tuple = ()
    distance_km: int = 0
    steps: int = 0  # what a baseline run takes: the slip, every station, Calculate, Finish
    pages: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def max_steps(self) -> int:
        return self.steps + SLACK_STEPS


@lru_cache(maxsize=1)
def _load() -> tuple:
    world = json.loads((DATA_DIR / WORLD_FILE).read_text(encoding="utf-8"))
    tasks = []
    for raw in world["lines"]:
        question = QUESTION.format(parcel=raw["parcel"], line=raw["line"], first=raw["stations"][0])
        tasks.append(RelayTask(
            id=raw["id"], category="relay", question=question, gold=str(raw["fee"]), checker="leading",
            key_path=(), line=raw["line"], parcel=raw["parcel"], tariff=raw["tariff"],
            stations=tuple(raw["stations"]), distance_km=raw["distance_km"], steps=raw["steps"], pages=raw["pages"]))
    return tuple(tasks)


def load_relay() -> list[RelayTask]:
    """The nine relay tasks, shortest first (20, 25, ..., 60 steps)."""
    return list(_load())


def relay_task(task_id: str) -> RelayTask:
    """One task by id ("relay-20" ... "relay-60"); an unknown id names the known ones."""
    for task in _load():
        if task.id == task_id:
            return task
    raise KeyError(f"no relay task {task_id!r}; the tasks are {', '.join(t.id for t in _load())}")


_PARCEL = re.compile(r"Parcel (P-\d+) travels")


@lru_cache(maxsize=1)
def _by_parcel() -> dict:
    return {task.parcel: task for task in _load()}


@lru_cache(maxsize=1)
def _pages() -> dict:
    return {name.casefold(): page for task in _load() for name, page in task.pages.items()}


def task_of(question: str):
    """The relay task a question (or a prompt holding it) is about, or None."""
    match = _PARCEL.search(question)
    return _by_parcel().get(match.group(1)) if match else None


def station_search(query: str) -> str:
    """The page of the station named in `query` (any line), or a clear 'no such station'."""
    wanted = " ".join(str(query).split()).strip(" .\"'").casefold()
    page = _pages().get(wanted)
    if page is None:
        return f"No station called {query!r} on any line. Search for a station by the exact name a page gives."
    return page


class DispatchDesk:
    """The slip desk of one run: the slip the first time it is asked for a parcel, then 'printed already'."""

    def __init__(self) -> None:
        self.printed: set[str] = set()

    def __call__(self, parcel: str) -> str:
        parcel = " ".join(str(parcel).split()).strip(" .\"'").upper()
        task = _by_parcel().get(parcel)
        if task is None:
            known = ", ".join(t.parcel for t in _load())
            return f"No parcel {parcel!r} at this desk. The parcels are: {known}."
        if parcel in self.printed:
            return SLIP_GONE.format(parcel=parcel)
        self.printed.add(parcel)
        return SLIP.format(parcel=parcel, line=task.line, tariff=task.tariff)


def relay_tools(search: bool = True) -> ToolExecutor:
    """A fresh executor for one run: Dispatch (a desk of its own), Search (unless `search=False`), Calculate."""
    tools = ToolExecutor()
    # All three are local and bounded, so they run inline (timeout_s=None), as default_executor's do.
    tools.register("Dispatch", DispatchDesk(), "get the dispatch slip of a parcel, by its id (the desk prints it once)",
                   timeout_s=None)
    if search:
        tools.register("Search", station_search, "read the page of a relay station, by its exact name", timeout_s=None)
    tools.register("Calculate", calculator, "evaluate arithmetic such as 6 * 217", timeout_s=None)
    return tools
