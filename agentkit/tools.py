"""Tools an agent may call, and the executor that runs them.

A tool is a function `str -> str`. Tools never raise into the agent loop: every
failure comes back as a string that starts with ERROR_PREFIX.

The executor logs every call, and:
* an exception from a tool, SystemExit (sys.exit) included, becomes an error observation;
  Ctrl-C (KeyboardInterrupt) is logged as an interrupted call and then goes on up, since the
  person at the keyboard asked to stop the run, not to feed the stop to the model;
* a call runs on the caller's thread, as a plain function call would: a tool may use what the
  notebook made (a sqlite3 connection, a thread-local), and what it prints shows in the cell.
  Its timeout (TOOL_TIMEOUT_S unless the tool was registered with another) is a SIGALRM timer
  that stops a call still running at its deadline; where no timer can be set (Windows, a thread
  other than the main one, a call inside another tool's call), the call runs on a worker thread
  instead and is given up at its deadline (`agentkit.tool_calls` says how each works). A tool
  registered with `timeout_s=None` has no timeout: Search and Calculate, which are local and
  bounded, run that way;
* an output longer than MAX_OUTPUT_CHARS is cut, with a last line saying how much was cut.
"""
from __future__ import annotations

import ast
import json
import math
import operator
import re
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .data import DATA_DIR
from .tool_calls import (ERROR_PREFIX, MAX_OUTPUT_CHARS, TOOL_TIMEOUT_S, ToolTimeout, WorkerLane, alarm_ready,
                         call_once, call_with_alarm)


def is_error(observation: str) -> bool:
    """True for an observation that reports a failure (it starts with ERROR_PREFIX)."""
    return isinstance(observation, str) and observation.startswith(ERROR_PREFIX)


# --- calculator ---------------------------------------------------------------

MAX_EXPRESSION_CHARS = 300
MAX_DEPTH = 50  # operator nesting and parenthesis nesting
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
_ALLOWED_TEXT = "only numbers and + - * / // % ** ( ) are"


class CalcError(ValueError):
    pass


def _check_size(value):
    # type(), not isinstance(): bool is an int subclass and complex sneaks in via (-8)**0.5.
    if type(value) not in ALLOWED_VALUES:
        raise CalcError(f"result is a {type(value).__name__}, not a real number")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalcError("result is not a finite number")
    if abs(value) > MAX_ABS:
        raise CalcError("result too large (limit 1e100)")
    return value


def _power(base, exponent):
    if abs(exponent) > MAX_EXPONENT:
        raise CalcError(f"exponent {exponent} is too large (limit {MAX_EXPONENT})")
    # Estimate the size from logarithms before computing, so a huge power never runs.
    if base != 0 and exponent * math.log10(abs(base)) > 100:
        raise CalcError("result too large (limit 1e100)")
    return base**exponent


def _paren_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        deepest = max(deepest, depth)
    return deepest


def _evaluate(node, depth=0):
    if depth > MAX_DEPTH:
        raise CalcError(f"expression nested deeper than {MAX_DEPTH} levels")
    if not isinstance(node, ALLOWED_NODES):
        raise CalcError(f"{type(node).__name__} is not allowed; {_ALLOWED_TEXT}")
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, depth + 1)
    if isinstance(node, ast.Constant):
        # bool is an int subclass; True + True is not arithmetic we want to bless.
        if type(node.value) not in ALLOWED_VALUES:
            raise CalcError(f"{type(node.value).__name__} values are not allowed, only numbers")
        return _check_size(node.value)
    if type(node.op) not in _UNARY and type(node.op) not in _BINARY:
        raise CalcError(f"operator {type(node.op).__name__} is not allowed; {_ALLOWED_TEXT}")
    if isinstance(node, ast.UnaryOp):
        return _check_size(_UNARY[type(node.op)](_evaluate(node.operand, depth + 1)))
    # A flat chain like 1 + 2 + ... + 60 is a left-leaning tree: its left spine is not nesting.
    # (Parentheses are bounded by _paren_depth, and the text length bounds the recursion.)
    left = _evaluate(node.left, depth)
    right = _evaluate(node.right, depth + 1)
    if isinstance(node.op, ast.Pow):
        return _check_size(_power(left, right))
    return _check_size(_BINARY[type(node.op)](left, right))


