"""A third action channel: a grammar the sampler must follow, written from the tool registry.

The text protocol asks for the format in the prompt; native tool calls put it in the API. llama.cpp's
server can also enforce it in the sampler: a chat request whose body carries `grammar` (GBNF, llama.cpp's
grammar format) gets a reply in which every token that would leave the grammar was masked out before
sampling. The reply has the grammar's shape whatever the model prefers; what it says inside that
shape is still the model's. llama.cpp refuses a grammar together with `tools` (HTTP 400); a hosted API
may ignore the field or refuse it.

* `react_grammar(tools, argument=..., answer=...)`: one ReAct turn, `Thought: <one line>` then
  `Action: Tool[input]`, where Tool is one of the registry's names or Finish. `argument` and `answer`
  are GBNF expressions for what may stand in the brackets (default: any text on the line, no `]`).
* `one_of_words(text)`, `words_from(text)`: GBNF expressions that allow only the words of a text,
  for an argument or an answer that must be copied from the question or from an Observation.
* `grounded_grammar(tools, ...)`: a grammar written anew for every request from what the prompt holds:
  a tool's input made of the question's words, an answer made of the Observations' words (so no
  Finish before a first look-up), and with `one_lookup`, nothing but Finish after it.
* `Constrained(llm, grammar)`: an LLM whose every `think` sends the grammar (a text, or a function of the
  messages that returns one) as `llm.think(messages, temperature, grammar=...)`. The course's clients
  take that keyword: OpenAIChatLLM sends it in the request body, Recorder and ReplayLLM keep it in the
  request, the stand-in checks that its scripted reply fits.
* `accepts(grammar, text)`: does the grammar's language hold `text`? (The grammar as a Python regex;
  only grammars without recursion, which are all this module writes.)
"""
from __future__ import annotations

import functools
import re
from typing import Callable, Union

from .parsing import FINISH
from .protocol import ledger

ANY_INPUT = r'[^\]\n]+'  # one line of text without a closing bracket
ANY_LINE = r'[^\n]+'


def gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def react_grammar(tools, *, argument: str = ANY_INPUT, answer: str = ANY_INPUT, thought: str = ANY_LINE,
                  start: str = "Thought: ", offer_tools: bool = True, offer_finish: bool = True) -> str:
    """GBNF for one ReAct turn: a Thought line, then an Action line naming a registered tool or Finish.

    `tools` is a ToolExecutor (its registered names are used) or a list of names. `start` is what the
    reply begins with (" " after a prompt that already ends in "Thought:").
    """
    names = list(getattr(tools, "names", tools))
    if offer_tools and not names:
        raise ValueError("react_grammar needs at least one tool name")
    if not (offer_tools or offer_finish):
        raise ValueError("react_grammar must offer the tools, Finish, or both")
    tool = " | ".join(gbnf_literal(name) for name in names)
    actions = ([f'({tool}) "[" argument "]"'] if offer_tools else []) + \
        ([f'{gbnf_literal(FINISH)} "[" answer "]"'] if offer_finish else [])
    return "\n".join([
        f'root ::= {gbnf_literal(start)} thought "\\nAction: " action',
        f"thought ::= {thought}",
        f"action ::= {' | '.join(actions)}",
        *([f"argument ::= {argument}"] if offer_tools else []),
        *([f"answer ::= {answer}"] if offer_finish else []),
    ])


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.,'-]*")


def _words(text: str) -> list[str]:
    seen = {}
    for word in _WORD.findall(text):
        seen.setdefault(word.rstrip(".,'"), None)
    return [w for w in seen if w]


def one_of_words(text: str) -> str:
    """A GBNF expression for exactly one word of `text` (letters and digits, inner - . , ' kept)."""
    words = _words(text)
    if not words:
        raise ValueError("one_of_words needs a text with at least one word")
    return "(" + " | ".join(gbnf_literal(w) for w in words) + ")"


def words_from(text: str, most: int = 4) -> str:
    """A GBNF expression for 1 to `most` words of `text`, separated by single spaces."""
    word = one_of_words(text)
    return f'{word} (" " {word}){{0,{most - 1}}}'


_QUESTION = re.compile(r"^Question: (.*)$", re.MULTILINE)
_OBSERVATION = re.compile(r"^Observation: (.*)$", re.MULTILINE)


def question_of(messages) -> str:
    """The question a ReAct prompt asks (its last `Question:` line), or ""."""
    found = _QUESTION.findall(messages[-1]["content"] if messages else "")
    return found[-1] if found else ""


def observations_of(messages) -> str:
    """The Observations of a ReAct prompt after its question, one per line ("" before any)."""
    text = messages[-1]["content"] if messages else ""
    question = _QUESTION.search(text)
    return "\n".join(_OBSERVATION.findall(text[question.end():] if question else text))


