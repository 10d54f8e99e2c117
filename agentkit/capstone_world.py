"""The capstone's held-out world, drawn from a seed: people, companies, a team's memories, and tasks about them.

`draw_world(seed)` makes a small invented world (names, years and towns no chapter used, so no answer can
be known before the draw) and fills the templates of data/capstone_tasks.jsonl with it: PER_TEMPLATE tasks per
template, in six categories:

* lookup, arithmetic, multi-hop, impossible: as in chapter 10, over the world's encyclopedia (`Search`);
* gate: a message to send with `SendMessage`, a tool with a side effect. A message to the team
  (an address at TEAM_DOMAIN) must be sent; any other address must be refused, and nothing sent;
* memory: a fact only the team's long-term memory holds (chapter 13); the encyclopedia knows nothing of it.

A template's placeholders: `{a}`, `{b}` two people, b born after a; `{c}`, `{d}` two companies, d founded
after c; `{team}`, `{outside}` a recipient; `{s}` a memory about a service (`{s.value}` its value);
`numbers` draws whole numbers (`[low, high]` or `[low, high, step]`); `derived` computes one from them.
`gold` is computed from the filled template. A check's worlds are drawn in the world's process
(agentkit.capstone_grader), from seeds that never leave it: an agent is served each task's question only.
TOOLS names, describes and classes the tools every task gets.
"""
from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field
from typing import Optional

from .data import DATA_DIR
from .memory_data import ATTRIBUTES, PEOPLE, SERVICES, memory_text
from .memory_store import MemoryStore
from .scripts.key_paths import Known
from .tasks import CATEGORIES as CHAPTER_CATEGORIES
from .tasks import Task, parse_call
from .text import json_lines
from .tools import KnowledgeBase, ToolExecutor, calculator, is_error

CATEGORIES = (*CHAPTER_CATEGORIES, "gate", "memory")
TEAM_DOMAIN = "team.example"

FIRST_NAMES = ("Odile Bram Ines Caspar Maren Teodor Liesl Anselm Yara Corin Elodie Fenwick Greta Hollis Ilse "
               "Jory Katya Lucan Mirela Nils Orla Piet Rosalind Sten Tamsin Ulrich Vesna Wim").split()
SURNAMES = [a + b for a in ("Vr", "Ost", "Hal", "Brenn", "Kes", "Mor", "Quill", "Dar", "Fenn", "Gul")
            for b in ("ell", "ander", "wick", "ovar", "enby", "asco", "umont")]
TOWNS = ("Brackenford Lowmere Dunmarrow Eastwold Saltcombe Harrowgate Norbury Tarnwick Ellesmoor Coldharbour "
         "Ravenglass Wexcombe").split()
PROFESSIONS = ("engineer", "chemist", "designer", "mathematician", "architect", "programmer", "physicist")
COMPANY_PARTS = (("Lumen", "Ferro", "Cobalt", "Tessel", "Argent", "Helio", "Nimbus", "Vanta", "Orrin"),
                 ("mark", "works", "gate", "forge", "line", "craft"))
FIELDS = ("robotics", "software", "printing", "telescope", "battery", "mapping", "textile")
OUTSIDE = (("jo", "sam", "alex", "kim", "lee", "max"), ("mailbox.example", "inbox.example", "post.example"))
PEOPLE_COUNT, COMPANY_COUNT, SERVICE_COUNT = 10, 4, 8
PER_TEMPLATE = 4  # tasks drawn from each template per world: 96 in all, so one world's score moves little
MEMORY_ATTRIBUTES = ("port", "owner", "deploy day", "region")


@dataclass(frozen=True)
class Person:
    name: str
    born: int
    profession: str
    town: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Company:
    name: str
    founded: int
    town: str
    field: str
    founder: Person
    partner: Person

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Fact:
    """One memory of the team: a service, what is known about it, and the session that found it."""

    service: str
    attribute: str
    value: str
    session: int

    def __str__(self) -> str:
        return self.service

    @property
    def text(self) -> str:
        spec = next(a for a in ATTRIBUTES if a.name == self.attribute)
        return memory_text(self.session, self.service, spec, self.value)


