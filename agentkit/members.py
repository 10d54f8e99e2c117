"""A team's members, and what every topology shares: running a member, checking its report, keeping the ledgers.

A member is a `MemberAgent`: chapter 02's ReAct loop with its own role prompt (MEMBER_MARKER, its name
and job, from ROLES) and only its own tools, run on one text (`member_question`): the team's question,
its assignment on one line, and the context it is given. Its Finish answer is its *report*.

`Team` is what the topologies of `agentkit.teams` inherit. `Team.ask(member, assignment, question,
context)` runs a member on `member_llm` (default: the lead's `llm`); with `escalate_to`, a run whose
`agentkit.routing.confidence` is below `threshold` runs again on that model, with the first run's
Observations as hints. A `guard` (`agentkit.team_guards.TeamGuard`) then reviews it, in this order:
withheld context (run again with every finding attached), ignored assignment (run again with the
assignment restated, then drop the report as DROPPED), unverified report (replace it by the member's
Observations). The result is a `MemberRun`; it is `ok` unless the member stopped early, was dropped,
or refused without calling a tool. `ask` touches no shared list, so workers can run it on threads;
`Team._keep(run)` records a finished assignment in order: `member_runs`, the guard's `alarms`, the
executors, and `findings` (every accepted report that is not a refusal).

Every setting is checked where it is given: each model has `think`, `threshold` is a confidence (as the
cascade's), `member_steps` a whole number of at least 1, `guard` a TeamGuard or None; a bad one raises
ValueError naming it.

A team's `.llm` joins every client's ledger (the lead's, the members', the escalation model's) and
`.tools` every executor's log, so `agentkit.evaluate` reads a team like one agent; `clients` maps each
role to its client, so a cost can be read per role.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ledgers import Ledgers, Logs
from .protocol import default_llm
from .react import ReActAgent
from .routing import confidence, confidence_threshold, count_setting, evidence
from .tasks import is_refusal
from .team_guards import IGNORED_ASSIGNMENT, UNVERIFIED_REPORT, WITHHELD_CONTEXT, Alarm, TeamGuard, \
    ignored_assignment, unverified_numbers, withheld
from .text import shorten
from .tools import ToolExecutor, default_executor

MEMBER_STEPS = 6  # four look-ups in one assignment, then Finish, and one to spare
MEMBER_MARKER = "You are one member of a team of agents"
MEMBER_PROMPT = MEMBER_MARKER + """: the {name}. {job}
Do only your assignment, with your tools, then finish with what you found; the team does the rest.
Each turn, write exactly two lines and then stop:
Thought: what you know so far and what to do next
Action: ToolName[input]
The system runs it and writes the Observation for you. When your assignment is done, write:
Action: Finish[what you found]

Tools:
{tools}"""
ROLES = {"researcher": ("You look things up in the knowledge base.", ("Search",)),
         "analyst": ("You do arithmetic.", ("Calculate",)),
         "worker": ("You do one sub-task of a larger question.", ("Search", "Calculate"))}
DROPPED = "(no report: the guard dropped it, because the member did not do its assignment)"


def member_question(question: str, assignment: str, context: str = "") -> str:
    """What a member is asked: the team's question, its assignment (one line), its context."""
    return f"{question}\nYour assignment: {' '.join(str(assignment).split())}\nContext from the team: " \
           f"{str(context).strip() or 'none'}"


def member_tools(names) -> ToolExecutor:
    """A fresh executor with only these of the course's tools."""
    tools = default_executor()
    tools.tools = {name: tool for name, tool in tools.tools.items() if name in names}
    return tools


class MemberAgent(ReActAgent):
    """A ReAct agent whose role prompt makes it one member of a team, with its own tools."""

    def __init__(self, name: str, llm, tools, max_steps: int = MEMBER_STEPS) -> None:
        if name not in ROLES:
            raise ValueError(f"unknown member {name!r}; the members are {', '.join(ROLES)}")
        super().__init__(llm, tools, max_steps=max_steps)
        self.name = name

    def messages(self, question: str, hints: str = "", steps_left=None) -> list[dict]:
        messages = super().messages(question, hints, steps_left)
        messages[0] = {"role": "system", "content": MEMBER_PROMPT.format(
            name=self.name, job=ROLES[self.name][0], tools=self.tools.describe())}
        return messages


@dataclass
class MemberRun:
    """One assignment: who did it, what it was given, what came back, at what cost, and the guard's alarms."""

    member: str
    assignment: str
    given: str
    report: str
    calls: int = 0  # LLM calls of this assignment (every run of it: a retry, an escalation)
    escalated: bool = False
    ok: bool = False  # a result the lead can use (see Team.ask)
    alarms: list = field(default_factory=list)
    executors: list = field(default_factory=list, repr=False)


