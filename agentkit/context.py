"""Observations are state: clean them, cap them, keep recent ones raw, summarise older ones.

`ReActAgent(context=None)` (the default) replays every step verbatim, as chapter 02 does.
`ReActAgent(context=LayeredContext())` builds the history part of each prompt in layers:

1. **Key facts**, a stable block: the sentences that state a number (dates, amounts, counts)
   in the cleaned results of the older steps (`key_facts`; a bare number is kept as
   `Tool[input] = number`), numbered in the order found. Lines are only
   ever appended, never reordered; duplicates are kept once; at most `max_facts`. When facts must
   go, the least relevant go first (`fact_ranking`): a fact whose number a later Thought used is
   kept longest, then facts sharing more words with the question; among equals, the oldest goes.
2. **Older steps, summarised**: one line each, `Step n: Tool[input] -> ...` with the key facts
   it gave (`key fact 3`) or the first `summary_chars` characters of its cleaned result, and
   `(runtime hint)` etc. when the runtime intervened there.
3. **The last `raw_steps` steps, raw**: Thought, Action and Observation as chapter 02 sends
   them, but the Observation cleaned and capped.

Cleaning (`clean_observation`): text with HTML tags goes through the standard library's
`html.parser` (a real parser, not a regex): the content of script, style, head, nav, header,
footer, aside, form, button, noscript, template, svg and iframe elements is dropped, and so
is any element whose class or id names a cookie banner, a consent dialog, a menu, a popup or
an advert; block elements become line breaks and entities are decoded. Then runs of spaces
collapse to one and blank lines go. Capping (`cap`): text over the limit is cut at a word
boundary and ends with a visible marker, `[... N more characters cut; the full text is in
the trace, step k]`.

Nothing is lost: `agent.trace[k - 1].observation` and the tool log keep the tool's full raw
output. Only what the prompt carries is cleaned.

Budget: with `budget_tokens`, no prompt (role prompt + user message, counted exactly with
`agentkit.tokens` the way the chat API bills them) is longer than `budget_tokens`. To fit, in
this order: the oldest summaries are omitted (one line says which), raw steps become older
steps (down to one raw step), the least relevant key facts are dropped, the last Observation is cut
shorter (halved, down to `MIN_CHARS`). If even that does not fit, `ValueError` says how
many tokens the fixed part needs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from html.parser import HTMLParser
from typing import Callable, Optional

from . import tokens

DROPPED_TAGS = frozenset(
    "script style head nav header footer aside form button noscript template svg iframe".split())
BOILERPLATE = re.compile(r"cookie|consent|banner|menu|popup|modal|advert|\bads?\b|promo|newsletter", re.IGNORECASE)
BLOCK_TAGS = frozenset("p div br li ul ol tr table h1 h2 h3 h4 h5 h6 main article section pre blockquote".split())
VOID_TAGS = frozenset("area base br col embed hr img input link meta source track wbr".split())
_TAG = re.compile(r"<[A-Za-z!/][^>]*>")
MIN_CHARS = 80


class _TextOnly(HTMLParser):
    """Collects visible text; skips whole elements that are boilerplate by tag or by name."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.open: list[tuple[str, bool]] = []  # (tag, dropped), for elements that are still open

    @property
    def dropping(self) -> bool:
        return any(dropped for _, dropped in self.open)

    def handle_starttag(self, tag, attrs):
        if tag in BLOCK_TAGS:
            self.parts.append("\n")
        if tag in VOID_TAGS:
            return
        names = " ".join(value or "" for key, value in attrs if key in ("class", "id"))
        self.open.append((tag, tag in DROPPED_TAGS or bool(BOILERPLATE.search(names))))

    def handle_endtag(self, tag):
        if tag in BLOCK_TAGS:
            self.parts.append("\n")
        # Close up to the matching start tag: a missing end tag in between must not keep
        # a whole page dropped (or shown).
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                del self.open[i:]
                break

    def handle_data(self, data):
        if not self.dropping:
            self.parts.append(data)


def looks_like_html(text: str) -> bool:
    return bool(_TAG.search(text))


def html_to_text(html: str) -> str:
    """The visible text of an HTML page or fragment, boilerplate elements left out."""
    parser = _TextOnly()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