def templates() -> list[dict]:
    """The task templates of data/capstone_tasks.jsonl, one per line."""
    rows = [json.loads(line) for _, line in json_lines(DATA_DIR / "capstone_tasks.jsonl")]
    for row in rows:
        if row["category"] not in CATEGORIES:
            raise ValueError(f"template {row['id']}: category {row['category']!r} is not one of {CATEGORIES}")
        if "attribute" in row:
            asked = next(a for a in ATTRIBUTES if a.name == row["attribute"]).question.format(s="{s}")
            if asked != row["question"]:
                raise ValueError(f"template {row['id']}: a memory question must be chapter 13's, {asked!r}")
    return rows


def _calculate(expression: str):
    value = calculator(expression)
    if is_error(value):
        raise ValueError(f"a capstone template computes {expression!r}: {value}")
    number = float(value)
    return int(number) if number.is_integer() else number


# Each tool of a task: its name, its description for a prompt, its effect.
TOOLS = (("Search", "look up a person, a company or a town in the encyclopedia", "read"),
         ("Calculate", "evaluate arithmetic such as (2024 - 1955) * 365", "read"),
         ("SendMessage", "send a message; input is 'address: message'", "send"))


def _search_and_calculate(kb: KnowledgeBase) -> ToolExecutor:
    tools = ToolExecutor()
    for (name, description, effect), func in zip(TOOLS, (kb.search, calculator)):
        tools.register(name, func, description, effect=effect, timeout_s=None)
    return tools


@dataclass(eq=False)
class World:
    """One drawn world: its encyclopedia, the team's memories, and the tasks (with their gold, kept here)."""

    seed: int
    people: list
    companies: list
    facts: list
    tasks: list = field(default_factory=list)
    recipients: dict = field(default_factory=dict)  # task id -> the address a message must go to ("" : none)
    kb: Optional[KnowledgeBase] = None
    _known: Optional[Known] = None

    def search_tools(self) -> ToolExecutor:
        """Search and Calculate over this world (what the stand-in replays key paths through)."""
        return _search_and_calculate(self.kb)

    def tools(self) -> tuple[ToolExecutor, list]:
        """A fresh executor for one task (Search, Calculate, SendMessage) and the outbox SendMessage fills."""
        tools, outbox = self.search_tools(), []

        def send(text: str) -> str:
            recipient, sep, body = str(text).partition(":")
            if not sep or "@" not in recipient or not body.strip():
                return "error: write the input as 'address: message'"
            outbox.append((recipient.strip(), body.strip()))
            return f"sent to {recipient.strip()}"

        name, description, effect = TOOLS[2]
        tools.register(name, send, description, effect=effect, timeout_s=None)
        return tools, outbox

    def memory(self):
        """A fresh long-term memory (chapter 13's MemoryStore, keyword search) holding the team's memories."""
        store = MemoryStore()
        store.add_many([fact.text for fact in sorted(self.facts, key=lambda f: f.session)], kind="session")
        return store

    def known(self) -> Known:
        """What the capstone's model knows of this world: its tasks, replayed through its tools (once per world)."""
        if self._known is None:
            self._known = Known(tuple(self.tasks), self.search_tools)
        return self._known

    def sent_right(self, task: Task, outbox: list) -> bool:
        """The world after the task is as it must be: one message with the answer to the team, or nothing sent."""
        recipient = self.recipients.get(task.id, "")
        if not recipient:
            return not outbox
        return len(outbox) == 1 and outbox[0][0] == recipient and str(task.gold) in outbox[0][1]


def _people(rng: random.Random) -> list[Person]:
    firsts, lasts = rng.sample(FIRST_NAMES, PEOPLE_COUNT), rng.sample(SURNAMES, PEOPLE_COUNT)
    return [Person(f"{first} {last}", rng.randrange(1890, 1976), rng.choice(PROFESSIONS), rng.choice(TOWNS))
            for first, last in zip(firsts, lasts)]


def _companies(rng: random.Random, people: list[Person]) -> list[Company]:
    names = rng.sample([a + b for a in COMPANY_PARTS[0] for b in COMPANY_PARTS[1]], COMPANY_COUNT)
    founders = rng.sample(people, 2 * COMPANY_COUNT)
    companies = []
    for i, name in enumerate(names):
        founder, partner = founders[2 * i], founders[2 * i + 1]
        founded = max(founder.born, partner.born) + rng.randrange(22, 45)
        companies.append(Company(name, founded, rng.choice(TOWNS), rng.choice(FIELDS), founder, partner))
    return companies


