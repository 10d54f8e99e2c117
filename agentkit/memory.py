"""Memory in tiers: what this call carries, what this task did, what earlier tasks left behind.

- **Working memory** (`WorkingMemory`) is the prompt of one call, under `budget_tokens`
  (counted exactly with `agentkit.tokens`, as the chat API bills them). It carries the
  memories long-term retrieval brought, this task's trace summarised, the `max_items` most
  recent key items and the question, in that order from stable to recent. To fit the budget it
  drops, in this order: the lowest-ranked memories (down to one), the oldest trace parts,
  the oldest key items (down to `min_items`), the last memory. If even that does not fit,
  `ValueError` says how many tokens the fixed part needs. `report` says what was kept.
- **Short-term memory** is this task's trace; chapter 08's `LayeredContext` summarises it.
- **Long-term memory** is a `MemoryStore` (agentkit.memory_store), searched, never loaded whole.

`MemoryAgent` answers a question in one call from long-term memory, either retrieving the top
k memories or loading every one (newest first, until the context window is full), so the two
designs can be compared from the ledger.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from . import tokens
from .memory_store import MemoryStore

MEMORY_MARKER = "Answer the question from the memories below."
ROLE_PROMPT = (f"You are an assistant with a long-term memory. {MEMORY_MARKER} "
               "Cite the memory you used as [M<id>]. If no memory answers it, say: Answer: unknown.")


# --- working memory: one call's prompt, under a budget -------------------------------------

HEADERS = {
    "long_term": "Long-term memories (retrieved, best first):",
    "short_term": "This task so far (summarised):",
    "working": "Key items (most recent last):",
}


@dataclass
class WorkingMemory:
    """What one call carries, fitted under `budget_tokens` (see the module docstring for the order)."""

    budget_tokens: Optional[int] = 800
    max_items: int = 5
    min_items: int = 3
    role: str = ROLE_PROMPT
    report: dict = field(default_factory=dict)  # what the last build kept and dropped

    def __post_init__(self) -> None:
        if not 1 <= self.min_items <= self.max_items:
            raise ValueError(f"need 1 <= min_items <= max_items, got {self.min_items} and {self.max_items}")
        if self.budget_tokens is not None and self.budget_tokens < 1:
            raise ValueError(f"budget_tokens must be positive or None, got {self.budget_tokens}")

    def assemble(self, question: str, items: list[str], trace: list[str], memories: list[str]) -> list[dict]:
        blocks = []
        if memories:
            blocks.append("\n".join([HEADERS["long_term"], *memories]))
        else:
            blocks.append(f"{HEADERS['long_term']}\n(none)")
        if trace:
            blocks.append("\n".join([HEADERS["short_term"], *trace]))
        if items:
            blocks.append("\n".join([HEADERS["working"], *(f"- {item}" for item in items)]))
        blocks.append(f"Question: {question}")
        return [{"role": "system", "content": self.role}, {"role": "user", "content": "\n\n".join(blocks)}]

    def build(self, question: str, items=(), trace=(), memories=()) -> list[dict]:
        """The messages of the next call: the richest setting that fits, trimmed in the documented order."""
        given_items = len(list(items))  # items past max_items are dropped too, and reported
        items, trace, memories = list(items)[-self.max_items:], list(trace), list(memories)
        settings = [(len(memories), len(trace), len(items))]  # everything, even with no memories to drop
        settings += [(m, len(trace), len(items)) for m in range(len(memories), 0, -1)]
        settings += [(min(1, len(memories)), t, len(items)) for t in range(len(trace) - 1, -1, -1)]
        settings += [(min(1, len(memories)), 0, i) for i in range(len(items) - 1, self.min_items - 1, -1)]
        settings += [(0, 0, min(len(items), self.min_items))]
        settings = list(dict.fromkeys(settings)) or [(0, 0, 0)]
        make = lambda s: self.assemble(question, items[len(items) - s[2]:], trace[len(trace) - s[1]:], memories[:s[0]])
        fits = lambda s: self.budget_tokens is None or tokens.count_messages(make(s)) <= self.budget_tokens
        low, high = 0, len(settings) - 1
        if not fits(settings[high]):
            need = tokens.count_messages(make(settings[high]))
            raise ValueError(f"budget_tokens={self.budget_tokens} is too small: the role prompt, the question and "
                             f"{self.min_items} key items already need {need} tokens")
        while low < high:  # the first setting that fits; sizes shrink along the list
            middle = (low + high) // 2
            low, high = (low, middle) if fits(settings[middle]) else (middle + 1, high)
        kept = settings[low]
        self.report = {"memories": kept[0], "memories_dropped": len(memories) - kept[0],
                       "trace_lines": kept[1], "trace_dropped": len(trace) - kept[1],
                       "items": kept[2], "items_dropped": given_items - kept[2]}
        return make(kept)


def tier_tokens(messages: list[dict]) -> dict:
    """Tokens each part of one call's prompt takes (from a ledger record), and the whole of it.

    The whole prompt is the working memory; the parts say where its lines came from: the role prompt,
    long-term memory (retrieved), short-term memory (this task's trace), the key items and the question.
    """
    user = messages[-1]["content"]
    costs = {"role prompt": tokens.count_tokens(messages[0]["content"]) if len(messages) > 1 else 0}
    names = {v: k for k, v in HEADERS.items()}
    labels = {"long_term": "from long-term", "short_term": "from short-term", "working": "key items"}
    for block in user.split("\n\n"):
        head = block.split("\n", 1)[0]
        name = labels[names[head]] if head in names else "question"
        costs[name] = costs.get(name, 0) + tokens.count_tokens(block)
    costs["working memory (whole prompt)"] = tokens.count_messages(messages)
    return costs


# --- an agent that remembers across tasks ---------------------------------------------------

_SPACE = re.compile(r"\s*")
_CITATION = re.compile(r"\[M(\d+)\]")
LARGEST_ID = 2**63 - 1  # SQLite's largest rowid: a larger cited id names no memory


def read_answer(reply: str) -> tuple[str, Optional[int]]:
    """The last "Answer: ... [M<id>]" of a reply: its text and the cited id (None: none, or past any id).

    Reads what `Answer:\\s*(.*?)\\s*(?:\\[M(\\d+)\\])?\\s*$` (multiline, last match) read, in one pass:
    that pattern's three whitespace loops took cubic time (6,400 characters: minutes). Never raises.
    """
    text, found, at = str(reply), None, 0
    while (start := text.find("Answer:", at)) != -1:
        begin = _SPACE.match(text, start + len("Answer:")).end()  # may cross lines, as \s* does
        end = text.find("\n", begin)
        line = text[begin:end if end != -1 else len(text)].rstrip()
        at = begin + len(line)
        head, bracket, tail = line.rpartition("[M")
        if bracket and tail.endswith("]") and tail[:-1].isdecimal():  # the line ends with its citation
            found = head.rstrip(), tail[:-1]
            continue
        found = line, None
        # A citation alone after the line counts when only spaces and line breaks surround it.
        after = _CITATION.match(text, _SPACE.match(text, at).end())
        rest = after and _SPACE.match(text, after.end()).end()
        if after and (rest == len(text) or "\n" in text[after.end():rest]):
            found, at = (line, after.group(1)), after.end()
    if found is None:
        return str(reply).strip(), None
    answer, cited = found
    return answer, int(cited) if cited and len(cited) <= 19 and int(cited) <= LARGEST_ID else None


@dataclass
class Episode:
    question: str
    answer: str
    cited: Optional[int]
    success: Optional[bool] = None
    retrieved: list[int] = field(default_factory=list)
    evicted: list[int] = field(default_factory=list)


class MemoryAgent:
    """Answers each task in one call from long-term memory: the top `k` retrieved, or every memory loaded.

    `mode="retrieve"` searches the store by `method` (None: the store's default); `mode="load"`
    puts all memories in the prompt, newest first, and the working memory's budget
    (`context_window`) drops the oldest that do not fit. With `learn=True` the cited memory's
    confidence follows the outcome that `run`'s `check(answer) -> bool` reports: whatever judges the
    answer (the gold answer in a measurement; a user's correction, a tool result or a verifier in use).
    A wrong judge moves confidence the wrong way just as surely.
    """

    def __init__(self, llm, store: MemoryStore, *, mode: str = "retrieve", k: int = 5, method: Optional[str] = None,
                 budget_tokens: int = 800, context_window: int = 4096, learn: bool = False) -> None:
        if mode not in ("retrieve", "load"):
            raise ValueError(f"mode must be 'retrieve' or 'load', got {mode!r}")
        self.llm, self.store, self.mode, self.k, self.method, self.learn = llm, store, mode, k, method, learn
        self.working = WorkingMemory(budget_tokens=budget_tokens if mode == "retrieve" else context_window)
        self.episodes: list[Episode] = []

    def messages(self, question: str, items=(), trace=()) -> tuple[list[dict], list[int]]:
        if self.mode == "retrieve":
            found = self.store.search(question, self.k, self.method)
        else:
            found = self.store.memories(newest_first=True)
        messages = self.working.build(question, items, trace, [m.as_prompt_line() for m in found])
        return messages, [m.id for m in found[: self.working.report["memories"]]]

    def run(self, question: str, check=None) -> Episode:
        messages, retrieved = self.messages(question)
        reply = self.llm.think(messages)
        answer, cited = read_answer(reply)
        episode = Episode(question, answer, cited, retrieved=retrieved)
        if check is not None:
            episode.success = bool(check(answer))
            if self.learn and cited is not None and self.store.get(cited) is not None:
                episode.evicted = self.store.record_outcome([cited], episode.success)
        self.episodes.append(episode)
        return episode
