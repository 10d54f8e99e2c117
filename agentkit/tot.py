"""Tree of Thoughts: a beam search over thoughts, on Game of 24.

A thought is one step "a op b = c". The search keeps a beam of nodes (numbers left, steps
so far) and, level by level, to `depth` levels:

1. propose: one call per node in the beam (the numbers, "propose up to k next steps").
   A reply line counts as a thought if it reads "a op b = c" with a and b among the node's
   numbers; the first k distinct ones become children, every other line is dropped (and
   counted). The child's numbers are the parent's without a and b, plus c as the model
   wrote it: the arithmetic is not checked here.
2. evaluate: `votes` calls per child ("can these numbers make 24? sure, likely or
   impossible"), each with its judge number in the prompt, so each vote is its own request.
   A child's score is the mean of its votes (sure 1, likely 0.5, impossible 0; a reply with
   no label counts 0). votes=0 means no evaluator: children keep their proposal order.
3. keep the best b children (ties keep proposal order); the others are pruned.

So every expanded node costs 1 + children * votes calls: 1 + k * votes when the proposer
writes k usable steps. A node with one number left is not expanded.

The answer: each kept node with one number left is rebuilt into an expression from its
steps and checked by `game24.verify`, exactly, against the puzzle. The search is solved
only if one passes; a node that claims 24 but fails (a wrong sum on the way) is listed in
`rejected` with the reason. Calls and tokens are read from the LLMs' ledgers (one search
at a time per LLM object).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional

from .game24 import NUMBER, check_puzzle, fmt, parse_number, remove_pair, verify
from .llm import CallRecord, ledger

PROPOSE_PROMPT = ("Game of 24. Numbers: {numbers}\n"
                  "Propose up to {k} next steps, one per line, as: a op b = c\n"
                  "Use two of the numbers and one of + - * /. Example for 2 3 4: 2 * 3 = 6")
VALUE_PROMPT = ("Game of 24. Numbers: {numbers}\n"
                "Can these numbers, each used once, make 24 with + - * /?\n"
                "Judge {vote} of {votes}: answer sure, likely or impossible.")
PROPOSE_MARKER = "Propose up to"
VALUE_MARKER = "answer sure, likely or impossible"

VALUES = {"sure": 1.0, "likely": 0.5, "impossible": 0.0}
NO_LABEL = "?"

_STEP = re.compile(rf"({NUMBER})\s+([-+*/×÷])\s+({NUMBER})\s*=\s*({NUMBER})")
_LABEL = re.compile(r"\b(sure|likely|impossible)\b", re.IGNORECASE)
_ASCII_OP = {"×": "*", "÷": "/"}


# Prompts and parses are pure functions of their text, and a search meets the same states
# again and again: remembering them keeps a 100-puzzle sweep fast.
@functools.lru_cache(maxsize=50_000)
def _propose_text(numbers: tuple, k: int) -> str:
    return PROPOSE_PROMPT.format(numbers=" ".join(numbers), k=k)


@functools.lru_cache(maxsize=50_000)
def _value_text(numbers: tuple, vote: int, votes: int) -> str:
    return VALUE_PROMPT.format(numbers=" ".join(numbers), vote=vote, votes=votes)


def propose_messages(numbers, k: int) -> list[dict]:
    return [{"role": "user", "content": _propose_text(by_value(numbers), k)}]


def value_messages(numbers, vote: int, votes: int) -> list[dict]:
    return [{"role": "user", "content": _value_text(by_value(numbers), vote, votes)}]


@dataclass(frozen=True)
class Thought:
    """One parsed step, with the result as the model wrote it."""

    a: str  # numbers in lowest terms, as the prompts write them: "3", "24/5"
    op: str
    b: str
    c: str

    def __str__(self) -> str:
        return f"{self.a} {self.op} {self.b} = {self.c}"


def parse_thoughts(reply: str, numbers, k: int) -> tuple[list[Thought], list[str]]:
    """(up to k distinct usable steps, the lines dropped). Never raises."""
    thoughts, dropped = _parse_thoughts(str(reply), by_value(numbers), k)
    return list(thoughts), list(dropped)


@functools.lru_cache(maxsize=50_000)
def _parse_thoughts(reply: str, numbers: tuple, k: int) -> tuple[tuple, tuple]:
    thoughts: list[Thought] = []
    dropped: list[str] = []
    for line in str(reply).splitlines():
        if not line.strip():
            continue
        match = _STEP.search(line)
        values = [_canonical(match.group(i)) for i in (1, 3, 4)] if match else [None]
        if None in values or remove_pair(numbers, values[0], values[1]) is None:
            dropped.append(line.strip())
            continue
        thought = Thought(values[0], _ASCII_OP.get(match.group(2), match.group(2)), values[1], values[2])
        if thought in thoughts or len(thoughts) == k:
            dropped.append(line.strip())
            continue
        thoughts.append(thought)
    return tuple(thoughts), tuple(dropped)


@functools.lru_cache(maxsize=50_000)
def _left(numbers: tuple, thought: Thought) -> tuple:
    """The numbers after the step, with its result as the model wrote it."""
    return by_value(remove_pair(numbers, thought.a, thought.b) + [thought.c])


def by_value(numbers) -> tuple[str, ...]:
    """Numbers in lowest terms, smallest first."""
    return tuple(sorted((_canonical(str(n)) for n in numbers), key=_value))


@functools.lru_cache(maxsize=10_000)
def _canonical(text: str) -> Optional[str]:
    """A number as the prompts write it ("2/4" -> "1/2"), or None if the text is not one."""
    value = parse_number(text)
    return None if value is None else fmt(value)


@functools.lru_cache(maxsize=10_000)
def _value(text: str) -> Fraction:
    return Fraction(text)


def parse_label(reply: str) -> str:
    """The first of sure / likely / impossible in the reply, or "?" if there is none."""
    return _parse_label(str(reply))


@functools.lru_cache(maxsize=1_000)
def _parse_label(reply: str) -> str:
    match = _LABEL.search(reply)
    return match.group(1).lower() if match else NO_LABEL


def expression_of(puzzle, thoughts: list[Thought]) -> str:
    """The puzzle's numbers combined as the steps say ("" if a step uses a number not there)."""
    pool = [(str(int(n)), str(int(n))) for n in puzzle]
    for t in thoughts:
        parts = []
        for value in (t.a, t.b):
            index = next((i for i, (v, _) in enumerate(pool) if v == value), None)
            if index is None:
                return ""
            parts.append(pool.pop(index)[1])
        pool.append((t.c, f"({parts[0]} {t.op} {parts[1]})"))
    text = pool[0][1] if len(pool) == 1 else ""
    return text[1:-1] if text.startswith("(") else text


