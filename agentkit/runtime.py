"""The runtime that doesn't trust the model: a watchdog over an agent loop.

`ReActAgent(..., runtime=Runtime())` hands every step that ran a tool to `Runtime.review`;
`runtime=None` (the default) changes nothing. `Runtime()` with no arguments uses the
course's settings. It watches three instabilities and reports them apart (at most one of the
first two fires on a step):

* **repeated parameters**: the step's input, normalised by `words` (case folded, punctuation
  and a possessive 's dropped, STOPWORDS dropped, taken as a set so word order does not
  count), has a word-set Jaccard similarity of at least `jaccard` with one of the last
  `window` inputs of the same tool. A signal, not a verdict.
* **useless results**: the input is not a repeat, but the result, cleaned as
  `agentkit.context.clean_observation` cleans it, is an error (it starts with "error:"),
  empty or a no-result sentence, HTML junk (markup with no text left), off-topic (no word in
  common with the question or with earlier useful results; a bare number never is), or
  nothing new (every word of it was already in the question, an earlier result or an earlier
  input). A return is not progress.
* **drift**: every `checkpoint_every` steps (on the first step with no other signal) one
  extra call to the agent's own LLM, so it is in the ledger and counts in the cost, rewrites
  the run's state in four lines: Goal, Strategy, Found, Missing. Drift is flagged when Missing
  did not shrink since the last checkpoint (at the first checkpoint: when nothing was Found
  yet). It stays flagged until a step's result holds at least half the words of a Missing
  item (asking for it is not finding it). A checkpoint reply without Found and Missing lines
  is recorded and flags nothing.

Graded interventions. A step with a signal raises the level by one; a tool step with none
resets it to 0; a step with no action (the parser's format reminder answers it) leaves it
alone. Each level is injected under the step as a special Observation line,
`Observation (runtime guard, <level>): ...`, never into the system prompt:

1. hint: what was seen (which inputs matched, what the result was, what is missing) and one
   sentence of advice;
2. redirect: the same, plus a concrete way out: what to stop doing, what was found so far,
   what is still missing, and the next thing to look for (from the last checkpoint);
3. stop: the run ends with `stop_reason` "runtime: <instability>"; the agent then makes its
   finish-fallback call with tools off, and the answer is marked unverified. With
   `stop=False` the ladder tops out at the redirect. With `second_signal=True` a repeat is an
   entry signal, not a verdict: a repeat alone tops out at the redirect, and it stops the run
   only when a second signal agrees (the same step's result was useless, or drift is flagged).

Every intervention is appended to `agent.interventions` as `Intervention(step, instability,
level, text)`; every checkpoint to `runtime.states`. The agent is anything with `.trace`
(steps with action, argument, observation, executed), `.llm` and `.interventions`. One
Runtime watches one run at a time: `begin(question)` resets it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from .context import cap, clean_observation, key_facts, looks_like_html
from .tools import is_error

REPEAT, USELESS, DRIFT = "repeated parameters", "useless results", "drift"
LEVELS = {1: "hint", 2: "redirect", 3: "stop"}
GUARD_LINE = "Observation (runtime guard, {level}): {text}"

STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is was were be been being what when where who whom which "
    "why how many much did does do it its this that these those as about into than then there their please can "
    "could would should i me my you your we our find tell give show look up".split())
NO_RESULT = re.compile(r"(no results?|no information|nothing found|not found|0 results)\b", re.IGNORECASE)
_WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)?")
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")

CHECKPOINT_MARKER = "You keep the state of an agent run"
CHECKPOINT_PROMPT = CHECKPOINT_MARKER + """ for its runtime (a drift checkpoint).
Read the question, the previous state and the steps since, then rewrite the state in exactly four lines:
Goal: the question, in a few words
Strategy: how the run is going about it, in one line
Found: facts that answer part of the goal, separated by ; (write: nothing, if none)
Missing: what the goal still needs, separated by ; (write: nothing, if the goal is met)
Count only what serves the goal, not side facts."""


def words(text: str) -> frozenset:
    """Normalised content words of `text`, as a set (so word order does not count)."""
    return _words(str(text))


@lru_cache(maxsize=4096)  # every step re-reads earlier inputs and results, and a suite repeats its pages
def _words(text: str) -> frozenset:
    found = (w[:-2] if w.endswith("'s") else w for w in _WORD.findall(text.casefold()))
    return frozenset(w.replace(",", "") for w in found if w not in STOPWORDS)


def jaccard(a: frozenset, b: frozenset) -> float:
    """Word-set overlap: shared words over all words (1.0 for two empty sets)."""
    return len(a & b) / len(a | b) if a | b else 1.0


def useless_reason(observation: str, topic: set, known: set) -> Optional[str]:
    """Why a result is useless, or None when it brings something: see the module docstring."""
    if is_error(observation):
        return f"an error ({cap(' '.join(observation.split()), 90)})"
    text = clean_observation(observation)
    seen = words(text)
    if looks_like_html(observation) and len(seen) < 3:
        return "HTML junk (markup with no text left after cleaning)"
    if not seen or NO_RESULT.match(text):
        return "empty (no result)"
    if not _NUMBER.fullmatch(text.strip()) and not seen & topic:
        return "off-topic (no word in common with the question or earlier results)"
    if seen <= known:
        return "nothing new (every word of it was known already)"
    return None


@dataclass
class State:
    """One checkpoint: the run's state as the LLM rewrote it at `step`."""

    step: int
    goal: str = ""
    strategy: str = ""
    found: list = field(default_factory=list)
    missing: list = field(default_factory=list)
    readable: bool = False  # the reply had Found and Missing lines
    reply: str = ""


