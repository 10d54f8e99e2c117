"""The approval gate: read-only tools run; a tool with a side effect runs only if a policy says so.

`GatedExecutor(tools, policy, dry_run=None)` wraps any ToolExecutor and is used like one (an
agent's `tools=`). For each call it looks up the tool's `effect` (agentkit.tools.EFFECTS):

* `read` (or an unknown tool, which the wrapped executor answers with its error): runs at once.
* anything else goes to `policy(call)`, which returns a `Verdict`:
  - `run`: the tool runs (an approval);
  - `deny`: it does not run; the observation says so, names who denied it and that nothing changed;
  - `dry_run`: it does not run; the observation says what it *would* change (`dry_run(tool, input)`);
  - `ask`: a human must decide; `run` raises `ApprovalNeeded`, and `PausableAgent` turns that into
    a paused run that `decide(...)` resumes.

Every call, allowed or not, becomes one `Decision` in `gate.ledger`: the call, its effect, the
verdict, who decided (`by`), the dry run, the observation, and `source`: the latest earlier tool
output that names the tool (a hint to where an instruction came from, not a proof).
`gate.save(path)` writes the ledger as JSON lines; `Replayed(path)` answers the same calls with the
decisions recorded there (same verdict, same `by`, with a `note` that it was replayed), so a run with
approvals replays offline and the model sees the very same observations.

Policies here: `deny_side_effects` (the default), `dry_run_side_effects`, `Approve(names)`,
`ask_human`, `Replayed(path)`. Any callable `call -> Verdict` is a policy.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional

from .react import ReActAgent
from .text import json_lines, shorten
from .tools import ERROR_PREFIX

VERDICTS = ("run", "deny", "dry_run", "ask")


@dataclass
class Call:
    """A call the gate must decide on."""

    number: int  # 1, 2, ... per gate
    tool: str
    argument: str
    effect: str
    dry_run: str = ""
    source: str = ""


@dataclass
class Verdict:
    action: str  # one of VERDICTS
    by: str  # who or what decided: "policy: ...", "human: ..."
    note: str = ""  # e.g. "replayed from decisions.jsonl"

    def __post_init__(self) -> None:
        if self.action not in VERDICTS:
            raise ValueError(f"a verdict is one of {', '.join(VERDICTS)}, got {self.action!r}")


@dataclass
class Decision:
    """One line of the gate's ledger."""

    number: int
    tool: str
    argument: str
    effect: str
    verdict: str  # "ran", "denied", "dry run", "pending"
    by: str
    dry_run: str = ""
    observation: str = ""
    source: str = ""
    note: str = ""


class ApprovalNeeded(Exception):
    """Raised by the gate when its policy asks a human; carries the waiting `Call`."""

    def __init__(self, call: Call) -> None:
        super().__init__(f"{call.tool}[{call.argument}] waits for a human decision")
        self.call = call


# --- policies ------------------------------------------------------------------


def deny_side_effects(call: Call) -> Verdict:
    return Verdict("deny", "policy: side effects are denied by default")


def dry_run_side_effects(call: Call) -> Verdict:
    return Verdict("dry_run", "policy: side effects are shown as a dry run")


def ask_human(call: Call) -> Verdict:
    return Verdict("ask", "policy: a human decides")


class Approve:
    """Approve the named tools (any argument); deny every other side effect."""

    def __init__(self, names, by: str = "policy: approved list") -> None:
        self.names, self.by = sorted(names), by

    def __call__(self, call: Call) -> Verdict:
        if call.tool.lower() in {n.lower() for n in self.names}:
            return Verdict("run", f"{self.by} ({', '.join(self.names)})")
        return deny_side_effects(call)


class Replayed:
    """The decisions of a saved ledger, given again to the same calls in the same order."""

    def __init__(self, path) -> None:
        self.recorded = [Decision(**json.loads(line)) for _, line in json_lines(path)]
        self.name = Path(path).name
        self._waiting = [d for d in self.recorded if d.effect != "read" and d.verdict != "pending"]

    def __call__(self, call: Call) -> Verdict:
        for i, old in enumerate(self._waiting):
            if (old.tool, old.argument) == (call.tool, call.argument):
                del self._waiting[i]
                action = {"ran": "run", "denied": "deny", "dry run": "dry_run"}[old.verdict]
                return Verdict(action, old.by, f"replayed from {self.name}")
        return Verdict("deny", "replay: this call is not on the recorded trace", f"replayed from {self.name}")


# --- the gate ---------------------------------------------------------------------


