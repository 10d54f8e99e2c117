"""Chapter 13's data: the labelled retrieval set and the multi-session memory tasks.

`retrieval_set()` reads data/memory_retrieval.json: documents (the knowledge base,
lessons in chapter 06's format, distractors) and queries, each a paraphrase that shares few
words with the documents that answer it (`relevant`).

`session_memories(n)` makes the first n memories of an invented team's history, one per past
session, each a fact that session found about one of 50 services ("Session 12: the Cedar
database listens on port 5433."). 50 services x 20 attributes = 1,000 memories, in a fixed
shuffled order (seeded), so every run and machine sees the same store. `session_tasks(n)` asks
10 later questions whose answers sit in that store, spread evenly from its oldest memory to
its newest, each worded differently from the memory that answers it; `session_tasks(n, count, seed)`
draws `count` of the store's n questions at random instead (the same draw for the same seed).

`fact_key(text)` reads which fact a memory states, (service, attribute name), so a newer memory of the same
fact can be told apart from a new fact; `moved_database()` plants a stale memory's update: Cedar's database
moved, and a newer memory gives its new port.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import lru_cache

from .data import read_text

SERVICES = ("Alder Birch Cedar Dogwood Elm Fir Ginkgo Hazel Ivy Juniper Kapok Larch Maple Nutmeg Oak Palm "
            "Quince Rowan Spruce Teak Umbel Vine Willow Yew Zelkova Acacia Balsa Cypress Damson Ebony "
            "Fig Gorse Holly Iroko Jarrah Kauri Laurel Myrtle Nettle Olive Poplar Redwood Sage Tamarind "
            "Upas Walnut Xylia Yucca Zinnia Aspen").split()
PEOPLE = "Priya Tomas Aiko Mateo Lena Kwame Sofia Ravi Ingrid Omar Mei Diego Hana Felix Zara Yusuf".split()
REGIONS = ["eu-west-1", "us-east-2", "ap-south-1", "eu-central-1", "us-west-2", "sa-east-1"]
LANGUAGES = ["Go", "Rust", "Python", "Kotlin", "TypeScript", "Elixir", "Java", "C#"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


@dataclass(frozen=True)
class Attribute:
    """One kind of fact: how a memory states it (`fact`) and how a later task asks for it (`question`)."""

    name: str
    fact: str  # with {s} for the service and {v} for the value
    question: str  # with {s}; worded apart from `fact` on purpose
    values: tuple

    def pattern(self) -> re.Pattern:
        """A regex that reads this fact's value out of a memory about service `s` (a group `s`)."""
        escaped = re.escape(self.fact).replace(re.escape("{s}"), r"(?P<s>\w+)")
        return re.compile(escaped.replace(re.escape("{v}"), r"(?P<v>[\w#.:-]+?)") + r"(?=[.,;]?(?:\s|$))")


ATTRIBUTES = (
    Attribute("port", "the {s} database listens on port {v}", "Which port should I connect to for {s}'s data store?",
              tuple(str(p) for p in range(5400, 5500))),
    Attribute("owner", "{v} owns the {s} service", "Who is responsible for {s}?", tuple(PEOPLE)),
    Attribute("deploy day", "{s} deploys go out on {v}", "On which weekday does {s} ship new releases?",
              tuple(WEEKDAYS)),
    Attribute("region", "{s} runs in the {v} cloud region", "Where are {s}'s servers hosted?", tuple(REGIONS)),
    Attribute("language", "{s} is written in {v}", "Which programming language is {s} built with?", tuple(LANGUAGES)),
    Attribute("channel", "{s} incidents go to the #{v} channel", "Where do I report an outage of {s}?",
              ("ops", "oncall", "pager", "alerts", "sre", "firefight")),
    Attribute("timeout", "{s} requests time out after {v} seconds", "How long before a call to {s} gives up?",
              tuple(str(t) for t in (5, 10, 15, 20, 30, 45, 60, 90))),
    Attribute("backup", "the {s} backup runs at {v} UTC", "At what hour is {s} copied for safekeeping?",
              tuple(f"{h:02d}:00" for h in range(24))),
    Attribute("version", "{s} is pinned to release {v}", "What version of {s} is in production?",
              tuple(f"{a}.{b}.{c}" for a in (1, 2, 3) for b in range(10) for c in range(3))),
    Attribute("prefix", "{s} tickets start with the prefix {v}", "How are {s} issues labelled in the tracker?",
              tuple(f"{a}{b}" for a in "ABCDEFGH" for b in "KLMNPQRS")),
    Attribute("replicas", "{s} keeps {v} replicas", "How many copies of {s} run side by side?",
              tuple(str(n) for n in range(2, 10))),
    Attribute("cache", "the {s} cache expires entries after {v} minutes", "How stale can {s}'s cached answers get?",
              tuple(str(n) for n in (1, 2, 5, 10, 15, 30, 60))),
    Attribute("queue", "{s} reads jobs from the {v} queue", "Where does {s} pick up its work?",
              ("ingest", "billing", "mail", "reports", "thumbnails", "exports", "webhooks")),
    Attribute("dashboard", "{s} metrics are on the {v} dashboard", "Where can I watch how {s} is doing?",
              ("Grafana", "Datadog", "Kibana", "Prometheus", "Honeycomb")),
    Attribute("secret", "{s} reads its API key from the {v} variable", "Which setting holds {s}'s credentials?",
              tuple(f"{w}_KEY" for w in ("API", "SERVICE", "APP", "CLIENT", "ACCESS", "AUTH"))),
    Attribute("budget", "{s} may spend {v} dollars a month on compute", "What is {s}'s monthly cloud allowance?",
              tuple(str(n) for n in range(200, 3000, 100))),
    Attribute("sla", "{s} promises {v} percent uptime", "How reliable has {s} committed to be?",
              ("99.0", "99.5", "99.9", "99.95", "99.99")),
    Attribute("branch", "{s} releases are cut from the {v} branch", "Which line of code does {s} ship from?",
              ("main", "release", "stable", "trunk", "production")),
    Attribute("limit", "{s} allows {v} requests per minute per client", "How hard can one client hit {s}?",
              tuple(str(n) for n in (60, 120, 300, 600, 1000, 3000))),
    Attribute("license", "{s} is released under the {v} licence", "Under what terms may others reuse {s}?",
              ("MIT", "Apache-2.0", "BSD-3", "GPL-3.0", "MPL-2.0")),
)
MAX_MEMORIES = len(SERVICES) * len(ATTRIBUTES)  # 1,000
TASKS_PER_STORE = 10