_STATE_LINE = re.compile(r"^[\s*#>-]*(goal|strategy|found|missing)[*\s]*:[*\s]*(.*)$", re.IGNORECASE | re.MULTILINE)
_EMPTY_ITEMS = {"", "nothing", "none", "n/a", "-", "nothing yet", "none yet", "unknown"}


def parse_state(reply, step: int) -> State:
    """Read Goal / Strategy / Found / Missing lines (first of each wins). Never raises."""
    fields: dict = {}
    for match in _STATE_LINE.finditer(str(reply)):
        fields.setdefault(match.group(1).lower(), match.group(2).strip())

    def items(name):
        parts = (part.strip(" .") for part in fields.get(name, "").split(";"))
        return [part for part in parts if part.lower() not in _EMPTY_ITEMS]

    return State(step, fields.get("goal", ""), fields.get("strategy", ""), items("found"), items("missing"),
                 "found" in fields and "missing" in fields, str(reply))


@dataclass
class Intervention:
    """What the runtime injected after `step`, for which instability, at which level (1-3)."""

    step: int
    instability: str
    level: int
    text: str

    @property
    def kind(self) -> str:
        return LEVELS[self.level]


@dataclass
class Runtime:
    """Watches each step for repeats, useless results and drift; hints, redirects, then stops."""

    jaccard: float = 0.7
    window: int = 3
    checkpoint_every: int = 3
    stop: bool = True
    second_signal: bool = False  # a repeat stops the run only with a useless result or drift beside it

    def __post_init__(self) -> None:
        if not 0 < self.jaccard <= 1:
            raise ValueError(f"jaccard must be in (0, 1], got {self.jaccard}")
        if self.window < 1:
            raise ValueError(f"window must be at least 1, got {self.window}")
        if self.checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be 0 (off) or more, got {self.checkpoint_every}")
        self.begin("")

    def begin(self, question: str) -> None:
        """Forget the last run."""
        self.question, self.level = question, 0
        self.states: list[State] = []
        self._topic, self._known = set(words(question)), set(words(question))
        self._facts: list[str] = []
        self._since: list[str] = []  # steps since the last checkpoint, one line each
        self._last_checkpoint = 0
        self._drift: Optional[str] = None  # what the checkpoint saw, while drift is flagged

    # --- the review of one step ----------------------------------------------------

    def review(self, agent, question: str, step) -> Optional[str]:
        """Look at the step just taken; maybe add an intervention; return a stop reason to end the run."""
        if question != self.question:  # a loop that never called begin() for this question
            self.begin(question)
        if not step.executed:
            return None
        number = len(agent.trace)
        text = clean_observation(step.observation)
        repeat, useless = self._repeat(step, agent.trace), self._useless(step)
        signal = repeat or useless
        self._remember(number, step, text, useful=signal is None)
        if self._drift and self._back_on_track(text):
            self._drift = None
        due = self.checkpoint_every and number - self._last_checkpoint >= self.checkpoint_every
        if signal is None and self._drift is None and due:
            self._checkpoint(agent, number)
        if signal is None and self._drift:
            signal = (DRIFT, self._drift)
        if signal is None:
            self.level = 0
            return None
        top = 3 if self.stop else 2
        if self.second_signal and repeat and not useless and not self._drift:
            top = 2  # similar inputs that keep bringing something new: warn, never kill on that alone
        self.level = min(self.level + 1, top)
        instability, detail = signal
        text = self._text(instability, detail, step)
        step.intervention = GUARD_LINE.format(level=LEVELS[self.level], text=text)
        agent.interventions.append(Intervention(number, instability, self.level, text))
        return f"runtime: {instability}" if self.level == 3 else None

    def _repeat(self, step, trace) -> Optional[tuple]:
        same_tool = [(n, s) for n, s in enumerate(trace[:-1], 1)
                     if s.executed and s.action.lower() == step.action.lower()][-self.window:]
        mine = words(step.argument)
        for number, earlier in reversed(same_tool):
            overlap = jaccard(mine, words(earlier.argument))
            if overlap >= self.jaccard:
                return REPEAT, (f"{step.action}[{cap(step.argument, 80)}] is almost the same input as "
                                f"{earlier.action}[{cap(earlier.argument, 80)}] at step {number} "
                                f"(word overlap {overlap:.2f})")
        return None

    def _useless(self, step) -> Optional[tuple]:
        reason = useless_reason(step.observation, self._topic, self._known)
        return (USELESS, f"the result of {step.action}[{cap(step.argument, 80)}] was {reason}") if reason else None

    def _remember(self, number: int, step, text: str, useful: bool) -> None:
        self._known |= words(step.argument) | words(text)
        if useful:
            self._topic |= words(text)
            self._facts += [f for f in key_facts(text) if f not in self._facts]
        self._since.append(f"Step {number}: {step.action}[{cap(step.argument, 80)}] -> {cap(text, 200)}")

    def _back_on_track(self, text: str) -> bool:
        state = self.last_state
        seen = words(text)
        wanted = [words(item) for item in (state.missing if state else [])]
        return any(item and 2 * len(item & seen) >= len(item) for item in wanted)

    # --- drift checkpoints ----------------------------------------------------------

    @property
    def last_state(self) -> Optional[State]:
        return next((s for s in reversed(self.states) if s.readable), None)

    def checkpoint_messages(self) -> list[dict]:
        """The checkpoint call's prompt: question, previous state, the steps since."""
        state = self.last_state
        if state is None:
            previous = "Previous state: none (this is the first checkpoint)."
        else:
            previous = (f"Previous state (step {state.step}):\nGoal: {state.goal}\nStrategy: {state.strategy}\n"
                        f"Found: {'; '.join(state.found) or 'nothing'}\nMissing: {'; '.join(state.missing) or 'nothing'}")
        user = f"Question: {self.question}\n\n{previous}\n\nSteps since then:\n" + "\n".join(self._since)
        return [{"role": "system", "content": CHECKPOINT_PROMPT}, {"role": "user", "content": user}]

    def _checkpoint(self, agent, number: int) -> None:
        previous = self.last_state
        state = parse_state(agent.llm.think(self.checkpoint_messages()), number)
        self.states.append(state)
        self._last_checkpoint, self._since = number, []
        if not state.readable or not state.missing:
            return
        missing = "; ".join(state.missing)
        if previous is None and not state.found:
            self._drift = f"the checkpoint at step {number} found nothing for the goal yet (still missing: {missing})"
        elif previous is not None and len(state.missing) >= len(previous.missing):
            self._drift = (f"the missing list did not shrink between the checkpoints at steps {previous.step} and "
                           f"{number} ({len(previous.missing)}, then {len(state.missing)} items: {missing})")

    # --- what the model is told ---------------------------------------------------------

    def _text(self, instability: str, detail: str, step) -> str:
        if self.level == 3:
            return (f"{detail}. That is three signals in a row, so the run stops here. The answer will come "
                    "from what was gathered, with tools off, and is marked unverified.")
        if self.level == 1:
            advice = {REPEAT: "Its result is already above: use it, or ask something different.",
                      USELESS: "A result is not progress: change the query or the tool.",
                      DRIFT: f"Go back to the question: {self.question}"}
            return f"{detail}. {advice[instability]}"
        state = self.last_state
        stop_doing = {REPEAT: f"asking {step.action} for the same thing", USELESS: "sending queries like this one",
                      DRIFT: "following side topics"}[instability]
        facts = [fact.rstrip(".") for fact in self._facts[-3:]]
        found = "; ".join(state.found) if state and state.found else "; ".join(facts) or "nothing yet"
        missing = "; ".join(state.missing) if state else "not known yet (no checkpoint so far)"
        after = (f"look for {state.missing[0]}" if state and state.missing
                 else "Finish with what you have, or use another tool")
        return (f"{detail}. Stop {stop_doing}. Found so far: {found}. Still missing: {missing or 'nothing'}. "
                f"Next: {after}.")