def _format(value) -> str:
    if isinstance(value, float):
        # 10 decimals hide float noise (0.1 + 0.2); a tiny result keeps 10 significant digits instead of becoming 0.
        decimals = 10 if value == 0 else max(10, 9 - math.floor(math.log10(abs(value))))
        value = round(value, decimals)
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
        if _paren_depth(text) > MAX_DEPTH:
            raise CalcError(f"expression nested deeper than {MAX_DEPTH} levels")
        try:
            tree = ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            raise CalcError(f"not an arithmetic expression ({type(e).__name__})") from None
        return _format(_evaluate(tree))
    except CalcError as e:
        return f"{ERROR_PREFIX} {e}"
    except ZeroDivisionError:
        return f"{ERROR_PREFIX} division by zero"
    except Exception as e:  # the contract is "never raises": anything else becomes an observation
        return f"{ERROR_PREFIX} {type(e).__name__}: {e}"


# --- knowledge base search ----------------------------------------------------

_STOPWORDS = set(
    "a an the of in on at to for from by with and or is was were be been what when where "
    "who whom which how many much did does do year born birth".split()
)


MAX_QUERY_CHARS = 1500  # real search APIs reject longer queries; so do we


def _words(text: str) -> set[str]:
    # Drop a possessive 's so "Jobs's" and "Turing's" still find their entry.
    words = re.findall(r"\w+(?:'\w+)*", text.lower())
    return {re.sub(r"'s$", "", w) for w in words} - _STOPWORDS


class KnowledgeBase:
    """A small local encyclopedia: entries with a title, aliases and text."""

    def __init__(self, entries: list[dict]):
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not all(
                isinstance(entry.get(key), str) and entry[key].strip() for key in ("title", "text")
            ):
                raise ValueError(f"knowledge base entry {i} needs a non-empty 'title' and 'text'")
        self.entries = entries
        # Word sets are computed once; a search then costs set intersections only.
        self._index = [
            (entry, _words(" ".join([entry["title"], *entry.get("aliases", [])])), _words(entry["text"]))
            for entry in entries
        ]

    @classmethod
    def load(cls, path: str | Path | None = None) -> "KnowledgeBase":
        path = Path(path) if path else DATA_DIR / "knowledge_base.json"
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def lookup(self, query: str) -> dict | None:
        """The best entry whose title or aliases share a word with the query, or None."""
        wanted = _words(query)
        best, best_score = None, 0
        for entry, names, text_words in self._index:
            title_hits = len(wanted & names)
            if not title_hits:
                continue
            score = 2 * title_hits + len(wanted & text_words)
            if score > best_score:
                best, best_score = entry, score
        return best

    def search(self, query: str) -> str:
        """The text of the best entry, or a sentence saying there is none; never empty."""
        query = str(query).strip()
        if not query:
            return f"{ERROR_PREFIX} empty search query"
        if len(query) > MAX_QUERY_CHARS:
            return f"{ERROR_PREFIX} query is too long ({len(query)} characters, max {MAX_QUERY_CHARS})"
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