@dataclass(frozen=True)
class SessionTask:
    """A later task that needs a fact an earlier session found."""

    question: str
    answer: str
    service: str
    attribute: str
    memory_index: int  # where the answering memory sits in the store (0 = oldest)

    def check(self, reply: str) -> bool:
        return self.answer.lower() in reply.lower()


@lru_cache(maxsize=1)
def _facts() -> tuple:
    rng = random.Random(13)
    facts = [(s, a, rng.choice(a.values)) for a in ATTRIBUTES for s in SERVICES]
    rng.shuffle(facts)
    return tuple(facts)


def memory_text(session: int, service: str, attribute: Attribute, value: str) -> str:
    return f"Session {session}: {attribute.fact.format(s=service, v=value)}."


def session_memories(n: int = MAX_MEMORIES) -> list[str]:
    """The first n memories, oldest first (session 1 found the first)."""
    if not 0 <= n <= MAX_MEMORIES:
        raise ValueError(f"n must be between 0 and {MAX_MEMORIES}, got {n}")
    return [memory_text(i, s, a, v) for i, (s, a, v) in enumerate(_facts()[:n], 1)]


def session_tasks(n: int, count: int = TASKS_PER_STORE, seed: int | None = None) -> list[SessionTask]:
    """`count` questions answered by a store of n memories: spread evenly from its oldest memory to its newest,
    or, with a seed, drawn at random without repeats."""
    if not 1 <= count <= n <= MAX_MEMORIES:
        raise ValueError(f"need 1 <= count <= n <= {MAX_MEMORIES}, got count={count}, n={n}")
    if seed is None:
        picks = [int((i + 0.5) * n / count) for i in range(count)]
    else:
        picks = sorted(random.Random(seed).sample(range(n), count))
    return [SessionTask(a.question.format(s=s), v, s, a.name, i)
            for i in picks for s, a, v in [_facts()[i]]]


def attribute(name: str) -> Attribute:
    return next(a for a in ATTRIBUTES if a.name == name)


def fact_key(text: str) -> tuple[str, str] | None:
    """(service, attribute name) of the fact a memory states, or None for a text that states none."""
    for spec in ATTRIBUTES:
        found = spec.pattern().search(text)
        if found and found.group("s") in SERVICES:
            return found.group("s"), spec.name
    return None


# --- a stale memory: Cedar's database moved, and a newer memory says where ---

MOVED_SERVICE, MOVED_PORT, MOVED_SESSION = "Cedar", "6432", 1001


def moved_database() -> tuple[SessionTask, str]:
    """The question whose answer changed (with its new answer) and the newer memory that says so."""
    index = next(i for i, (s, a, _) in enumerate(_facts()) if s == MOVED_SERVICE and a.name == "port")
    spec = attribute("port")
    task = SessionTask(spec.question.format(s=MOVED_SERVICE), MOVED_PORT, MOVED_SERVICE, "port", index)
    update = (f"Session {MOVED_SESSION}: {MOVED_SERVICE}'s database moved to a new host; "
              f"{spec.fact.format(s=MOVED_SERVICE, v=MOVED_PORT)} now.")
    return task, update


# --- memory pollution: a wrong memory worded like the question that needs the right one ---

POLLUTED_TASK_INDEX = 3  # the task of the 100-memory store that the wrong memory shadows


def polluted_task() -> SessionTask:
    return session_tasks(100)[POLLUTED_TASK_INDEX]


def wrong_memory(session: int = 101) -> str:
    """A memory with the wrong value, worded so retrieval ranks it above the right one."""
    task = polluted_task()
    spec = attribute(task.attribute)
    wrong = next(v for v in spec.values if v != task.answer)
    asked = task.question.rstrip("?")
    return f"Session {session}: {spec.fact.format(s=task.service, v=wrong)} (noted while asking: {asked})."


@lru_cache(maxsize=1)
def retrieval_set() -> dict:
    """{'documents': [{id, kind, text}], 'queries': [{query, relevant}]}"""
    return json.loads(read_text("memory_retrieval.json"))


def all_texts() -> list[str]:
    """Every text chapter 13 embeds: retrieval documents and queries, memories, task questions."""
    data = retrieval_set()
    texts = [d["text"] for d in data["documents"]] + [q["query"] for q in data["queries"]]
    texts += session_memories(MAX_MEMORIES) + [wrong_memory(), moved_database()[1]]
    for n in (10, 100, MAX_MEMORIES):
        texts += [t.question for t in session_tasks(n)]
    texts += [a.question.format(s=s) for a in ATTRIBUTES for s in SERVICES]  # every later question there is
    return list(dict.fromkeys(texts))
