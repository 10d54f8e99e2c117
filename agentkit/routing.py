"""Two models, one system: a price per tier, a router, and a cascade.

* `Tier(name, make_llm, prompt_price, completion_price)`: a model and what it charges, in dollars
  per million prompt tokens and per million completion tokens. `price(calls, tier)` is a ledger's
  bill at that tier's prices: (prompt tokens x prompt price + completion tokens x completion
  price) / 1,000,000, summed over the calls.
* `signals(agent, evidence="")` reads a finished ReAct run, without the gold answer, for four
  signs that its answer can be trusted:
  - finished: the run ended with Finish (not max_steps, a fuse or a guard);
  - well-formed: every reply held an action the parser could run (no format reminder);
  - grounded: the answer asserts nothing the run did not see: its last number is a number of one
    of its Observations or of `evidence` (what an earlier tier passed on); an answer without
    numbers has all its words there; a refusal asserts nothing and is grounded;
  - answered: the answer is not a refusal.
  `confidence(agent, evidence)` is the share of them that hold: 0, 0.25, 0.5, 0.75 or 1.
* `Router(tiers)`: one call to a classifier (by default the first tier's model) labels the
  question; `parse_label` reads `Label: simple` or `Label: multi-step` and nothing else. simple
  goes to the first tier, multi-step and an unreadable label to the last: a classifier's
  failure costs money, never an answer.
* `Cascade(tiers, threshold)`: the first tier answers; while a run's confidence is below
  `threshold` and a tier is left, the next tier answers the question again, with the
  Observations of the earlier runs as hints (`evidence(agent)`: what the tools returned, never
  an earlier model's answer). threshold 0 never escalates; a threshold above 1 always does.
  `score=` replaces `confidence` by your own function of (agent, evidence).
* `Single(tier)`: one tier alone, the baseline.

Every setting is checked where it is given (a price, a threshold, a tier's name and model, a function),
and a bad one raises ValueError naming it; `number_setting`, `count_setting` and `confidence_threshold` are
those checks, which chapter 15's teams and sweeps use too.

Each system keeps one client per tier and one executor for its whole life. `run(question) ->
answer` sets `stop_reason` and `unverified` from the run that answered; `.llm` joins every
client's ledger and `.tools` is the executor, so `agentkit.evaluate` reads a system like one
agent; `cost` is the bill of every call so far at each tier's prices. `make_agent(llm, tools)`
builds the agent a tier runs: a `ReActAgent` with MAX_STEPS steps unless you pass another.
"""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from .ledgers import Ledgers
from .protocol import ledger
from .react import ReActAgent
from .tasks import is_refusal, numbers_in
from .tools import default_executor, is_error

MAX_STEPS = 6  # the longest key path of the task set is five tool calls, then Finish
SIGNALS = ("finished", "well-formed", "grounded", "answered")

ROUTER_MARKER = "You route questions between two models"
ROUTER_PROMPT = ROUTER_MARKER + """: a small, cheap one and a large, expensive one.
Label the question simple if one look-up or one calculation answers it, and multi-step if it
needs several tool calls, or a call that depends on another call's result.
Reply with one line: Label: simple, or Label: multi-step.

Question: {question}"""
SIMPLE, MULTI_STEP = "simple", "multi-step"
_LABEL = re.compile(r"^[\s*#>`-]*label[*`\s]*:[*`\s]*(simple|multi-step)\b", re.IGNORECASE | re.MULTILINE)


def number_setting(name: str, value, low: float, high: float, what: str, *, above_low: bool = False) -> float:
    """`value` as a float in [low, high] ((low, high] with `above_low`); else ValueError naming the setting."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)
    if not (real and (low < value if above_low else low <= value) and value <= high):
        raise ValueError(f"{name} must be {what}; got {value!r}")
    return float(value)


def count_setting(name: str, value, low: int = 1) -> int:
    """`value` as an int of at least `low`; else ValueError naming the setting."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be a whole number, at least {low}; got {value!r}")
    return int(value)


def confidence_threshold(value, name: str = "threshold") -> float:
    """An escalation threshold: a confidence in [0, 1], or up to 1.01 to escalate every run."""
    return number_setting(name, value, 0, 1.01, "a confidence between 0 and 1 (0 never escalates; above 1, up to "
                                                "1.01, always does)")


def _function(name: str, value, optional: bool = True):
    if not callable(value) and not (optional and value is None):
        raise ValueError(f"{name} must be a function{' or None' if optional else ''}; got {value!r}")
    return value


