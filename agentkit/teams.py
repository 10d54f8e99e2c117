"""Several agents on one question: a supervisor with handoffs, agents as tools, an orchestrator with workers.

Each member is an `agentkit.members.MemberAgent`, a ReAct loop with its own role and tools, run on one
assignment; its Finish answer is its *report*. The three topologies differ in who decides what
happens next and what each prompt carries:

* `Supervisor`: the lead never calls a tool. Each turn it reads the question and every handoff so
  far (instruction, context, result) and replies `Next: <member>`, `Instruction: ...`, `Context: ...`
  (the facts it chooses to pass on), or `Next: FINISH` and `Answer: ...`; `parse_handoff` reads
  that and never raises. At most `max_turns` replies; one that names no member is answered with
  what was wrong. Control passes to a member and comes back (LangGraph's supervisor, AutoGen's
  handoffs).
* `AgentsAsTools`: the lead is a ReAct agent whose tools are `Research[instruction]`, which runs
  the researcher and returns its report as the Observation, and `Calculate`. Control never leaves
  the lead and no member's steps enter its prompt (smolagents' managed agents).
* `OrchestratorWorkers`: in each round the lead writes a JSON list of sub-tasks that do not depend on
  each other (at most `max_workers`, `[]` when it is done); each goes to its own worker, all at once
  on threads, and every worker is given the reports of earlier rounds. After at most `max_rounds`
  rounds the lead writes `Answer: ...` from the reports (Anthropic's orchestrator-workers).

Every topology is an `agentkit.members.Team`: its members run on `member_llm`, may escalate to
`escalate_to` below `threshold`, and have their reports reviewed by a `guard`
(`agentkit.team_guards.TeamGuard`), which here also watches the supervisor's handoffs for repeats.
Every team has `run(question) -> answer`, `stop_reason` (finished, max_turns, or guard: <check>),
`unverified`, `transcript` (what the lead read), `member_runs`, `.llm` and `.tools` (every ledger
and tool log, joined), and `sequential_calls`: the LLM calls that had to wait for each other.
"""
from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .members import Team, member_tools
from .react import ReActAgent
from .routing import count_setting
from .team_guards import REPEATED_HANDOFF, repeated_handoff
from .text import shorten

# --- a supervisor with handoffs ------------------------------------------------------------------

SUPERVISOR_MARKER = "You are the supervisor of a team of agents"
SUPERVISOR_PROMPT = SUPERVISOR_MARKER + """. You never use a tool: you hand the work to one member
at a time, and read what it reports.
Members:
- researcher: looks things up in the knowledge base (it has Search)
- analyst: does arithmetic (it has Calculate)
Each turn, reply with exactly three lines:
Next: the member's name
Instruction: what that member must do, in one line
Context: the facts from earlier results that the member needs, in one line (or none)
When the results answer the question, reply with two lines instead:
Next: FINISH
Answer: the answer"""
FINAL_MARKER = "The team's work is over"
FINAL_PROMPT = SUPERVISOR_MARKER + ". " + FINAL_MARKER + """: no more handoffs. From the question
and the handoffs below, give your best answer in one line: Answer: the answer
If they do not settle it, say what is still unknown."""
_FIELD = r"^[\s*`#>-]*{}[*`\s]*:[*`\s]*(.*?)[*`\s]*$"


@dataclass
class Handoff:
    """What one reply of the supervisor asks for. `member` is a name, "FINISH", or "" with a `problem`."""

    member: str = ""
    instruction: str = ""
    context: str = ""
    answer: str = ""
    problem: str = ""


def _field(name: str, reply: str) -> str:
    match = re.search(_FIELD.format(name), str(reply), re.IGNORECASE | re.MULTILINE)
    return match.group(1).strip() if match else ""


def parse_handoff(reply, members=("researcher", "analyst")) -> Handoff:
    """Read a supervisor's reply (first line of each field wins). Never raises."""
    member = _field("Next", reply).strip(" .").lower()
    if member == "finish":
        answer = _field("Answer", reply)
        return Handoff("FINISH", answer=answer) if answer else Handoff(
            problem="a FINISH needs an Answer: line with the answer")
    if member not in members:
        named = f"it named {member!r}" if member else "it had no Next: line"
        return Handoff(problem=f"{named}; Next: must be one of {', '.join(members)}, or FINISH")
    instruction = _field("Instruction", reply)
    if not instruction:
        return Handoff(problem="it had no Instruction: line")
    context = _field("Context", reply)
    return Handoff(member, instruction, "" if context.lower() in ("", "none", "nothing") else context)


