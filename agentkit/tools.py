"""Tools an agent may call, and the executor that runs them.

A tool is a function `str -> str`. Tools never raise into the agent loop: every
failure comes back as a string that starts with ERROR_PREFIX.
"""
from __future__ import annotations

import ast
import json
import math
import operator
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ERROR_PREFIX = "error:"
DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def is_error(observation: str) -> bool:
    return observation.startswith(ERROR_PREFIX)


# --- calculator ---------------------------------------------------------------

MAX_EXPRESSION_CHARS = 300
MAX_DEPTH = 30
MAX_ABS = 10**100  # every literal and intermediate result stays below this
MAX_EXPONENT = 1000

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
ALLOWED_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, *_BINARY, *_UNARY)
ALLOWED_VALUES = (int, float)


class CalcError(ValueError):
    pass


def _check_size(value):
    if isinstance(value, float) and not math.isfinite(value):
        raise CalcError("result is not a finite number")
    if abs(value) > MAX_ABS:
        raise CalcError("result too large (limit 1e100)")
    return value


def _power(base, exponent):
    if abs(exponent) > MAX_EXPONENT:
        raise CalcError(f"exponent {exponent} is too large (limit {MAX_EXPONENT})")
    # Estimate the size before computing, so 2**1000 of a big base never runs.
    if abs(base) > 1 and exponent > 0 and exponent * math.log10(abs(base)) > 100:
        raise CalcError("result too large (limit 1e100)")
    return base**exponent


def _evaluate(node, depth=0):
    if depth > MAX_DEPTH:
        raise CalcError(f"expression nested deeper than {MAX_DEPTH} levels")
    if not isinstance(node, ALLOWED_NODES):
        raise CalcError(
            f"{type(node).__name__} is not allowed; only numbers and + - * / // % ** ( ) are"
        )
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, depth + 1)
    if isinstance(node, ast.Constant):
        # bool is an int subclass; True + True is not arithmetic we want to bless.
        if type(node.value) not in ALLOWED_VALUES:
            raise CalcError(f"{type(node.value).__name__} values are not allowed, only numbers")
        return _check_size(node.value)
    if isinstance(node, ast.UnaryOp):
        return _check_size(_UNARY[type(node.op)](_evaluate(node.operand, depth + 1)))
    left = _evaluate(node.left, depth + 1)
    right = _evaluate(node.right, depth + 1)
    if isinstance(node.op, ast.Pow):
        return _check_size(_power(left, right))
    return _check_size(_BINARY[type(node.op)](left, right))


def _format(value) -> str:
    if isinstance(value, float):
        value = round(value, 10)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
    return str(value)


def calculator(expression: str) -> str:
    """Evaluate plain arithmetic safely; return the result or an 'error: ...' string."""
    try:
        text = str(expression).strip()
        if not text:
            raise CalcError("empty expression")
        if len(text) > MAX_EXPRESSION_CHARS:
            raise CalcError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
        try:
            tree = ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            raise CalcError(f"not an arithmetic expression ({type(e).__name__})") from None
        return _format(_evaluate(tree))
    except CalcError as e:
        return f"{ERROR_PREFIX} {e}"
    except ZeroDivisionError:
        return f"{ERROR_PREFIX} division by zero"
    except (OverflowError, RecursionError, MemoryError, ValueError, TypeError) as e:
        return f"{ERROR_PREFIX} {type(e).__name__}: {e}"


# --- knowledge base search ----------------------------------------------------

_STOPWORDS = set(
    "a an the of in on at to for from by with and or is was were be been what when where "
    "who whom which how many much did does do year born birth".split()
)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[\w']+", text.lower()) if w not in _STOPWORDS}


class KnowledgeBase:
    """A small local encyclopedia: entries with a title, aliases and text."""

    def __init__(self, entries: list[dict]):
        self.entries = entries

    @classmethod
    def load(cls, path: str | Path | None = None) -> "KnowledgeBase":
        path = Path(path) if path else DATA_DIR / "knowledge_base.json"
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def lookup(self, query: str) -> dict | None:
        """The best entry whose title or aliases share a word with the query, or None."""
        wanted = _words(query)
        best, best_score = None, 0
        for entry in self.entries:
            names = _words(" ".join([entry["title"], *entry.get("aliases", [])]))
            title_hits = len(wanted & names)
            if not title_hits:
                continue
            score = 2 * title_hits + len(wanted & _words(entry["text"]))
            if score > best_score:
                best, best_score = entry, score
        return best

    def search(self, query: str) -> str:
        query = str(query).strip()
        if not query:
            return f"{ERROR_PREFIX} empty search query"
        entry = self.lookup(query)
        if entry is None:
            return f"No information about {query!r} in the knowledge base."
        return entry["text"]


_default_kb: KnowledgeBase | None = None


def search(query: str) -> str:
    """Search the course knowledge base in data/."""
    global _default_kb
    if _default_kb is None:
        _default_kb = KnowledgeBase.load()
    return _default_kb.search(query)


# --- the executor -------------------------------------------------------------


@dataclass
class ToolCall:
    """One entry of the executor's log."""

    tool: str
    argument: str
    output: str
    ok: bool
    latency_s: float


@dataclass
class Tool:
    name: str
    func: Callable[[str], str]
    description: str


class ToolExecutor:
    """A registry of tools that logs every call and never lets an exception escape."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.log: list[ToolCall] = []

    def register(self, name: str, func: Callable[[str], str], description: str) -> None:
        self.tools[name] = Tool(name, func, description)

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def describe(self) -> str:
        """The tool list, written for a prompt."""
        return "\n".join(f"- {t.name}[input]: {t.description}" for t in self.tools.values())

    def _find(self, name: str) -> Tool | None:
        # Models vary the case ("search", "SEARCH"); names differ by more than case.
        wanted = name.strip().lower()
        return next((t for t in self.tools.values() if t.name.lower() == wanted), None)

    def run(self, name: str, argument: str) -> str:
        """Run a tool and return its observation; failures become 'error: ...' strings."""
        start = time.perf_counter()
        tool = self._find(name)
        if tool is None:
            output = f"{ERROR_PREFIX} unknown tool {name!r}. Known tools: {', '.join(self.names)}."
        else:
            try:
                output = tool.func(argument)
                output = output if isinstance(output, str) else str(output)
            except Exception as e:  # a tool bug must not end the run
                output = f"{ERROR_PREFIX} tool {tool.name} failed: {type(e).__name__}: {e}"
        self.log.append(
            ToolCall(
                tool=tool.name if tool else name,
                argument=argument,
                output=output,
                ok=tool is not None and not is_error(output),
                latency_s=time.perf_counter() - start,
            )
        )
        return output


def default_executor() -> ToolExecutor:
    """A fresh executor with Search and Calculate."""
    tools = ToolExecutor()
    tools.register("Search", search, "look up a person, place or fact in the course knowledge base")
    tools.register("Calculate", calculator, "evaluate arithmetic such as (2024 - 1955) * 365")
    return tools