@dataclass(frozen=True)
class Tier:
    """A model with a price: dollars per million prompt tokens and per million completion tokens."""

    name: str
    make_llm: Callable[[], object]
    prompt_price: float
    completion_price: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a tier's name must be a non-empty text (it keys the tier's client); got {self.name!r}")
        _function(f"tier {self.name!r}: make_llm", self.make_llm, optional=False)
        for what in ("prompt_price", "completion_price"):
            value = getattr(self, what)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"tier {self.name!r}: {what} must be dollars per million tokens, 0 or more; "
                                 f"got {value!r}")


def price(calls: list, tier: Tier) -> float:
    """The bill of these ledger entries at the tier's prices, in dollars."""
    return sum(c.prompt_tokens * tier.prompt_price + c.completion_tokens * tier.completion_price for c in calls) / 1e6


def react_agent(llm, tools) -> ReActAgent:
    return ReActAgent(llm, tools, max_steps=MAX_STEPS)


# --- reading a run without the gold answer ------------------------------------------------


def evidence(agent) -> str:
    """What the run's tools returned, one `- Tool[input] -> observation` line per call that worked."""
    return "\n".join(f"- {s.action}[{s.argument}] -> {s.observation}" for s in agent.trace
                     if s.executed and not is_error(s.observation))


def _words(text: str) -> set:
    return set(re.findall(r"[^\W_]+", str(text).casefold()))


def grounded(answer: str, seen: str) -> bool:
    """The answer asserts nothing beyond `seen`: see the module docstring."""
    if is_refusal(answer):
        return True
    numbers = numbers_in(answer)
    if numbers:
        return float(numbers[-1]) in {float(n) for n in numbers_in(seen)}
    words = _words(answer)
    return bool(words) and words <= _words(seen)


def signals(agent, evidence_text: str = "") -> dict:
    """{signal: holds?} for a finished run: see the module docstring."""
    seen = "\n".join([evidence_text, *(s.observation for s in agent.trace if s.executed)])
    answer = str(agent.answer)
    finished = agent.stop_reason == "finished"
    return {
        "finished": finished,
        "well-formed": all(step.action for step in agent.trace),
        "grounded": finished and grounded(answer, seen),  # a stop message is no answer to ground
        "answered": finished and not is_refusal(answer),
    }


def confidence(agent, evidence_text: str = "") -> float:
    """The share of the four signals that hold."""
    found = signals(agent, evidence_text)
    return sum(found.values()) / len(found)


def parse_label(reply) -> str:
    """"simple" or "multi-step" from a `Label:` line (the first wins), else "". Never raises."""
    match = _LABEL.search(str(reply))
    return match.group(1).lower() if match else ""


# --- the systems -----------------------------------------------------------------------------


@dataclass
class Attempt:
    """One tier's run inside a system: its answer, the signals read from it, and its confidence."""

    tier: str
    answer: str
    signals: dict
    confidence: float
    agent: object = field(repr=False, default=None)


class System:
    """Tiers, one client each, one executor: the shared machinery of Single, Router and Cascade."""

    def __init__(self, tiers: list, make_agent: Optional[Callable] = None) -> None:
        self.tiers = list(tiers)
        if not self.tiers or not all(isinstance(t, Tier) for t in self.tiers):
            raise ValueError("a system needs at least one Tier")
        names = [t.name for t in self.tiers]
        twice = next((name for name in names if names.count(name) > 1), None)
        if twice is not None:
            raise ValueError(f"two tiers named {twice!r}: a system keeps one client per name, so one tier's calls "
                             "would be billed at the other's prices. Name them apart.")
        self.make_agent = _function("make_agent", make_agent) or react_agent
        self.tools = default_executor()
        self.clients: dict = {}  # tier name -> its client, made on first use
        self._client_list: list = []
        self.llm = Ledgers(self._client_list)  # every client's ledger, joined
        self.attempts: list[Attempt] = []
        self.stop_reason, self.unverified, self.answer = "", False, ""

    def client(self, tier: Tier):
        if tier.name not in self.clients:
            self.clients[tier.name] = tier.make_llm()
            self._client_list.append(self.clients[tier.name])
        return self.clients[tier.name]

    @property
    def cost(self) -> float:
        """Dollars for every call so far, each client's ledger at its tier's prices."""
        return sum(price(ledger(self.clients[t.name]), t) for t in self.tiers if t.name in self.clients)

    def cost_by_tier(self) -> dict:
        return {t.name: price(ledger(self.clients[t.name]), t) for t in self.tiers if t.name in self.clients}

    @property
    def steps(self) -> int:
        return sum(len(a.agent.trace) for a in self.attempts)

    score = None  # a function (agent, evidence) -> confidence; None: `confidence`

    def _attempt(self, tier: Tier, question: str, hints: str = "") -> Attempt:
        agent = self.make_agent(self.client(tier), self.tools)
        answer = agent.run(question, verbose=False, hints=hints)
        score = float((self.score or confidence)(agent, hints))
        attempt = Attempt(tier.name, answer, signals(agent, hints), score, agent)
        self.attempts.append(attempt)
        self.stop_reason, self.unverified, self.answer = agent.stop_reason, agent.unverified, answer
        return attempt

    def run(self, question: str, verbose: bool = False) -> str:
        raise NotImplementedError