def _final_answer(reply) -> str:
    return _field("Answer", reply) or " ".join(str(reply).split())


class Supervisor(Team):
    """The lead hands one instruction at a time to a member, reads the result, and decides again."""

    def __init__(self, llm=None, member_llm=None, *, max_turns: int = 8, **options) -> None:
        super().__init__(llm, member_llm, **options)
        self.max_turns = count_setting("max_turns", max_turns)

    def _messages(self, question: str, role: str = SUPERVISOR_PROMPT) -> list[dict]:
        handoffs = "\n".join(self.transcript) or "(none yet)"
        return [{"role": "system", "content": role},
                {"role": "user", "content": f"Question: {question}\n\nHandoffs so far:\n{handoffs}"}]

    def run(self, question: str, verbose: bool = False) -> str:
        self._begin()
        handed, repeats, handoffs = [], 0, 0
        for _ in range(self.max_turns):
            turn = parse_handoff(self._think(self._messages(question)))
            if turn.member == "FINISH":
                self.stop_reason, self.answer = "finished", turn.answer
                break
            if turn.problem:
                self._say(f"Your last reply could not be read: {turn.problem}.", verbose)
                continue
            if self.guard is not None and self.guard.on(REPEATED_HANDOFF):
                why = repeated_handoff(turn.member, turn.instruction, handed, self.guard.jaccard, self.guard.window)
                repeats = repeats + 1 if why else 0
                if why and repeats >= 2:
                    self.guard.alarm(turn.member, REPEATED_HANDOFF, why, "stopped the team")
                    self.stop_reason = f"guard: {REPEATED_HANDOFF}"
                    break
                if why:
                    self.guard.alarm(turn.member, REPEATED_HANDOFF, why, "did not carry it out")
                    self._say(f"Guard: {why}. It was not carried out: its result is above. Use it, hand off "
                              "something else, or FINISH.", verbose)
                    continue
            run = self.ask(turn.member, turn.instruction, question, turn.context)
            self._keep(run)
            handoffs += 1
            if run.ok:  # retrying a failed handoff is not a repeat
                handed.append((handoffs, turn.member, turn.instruction))
            self._say(f"Handoff {handoffs} to {turn.member}: {turn.instruction}\nContext: {turn.context or 'none'}"
                      f"\nResult: {' '.join(run.report.split())}", verbose)
        else:
            self.stop_reason = "max_turns"
            self.answer = f"Stopped by max_turns: no FINISH after {self.max_turns} replies of the supervisor."
        if self.stop_reason.startswith("guard"):
            self.answer, self.unverified = _final_answer(self._think(self._messages(question, FINAL_PROMPT))), True
        return self.answer

    def _say(self, entry: str, verbose: bool) -> None:
        self.transcript.append(entry)
        if verbose:
            print(entry)


# --- agents as tools -----------------------------------------------------------------------------

MANAGER_MARKER = "You are the manager of a team of agents"
MANAGER_PROMPT = MANAGER_MARKER + """: you answer a question by alternating Thought, Action and
Observation, and one of your tools is an agent. Each turn, write exactly two lines and then stop:
Thought: what you know so far and what to do next
Action: ToolName[input]
The system runs it and writes the Observation for you. When you know the answer, write:
Action: Finish[your answer]

Tools:
{tools}"""


class ManagerAgent(ReActAgent):
    """The lead of AgentsAsTools: a ReAct agent with the manager's role prompt."""

    def messages(self, question: str, hints: str = "", steps_left=None) -> list[dict]:
        messages = super().messages(question, hints, steps_left)
        messages[0] = {"role": "system", "content": MANAGER_PROMPT.format(tools=self.tools.describe())}
        return messages