class GatedExecutor:
    """A ToolExecutor whose side-effecting tools run only when the policy allows it."""

    def __init__(self, tools, policy: Callable[[Call], Verdict] = deny_side_effects,
                 dry_run: Optional[Callable[[str, str], str]] = None) -> None:
        self.inner = tools
        self.policy = policy
        self.dry_run = dry_run or (lambda tool, argument: "(no dry run available for this tool)")
        self.ledger: list[Decision] = []
        self._decided: dict[int, Verdict] = {}  # a human's answer to a pending call, by number

    # Used like the wrapped executor: the agent reads its tool list and log.
    @property
    def tools(self):
        return self.inner.tools

    @property
    def names(self):
        return self.inner.names

    @property
    def log(self):
        return self.inner.log

    def describe(self) -> str:
        return self.inner.describe()

    def _tool(self, name):
        wanted = str(name).strip().lower()
        return next((t for t in self.inner.tools.values() if t.name.lower() == wanted), None)

    def _source(self, tool: str) -> str:
        for old in reversed(self.ledger):
            if old.verdict == "ran" and tool.lower() in old.observation.lower():
                return f"call {old.number}: {old.tool}[{shorten(old.argument, 40)}] named {tool} in its output"
        return f"no earlier tool output named {tool}: the model's own idea"

    def run(self, name: str, argument: str) -> str:
        """Run, deny, dry-run, or (policy `ask`) raise ApprovalNeeded; every outcome goes to the ledger."""
        argument = "" if argument is None else str(argument)
        tool = self._tool(name)
        number = self._pending_number(name, argument) or len(self.ledger) + 1
        if tool is None or tool.effect == "read":
            output = self.inner.run(name, argument)
            self._record(Decision(number, tool.name if tool else str(name), argument,
                                  tool.effect if tool else "unknown", "ran", "no approval needed: read-only",
                                  observation=output))
            return output
        call = Call(number, tool.name, argument, tool.effect, self.dry_run(tool.name, argument), self._source(tool.name))
        verdict = self._decided.pop(number, None) or self.policy(call)
        if verdict.action == "ask":
            self._record(Decision(number, call.tool, argument, call.effect, "pending", verdict.by, call.dry_run,
                                  source=call.source))
            raise ApprovalNeeded(call)
        if verdict.action == "run":
            output, outcome = self.inner.run(tool.name, argument), "ran"
        elif verdict.action == "dry_run":
            output, outcome = f"dry run, nothing changed: {tool.name}[{argument}] {call.dry_run}", "dry run"
        else:
            output, outcome = (f"{ERROR_PREFIX} {tool.name}[{shorten(argument, 60)}] was not run: it would "
                               f"{tool.effect}, and it was denied ({verdict.by}). Nothing changed. "
                               "Go on without it, or tell the user what you wanted to do."), "denied"
        self._record(Decision(number, call.tool, argument, call.effect, outcome, verdict.by, call.dry_run,
                              output, call.source, verdict.note))
        return output

    def _pending_number(self, name, argument) -> int:
        """The number of the pending call this is, when a human decision is waiting for it."""
        last = self.ledger[-1] if self.ledger else None
        if last is not None and last.verdict == "pending" and last.number in self._decided \
                and (last.tool.lower(), last.argument) == (str(name).strip().lower(), argument):
            return last.number
        return 0

    def _record(self, decision: Decision) -> None:
        if self.ledger and self.ledger[-1].number == decision.number:
            self.ledger[-1] = decision  # a pending call, now decided
        else:
            self.ledger.append(decision)

    def decide(self, number: int, approve: bool, by: str) -> None:
        """A human's answer to pending call `number`; the next run of that call uses it."""
        self._decided[number] = Verdict("run" if approve else "deny", by)

    def save(self, path) -> Path:
        """The ledger as JSON lines (the decisions of a run, for Replayed)."""
        path = Path(path)
        path.write_text("".join(json.dumps(asdict(d), ensure_ascii=False) + "\n" for d in self.ledger),
                        encoding="utf-8")
        return path

    def table(self) -> str:
        """The ledger, one line per call."""
        lines = [f"{'#':>2} {'call':34} {'effect':6} {'verdict':8} by"]
        for d in self.ledger:
            lines.append(f"{d.number:>2} {shorten(f'{d.tool}[{d.argument}]', 34):34} {d.effect:6} {d.verdict:8} {d.by}")
        return "\n".join(lines)


# --- an agent run that can wait for a human ------------------------------------------


class PausableAgent(ReActAgent):
    """A ReAct run that pauses when the gate asks a human, and resumes when one decides.

    `start(question)` returns "pending" (see `.pending`) or "finished"/"max_steps"/"repeat_fuse";
    `decide(approve, by)` answers the pending call and goes on. The model is not asked again for a
    call that waited: the reply that asked for it is kept and carried out once decided. The repeat
    fuse and max_steps apply; `runtime`, `on_step` and the fallback answer are not used here.
    """

    def __init__(self, llm=None, tools=None, max_steps: int = 5, **options) -> None:
        super().__init__(llm, tools, max_steps, **options)
        if not isinstance(self.tools, GatedExecutor):
            raise TypeError("PausableAgent needs a GatedExecutor as tools (the gate is what pauses it)")
        self.pending: Optional[Call] = None
        self.status = "not started"
        self._question, self._held = "", None

    def start(self, question: str, verbose: bool = False) -> str:
        from .llm import ledger

        self.trace, self.stop_reason, self.answer, self.pending = [], "", "", None
        self._question, self._held, self.verbose = question, None, verbose
        self._ledger_start, self._log_start = len(ledger(self.llm)), len(self.tools.log)
        return self._go()

    def decide(self, approve: bool, by: str) -> str:
        if self.pending is None:
            raise RuntimeError("no call is waiting for a decision")
        self.tools.decide(self.pending.number, approve, by)
        self.pending = None
        return self._go()

    def _go(self) -> str:
        from .react import _print_step

        while len(self.trace) < self.max_steps:
            if self._held is not None:
                (parsed, reply), self._held = self._held, None
            else:
                parsed, reply = self._decide(self.messages(self._question))
            try:
                step, answer = self._act(parsed, reply)
            except ApprovalNeeded as waiting:
                self._held, self.pending, self.status = (parsed, reply), waiting.call, "pending"
                return self.status
            self.trace.append(step)
            if self.verbose:
                _print_step(len(self.trace), step)
            if answer is not None:
                self.answer, self.status = answer, self.stop_reason
                return self.status
        self.stop_reason = self.status = "max_steps"
        self.answer = f"Stopped by max_steps: no Finish after {self.max_steps} steps."
        return self.status