class Single(System):
    """One tier alone."""

    def __init__(self, tier: Tier, make_agent: Optional[Callable] = None) -> None:
        super().__init__([tier], make_agent)

    def run(self, question: str, verbose: bool = False) -> str:
        attempt = self._attempt(self.tiers[0], question)
        if verbose:
            print(f"{attempt.tier}: {attempt.answer!r} (confidence {attempt.confidence:.2f})")
        return attempt.answer


class Router(System):
    """A classifier's label picks the tier: simple -> the first, multi-step (or unreadable) -> the last."""

    def __init__(self, tiers: list, classifier: Optional[Tier] = None, make_agent: Optional[Callable] = None) -> None:
        super().__init__(tiers, make_agent)
        if classifier is not None and not isinstance(classifier, Tier):
            raise ValueError(f"classifier must be a Tier (or None: the first tier's model); got {classifier!r}")
        if classifier is not None and classifier not in self.tiers and classifier.name in (t.name for t in self.tiers):
            raise ValueError(f"the classifier is another tier named {classifier.name!r}: a system keeps one client per "
                             "name. Pass that tier itself, or name it apart.")
        self.simple, self.hard = self.tiers[0], self.tiers[-1]
        self.classifier = classifier or self.tiers[0]
        if self.classifier not in self.tiers:
            self.tiers.append(self.classifier)  # so its calls are priced too
        self.labels: list[tuple[str, str]] = []  # (label or "", the classifier's reply)

    def route(self, question: str) -> Tier:
        reply = self.client(self.classifier).think(ROUTER_PROMPT.format(question=question))
        label = parse_label(reply)
        self.labels.append((label, reply))
        return self.simple if label == SIMPLE else self.hard

    def run(self, question: str, verbose: bool = False) -> str:
        tier = self.route(question)
        attempt = self._attempt(tier, question)
        if verbose:
            label, reply = self.labels[-1]
            print(f"classifier: {label or 'unreadable'} ({' '.join(str(reply).split())[:60]!r}) -> {tier.name}: "
                  f"{attempt.answer!r}")
        return attempt.answer


class Cascade(System):
    """The cheapest tier first; escalate while confidence < threshold, passing the tools' results on."""

    def __init__(self, tiers: list, threshold: float = 1.0, make_agent: Optional[Callable] = None,
                 score: Optional[Callable] = None) -> None:
        super().__init__(tiers, make_agent)
        self.score = _function("score", score)
        self.threshold = confidence_threshold(threshold)

    @property
    def escalations(self) -> int:
        return max(len(self.attempts) - 1, 0)

    def run(self, question: str, verbose: bool = False) -> str:
        self.attempts = []
        hints = ""
        for number, tier in enumerate(self.tiers):
            attempt = self._attempt(tier, question, hints)
            last = number == len(self.tiers) - 1
            escalate = not last and attempt.confidence < self.threshold
            if verbose:
                failed = [name for name, held in attempt.signals.items() if not held]
                print(f"{tier.name}: {attempt.answer!r}, confidence {attempt.confidence:.2f}"
                      + (f" (failed: {', '.join(failed)})" if failed else "")
                      + (f" < {self.threshold:g}: escalate" if escalate else ""))
            if not escalate:
                return attempt.answer
            found = evidence(attempt.agent)
            hints = "\n".join(h for h in (hints, found) if h)
        return self.answer  # pragma: no cover - the last tier always returns above
