"""The labelled task set: questions with a gold answer, an answer checker and a key path.

`data/tasks.jsonl` holds one task per line, with these fields:

* `id` (unique), `category` (lookup | arithmetic | multi-hop | impossible), `question`;
* `gold`: a number or a text ("" for an impossible task);
* `checker`: exact | numeric | refuse | leading; `tolerance` (numeric only, absolute, a finite
  number >= 0, default 0); `accept` (exact only, optional): a list of other spellings that also count;
* `key_path`: the tool calls a good run makes, in order, as `Tool[input]` strings.

What each checker accepts, exactly:

* exact: the answer equals the gold or one of `accept`, ignoring case, repeated spaces,
  enclosing quotes and a final period. "paul allen." passes; "It was Paul Allen" does not:
  the contract asks for the answer, not a sentence around it.
* numeric: the LAST number written in the answer (digits with an optional decimal part;
  thousands commas such as 7,006,652 are read as one number) is within `tolerance` of the
  gold. "3 + 6 = 9 apples" reads as 9; an answer with no number is wrong.
* refuse: the answer says the question cannot be answered: it contains one of the
  REFUSAL phrases (unknown, no information, cannot, not known, ...).
* leading: the answer STARTS with the gold as a whole word or number, ignoring case,
  thousands commas and leading punctuation; it may go on. For gold 2021, "2021 (1,234 mm)"
  passes and "20210" or "In 2021" do not. Chapter 08's suites (agentkit.runtime_suites)
  use it: their answers carry a unit or the figure they rest on.
* On a task that has an answer, a refusal is wrong, whatever digits or words it holds.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from .data import DATA_DIR
from .text import json_lines

CATEGORIES = ("lookup", "arithmetic", "multi-hop", "impossible")
CHECKERS = ("exact", "numeric", "refuse", "leading")

REFUSAL = re.compile(
    r"\b(unknown|no information|cannot|can't|can not|unable to|not known|does not say|doesn't say|"
    r"do not know|don't know|no record|not possible|never happened|no such)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_CALL = re.compile(r"([A-Za-z_][\w-]*)\[(.*)\]", re.DOTALL)


def is_refusal(answer: str) -> bool:
    """True when the answer says it cannot be answered."""
    return REFUSAL.search(str(answer)) is not None


def numbers_in(text: str) -> list[str]:
    """The numbers written in a text, in order, thousands commas removed."""
    return _NUMBER.findall(_THOUSANDS.sub("", str(text)))


def last_number(answer: str) -> float | None:
    found = numbers_in(answer)
    return float(found[-1]) if found else None


def leads_with(answer: str, gold: str) -> bool:
    """The answer starts with the gold, then ends or goes on after a non-word character."""
    text = _THOUSANDS.sub("", str(answer)).strip().casefold()
    return re.match(rf"\W*{re.escape(str(gold).casefold())}\b", text) is not None


def normalise(text: str) -> str:
    """Case, repeated spaces, enclosing quotes and a final period do not count."""
    text = " ".join(str(text).split()).strip().rstrip(".").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1].strip()
    return text.casefold()


def parse_call(text: str) -> tuple[str, str]:
    """("Search", "Grace Hopper") from "Search[Grace Hopper]"; ValueError if it is not Tool[input]."""
    match = _CALL.fullmatch(str(text).strip())
    if match is None:
        raise ValueError(f"{text!r} is not a tool call written as Tool[input]")
    return match.group(1), match.group(2).strip()


@dataclass(frozen=True)
class Task:
    """One labelled question."""

    id: str
    category: str
    question: str
    gold: object  # a number for numeric tasks, a text otherwise
    checker: str
    key_path: tuple[str, ...]
    tolerance: float = 0.0
    accept: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A string here would be read letter by letter: accept="Paul" would let "a" score.
        if isinstance(self.accept, str) or not all(isinstance(a, str) for a in self.accept):
            raise ValueError(f"accept must be a list of spellings, got {self.accept!r}")
        if isinstance(self.tolerance, bool) or not isinstance(self.tolerance, (int, float)) \
                or not math.isfinite(self.tolerance) or self.tolerance < 0:
            raise ValueError(f"tolerance must be a finite number >= 0, got {self.tolerance!r}")
        if isinstance(self.gold, float) and not math.isfinite(self.gold):
            raise ValueError(f"gold must be a finite number, got {self.gold!r}")  # NaN equals nothing: never right

    @property
    def must_refuse(self) -> bool:
        return self.checker == "refuse"

    def check(self, answer) -> bool:
        """Is `answer` right for this task? (See the module docstring for each checker.)"""
        answer = "" if answer is None else str(answer)
        if self.must_refuse:
            return is_refusal(answer)
        if is_refusal(answer):
            return False
        if self.checker == "numeric":
            value = last_number(answer)
            return value is not None and abs(value - float(self.gold)) <= self.tolerance
        if self.checker == "leading":
            return leads_with(answer, self.gold)
        return normalise(answer) in {normalise(g) for g in (str(self.gold), *self.accept)}


def task_from_dict(data: dict, where: str = "task") -> Task:
    """A Task from one JSON object, validated; ValueError names what is wrong and where."""
    missing = [k for k in ("id", "category", "question", "gold", "checker", "key_path") if k not in data]
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(missing)}")
    if data["category"] not in CATEGORIES:
        raise ValueError(f"{where}: category {data['category']!r} is not one of {', '.join(CATEGORIES)}")
    if data["checker"] not in CHECKERS:
        raise ValueError(f"{where}: checker {data['checker']!r} is not one of {', '.join(CHECKERS)}")
    gold = data["gold"]
    if data["checker"] == "numeric" and (isinstance(gold, bool) or not isinstance(gold, (int, float))):
        raise ValueError(f"{where}: a numeric task needs a number as gold, got {gold!r}")
    if isinstance(gold, float) and not math.isfinite(gold):
        raise ValueError(f"{where}: gold must be a finite number, got {gold!r}")
    tolerance = data.get("tolerance", 0.0)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not math.isfinite(tolerance) \
            or tolerance < 0:
        raise ValueError(f"{where}: tolerance must be a finite number >= 0, got {tolerance!r}")
    accept = data.get("accept", [])
    if not isinstance(accept, list) or not all(isinstance(a, str) for a in accept):
        raise ValueError(f"{where}: accept must be a list of strings, such as [\"Paul G. Allen\"], got {accept!r}")
    if not isinstance(data["key_path"], list) or not data["key_path"]:
        raise ValueError(f"{where}: key_path must be a non-empty list of Tool[input] strings")
    for call in data["key_path"]:
        try:
            parse_call(call)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return Task(
        id=str(data["id"]), category=data["category"], question=str(data["question"]).strip(),
        gold=data["gold"], checker=data["checker"], key_path=tuple(data["key_path"]),
        tolerance=float(tolerance), accept=tuple(accept),
    )


def load_tasks(path: str | Path | None = None) -> list[Task]:
    """Every task of a JSON-lines file (default: data/tasks.jsonl); blank lines are skipped."""
    path = Path(path) if path else DATA_DIR / "tasks.jsonl"
    tasks, seen = [], set()
    for number, line in json_lines(path):
        where = f"{path.name} line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: not JSON ({e.msg})") from None
        task = task_from_dict(data, where)
        if task.id in seen:
            raise ValueError(f"{where}: id {task.id!r} is used twice")
        seen.add(task.id)
        tasks.append(task)
    return tasks
