"""The runtime of chapter 08, for a team: four checks on what passes between agents, and what each guard does.

Each check reads only what the team's code saw: a handoff, the text a member was given, the member's
trace (its actions, and the Observations its tools returned), its report. None calls a model. Each is
named by the failure mode it catches in MAST, the taxonomy of Cemri et al. 2025, "Why Do Multi-Agent LLM
Systems Fail?" (arXiv:2503.13657):

* **repeated handoff** (FM-1.3 Step repetition): the lead hands a member an instruction whose content
  words (`agentkit.runtime.words`) have a Jaccard similarity of at least `jaccard` with one of the last
  `window` instructions that member was handed. Guard: the handoff is not carried out and the lead is
  told so (a hint); the next repeat in a row stops the team, which answers from what it has, unverified.
* **ignored assignment** (FM-1.1 Disobey task specification): the member ran tools, and none of its
  calls serves its assignment. A Calculate serves it when every number of its input is in the
  assignment or the context the member was given; any other call, when more than half of its input's
  content words are words of the assignment (not of the team's question, which every member's prompt
  holds). Guard: it runs once more with its assignment restated; if it ignores it again, its report is
  dropped and the lead is told.
* **unverified report** (FM-3.2 No or incomplete verification): the report asserts a number that none of
  the member's own Observations holds. A refusal asserts nothing. Guard: the report is replaced by the
  Observations its tools returned: evidence, not its claim.
* **withheld context** (FM-2.4 Information withholding): the member answered that it cannot, and a
  finding of the team (an earlier accepted report) is missing from the text it was given; a finding is
  there when at least half of its content words are. Guard: it runs once more with every finding
  attached, a block the team's code keeps, whatever the lead chose to pass on.

Every check that fires appends an `Alarm` to `guard.alarms`; `TeamGuard(checks=...)` turns some off.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .routing import count_setting, number_setting
from .runtime import jaccard, words
from .tasks import is_refusal, numbers_in
from .text import shorten

REPEATED_HANDOFF, IGNORED_ASSIGNMENT = "repeated handoff", "ignored assignment"
UNVERIFIED_REPORT, WITHHELD_CONTEXT = "unverified report", "withheld context"
CHECKS = (REPEATED_HANDOFF, IGNORED_ASSIGNMENT, UNVERIFIED_REPORT, WITHHELD_CONTEXT)
MAST = {
    REPEATED_HANDOFF: "FM-1.3 Step repetition",
    IGNORED_ASSIGNMENT: "FM-1.1 Disobey task specification",
    UNVERIFIED_REPORT: "FM-3.2 No or incomplete verification",
    WITHHELD_CONTEXT: "FM-2.4 Information withholding",
}


@dataclass
class Alarm:
    """One check that fired: on which member, what it saw, and what the guard did about it."""

    member: str
    check: str
    detail: str
    action: str

    @property
    def mode(self) -> str:
        return MAST[self.check]


def repeated_handoff(member: str, instruction: str, earlier: list, threshold: float = 0.7,
                     window: int = 3) -> Optional[str]:
    """Why this handoff repeats one of the last `window` handoffs to `member`, or None.

    `earlier` holds (number, member, instruction) of the handoffs that count, in the order they were made."""
    mine = words(instruction)
    same = [(number, text) for number, who, text in earlier if who == member][-window:]
    for number, text in reversed(same):
        overlap = jaccard(mine, words(text))
        if overlap >= threshold:
            return (f"the handoff to {member} ({shorten(instruction, 70)!r}) repeats handoff {number} "
                    f"(word overlap {overlap:.2f})")
    return None


def serves(step, assignment: str, context: str = "") -> bool:
    """Whether one executed step does what the assignment asks (see the module docstring)."""
    mine = words(step.argument)
    if step.action.lower() == "calculate":
        return set(numbers_in(step.argument)) <= set(numbers_in(f"{assignment} {context}"))
    return 2 * len(mine & words(assignment)) > len(mine)


def ignored_assignment(assignment: str, context: str, trace: list) -> Optional[str]:
    """Why no tool call of the member served its assignment, or None (also when it ran no tool)."""
    ran = [s for s in trace if s.executed]
    if not ran or any(serves(s, assignment, context) for s in ran):
        return None
    calls = ", ".join(f"{s.action}[{shorten(s.argument, 40)}]" for s in ran)
    return f"it was given {shorten(assignment, 90)!r} and ran {calls} instead"


def unverified_numbers(report: str, observations: list) -> list:
    """The numbers of a report that none of the observations holds (none for a refusal)."""
    if is_refusal(report):
        return []
    seen = {float(n) for text in observations for n in numbers_in(text)}
    return [n for n in dict.fromkeys(numbers_in(report)) if float(n) not in seen]


def withheld(report: str, given: str, findings: list) -> list:
    """The team's findings missing from `given`, when the member said it cannot (else none)."""
    if not is_refusal(report):
        return []
    have = words(given)
    return [f for f in findings if words(f) and 2 * len(words(f) & have) < len(words(f))]


@dataclass
class TeamGuard:
    """The four checks with their settings, and every alarm so far."""

    jaccard: float = 0.7
    window: int = 3
    checks: tuple = CHECKS
    alarms: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.jaccard = number_setting("jaccard", self.jaccard, 0, 1, "a word overlap in (0, 1]", above_low=True)
        self.window = count_setting("window", self.window)
        if isinstance(self.checks, str) or not isinstance(self.checks, (tuple, list, set, frozenset)):
            raise ValueError(f"checks must be a tuple of check names ({', '.join(CHECKS)}); got {self.checks!r}")
        unknown = set(self.checks) - set(CHECKS)
        if unknown:
            raise ValueError(f"unknown check(s) {sorted(unknown)}; the checks are {', '.join(CHECKS)}")

    def on(self, check: str) -> bool:
        return check in self.checks

    def alarm(self, member: str, check: str, detail: str, action: str) -> Alarm:
        self.alarms.append(Alarm(member, check, detail, action))
        return self.alarms[-1]

    def fired(self, check: str) -> int:
        return sum(a.check == check for a in self.alarms)
