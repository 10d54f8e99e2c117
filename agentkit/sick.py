"""Sick stand-ins: each one has a single disease, to show what the ReAct fuses catch.

Each is a ScriptedLLM (so it keeps a ledger) that answers by the content of the prompt:
the history it is shown decides its next move, never a count of calls.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable

from .llm import Rule, ScriptedLLM
from .parsing import FORMAT_REMINDER
from .react import FALLBACK_MARKER, REACT_MARKER
from .scripts.react import CHECKPOINT_QUESTION, checkpoint_reply, fallback_reply
from .tools import ERROR_PREFIX, ToolExecutor, calculator
from .tools import search as _search

# The knowledge base does not change during a run; caching keeps a 200-run sweep fast.
search = functools.lru_cache(maxsize=1024)(_search)

MAX_QUERY_CHARS = 1500
QUERY_TOO_LONG = "Query is too long."  # how the incident's search API began its refusal


class SickLLM(ScriptedLLM):
    """A stand-in with one disease: `symptom(prompt) -> reply` for every ReAct prompt."""

    def __init__(self) -> None:
        super().__init__(
            [
                Rule(FALLBACK_MARKER, self.fallback, name="fallback"),
                Rule(REACT_MARKER, self.symptom, name=type(self).__name__),
            ]
        )

    def symptom(self, prompt: str) -> str:
        raise NotImplementedError

    def fallback(self, prompt: str) -> str:
        """The answer it gives when a fuse has fired and tools are off."""
        return fallback_reply(prompt)


class StuckLLM(SickLLM):
    """Asks for the very same action whatever it is shown (temperature 0 repeats itself)."""

    def symptom(self, prompt):
        return "Thought: I should look up when Steve Jobs was born.\nAction: Search[Steve Jobs birth year]"


WANDER_TOPICS = [
    "early life", "childhood home", "adoption", "school years", "Reed College", "India trip",
    "Atari job", "garage", "first computer", "NeXT", "Pixar", "return to Apple",
]


class WandererLLM(SickLLM):
    """Never repeats itself, never settles: a new search each step, so the repeat fuse never fires."""

    def symptom(self, prompt):
        done = prompt.count("Action: Search[")
        topic = WANDER_TOPICS[done % len(WANDER_TOPICS)]
        suffix = f" (angle {done // len(WANDER_TOPICS) + 1})" if done >= len(WANDER_TOPICS) else ""
        return f"Thought: Maybe another angle helps.\nAction: Search[Steve Jobs {topic}{suffix}]"


class FormatBreakerLLM(SickLLM):
    """Chats instead of acting until the format reminder shows up in its history, then behaves."""

    def symptom(self, prompt):
        if FORMAT_REMINDER in prompt:
            return checkpoint_reply(prompt)
        return "Sure! Steve Jobs was born in the fifties, so it must be a lot of days. Let me think it over."


def invented_tail(rounds: int = 24) -> str:
    """Dozens of made-up Observation/Thought/Action lines, as weak models write them."""
    lines = []
    for i in range(rounds):
        year = 1950 + i % 9
        lines += [
            f"Observation: Steve Jobs was born in {year}, according to source {i + 1}.",
            f"Thought: Source {i + 1} says {year}; let me check one more source to be sure.",
            f"Action: Search[Steve Jobs birth year source {i + 2}]",
        ]
    lines += [f"Observation: {INVENTED_CONFIRMATION}", "Thought: So (2024 - 1956) * 365.", "Action: Finish[24820]"]
    return "\n".join(lines)


INVENTED_CONFIRMATION = "Confirmed, 1956."
RETRY_QUERIES = ["Steve Jobs birth year", "When was Steve Jobs born", "Steve Jobs born", "Steve Jobs biography"]


def _last_observation(prompt: str) -> str:
    found = re.findall(r"^Observation: (.*)$", prompt, re.MULTILINE)
    return found[-1] if found else ""


class InventorLLM(SickLLM):
    """Acts, then keeps writing: invented Observations, more Actions, a Finish of its own.

    `rambles=True` (a bad day): every reply runs on past its Action, a search the tool
    rejected is retried in other words, and the final answer is a `Finish[` spread over
    lines. `rambles=False` (a good day): it stops after each Action and answers in two
    steps. A hosted model at temperature 0 showed both, run to run; a stand-in must be told.
    """

    def __init__(self, rambles: bool = True) -> None:
        self.rambles = rambles
        super().__init__()

    def symptom(self, prompt):
        if not self.rambles:
            if "1955" in _last_observation(prompt):
                return "Thought: Born in 1955, so (2024 - 1955) * 365 = 25185 days.\nAction: Finish[25185]"
            return "Thought: I need the year Steve Jobs was born.\nAction: Search[Steve Jobs]"
        if _last_observation(prompt).startswith(ERROR_PREFIX):
            query = RETRY_QUERIES[(prompt.count(QUERY_TOO_LONG) - 1) % len(RETRY_QUERIES)]
            return f"Thought: The search failed; let me try other words.\nAction: Search[{query}]\n{invented_tail()}"
        reply = checkpoint_reply(prompt)
        if "Finish[" in reply:  # its final answer, too, spreads over lines
            return reply.replace("Finish[25185]", "Finish[\n25185\n]")
        return f"{reply}\n{invented_tail()}"

    def fallback(self, prompt):
        # It believes its own sources: with nothing real in view, the forced answer is theirs.
        if INVENTED_CONFIRMATION in prompt and "February 24, 1955" not in prompt:
            return "Thought: The sources agree on 1956.\nAction: Finish[24820]"
        return fallback_reply(prompt)


JUNK = (
    '<div class="cookie-banner">We value your privacy. <button>Accept all</button> '
    '<button>Manage choices</button></div>\n<nav><a href="/">Home</a> | <a href="/news">News</a> | '
    '<a href="/shop">Shop</a> | <a href="/login">Log in</a></nav>\n'
    "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}</script>\n"
)


def dirty_search(query: str) -> str:
    """The knowledge base, as a scraped web page would return it: the fact buried in markup."""
    return f"{JUNK}<p>{search(query)}</p>\n{JUNK}"


class DirtyReaderLLM(SickLLM):
    """Cannot see a fact through markup: rephrases the search each time an Observation is junk."""

    def symptom(self, prompt):
        clean = [o for o in re.findall(r"^Observation: (.*)$", prompt, re.MULTILINE) if "<" not in o]
        if clean:
            return checkpoint_reply(prompt)
        done = prompt.count("Action: Search[")
        return f"Thought: That page was unreadable; rephrase.\nAction: Search[Steve Jobs birth date, try {done + 1}]"


def length_limited_search(query: str) -> str:
    """The incident's search API: it rejects queries longer than MAX_QUERY_CHARS, in its words."""
    if len(query) > MAX_QUERY_CHARS:
        return f"{ERROR_PREFIX} {QUERY_TOO_LONG} Max query length is {MAX_QUERY_CHARS} characters."
    return search(query)