@lru_cache(maxsize=2048)  # a pure function, called for every older step on every call
def clean_observation(text: str) -> str:
    """HTML to text (when there are tags), spaces collapsed, blank lines removed."""
    text = str(text)
    if looks_like_html(text):
        text = html_to_text(text)
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def cap(text: str, limit: int, step: Optional[int] = None) -> str:
    """`text` if it fits in `limit` characters, else its start and a visible truncation marker."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    cut = cut[: cut.rfind(" ")] if " " in cut[limit // 2:] else cut
    where = f", step {step}" if step is not None else ""
    return f"{cut} [... {len(text) - len(cut)} more characters cut; the full text is in the trace{where}]"


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")


def key_facts(text: str, limit: int = 200) -> list[str]:
    """The sentences of a cleaned result that state a number, each capped at `limit` characters.

    A sentence whose numbers all appear in another sentence of the same text (a heading
    "Report for 2019" above "In 2019 the station recorded 660 mm") is left out.
    """
    return list(_key_facts(str(text), limit))


@lru_cache(maxsize=2048)  # like clean_observation: every call re-reads the facts of every older step
def _key_facts(text: str, limit: int) -> tuple:
    sentences = [s.strip() for s in _SENTENCE.split(text)]
    numbers = [set(_NUMBER.findall(s)) for s in sentences]
    return tuple(cap(s, limit) for s, mine in zip(sentences, numbers)
                 if mine and not any(mine < other for other in numbers))


_WORD = re.compile(r"[a-z]+|\d+(?:[.,]\d+)*")
# Words too common to say what a question is about.
STOPWORDS = frozenset("""a an and are as at be by did do does for from had has have how in is it its many much of on
or over the then to was were what when where which who why with""".split())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def fact_ranking(facts: list[str], question: str, thoughts: list[str], found_at: Optional[list[int]] = None) -> list[int]:
    """Indexes of `facts`, least relevant first: the order in which they are dropped.

    A fact whose number a later Thought wrote down was used, so it ranks above every other; then
    more words shared with the question rank higher; among equals the older fact ranks lower.
    `found_at[i]` is the step (from 1) whose result gave fact i; `thoughts[j]` is step j + 1's
    Thought, and only the Thoughts of later steps count (asking for a year is not using its figure).
    Without `found_at`, every Thought counts.
    """
    wanted = _words(question)
    numbers = [set(_NUMBER.findall(thought)) for thought in thoughts]

    def used(index: int) -> bool:
        since = found_at[index] if found_at is not None else 0
        mine = set(_NUMBER.findall(facts[index]))
        return any(mine & seen for seen in numbers[since:])

    def rank(index: int) -> tuple:
        return (used(index), len(_words(facts[index]) & wanted), index)

    return sorted(range(len(facts)), key=rank)


def _useful(step) -> bool:
    low = step.observation.lower()
    return step.executed and not low.startswith("error:") and not low.startswith(("no results", "no information"))


@dataclass
class LayeredContext:
    """Clean, cap and layer the history; optionally never exceed `budget_tokens` per call."""

    raw_steps: int = 2
    observation_chars: int = 600
    summary_chars: int = 90
    max_facts: int = 40
    budget_tokens: Optional[int] = 1000

    def __post_init__(self) -> None:
        if self.raw_steps < 0:
            raise ValueError(f"raw_steps must be 0 or more, got {self.raw_steps}")
        if self.observation_chars < MIN_CHARS or self.summary_chars < 10:
            raise ValueError(f"observation_chars must be at least {MIN_CHARS} and summary_chars at least 10")
        if self.budget_tokens is not None and self.budget_tokens < 1:
            raise ValueError(f"budget_tokens must be positive or None, got {self.budget_tokens}")

    # --- the layers ------------------------------------------------------------

    def _facts(self, older) -> tuple[list[str], dict[int, list[int]]]:
        facts: list[str] = []
        by_step: dict[int, list[int]] = {}
        for number, step in older:
            if not _useful(step):
                continue
            text = clean_observation(step.observation)
            # A bare number (a calculator result) means nothing without what was asked.
            found = [cap(f"{step.action}[{step.argument}] = {text}", 200)] if _NUMBER.fullmatch(text) else key_facts(text)
            for fact in found:
                if fact not in facts:
                    facts.append(fact)
                by_step.setdefault(number, []).append(facts.index(fact) + 1)
        return facts, by_step

    def _summary(self, number: int, step, fact_numbers: list[int]) -> str:
        action = f"{step.action}[{cap(step.argument, self.summary_chars)}]" if step.action else "(no action)"
        if fact_numbers:
            seen = "key fact" + ("s " if len(fact_numbers) > 1 else " ") + ", ".join(map(str, fact_numbers))
        else:
            seen = cap(" ".join(clean_observation(step.observation).split()), self.summary_chars)
        note = ""
        if step.intervention:
            note = " (" + step.intervention.split(")", 1)[0].split("(", 1)[-1] + ")"
        return f"Step {number}: {action} -> {seen}{note}"

    def history(self, trace, raw: int, omitted: int = 0, dropped_facts: int = 0, last_chars: int = 0,
                question: str = "") -> list[str]:
        """The history parts for one trimming setting (see the module docstring)."""
        numbered = list(enumerate(trace, 1))
        raw = min(raw, len(numbered))
        older, recent = numbered[: len(numbered) - raw], numbered[len(numbered) - raw:]
        facts, by_step = self._facts(older)
        drop = max(len(facts) - self.max_facts, dropped_facts)
        found_at = [min(n for n, numbers in by_step.items() if i + 1 in numbers) for i in range(len(facts))]
        thoughts = [step.thought for step in trace]
        dropped = set(fact_ranking(facts, question, thoughts, found_at)[:drop]) if drop else set()
        parts = []
        if len(dropped) < len(facts):
            head = "Key facts so far (from tool results, in the order found"
            head += f"; {len(dropped)} less relevant to the question were dropped to save space):" if dropped else "):"
            lines = [f"[{i}] {fact}" for i, fact in enumerate(facts, 1) if i - 1 not in dropped]
            parts.append("\n".join([head, *lines]))
        summaries = [self._summary(n, step, by_step.get(n, [])) for n, step in older]
        if summaries:
            omitted = min(omitted, len(summaries))
            lines = summaries[omitted:]
            if omitted:
                lines.insert(0, f"(steps 1-{omitted} omitted to fit the token budget; their key facts are above)")
            parts.append("\n".join(["Earlier steps, summarised:", *lines]))
        for position, (number, step) in enumerate(recent, 1):
            limit = last_chars if (last_chars and position == len(recent)) else self.observation_chars
            observation = cap(clean_observation(step.observation), limit, number)
            parts.append(replace(step, observation=observation).as_history())
        return parts

    # --- fitting the budget ----------------------------------------------------------

    def _settings(self, trace) -> list[dict]:
        """Trimming settings from the richest to the leanest, in the docstring's order."""
        raw = min(self.raw_steps, len(trace))
        older = len(trace) - raw
        settings = [dict(raw=raw, omitted=k) for k in range(older + 1)]
        for r in range(raw - 1, 0, -1):
            settings.append(dict(raw=r, omitted=len(trace) - r))
        lean = dict(settings[-1])
        facts = len(self._facts(list(enumerate(trace[: len(trace) - lean["raw"]], 1)))[0])
        settings += [dict(lean, dropped_facts=k) for k in range(1, facts + 1)]
        last = self.observation_chars // 2
        while trace and last >= MIN_CHARS:
            settings.append(dict(lean, dropped_facts=facts, last_chars=last))
            last //= 2
        return settings

    def fit(self, assemble: Callable[[list[str]], list[dict]], trace, question: str = "") -> list[dict]:
        """The messages of the next call: `assemble(history parts)` for the richest history that fits.

        `question` ranks the key facts when some must be dropped (see `fact_ranking`)."""
        history = lambda **setting: self.history(trace, question=question, **setting)
        first = assemble(history(raw=self.raw_steps))
        if self.budget_tokens is None or tokens.count_messages(first) <= self.budget_tokens:
            return first
        settings = self._settings(trace)
        fits = lambda i: tokens.count_messages(assemble(history(**settings[i]))) <= self.budget_tokens
        low, high = 1, len(settings) - 1
        if not fits(high):
            need = tokens.count_messages(assemble(history(**settings[high])))
            raise ValueError(
                f"budget_tokens={self.budget_tokens} is too small: the role prompt, the question and the last "
                f"step cut to {MIN_CHARS} characters already need {need} tokens")
        while low < high:  # the first setting that fits (sizes shrink along the list)
            middle = (low + high) // 2
            low, high = (low, middle) if fits(middle) else (middle + 1, high)
        return assemble(history(**settings[low]))