class AgentsAsTools(Team):
    """A ReAct lead whose Research tool is the researcher agent; control never leaves the lead."""

    def __init__(self, llm=None, member_llm=None, *, max_steps: int = 6, **options) -> None:
        super().__init__(llm, member_llm, **options)
        self.max_steps = count_setting("max_steps", max_steps)

    def run(self, question: str, verbose: bool = False) -> str:
        self._begin()
        tools = member_tools(("Calculate",))
        self._executors.append(tools)

        def research(instruction: str) -> str:
            run = self.ask("researcher", instruction, question)
            self._keep(run)
            return run.report

        tools.register("Research", research, "hand a look-up to the researcher, an agent with Search; it "
                       "replies with what it found", timeout_s=None)
        manager = ManagerAgent(self.lead, tools, max_steps=self.max_steps)
        self.answer = manager.run(question, verbose=verbose)
        self.stop_reason, self.unverified, self.lead_calls = manager.stop_reason, manager.unverified, len(manager.trace)
        self.transcript = [step.as_history() for step in manager.trace]
        return self.answer


# --- an orchestrator and parallel workers --------------------------------------------------------

ORCHESTRATOR_MARKER = "You are the orchestrator of a team of workers"
ORCHESTRATOR_PROMPT = ORCHESTRATOR_MARKER + """. Split what is left of the work into sub-tasks that do
not depend on each other: each goes to its own worker, and they all run at the same time. A worker
can Search the knowledge base and Calculate; it sees the reports below.
Reply with a JSON list of at most {max_workers} sub-tasks, one line of instructions each, and nothing
else. Reply [] when the reports answer the question, or nothing more can be done."""
SYNTHESIS_MARKER = "You write the final answer from your workers' reports"
SYNTHESIS_PROMPT = SYNTHESIS_MARKER + """. Answer the question from the reports alone, in one line:
Answer: the answer
If they do not settle it, say what is still unknown."""


def parse_sub_tasks(reply, max_workers: int = 4) -> tuple[list, str]:
    """(sub-tasks, problem) from an orchestrator's reply: a JSON list of strings. Never raises."""
    text = str(reply)
    start, end = text.find("["), text.rfind("]")
    try:
        items = json.loads(text[start:end + 1]) if 0 <= start < end else None
    except ValueError:
        items = None
    if not isinstance(items, list):
        return [], f"no JSON list in the reply: {shorten(text, 80)!r}"
    tasks = [" ".join(str(item).split()) for item in items if isinstance(item, str) and item.strip()]
    if len(tasks) < len(items):
        return [], "every sub-task must be a non-empty string"
    return tasks[:max_workers], ""


class OrchestratorWorkers(Team):
    """Rounds of independent sub-tasks run by parallel workers, then one answer from the reports."""

    def __init__(self, llm=None, member_llm=None, *, max_workers: int = 4, max_rounds: int = 4, **options) -> None:
        super().__init__(llm, member_llm, **options)
        self.max_workers, self.max_rounds = count_setting("max_workers", max_workers), count_setting("max_rounds", max_rounds)
        self._sequential = 0

    @property
    def sequential_calls(self) -> int:
        return self._sequential

    def _messages(self, question: str, role: str) -> list[dict]:
        reports = "\n".join(self.transcript) or "(none yet)"
        return [{"role": "system", "content": role},
                {"role": "user", "content": f"Question: {question}\n\nReports so far:\n{reports}"}]

    def run(self, question: str, verbose: bool = False) -> str:
        self._begin()
        self._sequential = 0
        role = ORCHESTRATOR_PROMPT.format(max_workers=self.max_workers)
        for _ in range(self.max_rounds):
            sub_tasks, problem = parse_sub_tasks(self._think(self._messages(question, role)), self.max_workers)
            self._sequential += 1
            if problem and verbose:
                print(f"the plan could not be read ({problem}): no more workers")
            if not sub_tasks:
                break
            context = "\n".join(self.findings)
            if len(sub_tasks) == 1:  # nothing to run beside it: no thread to start
                runs = [self.ask("worker", sub_tasks[0], question, context)]
            else:
                with ThreadPoolExecutor(max_workers=len(sub_tasks)) as pool:
                    runs = list(pool.map(lambda task: self.ask("worker", task, question, context), sub_tasks))
            self._sequential += max(run.calls for run in runs)
            for run in runs:  # in the order of the plan, whatever order the threads finished in
                self._keep(run)
                self.transcript.append(f"Sub-task: {run.assignment}\nReport: {' '.join(run.report.split())}")
                if verbose:
                    print(f"worker ({run.calls} calls) on {run.assignment!r}: {shorten(run.report, 90)}")
        self.answer = _final_answer(self._think(self._messages(question, SYNTHESIS_PROMPT)))
        self._sequential += 1
        self.stop_reason = "finished"
        return self.answer