def _executor(search_tool: Callable[[str], str], description: str) -> ToolExecutor:
    tools = ToolExecutor()
    tools.register("Search", search_tool, description)
    tools.register("Calculate", calculator, "evaluate arithmetic such as (2024 - 1955) * 365")
    return tools


def sick_executor() -> ToolExecutor:
    """The default tools (Search and Calculate)."""
    return _executor(search, "look up a person, place or fact in the course knowledge base")


def incident_executor() -> ToolExecutor:
    """Search with the 1500-character limit, plus Calculate."""
    return _executor(length_limited_search, "look up a person, place or fact (queries up to 1500 characters)")


def dirty_executor() -> ToolExecutor:
    """Search that returns scraped-page junk around the fact, plus Calculate."""
    return _executor(dirty_search, "look up a person, place or fact on the web")


@dataclass
class Disease:
    """A sick stand-in, the tools it runs with, and one line saying what goes wrong."""

    make_llm: Callable[[], ScriptedLLM]
    make_tools: Callable[[], ToolExecutor]
    symptom: str


DISEASES = {
    "stuck": Disease(StuckLLM, sick_executor, "repeats the same action forever"),
    "wanderer": Disease(WandererLLM, sick_executor, "a new search every step, never finishes"),
    "format breaker": Disease(FormatBreakerLLM, sick_executor, "answers in prose until reminded of the format"),
    "observation inventor": Disease(InventorLLM, incident_executor, "writes its own Observations after acting"),
    "dirty tool output": Disease(DirtyReaderLLM, dirty_executor, "tool output is page junk; the model keeps searching"),
}
QUESTION = CHECKPOINT_QUESTION
