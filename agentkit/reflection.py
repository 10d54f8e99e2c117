"""Reflection: draft, review, revise, until the reviewer passes or max_iterations.

The pass signal is narrow: only a last line that reads exactly `VERDICT: PASS` passes.
"this cannot pass", "PASS? no." or a review without a verdict line never do.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .llm import default_llm

WRITER_ROLE = (
    "You write Python code for a task. Reply with the complete code in one ```python "
    "fenced block and nothing else."
)
REVIEWER_ROLE = (
    "You review code written for a task. Check correctness, edge cases and efficiency, "
    "and name each problem concretely. Write your notes, then end with one final line "
    "that is exactly `VERDICT: PASS` if the code needs no change, or `VERDICT: REVISE`."
)
REVISE_REQUEST = "Rewrite the complete code so that it addresses every note of the review."

# A verdict counts only as the whole last non-empty line (case and spaces aside).
VERDICT_LINE = re.compile(r"^\s*\**\s*VERDICT\s*:\s*(PASS|REVISE)\s*\**\s*$", re.IGNORECASE)


def parse_verdict(review: str) -> str:
    """'pass', 'revise', or 'missing' when the last line is not a verdict. Never raises."""
    lines = [line for line in str(review).splitlines() if line.strip()]
    match = VERDICT_LINE.match(lines[-1]) if lines else None
    return match.group(1).lower() if match else "missing"


def extract_code(reply: str) -> str:
    """The first fenced code block of a reply, else the whole reply, stripped."""
    match = re.search(r"```[a-zA-Z0-9_+-]*\n(.*?)```", str(reply), re.DOTALL)
    return (match.group(1) if match else str(reply)).strip()


@dataclass
class Entry:
    kind: str  # "draft" or "review"
    text: str
    verdict: str = ""  # for reviews: pass | revise | missing


@dataclass
class Memory:
    """Everything the loop produced, in order: drafts and the reviews of them."""

    entries: list[Entry] = field(default_factory=list)

    def add_draft(self, code: str) -> None:
        self.entries.append(Entry("draft", code))

    def add_review(self, review: str, verdict: str) -> None:
        self.entries.append(Entry("review", review, verdict))

    def drafts(self) -> list[str]:
        return [e.text for e in self.entries if e.kind == "draft"]

    def reviews(self) -> list[Entry]:
        return [e for e in self.entries if e.kind == "review"]

    def rounds(self) -> int:
        """How many drafts were written."""
        return len(self.drafts())

    def last_draft(self) -> str | None:
        drafts = self.drafts()
        return drafts[-1] if drafts else None

    def last_review(self) -> str | None:
        reviews = self.reviews()
        return reviews[-1].text if reviews else None


def draft_messages(task: str) -> list[dict]:
    return [{"role": "system", "content": WRITER_ROLE}, {"role": "user", "content": f"Task: {task}"}]


def revise_messages(task: str, draft: str, review: str) -> list[dict]:
    """The writer sees the task, its latest draft and the latest review: that is the whole state."""
    user = (
        f"Task: {task}\n\nYour previous draft:\n```python\n{draft}\n```\n\n"
        f"The reviewer's notes on it:\n{review}\n\n{REVISE_REQUEST}"
    )
    return [{"role": "system", "content": WRITER_ROLE}, {"role": "user", "content": user}]


def review_messages(task: str, draft: str, instructions: str = "") -> list[dict]:
    system = REVIEWER_ROLE + (f"\n{instructions}" if instructions else "")
    user = f"Task: {task}\n\nCode to review:\n```python\n{draft}\n```"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class ReflectionAgent:
    """Draft, review, revise. At the limit, returns the last draft with `.passed` False."""

    def __init__(self, max_iterations: int = 3, llm=None, *, reviewer_instructions: str = "") -> None:
        if not isinstance(max_iterations, int) or max_iterations < 1:
            raise ValueError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
        self.max_iterations = max_iterations
        self.llm = llm if llm is not None else default_llm()
        self.reviewer_instructions = reviewer_instructions
        self.memory = Memory()
        self.passed = False

    def run(self, task: str, verbose: bool = True) -> str:
        """Return the draft the reviewer passed, or the last draft once max_iterations drafts were reviewed."""
        self.memory, self.passed = Memory(), False
        draft = extract_code(self.llm.think(draft_messages(task)))
        while True:
            self.memory.add_draft(draft)
            review = self.llm.think(review_messages(task, draft, self.reviewer_instructions))
            verdict = parse_verdict(review)
            self.memory.add_review(review, verdict)
            if verbose:
                print(f"round {self.memory.rounds()}: verdict {verdict}")
            if verdict == "pass":
                self.passed = True
                return draft
            if self.memory.rounds() >= self.max_iterations:
                if verbose:
                    print(f"stopped at max_iterations={self.max_iterations}: returning the last draft, not passed")
                return draft
            draft = extract_code(self.llm.think(revise_messages(task, draft, review)))


def is_writer_call(messages: list[dict]) -> bool:
    return bool(messages) and messages[0].get("content", "") == WRITER_ROLE


def cost_per_round(calls) -> list[dict]:
    """Group a ledger into rounds (each writer call starts one) and sum calls and tokens per round."""
    rounds: list[dict] = []
    for call in calls:
        if is_writer_call(call.messages) or not rounds:
            rounds.append({"round": len(rounds) + 1, "calls": 0, "prompt_tokens": 0,
                           "completion_tokens": 0, "total_tokens": 0})
        row = rounds[-1]
        row["calls"] += 1
        row["prompt_tokens"] += call.prompt_tokens
        row["completion_tokens"] += call.completion_tokens
        row["total_tokens"] += call.total_tokens
    return rounds
