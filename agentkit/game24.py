"""Game of 24 with exact arithmetic: the task that chapter 7's Tree of Thoughts searches.

Four numbers, each used exactly once, with + - * / and parentheses, must make 24. Every
value is a `fractions.Fraction`, never a float, so 8 / (3 - 8/3) is exactly 24.

- `check_puzzle(numbers)` is what a puzzle is: four whole numbers, each at least 0 (4.9 or
  2.5 is not read as 4 or 2; a negative number could never be written in an answer). The
  search refuses any other puzzle with that error; `verify` says so in its verdict (it also
  judges fewer or more numbers, whole and at least 0).
- `verify(expression, numbers)` is the judge: it accepts only integer literals joined by
  + - * / and parentheses (x and ÷ are read as * and /), checks that the literals are
  exactly the puzzle's numbers and that the value is exactly 24. It never raises and never
  runs the text: it walks Python's parse tree of it.
- `legal_moves(numbers)` lists every next step "a op b = c" with a non-negative result.
- `can_make_24(numbers)` answers whether the numbers left can still make 24 (memoised).
- `count_ways` and `find_solution` are what `data/make_game24.py` writes into
  `data/game24.jsonl`; `load_puzzles` and `hardest` read it back.
"""
from __future__ import annotations

import ast
import bisect
import functools
import json
import operator
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Optional

from .data import DATA_DIR
from .text import json_lines

TARGET = Fraction(24)
DATA_FILE = DATA_DIR / "game24.jsonl"
MAX_EXPRESSION_CHARS = 200  # a longer "expression" is not an answer to a four-number puzzle

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
_AST_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def fmt(value: Fraction) -> str:
    """A number as the prompts write it: 3, 24/5, -1/3."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def fmt_all(numbers) -> str:
    return " ".join(fmt(Fraction(n)) for n in numbers)


# A number never starts right after a digit: a search then skips the inside of a long digit run
# instead of retrying from each of its digits (quadratic). The leftmost match is the same.
NUMBER = r"-?(?<!\d)\d+(?:/\d+)?"
_NUMBER = re.compile(NUMBER)
MAX_NUMBER_CHARS = 100  # no step of a four-number puzzle needs more; Python refuses ints over 4,300 digits


def parse_number(text: str) -> Optional[Fraction]:
    """"24/5" -> Fraction(24, 5); None for anything else (a zero denominator, over MAX_NUMBER_CHARS)."""
    text = text.strip()
    if len(text) > MAX_NUMBER_CHARS or not _NUMBER.fullmatch(text):
        return None
    try:
        return Fraction(text)
    except (ZeroDivisionError, ValueError):  # "3/0", "3/00"
        return None


PUZZLE_SIZE = 4


def check_puzzle(numbers, size: Optional[int] = PUZZLE_SIZE) -> tuple[int, ...]:
    """The puzzle as ints; ValueError saying what is wrong unless it is `size` (None: one or more) whole numbers >= 0."""
    def refuse(why: str):
        return ValueError(f"a Game of 24 puzzle is {size or 'some'} whole numbers, each at least 0, such as "
                          f"(4, 7, 8, 8); got {numbers!r}: {why}")

    if isinstance(numbers, (str, bytes)) or not hasattr(numbers, "__iter__"):
        raise refuse("not a list of numbers")
    values = list(numbers)
    if len(values) != size if size is not None else not values:
        raise refuse(f"{len(values)} numbers")
    puzzle = []
    for n in values:
        if isinstance(n, str) and re.fullmatch(r"\s*\d{1,9}\s*", n):
            n = int(n)
        if isinstance(n, bool) or not isinstance(n, (int, float, Fraction)) or n != n or n in (float("inf"), float("-inf")):
            raise refuse(f"{n!r} is not a whole number")
        if n != int(n):
            raise refuse(f"{n!r} is not a whole number")
        if n < 0:
            raise refuse(f"{n!r} is negative (an answer could not write it)")
        puzzle.append(int(n))
    return tuple(puzzle)


# --- the judge -------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What `verify` found: ok only if the numbers match and the value is exactly 24."""

    ok: bool
    reason: str
    value: Optional[Fraction] = None


