"""Three ways to keep a long run's prompt small, each a `context` for `ReActAgent` (chapter 17).

`ReActAgent(context=X)` calls `X.fit(assemble, trace, question)` before every model call, the
protocol `agentkit.context.LayeredContext` follows: `assemble(parts)` builds the messages (role
prompt, question, then the history `parts`, one string per step), `trace` is the run's steps so far.
Full replay (no context) re-sends every step: prompt tokens grow linearly, the total quadratically.

* `SlidingWindow(k)`: the last `k` steps, verbatim; older steps are not sent (one line says how
  many were left out). The prompt stops growing. Lost: every fact stated only in a step older than k.
* `ObservationMasking(keep)`: every step's Thought and Action; the Observations of the last `keep`
  steps verbatim, every older Observation replaced by a placeholder naming its step and its size
  (`[observation of step 3 masked: 81 tokens]`). The prompt still grows, by a Thought and an Action per
  step instead of a whole result. Lost: a fact stated only in an old Observation (one the model wrote
  into a Thought survives).
* `Compaction(llm, threshold_tokens, keep_raw)`: full replay until a prompt would pass
  `threshold_tokens`; then one call to `llm` (system prompt `SUMMARY_PROMPT`, the question, the
  previous summary and the steps to compact) writes a summary of every step but the last `keep_raw`,
  and later prompts carry the summary and the steps after it, until the threshold is passed again
  (the summary is then compacted with the new steps). The bill is a sawtooth. Each summary is one
  more model call, in `llm`'s own ledger (the agent's, when it is the same object); `summaries` lists
  (steps covered, text) of the current run. Lost: whatever a summary leaves out or copies wrong.

Each keeps its state per run: a trace of length 0 starts a new run. None changes `trace`: the full
results stay in `agent.trace` and the tool log. Bad settings raise `ValueError` at construction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import tokens

SUMMARY_MARKER = "You compact the history of an agent's run"
SUMMARY_PROMPT = SUMMARY_MARKER + """. The agent will continue from your summary alone: the steps you
summarise are not sent again. Keep every fact the task still needs (numbers with their units, names, ids)
and where the run stands: the last result it reached and what comes next. Leave out everything else.
Write only the summary, as short lines starting with "- "."""


def _whole(name: str, value, smallest: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < smallest:
        raise ValueError(f"{name} must be a whole number of at least {smallest}, got {value!r}")
    return value


@dataclass
class SlidingWindow:
    """The last `k` steps verbatim; older steps are left out."""

    k: int = 6

    def __post_init__(self) -> None:
        _whole("k", self.k, 1)

    def fit(self, assemble, trace, question: str = "") -> list[dict]:
        dropped = max(0, len(trace) - self.k)
        parts = [f"(steps 1-{dropped} are not shown)"] if dropped else []
        return assemble(parts + [step.as_history() for step in trace[dropped:]])


def masked_history(step, number: int) -> str:
    """One step as the history shows it with its Observation masked: Thought and Action kept."""
    size = tokens.count_tokens(step.observation)
    thought = f"Thought: {step.thought}\n" if step.thought else ""
    action = f"Action: {step.action}[{step.argument}]\n" if step.action else ""
    return f"{thought}{action}Observation: [observation of step {number} masked: {size} tokens]"


@dataclass
class ObservationMasking:
    """Every Thought and Action; only the last `keep` Observations verbatim, older ones masked."""

    keep: int = 2

    def __post_init__(self) -> None:
        _whole("keep", self.keep, 0)

    def fit(self, assemble, trace, question: str = "") -> list[dict]:
        first_raw = len(trace) - self.keep
        parts = [masked_history(step, n) if n <= first_raw else step.as_history()
                 for n, step in enumerate(trace, 1)]
        return assemble(parts)


@dataclass
class Compaction:
    """Full replay until a prompt would pass `threshold_tokens`; then a model call summarises the older steps."""

    llm: object = None
    threshold_tokens: int = 2000
    keep_raw: int = 1
    summaries: list = field(default_factory=list)  # (steps covered, summary) of the current run
    _summary: str = field(default="", repr=False)
    _covered: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if self.llm is None or not callable(getattr(self.llm, "think", None)):
            raise ValueError("Compaction needs an llm with think(messages): the summariser (usually the agent's own)")
        _whole("threshold_tokens", self.threshold_tokens, 100)
        _whole("keep_raw", self.keep_raw, 0)

    def _parts(self, trace) -> list[str]:
        head = [f"Summary of steps 1-{self._covered} (the steps themselves are not shown):\n{self._summary}"] \
            if self._covered else []
        return head + [step.as_history() for step in trace[self._covered:]]

    def fit(self, assemble, trace, question: str = "") -> list[dict]:
        if not trace:  # a new run
            self.summaries, self._summary, self._covered = [], "", 0
        messages = assemble(self._parts(trace))
        upto = len(trace) - self.keep_raw
        if tokens.count_messages(messages) <= self.threshold_tokens or upto <= self._covered:
            return messages
        self._summary = self.summarise(question, trace, upto)
        self._covered = upto
        self.summaries.append((upto, self._summary))
        return assemble(self._parts(trace))  # may still pass the threshold: a summary is never redone at once

    def summarise(self, question: str, trace, upto: int) -> str:
        """One model call: the previous summary and steps (covered, upto] become a new summary."""
        earlier = [f"Summary of steps 1-{self._covered}:\n{self._summary}"] if self._covered else []
        steps = [f"Step {n}:\n{step.as_history()}"
                 for n, step in enumerate(trace[self._covered:upto], self._covered + 1)]
        messages = [{"role": "system", "content": SUMMARY_PROMPT},
                    {"role": "user", "content": "\n\n".join([f"Question: {question}", *earlier, *steps])}]
        reply = self.llm.think(messages)
        return str(reply).strip() or "- (the summariser wrote nothing)"