class Team:
    """What every topology shares: clients, the member runs, the guard's actions, the ledgers."""

    def __init__(self, llm=None, member_llm=None, *, escalate_to=None, threshold: float = 1.0, guard=None,
                 member_steps: int = MEMBER_STEPS) -> None:
        for name, model in (("llm", llm), ("member_llm", member_llm), ("escalate_to", escalate_to)):
            if model is not None and not callable(getattr(model, "think", None)):
                raise ValueError(f"{name} must be an LLM (an object with think(messages)) or None; got {model!r}")
        if guard is not None and not isinstance(guard, TeamGuard):
            raise ValueError(f"guard must be a TeamGuard (agentkit.team_guards) or None; got {guard!r}")
        self.lead = llm if llm is not None else default_llm()
        self.member_llm = member_llm if member_llm is not None else self.lead
        self.escalate_to, self.guard = escalate_to, guard
        self.threshold, self.member_steps = confidence_threshold(threshold), count_setting("member_steps", member_steps)
        self.clients = {"lead": self.lead, "members": self.member_llm}
        if escalate_to is not None:
            self.clients["escalation"] = escalate_to
        self.llm = Ledgers(list(self.clients.values()))
        self._executors: list = []
        self.tools = Logs(self._executors)
        self.transcript: list[str] = []
        self.member_runs: list[MemberRun] = []
        self.findings: list[str] = []
        self.stop_reason, self.unverified, self.answer = "", False, ""
        self.lead_calls = 0

    @property
    def sequential_calls(self) -> int:
        return len(self.llm.calls)

    @property
    def steps(self) -> int:
        return self.lead_calls + sum(r.calls for r in self.member_runs)

    def _begin(self) -> None:
        self.transcript, self.member_runs, self.findings = [], [], []
        self.stop_reason, self.unverified, self.answer, self.lead_calls = "", False, "", 0

    def _think(self, messages) -> str:
        self.lead_calls += 1
        return self.lead.think(messages)

    def _member(self, run: MemberRun, name: str, given: str) -> MemberAgent:
        """One run of a member on `given`, escalated when its confidence is below the threshold."""
        tools = member_tools(ROLES[name][1])
        run.executors.append(tools)
        agent = MemberAgent(name, self.member_llm, tools, self.member_steps)
        agent.run(given, verbose=False)
        run.calls += len(agent.trace)
        if self.escalate_to is not None and confidence(agent) < self.threshold:
            hints = evidence(agent)
            agent = MemberAgent(name, self.escalate_to, tools, self.member_steps)
            agent.run(given, verbose=False, hints=hints)
            run.calls += len(agent.trace)
            run.escalated = True
        return agent

    def ask(self, name: str, assignment: str, question: str, context: str = "") -> MemberRun:
        """Run a member on an assignment and put its report through the guard; touches no shared list."""
        run = MemberRun(name, assignment, member_question(question, assignment, context), "")
        agent = self._member(run, name, run.given)
        guard = self.guard
        if guard is not None and guard.on(WITHHELD_CONTEXT):
            missing = withheld(str(agent.answer), run.given, self.findings)
            if missing:
                run.alarms.append(Alarm(name, WITHHELD_CONTEXT, f"it said {shorten(agent.answer, 70)!r}, and it "
                                        f"was not given {len(missing)} finding(s) of the team", "ran it again with "
                                        "every finding attached"))
                context = "\n".join(filter(None, [context, *self.findings]))
                run.given = member_question(question, assignment, context)
                agent = self._member(run, name, run.given)
        report = str(agent.answer)
        if guard is not None and guard.on(IGNORED_ASSIGNMENT):
            why = ignored_assignment(assignment, context, agent.trace)
            if why:
                run.alarms.append(Alarm(name, IGNORED_ASSIGNMENT, why, "ran it again with its assignment restated"))
                run.given += f"\nGuard: your last run did not do your assignment. Do exactly this: {assignment}"
                agent = self._member(run, name, run.given)
                report = str(agent.answer)
                why = ignored_assignment(assignment, context, agent.trace)
                if why:
                    run.alarms.append(Alarm(name, IGNORED_ASSIGNMENT, why, "dropped its report"))
                    report = DROPPED
        if guard is not None and guard.on(UNVERIFIED_REPORT) and report != DROPPED:
            seen = [s.observation for s in agent.trace if s.executed]
            unseen = unverified_numbers(report, seen)
            if unseen:
                run.alarms.append(Alarm(name, UNVERIFIED_REPORT, f"the report says {', '.join(unseen)}, which none "
                                        f"of its {len(seen)} Observations holds", "replaced the report by its "
                                        "tools' Observations"))
                report = " | ".join(seen) or DROPPED
        run.report = report
        # A result, even "no information", unless the member stopped, was dropped, or refused without a tool call.
        run.ok = agent.stop_reason == "finished" and report != DROPPED and not (
            is_refusal(report) and not any(s.executed for s in agent.trace))
        return run

    def _keep(self, run: MemberRun) -> None:
        """Record a finished assignment, in order: the one place shared lists grow."""
        self.member_runs.append(run)
        self._executors.extend(run.executors)
        if self.guard is not None:
            self.guard.alarms.extend(run.alarms)
        if run.report != DROPPED and not is_refusal(run.report):
            self.findings.append(run.report)