class _Rejected(Exception):
    pass


def _evaluate(node, leaves: list[int]) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        leaves.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _AST_OPS:
        left, right = _evaluate(node.left, leaves), _evaluate(node.right, leaves)
        if isinstance(node.op, ast.Div) and right == 0:
            raise _Rejected("it divides by zero")
        return OPS[_AST_OPS[type(node.op)]](left, right)
    raise _Rejected(f"it contains {type(node).__name__}, not only whole numbers and + - * /")


def verify(expression: str, numbers) -> Verdict:
    """Is `expression` a solution of the puzzle `numbers`? Exact; never raises."""
    try:
        puzzle = tuple(sorted(check_puzzle(numbers, size=None)))  # the judge also checks partial puzzles
    except ValueError as e:
        return Verdict(False, str(e))
    return _verify(str(expression), puzzle)


@functools.lru_cache(maxsize=20_000)
def _verify(expression: str, numbers: tuple[int, ...]) -> Verdict:
    text = expression.replace("×", "*").replace("÷", "/").strip()
    if not text:
        return Verdict(False, "there is no expression")
    if len(text) > MAX_EXPRESSION_CHARS:
        return Verdict(False, f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
        leaves: list[int] = []
        value = _evaluate(tree.body, leaves)
    except _Rejected as e:
        return Verdict(False, str(e))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return Verdict(False, f"it is not an arithmetic expression ({type(e).__name__})")
    if sorted(leaves) != list(numbers):
        return Verdict(False, f"it uses {sorted(leaves)}, not the puzzle's {list(numbers)}", value)
    if value != TARGET:
        return Verdict(False, f"it makes {fmt(value)}, not 24", value)
    return Verdict(True, "uses each number once and makes exactly 24", value)


# --- moves and reachability --------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """One step: a op b = c, and the numbers left after it."""

    a: Fraction
    op: str
    b: Fraction
    c: Fraction
    left: tuple[Fraction, ...]

    def __str__(self) -> str:
        return f"{fmt(self.a)} {self.op} {fmt(self.b)} = {fmt(self.c)}"


def remove_pair(numbers, a: Fraction, b: Fraction) -> Optional[list[Fraction]]:
    """The numbers without one a and one b, or None if they are not both there."""
    rest = list(numbers)
    for x in (a, b):
        if x not in rest:
            return None
        rest.remove(x)
    return rest


def _pair_results(a: Fraction, b: Fraction):
    """(swapped, op, result) for each way to combine a and b; subtraction and division both ways.

    `swapped` means the step reads "b op a".
    """
    yield False, "+", a + b
    yield False, "*", a * b
    yield False, "-", a - b
    yield True, "-", b - a
    if b:
        yield False, "/", a / b
    if a:
        yield True, "/", b / a


def legal_moves(numbers) -> list[Move]:
    """Every distinct next step with a non-negative result, in a fixed order."""
    values = sorted(n if type(n) is Fraction else Fraction(n) for n in numbers)  # a Fraction is immutable: reuse it
    pairs, moves = set(), []
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            a, b = values[j], values[i]  # the larger first: 13 - 4, not 4 - 13
            key = (a.numerator, a.denominator, b.numerator, b.denominator)  # ints hash fast; Fractions do not
            if key in pairs:  # the same two values again (4 4 7: the two 4s with the 7)
                continue
            pairs.add(key)
            twins = a == b
            rest = values[:i] + values[i + 1:j] + values[j + 1:]  # still sorted
            for swapped, op, c in _pair_results(a, b):
                # c.numerator carries the sign: an int comparison, not a (slow) Fraction one.
                if c.numerator < 0 or (swapped and twins):  # b - a and b / a say nothing new when a == b
                    continue
                x, y = (b, a) if swapped else (a, b)
                left = rest.copy()
                bisect.insort(left, c)  # as sorted(rest + [c]), with fewer (slow) Fraction comparisons
                moves.append(Move(x, op, y, c, tuple(left)))
    return moves


@functools.lru_cache(maxsize=200_000)
def _ways(values: tuple[Fraction, ...], integers_only: bool) -> int:
    if len(values) == 1:
        return int(values[0] == TARGET)
    total, pairs = 0, set()
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            if (values[i], values[j]) in pairs:  # the same two values picked again
                continue
            pairs.add((values[i], values[j]))
            rest = values[:i] + values[i + 1:j] + values[j + 1:]
            done = set()
            for swapped, op, c in _pair_results(values[i], values[j]):
                key = (values[j], op, values[i]) if swapped else (values[i], op, values[j])
                if key in done or (integers_only and c.denominator != 1):
                    continue
                done.add(key)
                total += _ways(tuple(sorted(rest + (c,))), integers_only)
    return total


def count_ways(numbers, integers_only: bool = False) -> int:
    """Derivations that end at 24: three times, pick two values and an operation.

    Picking the same two values twice counts once; a - b and b - a are two ways. With
    `integers_only`, every intermediate result must be a whole number.
    """
    return _ways(tuple(sorted(Fraction(n) for n in numbers)), integers_only)


def can_make_24(numbers) -> bool:
    """Can these numbers, each used once, still make exactly 24? (Stops at the first way.)"""
    values = [Fraction(n) for n in numbers]
    return _reach([(v.numerator, v.denominator) for v in values])


def _reach(values: list[tuple[int, int]]) -> bool:
    # p/q pairs in plain integers, not reduced: exact, and much faster than Fraction here.
    if len(values) == 1:
        p, q = values[0]
        return q != 0 and p == 24 * q
    if len(values) == 2:  # the last step, written out: a/b and c/d
        (a, b), (c, d) = values
        goal = 24 * b * d
        return (a * d + c * b == goal or a * c == goal or a * d - c * b == goal or c * b - a * d == goal
                or (c != 0 and a * d == 24 * b * c) or (a != 0 and c * b == 24 * d * a))
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            rest = values[:i] + values[i + 1:j] + values[j + 1:]
            (a, b), (c, d) = values[i], values[j]
            results = [(a * d + c * b, b * d), (a * c, b * d), (a * d - c * b, b * d), (c * b - a * d, b * d)]
            if c:
                results.append((a * d, b * c))  # (a/b) / (c/d)
            if a:
                results.append((c * b, d * a))  # (c/d) / (a/b)
            if any(_reach(rest + [r]) for r in results):
                return True
    return False


def find_solution(numbers, integers_only: bool = False) -> Optional[str]:
    """One expression that makes 24 from `numbers`, or None."""
    def search(items):
        if len(items) == 1:
            return items[0][1] if items[0][0] == TARGET else None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                rest = items[:i] + items[i + 1:j] + items[j + 1:]
                (a, ea), (b, eb) = items[i], items[j]
                for swapped, op, c in _pair_results(a, b):
                    if integers_only and c.denominator != 1:
                        continue
                    ex, ey = (eb, ea) if swapped else (ea, eb)
                    found = search(rest + [(c, f"({ex} {op} {ey})")])
                    if found:
                        return found
        return None

    found = search([(Fraction(n), str(int(n))) for n in sorted(numbers)])
    return found[1:-1] if found else None  # drop the outer parentheses


# --- the data file -------------------------------------------------------------------


def load_puzzles(path: Path | str | None = None) -> list[dict]:
    """Every solvable puzzle in data/game24.jsonl, in the file's order."""
    return [json.loads(line) for _, line in json_lines(Path(path) if path else DATA_FILE)]


def hardest(n: int = 100, puzzles: list[dict] | None = None) -> list[dict]:
    """The n hardest puzzles by our difficulty rank (1 is the hardest)."""
    return sorted(puzzles or load_puzzles(), key=lambda p: p["rank"])[:n]