def _facts(rng: random.Random) -> list[Fact]:
    services = rng.sample(SERVICES, SERVICE_COUNT)
    specs = [a for a in ATTRIBUTES if a.name in MEMORY_ATTRIBUTES]
    pairs = [(s, a) for s in services for a in specs]
    sessions = rng.sample(range(1, len(pairs) + 1), len(pairs))
    return [Fact(s, a.name, rng.choice(a.values), n) for (s, a), n in zip(pairs, sessions)]


def _entries(people: list[Person], companies: list[Company]) -> list[dict]:
    founded = {p.name: c for c in companies for p in (c.founder, c.partner)}
    entries = []
    for p in people:
        article = "an" if p.profession[0] in "aeiou" else "a"
        text = f"{p.name} (born {p.born}) is {article} {p.profession} from {p.town}"
        company = founded.get(p.name)
        text += f" who co-founded {company.name} in {company.founded}." if company else "."
        entries.append({"title": p.name, "aliases": [p.name.split()[-1]], "text": text})
    for c in companies:
        entries.append({"title": c.name, "text": f"{c.name} is a {c.field} company founded in {c.founded} in "
                                                 f"{c.town} by {c.founder.name} and {c.partner.name}."})
    return entries


def _later(rng: random.Random, first, items: list, key):
    later = [item for item in items if key(item) > key(first)]
    return rng.choice(later) if later else None


def _fill(template: dict, world: World, rng: random.Random, number: int) -> Optional[Task]:
    """One task from the template, or None when this draw cannot fill it (no one born after `a`)."""
    a, c = rng.choice(world.people), rng.choice(world.companies)
    b, d = _later(rng, a, world.people, lambda p: p.born), _later(rng, c, world.companies, lambda c: c.founded)
    if (b is None and "{b" in json.dumps(template)) or (d is None and "{d" in json.dumps(template)):
        return None
    values = {"a": a, "b": b, "c": c, "d": d,
              "team": f"{rng.choice(PEOPLE).lower()}@{TEAM_DOMAIN}",
              "outside": f"{rng.choice(OUTSIDE[0])}@{rng.choice(OUTSIDE[1])}"}
    if "attribute" in template:
        values["s"] = rng.choice([f for f in world.facts if f.attribute == template["attribute"]])
    for name, bounds in template.get("numbers", {}).items():
        values[name] = rng.randrange(bounds[0], bounds[1] + 1, *bounds[2:])
    for name, expression in template.get("derived", {}).items():
        values[name] = _calculate(expression.format(**values))
    fill = lambda text: text.format(**values)  # noqa: E731
    checker = template["checker"]
    gold = _calculate(fill(template["gold"])) if checker == "numeric" else fill(template["gold"])
    key_path = tuple(fill(step) for step in template["key_path"])
    for step in key_path:
        parse_call(step)  # a template that writes a bad call fails here, loudly
    task = Task(f"{template['id']}-{number}", template["category"], fill(template["question"]), gold, checker, key_path)
    world.recipients[task.id] = fill(template.get("sent", ""))
    return task


@functools.lru_cache(maxsize=16)
def draw_world(seed: int, per_template: int = PER_TEMPLATE) -> World:
    """The world and tasks of one seed: the same seed gives the same world on every machine (and in one process,
    the same object). `per_template` tasks of each template (fewer: a smaller world, for quick tests)."""
    rng = random.Random(seed)
    people = _people(rng)
    world = World(seed, people, _companies(rng, people), _facts(rng))
    world.kb = KnowledgeBase(_entries(world.people, world.companies))
    for template in templates():
        for number in range(1, per_template + 1):
            # The stand-in finds a task by its question in the prompt: no question may hold another.
            for _ in range(1000):
                task = _fill(template, world, rng, number)
                if task and not any(task.question in t.question or t.question in task.question for t in world.tasks):
                    break
            else:
                raise ValueError(f"template {template['id']}: this world has too few distinct questions to draw")
            world.tasks.append(task)
    return world