@dataclass
class Node:
    """A state of the search: the numbers left after the steps from the root."""

    id: int
    parent: Optional[int]
    depth: int
    numbers: tuple[str, ...]
    thought: Optional[Thought] = None
    labels: tuple[str, ...] = ()
    score: Optional[float] = None
    kept: bool = False
    expanded: bool = False
    verdict: str = ""  # for a kept node with one number left: "verified", or why the verifier said no

    @property
    def label(self) -> str:
        """The node as a diagram shows it: its step and the numbers left."""
        head = f"{self.thought}\n" if self.thought else "start\n"
        return head + f"[{' '.join(self.numbers)}]"


@dataclass
class ToTResult:
    """One puzzle's search: every node, the calls it made, and the verified answer (or none)."""

    puzzle: tuple[int, ...]
    k: int
    b: int
    depth: int
    votes: int
    nodes: list[Node] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    answer: Optional[str] = None
    answer_node: Optional[int] = None
    rejected: list[tuple[str, str]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def solved(self) -> bool:
        return self.answer is not None

    @property
    def claimed(self) -> bool:
        """A kept node ends at 24 as the model wrote it, verified or not."""
        return any(n.kept and n.numbers == ("24",) for n in self.nodes)

    @property
    def tokens(self) -> int:
        return sum(c.total_tokens for c in self.calls)

    def thoughts_to(self, node: Node) -> list[Thought]:
        """The steps from the root to `node`, in order."""
        steps, by_id = [], {n.id: n for n in self.nodes}
        while node.thought is not None:
            steps.append(node.thought)
            node = by_id[node.parent]
        return steps[::-1]

    def level(self, depth: int) -> list[Node]:
        return [n for n in self.nodes if n.depth == depth]


def _check_settings(k: int, b: int, depth: int, votes: int) -> None:
    for name, value, low in (("k", k, 1), ("b", b, 1), ("depth", depth, 1), ("votes", votes, 0)):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be a whole number of at least {low}, got {value!r}")


class TreeOfThoughts:
    """Beam search over Game of 24 steps. `evaluator` defaults to the proposer's LLM."""

    def __init__(self, llm, evaluator=None, *, k: int = 3, b: int = 3, depth: int = 3, votes: int = 1,
                 propose_temperature: float = 0.0, vote_temperature: float = 0.7) -> None:
        _check_settings(k, b, depth, votes)
        self.llm, self.evaluator = llm, evaluator if evaluator is not None else llm
        self.k, self.b, self.depth, self.votes = k, b, depth, votes
        self.propose_temperature, self.vote_temperature = propose_temperature, vote_temperature

    def solve(self, puzzle) -> ToTResult:
        """Search one puzzle; ValueError (from `game24.check_puzzle`) if it is not four whole numbers >= 0."""
        puzzle = check_puzzle(puzzle)
        ledgers = [ledger(self.llm)] + ([ledger(self.evaluator)] if self.evaluator is not self.llm else [])
        starts = [len(calls) for calls in ledgers]
        result = ToTResult(puzzle, self.k, self.b, self.depth, self.votes)
        root = Node(0, None, 0, by_value(puzzle), kept=True)
        result.nodes.append(root)
        beam = [root]
        for depth in range(1, self.depth + 1):
            children = []
            for node in (n for n in beam if len(n.numbers) > 1):
                children += self._expand(node, depth, result)
            if not children:
                break
            ranked = sorted(children, key=lambda n: -n.score) if self.votes else children
            beam = ranked[:self.b]
            for node in beam:
                node.kept = True
        result.calls = [c for calls, start in zip(ledgers, starts) for c in calls[start:]]
        self._verify(result)
        return result

    def _expand(self, node: Node, depth: int, result: ToTResult) -> list[Node]:
        """Propose up to k steps from `node`, then score each new node with `votes` calls."""
        node.expanded = True
        # node.numbers are already in lowest terms and sorted: the cached helpers take them as they are.
        prompt = [{"role": "user", "content": _propose_text(node.numbers, self.k)}]
        reply = self.llm.think(prompt, temperature=self.propose_temperature)
        thoughts, dropped = _parse_thoughts(str(reply), node.numbers, self.k)
        result.dropped += dropped
        children = []
        for thought in thoughts:
            child = Node(len(result.nodes), node.id, depth, _left(node.numbers, thought), thought)
            labels = tuple(
                parse_label(self.evaluator.think(
                    [{"role": "user", "content": _value_text(child.numbers, vote, self.votes)}],
                    temperature=self.vote_temperature))
                for vote in range(1, self.votes + 1)
            )
            child.labels = labels
            child.score = sum(VALUES.get(label, 0.0) for label in labels) / len(labels) if labels else None
            result.nodes.append(child)
            children.append(child)
        return children

    def _verify(self, result: ToTResult) -> None:
        """The answer is the first kept one-number node whose expression verifies exactly."""
        for node in result.nodes:
            if not node.kept or len(node.numbers) != 1 or node.thought is None:
                continue
            expression = expression_of(result.puzzle, result.thoughts_to(node))
            verdict = verify(expression, result.puzzle)
            node.verdict = "verified" if verdict.ok else verdict.reason
            if verdict.ok and result.answer is None:
                result.answer, result.answer_node = expression, node.id
            elif not verdict.ok and node.numbers == ("24",):
                result.rejected.append((expression, verdict.reason))


def calls_per_node(k: int, votes: int) -> int:
    """Calls to expand one node whose proposer wrote k usable steps: 1 proposal + k * votes judgements."""
    return 1 + k * votes


@dataclass
class Summary:
    """A batch of searches, in the numbers a table shows (all read from the results' ledger slices)."""

    puzzles: int
    solved: int
    claimed_not_verified: int
    calls: int
    tokens: int

    @property
    def success_rate(self) -> float:
        return self.solved / self.puzzles if self.puzzles else 0.0

    @property
    def calls_per_puzzle(self) -> float:
        return self.calls / self.puzzles if self.puzzles else 0.0

    @property
    def tokens_per_puzzle(self) -> float:
        return self.tokens / self.puzzles if self.puzzles else 0.0


def summarize(results: list[ToTResult]) -> Summary:
    return Summary(
        puzzles=len(results),
        solved=sum(r.solved for r in results),
        claimed_not_verified=sum(r.claimed and not r.solved for r in results),
        calls=sum(len(r.calls) for r in results),
        tokens=sum(r.tokens for r in results),
    )


def run_puzzles(llm, puzzles, evaluator=None, **settings) -> list[ToTResult]:
    """One search per puzzle (each a list of four numbers, or a data-file record) with one setting."""
    search = TreeOfThoughts(llm, evaluator, **settings)
    return [search.solve(p["numbers"] if isinstance(p, dict) else p) for p in puzzles]