def grounded_grammar(tools, *, argument_from_question: bool = True, answer_from_observations: bool = True,
                     one_lookup: bool = True, start: str = "Thought: ", most: int = 4) -> Callable[[list], str]:
    """A function of the messages that writes the next turn's grammar from what the prompt holds.

    A tool's input is 1 to `most` words of the question; Finish's answer is 1 to 3 words of the Observations
    so far, so there is no Finish before a first look-up; with `one_lookup`, a look-up is followed by Finish
    and nothing else. Each flag off frees that part (any text on the line).
    """
    def grammar(messages) -> str:
        seen = observations_of(messages)
        argument = words_from(question_of(messages), most) if argument_from_question else ANY_INPUT
        answer = words_from(seen, 3) if answer_from_observations and seen.strip() else ANY_INPUT
        offer_finish = bool(seen.strip()) or not (answer_from_observations or one_lookup)
        offer_tools = not (one_lookup and seen.strip())
        return react_grammar(tools, argument=argument, answer=answer, start=start,
                             offer_tools=offer_tools, offer_finish=offer_finish)

    return grammar


class Constrained:
    """An LLM that sends a grammar with every call: `think` becomes `llm.think(..., grammar=...)`.

    `grammar` is a GBNF text, or a function of the messages that returns one (a grammar built from the
    question, or from what the tools returned so far). The ledger is the wrapped LLM's own.
    """

    def __init__(self, llm, grammar: Union[str, Callable[[list], str]]) -> None:
        self.llm, self.grammar = llm, grammar
        self.model = getattr(llm, "model", "")

    @property
    def calls(self) -> list:
        return ledger(self.llm)

    def grammar_for(self, messages) -> str:
        return self.grammar(messages) if callable(self.grammar) else self.grammar

    def think(self, messages, temperature: float = 0) -> str:
        return self.llm.think(messages, temperature, grammar=self.grammar_for(messages))


# --- the grammar's language as a Python regex (grammars without recursion) --------------------------------

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-", "^": "^"}


class GrammarError(ValueError):
    """A GBNF text this module cannot read (a syntax it does not know, recursion, a missing rule)."""


def _rules(grammar: str) -> dict[str, str]:
    rules, name = {}, None
    for line in grammar.splitlines():
        line = re.sub(r"(?<![\"\\])#[^\"]*$", "", line).rstrip()  # a comment outside a literal
        match = re.match(r"\s*([A-Za-z0-9-]+)\s*::=(.*)$", line)
        if match:
            name = match.group(1)
            rules[name] = match.group(2)
        elif line.strip() and name is not None:
            rules[name] += " " + line
    if "root" not in rules:
        raise GrammarError("the grammar has no root rule")
    return rules


def _char(text: str, i: int) -> tuple[str, int]:
    """One character of a literal or a class at text[i], escapes decoded; returns it and the next index."""
    if text[i] != "\\":
        return text[i], i + 1
    code = text[i + 1]
    if code == "x":
        return chr(int(text[i + 2:i + 4], 16)), i + 4
    if code == "u":
        return chr(int(text[i + 2:i + 6], 16)), i + 6
    if code in _ESCAPES:
        return _ESCAPES[code], i + 2
    raise GrammarError(f"unknown escape \\{code}")


def _class_char(c: str) -> str:
    return "\\" + c if c in "\\]^-[" else c


def _to_regex(rules: dict[str, str], name: str, open_rules: tuple[str, ...]) -> str:
    if name in open_rules:
        raise GrammarError(f"the rule {name} refers to itself: a recursive grammar has no regex")
    if name not in rules:
        raise GrammarError(f"the grammar refers to a rule {name} it does not define")
    text, i, out = rules[name], 0, []
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c == '"':
            i += 1
            literal = []
            while text[i] != '"':
                char, i = _char(text, i)
                literal.append(char)
            out.append(re.escape("".join(literal)))
            i += 1
        elif c == "[":
            i += 1
            negate = text[i] == "^"
            i += negate
            parts = []
            while text[i] != "]":
                low, i = _char(text, i)
                if text[i] == "-" and text[i + 1] != "]":
                    high, i = _char(text, i + 1)
                    parts.append(f"{_class_char(low)}-{_class_char(high)}")
                else:
                    parts.append(_class_char(low))
            i += 1
            out.append(f"[{'^' if negate else ''}{''.join(parts)}]")
        elif c in "()|*+?":
            out.append({"(": "(?:"}.get(c, c))
            i += 1
        elif c == "{":
            end = text.index("}", i)
            out.append(text[i:end + 1].replace(" ", ""))
            i = end + 1
        elif c == ".":
            out.append(".")
            i += 1
        else:
            match = re.match(r"[A-Za-z0-9-]+", text[i:])
            if not match:
                raise GrammarError(f"cannot read {text[i:i + 20]!r} in the rule {name}")
            out.append(f"(?:{_to_regex(rules, match.group(0), open_rules + (name,))})")
            i += match.end()
    return "".join(out)


@functools.lru_cache(maxsize=64)
def to_regex(grammar: str) -> "re.Pattern[str]":
    """The grammar's language as a compiled regex (GrammarError for a grammar with recursion)."""
    try:
        return re.compile(_to_regex(_rules(grammar), "root", ()), re.DOTALL)
    except (IndexError, re.error) as e:
        raise GrammarError(f"cannot read the grammar: {e}") from None


def accepts(grammar: str, text: str) -> bool:
    """True when `text` is in the grammar's language."""
    return to_regex(grammar).fullmatch(text) is not None