def _as_text(value) -> str:
    # A parser may hand over None or a number; tools are str -> str, and this must not raise.
    if value is None:
        return ""
    try:
        return str(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"


@dataclass
class ToolCall:
    """One entry of the executor's log."""

    tool: str
    argument: str
    output: str
    ok: bool
    latency_s: float
    started_s: float = field(default=0.0, compare=False, repr=False)  # time.perf_counter() at the start


# What a tool does to the world: "read" changes nothing; the others change something outside the run.
EFFECTS = ("read", "write", "delete", "send")


@dataclass
class Tool:
    name: str
    func: Callable[[str], str]
    description: str
    effect: str = "read"
    timeout_s: float | None = TOOL_TIMEOUT_S  # None: never timed out
    open_world: bool = False  # its input leaves the machine (a web search), whatever it does to our store


class ToolExecutor:
    """A registry of tools that logs every call and never lets an exception escape."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.log: list[ToolCall] = []
        self._lane = WorkerLane()  # where a timed call goes when no alarm can time it
        # An idle worker would wait for calls forever: without this, every executor a notebook ever made
        # would keep a thread, hundreds of them after a batch of runs.
        weakref.finalize(self, self._lane.close)

    def register(self, name: str, func: Callable[[str], str], description: str, *, effect: str = "read",
                 timeout_s: float | None = TOOL_TIMEOUT_S, open_world: bool = False) -> None:
        """Add a tool; a name equal to an existing one up to case replaces it. `effect` is one of EFFECTS;
        timeout_s=None: never timed out; open_world=True: its input leaves the machine."""
        if not isinstance(name, str) or not re.fullmatch(r"[^\s\[\]]+", name):
            raise ValueError(f"tool name must be one word without spaces or brackets, got {name!r}")
        if not callable(func):
            raise TypeError(f"tool {name} needs a callable, got {type(func).__name__}")
        if effect not in EFFECTS:
            raise ValueError(f"tool {name}: effect must be one of {', '.join(EFFECTS)}, got {effect!r}")
        if timeout_s is not None and not (isinstance(timeout_s, (int, float)) and 0 < timeout_s < math.inf):
            raise ValueError(f"timeout_s must be a positive number of seconds or None, got {timeout_s!r}")
        # Lookup ignores case, so two names differing only by case would shadow each other.
        for existing in [n for n in self.tools if n.lower() == name.lower()]:
            del self.tools[existing]
        self.tools[name] = Tool(name, func, str(description), effect, timeout_s, bool(open_world))

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def describe(self) -> str:
        """The tool list, written for a prompt."""
        key = [(t.name, t.description) for t in self.tools.values()]
        if self._described[0] != key:  # every prompt asks again: written once, until a tool or its description changes
            self._described = (key, "\n".join(f"- {name}[input]: {description}" for name, description in key))
        return self._described[1]

    _described: tuple = ((), "")

    def _find(self, name: str) -> Tool | None:
        # Models vary the case ("search", "SEARCH"); names differ by more than case.
        name = _as_text(name)
        if name in self.tools:  # the usual case: the name exactly as registered
            return self.tools[name]
        wanted = name.strip().lower()
        return next((t for t in self.tools.values() if t.name.lower() == wanted), None)

    def run(self, name: str, argument: str) -> str:
        """Run a tool and return its observation; failures become 'error: ...' strings."""
        start = time.perf_counter()
        argument = _as_text(argument)
        tool = self._find(name)
        if tool is None:
            known = ", ".join(self.names) or "(none registered)"
            output = f"{ERROR_PREFIX} unknown tool {_as_text(name)!r}. Known tools: {known}."
        else:
            try:
                if tool.timeout_s is None:
                    output = call_once(tool, argument)
                elif alarm_ready():
                    output = call_with_alarm(tool, argument)
                else:
                    output = self._lane.run(tool, argument)
            except KeyboardInterrupt:  # logged, then passed on: Ctrl-C stops the run
                self._log(tool.name, argument, f"{ERROR_PREFIX} tool {tool.name} was interrupted (KeyboardInterrupt)",
                          False, start)
                raise
        self._log(tool.name if tool else _as_text(name), argument, output,
                  tool is not None and not is_error(output), start)
        return output

    def _log(self, tool: str, argument: str, output: str, ok: bool, start: float) -> None:
        self.log.append(ToolCall(tool=tool, argument=argument, output=output, ok=ok,
                                 latency_s=time.perf_counter() - start, started_s=start))


def default_executor() -> ToolExecutor:
    """A fresh executor with Search and Calculate."""
    tools = ToolExecutor()
    # Both are local and bounded (the calculator refuses huge work): no timeout to arm.
    tools.register("Search", search, "look up a person, place or fact in the course knowledge base", timeout_s=None)
    tools.register("Calculate", calculator, "evaluate arithmetic such as (2024 - 1955) * 365", timeout_s=None)
    return tools
